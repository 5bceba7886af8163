// The CPU block emulator (emulator.h): one thread block at a time, f32 tiles, rounding at
// stores.
#include "prism/block/emulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/ir/interpreter.h"

namespace prism {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t Elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// An f32 tile.
struct Tile {
  Shape shape;
  std::vector<float> v;
  static Tile Filled(Shape shape, float value) {
    Tile t;
    t.v.assign(static_cast<size_t>(Elements(shape)), value);
    t.shape = std::move(shape);
    return t;
  }
};

// Calls f(index, flat) for every multi-index of `shape` in row-major order.
template <typename F>
void ForEachIndex(const Shape& shape, F&& f) {
  const size_t r = shape.size();
  std::array<int64_t, kMaxRank> idx{};
  const int64_t n = Elements(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(idx, flat);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Row-major strides of `shape` with stride 0 where the dim is 1 and `out` is larger.
std::array<int64_t, kMaxRank> BroadcastStrides(const Shape& shape, const Shape& out) {
  std::array<int64_t, kMaxRank> s{};
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = (shape[d] == 1 && out[d] != 1) ? 0 : stride;
    stride *= shape[d];
  }
  return s;
}

float ApplyUnary(OpKind fn, float v, float c) {
  switch (fn) {
    case OpKind::kExp: return std::exp(v);
    case OpKind::kSilu: return v / (1.0f + std::exp(-v));
    case OpKind::kGelu: return (0.5f * v) * (1.0f + std::erf(v * 0.70710678118654752440f));
    case OpKind::kRelu: return std::isnan(v) ? v : (v > 0.0f ? v : 0.0f);
    case OpKind::kSqrt: return std::sqrt(v);
    case OpKind::kRsqrt: return 1.0f / std::sqrt(v);
    case OpKind::kSquare: return v * v;
    case OpKind::kNeg: return -v;
    case OpKind::kRecip: return 1.0f / v;
    case OpKind::kScale: return c * v;
    default: break;
  }
  PRISM_UNREACHABLE("not a unary function: ", GetOpInfo(fn).name);
}

float ApplyBinary(OpKind fn, float a, float b) {
  switch (fn) {
    case OpKind::kAdd: return a + b;
    case OpKind::kSub: return a - b;
    case OpKind::kMul: return a * b;
    case OpKind::kDiv: return a / b;
    default: break;
  }
  PRISM_UNREACHABLE("not a binary function: ", GetOpInfo(fn).name);
}

// Elementwise binary op of two same-rank tiles with broadcasting.
Tile Binary(OpKind fn, const Tile& a, const Tile& b) {
  Shape out(a.shape.size());
  for (size_t d = 0; d < out.size(); ++d) out[d] = std::max(a.shape[d], b.shape[d]);
  const auto sa = BroadcastStrides(a.shape, out);
  const auto sb = BroadcastStrides(b.shape, out);
  Tile t = Tile::Filled(out, 0.0f);
  ForEachIndex(out, [&](const std::array<int64_t, kMaxRank>& idx, int64_t flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      ia += idx[d] * sa[d];
      ib += idx[d] * sb[d];
    }
    t.v[flat] = ApplyBinary(fn, a.v[ia], b.v[ib]);
  });
  return t;
}

// Batched matmul a[..., M, K] x b[..., K, N] (batch dims aligned from the right, each equal or
// 1, a missing one 1), k ascending.
Tile MatMul(const Tile& a, const Tile& b) {
  const size_t ra = a.shape.size(), rb = b.shape.size(), r = std::max(ra, rb);
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  // The operands' shapes with leading 1s up to rank r (the same row-major data).
  Shape as(r - ra, 1), bs(r - rb, 1);
  as.insert(as.end(), a.shape.begin(), a.shape.end());
  bs.insert(bs.end(), b.shape.begin(), b.shape.end());
  Shape out(r);
  for (size_t d = 0; d + 2 < r; ++d) out[d] = std::max(as[d], bs[d]);
  out[r - 2] = m;
  out[r - 1] = n;
  Shape batch(out.begin(), out.end() - 2);
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  if (batch.empty()) {
    batch = {1};
    abatch = {1};
    bbatch = {1};
  }
  const auto sa = BroadcastStrides(abatch, batch);
  const auto sb = BroadcastStrides(bbatch, batch);
  Tile t = Tile::Filled(out, 0.0f);
  ForEachIndex(batch, [&](const std::array<int64_t, kMaxRank>& idx, int64_t flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ia += idx[d] * sa[d];
      ib += idx[d] * sb[d];
    }
    const float* pa = a.v.data() + ia * m * k;
    const float* pb = b.v.data() + ib * k * n;
    float* pc = t.v.data() + flat * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t q = 0; q < k; ++q) acc += pa[i * k + q] * pb[q * n + j];
        pc[i * n + j] = acc;
      }
    }
  });
  return t;
}

