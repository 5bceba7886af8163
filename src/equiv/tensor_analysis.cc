#include "prism/equiv/tensor_analysis.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/language.h"

namespace prism::equiv {
namespace {

bool MulOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool AddOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace

// ---- SymSize -----------------------------------------------------------------------------------
SymSize SymSize::Const(int64_t v) {
  SymSize s;
  s.num_ = v;
  return s;
}

SymSize SymSize::FromExpr(const ExprContext& ctx, Expr e) {
  switch (ctx.kind(e)) {
    case ExprKind::kConst:
      return Const(ctx.const_value(e));
    case ExprKind::kMul: {
      SymSize r;
      for (Expr op : ctx.operands(e)) {
        std::optional<SymSize> t = r.Times(FromExpr(ctx, op));
        if (!t.has_value()) break;  // overflow: keep the product as one atom below
        r = *t;
        if (op == ctx.operands(e).back()) return r;
      }
      break;
    }
    default:
      break;
  }
  SymSize s;
  s.atoms_.push_back({e.value(), 1});
  return s;
}

bool SymSize::Normalize() {
  if (den_ < 0) {
    if (num_ == INT64_MIN || den_ == INT64_MIN) return false;
    num_ = -num_;
    den_ = -den_;
  }
  if (num_ == 0) {
    den_ = 1;
    atoms_.clear();
    return true;
  }
  int64_t g = std::gcd(num_, den_);
  if (g > 1) {
    num_ /= g;
    den_ /= g;
  }
  std::sort(atoms_.begin(), atoms_.end());
  std::vector<std::pair<uint32_t, int>> merged;
  for (const auto& [h, e] : atoms_) {
    if (!merged.empty() && merged.back().first == h) {
      merged.back().second += e;
    } else {
      merged.push_back({h, e});
    }
  }
  atoms_.clear();
  for (const auto& a : merged) {
    if (a.second != 0) atoms_.push_back(a);
  }
  return true;
}

std::optional<int64_t> SymSize::const_value() const {
  if (!is_const()) return std::nullopt;
  return num_;
}

std::optional<SymSize> SymSize::Times(const SymSize& o) const {
  SymSize r;
  if (MulOverflow(num_, o.num_, &r.num_) || MulOverflow(den_, o.den_, &r.den_)) {
    // Try cross-reducing first.
    int64_t g1 = std::gcd(num_, o.den_), g2 = std::gcd(o.num_, den_);
    if (g1 == 0 || g2 == 0) return std::nullopt;
    if (MulOverflow(num_ / g1, o.num_ / g2, &r.num_) || MulOverflow(den_ / g2, o.den_ / g1, &r.den_)) {
      return std::nullopt;
    }
  }
  r.atoms_ = atoms_;
  r.atoms_.insert(r.atoms_.end(), o.atoms_.begin(), o.atoms_.end());
  if (!r.Normalize()) return std::nullopt;
  return r;
}

std::optional<SymSize> SymSize::DividedBy(const SymSize& o) const {
  if (o.num_ == 0) return std::nullopt;
  SymSize inv;
  inv.num_ = o.den_;
  inv.den_ = o.num_;
  for (const auto& [h, e] : o.atoms_) inv.atoms_.push_back({h, -e});
  if (!inv.Normalize()) return std::nullopt;
  return Times(inv);
}

std::optional<SymSize> SymSize::Plus(const SymSize& o) const {
  if (num_ == 0) return o;
  if (o.num_ == 0) return *this;
  if (atoms_ != o.atoms_) return std::nullopt;
  // a/b + c/d = (ad + cb) / bd
  int64_t ad, cb, bd, sum;
  if (MulOverflow(num_, o.den_, &ad) || MulOverflow(o.num_, den_, &cb) ||
      MulOverflow(den_, o.den_, &bd) || AddOverflow(ad, cb, &sum)) {
    return std::nullopt;
  }
  SymSize r;
  r.num_ = sum;
  r.den_ = bd;
  r.atoms_ = atoms_;
  if (!r.Normalize()) return std::nullopt;
  return r;
}

std::string SymSize::ToString(const ExprContext* ctx) const {
  auto atom = [&](uint32_t h) -> std::string {
    Expr e(h);
    if (ctx == nullptr || !ctx->contains(e)) return absl::StrCat("#", h);
    std::string s = ctx->ToString(e);
    if (ctx->kind(e) == ExprKind::kVar || ctx->kind(e) == ExprKind::kConst) return s;
    return absl::StrCat("(", s, ")");
  };
  std::vector<std::string> up, down;
  if (num_ != 1 || atoms_.empty()) up.push_back(absl::StrCat(num_));
  if (den_ != 1) down.push_back(absl::StrCat(den_));
  for (const auto& [h, e] : atoms_) {
    std::string a = atom(h);
    if (std::abs(e) != 1) absl::StrAppend(&a, "^", std::abs(e));
    (e > 0 ? up : down).push_back(a);
  }
  std::string s = up.empty() ? "1" : absl::StrJoin(up, "*");
  if (!down.empty()) absl::StrAppend(&s, "/", absl::StrJoin(down, "/"));
  return s;
}

std::vector<Expr> SymSize::atom_exprs() const {
  std::vector<Expr> out;
  for (const auto& [h, e] : atoms_) out.push_back(Expr(h));
  return out;
}

std::optional<int64_t> SymSize::Evaluate(const ExprContext& ctx, const Assignment& assignment) const {
  int64_t num = num_, den = den_;
  for (const auto& [h, e] : atoms_) {
    absl::StatusOr<int64_t> v = EvaluateInt(ctx, Expr(h), assignment);
    if (!v.ok()) return std::nullopt;
    for (int k = 0; k < std::abs(e); ++k) {
      if (MulOverflow(e > 0 ? num : den, *v, e > 0 ? &num : &den)) return std::nullopt;
    }
  }
  if (den == 0 || num % den != 0) return std::nullopt;
  return num / den;
}

// ---- ScalarValue / TensorData ------------------------------------------------------------------
std::optional<double> ScalarValue::AsDouble() const {
  if (!is_int) return real;
  std::optional<int64_t> v = integer.const_value();
  if (!v.has_value() || std::llabs(*v) >= (int64_t{1} << 53)) return std::nullopt;
  return static_cast<double>(*v);
}

std::string ScalarValue::ToString(const ExprContext* ctx) const {
  return is_int ? integer.ToString(ctx) : FormatReal(real);
}

bool operator==(const ScalarValue& a, const ScalarValue& b) {
  if (a.is_int && b.is_int) return a.integer == b.integer;
  if (!a.is_int && !b.is_int) return std::bit_cast<uint64_t>(a.real) == std::bit_cast<uint64_t>(b.real);
  std::optional<double> x = a.AsDouble(), y = b.AsDouble();
  return x.has_value() && y.has_value() && *x == *y;
}

std::string SymShapeToString(const SymShape& s, const ExprContext* ctx) {
  std::vector<std::string> dims;
  for (const SymSize& d : s) dims.push_back(d.ToString(ctx));
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

bool TensorData::DependsOn(Symbol axis_name) const {
  return std::find(deps.begin(), deps.end(), axis_name) != deps.end();
}

std::optional<int> TensorData::rank() const {
  if (!shape.has_value()) return std::nullopt;
  return static_cast<int>(shape->size());
}

std::string TensorData::ShapeString(const ExprContext* ctx) const {
  return shape.has_value() ? SymShapeToString(*shape, ctx) : "?";
}

std::string TensorData::ToString(const ExprContext* ctx) const {
  std::string s = axis.has_value() ? absl::StrCat("axis @", axis->name()) : ShapeString(ctx);
  if (value.has_value()) absl::StrAppend(&s, " = ", value->ToString(ctx));
  if (!deps.empty()) {
    std::vector<std::string> names;
    for (Symbol d : deps) names.emplace_back(d.name());
    absl::StrAppend(&s, " deps{", absl::StrJoin(names, ","), "}");
  }
  if (!error.empty()) absl::StrAppend(&s, " error: ", error);
  return s;
}

bool operator==(const TensorData& a, const TensorData& b) {
  auto same_value = [](const std::optional<ScalarValue>& x, const std::optional<ScalarValue>& y) {
    if (x.has_value() != y.has_value()) return false;
    if (!x.has_value()) return true;
    return x->is_int == y->is_int && *x == *y;
  };
  return a.shape == b.shape && same_value(a.value, b.value) && a.deps == b.deps &&
         a.axis == b.axis && a.error == b.error;
}

void TensorEnv::SetLeafShape(absl::string_view name, const std::vector<int64_t>& shape) {
  SymShape s;
  for (int64_t d : shape) s.push_back(SymSize::Const(d));
  leaves[Symbol(name)] = std::move(s);
}

void TensorEnv::SetLeafSymShape(absl::string_view name, SymShape shape) {
  leaves[Symbol(name)] = std::move(shape);
}

Payload LiteralFor(const ScalarValue& v) {
  PRISM_CHECK(v.concrete(), "LiteralFor a symbolic value");
  if (v.is_int) return Payload::Int(*v.integer.const_value());
  return Payload::Real(v.real);
}

// ---- per-node semantics ------------------------------------------------------------------------
namespace {

std::vector<Symbol> UnionDeps(absl::Span<const TensorData* const> children) {
  std::vector<Symbol> out;
  for (const TensorData* c : children) out.insert(out.end(), c->deps.begin(), c->deps.end());
  std::sort(out.begin(), out.end(), SymbolNameLess());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void RemoveDep(std::vector<Symbol>& deps, Symbol axis) {
  deps.erase(std::remove(deps.begin(), deps.end(), axis), deps.end());
}

void AddDep(std::vector<Symbol>& deps, Symbol axis) {
  if (std::find(deps.begin(), deps.end(), axis) != deps.end()) return;
  deps.push_back(axis);
  std::sort(deps.begin(), deps.end(), SymbolNameLess());
}

std::optional<int64_t> ConcreteInt(const TensorData& d) {
  if (!d.value.has_value() || !d.value->is_int) return std::nullopt;
  return d.value->integer.const_value();
}

// Exact double arithmetic: the result only when no rounding happened.
std::optional<double> ExactMul(double a, double b) {
  double p = a * b;
  if (!std::isfinite(p) || std::fma(a, b, -p) != 0.0) return std::nullopt;
  return p;
}
std::optional<double> ExactAdd(double a, double b) {
  double s = a + b;
  if (!std::isfinite(s)) return std::nullopt;
  double bb = s - a;  // TwoSum error term
  double err = (a - (s - bb)) + (b - bb);
  if (err != 0.0) return std::nullopt;
  return s;
}
std::optional<double> ExactDiv(double a, double b) {
  if (b == 0.0) return std::nullopt;
  double q = a / b;
  if (!std::isfinite(q) || std::fma(q, b, -a) != 0.0) return std::nullopt;
  return q;
}

std::optional<ScalarValue> FoldBinary(TermOp op, const ScalarValue& x, const ScalarValue& y) {
  if (x.is_int && y.is_int && op != TermOp::kDiv) {
    if (op == TermOp::kMul) {
      std::optional<SymSize> p = x.integer.Times(y.integer);
      if (p.has_value()) return ScalarValue::Int(*p);
      return std::nullopt;
    }
    SymSize rhs = y.integer;
    if (op == TermOp::kSub) {
      std::optional<SymSize> neg = rhs.Times(SymSize::Const(-1));
      if (!neg.has_value()) return std::nullopt;
      rhs = *neg;
    }
    std::optional<SymSize> s = x.integer.Plus(rhs);
    if (s.has_value()) return ScalarValue::Int(*s);
    return std::nullopt;
  }
  std::optional<double> a = x.AsDouble(), b = y.AsDouble();
  if (!a.has_value() || !b.has_value()) return std::nullopt;
  std::optional<double> r;
  switch (op) {
    case TermOp::kAdd: r = ExactAdd(*a, *b); break;
    case TermOp::kSub: r = ExactAdd(*a, -*b); break;
    case TermOp::kMul: r = ExactMul(*a, *b); break;
    case TermOp::kDiv: r = ExactDiv(*a, *b); break;
    default: break;
  }
  if (!r.has_value()) return std::nullopt;
  return ScalarValue::Real(*r);
}

std::optional<ScalarValue> FoldUnary(TermOp op, const ScalarValue& x) {
  switch (op) {
    case TermOp::kNeg:
      return FoldBinary(TermOp::kMul, x, ScalarValue::Int(SymSize::Const(-1)));
    case TermOp::kSquare:
      return FoldBinary(TermOp::kMul, x, x);
    case TermOp::kRecip: {
      std::optional<double> a = x.AsDouble();
      if (!a.has_value()) return std::nullopt;
      std::optional<double> r = ExactDiv(1.0, *a);
      if (!r.has_value()) return std::nullopt;
      return ScalarValue::Real(*r);
    }
    case TermOp::kSqrt: {
      std::optional<double> a = x.AsDouble();
      if (!a.has_value() || *a < 0) return std::nullopt;
      double s = std::sqrt(*a);
      if (std::fma(s, s, -*a) != 0.0) return std::nullopt;
      return ScalarValue::Real(s);
    }
    default:
      return std::nullopt;
  }
}

// numpy broadcasting of symbolic shapes: equal dims, or one of them the constant 1.
std::optional<SymShape> Broadcast(const SymShape& a, const SymShape& b, std::string* error,
                                  const ExprContext* ctx) {
  const size_t r = std::max(a.size(), b.size());
  SymShape out(r);
  for (size_t i = 0; i < r; ++i) {
    const SymSize* x = i + a.size() >= r ? &a[i + a.size() - r] : nullptr;
    const SymSize* y = i + b.size() >= r ? &b[i + b.size() - r] : nullptr;
    if (x == nullptr) {
      out[i] = *y;
    } else if (y == nullptr) {
      out[i] = *x;
    } else if (*x == *y || *y == SymSize::Const(1)) {
      out[i] = *x;
    } else if (*x == SymSize::Const(1)) {
      out[i] = *y;
    } else {
      *error = absl::StrCat("cannot broadcast ", SymShapeToString(a, ctx), " with ",
                            SymShapeToString(b, ctx));
      return std::nullopt;
    }
  }
  return out;
}

// A dim operand: a concrete integer in [0, rank).
std::optional<int> DimOperand(const TensorData& d, int rank, absl::string_view what,
                              std::string* error) {
  std::optional<int64_t> v = ConcreteInt(d);
  if (!v.has_value()) {
    *error = absl::StrCat(what, " must be an integer literal");
    return std::nullopt;
  }
  if (*v < 0 || *v >= rank) {
    *error = absl::StrCat(what, " ", *v, " is out of range for rank ", rank);
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

}  // namespace

TensorData ComputeTensorData(TensorEnv& env, Symbol op, const Payload& payload,
                             absl::Span<const TensorData* const> children) {
  TensorData out;
  const ExprContext* ctx = env.ctx;
  // Leaves.
  switch (payload.kind()) {
    case Payload::Kind::kInt:
      out.shape = SymShape{};
      out.value = ScalarValue::Int(SymSize::Const(payload.int_value()));
      return out;
    case Payload::Kind::kReal:
      out.shape = SymShape{};
      out.value = ScalarValue::Real(payload.real_value());
      return out;
    case Payload::Kind::kSym:
      out.shape = SymShape{};
      if (ctx != nullptr) out.value = ScalarValue::Int(SymSize::FromExpr(*ctx, payload.sym()));
      return out;
    case Payload::Kind::kAxis:
      out.axis = payload.axis();
      return out;
    case Payload::Kind::kNone:
      break;
  }
  out.deps = UnionDeps(children);
  for (const TensorData* c : children) {
    if (!c->error.empty()) {
      out.error = "an operand is ill-formed";
      return out;
    }
  }
  const TermOpInfo* info = FindTermOp(op);
  if (info == nullptr) {
    if (children.empty()) {
      if (auto it = env.leaves.find(op); it != env.leaves.end()) out.shape = it->second;
    }
    return out;  // an uninterpreted operator: unknown shape, no value
  }
  if (static_cast<int>(children.size()) != info->arity) {
    out.error = absl::StrCat(info->name, " takes ", info->arity, " operands, found ", children.size());
    return out;
  }
  auto fail = [&](std::string msg) {
    out.error = absl::StrCat(info->name, ": ", msg);
    out.shape.reset();
    out.value.reset();
    return out;
  };
  const TensorData& t = *children[0];
  const std::optional<int> rank = t.rank();
  std::string err;
  switch (info->category) {
    case TermOpCategory::kUnary:
      out.shape = t.shape;
      if (t.value.has_value()) out.value = FoldUnary(info->op, *t.value);
      return out;
    case TermOpCategory::kScale: {
      const TensorData& c = *children[1];
      if (c.shape.has_value() && !c.shape->empty()) return fail("the constant must be a scalar");
      out.shape = t.shape;
      if (t.value.has_value() && c.value.has_value()) {
        out.value = FoldBinary(TermOp::kMul, *t.value, *c.value);
      }
      return out;
    }
    case TermOpCategory::kBinary: {
      const TensorData& u = *children[1];
      if (t.shape.has_value() && u.shape.has_value()) {
        out.shape = Broadcast(*t.shape, *u.shape, &err, ctx);
        if (!out.shape.has_value()) return fail(err);
      }
      if (t.value.has_value() && u.value.has_value()) {
        out.value = FoldBinary(info->op, *t.value, *u.value);
      }
      return out;
    }
    case TermOpCategory::kReduce:
    case TermOpCategory::kNorm: {
      if (!rank.has_value()) return out;
      std::optional<int> d = DimOperand(*children[1], *rank, "dim", &err);
      if (!d.has_value()) return fail(err);
      out.shape = t.shape;
      if (info->category == TermOpCategory::kReduce) (*out.shape)[*d] = SymSize::Const(1);
      if (info->op == TermOp::kRmsNorm) {
        const TensorData& eps = *children[2];
        if (!eps.value.has_value()) return fail("eps must be a constant");
      }
      return out;
    }
    case TermOpCategory::kConcat: {
      const TensorData& u = *children[1];
      if (!rank.has_value() || !u.rank().has_value()) return out;
      if (*rank != *u.rank()) {
        return fail(absl::StrCat("ranks differ: ", t.ShapeString(ctx), " and ", u.ShapeString(ctx)));
      }
      std::optional<int> d = DimOperand(*children[2], *rank, "dim", &err);
      if (!d.has_value()) return fail(err);
      SymShape s = *t.shape;
      for (int i = 0; i < *rank; ++i) {
        if (i != *d && (*t.shape)[i] != (*u.shape)[i]) {
          return fail(absl::StrCat("shapes differ outside dim ", *d, ": ", t.ShapeString(ctx),
                                   " and ", u.ShapeString(ctx)));
        }
      }
      std::optional<SymSize> sum = (*t.shape)[*d].Plus((*u.shape)[*d]);
      if (!sum.has_value()) return out;  // symbolic sum of unlike sizes: shape unknown
      s[*d] = *sum;
      out.shape = std::move(s);
      return out;
    }
    case TermOpCategory::kMatMul: {
      const TensorData& u = *children[1];
      if (!rank.has_value() || !u.rank().has_value()) return out;
      if (*rank < 2 || *u.rank() < 2) return fail("operands must have rank >= 2");
      const SymShape& a = *t.shape;
      const SymShape& b = *u.shape;
      if (a[a.size() - 1] != b[b.size() - 2]) {
        return fail(absl::StrCat("inner dims differ: ", t.ShapeString(ctx), " x ", u.ShapeString(ctx)));
      }
      SymShape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
      std::optional<SymShape> batch = Broadcast(ba, bb, &err, ctx);
      if (!batch.has_value()) return fail(err);
      batch->push_back(a[a.size() - 2]);
      batch->push_back(b[b.size() - 1]);
      out.shape = std::move(batch);
      return out;
    }
    case TermOpCategory::kPartition:
    case TermOpCategory::kReplicate: {
      const bool part = info->category == TermOpCategory::kPartition;
      const TensorData& ax = *children[part ? 2 : 1];
      const TensorData& n = *children[part ? 3 : 2];
      if (!ax.axis.has_value()) return fail("expected an axis (@name)");
      if (!n.value.has_value() || !n.value->is_int) return fail("the degree must be an integer");
      const SymSize degree = n.value->integer;
      if (degree.is_const() && *degree.const_value() < 1) return fail("the degree must be positive");
      auto [it, inserted] = env.extents.try_emplace(*ax.axis, degree);
      if (!inserted && it->second != degree) {
        return fail(absl::StrCat("axis @", ax.axis->name(), " has degree ", degree.ToString(ctx),
                                 " here but ", it->second.ToString(ctx), " elsewhere"));
      }
      if (part) AddDep(out.deps, *ax.axis);
      if (!rank.has_value()) return out;
      out.shape = t.shape;
      if (part) {
        std::optional<int> d = DimOperand(*children[1], *rank, "dim", &err);
        if (!d.has_value()) return fail(err);
        std::optional<SymSize> q = (*t.shape)[*d].DividedBy(degree);
        if (!q.has_value()) return fail("size overflow");
        if ((*t.shape)[*d].is_const() && degree.is_const() && !q->is_const()) {
          return fail(absl::StrCat("dim ", *d, " of size ", (*t.shape)[*d].ToString(ctx),
                                   " is not divisible by ", degree.ToString(ctx)));
        }
        (*out.shape)[*d] = *q;
      }
      return out;
    }
    case TermOpCategory::kCombine:
    case TermOpCategory::kAxisReduce: {
      const bool combine = info->category == TermOpCategory::kCombine;
      const TensorData& ax = *children[combine ? 2 : 1];
      if (!ax.axis.has_value()) return fail("expected an axis (@name)");
      auto it = env.extents.find(*ax.axis);
      if (it == env.extents.end()) {
        return fail(absl::StrCat("axis @", ax.axis->name(), " is not declared by a partition or replicate"));
      }
      RemoveDep(out.deps, *ax.axis);
      if (!rank.has_value()) return out;
      out.shape = t.shape;
      if (combine) {
        std::optional<int> d = DimOperand(*children[1], *rank, "dim", &err);
        if (!d.has_value()) return fail(err);
        std::optional<SymSize> p = (*t.shape)[*d].Times(it->second);
        if (!p.has_value()) return fail("size overflow");
        (*out.shape)[*d] = *p;
      }
      return out;
    }
    case TermOpCategory::kAux: {
      // A size or a dim is a shape fact, the same in every block (per-block shapes are
      // uniform), so it depends on no axis even when its operand does.
      out.deps.clear();
      out.shape = SymShape{};
      if (!rank.has_value()) return out;
      if (info->op == TermOp::kDimSize) {
        std::optional<int> d = DimOperand(*children[1], *rank, "dim", &err);
        if (!d.has_value()) return fail(err);
        out.value = ScalarValue::Int((*t.shape)[*d]);
      } else {  // dimof: a signed dim normalized for the operand's rank
        std::optional<int64_t> k = ConcreteInt(*children[1]);
        if (!k.has_value()) return fail("the dim must be an integer literal");
        if (*k < -*rank || *k >= *rank) {
          return fail(absl::StrCat("dim ", *k, " is out of range for rank ", *rank));
        }
        out.value = ScalarValue::Int(SymSize::Const(*k < 0 ? *k + *rank : *k));
      }
      return out;
    }
  }
  return out;
}

std::vector<TensorData> ComputeTermData(TensorEnv& env, const Term& term) {
  std::vector<TensorData> data(term.size());
  for (uint32_t i = 0; i < term.size(); ++i) {
    const TermNode& n = term.node(i);
    std::vector<const TensorData*> kids;
    for (uint32_t c : n.children) kids.push_back(&data[c]);
    data[i] = ComputeTensorData(env, n.op, n.payload, kids);
  }
  return data;
}

void DeclareAxes(TensorEnv& env, const Term& term) {
  // Computing the data declares every partition/replicate's extent.
  (void)ComputeTermData(env, term);
}

// ---- TensorAnalysis ----------------------------------------------------------------------------
void TensorAnalysis::Diagnose(std::string message) {
  if (diagnostics_.size() >= 100) return;
  if (!origin_.empty()) message = absl::StrCat(origin_, ": ", message);
  if (diagnostic_set_.insert(message).second) diagnostics_.push_back(std::move(message));
}

TensorData TensorAnalysis::Make(const EGraph& g, const ENode& node) {
  std::vector<const TensorData*> kids;
  for (EClassId c : node.children) kids.push_back(&data(g.Find(c)));
  TensorData d = ComputeTensorData(env_, node.op, node.payload, kids);
  if (!d.error.empty() && d.error != "an operand is ill-formed") {
    std::string rendered(node.op.name());
    for (EClassId c : node.children) {
      absl::StrAppend(&rendered, " ", data(g.Find(c)).ToString(env_.ctx));
    }
    Diagnose(absl::StrCat("ill-formed node (", rendered, "): ", d.error));
  }
  return d;
}

MergeResult TensorAnalysis::Join(TensorData& into, const TensorData& from) {
  const TensorData before = into;
  if (!into.shape.has_value()) {
    into.shape = from.shape;
  } else if (from.shape.has_value() && *into.shape != *from.shape) {
    Diagnose(absl::StrCat("merged classes with different shapes ", into.ShapeString(env_.ctx),
                          " and ", from.ShapeString(env_.ctx)));
  }
  if (!into.value.has_value()) {
    into.value = from.value;
  } else if (from.value.has_value() && !(*into.value == *from.value)) {
    Diagnose(absl::StrCat("merged classes with different constants ", into.value->ToString(env_.ctx),
                          " and ", from.value->ToString(env_.ctx)));
  }
  for (Symbol d : from.deps) AddDep(into.deps, d);
  if (!into.axis.has_value()) {
    into.axis = from.axis;
  } else if (from.axis.has_value() && *into.axis != *from.axis) {
    Diagnose(absl::StrCat("merged different axes @", into.axis->name(), " and @", from.axis->name()));
  }
  if (!into.error.empty() && from.error.empty()) into.error.clear();
  return MergeResult{!(into == before), !(into == from)};
}

EClassId TensorAnalysis::EnsureLiteral(EGraph& g, EClassId id) {
  const EClassId root = g.Find(id);
  const std::optional<ScalarValue> value = data(root).value;
  if (!value.has_value() || !value->concrete()) return EClassId::Invalid();
  const Payload lit = LiteralFor(*value);
  const Symbol lit_op = LeafOpFor(lit.kind());
  // Copies: adding nodes below may reallocate the class storage.
  const std::vector<ENode> nodes = g.eclass(root).nodes;
  const std::vector<EClassId> node_ids = g.eclass(root).node_ids;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k].op == lit_op && nodes[k].payload == lit) return node_ids[k];
  }
  if (!folding_.insert(root.value()).second) return EClassId::Invalid();
  EClassId result = EClassId::Invalid();
  for (size_t k = 0; k < nodes.size() && !result.valid(); ++k) {
    const ENode n = g.Canonicalize(nodes[k]);
    if (!n.payload.is_none()) continue;
    bool cyclic = false;
    std::vector<const TensorData*> kids;
    for (EClassId c : n.children) {
      cyclic |= folding_.contains(g.Find(c).value());
      kids.push_back(&data(g.Find(c)));
    }
    if (cyclic) continue;
    TensorData d = ComputeTensorData(env_, n.op, n.payload, kids);
    if (!d.value.has_value() || !(*d.value == *value)) continue;
    // The justifying node: the same operator over the children's literals (where they have
    // one), so that the fold step evaluates from literals and shapes only.
    ENode just{n.op, n.payload, {}};
    for (EClassId c : n.children) {
      EClassId child_literal = EnsureLiteral(g, c);
      just.children.push_back(child_literal.valid() ? child_literal : g.Find(c));
    }
    const EClassId jid = g.AddUncanonical(just);
    const EClassId lid = g.AddUncanonical(ENode{lit_op, lit, {}});
    g.Union(jid, lid, Justification::Analysis("const-fold"));
    result = lid;
  }
  folding_.erase(root.value());
  return result;
}

void TensorAnalysis::Modify(EGraph& g, EClassId id) { (void)EnsureLiteral(g, id); }

std::string TensorAnalysis::Describe(EClassId id) const { return data(id).ToString(env_.ctx); }

}  // namespace prism::equiv
