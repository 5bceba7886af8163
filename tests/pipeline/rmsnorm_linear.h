// The pipeline tests' program: Y = matmul(rms_norm(X, -1), W), X f16[m, k], W f16[k, n],
// through the public API only (include/prism/prism.h).
#ifndef PRISM_TESTS_PIPELINE_RMSNORM_LINEAR_H_
#define PRISM_TESTS_PIPELINE_RMSNORM_LINEAR_H_

#include <cstdint>
#include <utility>

#include "prism/base/check.h"
#include "prism/prism.h"

namespace prism::pipeline_test {

inline Program RmsNormLinear(int64_t m, int64_t k, int64_t n) {
  ProgramBuilder b;
  TensorId x = b.Input("X", DType::kF16, {m, k});
  TensorId w = b.Input("W", DType::kF16, {k, n});
  TensorId y = b.MatMul(b.RmsNorm(x, -1), w);
  b.SetName(y, "Y");
  b.Output(y);
  absl::StatusOr<Program> p = std::move(b).Build();
  PRISM_CHECK(p.ok());
  return *std::move(p);
}

}  // namespace prism::pipeline_test

#endif  // PRISM_TESTS_PIPELINE_RMSNORM_LINEAR_H_