// Splits `shape` at dim d into outer × n × inner.
struct Fibres {
  int64_t outer = 1, n = 1, inner = 1;
};
Fibres SplitAt(const Shape& shape, int d) {
  Fibres f;
  for (int i = 0; i < d; ++i) f.outer *= shape[i];
  f.n = shape[d];
  for (size_t i = d + 1; i < shape.size(); ++i) f.inner *= shape[i];
  return f;
}

// sum or max over dim d, keepdim; ascending order.
Tile Reduce(OpKind fn, const Tile& x, int d) {
  Shape out = x.shape;
  out[d] = 1;
  const Fibres f = SplitAt(x.shape, d);
  Tile t = Tile::Filled(out, fn == OpKind::kMax ? kNegInf : 0.0f);
  for (int64_t o = 0; o < f.outer; ++o) {
    for (int64_t i = 0; i < f.inner; ++i) {
      float acc = fn == OpKind::kMax ? kNegInf : 0.0f;
      for (int64_t k = 0; k < f.n; ++k) {
        const float v = x.v[(o * f.n + k) * f.inner + i];
        acc = fn == OpKind::kMax ? (std::isnan(v) || v > acc ? v : acc) : acc + v;
      }
      t.v[o * f.inner + i] = acc;
    }
  }
  return t;
}

Tile Rms(const Tile& x, int d, float eps) {
  const Fibres f = SplitAt(x.shape, d);
  Tile t = Tile::Filled(x.shape, 0.0f);
  const float n = static_cast<float>(f.n);
  for (int64_t o = 0; o < f.outer; ++o) {
    for (int64_t i = 0; i < f.inner; ++i) {
      float ss = 0.0f;
      for (int64_t k = 0; k < f.n; ++k) {
        const float v = x.v[(o * f.n + k) * f.inner + i];
        ss += v * v;
      }
      const float inv = 1.0f / std::sqrt(ss / n + eps);
      for (int64_t k = 0; k < f.n; ++k) {
        const int64_t j = (o * f.n + k) * f.inner + i;
        t.v[j] = x.v[j] * inv;
      }
    }
  }
  return t;
}

// Row-wise (last dim) helpers for accumulators.
int64_t LastDim(const Tile& t) { return t.shape.back(); }
int64_t Rows(const Tile& t) { return Elements(t.shape) / LastDim(t); }

