// The GPU targets `prism check` knows, with the two numbers its roofline floor needs.
//
// Deliberately separate from the hardware theories (smt_theories/hardware/*.smt2, smt/target.h):
// those hold CEILINGS (peaks rounded up) so that the pruner's cost bound stays a true lower
// bound, while `prism check` reports the floor as WORKLOADS.md defines it, from the sustained
// figures measured on the project's H200 (../shared/hardware/: copy bandwidth and cuBLAS
// matmul rate). The other targets are datasheet peaks (real kernels reach roughly 80–90 % of
// them). The names are the theories' names (test CheckEveryTarget).
//
//   PRISM_ASSIGN_OR_RETURN(TargetSpec t, FindTarget("h200"));
//   double floor_us = RooflineFloorUs(stats, t.dram_bytes_per_s, t.matmul_flops_per_s);
#ifndef PRISM_TOOLS_TARGETS_H_
#define PRISM_TOOLS_TARGETS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace prism::cli {

inline constexpr absl::string_view kDefaultTarget = "h200";

struct TargetSpec {
  std::string name;           // "h200"
  std::string gpu;            // "NVIDIA H200 (141 GB HBM3e)"
  double dram_bytes_per_s;    // DRAM bandwidth
  double matmul_flops_per_s;  // dense f16 tensor-core matmul rate, f32 accumulation
  std::string source;         // where the two numbers come from
};

// All built-in targets, h200 first.
absl::Span<const TargetSpec> BuiltinTargets();

// The target named `name`; NotFound "unknown target 'x'; known targets: h200, ..." otherwise.
absl::StatusOr<TargetSpec> FindTarget(absl::string_view name);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_TARGETS_H_
