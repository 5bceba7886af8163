// The reference interpreter (ir/interpreter.h): docs/ir_semantics.md made executable.
//
// One templated evaluator serves both modes: T = double is kF64, T = float is kDevice. Each op
// is evaluated by one function below whose comment names its section of the semantics page; the
// accumulation orders there (increasing index, left fold from +0) are what the loops do. Matmul
// runs i-k-j (tiled), which walks memory contiguously without changing the k order of any output
// element; reductions and norms walk one fibre at a time.
//
// Speed (one core, 2.8 GHz Xeon, bench/ir/interpreter_bench): rmsnorm_linear b=8 ≈ 0.14 s (f64) /
// 0.21 s (device); gqa b=8 (two 1.07 G-MAC batched matmuls + softmax of 16.8 M) ≈ 0.9 s / 0.56 s.
#include "prism/ir/interpreter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"

namespace prism {
namespace {

// Size limits (docs/ir_semantics.md §4): beyond them we refuse with ResourceExhausted instead of
// dying in an allocation.
constexpr int64_t kMaxTensorElements = int64_t{1} << 28;
constexpr int64_t kMaxLiveElements = int64_t{1} << 30;

// ---- rounding to a dtype -----------------------------------------------------------------------
// RoundToDType (base/float16.h) is exact but slow (frexp/ldexp per value); device mode rounds
// every element of every op, so we round with bit operations instead. Both functions below equal
// RoundToDType on every argument (interpreter_test checks inputs and op results on edge cases,
// ties and a million random values).

// Rounds a double to `kMantBits` fraction bits, ties to even, for a format whose smallest normal
// is `min_normal` (below it: gradual underflow with quantum `subnormal_quantum`) and whose
// largest finite value is `max_finite` (above it after rounding: inf). Used for inputs, which
// must be rounded from double in one step (double → f32 → f16 could round twice).
template <int kMantBits>
double RoundToFormat(double x, double min_normal, double subnormal_quantum, double max_finite) {
  if (!std::isfinite(x)) return x;
  const double ax = std::fabs(x);
  double r;
  if (ax < min_normal) {
    // Adding C = quantum·2^52 leaves ulp(C) = quantum, so the hardware rounds |x| to the
    // quantum (ties to even); subtracting C again is exact.
    const double c = subnormal_quantum * 0x1p52;
    r = (ax + c) - c;
  } else {
    constexpr int kDrop = 52 - kMantBits;
    uint64_t u = std::bit_cast<uint64_t>(ax);
    u += (uint64_t{1} << (kDrop - 1)) - 1 + ((u >> kDrop) & 1);
    u &= ~((uint64_t{1} << kDrop) - 1);
    r = std::bit_cast<double>(u);
    if (r > max_finite) r = std::numeric_limits<double>::infinity();
  }
  return std::copysign(r, x);
}

double RoundFast(double x, DType dtype) {
  switch (dtype) {
    case DType::kF16: return RoundToFormat<10>(x, 0x1p-14, 0x1p-24, 65504.0);
    case DType::kBF16: return RoundToFormat<7>(x, 0x1p-126, 0x1p-133, 0x1.FEp127);
    case DType::kF32: return static_cast<double>(static_cast<float>(x));
  }
  PRISM_UNREACHABLE("bad dtype ", static_cast<int>(dtype));
}

// f32 → nearest f16 (as an f32 value), ties to even: __float2half_rn.
inline float RoundF32ToF16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = bits & 0x80000000u;
  uint32_t a = bits ^ sign;
  if (a >= 0x7f800000u) return x;  // inf, NaN
  if (a < 0x38800000u) {           // |x| < 2^-14: f16 subnormal range, quantum 2^-24
    const float ax = std::bit_cast<float>(a);
    a = std::bit_cast<uint32_t>((ax + 0.5f) - 0.5f);  // ulp(0.5f) = 2^-24: see RoundToFormat
  } else {
    a += 0xfffu + ((a >> 13) & 1u);
    a &= ~0x1fffu;
    if (a > 0x477fe000u) a = 0x7f800000u;  // above 65504 → inf
  }
  return std::bit_cast<float>(a | sign);
}

// f32 → nearest bf16 (as an f32 value), ties to even: __float2bfloat16_rn. The carry handles
// subnormals and overflow to inf; it cannot reach the sign bit.
inline float RoundF32ToBF16(float x) {
  if (std::isnan(x)) return x;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(bits & 0xffff0000u);
}

// Rounds an op's f32 results to the op's dtype in place (§3.2).
void RoundResults(std::vector<float>& values, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      for (float& v : values) v = RoundF32ToF16(v);
      return;
    case DType::kBF16:
      for (float& v : values) v = RoundF32ToBF16(v);
      return;
    case DType::kF32: return;
  }
  PRISM_UNREACHABLE("bad dtype ", static_cast<int>(dtype));
}

