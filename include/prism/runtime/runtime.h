// The GPU runtime (DESIGN.md §1 step 9, issue 7 deliverable 3): the CUDA driver API loaded at
// run time with dlopen("libcuda.so.1") — never linked, so every prism binary starts on a machine
// without a driver — device queries, module loading from cubin, device buffers, timing by
// CUDA-graph replay with input sets rotated past L2, a compile cache, and a child-process
// runner so that a faulting or hanging kernel is recorded and skipped. docs/optimize.md.
//
//   PRISM_ASSIGN_OR_RETURN(DeviceInfo d, QueryDevice(0));          // in a child process
//   PRISM_ASSIGN_OR_RETURN(Measurement m, MeasureInChild(0, cubin, code.launches, program,
//                                                        inputs, reference, options));
//
// CUDA and fork: the driver must never be initialized in a process that later forks a child
// that uses it. Every function here that touches the GPU therefore runs in a fresh child
// process (fork) and the parent never calls cuInit. NVRTC initializes the driver too (seen
// with NVRTC 13.0): a process that will measure compiles through CompileInChild. Without a
// driver or a GPU every GPU call returns Unavailable with one of these messages:
//   "no CUDA driver: dlopen(\"libcuda.so.1\") failed (<dlerror>)"
//   "no CUDA driver: libcuda.so.1 lacks a driver API entry point"
//   "no usable GPU: cuInit failed with CUDA error <n>"
//   "no GPU with ordinal <n> (the driver reports <count>)"
#ifndef PRISM_RUNTIME_RUNTIME_H_
#define PRISM_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "prism/block/block_instance.h"
#include "prism/codegen/codegen.h"
#include "prism/ir/tensor.h"

namespace prism::runtime {

// ---------------------------------------------------------------------------------------------
// Child processes.

struct ChildResult {
  enum class Kind {
    kOk,        // the function returned OK; `payload` is its value
    kFailed,    // the function returned an error status; `message` is its message, `code` its code
    kCrashed,   // the child died of a signal or exited without a result (e.g. abort, a fault)
    kTimedOut,  // the child ran past the timeout and was killed (SIGKILL)
  };
  Kind kind = Kind::kCrashed;
  std::string payload;
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;  // kFailed: the status message; kCrashed: "killed by signal 6 (Aborted)"
                        // or "exited with status 3 without a result"; kTimedOut: "timed out
                        // after 2 s"
};

// Runs `fn` in a forked child process and returns what happened (RunSequenceInChild with one
// item); the parent never fails because of the child. The child sends the function's result through a pipe and _exits (no
// destructors or atexit handlers run in it; its stdio buffers are not flushed). `timeout` is
// clamped to [0, 24 h]. Internal only when fork or pipe fails.
absl::StatusOr<ChildResult> RunInChild(const std::function<absl::StatusOr<std::string>()>& fn,
                                       absl::Duration timeout);

// "ok", "failed", "crashed", "timed out".
const char* ChildResultKindName(ChildResult::Kind kind);

// Runs fn(0), fn(1), ..., fn(n-1) in order in as few forked children as faults allow, and
// returns one result per item (nullopt: not run). One child runs items until one returns an
// error status (its result is kFailed; the child then exits, since an error may leave a device
// context unusable), crashes or runs past `per_item_timeout` (measured from the previous item's
// end; the child is killed): that item gets kFailed / kCrashed / kTimedOut and a fresh child
// continues with the next item. `should_start(i)` is called in the child before item i; false
// ends the sequence (items i.. are not run). Internal only when fork or pipe fails.
absl::StatusOr<std::vector<std::optional<ChildResult>>> RunSequenceInChild(
    int n, const std::function<absl::StatusOr<std::string>(int)>& fn,
    absl::Duration per_item_timeout, const std::function<bool(int)>& should_start = nullptr);

// ---------------------------------------------------------------------------------------------
// Devices (each call runs in its own child process; see above).

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  int sms = 0;       // multiprocessors
  int cc_major = 0, cc_minor = 0;
  int sm() const { return cc_major * 10 + cc_minor; }
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  int64_t total_memory_bytes = 0;
  int64_t l2_bytes = 0;
};

// True when dlopen("libcuda.so.1") succeeds in this process (does not initialize CUDA).
bool DriverLibraryPresent();

