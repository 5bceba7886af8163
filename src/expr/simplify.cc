// The exact simplifier (simplify.h): integer expressions become polynomials over atoms,
// booleans are normalized comparison by comparison.
#include "prism/expr/simplify.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "prism/base/check.h"
#include "prism/expr/eval.h"

namespace prism {
namespace {

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();

// A product of atoms, sorted by StructuralCompare, with repetition (x*x = {x, x}).
using Monomial = std::vector<Expr>;

// Canonical monomial order: higher degree first, then atoms lexicographically. The constant
// monomial (degree 0) comes last.
struct MonomialLess {
  const ExprContext* ctx;
  bool operator()(const Monomial& a, const Monomial& b) const {
    if (a.size() != b.size()) return a.size() > b.size();
    for (size_t i = 0; i < a.size(); ++i) {
      const int c = ctx->StructuralCompare(a[i], b[i]);
      if (c != 0) return c < 0;
    }
    return false;
  }
};

// Sum of coefficient * monomial; no zero coefficients.
using Poly = std::map<Monomial, int64_t, MonomialLess>;

class Simplifier {
 public:
  explicit Simplifier(ExprContext& ctx) : ctx_(ctx) {}

  Expr Run(Expr e) {
    return ctx_.sort(e) == Sort::kBool ? SimplifyBool(e) : ToExpr(SimplifyInt(e));
  }

 private:
  // ---- polynomial arithmetic (nullopt on int64 overflow) --------------------------------
  Poly Empty() const { return Poly(MonomialLess{&ctx_}); }
  Poly ConstPoly(int64_t c) const {
    Poly p = Empty();
    if (c != 0) p.emplace(Monomial{}, c);
    return p;
  }
  Poly AtomPoly(Expr atom) const {
    Poly p = Empty();
    p.emplace(Monomial{atom}, 1);
    return p;
  }
  static bool IsConst(const Poly& p) { return p.empty() || (p.size() == 1 && p.begin()->first.empty()); }
  static int64_t ConstValue(const Poly& p) { return p.empty() ? 0 : p.begin()->second; }
  static int64_t ConstTerm(const Poly& p) {
    auto it = p.find(Monomial{});
    return it == p.end() ? 0 : it->second;
  }

  static bool AddTerm(Poly& p, const Monomial& m, int64_t c) {
    if (c == 0) return true;
    auto [it, inserted] = p.emplace(m, c);
    if (inserted) return true;
    int64_t sum;
    if (__builtin_add_overflow(it->second, c, &sum)) return false;
    if (sum == 0) {
      p.erase(it);
    } else {
      it->second = sum;
    }
    return true;
  }

  static std::optional<Poly> Sum(Poly a, const Poly& b) {
    for (const auto& [m, c] : b) {
      if (!AddTerm(a, m, c)) return std::nullopt;
    }
    return a;
  }

  std::optional<Poly> Scale(const Poly& a, int64_t k) const {
    Poly out = Empty();
    if (k == 0) return out;
    for (const auto& [m, c] : a) {
      int64_t v;
      if (__builtin_mul_overflow(c, k, &v)) return std::nullopt;
      out.emplace(m, v);
    }
    return out;
  }

  std::optional<Poly> Product(const Poly& a, const Poly& b) const {
    Poly out = Empty();
    for (const auto& [ma, ca] : a) {
      for (const auto& [mb, cb] : b) {
        int64_t c;
        if (__builtin_mul_overflow(ca, cb, &c)) return std::nullopt;
        Monomial m;
        m.reserve(ma.size() + mb.size());
        std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m),
                   [&](Expr x, Expr y) { return ctx_.StructuralCompare(x, y) < 0; });
        if (!AddTerm(out, m, c)) return std::nullopt;
      }
    }
    return out;
  }

  std::optional<Poly> Difference(const Poly& a, const Poly& b) const {
    std::optional<Poly> nb = Scale(b, -1);
    if (!nb.has_value()) return std::nullopt;
    return Sum(a, *nb);
  }

  // ---- polynomial → expression ------------------------------------------------------------
  Expr TermExpr(const Monomial& m, int64_t c) {
    if (m.empty()) return ctx_.Const(c);
    if (c == 1) return m.size() == 1 ? m[0] : ctx_.Mul(m);
    std::vector<Expr> ops;
    ops.reserve(m.size() + 1);
    ops.push_back(ctx_.Const(c));
    ops.insert(ops.end(), m.begin(), m.end());
    return ctx_.Mul(ops);
  }

