#include "prism/equiv/term_eval.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prism/base/status.h"
#include "prism/equiv/language.h"

namespace prism::equiv {
namespace {

int64_t Count(const Shape& s, size_t from = 0, size_t to = SIZE_MAX) {
  // Iterators rather than indices: GCC 12 at -O3 mis-derives a trip count for the indexed loop
  // and reports a false -Waggressive-loop-optimizations.
  const size_t end = std::min(to, s.size());
  if (from >= end) return 1;
  return std::accumulate(s.begin() + static_cast<std::ptrdiff_t>(from),
                         s.begin() + static_cast<std::ptrdiff_t>(end), int64_t{1},
                         std::multiplies<int64_t>());
}

double Unary(TermOp op, double x) {
  switch (op) {
    case TermOp::kExp: return std::exp(x);
    case TermOp::kSilu: return x / (1.0 + std::exp(-x));
    case TermOp::kGelu: return (0.5 * x) * (1.0 + std::erf(x * M_SQRT1_2));
    case TermOp::kRelu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case TermOp::kSqrt: return std::sqrt(x);
    case TermOp::kRsqrt: return 1.0 / std::sqrt(x);
    case TermOp::kSquare: return x * x;
    case TermOp::kNeg: return -x;
    case TermOp::kRecip: return 1.0 / x;
    default: return std::nan("");
  }
}

double Binary(TermOp op, double a, double b) {
  switch (op) {
    case TermOp::kAdd: return a + b;
    case TermOp::kSub: return a - b;
    case TermOp::kMul: case TermOp::kScale: return a * b;
    case TermOp::kDiv: return a / b;
    default: return std::nan("");
  }
}

// numpy broadcasting of concrete shapes.
std::optional<Shape> Broadcast(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = std::max(x, y) == 1 ? 1 : (x == 1 ? y : x);
  }
  return out;
}

// Strides of `in` read through broadcasting into a tensor of rank `rank` (0 on broadcast dims).
std::vector<int64_t> BroadcastStrides(const Shape& in, size_t rank) {
  std::vector<int64_t> st(rank, 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    if (in[k] != 1) st[rank - in.size() + k] = s;
    s *= in[k];
  }
  return st;
}

// Calls f(offset_a, offset_b) for every index of `out` in row-major order.
template <typename F>
void ForEachBroadcast(const Shape& out, const Shape& a, const Shape& b, F f) {
  const std::vector<int64_t> sa = BroadcastStrides(a, out.size()), sb = BroadcastStrides(b, out.size());
  std::vector<int64_t> idx(out.size(), 0);
  int64_t oa = 0, ob = 0;
  const int64_t n = Count(out);
  for (int64_t e = 0; e < n; ++e) {
    f(oa, ob);
    for (size_t k = out.size(); k-- > 0;) {
      if (++idx[k] < out[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (out[k] - 1);
      ob -= sb[k] * (out[k] - 1);
      idx[k] = 0;
    }
  }
}

Tensor Scalar(double v) {
  Tensor t;
  t.data = {v};
  return t;
}

struct NodeInfo {
  std::optional<double> value;  // statically known scalar (literals, sizes, dimsize, ...)
  std::optional<std::string> axis;
};

}  // namespace

TermEvaluator::TermEvaluator(const ExprContext* ctx, Assignment sizes)
    : ctx_(ctx), sizes_(std::move(sizes)) {}

void TermEvaluator::SetInput(absl::string_view name, Tensor value) {
  inputs_[std::string(name)] = std::move(value);
}

absl::StatusOr<TermPlan> TermEvaluator::Plan(const Term& t) const {
  TermPlan plan;
  plan.shapes.resize(t.size());
  plan.axes.resize(t.size());
  std::vector<NodeInfo> info(t.size());
  for (uint32_t i = 0; i < t.size(); ++i) {
    const TermNode& n = t.node(i);
    auto fail = [&](absl::string_view msg) {
      std::string s = t.ToString(i, ctx_);
      if (s.size() > 120) s = s.substr(0, 120) + "...";
      return absl::InvalidArgumentError(absl::StrCat(s, ": ", msg));
    };
    Shape& shape = plan.shapes[i];
    switch (n.payload.kind()) {
      case Payload::Kind::kInt: info[i].value = static_cast<double>(n.payload.int_value()); continue;
      case Payload::Kind::kReal: info[i].value = n.payload.real_value(); continue;
      case Payload::Kind::kSym: {
        absl::StatusOr<int64_t> v = EvaluateInt(*ctx_, n.payload.sym(), sizes_);
        if (!v.ok()) return fail(v.status().message());
        info[i].value = static_cast<double>(*v);
        continue;
      }
      case Payload::Kind::kAxis: info[i].axis = std::string(n.payload.axis().name()); continue;
      case Payload::Kind::kNone: break;
    }
    std::vector<std::string>& axes = plan.axes[i];
    for (uint32_t c : n.children) axes.insert(axes.end(), plan.axes[c].begin(), plan.axes[c].end());
    const TermOpInfo* op = FindTermOp(n.op);
    if (op == nullptr) {
      auto it = inputs_.find(std::string(n.op.name()));
      if (!n.children.empty() || it == inputs_.end()) return fail("not an operator or a bound input");
      shape = it->second.shape;
      continue;
    }
    if (static_cast<int>(n.children.size()) != op->arity) return fail("wrong number of operands");
    const uint32_t c0 = n.children[0];
    const Shape& s0 = plan.shapes[c0];
    auto dim_of = [&](uint32_t child, size_t rank) -> std::optional<int> {
      std::optional<double> v = info[child].value;
      if (!v || *v != std::floor(*v) || *v < 0 || *v >= static_cast<double>(rank)) return std::nullopt;
      return static_cast<int>(*v);
    };
    auto degree_of = [&](uint32_t axis_child, std::optional<double> n_value) -> absl::StatusOr<int64_t> {
      if (!info[axis_child].axis) return fail("expected an axis");
      const std::string& ax = *info[axis_child].axis;
      if (!n_value) {
        auto it = plan.degrees.find(ax);
        if (it == plan.degrees.end()) return fail(absl::StrCat("axis @", ax, " is not declared"));
        return it->second;
      }
      if (*n_value < 1 || *n_value != std::floor(*n_value)) return fail("the degree must be a positive integer");
      auto [it, fresh] = plan.degrees.emplace(ax, static_cast<int64_t>(*n_value));
      if (!fresh && it->second != static_cast<int64_t>(*n_value)) {
        return fail(absl::StrCat("axis @", ax, " has two degrees"));
      }
      return it->second;
    };
    switch (op->category) {
      case TermOpCategory::kUnary:
        shape = s0;
        if (info[c0].value && shape.empty()) info[i].value = Unary(op->op, *info[c0].value);
        break;
      case TermOpCategory::kScale:
      case TermOpCategory::kBinary: {
        const uint32_t c1 = n.children[1];
        if (op->category == TermOpCategory::kScale && !plan.shapes[c1].empty()) return fail("the constant must be a scalar");
        std::optional<Shape> b = Broadcast(s0, plan.shapes[c1]);
        if (!b) return fail("operands do not broadcast");
        shape = *b;
        if (info[c0].value && info[c1].value && shape.empty()) {
          info[i].value = Binary(op->op, *info[c0].value, *info[c1].value);
        }
        break;
      }
      case TermOpCategory::kReduce:
      case TermOpCategory::kNorm: {
        std::optional<int> d = dim_of(n.children[1], s0.size());
        if (!d) return fail("bad dim");
        shape = s0;
        if (op->category == TermOpCategory::kReduce) shape[*d] = 1;
        if (op->op == TermOp::kRmsNorm && !info[n.children[2]].value) return fail("eps must be a constant");
        break;
      }
      case TermOpCategory::kConcat: {
        const Shape& s1 = plan.shapes[n.children[1]];
        std::optional<int> d = dim_of(n.children[2], s0.size());
        if (!d || s0.size() != s1.size()) return fail("bad dim or ranks");
        for (size_t k = 0; k < s0.size(); ++k) {
          if (static_cast<int>(k) != *d && s0[k] != s1[k]) return fail("shapes differ outside the dim");
        }
        shape = s0;
        shape[*d] += s1[*d];
        break;
      }
      case TermOpCategory::kMatMul: {
        const Shape& s1 = plan.shapes[n.children[1]];
        if (s0.size() < 2 || s1.size() < 2 || s0.back() != s1[s1.size() - 2]) return fail("shapes do not contract");
        std::optional<Shape> batch = Broadcast(Shape(s0.begin(), s0.end() - 2), Shape(s1.begin(), s1.end() - 2));
        if (!batch) return fail("batch dims do not broadcast");
        shape = *batch;
        shape.push_back(s0[s0.size() - 2]);
        shape.push_back(s1.back());
        break;
      }
      case TermOpCategory::kPartition:
      case TermOpCategory::kReplicate: {
        const bool part = op->category == TermOpCategory::kPartition;
        std::optional<double> nv = info[n.children[part ? 3 : 2]].value;
        if (!nv) return fail("the degree must be a constant");
        PRISM_ASSIGN_OR_RETURN(int64_t deg, degree_of(n.children[part ? 2 : 1], nv));
        shape = s0;
        if (!part) break;
        std::optional<int> d = dim_of(n.children[1], s0.size());
        if (!d) return fail("bad dim");
        if (s0[*d] % deg != 0) {
          return fail(absl::StrCat("dim ", *d, " of size ", s0[*d], " is not divisible by ", deg));
        }
        shape[*d] /= deg;
        axes.push_back(*info[n.children[2]].axis);
        break;
      }
      case TermOpCategory::kCombine:
      case TermOpCategory::kAxisReduce: {
        const bool combine = op->category == TermOpCategory::kCombine;
        const uint32_t ax = n.children[combine ? 2 : 1];
        PRISM_ASSIGN_OR_RETURN(int64_t deg, degree_of(ax, std::nullopt));
        axes.erase(std::remove(axes.begin(), axes.end(), *info[ax].axis), axes.end());
        shape = s0;
        if (!combine) break;
        std::optional<int> d = dim_of(n.children[1], s0.size());
        if (!d) return fail("bad dim");
        shape[*d] *= deg;
        break;
      }
      case TermOpCategory::kAux: {
        if (op->op == TermOp::kDimSize) {
          std::optional<int> d = dim_of(n.children[1], s0.size());
          if (!d) return fail("bad dim");
          info[i].value = static_cast<double>(s0[*d]);
        } else {
          std::optional<double> k = info[n.children[1]].value;
          const double r = static_cast<double>(s0.size());
          if (!k || *k < -r || *k >= r) return fail("bad dim");
          info[i].value = *k < 0 ? *k + r : *k;
        }
        break;
      }
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  }
  // Work: each node is computed once per index of the axes it depends on.
  for (uint32_t i = 0; i < t.size(); ++i) {
    const TermNode& n = t.node(i);
    const TermOpInfo* op = FindTermOp(n.op);
    double per_block = static_cast<double>(Count(plan.shapes[i]));
    if (op != nullptr && op->op == TermOp::kMatMul) {
      per_block *= static_cast<double>(plan.shapes[n.children[0]].back());
    } else if (op != nullptr && !n.children.empty()) {
      per_block = std::max(per_block, static_cast<double>(Count(plan.shapes[n.children[0]])));
    }
    double blocks = 1;
    for (const std::string& a : plan.axes[i]) blocks *= static_cast<double>(plan.degrees[a]);
    plan.ops += per_block * blocks;
  }
  return plan;
}

namespace {

using TensorPtr = std::shared_ptr<const Tensor>;

class Run {
 public:
  // `leaf_values`: the numbers of the literal and symbolic-size leaves, by node.
  Run(const Term& t, const TermPlan& plan, std::map<uint32_t, double> leaf_values,
      const std::map<std::string, Tensor>& inputs)
      : t_(t), plan_(plan), leaf_values_(std::move(leaf_values)), inputs_(inputs) {}

  absl::StatusOr<TensorPtr> Eval(uint32_t i, BlockIndex& block) {
    std::vector<int64_t> key_idx;
    for (const std::string& a : plan_.axes[i]) {
      auto it = block.find(a);
      if (it == block.end()) return absl::InvalidArgumentError(absl::StrCat("no block index for axis @", a));
      key_idx.push_back(it->second);
    }
    auto key = std::make_pair(i, key_idx);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    PRISM_ASSIGN_OR_RETURN(TensorPtr v, Compute(i, block));
    memo_.emplace(std::move(key), v);
    return v;
  }

 private:
  absl::StatusOr<TensorPtr> Compute(uint32_t i, BlockIndex& block) {
    const TermNode& n = t_.node(i);
    const Shape& shape = plan_.shapes[i];
    if (!n.payload.is_none()) return std::make_shared<Tensor>(Scalar(leaf_values_.at(i)));
    const TermOpInfo* op = FindTermOp(n.op);
    if (op == nullptr) return std::make_shared<Tensor>(inputs_.at(std::string(n.op.name())));
    std::vector<TensorPtr> kids;
    auto kid = [&](size_t k) -> absl::StatusOr<TensorPtr> { return Eval(n.children[k], block); };
    auto int_of = [&](size_t k) -> absl::StatusOr<int64_t> {
      PRISM_ASSIGN_OR_RETURN(TensorPtr v, kid(k));
      return static_cast<int64_t>(v->data[0]);
    };
    auto out = std::make_shared<Tensor>();
    out->shape = shape;
    switch (op->category) {
      case TermOpCategory::kUnary: {
        PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
        out->data.resize(a->data.size());
        for (size_t e = 0; e < a->data.size(); ++e) out->data[e] = Unary(op->op, a->data[e]);
        return TensorPtr(out);
      }
      case TermOpCategory::kScale:
      case TermOpCategory::kBinary: {
        PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
        PRISM_ASSIGN_OR_RETURN(TensorPtr b, kid(1));
        out->data.reserve(Count(shape));
        ForEachBroadcast(shape, a->shape, b->shape, [&](int64_t x, int64_t y) {
          out->data.push_back(Binary(op->op, a->data[x], b->data[y]));
        });
        return TensorPtr(out);
      }
      case TermOpCategory::kReduce:
      case TermOpCategory::kNorm: {
        PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
        PRISM_ASSIGN_OR_RETURN(int64_t d, int_of(1));
        double eps = 0;
        if (op->op == TermOp::kRmsNorm) {
          PRISM_ASSIGN_OR_RETURN(TensorPtr e, kid(2));
          eps = e->data[0];
        }
        const Shape& in = a->shape;
        const int64_t outer = Count(in, 0, d), len = in[d], inner = Count(in, d + 1);
        out->data.assign(Count(shape), 0.0);
        const bool keep = op->category == TermOpCategory::kNorm;
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t j = 0; j < inner; ++j) {
            auto x = [&](int64_t k) { return a->data[(o * len + k) * inner + j]; };
            auto y = [&](int64_t k) -> double& { return out->data[(o * (keep ? len : 1) + k) * inner + j]; };
            double acc = 0.0, mx = x(0);
            if (op->op == TermOp::kMax || op->op == TermOp::kSoftmax) {
              for (int64_t k = 1; k < len; ++k) {
                if (!std::isnan(mx) && (std::isnan(x(k)) || x(k) > mx)) mx = x(k);
              }
            }
            switch (op->op) {
              case TermOp::kSum: case TermOp::kMean:
                for (int64_t k = 0; k < len; ++k) acc += x(k);
                y(0) = op->op == TermOp::kMean ? acc / static_cast<double>(len) : acc;
                break;
              case TermOp::kMax: y(0) = mx; break;
              case TermOp::kRmsNorm: {
                for (int64_t k = 0; k < len; ++k) acc += x(k) * x(k);
                const double inv = 1.0 / std::sqrt(acc / static_cast<double>(len) + eps);
                for (int64_t k = 0; k < len; ++k) y(k) = x(k) * inv;
                break;
              }
              default: {  // softmax
                for (int64_t k = 0; k < len; ++k) acc += std::exp(x(k) - mx);
                for (int64_t k = 0; k < len; ++k) y(k) = std::exp(x(k) - mx) / acc;
                break;
              }
            }
          }
        }
        return TensorPtr(out);
      }
      case TermOpCategory::kConcat:
      case TermOpCategory::kCombine: {
        std::vector<TensorPtr> parts;
        int64_t d = 0;
        if (op->category == TermOpCategory::kConcat) {
          PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
          PRISM_ASSIGN_OR_RETURN(TensorPtr b, kid(1));
          PRISM_ASSIGN_OR_RETURN(d, int_of(2));
          parts = {a, b};
        } else {
          PRISM_ASSIGN_OR_RETURN(d, int_of(1));
          PRISM_ASSIGN_OR_RETURN(parts, PerBlock(n.children[0], n.children[2], block));
        }
        const int64_t outer = Count(shape, 0, d), inner = Count(shape, d + 1);
        out->data.reserve(Count(shape));
        for (int64_t o = 0; o < outer; ++o) {
          for (const TensorPtr& p : parts) {
            const int64_t chunk = p->shape[d] * inner;
            out->data.insert(out->data.end(), p->data.begin() + o * chunk, p->data.begin() + (o + 1) * chunk);
          }
        }
        return TensorPtr(out);
      }
      case TermOpCategory::kMatMul: {
        PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
        PRISM_ASSIGN_OR_RETURN(TensorPtr b, kid(1));
        const Shape &sa = a->shape, &sb = b->shape;
        const int64_t m = sa[sa.size() - 2], k = sa.back(), nn = sb.back();
        const Shape batch(shape.begin(), shape.end() - 2);
        out->data.assign(Count(shape), 0.0);
        int64_t bo = 0;
        ForEachBroadcast(batch, Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2),
                         [&](int64_t x, int64_t y) {
                           const double* pa = a->data.data() + x * m * k;
                           const double* pb = b->data.data() + y * k * nn;
                           double* po = out->data.data() + bo * m * nn;
                           for (int64_t r = 0; r < m; ++r) {
                             for (int64_t q = 0; q < k; ++q) {
                               const double av = pa[r * k + q];
                               for (int64_t c = 0; c < nn; ++c) po[r * nn + c] += av * pb[q * nn + c];
                             }
                           }
                           ++bo;
                         });
        return TensorPtr(out);
      }
      case TermOpCategory::kPartition: {
        PRISM_ASSIGN_OR_RETURN(TensorPtr a, kid(0));
        PRISM_ASSIGN_OR_RETURN(int64_t d, int_of(1));
        const std::string axis(t_.node(n.children[2]).payload.axis().name());
        const int64_t idx = block.at(axis);
        const int64_t outer = Count(shape, 0, d), inner = Count(shape, d + 1), len = shape[d];
        const int64_t full = a->shape[d];
        out->data.reserve(Count(shape));
        for (int64_t o = 0; o < outer; ++o) {
          auto first = a->data.begin() + (o * full + idx * len) * inner;
          out->data.insert(out->data.end(), first, first + len * inner);
        }
        return TensorPtr(out);
      }
      case TermOpCategory::kReplicate:
        return kid(0);
      case TermOpCategory::kAxisReduce: {
        PRISM_ASSIGN_OR_RETURN(std::vector<TensorPtr> parts, PerBlock(n.children[0], n.children[1], block));
        const bool sum = op->op == TermOp::kReduce;
        out->data = sum ? std::vector<double>(parts[0]->data.size(), 0.0) : parts[0]->data;
        for (size_t p = sum ? 0 : 1; p < parts.size(); ++p) {
          for (size_t e = 0; e < out->data.size(); ++e) {
            const double v = parts[p]->data[e];
            double& acc = out->data[e];
            if (sum) {
              acc += v;
            } else if (std::isnan(v) || v > acc) {
              acc = std::isnan(acc) ? acc : v;
            }
          }
        }
        return TensorPtr(out);
      }
      case TermOpCategory::kAux: {
        const Shape& s0 = plan_.shapes[n.children[0]];
        PRISM_ASSIGN_OR_RETURN(int64_t d, int_of(1));
        if (op->op == TermOp::kDimSize) return std::make_shared<Tensor>(Scalar(static_cast<double>(s0[d])));
        const int64_t r = static_cast<int64_t>(s0.size());
        return std::make_shared<Tensor>(Scalar(static_cast<double>(d < 0 ? d + r : d)));
      }
    }
    return absl::InternalError("unhandled operator");
  }

  // The values of node `body` for every index of the axis of leaf `axis_node`.
  absl::StatusOr<std::vector<TensorPtr>> PerBlock(uint32_t body, uint32_t axis_node, BlockIndex& block) {
    const std::string axis(t_.node(axis_node).payload.axis().name());
    const int64_t deg = plan_.degrees.at(axis);
    std::optional<int64_t> saved;
    if (auto it = block.find(axis); it != block.end()) saved = it->second;
    std::vector<TensorPtr> parts;
    for (int64_t b = 0; b < deg; ++b) {
      block[axis] = b;
      absl::StatusOr<TensorPtr> v = Eval(body, block);
      if (!v.ok()) return v.status();
      parts.push_back(*v);
    }
    if (saved) {
      block[axis] = *saved;
    } else {
      block.erase(axis);
    }
    return parts;
  }

  const Term& t_;
  const TermPlan& plan_;
  std::map<uint32_t, double> leaf_values_;
  const std::map<std::string, Tensor>& inputs_;
  std::map<std::pair<uint32_t, std::vector<int64_t>>, TensorPtr> memo_;
};

}  // namespace

absl::StatusOr<Tensor> TermEvaluator::Evaluate(const Term& t, const TermPlan& plan,
                                               const BlockIndex& block) const {
  std::map<uint32_t, double> leaves;
  for (uint32_t i = 0; i < t.size(); ++i) {
    const Payload& p = t.node(i).payload;
    if (p.kind() == Payload::Kind::kInt) leaves[i] = static_cast<double>(p.int_value());
    if (p.kind() == Payload::Kind::kReal) leaves[i] = p.real_value();
    if (p.kind() == Payload::Kind::kSym) {
      PRISM_ASSIGN_OR_RETURN(int64_t v, EvaluateInt(*ctx_, p.sym(), sizes_));
      leaves[i] = static_cast<double>(v);
    }
  }
  Run run(t, plan, std::move(leaves), inputs_);
  BlockIndex b = block;
  PRISM_ASSIGN_OR_RETURN(TensorPtr v, run.Eval(t.root(), b));
  return *v;
}

}  // namespace prism::equiv
