// `--dump-after STAGE` (DESIGN.md §1: "each stage can dump its result"): the result of one
// pipeline stage as readable text, for `prism search` and `prism optimize` (docs/tutorial.md
// walks rmsnorm_linear through every stage with it).
//
//   PRISM_ASSIGN_OR_RETURN(std::string text, report::DumpAfter("prune", program, search, &tune));
//
// Stages, in pipeline order (DumpStages()):
//   program      the input program (.prism text) and its structural hash
//   generate     the generation funnel: op sequences, abstract-expression cuts, structures,
//                maps, split forms, distinct candidates
//   prove        proved / not proved counts and the best family's proof as a rewrite chain
//                (proved again, deterministically)
//   prune        the incumbent, every pruned family with its verdict and deciding rules, and
//                the survivors by the ranking model
//   instantiate  the candidates (family, assignment, cost lower bound) tuning tried
//   codegen      the selected candidate's launch configurations and its CUDA source
//   tune         every candidate's compile and measurement outcome and the selection
// The dump depends only on the results (no timings): deterministic without a GPU.
#ifndef PRISM_REPORT_DUMP_H_
#define PRISM_REPORT_DUMP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/ir/program.h"
#include "prism/search/search.h"
#include "prism/tune/tune.h"

namespace prism::report {

const std::vector<std::string>& DumpStages();

// The dump of `stage` (one of DumpStages()). `tune` may be null (a search without tuning):
// then the stages after prune are FailedPrecondition "--dump-after <stage>: the stage runs in
// prism optimize, not in prism search". InvalidArgument for an unknown stage; Internal if the
// best family does not prove again (prove).
absl::StatusOr<std::string> DumpAfter(absl::string_view stage, const Program& program,
                                      const search::SearchResult& search,
                                      const tune::TuneResult* tune);

}  // namespace prism::report

#endif  // PRISM_REPORT_DUMP_H_
