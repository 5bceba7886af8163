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
//   2. For the families in that order: candidates are the family's preferred instance, then a
//      deterministic stratified sample of the family's whole feasible domain: every
//      assignment of the cross product of the parameter domains (all of it up to 20,000
//      points, else 20,000 spread over it by a fixed permutation; at most 8,000 generation
//      attempts) that instantiates, that codegen::GenerateCuda accepts and that passes
//      Pruner::CheckInstance (domains, constraints, hard rules) is grouped by its grid
//      parameters (strata) and (threads, stages) (sub-strata), each sub-stratum ordered by the
//      cost lower bound (then forloop ascending, then a fixed hash); up to
//      instances_per_family are taken round-robin over the ⌈instances_per_family/12⌉ (≥ 2)
//      cheapest strata (more while they hold fewer instances than that), each turn from the
//      stratum's next sub-stratum (diagonals of the threads × stages table first), cycling
//      over its three smallest feasible forloop counts; each taken instance is followed by its
//      distinct codegen variants (CodegenVariants()), counted too. From sm_90 on, an attention
//      family that the attention_wgmma option fits is sampled among the instances it fits
//      only (up to 80,000 points visited, as many generation attempts), each taken with
//      attention_wgmma alone (with PDL when multi-kernel). A family none of whose candidates generates is a
//      codegen skip (the first message is recorded) and does not count towards
//      top_families. The walk stops after
//      top_families families with candidates.
//   3. With a GPU (use_gpu and the query succeeded): every candidate is compiled with NVRTC
//      for the device's sm (through the compile cache) and measured, in one child process
//      whose NVRTC threads compile ahead of its measuring thread
//      (runtime::CompileAndMeasureInChild: a fresh child after a fault; none started after
//      measure_budget_s), against the
//      reference interpreter (f64: device mode rounds attention scores to f16 and its own
//      error exceeds the tolerance at gqa b=8; RandomInputs(program, seed)); the fastest
//      candidate whose output is within DefaultTolerance is selected (Method::kMeasured).
//      Measuring stops at MeasuringDeadline (measure_budget_s after step 3 began, or
//      earlier by tune_budget_s; the rest are recorded as not measured, with which budget
//      was spent); candidates are measured round-robin over the families (each family's in
//      sample order), so a cut keeps every family's and each stratum's first picks.
//      With tune_cache_dir set and a cache entry for (program, GPU, driver, NVRTC, options)
//      that names one of the candidates, nothing is compiled or measured: that candidate is
//      selected with the cached measurement (TuneResult::tune_cache_hit); after a measured
//      selection the entry is written (TuneCache below).
//      Without a GPU (use_gpu false, or no driver/device: `no_gpu_reason` says which) the
//      candidate with the lowest estimate (Candidate::estimate_us, tune/estimate.h; ties by
//      the cost lower bound) is selected (Method::kCostModel), compiled with NVRTC for the
//      target's compute capability when NVRTC is available (candidates that do not compile
//      are skipped, the next one taken).
//   4. With a GPU, refinement. First, when refine_rounds > 0, the variant round: each of the
//      refine_top fastest matching candidates is generated again, same assignment, with
//      programmatic dependent launch when it is a one-kernel instance without it (sm_90 on; its
//      variant plus ",programmatic_dependent_launch"), and with every loop reordering of
//      WgmmaLoopVariants() when it is a wgmma attention instance (variant attention_wgmma,
//      with or without PDL); those are compiled and measured. Then the
//      rounds (TuneOptions::refine_rounds): the fastest matching candidates'
//      neighbours (one parameter moved to the next feasible value of its domain, same codegen
//      variant; NeighborAssignments) that are not candidates yet are generated, checked
//      (Pruner::CheckInstance), compiled and measured the same way; Candidate::refined_from
//      names the candidate each came from. The stratified sample finds the right region;
//      the neighbours find the threads / stages / tile sizes that the lower bound does not
//      rank (docs/optimize.md). A tuning-cache entry that names a refined candidate is
//      regenerated from its assignment.
//   5. With a GPU, confirmation (TuneOptions::confirm_top, confirm_rounds): the confirm_top
//      fastest matching candidates are measured confirm_rounds more times, interleaved (each
//      round measures every finalist once, all rounds in one child), and the finalist with
//      the lowest median of those measurements is selected (PickConfirmed;
//      Candidate::confirm_us). Why: one measurement per candidate picks the luckiest of
//      hundreds (on the H200 the tuner's rmsnorm_linear b=1 selection ran 0.6 µs slower than
//      a runner-up in an interleaved A/B, 2026-12-03, docs/performance.md).
// Deterministic without a GPU: the same Program, target and options give the same selection
// and byte-identical outputs (WriteOutputs).
#ifndef PRISM_TUNE_TUNE_H_
#define PRISM_TUNE_TUNE_H_

