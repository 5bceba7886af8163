// The built-in benchmark workloads of ../shared/WORKLOADS.md (gqa, qknorm_gqa, rmsnorm_linear,
// gated_mlp, lora, ntrans) at any decode batch size, as `.prism` text. The files under
// examples/ are these texts at b = 1 and b = 8 (a test keeps them identical).
//
//   PRISM_ASSIGN_OR_RETURN(Program p, BuiltinWorkload("gated_mlp", 8));
#ifndef PRISM_IR_WORKLOADS_H_
#define PRISM_IR_WORKLOADS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/ir/program.h"

namespace prism {

inline constexpr absl::string_view kDefaultWorkload = "rmsnorm_linear";
inline constexpr int kMaxWorkloadBatch = 1024;

// Names in WORKLOADS.md order.
std::vector<std::string> WorkloadNames();
// One-line description ("rms(X) · W"), or "" for an unknown name.
std::string WorkloadDescription(absl::string_view name);
// The workload's `.prism` text at batch `batch` (1 ≤ batch ≤ kMaxWorkloadBatch).
// NotFound "unknown workload 'foo'; known workloads: gqa, qknorm_gqa, ..." or InvalidArgument
// for a batch out of range.
absl::StatusOr<std::string> WorkloadText(absl::string_view name, int batch);
// Parsed WorkloadText; the filename in messages is "<builtin NAME b=BATCH>".
absl::StatusOr<Program> BuiltinWorkload(absl::string_view name, int batch);

}  // namespace prism

#endif  // PRISM_IR_WORKLOADS_H_