class Emulator {
 public:
  explicit Emulator(const BlockProgram& p) : p_(p) {}

  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs) {
    if (inputs.size() != p_.inputs.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", p_.inputs.size(), " inputs, found ", inputs.size()));
    }
    tensors_.resize(p_.tensors.size());
    written_.resize(p_.tensors.size());
    for (size_t t = 0; t < p_.tensors.size(); ++t) {
      tensors_[t] = Tensor::Zeros(p_.tensors[t].dtype, p_.tensors[t].shape);
      written_[t].assign(tensors_[t].data.size(), 0);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ConcreteTensor& decl = p_.tensors[p_.inputs[i]];
      if (inputs[i].dtype != decl.dtype || inputs[i].shape != decl.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", decl.name, ": found ", DTypeName(inputs[i].dtype),
                         ShapeToString(inputs[i].shape), ", expected ", DTypeName(decl.dtype),
                         ShapeToString(decl.shape)));
      }
      Tensor& t = tensors_[p_.inputs[i]];
      for (size_t j = 0; j < t.data.size(); ++j) {
        t.data[j] = RoundToDType(inputs[i].data[j], decl.dtype);
      }
    }
    for (size_t k = 0; k < p_.kernels.size(); ++k) {
      const ConcreteKernel& kernel = p_.kernels[k];
      if (kernel.is_block()) {
        PRISM_RETURN_IF_ERROR(RunBlockGraph(static_cast<int>(k), kernel.block()));
      } else {
        PRISM_RETURN_IF_ERROR(RunLibrary(kernel.library()));
      }
    }
    return std::move(tensors_);
  }

 private:
  absl::Status RunLibrary(const LibraryKernel& lk) {
    ProgramBuilder b;
    Node n;
    n.op = lk.op;
    n.dim = lk.dim;
    n.scalar = lk.scalar;
    n.eps = lk.eps;
    std::vector<Tensor> in;
    for (size_t i = 0; i < lk.operands.size(); ++i) {
      const ConcreteTensor& t = p_.tensors[lk.operands[i]];
      n.operands.push_back(b.Input(absl::StrCat("in", i), t.dtype, t.shape));
      in.push_back(tensors_[lk.operands[i]]);
    }
    const TensorId out = b.AddNode(std::move(n));
    b.Output(out);
    PRISM_ASSIGN_OR_RETURN(Program program, std::move(b).Build());
    PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> result, Evaluate(program, in, EvalMode::kDevice));
    Tensor& dst = tensors_[lk.result];
    if (result[0].shape != dst.shape) {
      return absl::InternalError(absl::StrCat("library kernel ", GetOpInfo(lk.op).name,
                                              " produced ", ShapeToString(result[0].shape),
                                              ", expected ", ShapeToString(dst.shape)));
    }
    for (size_t j = 0; j < dst.data.size(); ++j) {
      dst.data[j] = RoundToDType(result[0].data[j], dst.dtype);
    }
    std::fill(written_[lk.result].begin(), written_[lk.result].end(), 1);
    return absl::OkStatus();
  }

  // Tile origin along each tensor dim for a block (and iteration, for an fmapped load).
  static std::array<int64_t, kMaxRank> Origin(const ConcreteBlockGraph& g,
                                              const ConcreteBlockOp& op,
                                              const std::array<int64_t, kNumGridAxes>& block,
                                              int64_t iteration) {
    std::array<int64_t, kMaxRank> origin{};
    for (size_t d = 0; d < op.tile.size(); ++d) {
      int64_t c = 0;
      for (int a = 0; a < kNumGridAxes; ++a) {
        if (op.map[a] == static_cast<int>(d)) c = c * g.grid[a] + block[a];
      }
      if (op.kind == BlockOpKind::kInput && op.fmap == static_cast<int>(d)) {
        c = c * g.forloop + iteration;
      }
      origin[d] = c * op.tile[d];
    }
    return origin;
  }

  Tile Load(const ConcreteBlockGraph& g, const ConcreteBlockOp& op,
            const std::array<int64_t, kNumGridAxes>& block, int64_t iteration) {
    const Tensor& src = tensors_[op.tensor];
    const auto origin = Origin(g, op, block, iteration);
    const std::vector<int64_t> strides = Tensor::Strides(src.shape);
    Tile t = Tile::Filled(op.tile, 0.0f);
    ForEachIndex(op.tile, [&](const std::array<int64_t, kMaxRank>& idx, int64_t flat) {
      int64_t off = 0;
      for (size_t d = 0; d < op.tile.size(); ++d) off += (origin[d] + idx[d]) * strides[d];
      t.v[flat] = static_cast<float>(src.data[off]);
    });
    return t;
  }

  absl::Status Store(int k, const ConcreteBlockGraph& g, const ConcreteBlockOp& op,
                     const Tile& value, const std::array<int64_t, kNumGridAxes>& block) {
    Tensor& dst = tensors_[op.tensor];
    std::vector<uint8_t>& written = written_[op.tensor];
    if (value.shape != op.tile) {
      return absl::InternalError(absl::StrCat("kernel ", k, ": stored tile ",
                                              ShapeToString(value.shape), ", expected ",
                                              ShapeToString(op.tile)));
    }
    const auto origin = Origin(g, op, block, 0);
    const std::vector<int64_t> strides = Tensor::Strides(dst.shape);
    // A replicated store (an axis of more than one block not in the omap; validate.cc allows
    // it only for tiles that do not depend on that axis): every copy must be the same.
    bool replicated = false;
    for (int a = 0; a < kNumGridAxes; ++a) {
      replicated = replicated || (g.grid[a] > 1 && op.map[a] == kReplicate);
    }
    absl::Status status;
    ForEachIndex(op.tile, [&](const std::array<int64_t, kMaxRank>& idx, int64_t flat) {
      int64_t off = 0;
      for (size_t d = 0; d < op.tile.size(); ++d) off += (origin[d] + idx[d]) * strides[d];
      const double v = RoundToDType(static_cast<double>(value.v[flat]), dst.dtype);
      if (written[off] && status.ok()) {
        if (!replicated) {
          status = absl::InternalError(absl::StrCat(
              "kernel ", KernelName(k), ": element ", off, " of tensor ",
              p_.tensors[op.tensor].name, " is written by more than one block (block ",
              absl::StrJoin(block, ","), ")"));
        } else if (dst.data[off] != v) {
          status = absl::InternalError(absl::StrCat(
              "kernel ", KernelName(k), ": element ", off, " of tensor ",
              p_.tensors[op.tensor].name, " is stored by every block along a replicated axis, "
              "but block ", absl::StrJoin(block, ","), " stores ", v, " where an earlier block "
              "stored ", dst.data[off]));
        }
      }
      written[off] = 1;
      dst.data[off] = v;
    });
    return status;
  }

  std::string KernelName(int k) const {
    return p_.kernels[k].name.empty() ? absl::StrCat("#", k) : p_.kernels[k].name;
  }

  Tile Compute(const ConcreteBlockOp& op, const std::vector<Tile>& vals) {
    auto in = [&](int i) -> const Tile& { return vals[op.operands[i]]; };
    switch (op.kind) {
      case BlockOpKind::kMatMul: return MatMul(in(0), in(1));
      case BlockOpKind::kUnary: {
        Tile t = in(0);
        const float c = static_cast<float>(op.scalar);
        for (float& v : t.v) v = ApplyUnary(op.fn, v, c);
        return t;
      }
      case BlockOpKind::kBinary: return Binary(op.fn, in(0), in(1));
      case BlockOpKind::kReduce: return Reduce(op.fn, in(0), op.dim);
      case BlockOpKind::kRms: return Rms(in(0), op.dim, static_cast<float>(op.eps));
      case BlockOpKind::kInvRms: {
        Tile t = in(0);
        const float n = static_cast<float>(op.count);
        const float eps = static_cast<float>(op.eps);
        for (float& v : t.v) v = 1.0f / std::sqrt(v / n + eps);
        return t;
      }
      case BlockOpKind::kDivCount: {
        Tile t = in(0);
        const float n = static_cast<float>(op.count);
        for (float& v : t.v) v = v / n;
        return t;
      }
      default: break;
    }
    PRISM_UNREACHABLE("not a compute op: ", GetBlockOpInfo(op.kind).name);
  }

  // Accumulator state: the value and, for online accumulators, the running row max.
  struct AccState {
    Tile value;
    Tile max;
  };

  static AccState InitAcc(const ConcreteBlockOp& op) {
    AccState s;
    const bool is_max = op.kind == BlockOpKind::kAccMaxLast;
    s.value = Tile::Filled(op.tile, is_max ? kNegInf : 0.0f);
    if (op.kind == BlockOpKind::kAccOnlineSum || op.kind == BlockOpKind::kAccOnlineMatMul) {
      Shape rows = op.tile;
      rows.back() = 1;
      s.max = Tile::Filled(rows, kNegInf);
    }
    return s;
  }

  // Running-max update of one row: returns the rescale factor of the old sums and sets
  // m ← max(m, row max of s) (both −inf: factor 1, nothing accumulated yet).
  static float UpdateMax(float& m, const float* s, int64_t n) {
    float row_max = kNegInf;
    for (int64_t j = 0; j < n; ++j) row_max = std::max(row_max, s[j]);
    const float m_new = std::max(m, row_max);
    const float factor = m == kNegInf ? 0.0f : std::exp(m - m_new);
    m = m_new;
    return factor;
  }

  static void UpdateAcc(const ConcreteBlockOp& op, AccState& s, const std::vector<Tile>& vals) {
    const Tile& x = vals[op.operands[0]];
    switch (op.kind) {
      case BlockOpKind::kAccSum:
        for (size_t j = 0; j < s.value.v.size(); ++j) s.value.v[j] += x.v[j];
        return;
      case BlockOpKind::kAccSumLast:
      case BlockOpKind::kAccSumSqLast:
      case BlockOpKind::kAccMaxLast: {
        const int64_t n = LastDim(x);
        for (int64_t r = 0; r < Rows(x); ++r) {
          const float* row = x.v.data() + r * n;
          if (op.kind == BlockOpKind::kAccMaxLast) {
            float m = kNegInf;
            for (int64_t j = 0; j < n; ++j) m = std::isnan(row[j]) || row[j] > m ? row[j] : m;
            s.value.v[r] = std::isnan(m) || m > s.value.v[r] ? m : s.value.v[r];
          } else {
            float acc = 0.0f;
            for (int64_t j = 0; j < n; ++j) {
              acc += op.kind == BlockOpKind::kAccSumSqLast ? row[j] * row[j] : row[j];
            }
            s.value.v[r] += acc;
          }
        }
        return;
      }
      case BlockOpKind::kAccOnlineSum: {
        const int64_t n = LastDim(x);
        for (int64_t r = 0; r < Rows(x); ++r) {
          const float* row = x.v.data() + r * n;
          const float factor = UpdateMax(s.max.v[r], row, n);
          float acc = 0.0f;
          for (int64_t j = 0; j < n; ++j) acc += std::exp(row[j] - s.max.v[r]);
          s.value.v[r] = s.value.v[r] * factor + acc;
        }
        return;
      }
      case BlockOpKind::kAccOnlineMatMul: {
        // P = exp(S − m_new) row by row, then acc ← acc · factor + P · V.
        const int64_t n = LastDim(x);
        Tile p = x;
        std::vector<float> factors(static_cast<size_t>(Rows(x)));
        for (int64_t r = 0; r < Rows(x); ++r) {
          factors[r] = UpdateMax(s.max.v[r], x.v.data() + r * n, n);
          for (int64_t j = 0; j < n; ++j) p.v[r * n + j] = std::exp(x.v[r * n + j] - s.max.v[r]);
        }
        const Tile pv = MatMul(p, vals[op.operands[1]]);
        const int64_t d = LastDim(pv);
        for (int64_t r = 0; r < Rows(pv); ++r) {
          for (int64_t j = 0; j < d; ++j) {
            float& a = s.value.v[r * d + j];
            a = a * factors[r] + pv.v[r * d + j];
          }
        }
        return;
      }
      default: break;
    }
    PRISM_UNREACHABLE("not an accumulator: ", GetBlockOpInfo(op.kind).name);
  }

  absl::Status RunBlockGraph(int k, const ConcreteBlockGraph& g) {
    const size_t n = g.ops.size();
    std::array<int64_t, kNumGridAxes> block{};
    for (block[0] = 0; block[0] < g.grid[0]; ++block[0]) {
      for (block[1] = 0; block[1] < g.grid[1]; ++block[1]) {
        for (block[2] = 0; block[2] < g.grid[2]; ++block[2]) {
          std::vector<Tile> vals(n);
          std::vector<AccState> acc(n);
          // 1. loop-invariant ops, 2. accumulators.
          for (size_t i = 0; i < n; ++i) {
            const ConcreteBlockOp& op = g.ops[i];
            if (IsAccumulator(op.kind)) {
              acc[i] = InitAcc(op);
            } else if (op.phase == Phase::kInvariant && op.kind != BlockOpKind::kOutput) {
              vals[i] = op.kind == BlockOpKind::kInput ? Load(g, op, block, 0) : Compute(op, vals);
            }
          }
          // 3. the forloop.
          for (int64_t it = 0; it < g.forloop; ++it) {
            for (size_t i = 0; i < n; ++i) {
              const ConcreteBlockOp& op = g.ops[i];
              if (op.phase != Phase::kLoop || IsAccumulator(op.kind)) continue;
              vals[i] = op.kind == BlockOpKind::kInput ? Load(g, op, block, it) : Compute(op, vals);
            }
            for (size_t i = 0; i < n; ++i) {
              if (IsAccumulator(g.ops[i].kind)) UpdateAcc(g.ops[i], acc[i], vals);
            }
          }
          // 4. after the loop, then the stores.
          for (size_t i = 0; i < n; ++i) {
            const ConcreteBlockOp& op = g.ops[i];
            if (IsAccumulator(op.kind)) {
              vals[i] = std::move(acc[i].value);
            } else if (op.phase == Phase::kAfter && op.kind != BlockOpKind::kOutput) {
              vals[i] = Compute(op, vals);
            }
          }
          for (size_t i = 0; i < n; ++i) {
            const ConcreteBlockOp& op = g.ops[i];
            if (op.kind != BlockOpKind::kOutput) continue;
            PRISM_RETURN_IF_ERROR(Store(k, g, op, vals[op.operands[0]], block));
          }
        }
      }
    }
    for (const ConcreteBlockOp& op : g.ops) {
      if (op.kind != BlockOpKind::kOutput) continue;
      const std::vector<uint8_t>& w = written_[op.tensor];
      const auto missing = std::find(w.begin(), w.end(), 0);
      if (missing != w.end()) {
        return absl::InternalError(absl::StrCat("kernel ", KernelName(k), ": element ",
                                                missing - w.begin(), " of tensor ",
                                                p_.tensors[op.tensor].name, " is never written"));
      }
    }
    return absl::OkStatus();
  }

  const BlockProgram& p_;
  std::vector<Tensor> tensors_;
  std::vector<std::vector<uint8_t>> written_;
};

}  // namespace

absl::StatusOr<std::vector<Tensor>> EmulateAll(const BlockProgram& program,
                                               absl::Span<const Tensor> inputs) {
  return Emulator(program).Run(inputs);
}

absl::StatusOr<std::vector<Tensor>> Emulate(const BlockProgram& program,
                                            absl::Span<const Tensor> inputs) {
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> all, EmulateAll(program, inputs));
  std::vector<Tensor> out;
  for (int t : program.outputs) out.push_back(std::move(all[t]));
  return out;
}

}  // namespace prism