// ---- shapes ------------------------------------------------------------------------------------
int64_t Elements(const Shape& shape) {
  const std::optional<int64_t> n = NumElements(shape);
  PRISM_CHECK(n.has_value(), "shape ", ShapeToString(shape), " overflows");
  return *n;
}

// A tensor viewed as [outer, n, inner] around axis `dim`.
struct Fibres {
  int64_t outer = 1, n = 1, inner = 1;
};
Fibres SplitAt(const Shape& shape, int dim) {
  Fibres f;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i < dim) f.outer *= shape[i];
    if (i == dim) f.n = shape[i];
    if (i > dim) f.inner *= shape[i];
  }
  return f;
}

int AxisOf(const Node& node, const Shape& operand_shape) {
  absl::StatusOr<int> d = NormalizeDim(node.dim, static_cast<int>(operand_shape.size()));
  PRISM_CHECK(d.ok(), "dim of a validated program: ", d.status().message());
  return *d;
}

// Strides of `shape` read through broadcasting into `out` (rank(out) ≥ rank(shape)), padded on
// the left to kMaxRank: a broadcast (extent-1 or missing) dim gets stride 0.
std::array<int64_t, kMaxRank> BroadcastStrides(const Shape& shape, const Shape& out) {
  std::array<int64_t, kMaxRank> strides{};
  const int offset = kMaxRank - static_cast<int>(out.size());
  const int lead = static_cast<int>(out.size() - shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[offset + lead + i] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

std::array<int64_t, kMaxRank> PadShape(const Shape& shape) {
  std::array<int64_t, kMaxRank> padded;
  padded.fill(1);
  const int offset = kMaxRank - static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) padded[offset + i] = shape[i];
  return padded;
}

// ---- the evaluator -----------------------------------------------------------------------------
template <typename T>
using Values = std::vector<T>;

// One operand: its values in working precision (row-major, NumElements(*shape) of them).
template <typename T>
struct Operand {
  const T* data;
  const Shape* shape;
};

template <typename T>
constexpr bool kDeviceMode = std::is_same_v<T, float>;

// acc + p·q: fused for f32 operands in device mode (§3.2); for f16/bf16 operands the product is
// exact in f32, so a separate multiply and add is the same value (and vectorizes).
template <typename T, bool kFused>
inline T MulAdd(T p, T q, T acc) {
  if constexpr (kFused) {
    return std::fma(p, q, acc);
  } else {
    return acc + p * q;
  }
}

// 16-byte SIMD vectors (GCC/Clang vector extensions): lane-wise IEEE operations.
typedef float Float4 __attribute__((vector_size(16)));
typedef double Double2 __attribute__((vector_size(16)));

// §2 matmul, §3.3 order. c (M×N) = a (M×K) · b (K×N), row-major, k folded in increasing order
// for every c[i, j]. Tiled over (j, k) so a tile of b stays in cache across the rows of a; the
// k tiles are visited in increasing order for each c element, which keeps the fold order.
template <typename T, bool kFused>
void Gemm(const T* __restrict a, const T* __restrict b, T* __restrict c, int64_t m, int64_t k,
          int64_t n) {
  constexpr int64_t kTileN = 512, kTileK = 128;
  std::fill(c, c + m * n, T(0));
  for (int64_t j0 = 0; j0 < n; j0 += kTileN) {
    const int64_t j1 = std::min(n, j0 + kTileN);
    for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
      const int64_t k1 = std::min(k, k0 + kTileK);
      for (int64_t i = 0; i < m; ++i) {
        T* __restrict crow = c + i * n;
        const T* __restrict arow = a + i * k;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const T aik = arow[kk];
          const T* __restrict brow = b + kk * n;
          int64_t j = j0;
          if constexpr (!kFused) {
            // Explicit 16-byte SIMD (SSE2/NEON baseline; GCC's -O2 cost model does not
            // vectorize this loop). Lane-wise the same operations as the scalar loop below.
            using V = std::conditional_t<std::is_same_v<T, float>, Float4, Double2>;
            constexpr int64_t kLanes = 16 / sizeof(T);
            const V va = V{} + aik;
            for (; j + 2 * kLanes <= j1; j += 2 * kLanes) {
              V c0, c1, b0, b1;
              std::memcpy(&c0, crow + j, sizeof(V));
              std::memcpy(&c1, crow + j + kLanes, sizeof(V));
              std::memcpy(&b0, brow + j, sizeof(V));
              std::memcpy(&b1, brow + j + kLanes, sizeof(V));
              c0 = c0 + va * b0;
              c1 = c1 + va * b1;
              std::memcpy(crow + j, &c0, sizeof(V));
              std::memcpy(crow + j + kLanes, &c1, sizeof(V));
            }
          }
          for (; j < j1; ++j) crow[j] = MulAdd<T, kFused>(aik, brow[j], crow[j]);
        }
      }
    }
  }
}

