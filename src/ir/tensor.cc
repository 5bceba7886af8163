// Tensor helpers: construction, indexing, summaries and the comparison metrics every stage uses
// to check its results against the reference interpreter.
#include "prism/ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "prism/base/check.h"

namespace prism {

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  const std::optional<int64_t> n = NumElements(shape);
  PRISM_CHECK(n.has_value(), "Tensor::Zeros: shape ", ShapeToString(shape), " overflows");
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(*n), 0.0);
  return t;
}

std::vector<int64_t> Tensor::Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

int64_t Tensor::Offset(absl::Span<const int64_t> index) const {
  PRISM_CHECK(index.size() == shape.size(), "index of rank ", index.size(),
              " into a tensor of shape ", ShapeToString(shape));
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    PRISM_CHECK(index[i] >= 0 && index[i] < shape[i], "index ", index[i], " at position ", i,
                " is out of range for shape ", ShapeToString(shape));
    offset = offset * shape[i] + index[i];
  }
  PRISM_CHECK(offset < static_cast<int64_t>(data.size()), "offset ", offset, " past data of size ",
              data.size());
  return offset;
}

// NaNs are counted and otherwise skipped, so that one NaN does not hide the rest of the summary:
// checksum, min, max and mean are over the non-NaN values (infinities included). With no
// non-NaN value they are all 0.
TensorSummary Summarize(const Tensor& t) {
  TensorSummary s;
  int64_t counted = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (double v : t.data) {
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) ++s.inf_count;
    s.checksum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++counted;
  }
  if (counted > 0) {
    s.min = lo;
    s.max = hi;
    s.mean = s.checksum / static_cast<double>(counted);
  }
  return s;
}

// Positions where a and b hold the same value (including the same infinity) contribute 0 to
// ‖a − b‖; an infinite difference makes the result +inf. Dtypes are not compared.
double RelativeError(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape || a.data.size() != b.data.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double diff2 = 0, ref2 = 0;
  bool diff_inf = false;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
    ref2 += y * y;
    if (x == y) continue;
    const double d = x - y;
    if (std::isinf(d)) diff_inf = true;
    diff2 += d * d;
  }
  if (diff_inf) return std::numeric_limits<double>::infinity();
  if (diff2 == 0) return 0.0;
  return std::sqrt(diff2) / std::sqrt(ref2);  // ref2 == 0 → +inf
}

// Equal values (including equal infinities, and NaN against NaN) give ratio 0; a NaN against a
// number or an infinite difference gives +inf; a nonzero difference with a zero allowance
// (atol + rtol·|b| == 0) gives +inf.
double MaxToleranceRatio(const Tensor& a, const Tensor& b, double atol, double rtol) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.shape != b.shape || a.data.size() != b.data.size()) return kInf;
  double worst = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    if (std::isnan(x) || std::isnan(y)) return kInf;
    const double d = std::fabs(x - y);
    const double allowance = atol + rtol * std::fabs(y);
    const double ratio = allowance > 0 ? d / allowance : kInf;
    if (std::isnan(ratio)) return kInf;  // inf / inf: an infinite reference the result missed
    worst = std::max(worst, ratio);
  }
  return worst;
}

Tolerance DefaultTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF16: return {2e-2, 2e-2};
    case DType::kBF16: return {5e-2, 5e-2};
    case DType::kF32: return {1e-4, 1e-4};
  }
  PRISM_UNREACHABLE("bad dtype ", static_cast<int>(dtype));
}

double RootMeanSquare(const Tensor& t) {
  double sum2 = 0;
  int64_t n = 0;
  for (double v : t.data) {
    if (!std::isfinite(v)) continue;
    sum2 += v * v;
    ++n;
  }
  return n == 0 ? 0.0 : std::sqrt(sum2 / static_cast<double>(n));
}

double ReferenceToleranceRatio(const Tensor& a, const Tensor& ref, Tolerance tol) {
  return MaxToleranceRatio(a, ref, tol.atol * RootMeanSquare(ref), tol.rtol);
}

bool WithinDefaultTolerance(const Tensor& a, const Tensor& ref) {
  return ReferenceToleranceRatio(a, ref, DefaultTolerance(ref.dtype)) <= 1.0;
}

}  // namespace prism