// Queries device `ordinal` in a child process. Unavailable with one of the messages above
// (no driver, no usable GPU, no such ordinal); Internal if the child crashed.
absl::StatusOr<DeviceInfo> QueryDevice(int ordinal, absl::Duration timeout = absl::Seconds(30));

// ---------------------------------------------------------------------------------------------
// Measurement of one generated program.

struct MeasureOptions {
  // Input sets rotated per graph replay: max(2, min(64, 2·l2 / bytes-per-set + 1)) as in
  // ../shared/baselines/harness.py (l2 = the device's L2; 60 MiB when unknown).
  int64_t l2_bytes = 60 << 20;
  int replays = 50;  // timed graph replays; the median is reported
  int warmup = 5;
  absl::Duration timeout = absl::Seconds(60);  // of the whole child
  // Sequences only (MeasureAllInChild, CompileAndMeasureInChild): when > 0, a program whose
  // first early_stop_replays timed replays have a median above early_stop_factor × the
  // fastest matching program measured before it in the same child stops there, with that
  // median (Measurement::replays says how many ran). A program that slow is not a finalist;
  // its replays were most of a tuning run's measuring time (2026-12-06).
  double early_stop_factor = 0;
  int early_stop_replays = 5;
};

struct Measurement {
  double median_us = 0;  // per call (one call = every kernel of the program, in order)
  int input_sets = 0;
  // Every output against its reference (the worst output's values): RelativeError and
  // ReferenceToleranceRatio with DefaultTolerance(reference dtype) (≤ 1: within tolerance).
  double relative_error = 0;
  double tolerance_ratio = 0;
  bool matches = false;
  int replays = 0;  // timed replays behind median_us (fewer than asked after an early stop)
};

// In a child process (MeasureAllInChild with one job): loads `cubin` on device `ordinal`, allocates every tensor of `program`
// (per input set), copies `inputs` (one per program input), poisons outputs and intermediates
// with NaN, launches `launches` once and compares every output o with `reference[o]`
// (relative_error and tolerance_ratio: the worst output's; infinite for NaN), then times a
// CUDA graph of one call per input set (replayed options.replays times, median per call).
// Unavailable without a driver/GPU (messages above); Internal "the measurement crashed:
// <why>" or "the measurement timed out after <t>" for a faulting or hanging kernel (the
// parent continues); FailedPrecondition with the CUDA error for a driver call that fails.
absl::StatusOr<Measurement> MeasureInChild(int ordinal, const std::string& cubin,
                                           const std::vector<codegen::LaunchConfig>& launches,
                                           const BlockProgram& program,
                                           const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& reference,
                                           const MeasureOptions& options = {});

// One program of MeasureAllInChild (the pointers must outlive the call). `inputs` and
// `reference`, when set, replace the call's for this job.
struct MeasureJob {
  const std::string* cubin = nullptr;
  const std::vector<codegen::LaunchConfig>* launches = nullptr;
  const BlockProgram* program = nullptr;
  const std::vector<Tensor>* inputs = nullptr;
  const std::vector<Tensor>* reference = nullptr;
};

// MeasureInChild for many programs with the same inputs and reference, through
// RunSequenceInChild: one child (one CUDA context) measures the jobs in order, each job's device
// memory, module, graph, stream and events freed after it; a job that fails, crashes or times
// out (options.timeout per job) is reported like MeasureInChild's and the next job gets a fresh
// child. Jobs not started by `deadline` (checked before each) get DeadlineExceeded "not
// started: the deadline passed". One result per job, in order.
absl::StatusOr<std::vector<absl::StatusOr<Measurement>>> MeasureAllInChild(
    int ordinal, const std::vector<MeasureJob>& jobs, const std::vector<Tensor>& inputs,
    const std::vector<Tensor>& reference, const MeasureOptions& options = {},
    absl::Time deadline = absl::InfiniteFuture());

// ---------------------------------------------------------------------------------------------
// Compile cache: a directory of cubins named by a key of (source hash, sm, NVRTC version).

class CompileCache {
 public:
  // `dir` is created on first Store; empty → the cache is disabled (every lookup misses).
  explicit CompileCache(std::string dir);

  // 16 hex digits of StableHash(source, sm, nvrtc_version).
  static std::string Key(absl::string_view source, int sm, absl::string_view nvrtc_version);