template <typename T>
Values<T> EvalMatMul(const Operand<T>& a, const Operand<T>& b, const Shape& out, bool fused) {
  const Shape& sa = *a.shape;
  const Shape& sb = *b.shape;
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  // Batch dims (possibly none: then a single batch of shape [1]).
  auto batch_of = [](const Shape& s) {
    return s.size() > 2 ? Shape(s.begin(), s.end() - 2) : Shape{1};
  };
  const Shape batch = batch_of(out);
  const std::array<int64_t, kMaxRank> extent = PadShape(batch);
  const std::array<int64_t, kMaxRank> stride_a = BroadcastStrides(batch_of(sa), batch);
  const std::array<int64_t, kMaxRank> stride_b = BroadcastStrides(batch_of(sb), batch);
  Values<T> c(static_cast<size_t>(Elements(out)));
  int64_t bi = 0;
  for (int64_t i0 = 0; i0 < extent[0]; ++i0) {
    for (int64_t i1 = 0; i1 < extent[1]; ++i1) {
      for (int64_t i2 = 0; i2 < extent[2]; ++i2) {
        for (int64_t i3 = 0; i3 < extent[3]; ++i3, ++bi) {
          const int64_t oa =
              i0 * stride_a[0] + i1 * stride_a[1] + i2 * stride_a[2] + i3 * stride_a[3];
          const int64_t ob =
              i0 * stride_b[0] + i1 * stride_b[1] + i2 * stride_b[2] + i3 * stride_b[3];
          const T* pa = a.data + oa * m * k;
          const T* pb = b.data + ob * k * n;
          T* pc = c.data() + bi * m * n;
          if (fused) {
            Gemm<T, true>(pa, pb, pc, m, k, n);
          } else {
            Gemm<T, false>(pa, pb, pc, m, k, n);
          }
        }
      }
    }
  }
  return c;
}

template <typename T>
constexpr T kInvSqrt2 = static_cast<T>(0.70710678118654752440);

// §2 unary ops, one IEEE operation per symbol (§3.2).
template <typename T, typename F>
Values<T> Map(const Operand<T>& x, F f) {
  Values<T> y(static_cast<size_t>(Elements(*x.shape)));
  for (size_t i = 0; i < y.size(); ++i) y[i] = f(x.data[i]);
  return y;
}

template <typename T>
Values<T> EvalUnary(const Node& node, const Operand<T>& x) {
  switch (node.op) {
    case OpKind::kExp: return Map(x, [](T v) { return std::exp(v); });
    case OpKind::kSilu: return Map(x, [](T v) { return v / (T(1) + std::exp(-v)); });
    case OpKind::kGelu:
      return Map(x, [](T v) { return (T(0.5) * v) * (T(1) + std::erf(v * kInvSqrt2<T>)); });
    case OpKind::kRelu:
      return Map(x, [](T v) { return std::isnan(v) ? v : (v > T(0) ? v : T(0)); });
    case OpKind::kSqrt: return Map(x, [](T v) { return std::sqrt(v); });
    case OpKind::kRsqrt: return Map(x, [](T v) { return T(1) / std::sqrt(v); });
    case OpKind::kSquare: return Map(x, [](T v) { return v * v; });
    case OpKind::kNeg: return Map(x, [](T v) { return -v; });
    case OpKind::kRecip: return Map(x, [](T v) { return T(1) / v; });
    case OpKind::kScale: {
      const T c = static_cast<T>(node.scalar);
      return Map(x, [c](T v) { return c * v; });
    }
    default: break;
  }
  PRISM_UNREACHABLE("not a unary op: ", GetOpInfo(node.op).name);
}

