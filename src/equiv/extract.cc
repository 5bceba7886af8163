#include "prism/equiv/extract.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "prism/base/check.h"

namespace prism::equiv {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

Extractor::Extractor(const EGraph& g, NodeCost cost) : g_(g), cost_(std::move(cost)) {
  PRISM_CHECK(g.clean(), "extraction needs a clean e-graph (call Rebuild)");
  if (!cost_) cost_ = [](const ENode&) { return 1.0; };
  tree_cost_.assign(g.num_ids(), kInf);
  tree_choice_.assign(g.num_ids(), -1);
  for (bool changed = true; changed;) {
    changed = false;
    for (EClassId id : g.class_ids()) {
      const EClass& c = g.eclass(id);
      for (size_t k = 0; k < c.nodes.size(); ++k) {
        double total = cost_(c.nodes[k]);
        for (EClassId ch : c.nodes[k].children) total += tree_cost_[g.Find(ch).value()];
        if (total < tree_cost_[id.value()]) {
          tree_cost_[id.value()] = total;
          tree_choice_[id.value()] = static_cast<int>(k);
          changed = true;
        }
      }
    }
  }
}

double Extractor::TreeCost(EClassId id) const { return tree_cost_[g_.Find(id).value()]; }

Term Extractor::Build(EClassId root, const std::function<const ENode&(EClassId)>& choice) const {
  Term out;
  absl::flat_hash_map<uint32_t, uint32_t> index;
  absl::flat_hash_set<uint32_t> on_path;
  std::function<uint32_t(EClassId)> build = [&](EClassId id) -> uint32_t {
    id = g_.Find(id);
    if (auto it = index.find(id.value()); it != index.end()) return it->second;
    PRISM_CHECK(on_path.insert(id.value()).second, "extraction choice is cyclic at e", id.value());
    const ENode& n = choice(id);
    TermNode t{n.op, n.payload, {}};
    for (EClassId c : n.children) t.children.push_back(build(c));
    on_path.erase(id.value());
    uint32_t k = out.Add(std::move(t));
    index.emplace(id.value(), k);
    return k;
  };
  build(root);
  return out;
}

Extractor::Result Extractor::ExtractTree(EClassId id) const {
  const EClassId root = g_.Find(id);
  PRISM_CHECK(tree_cost_[root.value()] < kInf, "e", root.value(), " has no finite term");
  Result r;
  r.cost = tree_cost_[root.value()];
  r.term = Build(root, [&](EClassId c) -> const ENode& {
    return g_.eclass(c).nodes[tree_choice_[c.value()]];
  });
  return r;
}

Extractor::Result Extractor::ExtractDag(EClassId id) const {
  using CostSet = std::vector<std::pair<uint32_t, double>>;  // sorted by class id
  const size_t n = g_.num_ids();
  std::vector<std::optional<CostSet>> sets(n);
  std::vector<double> best(n, kInf);
  std::vector<int> choice(n, -1);
  const size_t max_rounds = g_.num_classes() + 2;
  for (size_t round = 0, changed = 1; changed && round < max_rounds; ++round) {
    changed = 0;
    for (EClassId cid : g_.class_ids()) {
      const EClass& c = g_.eclass(cid);
      for (size_t k = 0; k < c.nodes.size(); ++k) {
        const ENode& node = c.nodes[k];
        CostSet merged{{cid.value(), cost_(node)}};
        bool ok = true;
        for (EClassId ch : node.children) {
          const std::optional<CostSet>& s = sets[g_.Find(ch).value()];
          if (!s.has_value()) {
            ok = false;
            break;
          }
          CostSet u;
          std::set_union(merged.begin(), merged.end(), s->begin(), s->end(), std::back_inserter(u),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
          merged = std::move(u);
        }
        if (!ok) continue;
        // A child set that contains this class would make the choice cyclic.
        bool cyclic = false;
        for (EClassId ch : node.children) {
          const CostSet& s = *sets[g_.Find(ch).value()];
          cyclic |= std::binary_search(s.begin(), s.end(), std::make_pair(cid.value(), 0.0),
                                       [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        if (cyclic) continue;
        double total = 0;
        for (const auto& [cls, cost] : merged) total += cost;
        if (total < best[cid.value()]) {
          best[cid.value()] = total;
          sets[cid.value()] = std::move(merged);
          choice[cid.value()] = static_cast<int>(k);
          changed = 1;
        }
      }
    }
  }
  const EClassId root = g_.Find(id);
  PRISM_CHECK(choice[root.value()] >= 0, "e", root.value(), " has no finite term");
  Result r;
  r.term = Build(root, [&](EClassId c) -> const ENode& { return g_.eclass(c).nodes[choice[c.value()]]; });
  // The cost of the DAG actually built (each class once).
  absl::flat_hash_set<uint32_t> seen;
  std::function<void(EClassId)> sum = [&](EClassId c) {
    c = g_.Find(c);
    if (!seen.insert(c.value()).second) return;
    const ENode& node = g_.eclass(c).nodes[choice[c.value()]];
    r.cost += cost_(node);
    for (EClassId ch : node.children) sum(ch);
  };
  sum(root);
  return r;
}

std::optional<Extractor::Result> Extractor::ExtractDagExact(EClassId id, size_t max_classes) const {
  const EClassId root = g_.Find(id);
  // Reachable classes.
  std::vector<uint32_t> reach{root.value()};
  absl::flat_hash_set<uint32_t> seen{root.value()};
  for (size_t i = 0; i < reach.size(); ++i) {
    for (const ENode& n : g_.eclass(EClassId(reach[i])).nodes) {
      for (EClassId c : n.children) {
        if (seen.insert(g_.Find(c).value()).second) reach.push_back(g_.Find(c).value());
      }
    }
    if (reach.size() > max_classes) return std::nullopt;
  }
  absl::flat_hash_map<uint32_t, int> choice;
  absl::flat_hash_map<uint32_t, int> best_choice;
  double best = kInf;
  auto acyclic = [&]() {
    absl::flat_hash_map<uint32_t, int> state;  // 1 = on path, 2 = done
    std::function<bool(uint32_t)> dfs = [&](uint32_t c) -> bool {
      int& s = state[c];
      if (s == 1) return false;
      if (s == 2) return true;
      s = 1;
      for (EClassId ch : g_.eclass(EClassId(c)).nodes[choice[c]].children) {
        if (!dfs(g_.Find(ch).value())) return false;
      }
      state[c] = 2;
      return true;
    };
    return dfs(root.value());
  };
  std::function<void(std::vector<uint32_t>, double)> search = [&](std::vector<uint32_t> todo,
                                                                   double cost) {
    if (cost >= best) return;
    while (!todo.empty() && choice.contains(todo.back())) todo.pop_back();
    if (todo.empty()) {
      if (acyclic()) {
        best = cost;
        best_choice = choice;
      }
      return;
    }
    const uint32_t c = todo.back();
    todo.pop_back();
    const EClass& cls = g_.eclass(EClassId(c));
    for (size_t k = 0; k < cls.nodes.size(); ++k) {
      choice[c] = static_cast<int>(k);
      std::vector<uint32_t> next = todo;
      for (EClassId ch : cls.nodes[k].children) next.push_back(g_.Find(ch).value());
      search(std::move(next), cost + cost_(cls.nodes[k]));
      choice.erase(c);
    }
  };
  search({root.value()}, 0.0);
  if (best == kInf) return std::nullopt;
  Result r;
  r.cost = best;
  r.term = Build(root, [&](EClassId c) -> const ENode& {
    return g_.eclass(c).nodes[best_choice.at(c.value())];
  });
  return r;
}

}  // namespace prism::equiv
