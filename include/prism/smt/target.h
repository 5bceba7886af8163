// GPU hardware targets: the per-GPU constants that the pruning rules, the lower-bound cost model
// and the ranking model read. The canonical data is `smt_theories/hardware/<name>.smt2`, one
// `(define-fun hw_xxx () Int value)` per constant with a `; source:` comment above it; this
// header loads and parses those files, so a researcher edits data, not code. The same files are
// included verbatim in every SMT query that prism dumps.
//
//   PRISM_ASSIGN_OR_RETURN(Target h200, LoadTarget("h200"));
//   int64_t sms = h200.sms;                                   // 132
//   std::cout << TargetText(h200);                            // `prism hw show h200`
//   PRISM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListTargets());
//
// Units: bytes, threads, 32-bit registers, nanoseconds; rates are per nanosecond (1 byte/ns =
// 1 GB/s, 1 flop/ns = 1 GFLOP/s). The rates marked "ceiling" are upper bounds on what the
// hardware can do (rounded up, at the maximum clock), so that work / rate is a true lower bound
// on time; they are not the rates a kernel typically reaches.
#ifndef PRISM_SMT_TARGET_H_
#define PRISM_SMT_TARGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace prism {

// One constant of a hardware theory file, in file order.
struct HardwareConstant {
  std::string name;        // "hw_sms"
  std::string sort;        // "Int" or "Real"
  std::string value_text;  // the SMT-LIB literal as written, e.g. "132" or "1.5"
  double value = 0;        // the literal's value
  std::string source;      // the text after "source:" in the comment above the definition
};

struct Target {
  std::string name;          // file stem, e.g. "h200"
  std::string display_name;  // from the "; target:" header line, e.g. "NVIDIA H200 SXM 141GB"

  int64_t compute_capability = 0;        // hw_compute_capability, e.g. 90 for sm_90
  int64_t sms = 0;                       // hw_sms: streaming multiprocessors
  int64_t sm_clock_mhz = 0;              // hw_sm_clock_mhz: max SM clock the ceilings assume
  int64_t warp_size = 0;                 // hw_warp_size
  int64_t smem_per_block = 0;            // hw_smem_per_block: bytes without opt-in (48 KiB)
  int64_t smem_per_block_optin = 0;      // hw_smem_per_block_optin: bytes with opt-in
  int64_t smem_per_sm = 0;               // hw_smem_per_sm: bytes
  int64_t smem_reserved_per_block = 0;   // hw_smem_reserved_per_block: system bytes per block
  int64_t regs_per_sm = 0;               // hw_regs_per_sm
  int64_t regs_per_block = 0;            // hw_regs_per_block
  int64_t regs_per_thread = 0;           // hw_regs_per_thread
  int64_t reg_alloc_unit = 0;            // hw_reg_alloc_unit: registers per warp, granularity
  int64_t threads_per_block = 0;         // hw_threads_per_block
  int64_t threads_per_sm = 0;            // hw_threads_per_sm
  int64_t blocks_per_sm = 0;             // hw_blocks_per_sm
  int64_t max_grid_x = 0;                // hw_max_grid_x
  int64_t max_grid_y = 0;                // hw_max_grid_y
  int64_t max_grid_z = 0;                // hw_max_grid_z
  int64_t l2_bytes = 0;                  // hw_l2_bytes: L2 capacity
  int64_t dram_bytes_per_ns = 0;         // hw_dram_bytes_per_ns: DRAM bandwidth (ceiling)
  int64_t l2_bytes_per_ns = 0;           // hw_l2_bytes_per_ns: L2 bandwidth (ceiling)
  int64_t sm_bytes_per_ns = 0;           // hw_sm_bytes_per_ns: one SM's ingress (ceiling)
  int64_t tensor_flops_per_ns = 0;       // hw_tensor_flops_per_ns: dense f16 tensor (ceiling)
  int64_t sfu_ops_per_ns = 0;            // hw_sfu_ops_per_ns: transcendentals (ceiling)
  int64_t launch_overhead_ns = 0;        // hw_launch_overhead_ns: typical (ranking model)
  int64_t launch_floor_ns = 0;           // hw_launch_floor_ns: per-kernel floor (dominance)

  // Every constant of the file, in file order (includes the ones above and any extra hw_*
  // constant a researcher adds).
  std::vector<HardwareConstant> constants;
  // The file's text, as loaded.
  std::string smtlib;

  // The constant called `name`, or nullptr.
  const HardwareConstant* FindConstant(absl::string_view name) const;
};

// The names of the known targets: the stems of smt_theories/hardware/*.smt2, sorted. NotFound
// if the data directory cannot be found (base/paths.h).
absl::StatusOr<std::vector<std::string>> ListTargets();

// Loads smt_theories/hardware/<name>.smt2. Errors:
//   InvalidArgument "unknown target 'foo'; known targets: a100_80gb, h100_sxm, h200, l40s,
//                    rtx4090" (the list is ListTargets());
//   the errors of ParseTarget for a malformed file.
absl::StatusOr<Target> LoadTarget(absl::string_view name);

// Parses the text of a hardware theory file. Every top-level form must be
// `(define-fun hw_<x> () Int|Real <literal>)` with a comment block directly above it that
// contains "source:"; every constant named in Target must be present and Int. Errors are
// InvalidArgument with "<name>.smt2:<line>: " and what was found / expected, e.g.
//   "h200.smt2:12: constant 'hw_sms' has no '; source:' comment above it".
absl::StatusOr<Target> ParseTarget(absl::string_view name, absl::string_view smtlib);

// `prism hw list`: one line per target, "name  display name  (SMs, smem/block, DRAM GB/s)".
std::string TargetListText(const std::vector<Target>& targets);
// `prism hw show NAME`: every constant with its value and source, grouped as in the file.
std::string TargetText(const Target& target);
// JSON forms of the two: {"name", "display_name", "constants": [{"name","value","source"}...],
// and one key per Target field without the "hw_" prefix}; the list is an array of those.
nlohmann::json TargetToJson(const Target& target);
nlohmann::json TargetListToJson(const std::vector<Target>& targets);

}  // namespace prism

#endif  // PRISM_SMT_TARGET_H_
