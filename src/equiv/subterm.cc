#include "prism/equiv/subterm.h"

#include <vector>

#include "prism/base/check.h"

namespace prism::equiv {

SubtermIndex::SubtermIndex(const EGraph* target) : target_(target), ids_(target->num_ids()) {
  PRISM_CHECK(target->clean(), "SubtermIndex needs a clean (rebuilt) target e-graph");
}

std::optional<EClassId> SubtermIndex::FindNode(Symbol op, const Payload& payload,
                                               absl::Span<const EClassId> children) {
  ++stats_.queries;
  return Lookup(op, payload, children);
}

std::optional<EClassId> SubtermIndex::Lookup(Symbol op, const Payload& payload,
                                             absl::Span<const EClassId> children) {
  PRISM_CHECK(target_->num_ids() == ids_, "the target e-graph changed after the SubtermIndex was made");
  ENode node{op, payload, {}};
  for (EClassId c : children) {
    if (!c.valid() || c.value() >= ids_) return std::nullopt;
    node.children.push_back(target_->Find(c));
  }
  if (auto it = memo_.find(node); it != memo_.end()) {
    ++stats_.memo_hits;
    if (!it->second.valid()) return std::nullopt;
    return it->second;
  }
  ++stats_.lookups;
  std::optional<EClassId> found = target_->Lookup(node);
  memo_.emplace(std::move(node), found.value_or(EClassId::Invalid()));
  return found;
}

std::optional<EClassId> SubtermIndex::Find(const Term& term) {
  ++stats_.queries;
  if (term.empty()) return std::nullopt;
  std::vector<EClassId> ids(term.size());
  for (uint32_t i = 0; i < term.size(); ++i) {
    const TermNode& n = term.node(i);
    std::vector<EClassId> kids;
    kids.reserve(n.children.size());
    for (uint32_t c : n.children) kids.push_back(ids[c]);
    std::optional<EClassId> found = Lookup(n.op, n.payload, kids);
    if (!found.has_value()) return std::nullopt;
    ids[i] = *found;
  }
  return ids.back();
}

bool ContainsSubterm(const EGraph& target, const Term& term) {
  return target.LookupTerm(term).has_value();
}

}  // namespace prism::equiv
