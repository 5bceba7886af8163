// prism's public C++ API: the one header a toolchain includes (docs/api.md).
//
//   #include "prism/prism.h"
//
//   prism::ProgramBuilder b;
//   prism::TensorId x = b.Input("X", prism::DType::kF16, {8, 4096});
//   prism::TensorId w = b.Input("W", prism::DType::kF16, {4096, 4096});
//   prism::TensorId y = b.MatMul(b.RmsNorm(x, -1), w);
//   b.SetName(y, "Y");
//   b.Output(y);
//   absl::StatusOr<prism::Program> program = std::move(b).Build();   // or prism::ParseProgram
//
//   prism::OptimizeOptions options;
//   options.gpu_mode = prism::GpuMode::kOff;       // select by the cost model, touch no GPU
//   absl::StatusOr<prism::Result> r = prism::Optimize(*program, options);
//   // r->cuda_source (kernel.cu), r->kernels[0].grid / .block / .dynamic_smem_bytes, r->report
//
// Contracts:
// - Every function returns absl::Status / absl::StatusOr; no exception crosses this API. User
//   errors carry a specific code (InvalidArgument, NotFound, FailedPrecondition, Unavailable)
//   and a message that says what was wrong and how to fix it.
// - This header and everything it includes name no Z3, CUDA or Boost type (a test checks the
//   transitive includes: tests/install/check_public_headers.sh). It needs Abseil's headers.
// - Data files (smt_theories/) are found by prism::DataDir(): $PRISM_DATA_DIR, else
//   <prefix>/share/prism beside the installed library, else the source tree prism was built
//   from (base/paths.h).
// - Threads: a progress callback is called from the thread that called Optimize (which runs
//   worker threads of its own: OptimizeOptions::search_threads). Concurrent Optimize calls
//   from several threads are not tested; serialize them.
#ifndef PRISM_PRISM_H_
#define PRISM_PRISM_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/base/paths.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"
#include "prism/ir/types.h"
#include "prism/ir/workloads.h"
#include "prism/proofcheck/checker.h"
#include "prism/report/audit.h"