#include <functional>
#include <optional>
#include <string>
#include <utility>
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
  // The default SearchConfig unless set. Its `threads` (0: one per core, at most 16 here) is
  // also the number of workers per family that build the candidates (step 2); the candidates
  // do not depend on it.
  search::SearchConfig search;
  // Families with generated candidates that are tried. 4: lora's chained split-K family was
  // the search's fourth at b=8 (after two one-kernel families that measure 18 µs and the X·A
  // split), and ran 0.8 µs faster than the third's selection on the H200 (2026-12-03); with
  // one partial (split sums added before they are stored) it ranks third, and the fourth
  // keeps the X·A split in the sample.
  int top_families = 4;
  int instances_per_family = 96;  // generated candidates per family (the preferred one first)
  bool use_gpu = true;           // false: select by the cost model (no device query)
  int gpu = 0;                   // device ordinal
  // true: a GPU that cannot be used is an error (Unavailable "--gpu <n>: <why>"), not a
  // fallback to the cost model.
  bool require_gpu = false;
  std::string compile_cache_dir;  // empty: no compile cache
  // NVRTC threads beside the measuring (runtime::CompileThreads: 0 is one per core but one,
  // at most 16).
  int compile_threads = 0;
  runtime::MeasureOptions measure;
  // MeasureOptions::early_stop_factor of steps 3 and 4 (not of the confirmation, which
  // measures its finalists in full): a candidate whose first replays are this many times
  // slower than the fastest matching one measured before it stops after them. 0: off.
  double early_stop_factor = 1.5;
  uint64_t seed = 1;  // inputs of the correctness check
  // Wall-clock budget for compiling and measuring the candidates (the two run side by side;
  // the refinement rounds' included); 0: no limit.
  double measure_budget_s = 45;
  // Wall-clock budget for everything after the search (building the candidates, compiling,
  // measuring, refining, confirming); 0: no limit. It moves the measuring deadline earlier
  // (MeasuringDeadline) and ends the confirmation's allowance; building the candidates is not
  // cut, so a row can pass it by what that overruns plus one compilation and measurement. 55 s
  // keeps a row's tuning within WORKLOADS.md's 60 s target.
  double tune_budget_s = 55;
  // Tuning cache directory (TuneCache); empty: none. Used only with a GPU.
  std::string tune_cache_dir;
  // Names the generated program: kernel functions prism_<name>_<kernel>, host.h's namespace
  // prism_generated::<name> and the families' sGraphs, so that the kernels of several
  // programs can be linked into one binary. An identifier ([A-Za-z_][A-Za-z0-9_]*, at most
  // 64 characters; else InvalidArgument); empty: "candidate".
  std::string program_name;
  // Inputs of the program (by name) that no kernel launched before it in the same stream
  // writes while it runs: weights, loaded once. Every candidate is generated with them as
  // CodegenOptions::constant_inputs (with programmatic dependent launch, a GEMM kernel loads
  // their first tiles before it waits for the previous grid). A name that is not an input of
  // the program is InvalidArgument ("constant input 'Z' is not an input of the program
  // (inputs: X, W)"), and so is a name given twice. Declaring an input that an earlier kernel
  // does write makes the generated program read it too early: wrong results.
  std::vector<std::string> constant_inputs;
  // Local refinement after the sampled candidates are measured (step 4 above): at most
  // refine_rounds rounds; each takes the refine_top fastest matching candidates not refined
  // yet and adds their feasible neighbours (NeighborAssignments, same family and codegen
  // variant) that are not candidates yet, at most refine_max per round, and compiles and
  // measures them within the same measure_budget_s (their compilation included). A round
  // follows the previous one only when that one found a faster candidate. 0: no refinement.
  int refine_rounds = 2;
  int refine_top = 3;
  int refine_max = 24;
  // Confirmation (step 5 above): the confirm_top fastest matching candidates (after the
  // refinement) are measured confirm_rounds more times, interleaved, and the lowest median of
  // those measurements selects. It has its own allowance of confirm_budget_s (the measuring
  // budget may be spent by then), which ends no later than tune_budget_s (none is started
  // once that has passed). confirm_top < 2 or confirm_rounds 0: none.
  int confirm_top = 6;
  int confirm_rounds = 3;
  double confirm_budget_s = 20;
  // Tests only: use this device identity instead of querying the driver (nothing runs on
  // it: with a tuning-cache hit nothing needs to; otherwise measuring fails).
  std::optional<runtime::DeviceInfo> fake_device;
};

