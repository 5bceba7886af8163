// The optimizer pipeline behind `prism optimize` (DESIGN.md §1 steps 7–9, issue 7 deliverable
// 4; docs/optimize.md): search → instances of the best families → CUDA → NVRTC → selection.
//
//   tune::TuneOptions options;                 // options.use_gpu = false: cost model only
//   PRISM_ASSIGN_OR_RETURN(tune::TuneResult r, tune::Optimize(program, target, options));
//   PRISM_RETURN_IF_ERROR(tune::WriteOutputs(r, "prism-out/gqa"));
//
// Steps:
//   0. With use_gpu: runtime::QueryDevice(gpu) in a child process (the parent never
//      initializes CUDA).
//   1. search::Search(program, options.search, target): proved, pruned families in the
//      search's order (best first).
//   2. For the families in that order: candidates are the family's preferred instance, then
//      its neighbours (one or two parameters moved by one or two steps along their domains)
//      that instantiate and pass Pruner::CheckInstance (domains, constraints, hard rules).
//      Up to instances_per_family of them that codegen::GenerateCuda accepts are kept: the
//      preferred one, the cheapest (by the cost lower bound) generated neighbour of each
//      distinct set of moved parameters, then the other neighbours cheapest first; at most
//      8 × instances_per_family are tried per family. A family none of whose candidates
//      generates is a codegen skip (the first message is recorded) and does not count
//      towards top_families. The walk stops after top_families families with candidates.
//   3. With a GPU (use_gpu and the query succeeded): every candidate is compiled with NVRTC
//      for the device's sm in one child process (runtime::CompileInChild, through the
//      compile cache) and measured in its own child (runtime::MeasureInChild) against the
//      reference interpreter (f64: device mode rounds attention scores to f16 and its own
//      error exceeds the tolerance at gqa b=8; RandomInputs(program, seed)); the fastest
//      candidate whose output is within DefaultTolerance is selected (Method::kMeasured).
//      Without a GPU (use_gpu false, or no driver/device: `no_gpu_reason` says which) the
//      cheapest candidate by the cost lower bound is selected (Method::kCostModel), compiled
//      with NVRTC for the target's compute capability when NVRTC is available (candidates
//      that do not compile are skipped, the next cheapest taken).
// Deterministic without a GPU: the same Program, target and options give the same selection
// and byte-identical outputs (WriteOutputs).
#ifndef PRISM_TUNE_TUNE_H_
#define PRISM_TUNE_TUNE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/codegen/codegen.h"
#include "prism/expr/eval.h"
#include "prism/ir/program.h"
#include "prism/runtime/runtime.h"
#include "prism/search/search.h"
#include "prism/smt/target.h"

namespace prism::tune {

struct TuneOptions {
  search::SearchConfig search;   // the default SearchConfig unless set
  int top_families = 3;          // families with generated candidates that are tried
  int instances_per_family = 8;  // generated candidates per family (the preferred one first)
  bool use_gpu = true;           // false: select by the cost model (no device query)
  int gpu = 0;                   // device ordinal
  // true: a GPU that cannot be used is an error (Unavailable "--gpu <n>: <why>"), not a
  // fallback to the cost model.
  bool require_gpu = false;
  std::string compile_cache_dir;  // empty: no compile cache
  runtime::MeasureOptions measure;
  uint64_t seed = 1;  // inputs of the correctness check
};

struct Candidate {
  int family = 0;  // index into TuneResult::search.families
  Assignment assignment;
  double cost_us = 0;         // the cost model's lower bound (µs)
  std::string codegen_error;  // empty: generated
  bool compiled = false;
  std::string compile_error;  // empty unless compilation was tried and failed
  bool cache_hit = false;     // the cubin came from the compile cache
  std::optional<runtime::Measurement> measurement;
  std::string measure_error;  // a failed, crashed or timed-out measurement
};

struct CodegenSkip {
  int family = 0;
  double cost_us = 0;
  std::string message;  // GenerateCuda's message for the family's preferred instance
};

enum class Method { kMeasured, kCostModel };

struct TuneResult {
  search::SearchResult search;
  std::vector<Candidate> candidates;  // in the order they were built (family, then cost)
  std::vector<CodegenSkip> codegen_skips;
  int selected = -1;  // index into candidates
  Method method = Method::kCostModel;
  std::string no_gpu_reason;  // kCostModel: why no GPU was used
  std::optional<runtime::DeviceInfo> device;
  int sm = 0;                   // the architecture compiled for (0: not compiled)
  std::string nvrtc_version;    // empty without NVRTC
  codegen::GeneratedCode code;  // of the selected candidate
  const Candidate& chosen() const { return candidates[selected]; }
  const search::FamilyResult& chosen_family() const {
    return search.families[candidates[selected].family];
  }
};

// Runs the pipeline (file comment). Errors: Search's; InvalidArgument for top_families or
// instances_per_family < 1; FailedPrecondition "the search found no family for this program"
// and FailedPrecondition "no family can be generated as CUDA yet: <n> family/families tried; #1
// (cost <c> µs): <message>; ..." (every family's codegen failed: e.g. lora, ntrans today);
// FailedPrecondition "no candidate compiled with NVRTC: <first log line>"; with a GPU,
// FailedPrecondition "no candidate matched the reference on the GPU: <candidate errors>";
// with require_gpu, Unavailable "--gpu <n>: <why>".
absl::StatusOr<TuneResult> Optimize(const Program& program, const Target& target,
                                    const TuneOptions& options);

// The selected family as JSON text: {"program", "family", "kernels", "cost_us", "assignment"
// (parameter order), "selection" ("measured" / "cost model"), "measured_us" (if any),
// "sgraph" (block/sgraph_json.h)}.
std::string FamilyJson(const TuneResult& result, const std::string& program_label);

// Writes DIR/kernel.cu, DIR/launch.json, DIR/host.h and DIR/family.json (creating DIR and
// its parents). FailedPrecondition "cannot create the output directory '<dir>': <why>" or
// "cannot write '<path>': <why>".
absl::Status WriteOutputs(const TuneResult& result, const std::string& program_label,
                          const std::string& dir);

// "measured" or "cost model".
const char* MethodName(Method method);

}  // namespace prism::tune

#endif  // PRISM_TUNE_TUNE_H_