// §1 broadcasting + §2 binary ops.
template <typename T, typename F>
Values<T> Broadcast2(const Operand<T>& a, const Operand<T>& b, const Shape& out, F f) {
  Values<T> y(static_cast<size_t>(Elements(out)));
  if (*a.shape == out && *b.shape == out) {
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(a.data[i], b.data[i]);
    return y;
  }
  const std::array<int64_t, kMaxRank> d = PadShape(out);
  const std::array<int64_t, kMaxRank> sa = BroadcastStrides(*a.shape, out);
  const std::array<int64_t, kMaxRank> sb = BroadcastStrides(*b.shape, out);
  int64_t o = 0;
  for (int64_t i0 = 0; i0 < d[0]; ++i0) {
    for (int64_t i1 = 0; i1 < d[1]; ++i1) {
      for (int64_t i2 = 0; i2 < d[2]; ++i2) {
        const T* ra = a.data + i0 * sa[0] + i1 * sa[1] + i2 * sa[2];
        const T* rb = b.data + i0 * sb[0] + i1 * sb[1] + i2 * sb[2];
        for (int64_t i3 = 0; i3 < d[3]; ++i3, ++o) y[o] = f(ra[i3 * sa[3]], rb[i3 * sb[3]]);
      }
    }
  }
  return y;
}

template <typename T>
Values<T> EvalBinary(const Node& node, const Operand<T>& a, const Operand<T>& b, const Shape& out) {
  switch (node.op) {
    case OpKind::kAdd: return Broadcast2(a, b, out, [](T x, T y) { return x + y; });
    case OpKind::kSub: return Broadcast2(a, b, out, [](T x, T y) { return x - y; });
    case OpKind::kMul: return Broadcast2(a, b, out, [](T x, T y) { return x * y; });
    case OpKind::kDiv: return Broadcast2(a, b, out, [](T x, T y) { return x / y; });
    default: break;
  }
  PRISM_UNREACHABLE("not a binary op: ", GetOpInfo(node.op).name);
}

// Reductions and norms act on fibres: n elements x[0], x[s], …, x[(n−1)·s] (s = the stride of
// the axis). Each kernel below is the §2/§3.3 definition on one fibre; ForEachFibre visits the
// fibres of a tensor in row-major order of the remaining dims (fibre f of the input ↔ element f
// of a keepdim result).
template <typename F>
void ForEachFibre(const Shape& shape, int dim, F f) {
  const Fibres fb = SplitAt(shape, dim);
  int64_t index = 0;
  for (int64_t o = 0; o < fb.outer; ++o) {
    for (int64_t i = 0; i < fb.inner; ++i, ++index) {
      f(index, o * fb.n * fb.inner + i, fb.n, fb.inner);
    }
  }
}

// §3.3 sum: acc = +0; acc = acc + x_k for k = 0 … n−1.
template <typename T>
T FibreSum(const T* x, int64_t n, int64_t s) {
  T acc = T(0);
  for (int64_t k = 0; k < n; ++k) acc = acc + x[k * s];
  return acc;
}

// §3.3 max: acc = x_0; acc = x_k if x_k > acc; a NaN replaces acc and is never replaced by a
// number (number > NaN is false).
template <typename T>
T FibreMax(const T* x, int64_t n, int64_t s) {
  T acc = x[0];
  for (int64_t k = 1; k < n; ++k) {
    const T v = x[k * s];
    if (v > acc || std::isnan(v)) acc = v;
  }
  return acc;
}

template <typename T>
Values<T> EvalReduce(const Node& node, const Operand<T>& x, const Shape& out) {
  Values<T> y(static_cast<size_t>(Elements(out)));
  const int d = AxisOf(node, *x.shape);
  const T* in = x.data;
  switch (node.op) {
    case OpKind::kSum:
      ForEachFibre(*x.shape, d, [&](int64_t f, int64_t base, int64_t n, int64_t s) {
        y[f] = FibreSum(in + base, n, s);
      });
      return y;
    case OpKind::kMean:
      ForEachFibre(*x.shape, d, [&](int64_t f, int64_t base, int64_t n, int64_t s) {
        y[f] = FibreSum(in + base, n, s) / static_cast<T>(n);
      });
      return y;
    case OpKind::kMax:
      ForEachFibre(*x.shape, d, [&](int64_t f, int64_t base, int64_t n, int64_t s) {
        y[f] = FibreMax(in + base, n, s);
      });
      return y;
    default: break;
  }
  PRISM_UNREACHABLE("not a reduction: ", GetOpInfo(node.op).name);
}