struct Candidate {
  int family = 0;  // index into TuneResult::search.families
  Assignment assignment;
  // The code generator's variant of the instance: "" for the default CodegenOptions, else
  // the knobs that differ, e.g. "attention_tiles_per_warp=2" (CodegenVariants()).
  std::string codegen_variant;
  double cost_us = 0;         // the cost model's lower bound (µs)
  // The cost model's estimate (µs; EstimateInstance, tune/estimate.h): the ranking without a
  // GPU. Not a bound.
  double estimate_us = 0;
  // Its terms per kernel (Estimate::ToString()): "k0: 1.20 + 15.83 µs (memory: 67.11 MB at
  // 4.08 TB/s) | k1: ...", what the estimate charged and which term bound each kernel.
  std::string estimate_terms;
  std::string codegen_error;  // empty: generated
  bool compiled = false;
  std::string compile_error;  // empty unless compilation was tried and failed
  bool cache_hit = false;     // the cubin came from the compile cache
  std::optional<runtime::Measurement> measurement;
  std::string measure_error;  // a failed, crashed or timed-out measurement
  // Index (into TuneResult::candidates) of the measured candidate this one neighbours: added
  // by a refinement round (TuneOptions::refine_rounds). -1: sampled (step 2).
  int refined_from = -1;
  // The confirmation round's measurements (median µs per call of each, in order; step 5):
  // empty unless the candidate was a finalist.
  std::vector<double> confirm_us;
};

struct CodegenSkip {
  int family = 0;
  double cost_us = 0;
  std::string message;  // GenerateCuda's message for the family's preferred instance
};

// The codegen skips grouped by message, in order of first appearance, each with the 1-based
// family numbers it stopped (ascending, as the skips are).
std::vector<std::pair<std::string, std::vector<int>>> GroupSkipsByMessage(
    const std::vector<CodegenSkip>& skips);

enum class Method { kMeasured, kCostModel };

// Wall-clock seconds of Optimize's steps after the search; -1: the step did not run (a
// tuning-cache hit measures nothing; without a GPU nothing is measured, and compile_s is the
// cost-model path's compilation). Their sum plus SearchResult::elapsed_s is the whole
// optimization but for the device query and the reference evaluation.
struct StepTimes {
  double candidates_s = -1;  // step 2: sampling, the feasibility checks and codegen
  // Step 3 (compiling and measuring side by side, in a child): compile_s is the time the
  // measuring waited for cubins, measure_s the rest of the step (measuring, NVRTC beside it).
  // Without a GPU, compile_s is the cost-model path's compilation.
  double compile_s = -1;
  double measure_s = -1;
  double refine_s = -1;      // step 4: the refinement rounds (codegen, compiling, measuring)
  double confirm_s = -1;     // step 5: the confirmation round
};

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
  bool tune_cache_hit = false;  // the selection came from the tuning cache (not measured now)
  std::string tune_cache_key;   // empty unless a tuning cache was used
  std::string tune_cache_note;  // why an entry was ignored (corrupt, stale), or a store error
  StepTimes times;
  const Candidate& chosen() const { return candidates[selected]; }
  const search::FamilyResult& chosen_family() const {
    return search.families[candidates[selected].family];
  }
};