  // The cubin stored under `key`, or nullopt.
  std::optional<std::string> Lookup(const std::string& key) const;
  // Writes the cubin (atomically: a temporary file renamed). Internal "cannot write the
  // compile cache '<path>': <why>" when the directory cannot be created or written.
  absl::Status Store(const std::string& key, absl::string_view cubin) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

struct CachedCompile {
  std::string cubin;
  bool cache_hit = false;
};

// Compiles `source` for sm_<sm> with NVRTC (codegen/nvrtc.h), through `cache`: a hit returns
// the stored cubin without compiling. NVRTC's errors as CompileWithNvrtc returns them
// (Unavailable without NVRTC); a failing Store is ignored (the cubin is still returned).
absl::StatusOr<CachedCompile> CompileCached(const CompileCache& cache, absl::string_view source,
                                            int sm);

// The NVRTC threads of CompileInChild and CompileAndMeasureInChild: `requested` when > 0,
// else one per core less `reserve` (cores left to other work), at least 1 and at most 16
// (NVRTC takes up to a few hundred MB per compilation).
int CompileThreads(int requested, int reserve);

// Compiles every source (on CompileThreads(threads, 0) threads) in ONE child process, through
// `cache`, and returns one result per source in order (each as CompileCached returns it).
// Needed by a process that will measure: NVRTC initializes the CUDA driver in the process that
// calls it (seen with NVRTC 13.0 on the H200), after which cuInit fails with CUDA error 3 in
// every child forked from it. Internal "the compilation crashed: <why>" / "the compilation
// timed out after <t>" if the child dies.
absl::StatusOr<std::vector<absl::StatusOr<CachedCompile>>> CompileInChild(
    const CompileCache& cache, const std::vector<std::string>& sources, int sm,
    absl::Duration timeout = absl::Minutes(5), int threads = 0);

// ---------------------------------------------------------------------------------------------
// Compilation and measurement side by side.

// One program of CompileAndMeasureInChild (the pointers must outlive the call).
struct CompileMeasureJob {
  const std::string* source = nullptr;
  const std::vector<codegen::LaunchConfig>* launches = nullptr;
  const BlockProgram* program = nullptr;
};

struct CompiledMeasurement {
  // The compilation as CompileCached returns it (NVRTC's error when it failed). Its cubin is
  // empty when the measurement failed (a child that fails ends without sending it back).
  // DeadlineExceeded "not compiled: the deadline passed" when the job was not started.
  absl::StatusOr<CachedCompile> compiled = absl::UnknownError("not run");
  // As MeasureAllInChild reports it; FailedPrecondition "not measured: it did not compile"
  // after a failed compilation; DeadlineExceeded "not started: the deadline passed".
  absl::StatusOr<Measurement> measured = absl::UnknownError("not run");
  // How long the measuring waited for this job's cubin (0 when it was ready).
  double compile_wait_s = 0;
};

// CompileInChild and MeasureAllInChild at once: a child process compiles the jobs' sources on
// CompileThreads(compile_threads, 1) threads, in job order, through `cache`, while its main
// thread measures each job as soon as its cubin is ready (in order; MeasureAllInChild's
// checks, timing and per-job cleanup). NVRTC and the driver share that one process, so nothing
// is forked from a process that ran NVRTC. A job that fails to measure, crashes or runs past
// options.timeout (counted from the previous job's end, its compilation included) is reported
// as MeasureAllInChild reports it, and a fresh child continues with the next job (it compiles
// again what the dead one had compiled, through `cache`). A crash inside NVRTC would be reported
// as the crash of the job being measured: NVRTC reports errors as statuses, so this is not
// expected. Jobs not started by `deadline` (checked before each) are neither compiled nor
// measured (both DeadlineExceeded). One result per job, in order. Internal only when fork or
// pipe fails.
absl::StatusOr<std::vector<CompiledMeasurement>> CompileAndMeasureInChild(
    int ordinal, const CompileCache& cache, int sm, const std::vector<CompileMeasureJob>& jobs,
    const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
    const MeasureOptions& options = {}, absl::Time deadline = absl::InfiniteFuture(),
    int compile_threads = 0);

}  // namespace prism::runtime

#endif  // PRISM_RUNTIME_RUNTIME_H_
