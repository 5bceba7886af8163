// "Is this term a subterm of the target?" (DESIGN.md §4, issue 5 item 7): the search's
// expression-guided pruning keeps a partial candidate only if the term it computes is
// represented in the e-graph of the target program (saturated under the rules, so equivalent
// spellings count). A SubtermIndex answers such queries against one fixed target graph,
// memoizing every node it has looked up — found or not — so the many overlapping terms a
// search asks about cost one hash lookup per node never seen before.
//
//   EGraph target(&ctx, std::make_unique<TensorAnalysis>(env));
//   target.AddTerm(program_term);
//   Runner(&target).Run(rules.rewrites());          // leaves the graph clean
//   SubtermIndex index(&target);
//   index.Contains(*ParseTerm(ctx, "(matmul X W)"));   // true if some class represents it
//   // incremental form, for terms built bottom-up:
//   std::optional<EClassId> x = index.FindNode(Symbol("X"), {}, {});
//
// Contract: the target must be clean when the index is made and must not change while the
// index is used (PRISM_CHECKed: the memo would be stale). Not thread-safe.
#ifndef PRISM_EQUIV_SUBTERM_H_
#define PRISM_EQUIV_SUBTERM_H_

#include <cstddef>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/term.h"

namespace prism::equiv {

class SubtermIndex {
 public:
  explicit SubtermIndex(const EGraph* target);

  // The target class representing `term` (a root id), or nullopt if some node of it is absent.
  std::optional<EClassId> Find(const Term& term);
  bool Contains(const Term& term) { return Find(term).has_value(); }
  // The target class of the node `op payload children...` whose children are target classes
  // (any ids of the target), or nullopt.
  std::optional<EClassId> FindNode(Symbol op, const Payload& payload,
                                   absl::Span<const EClassId> children);

  struct Stats {
    size_t queries = 0;    // Find / FindNode calls
    size_t lookups = 0;    // nodes looked up in the target graph
    size_t memo_hits = 0;  // nodes answered from the memo
  };
  const Stats& stats() const { return stats_; }

 private:
  std::optional<EClassId> Lookup(Symbol op, const Payload& payload, absl::Span<const EClassId> children);
  const EGraph* target_;
  size_t ids_;  // target->num_ids() when the index was made
  absl::flat_hash_map<ENode, EClassId> memo_;  // canonical node -> class, or Invalid if absent
  Stats stats_;
};

// One query without a memo (EGraph::LookupTerm): whether `term` is represented in `target`.
bool ContainsSubterm(const EGraph& target, const Term& term);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_SUBTERM_H_
