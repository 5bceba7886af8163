// Tensor: a dense, row-major array of values with a dtype and a shape — the data the
// reference interpreter and the block emulator read and write. Values are held as double;
// a tensor "of dtype f16" in device mode holds only f16-representable values.
//
//   Tensor t = Tensor::Zeros(DType::kF16, {2, 3});
//   t.at({1, 2}) = 0.5;
#ifndef PRISM_IR_TENSOR_H_
#define PRISM_IR_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "prism/ir/types.h"

namespace prism {

struct Tensor {
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<double> data;  // row-major, size == NumElements(shape)

  static Tensor Zeros(DType dtype, Shape shape);
  // Row-major strides of `shape`.
  static std::vector<int64_t> Strides(const Shape& shape);
  // Flat offset of a full multi-index; PRISM_CHECKs bounds and rank.
  int64_t Offset(absl::Span<const int64_t> index) const;
  double& at(std::initializer_list<int64_t> index) { return data[Offset(index)]; }
  double at(std::initializer_list<int64_t> index) const { return data[Offset(index)]; }
};

// Summary statistics printed by `prism eval`.
struct TensorSummary {
  double checksum = 0;  // sum of all non-NaN values (NaNs are only counted)
  double min = 0, max = 0, mean = 0;
  int64_t nan_count = 0, inf_count = 0;
};
TensorSummary Summarize(const Tensor& t);

// ‖a − b‖₂ / ‖b‖₂ (b is the reference); 0 if both are zero; +inf if shapes differ; NaN if
// either holds NaN.
double RelativeError(const Tensor& a, const Tensor& b);

// Largest |a − b| / (atol + rtol·|b|) over all elements (≤ 1 means within tolerance).
double MaxToleranceRatio(const Tensor& a, const Tensor& b, double atol, double rtol);

// Default comparison tolerances for a result of `dtype` computed with f32 accumulation:
// f16 → 2e-2; bf16 → 5e-2; f32 → 1e-4, for both atol and rtol. The atol is RELATIVE TO THE
// REFERENCE'S SCALE (see ReferenceToleranceRatio): outputs of real workloads are far from
// order 1 (rmsnorm_linear's are about ±64), and a fixed atol fails near their zeros.
struct Tolerance { double atol, rtol; };
Tolerance DefaultTolerance(DType dtype);

// Root mean square of the finite values of `t` (0 for none).
double RootMeanSquare(const Tensor& t);

// MaxToleranceRatio(a, ref, tol.atol · RootMeanSquare(ref), tol.rtol): ≤ 1 means every
// element of `a` is within tolerance of the reference `ref`.
double ReferenceToleranceRatio(const Tensor& a, const Tensor& ref, Tolerance tol);

// ReferenceToleranceRatio(a, ref, DefaultTolerance(ref.dtype)) <= 1.
bool WithinDefaultTolerance(const Tensor& a, const Tensor& ref);

}  // namespace prism

#endif  // PRISM_IR_TENSOR_H_