namespace prism {

// The library's version, "MAJOR.MINOR.PATCH" (the CMake project version).
const char* Version();

// ---- Optimize -------------------------------------------------------------------------------

// Whether Optimize measures candidates on a GPU.
enum class GpuMode {
  kAuto,     // GPU `gpu` if a driver and that device are found, else the cost model (the
             // result's no_gpu_reason says why)
  kRequire,  // GPU `gpu`; Unavailable "--gpu <n>: <why>" when it cannot be used
  kOff,      // the cost model selects; no device is touched (`prism optimize --no-gpu`)
};

// A snapshot for progress displays. Stages in order: "search:generate", "search:prove",
// "search:rank", "search:prune" (each possibly repeated, about every 100 ms), "tune"
// (candidates are generated, compiled and, with a GPU, measured), "report", "done".
struct Progress {
  std::string stage;
  double elapsed_s = 0;  // since Optimize began
  int64_t done = 0;      // search:prove / search:rank: jobs finished of `total` (else 0)
  int64_t total = 0;
};

struct OptimizeOptions {
  std::string target = "h200";        // a hardware model (`prism hw list`): h200, h100_sxm, ...
  double search_budget_s = 30;        // the search's wall-clock budget, seconds, > 0
  int search_threads = 0;             // proving workers; 0: one per core
  int top_families = 4;               // families that codegen can handle to try, ≥ 1 (tune's default)
  int instances_per_family = 96;      // generated candidates per family, ≥ 1
  GpuMode gpu_mode = GpuMode::kAuto;
  int gpu = 0;                        // device ordinal, ≥ 0
  std::string compile_cache_dir;      // reuse cubins compiled before; empty: no cache
  // Tuning cache (`--tune-cache`): with a GPU, a program tuned before on the same GPU, driver,
  // NVRTC and options is selected from the cached measurement, nothing measured
  // (Result::tune_cache_hit); empty: no cache.
  std::string tune_cache_dir;
  // Wall-clock budgets after the search, seconds, ≥ 0 (0: none), as `--measure-budget-s` and
  // `--tune-budget-s`: for compiling and measuring candidates (side by side), and for
  // everything after the search.
  double measure_budget_s = 45;
  double tune_budget_s = 55;
  int refine_rounds = 2;              // rounds measuring the fastest candidates' neighbours, 0..8
  std::string program_label = "program";  // names the program in family.json and the report
  // Names the generated kernels prism_<name>_<kernel> and host.h's namespace
  // prism_generated::<name>: an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 64 characters);
  // empty: made from program_label (tune::ProgramNameFrom). `prism optimize` uses the file
  // stem or <workload>_b<batch>.
  std::string program_name;
  // Inputs (by name) that no kernel launched before the program in the same stream writes
  // while it runs, such as weights (`--constant-inputs`): with programmatic dependent launch a
  // GEMM kernel loads their first tiles before it waits for the previous grid. Each must be an
  // input of the program, once (else InvalidArgument, tune::CheckConstantInputs); each part of
  // OptimizeParts gets those it reads. Declaring an input that an earlier kernel writes gives
  // wrong results.
  std::vector<std::string> constant_inputs;
  bool build_report = true;           // false: Result::report stays empty (saves its time)
  // OptimizeParts only: run what no block-graph family generates as library kernels (the
  // fallback below); false: return Optimize's "no family" error instead (`--no-fallback`).
  bool fallback = true;
  // Called from the calling thread while Optimize runs. Must not call back into prism.
  std::function<void(const Progress&)> progress;
};

// One pointer argument of a kernel, in launch order.
struct KernelArg {
  std::string tensor;  // the Program tensor (input, output) or an intermediate buffer's name
  DType dtype = DType::kF16;
  Shape shape;
  bool written = false;  // true: the kernel writes it (outputs, partials); false: read only
};

// How to launch one generated kernel: `function<<<grid, block, dynamic_smem_bytes>>>(args...)`.
// Kernels run in the order of Result::kernels, on one stream.
struct KernelLaunch {
  std::string kernel;    // the block graph's name ("k0")
  std::string function;  // the extern "C" __global__ name in cuda_source
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  // Above 48 KiB the caller must raise cudaFuncAttributeMaxDynamicSharedMemorySize (host.h does).
  int64_t dynamic_smem_bytes = 0;
  std::vector<KernelArg> args;
};

// The proof report of the selected program (report/report.h; docs/report.md). WriteResult
// writes it as report.json, report.md, report.html, proof.json and smt/<file>.
struct Report {
  std::string json;        // report.json
  std::string markdown;    // report.md
  std::string html;        // report.html
  std::string proof_json;  // the equivalence proof: CheckProof(proof_json) accepts it
  std::vector<std::pair<std::string, std::string>> smt_files;  // (file name, SMT-LIB2 text)
};

enum class Selection { kMeasured, kCostModel };

// One instance the tuner generated (docs/optimize.md), in the tuner's order: what it measured
// and why the others lost. With Selection::kCostModel nothing is measured.
struct CandidateSummary {
  int family = 0;  // 1-based rank of its family in the search
  // Its parameters in the family's parameter order (gx, F, T, S, ...).
  std::vector<std::pair<std::string, int64_t>> assignment;
  std::string codegen_variant;        // "" (default CodegenOptions) or the knobs that differ
  double cost_us = 0;                 // the cost model's lower bound, µs
  double estimate_us = 0;             // the cost model's estimate, µs (the no-GPU ranking)
  std::string estimate_terms;         // its terms per kernel ("k0: 1.20 + 15.83 µs (memory: ...)")
  bool compiled = false;
  std::optional<double> measured_us;  // median per call on the GPU
  std::optional<double> relative_error;  // of its output against the reference interpreter
  bool matches = false;               // relative_error within the dtype's tolerance
  std::vector<double> confirm_us;     // the confirmation round's medians (finalists only)
  // Why it was not measured or did not count: a compile error, a failed, crashed or
  // timed-out measurement; else "".
  std::string error;
  bool selected = false;              // the one the files hold
};

// A family the search returned that the code generator cannot handle yet (skipped).
struct CodegenSkipSummary {
  int family = 0;  // 1-based rank in the search
  double cost_us = 0;
  std::string message;
};

struct Result {
  // The files of `prism optimize` (docs/optimize.md), byte for byte when program_label is the
  // CLI's label (e.g. "<builtin gqa b=1>" for --workload gqa).
  std::string cuda_source;  // kernel.cu: self-contained CUDA C++ (NVRTC or nvcc)
  std::string launch_json;  // launch.json
  std::string host_header;  // host.h: launch helpers (include after kernel.cu, nvcc)
  std::string family_json;  // family.json
  std::vector<KernelLaunch> kernels;  // launch.json as structs