// §2 rms_norm, §3.2: ss = Σ x_k² (fma fold from +0); inv = 1 / sqrt(ss / n + eps); y_k = x_k · inv.
template <typename T, bool kFused>
void FibreRmsNorm(const T* x, int64_t n, int64_t s, T eps, T* y) {
  T ss = T(0);
  for (int64_t k = 0; k < n; ++k) ss = MulAdd<T, kFused>(x[k * s], x[k * s], ss);
  const T inv = T(1) / std::sqrt(ss / static_cast<T>(n) + eps);
  for (int64_t k = 0; k < n; ++k) y[k * s] = x[k * s] * inv;
}

// §2 softmax: m = max (as FibreMax), e_k = exp(x_k − m), s = Σ e_k (fold from +0), y_k = e_k / s.
template <typename T>
void FibreSoftmax(const T* x, int64_t n, int64_t s, T* y) {
  const T m = FibreMax(x, n, s);
  T sum = T(0);
  for (int64_t k = 0; k < n; ++k) {
    const T e = std::exp(x[k * s] - m);
    y[k * s] = e;
    sum = sum + e;
  }
  for (int64_t k = 0; k < n; ++k) y[k * s] = y[k * s] / sum;
}

template <typename T>
Values<T> EvalNorm(const Node& node, const Operand<T>& x) {
  Values<T> y(static_cast<size_t>(Elements(*x.shape)));
  const int d = AxisOf(node, *x.shape);
  const T* in = x.data;
  T* out = y.data();
  if (node.op == OpKind::kSoftmax) {
    ForEachFibre(*x.shape, d, [&](int64_t, int64_t base, int64_t n, int64_t s) {
      FibreSoftmax(in + base, n, s, out + base);
    });
    return y;
  }
  PRISM_CHECK(node.op == OpKind::kRmsNorm, "not a norm: ", GetOpInfo(node.op).name);
  const T eps = static_cast<T>(node.eps);
  const bool fused = kDeviceMode<T> && node.dtype == DType::kF32;
  ForEachFibre(*x.shape, d, [&](int64_t, int64_t base, int64_t n, int64_t s) {
    if (fused) {
      FibreRmsNorm<T, true>(in + base, n, s, eps, out + base);
    } else {
      FibreRmsNorm<T, false>(in + base, n, s, eps, out + base);
    }
  });
  return y;
}

// §2 concat: parts one after another along the axis, in operand order.
template <typename T>
Values<T> EvalConcat(const Node& node, absl::Span<const Operand<T>> parts, const Shape& out) {
  const int d = AxisOf(node, *parts[0].shape);
  const Fibres fo = SplitAt(out, d);
  Values<T> y(static_cast<size_t>(Elements(out)));
  T* dst = y.data();
  for (int64_t o = 0; o < fo.outer; ++o) {
    for (const Operand<T>& part : parts) {
      const int64_t block = (*part.shape)[d] * fo.inner;
      const T* src = part.data + o * block;
      dst = std::copy(src, src + block, dst);
    }
  }
  return y;
}

template <typename T>
Values<T> EvalOp(const Node& node, absl::Span<const Operand<T>> in) {
  switch (GetOpInfo(node.op).category) {
    case OpCategory::kMatMul:
      return EvalMatMul(in[0], in[1], node.shape, kDeviceMode<T> && node.dtype == DType::kF32);
    case OpCategory::kUnary: return EvalUnary(node, in[0]);
    case OpCategory::kBinary: return EvalBinary(node, in[0], in[1], node.shape);
    case OpCategory::kReduce: return EvalReduce(node, in[0], node.shape);
    case OpCategory::kNorm: return EvalNorm(node, in[0]);
    case OpCategory::kConcat: return EvalConcat(node, in, node.shape);
    case OpCategory::kSource: break;
  }
  PRISM_UNREACHABLE("EvalOp on ", GetOpInfo(node.op).name);
}

