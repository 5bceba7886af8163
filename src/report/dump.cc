// `--dump-after STAGE` texts (report/dump.h).
#include "prism/report/dump.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/block/sgraph_printer.h"
#include "prism/ir/text_format.h"
#include "report_internal.h"

namespace prism::report {
namespace {

using internal::Num;

std::string Header(absl::string_view stage) { return absl::StrCat("=== after ", stage, " ===\n"); }

}  // namespace

const std::vector<std::string>& DumpStages() {
  static const auto* stages = new std::vector<std::string>{
      "program", "generate", "prove", "prune", "instantiate", "codegen", "tune"};
  return *stages;
}

absl::StatusOr<std::string> DumpAfter(absl::string_view stage, const Program& program,
                                      const search::SearchResult& search,
                                      const tune::TuneResult* tune) {
  const std::vector<std::string>& all = DumpStages();
  const auto at = std::find(all.begin(), all.end(), stage);
  if (at == all.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown stage '", stage, "'; stages: ",
                                                   absl::StrJoin(all, ", ")));
  }
  if (tune == nullptr && at - all.begin() > 3) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--dump-after ", stage, ": the stage runs in prism optimize, not in prism search"));
  }
  const search::Funnel& f = search.funnel;
  std::string out = Header(stage);
  if (stage == "program") {
    absl::StrAppend(&out, PrintProgram(program), "structural hash ",
                    HashToHex(program.StructuralHash()), "\n");
  } else if (stage == "generate") {
    absl::StrAppend(&out, "op sequences explored          ", f.generated, "\n",
                    "cut by abstract expression     ", f.pruned_abstract, "\n",
                    "op sets reached again          ", f.revisited, "\n",
                    "cut (cannot be completed)      ", f.pruned_bound, "\n",
                    "complete structures            ", f.structures, "\n",
                    "maps built and validated       ", f.map_validated, "\n",
                    "split-reduction forms built    ", f.split_built, "\n",
                    "distinct candidates (mapped)   ", f.mapped, "\n");
    if (search.cache_hit) absl::StrAppend(&out, "(structures from the cache)\n");
  } else if (stage == "prove") {
    absl::StrAppend(&out, "proved      ", f.proved, "\nnot proved  ", f.unproved, " (", f.refuted,
                    " refuted by random testing)\n");
    if (!search.families.empty()) {
      PRISM_ASSIGN_OR_RETURN(internal::ProofData proof,
                             internal::ProveChosen(program, *search.families[0].graph));
      absl::StrAppend(&out, "\nthe best family's proof (", proof.steps.size(), " steps):\n  start ",
                      proof.start, "\n");
      for (size_t i = 0; i < proof.steps.size(); ++i) {
        const internal::ChainStep& s = proof.steps[i];
        absl::StrAppend(&out, "  ", i + 1, ". ", s.rule, " ", s.direction, " at [",
                        absl::StrJoin(s.position, ", "), "]: ", s.from, "  =>  ", s.to, "\n");
      }
      absl::StrAppend(&out, "  goal  ", proof.goal, "\n");
    }
  } else if (stage == "prune") {
    if (search.incumbent_us) absl::StrAppend(&out, "incumbent ", Num(*search.incumbent_us), " µs\n");
    absl::StrAppend(&out, "pruned families (", search.pruned.size(), "):\n");
    for (size_t i = 0; i < search.pruned.size(); ++i) {
      const search::PrunedFamily& p = search.pruned[i];
      absl::StrAppend(&out, "  ", i + 1, ". ", p.name, " (", p.kernels, " kernel",
                      p.kernels == 1 ? "" : "s", "): ",
                      p.decision.empty() ? absl::StrCat(p.verdict, " (", absl::StrJoin(p.rules, ", "), ")")
                                         : p.decision,
                      "\n");
    }
    absl::StrAppend(&out, "survivors (", search.families.size(), ", best first):\n");
    for (size_t i = 0; i < search.families.size(); ++i) {
      const search::FamilyResult& r = search.families[i];
      absl::StrAppend(&out, "  #", i + 1, " ", r.kernels, " kernel", r.kernels == 1 ? "" : "s",
                      ", ranking ", Num(r.rank_us), " µs, lower bound ", Num(r.cost_us), " µs at ",
                      AssignmentText(*r.graph, r.best), "\n");
    }
  } else if (stage == "instantiate") {
    absl::StrAppend(&out, "candidates (", tune->candidates.size(), "):\n");
    for (size_t i = 0; i < tune->candidates.size(); ++i) {
      const tune::Candidate& c = tune->candidates[i];
      absl::StrAppend(&out, "  ", i + 1, ". family #", c.family + 1, " at ",
                      tune::CandidateText(*tune->search.families[c.family].graph, c), ", lower bound ",
                      Num(c.cost_us), " µs, estimate ", Num(c.estimate_us), " µs",
                      c.estimate_terms.empty() ? "" : absl::StrCat(" (", c.estimate_terms, ")"),
                      "\n");
    }
    for (const tune::CodegenSkip& s : tune->codegen_skips) {
      absl::StrAppend(&out, "  skipped family #", s.family + 1, ": ", s.message, "\n");
    }
  } else if (stage == "codegen") {
    for (const codegen::LaunchConfig& l : tune->code.launches) {
      absl::StrAppend(&out, "kernel ", l.kernel, " (", l.function, "): grid (",
                      absl::StrJoin(l.grid, ", "), "), ", l.threads, " threads, ",
                      l.dynamic_smem_bytes, " B dynamic shared memory\n");
    }
    absl::StrAppend(&out, "\n", tune->code.source);
  } else {  // tune
    for (size_t i = 0; i < tune->candidates.size(); ++i) {
      const tune::Candidate& c = tune->candidates[i];
      absl::StrAppend(&out, "  ", i + 1, static_cast<int>(i) == tune->selected ? " (selected)" : "",
                      ". family #", c.family + 1, " at ",
                      tune::CandidateText(*tune->search.families[c.family].graph, c), ": estimate ",
                      Num(c.estimate_us), " µs, ",
                      c.measurement ? absl::StrCat("measured ", Num(c.measurement->median_us), " µs")
                      : !c.measure_error.empty() ? c.measure_error
                      : !c.compile_error.empty() ? absl::StrCat("did not compile: ", c.compile_error)
                      : c.compiled               ? "compiled, not measured"
                                                 : "not measured",
                      "\n");
    }
    absl::StrAppend(&out, internal::SelectedBy(tune->method),
                    tune->no_gpu_reason.empty() ? "" : absl::StrCat(" (no GPU: ", tune->no_gpu_reason, ")"),
                    "\n");
  }
  return out;
}

}  // namespace prism::report
