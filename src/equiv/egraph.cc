#include "prism/equiv/egraph.h"

#include <functional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"

namespace prism::equiv {

EGraph::EGraph(ExprContext* ctx, std::unique_ptr<Analysis> analysis, EGraphOptions options)
    : ctx_(ctx), analysis_(std::move(analysis)), options_(options) {}

EClassId EGraph::NewId(const ENode& node) {
  EClassId id = uf_.MakeSet();
  id_nodes_.push_back(node);
  classes_.emplace_back();
  if (options_.explanations) forest_.AddId();
  return id;
}

ENode EGraph::Canonicalize(const ENode& node) const {
  ENode out = node;
  for (EClassId& c : out.children) c = Find(c);
  return out;
}

EClassId EGraph::AddUncanonical(const ENode& node) {
  for (EClassId c : node.children) {
    PRISM_CHECK(c.valid() && c.value() < id_nodes_.size(), "child e", c.value(), " of ",
                node.op.name(), " is not an id of this e-graph");
  }
  if (options_.explanations) {
    auto it = exact_.find(node);
    if (it != exact_.end()) return it->second;
  }
  ENode canon = Canonicalize(node);
  if (auto it = memo_.find(canon); it != memo_.end()) {
    const EClassId existing = it->second;
    if (!options_.explanations) return Find(existing);
    // A new spelling of an existing node: its own term id, merged by congruence.
    EClassId id = NewId(node);
    exact_.emplace(node, id);
    uf_.Link(Find(existing), id);
    forest_.Union(id, existing, Justification::Congruence());
    return id;
  }
  EClassId id = NewId(node);
  if (options_.explanations) exact_.emplace(node, id);
  memo_.emplace(canon, id);
  EClass& cls = classes_[id.value()];
  cls.nodes.push_back(canon);
  cls.node_ids.push_back(id);
  for (EClassId c : canon.children) classes_[c.value()].parents.push_back(id);
  ++num_classes_;
  ++num_nodes_;
  clean_ = false;
  if (analysis_ != nullptr) {
    analysis_->OnAdd(*this, id, canon);
    analysis_->Modify(*this, id);
  }
  return id;
}

EClassId EGraph::AddTerm(const Term& term) {
  PRISM_CHECK(!term.empty(), "AddTerm of an empty term");
  std::vector<EClassId> ids(term.size());
  for (uint32_t i = 0; i < term.size(); ++i) {
    const TermNode& n = term.node(i);
    ENode e{n.op, n.payload, {}};
    for (uint32_t c : n.children) e.children.push_back(ids[c]);
    ids[i] = AddUncanonical(e);
  }
  return options_.explanations ? ids.back() : Find(ids.back());
}

size_t EGraph::ClassWeight(EClassId root) const {
  const EClass& c = classes_[root.value()];
  return c.nodes.size() + c.parents.size();
}

bool EGraph::Union(EClassId a, EClassId b, const Justification& why) {
  EClassId ra = Find(a), rb = Find(b);
  if (ra == rb) return false;
  if (options_.explanations) forest_.Union(a, b, why);
  const size_t wa = ClassWeight(ra), wb = ClassWeight(rb);
  if (wa < wb || (wa == wb && rb < ra)) std::swap(ra, rb);  // ra survives
  uf_.Link(ra, rb);
  --num_classes_;
  clean_ = false;
  {
    EClass& root = classes_[ra.value()];
    EClass& other = classes_[rb.value()];
    pending_.insert(pending_.end(), other.parents.begin(), other.parents.end());
    if (analysis_ != nullptr) {
      MergeResult m = analysis_->OnMerge(ra, rb);
      if (m.root_changed) {
        analysis_pending_.insert(analysis_pending_.end(), root.parents.begin(), root.parents.end());
      }
      if (m.other_changed) {
        analysis_pending_.insert(analysis_pending_.end(), other.parents.begin(),
                                 other.parents.end());
      }
    }
    root.nodes.insert(root.nodes.end(), other.nodes.begin(), other.nodes.end());
    root.node_ids.insert(root.node_ids.end(), other.node_ids.begin(), other.node_ids.end());
    root.parents.insert(root.parents.end(), other.parents.begin(), other.parents.end());
    other = EClass{};
  }
  if (analysis_ != nullptr) analysis_->Modify(*this, ra);
  return true;
}

size_t EGraph::Rebuild() {
  size_t unions = 0;
  while (!pending_.empty() || !analysis_pending_.empty()) {
    while (!pending_.empty()) {
      const EClassId nid = pending_.back();
      pending_.pop_back();
      ENode canon = Canonicalize(id_nodes_[nid.value()]);
      auto [it, inserted] = memo_.try_emplace(std::move(canon), nid);
      if (!inserted) {
        const EClassId other = it->second;  // copy: Union may insert into memo_
        if (Union(other, nid, Justification::Congruence())) ++unions;
      }
    }
    while (!analysis_pending_.empty()) {
      const EClassId nid = analysis_pending_.back();
      analysis_pending_.pop_back();
      const EClassId cls = Find(nid);
      ENode canon = Canonicalize(id_nodes_[nid.value()]);
      if (analysis_->OnJoin(*this, cls, canon)) {
        const std::vector<EClassId> parents = classes_[cls.value()].parents;
        analysis_pending_.insert(analysis_pending_.end(), parents.begin(), parents.end());
        analysis_->Modify(*this, Find(cls));
      }
    }
  }
  RebuildClasses();
  return unions;
}

void EGraph::RebuildClasses() {
  roots_.clear();
  by_op_.clear();
  num_nodes_ = 0;
  for (uint32_t i = 0; i < classes_.size(); ++i) {
    const EClassId id(i);
    if (!uf_.IsRoot(id)) continue;
    EClass& cls = classes_[i];
    PRISM_CHECK(!cls.nodes.empty(), "root e", i, " has no nodes");
    roots_.push_back(id);
    absl::flat_hash_set<ENode> seen;
    std::vector<ENode> nodes;
    std::vector<EClassId> node_ids;
    for (size_t k = 0; k < cls.nodes.size(); ++k) {
      ENode canon = Canonicalize(cls.nodes[k]);
      if (seen.insert(canon).second) {
        nodes.push_back(std::move(canon));
        node_ids.push_back(cls.node_ids[k]);
      }
    }
    cls.nodes = std::move(nodes);
    cls.node_ids = std::move(node_ids);
    absl::flat_hash_set<EClassId> seen_parents;
    std::vector<EClassId> parents;
    for (EClassId p : cls.parents) {
      if (seen_parents.insert(p).second) parents.push_back(p);
    }
    cls.parents = std::move(parents);
    num_nodes_ += cls.nodes.size();
    absl::flat_hash_set<Symbol> ops;
    for (const ENode& n : cls.nodes) {
      if (ops.insert(n.op).second) by_op_[n.op].push_back(id);
    }
  }
  clean_ = true;
}

const EClass& EGraph::eclass(EClassId id) const {
  PRISM_CHECK(id.valid() && id.value() < classes_.size() && uf_.IsRoot(id), "e", id.value(),
              " is not a root e-class");
  return classes_[id.value()];
}

const std::vector<EClassId>& EGraph::class_ids() const {
  PRISM_CHECK(clean(), "class_ids() needs a clean e-graph (call Rebuild)");
  return roots_;
}

absl::Span<const EClassId> EGraph::classes_with_op(Symbol op) const {
  PRISM_CHECK(clean(), "classes_with_op() needs a clean e-graph (call Rebuild)");
  auto it = by_op_.find(op);
  if (it == by_op_.end()) return {};
  return it->second;
}

std::optional<EClassId> EGraph::Lookup(const ENode& node) const {
  for (EClassId c : node.children) {
    if (!c.valid() || c.value() >= id_nodes_.size()) return std::nullopt;
  }
  auto it = memo_.find(Canonicalize(node));
  if (it == memo_.end()) return std::nullopt;
  return Find(it->second);
}

std::optional<EClassId> EGraph::LookupTerm(const Term& term) const {
  if (term.empty()) return std::nullopt;
  std::vector<EClassId> ids(term.size());
  for (uint32_t i = 0; i < term.size(); ++i) {
    const TermNode& n = term.node(i);
    ENode e{n.op, n.payload, {}};
    for (uint32_t c : n.children) e.children.push_back(ids[c]);
    std::optional<EClassId> found = Lookup(e);
    if (!found.has_value()) return std::nullopt;
    ids[i] = *found;
  }
  return ids.back();
}

const ENode& EGraph::id_node(EClassId id) const {
  PRISM_CHECK(id.valid() && id.value() < id_nodes_.size(), "e", id.value(), " out of range");
  return id_nodes_[id.value()];
}

Term EGraph::TermOf(EClassId id) const {
  Term out;
  absl::flat_hash_map<uint32_t, uint32_t> index;
  std::function<uint32_t(EClassId)> build = [&](EClassId i) -> uint32_t {
    if (auto it = index.find(i.value()); it != index.end()) return it->second;
    const ENode& n = id_node(i);
    TermNode t{n.op, n.payload, {}};
    for (EClassId c : n.children) t.children.push_back(build(c));
    uint32_t k = out.Add(std::move(t));
    index.emplace(i.value(), k);
    return k;
  };
  build(id);
  return out;
}

void EGraph::ExplainIds(EClassId a, EClassId b, std::vector<int>& position,
                        std::vector<RawStep>& out, int depth) const {
  if (a == b) return;
  PRISM_CHECK(depth < 1'000'000, "explanation recursion too deep");
  for (const ProofForest::Edge& edge : forest_.Path(a, b)) {
    const Justification& j = edge.justification;
    if (j.kind == Justification::Kind::kCongruence) {
      const ENode& x = id_node(edge.from);
      const ENode& y = id_node(edge.to);
      PRISM_CHECK(x.op == y.op && x.payload == y.payload && x.children.size() == y.children.size(),
                  "congruence edge between different operators");
      for (size_t i = 0; i < x.children.size(); ++i) {
        position.push_back(static_cast<int>(i));
        ExplainIds(x.children[i], y.children[i], position, out, depth + 1);
        position.pop_back();
      }
      continue;
    }
    const bool forward = j.kind == Justification::Kind::kRule ? edge.along != j.reversed : edge.along;
    out.push_back(RawStep{j, forward ? Direction::kForward : Direction::kBackward, position,
                          edge.from, edge.to});
  }
}

absl::StatusOr<Explanation> EGraph::Explain(EClassId a, EClassId b) const {
  if (!options_.explanations) {
    return absl::FailedPreconditionError("explanations are off (EGraphOptions::explanations)");
  }
  if (Find(a) != Find(b)) {
    return absl::NotFoundError(absl::StrCat("the terms are not equal: ", TermOf(a).ToString(ctx_),
                                            " and ", TermOf(b).ToString(ctx_),
                                            " are in different e-classes"));
  }
  std::vector<RawStep> raw;
  std::vector<int> position;
  ExplainIds(a, b, position, raw, 0);
  Explanation e;
  e.start = TermOf(a);
  e.goal = TermOf(b);
  Term current = e.start;
  for (const RawStep& r : raw) {
    ProofStep s;
    s.kind = r.justification.kind;
    s.rule = r.justification.name;
    s.direction = r.direction;
    s.position = r.position;
    s.before = current;
    std::optional<uint32_t> at = current.At(r.position);
    PRISM_CHECK(at.has_value(), "explanation step position ", PathToString(r.position), " not in term");
    PRISM_CHECK(SubtermsEqual(current, *at, TermOf(r.before), TermOf(r.before).root()),
                "explanation step does not start from the current term");
    current = current.Replace(r.position, TermOf(r.after));
    s.after = current;
    e.steps.push_back(std::move(s));
  }
  PRISM_CHECK(current == e.goal, "explanation does not end at the goal");
  return e;
}

std::string EGraph::Dump() const {
  std::string out;
  auto node_str = [&](const ENode& n) {
    std::string head = n.payload.is_none() ? std::string(n.op.name()) : n.payload.ToString(ctx_);
    if (n.children.empty()) return head;
    std::string s = absl::StrCat("(", head);
    for (EClassId c : n.children) absl::StrAppend(&s, " e", Find(c).value());
    return s + ")";
  };
  for (uint32_t i = 0; i < classes_.size(); ++i) {
    const EClassId id(i);
    if (!uf_.IsRoot(id)) continue;
    const EClass& cls = classes_[i];
    absl::StrAppend(&out, "e", i);
    if (analysis_ != nullptr) {
      std::string d = analysis_->Describe(id);
      if (!d.empty()) absl::StrAppend(&out, " [", d, "]");
    }
    absl::StrAppend(&out, ":");
    for (size_t k = 0; k < cls.nodes.size(); ++k) {
      absl::StrAppend(&out, k == 0 ? " " : " | ", node_str(cls.nodes[k]));
    }
    out += "\n";
  }
  return out;
}

}  // namespace prism::equiv