  Expr ToExpr(const Poly& p) {
    std::vector<Expr> terms;
    terms.reserve(p.size());
    for (const auto& [m, c] : p) terms.push_back(TermExpr(m, c));
    return ctx_.Add(terms);  // 0 terms → 0, 1 term → the term
  }

  // ---- integer expressions -----------------------------------------------------------------
  Poly SimplifyInt(Expr e) {
    auto it = int_memo_.find(e);
    if (it != int_memo_.end()) return it->second;
    Poly p = SimplifyIntUncached(e);
    int_memo_.emplace(e, p);
    return p;
  }

  // The node `e` rebuilt from simplified operands, as an atom (used when a coefficient would
  // overflow: sound, just not canonical).
  Poly OpaqueAtom(Expr e) {
    std::vector<Expr> ops;
    for (Expr op : ctx_.operands(e)) ops.push_back(ToExpr(SimplifyInt(op)));
    return AtomPoly(ctx_.Make(ctx_.kind(e), ops));
  }

  Poly SimplifyIntUncached(Expr e) {
    switch (ctx_.kind(e)) {
      case ExprKind::kConst: return ConstPoly(ctx_.const_value(e));
      case ExprKind::kVar: return AtomPoly(e);
      case ExprKind::kAdd: {
        Poly acc = Empty();
        for (Expr op : ctx_.operands(e)) {
          std::optional<Poly> next = Sum(std::move(acc), SimplifyInt(op));
          if (!next.has_value()) return OpaqueAtom(e);
          acc = std::move(*next);
        }
        return acc;
      }
      case ExprKind::kMul: {
        Poly acc = ConstPoly(1);
        for (Expr op : ctx_.operands(e)) {
          std::optional<Poly> next = Product(acc, SimplifyInt(op));
          if (!next.has_value()) return OpaqueAtom(e);
          acc = std::move(*next);
        }
        return acc;
      }
      case ExprKind::kFloorDiv:
      case ExprKind::kMod: {
        const bool mod = ctx_.kind(e) == ExprKind::kMod;
        Poly a = SimplifyInt(ctx_.operand(e, 0));
        Poly b = SimplifyInt(ctx_.operand(e, 1));
        if (IsConst(b) && ConstValue(b) != 0) {
          return mod ? ModByConst(a, ConstValue(b)) : FloorDivByConst(a, ConstValue(b));
        }
        Expr ea = ToExpr(a), eb = ToExpr(b);
        return AtomPoly(mod ? ctx_.Mod(ea, eb) : ctx_.FloorDiv(ea, eb));
      }
      case ExprKind::kMin:
      case ExprKind::kMax: {
        const bool is_min = ctx_.kind(e) == ExprKind::kMin;
        Poly a = SimplifyInt(ctx_.operand(e, 0));
        Poly b = SimplifyInt(ctx_.operand(e, 1));
        std::optional<Poly> d = Difference(b, a);
        if (d.has_value() && IsConst(*d)) {
          const bool b_ge_a = ConstValue(*d) >= 0;
          return (is_min == b_ge_a) ? a : b;
        }
        Expr ea = ToExpr(a), eb = ToExpr(b);
        if (ctx_.StructuralCompare(eb, ea) < 0) std::swap(ea, eb);
        return AtomPoly(is_min ? ctx_.Min(ea, eb) : ctx_.Max(ea, eb));
      }
      default:
        PRISM_UNREACHABLE("SimplifyInt of ", KindName(ctx_.kind(e)));
    }
  }