// Runs the pipeline (file comment). Errors: Search's; InvalidArgument for top_families or
// instances_per_family < 1 and for a program_name that is no identifier; FailedPrecondition
// "the search found no family for this program" and FailedPrecondition "no family can be
// generated as CUDA yet: <n> family/families tried; <message> (families #1-#4, #7); ..." (every
// family's codegen failed; each distinct reason once);
// FailedPrecondition "no candidate compiled with NVRTC: <first log line>"; with a GPU,
// FailedPrecondition "no candidate matched the reference on the GPU: <candidate errors>";
// with require_gpu, Unavailable "--gpu <n>: <why>".
// A TuneOptions::program_name made from a label (a file stem, "rmsnorm_linear_b8"): every
// character but letters, digits and '_' becomes '_', a leading digit gets "p_" before it,
// at most 64 characters; "program" for an empty label.
std::string ProgramNameFrom(absl::string_view label);

// OK when every name in `constant_inputs` is an input of `program`, once (TuneOptions::
// constant_inputs); else InvalidArgument "constant input 'Z' is not an input of the program
// (inputs: X, W)" or "constant input 'X' is named twice".
absl::Status CheckConstantInputs(const Program& program,
                                 const std::vector<std::string>& constant_inputs);
// The names in `constant_inputs` that are inputs of `program`, in order: a part of a cut
// program, or one output's program, reads only some of the constant inputs.
std::vector<std::string> ConstantInputsOf(const Program& program,
                                          const std::vector<std::string>& constant_inputs);

absl::StatusOr<TuneResult> Optimize(const Program& program, const Target& target,
                                    const TuneOptions& options);

// Whether `status` is one of Optimize's two "no family" errors above (FailedPrecondition "the
// search found no family for this program…" or "no family can be generated as CUDA yet…"):
// the program needs cutting, where the other FailedPrecondition errors (NVRTC, the GPU
// check, files) are failures of a generated candidate or of the system.
bool IsNoFamilyError(const absl::Status& status);

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

// The code generator variants every sampled instance is also generated with, besides the
// default options, for compute capability `sm` (90 = sm_90; docs/optimize.md), in order:
// {"attention_tiles_per_warp=2", attention_tiles_per_warp = 2}; from sm_90 on
// {"programmatic_dependent_launch", programmatic_dependent_launch = true},
// {"attention_tiles_per_warp=2,programmatic_dependent_launch", both}, {"attention_wgmma"} and
// {"attention_wgmma,programmatic_dependent_launch"}; then
// {"gemm_warps_along_n", gemm_warps_along_n = true} and, from sm_90 on,
// {"gemm_warps_along_n,programmatic_dependent_launch", both}; from sm_90 on
// {"cluster_combine,programmatic_dependent_launch"} and
// {"cluster_combine,gemm_warps_along_n,programmatic_dependent_launch"}, kept only where the
// combine kernel folds into clusters of at most two blocks (split-K GEMM instances with s = 2;
// larger clusters were slower on the H200, docs/performance.md); last
// {"gemm_chained_b_smem"} and {"gemm_chained_b_smem,gemm_warps_along_n"} (from sm_90 on each
// with ",programmatic_dependent_launch" appended), which differ only for a chained matmul
// (lora's split form); from sm_90 on {"library_matmul_cluster_split"},
// {"library_matmul_cluster_split,programmatic_dependent_launch"},
// {"library_matmul_cluster_split,library_matmul_split_blocks_per_sm=2"} and that with
// ",programmatic_dependent_launch" appended, the fallback's matmul library kernel split along k
// over clusters (tried only on families with such a kernel, codegen::HasLibraryMatmul). A
// variant becomes a candidate
// only when it generates and its source differs from the default one and from the variants
// before it (two tiles per warp changes only the attention template, warps along N only the
// GEMM template, and only where the warp split differs); the
// programmatic-dependent-launch ones only for instances of more than one kernel, or of one
// kernel whose cost bound is at most 2 µs (where the launch overlap matters). From sm_90 on a
// multi-kernel instance is taken with programmatic dependent launch in place of the default
// options and followed only by the variants that have it (docs/optimize.md).
std::vector<std::pair<std::string, codegen::CodegenOptions>> CodegenVariants(int sm);