// ---- checks ------------------------------------------------------------------------------------
absl::Status CheckInputs(const Program& program, absl::Span<const Tensor> inputs) {
  const absl::Span<const TensorId> ids = program.inputs();
  if (inputs.size() != ids.size()) {
    std::vector<std::string> names;
    for (TensorId id : ids) names.push_back(program.DisplayName(id));
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", ids.size(), " input", ids.size() == 1 ? "" : "s", " (",
                     absl::StrJoin(names, ", "), "), found ", inputs.size()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const Node& node = program.node(ids[i]);
    const Tensor& t = inputs[i];
    const std::string who = absl::StrCat("input '", program.DisplayName(ids[i]), "' (#", i, ")");
    if (t.dtype != node.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": found dtype ", DTypeName(t.dtype),
                                                     ", expected ", DTypeName(node.dtype)));
    }
    if (t.shape != node.shape) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": found shape ", ShapeToString(t.shape),
                                                     ", expected ", ShapeToString(node.shape)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDataSizes(const Program& program, absl::Span<const Tensor> inputs) {
  const absl::Span<const TensorId> ids = program.inputs();
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t expected = Elements(inputs[i].shape);
    if (static_cast<int64_t>(inputs[i].data.size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", program.DisplayName(ids[i]), "' (#", i, "): found ", inputs[i].data.size(),
          " values, expected ", expected, " for shape ", ShapeToString(inputs[i].shape)));
    }
  }
  return absl::OkStatus();
}

std::vector<bool> OutputMask(const Program& program) {
  std::vector<bool> is_output(program.num_tensors(), false);
  for (const OutputDecl& out : program.outputs()) is_output[out.tensor.value()] = true;
  return is_output;
}

// Refuses programs whose tensors would not fit: the per-tensor limit, then the peak of the
// elements alive at once under exactly the freeing schedule Run() uses.
absl::Status CheckLimits(const Program& program, bool keep_all) {
  const std::vector<bool> is_output = OutputMask(program);
  std::vector<int> remaining = program.use_counts();
  int64_t live = 0;
  for (size_t id = 0; id < program.num_tensors(); ++id) {
    const Node& node = program.node(TensorId(static_cast<uint32_t>(id)));
    const std::optional<int64_t> n = NumElements(node.shape);
    const std::string name = program.DisplayName(TensorId(static_cast<uint32_t>(id)));
    if (!n.has_value() || *n > kMaxTensorElements) {
      const std::string count = n.has_value() ? absl::StrCat(*n) : "over 2^63";
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot evaluate: tensor '", name, "' has shape ", ShapeToString(node.shape), " (", count,
          " elements), more than the interpreter's limit of 2^28 (", kMaxTensorElements,
          ") elements per tensor; evaluate the program at a smaller batch"));
    }
    live += *n;
    if (live > kMaxLiveElements) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot evaluate: the tensors alive when computing '", name, "' total ",
                       live, " elements, more than the interpreter's limit of 2^30 (",
                       kMaxLiveElements, "); evaluate the program at a smaller batch"));
    }
    if (keep_all) continue;
    for (TensorId op : node.operands) {
      if (--remaining[op.value()] == 0 && !is_output[op.value()]) {
        live -= Elements(program.node(op).shape);
      }
    }
  }
  return absl::OkStatus();
}