  // floor(a / c), c != 0: floor((c*Q + R) / c) = Q + floor(R / c).
  Poly FloorDivByConst(const Poly& a, int64_t c) {
    if (IsConst(a)) {
      const int64_t v = ConstValue(a);
      if (v == kMin64 && c == -1) return AtomPoly(ctx_.FloorDiv(ToExpr(a), ctx_.Const(c)));
      return ConstPoly(FloorDivInt(v, c));
    }
    if (c == 1) return a;
    if (c == -1) {
      std::optional<Poly> neg = Scale(a, -1);
      if (neg.has_value()) return *neg;
      return AtomPoly(ctx_.FloorDiv(ToExpr(a), ctx_.Const(c)));
    }
    Poly q = Empty(), r = Empty();
    for (const auto& [m, coef] : a) {
      if (coef % c == 0) {
        q.emplace(m, coef / c);
      } else {
        r.emplace(m, coef);
      }
    }
    if (r.empty()) return q;
    Poly rest = Empty();
    if (IsConst(r)) {
      rest = ConstPoly(FloorDivInt(ConstValue(r), c));
    } else if (std::optional<Expr> inner = SingleAtom(r, ExprKind::kFloorDiv); inner.has_value() && c > 0) {
      // floor(floor(x / c1) / c) = floor(x / (c1 * c)) for c1, c > 0.
      const int64_t c1 = ConstDivisor(*inner);
      int64_t cc;
      if (c1 > 0 && !__builtin_mul_overflow(c1, c, &cc)) {
        rest = FloorDivByConst(SimplifyInt(ctx_.operand(*inner, 0)), cc);
      } else {
        rest = AtomPoly(ctx_.FloorDiv(ToExpr(r), ctx_.Const(c)));
      }
    } else {
      rest = AtomPoly(ctx_.FloorDiv(ToExpr(r), ctx_.Const(c)));
    }
    std::optional<Poly> sum = Sum(std::move(q), rest);
    PRISM_CHECK(sum.has_value(), "floordiv split cannot overflow: the monomials are disjoint");
    return *sum;
  }

  // a mod c, c != 0: (c*Q + R) mod c = R mod c.
  Poly ModByConst(const Poly& a, int64_t c) {
    if (c == 1 || c == -1) return Empty();
    Poly r = Empty();
    for (const auto& [m, coef] : a) {
      if (coef % c != 0) r.emplace(m, coef);
    }
    if (IsConst(r)) return ConstPoly(FloorModInt(ConstValue(r), c));
    if (std::optional<Expr> inner = SingleAtom(r, ExprKind::kMod); inner.has_value() && c > 0) {
      // (x mod c1) mod c = x mod c for c1, c > 0 with c | c1.
      const int64_t c1 = ConstDivisor(*inner);
      if (c1 > 0 && c1 % c == 0) return ModByConst(SimplifyInt(ctx_.operand(*inner, 0)), c);
    }
    return AtomPoly(ctx_.Mod(ToExpr(r), ctx_.Const(c)));
  }

  // If p is exactly one atom of `kind` with coefficient 1, that atom.
  std::optional<Expr> SingleAtom(const Poly& p, ExprKind kind) const {
    if (p.size() != 1) return std::nullopt;
    const auto& [m, c] = *p.begin();
    if (c != 1 || m.size() != 1 || ctx_.kind(m[0]) != kind) return std::nullopt;
    return m[0];
  }

  // The constant divisor of a FloorDiv/Mod atom, or 0 if it is not a constant.
  int64_t ConstDivisor(Expr atom) const {
    Expr d = ctx_.operand(atom, 1);
    return ctx_.is_const(d) ? ctx_.const_value(d) : 0;
  }

  // ---- booleans ----------------------------------------------------------------------------
  Expr SimplifyBool(Expr e) {
    auto it = bool_memo_.find(e);
    if (it != bool_memo_.end()) return it->second;
    Expr s = SimplifyBoolUncached(e);
    bool_memo_.emplace(e, s);
    return s;
  }