  Selection selection = Selection::kCostModel;
  std::string no_gpu_reason;  // kCostModel: why no GPU was used
  std::string device_name;    // the GPU measured on (kMeasured), else ""
  int family = 0;             // 1-based rank of the selected family in the search
  int families_found = 0;     // families the search returned
  // The selected instance's parameters in the family's parameter order (gx, F, T, S, ...).
  std::vector<std::pair<std::string, int64_t>> assignment;
  double cost_us = 0;                 // the cost model's lower bound, µs
  double estimate_us = 0;             // the cost model's estimate, µs (tune/estimate.h)
  std::optional<double> measured_us;  // median per call on the GPU (kMeasured)
  int sm = 0;                         // compiled for sm_<sm> (0: not compiled: no NVRTC)
  std::string nvrtc_version;          // "" without NVRTC
  double search_s = 0;                // wall time of the search
  bool tune_cache_hit = false;        // selected from OptimizeOptions::tune_cache_dir's entry
  std::string tune_cache_note;        // why a cache entry was ignored, or a store error; else ""
  // Every candidate generated (on a tuning-cache hit only the selected one carries a
  // measurement, the cached one) and the families codegen skipped, as `prism optimize --json`
  // lists them.
  std::vector<CandidateSummary> candidates;
  std::vector<CodegenSkipSummary> codegen_skips;
  Report report;                      // empty unless options.build_report
  // Inputs declared at a lower rank and read at their users' rank (ir PadBroadcastInputs: a
  // bias f16[N] as f16[1, N]), each with its shape as declared. The files, the kernels' args
  // and the report use the padded shape; the caller passes the same buffer.
  std::vector<std::pair<std::string, Shape>> padded_inputs;
};

// Searches, proves, prunes, generates CUDA and selects (DESIGN.md §1; docs/optimize.md) for
// `program` with its broadcast inputs at full rank (Result::padded_inputs), then builds the
// report (report::BuildReport; it proves the chosen family again for proof.json). Deterministic with GpuMode::kOff: the same program and options give
// byte-identical files.
// Errors: InvalidArgument for bad options (naming the field and the accepted range);
// InvalidArgument "unknown target 'x' ..." (LoadTarget); FailedPrecondition "the search found no
// family for this program", "no family can be generated as CUDA yet: ...", "no candidate
// compiled with NVRTC: ...", "no candidate matched the reference on the GPU: ..."; with
// GpuMode::kRequire, Unavailable "--gpu <n>: <why>".
absl::StatusOr<Result> Optimize(const Program& program, const OptimizeOptions& options = {});

// Writes DIR/kernel.cu, launch.json, host.h and family.json (creating DIR and its parents),
// and, when result.report is not empty, the report's files (report/report.h WriteReport).
// FailedPrecondition "cannot create the output directory '<dir>': <why>" or "cannot write
// '<path>': <why>".
absl::Status WriteResult(const Result& result, const std::string& dir);

// ---- programs optimized in parts ------------------------------------------------------------

// A program optimized whole (`result`) or in parts (`parts`, launched in that order on one
// stream; each part is a Plan again): a program with several outputs has one part per output,
// each output's own program (OutputCone; nothing fused across outputs); a cut program has two.
struct Plan {
  std::string name;              // the tensor this part computes, its directory name; "" at the top
  Program program;               // this part's program; at the top, the program given
  std::optional<Result> result;  // set when optimized whole
  std::vector<Plan> parts;       // else its parts, in launch order
  std::string split_json;        // of a cut: DIR/split.json (format prism.split, docs/optimize.md);
                                 // "" for the outputs' parts
  // Set when the fallback made this part (run as one library kernel, or cut for one): the
  // "no family" error of the whole that started it. "" otherwise.
  std::string fallback;
};

// Optimize, per output and per cut as `prism optimize` does:
// - Several outputs: one part per output, each output's own program, labelled
//   "<program_label> output <name>", kernels prism_<program_name>_<output>_<kernel>; an error
//   comes back as "output <name>: <error>".
// - A program that Optimize refuses with FailedPrecondition because a matmul reads
//   (elementwise ops of) a matmul wider than 16 columns, which no family can keep in one block
//   (Llama's MLP): cut at the reading matmul's A operand (ir SplitAt). The first part computes
//   that tensor (named as in the program, else H, H1, ...): the caller allocates it (dtype and
//   shape in split_json) and passes it to both parts' launches. The second part computes the
//   output from it. Parts are labelled "<program_label> part <name>", kernels
//   prism_<program_name>_<name>_<kernel>; an error comes back as "part <name>: <error>". A
//   part is cut again if it needs it, at most 4 cuts deep.
// - A program that Optimize refuses with FailedPrecondition and that has an op no block op
//   runs (a concat, which no family fuses except a matmul of concats along K; a sum, max,
//   mean, softmax or rms_norm over a dim other than the last): cut there (search
//   SplitAtLibraryOp: the output's first computed operand when the output is such an op, else
//   the first such op), parts named and laid out as above (the cut tensor's name, C, C1, ... or
//   R, R1, ... when anonymous); the op of inputs left over is one library kernel, a copy or a
//   reduction. At most 16 such cuts along a path (then FailedPrecondition "the program needs
//   more than 16 cuts at ops that run as kernels of their own ...").
// - The fallback, when Optimize's error is "no family" (tune::IsNoFamilyError) and neither cut
//   above applies: a program that is one op of its inputs runs as that op's library kernel
//   (search::SearchConfig::library_kernel: copy, reduction, matmul or elementwise kernel);
//   a larger one is cut (search::SplitForFallback: at a matmul, else before the output's op;
//   anonymous cut tensors named P, P1, ...) and its parts optimized again, so that every
//   valid program generates. These cuts count toward the same 16.
// Each part is optimized, proved and reported alone. Errors: those of Optimize when the
// program cannot be cut.
absl::StatusOr<Plan> OptimizeParts(const Program& program, const OptimizeOptions& options = {});

// Writes a plan as `prism optimize` does: a whole program as WriteResult(dir); otherwise each
// part in DIR/<part name> (recursively), and for a cut DIR/split.json. Errors as WriteResult's.
absl::Status WritePlan(const Plan& plan, const std::string& dir);

// ---- proofs ---------------------------------------------------------------------------------

using ProofSummary = proofcheck::ProofSummary;

// Replays a proof (docs/proofs.md; e.g. Result::report.proof_json) with the independent checker
// against the rule files in `rules_dir` (empty: DataDir()/smt_theories/equiv), as `prism
// check-proof` does. InvalidArgument "malformed proof: ..." (not a proof) or "proof rejected:
// <reason>" (a step that is not a valid rewrite, naming the step and the rule); NotFound when
// the rule directory cannot be listed or the data directory is missing.
absl::StatusOr<ProofSummary> CheckProof(absl::string_view proof_json,
                                        const std::string& rules_dir = "");

// ---- audits ---------------------------------------------------------------------------------

using AuditOptions = report::AuditOptions;
using AuditResult = report::AuditResult;

// Re-checks the report that WriteResult (or `prism optimize`) wrote to `dir`, as `prism audit`
// does (report/audit.h lists the checks): theory-file hashes, the proof with the independent
// checker, every deciding SMT file with a solver (z3 on PATH by default), a sample of pruned
// families checked concretely. Disagreements are listed in the result (ok() false); errors
// mean the report cannot be audited at all, e.g. NotFound "audit: 'DIR' is not a directory
// (give the --out directory of prism optimize)" or "audit: 'DIR/report.json' is missing (...)".
// Call it qualified, prism::Audit: with a prism::AuditOptions argument, argument-dependent
// lookup also finds report::Audit.
absl::StatusOr<AuditResult> Audit(const std::string& dir, const AuditOptions& options = {});

}  // namespace prism

#endif  // PRISM_PRISM_H_
