#include "prism/equiv/explain.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "prism/base/check.h"

namespace prism::equiv {

absl::string_view DirectionName(Direction d) {
  return d == Direction::kForward ? "forward" : "backward";
}

std::string Explanation::ToString(const ExprContext* ctx) const {
  std::string out = absl::StrCat("start: ", start.ToString(ctx), "\n");
  for (size_t i = 0; i < steps.size(); ++i) {
    const ProofStep& s = steps[i];
    absl::string_view kind = s.kind == Justification::Kind::kRule       ? ""
                             : s.kind == Justification::Kind::kAnalysis ? "analysis "
                                                                        : "given ";
    absl::StrAppend(&out, "  ", i + 1, ". ", kind, s.rule.name(), " ", DirectionName(s.direction),
                    " at ", PathToString(s.position), ": ", s.after.ToString(ctx), "\n");
  }
  absl::StrAppend(&out, "goal: ", goal.ToString(ctx), "\n");
  return out;
}

std::vector<std::string> Explanation::RulesUsed() const {
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (const ProofStep& s : steps) {
    std::string n(s.rule.name());
    if (seen.insert(n).second) out.push_back(n);
  }
  return out;
}

void ProofForest::AddId() { links_.push_back(Link{}); }

EClassId ProofForest::Root(EClassId id) const {
  PRISM_CHECK(id.valid() && id.value() < links_.size(), "proof forest id out of range");
  while (links_[id.value()].parent.valid()) id = links_[id.value()].parent;
  return id;
}

void ProofForest::Reroot(EClassId id) {
  EClassId prev = id;
  Link prev_link = links_[id.value()];
  links_[id.value()].parent = EClassId::Invalid();
  EClassId cur = prev_link.parent;
  while (cur.valid()) {
    Link next = links_[cur.value()];
    links_[cur.value()] = Link{prev, prev_link.justification, !prev_link.forward};
    prev = cur;
    prev_link = next;
    cur = next.parent;
  }
}

void ProofForest::Union(EClassId a, EClassId b, const Justification& j) {
  PRISM_CHECK(Root(a) != Root(b), "proof forest union of ids already connected");
  Reroot(a);
  links_[a.value()] = Link{b, j, true};
}

bool ProofForest::Connected(EClassId a, EClassId b) const { return Root(a) == Root(b); }

std::vector<ProofForest::Edge> ProofForest::Path(EClassId a, EClassId b) const {
  std::vector<EClassId> up_a;
  absl::flat_hash_map<uint32_t, size_t> index_in_a;
  for (EClassId x = a; x.valid(); x = links_[x.value()].parent) {
    index_in_a.emplace(x.value(), up_a.size());
    up_a.push_back(x);
  }
  std::vector<EClassId> up_b;
  EClassId x = b;
  while (!index_in_a.contains(x.value())) {
    up_b.push_back(x);
    x = links_[x.value()].parent;
    PRISM_CHECK(x.valid(), "proof forest path between unconnected ids");
  }
  const EClassId lca = x;
  std::vector<Edge> edges;
  for (size_t i = 0; i < index_in_a[lca.value()]; ++i) {
    const Link& l = links_[up_a[i].value()];
    edges.push_back(Edge{up_a[i], up_a[i + 1], l.justification, l.forward});
  }
  for (size_t k = up_b.size(); k-- > 0;) {
    EClassId node = up_b[k];
    EClassId parent = k + 1 < up_b.size() ? up_b[k + 1] : lca;
    const Link& l = links_[node.value()];
    edges.push_back(Edge{parent, node, l.justification, !l.forward});
  }
  return edges;
}

}  // namespace prism::equiv