  Expr SimplifyBoolUncached(Expr e) {
    const ExprKind kind = ctx_.kind(e);
    switch (kind) {
      case ExprKind::kBoolConst: return e;
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe: {
        Poly a = SimplifyInt(ctx_.operand(e, 0));
        Poly b = SimplifyInt(ctx_.operand(e, 1));
        std::optional<Poly> d = Difference(b, a);
        if (d.has_value() && kind == ExprKind::kLt) d = Sum(std::move(*d), ConstPoly(-1));
        const ExprKind out_kind = kind == ExprKind::kLt ? ExprKind::kLe : kind;
        if (d.has_value()) {
          if (std::optional<Expr> c = Comparison(out_kind, *d); c.has_value()) return *c;
        }
        return ctx_.Make(kind, {ToExpr(a), ToExpr(b)});
      }
      case ExprKind::kNot: return Negate(SimplifyBool(ctx_.operand(e, 0)));
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        const bool is_and = kind == ExprKind::kAnd;
        std::vector<Expr> ops;
        for (Expr op : ctx_.operands(e)) {
          Expr s = SimplifyBool(op);
          if (ctx_.kind(s) == kind) {
            for (Expr inner : ctx_.operands(s)) ops.push_back(inner);
          } else if (ctx_.kind(s) == ExprKind::kBoolConst) {
            if (ctx_.bool_value(s) != is_and) return s;  // absorbing
          } else {
            ops.push_back(s);
          }
        }
        std::sort(ops.begin(), ops.end(),
                  [&](Expr x, Expr y) { return ctx_.StructuralCompare(x, y) < 0; });
        ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
        return ctx_.Make(kind, ops);  // 0 operands → neutral element, 1 → the operand
      }
      default:
        PRISM_UNREACHABLE("SimplifyBool of ", KindName(kind));
    }
  }

  // not s, for a simplified s.
  Expr Negate(Expr s) {
    switch (ctx_.kind(s)) {
      case ExprKind::kBoolConst: return ctx_.Bool(!ctx_.bool_value(s));
      case ExprKind::kNot: return ctx_.operand(s, 0);
      case ExprKind::kEq: return ctx_.Ne(ctx_.operand(s, 0), ctx_.operand(s, 1));
      case ExprKind::kNe: return ctx_.Eq(ctx_.operand(s, 0), ctx_.operand(s, 1));
      case ExprKind::kLe: {
        // not (l <= r)  ⟺  r + 1 <= l  ⟺  0 <= l - r - 1.
        Poly l = SimplifyInt(ctx_.operand(s, 0));
        Poly r = SimplifyInt(ctx_.operand(s, 1));
        std::optional<Poly> d = Difference(l, r);
        if (d.has_value()) d = Sum(std::move(*d), ConstPoly(-1));
        if (d.has_value()) {
          if (std::optional<Expr> c = Comparison(ExprKind::kLe, *d); c.has_value()) return *c;
        }
        return ctx_.Not(s);
      }
      default: return ctx_.Not(s);
    }
  }

  // The canonical form of "0 <= d" (kLe), "d == 0" (kEq) or "d != 0" (kNe); nullopt when a
  // coefficient is INT64_MIN (cannot be negated).
  std::optional<Expr> Comparison(ExprKind kind, Poly d) {
    if (IsConst(d)) {
      const int64_t v = ConstValue(d);
      switch (kind) {
        case ExprKind::kLe: return ctx_.Bool(0 <= v);
        case ExprKind::kEq: return ctx_.Bool(v == 0);
        default: return ctx_.Bool(v != 0);
      }
    }
    for (const auto& [m, c] : d) {
      if (c == kMin64) return std::nullopt;
    }
    const int64_t c0 = ConstTerm(d);
    int64_t g = 0;
    for (const auto& [m, c] : d) {
      if (!m.empty()) g = std::gcd(g, std::abs(c));
    }
    Poly n = Empty();
    if (kind == ExprKind::kLe) {
      // 0 <= g*D' + c0  ⟺  0 <= D' + floor(c0 / g).
      for (const auto& [m, c] : d) {
        if (!m.empty()) n.emplace(m, c / g);
      }
      AddTerm(n, Monomial{}, FloorDivInt(c0, g));
    } else {
      // g*D' + c0 == 0 has no integer solution unless g | c0.
      if (c0 % g != 0) return ctx_.Bool(kind == ExprKind::kNe);
      for (const auto& [m, c] : d) n.emplace(m, c / g);
      if (n.begin()->second < 0) {
        for (auto& [m, c] : n) c = -c;
      }
    }
    // Split n = P+ - P-.
    Poly pos = Empty(), neg = Empty();
    for (const auto& [m, c] : n) {
      if (c > 0) {
        pos.emplace(m, c);
      } else {
        neg.emplace(m, -c);
      }
    }
    if (kind == ExprKind::kLe) return ctx_.Le(ToExpr(neg), ToExpr(pos));  // P- <= P+
    return ctx_.Make(kind, {ToExpr(pos), ToExpr(neg)});                    // leading term left
  }

  ExprContext& ctx_;
  absl::flat_hash_map<Expr, Poly> int_memo_;
  absl::flat_hash_map<Expr, Expr> bool_memo_;
};

}  // namespace

Expr Simplify(ExprContext& ctx, Expr e) {
  if (auto it = ctx.simplified_.find(e); it != ctx.simplified_.end()) return it->second;
  const Expr s = Simplifier(ctx).Run(e);
  ctx.simplified_.emplace(e, s);
  ctx.simplified_.emplace(s, s);  // idempotent
  return s;
}

bool ProvablyEqual(ExprContext& ctx, Expr a, Expr b) {
  if (ctx.sort(a) != ctx.sort(b)) return false;
  return Simplify(ctx, a) == Simplify(ctx, b);
}

}  // namespace prism