// ---- driver ------------------------------------------------------------------------------------
// Evaluates every node in topological order. Returns all tensors (keep_all) or the outputs.
// In f64 mode inputs are read in place; in device mode they are rounded into f32 buffers.
template <typename T>
std::vector<Tensor> Run(const Program& program, absl::Span<const Tensor> inputs, bool keep_all) {
  const size_t n = program.num_tensors();
  const std::vector<bool> is_output = OutputMask(program);
  std::vector<int> remaining = program.use_counts();
  std::vector<Values<T>> values(n);  // computed (or, in device mode, rounded input) values
  std::vector<const T*> data(n, nullptr);
  std::vector<int> input_index(n, -1);
  for (size_t i = 0; i < program.inputs().size(); ++i) {
    input_index[program.inputs()[i].value()] = static_cast<int>(i);
  }
  std::vector<Operand<T>> operands;
  for (size_t id = 0; id < n; ++id) {
    const Node& node = program.node(TensorId(static_cast<uint32_t>(id)));
    if (node.op == OpKind::kInput) {
      const std::vector<double>& given = inputs[input_index[id]].data;
      if constexpr (kDeviceMode<T>) {
        // §3.2: the input rounded to its dtype.
        values[id].resize(given.size());
        for (size_t i = 0; i < given.size(); ++i) {
          values[id][i] = static_cast<T>(RoundFast(given[i], node.dtype));
        }
        data[id] = values[id].data();
      } else {
        data[id] = given.data();  // §3.1: as given
      }
      continue;
    }
    operands.clear();
    for (TensorId op : node.operands)
      operands.push_back({data[op.value()], &program.node(op).shape});
    values[id] = EvalOp<T>(node, operands);
    if constexpr (kDeviceMode<T>) RoundResults(values[id], node.dtype);
    data[id] = values[id].data();
    if (keep_all) continue;
    for (TensorId op : node.operands) {
      if (--remaining[op.value()] == 0 && !is_output[op.value()]) {
        Values<T>().swap(values[op.value()]);
        data[op.value()] = nullptr;
      }
    }
  }
  // Converts tensor `id` to a Tensor, releasing its working buffer.
  auto take = [&](size_t id) {
    const Node& node = program.node(TensorId(static_cast<uint32_t>(id)));
    Tensor t;
    t.dtype = node.dtype;
    t.shape = node.shape;
    if constexpr (kDeviceMode<T>) {
      t.data.assign(values[id].begin(), values[id].end());
      Values<T>().swap(values[id]);
    } else if (input_index[id] >= 0) {
      t.data = inputs[input_index[id]].data;
    } else {
      t.data = std::move(values[id]);
    }
    return t;
  };
  std::vector<Tensor> result;
  if (keep_all) {
    result.reserve(n);
    for (size_t id = 0; id < n; ++id) result.push_back(take(id));
  } else {
    for (const OutputDecl& decl : program.outputs()) result.push_back(take(decl.tensor.value()));
  }
  return result;
}

absl::StatusOr<std::vector<Tensor>> CheckAndRun(const Program& program,
                                                absl::Span<const Tensor> inputs, EvalMode mode,
                                                bool keep_all) {
  PRISM_RETURN_IF_ERROR(CheckInputs(program, inputs));
  PRISM_RETURN_IF_ERROR(CheckLimits(program, keep_all));
  PRISM_RETURN_IF_ERROR(CheckDataSizes(program, inputs));
  switch (mode) {
    case EvalMode::kF64: return Run<double>(program, inputs, keep_all);
    case EvalMode::kDevice: return Run<float>(program, inputs, keep_all);
  }
  PRISM_UNREACHABLE("bad eval mode ", static_cast<int>(mode));
}

}  // namespace

absl::string_view EvalModeName(EvalMode mode) {
  switch (mode) {
    case EvalMode::kF64: return "f64";
    case EvalMode::kDevice: return "device";
  }
  PRISM_UNREACHABLE("bad eval mode ", static_cast<int>(mode));
}

// Input i draws standard normals from the i-th fork of Rng(seed), so one input's shape does not
// change the others' values (docs/ir_semantics.md §4). Inputs over the per-tensor limit get no
// data; Evaluate refuses such programs with ResourceExhausted before looking at data.
std::vector<Tensor> RandomInputs(const Program& program, uint64_t seed) {
  Rng root(seed);
  std::vector<Tensor> inputs;
  inputs.reserve(program.inputs().size());
  for (TensorId id : program.inputs()) {
    const Node& node = program.node(id);
    Rng rng = root.Fork();
    Tensor t;
    t.dtype = node.dtype;
    t.shape = node.shape;
    const std::optional<int64_t> n = NumElements(node.shape);
    if (n.has_value() && *n <= kMaxTensorElements) {
      t.data.resize(static_cast<size_t>(*n));
      for (double& v : t.data) v = RoundFast(rng.Normal(), node.dtype);
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

absl::StatusOr<std::vector<Tensor>> Evaluate(const Program& program,
                                             absl::Span<const Tensor> inputs, EvalMode mode) {
  return CheckAndRun(program, inputs, mode, /*keep_all=*/false);
}

absl::StatusOr<std::vector<Tensor>> EvaluateAll(const Program& program,
                                                absl::Span<const Tensor> inputs, EvalMode mode) {
  return CheckAndRun(program, inputs, mode, /*keep_all=*/true);
}

}  // namespace prism
