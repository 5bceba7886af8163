// Programs several test suites build: RmsnormLinear(m, k, n) is
// Y = matmul(rms_norm(X, -1), W) with X f16[m, k] and W f16[k, n] (WORKLOADS.md's rmsnorm_linear
// at any size).
#ifndef PRISM_TESTS_TESTING_PROGRAMS_H_
#define PRISM_TESTS_TESTING_PROGRAMS_H_

#include <cstdint>
#include <utility>

#include "prism/base/check.h"
#include "prism/ir/program.h"

namespace prism::testing {

inline Program RmsnormLinear(int64_t m, int64_t k, int64_t n) {
  ProgramBuilder b;
  TensorId x = b.Input("X", DType::kF16, {m, k});
  TensorId w = b.Input("W", DType::kF16, {k, n});
  TensorId y = b.MatMul(b.RmsNorm(x, -1), w);
  b.SetName(y, "Y");
  b.Output(y);
  absl::StatusOr<Program> p = std::move(b).Build();
  PRISM_CHECK(p.ok(), p.status().message());
  return *std::move(p);
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_PROGRAMS_H_