// The attention_wgmma loop reorderings (codegen::CodegenOptions: attention_wgmma_late_loads,
// attention_wgmma_split_pv) that step 4's loop-variant round tries on the fastest wgmma
// attention candidates; none below sm_90. For each base, "attention_wgmma" and
// "attention_wgmma,programmatic_dependent_launch", three variants named by the base's name with
// the options appended: late loads, split P·V, and both (e.g.
// "attention_wgmma,programmatic_dependent_launch,attention_wgmma_split_pv"). They are not
// sampled (step 2), so the instance budget is unchanged.
std::vector<std::pair<std::string, codegen::CodegenOptions>> WgmmaLoopVariants(int sm);

// The neighbours of `a` in `graph`'s parameter space, for the refinement rounds: for each
// parameter of graph.params() that `a` assigns and whose domain enumerates (at most 4,096
// values), `a` with only that parameter moved to the nearest value below, then the nearest
// value above, its current one in the enumerated order for which `accept` returns true;
// at most `max_steps` values are tried each way (a parameter whose value is not in its domain
// gets none). In parameter order, the lower neighbour first.
std::vector<Assignment> NeighborAssignments(const SGraph& graph, const Assignment& a,
                                            const std::function<bool(const Assignment&)>& accept,
                                            int max_steps = 8);

// The median of `v` (non-empty): its middle value, or the mean of the middle two.
double Median(std::vector<double> v);

// When step 3 stops starting measurements: `measure_budget_s` after it began (`start`), but
// no later than `tune_end` (the tuning budget's end) less `confirm_reserve` (kept for step
// 5), and never sooner than `min_measure` after `start`, so that slow candidate building
// still leaves candidates measured. A budget <= 0 is no limit; InfiniteFuture when neither
// limits.
absl::Time MeasuringDeadline(absl::Time start, double measure_budget_s, absl::Time tune_end,
                             absl::Duration confirm_reserve, absl::Duration min_measure);

// The confirmation round's choice (step 5): the index of the finalist whose measurements
// (`times[i]`, µs) have the lowest Median;
// finalists without measurements are skipped, ties go to the lower index. -1 when no
// finalist has a measurement.
int PickConfirmed(const std::vector<std::vector<double>>& times);

// A candidate for people: AssignmentText(graph, assignment) ("(no parameters)" for a family
// without any, a concat's library kernel), then " [<variant>]" when it has a codegen variant.
std::string CandidateText(const SGraph& graph, const Candidate& c);

// The tuning cache: DIR/<key>.json per (program, GPU, driver, NVRTC, options), holding the
// measured selection; written atomically (temporary file + rename).
//   {"format": "prism.tune-cache", "version": 1, "key", "family" (0-based index in the
//    search's order), "assignment" {name: value}, "codegen_variant" (only when not ""),
//    "median_us", "relative_error", "input_sets"}
struct TuneCacheEntry {
  int family = 0;
  Assignment assignment;
  std::string codegen_variant;  // Candidate::codegen_variant ("" when the file has none)
  double median_us = 0;
  double relative_error = 0;
  int input_sets = 0;
};

class TuneCache {
 public:
  explicit TuneCache(std::string dir);  // empty: disabled (Lookup misses, Store does nothing)
  // 16 hex digits of a stable hash of the cache format version, the build's generator source
  // hash (the sources of codegen/, kernels/ and tune/, hashed at build time),
  // Program::StructuralHash, the GPU name, the driver version, the NVRTC version, the target
  // name and the options that change the candidates or the choice (top_families,
  // instances_per_family, seed, refine_rounds, refine_top, refine_max, confirm_top,
  // confirm_rounds, constant_inputs as a set).
  static std::string Key(const Program& program, const runtime::DeviceInfo& device,
                         absl::string_view nvrtc_version, absl::string_view target_name,
                         const TuneOptions& options);
  // nullopt: no entry. DataLoss "corrupt tuning-cache entry '<path>': <why>" for a file that
  // does not parse or lacks a field (or whose key differs).
  absl::StatusOr<std::optional<TuneCacheEntry>> Lookup(const std::string& key) const;
  // Internal "cannot write the tuning cache '<path>': <why>".
  absl::Status Store(const std::string& key, const TuneCacheEntry& entry) const;
  std::string PathOf(const std::string& key) const;

 private:
  std::string dir_;
};

}  // namespace prism::tune

#endif  // PRISM_TUNE_TUNE_H_
