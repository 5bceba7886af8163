#include "targets.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism::cli {

absl::Span<const TargetSpec> BuiltinTargets() {
  static const auto* targets = new std::vector<TargetSpec>{
      // Measured 2026-11-29 (../shared/hardware/README.md, h200-2026-11-29.json,
      // ../shared/WORKLOADS.md): device-to-device copy 4.19–4.21 TB/s (read + write counted),
      // cuBLAS f16 8192³ matmul 742–754 TFLOP/s. Datasheet peaks are 4.8 TB/s and 989 TFLOP/s.
      {"h200", "NVIDIA H200 (141 GB HBM3e)", 4.19e12, 750e12,
       "measured on the project's H200 on 2026-11-29: copy bandwidth, cuBLAS f16 matmul"},
      // NVIDIA H100 Tensor Core GPU datasheet, SXM5: 3.35 TB/s HBM3; FP16 tensor 1,979 TFLOP/s
      // with sparsity, so 989.4 dense.
      {"h100_sxm", "NVIDIA H100 SXM5 (80 GB HBM3)", 3.35e12, 989.4e12,
       "NVIDIA H100 datasheet peaks, SXM5; dense f16 tensor is half the sparse figure"},
      // NVIDIA A100 datasheet, 80 GB SXM: 2,039 GB/s HBM2e; FP16 tensor 312 TFLOP/s dense.
      {"a100_80gb", "NVIDIA A100 SXM (80 GB HBM2e)", 2.039e12, 312e12,
       "NVIDIA A100 datasheet peaks, 80 GB SXM"},
      // NVIDIA L40S datasheet: 864 GB/s GDDR6; FP16 tensor 733 TFLOP/s with sparsity, 362.05 dense.
      {"l40s", "NVIDIA L40S (48 GB GDDR6)", 864e9, 362.05e12,
       "NVIDIA L40S datasheet peaks, dense f16 tensor"},
      // NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX 4090: 1,008 GB/s GDDR6X; FP16
      // tensor with FP32 accumulate 165.2 TFLOP/s dense (330.3 with FP16 accumulate).
      {"rtx4090", "NVIDIA GeForce RTX 4090 (24 GB GDDR6X)", 1008e9, 165.2e12,
       "NVIDIA Ada whitepaper peaks, dense f16 tensor with f32 accumulate"},
  };
  return *targets;
}

absl::StatusOr<TargetSpec> FindTarget(absl::string_view name) {
  std::vector<std::string> names;
  for (const TargetSpec& t : BuiltinTargets()) {
    if (t.name == name) return t;
    names.push_back(t.name);
  }
  return absl::NotFoundError(
      absl::StrCat("unknown target '", name, "'; known targets: ", absl::StrJoin(names, ", ")));
}

}  // namespace prism::cli
