// sGraph → prune::Family: the family the pruner decides (DESIGN.md §2.3, §3). Parameters are
// the sGraph's (names, domains; the doc is the role), constraints the divisibility conditions
// that Validate derives (one per distinct condition), metrics the symbolic resources of
// block_resources.h under the standard names of prune/family.h.
//
// Layering: this is target prism::block_family (src/block/family_builder.cc), which sits
// above both prism::block and prism::prune; prism::block itself never depends on prune.
//
//   ExprContext ctx;
//   PRISM_ASSIGN_OR_RETURN(prune::Family f, BuildFamily(graph, ctx));
//   PRISM_ASSIGN_OR_RETURN(prune::Family::Evaluation ev,
//                          f.Evaluate({{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}));
#ifndef PRISM_PRUNE_BLOCK_FAMILY_H_
#define PRISM_PRUNE_BLOCK_FAMILY_H_

#include "absl/status/statusor.h"
#include "prism/expr/expr.h"
#include "prism/block/sgraph.h"
#include "prism/prune/family.h"

namespace prism {

// Builds the family of `graph` with expressions in `ctx` (imported; ctx must outlive the
// family). The family is named after the graph ("sgraph" if unnamed). Errors: Validate()'s
// (maps must be resolved), or a family-building error (InvalidArgument).
// Constraint names: "split.<tensor>.<dim>" (".2", ".3", ... appended on a clash).
absl::StatusOr<prune::Family> BuildFamily(const SGraph& graph, ExprContext& ctx);

}  // namespace prism

#endif  // PRISM_PRUNE_BLOCK_FAMILY_H_
