#include "symbolic.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/expr/simplify.h"

namespace prism::internal {
namespace {

// A canonical term c · a1 · ... · ak (simplify.h); false for a sum.
bool AsTerm(const ExprContext& ctx, Expr e, int64_t* coef, std::vector<Expr>* atoms) {
  *coef = 1;
  atoms->clear();
  switch (ctx.kind(e)) {
    case ExprKind::kConst: *coef = ctx.const_value(e); return true;
    case ExprKind::kAdd: return false;
    case ExprKind::kMul:
      for (Expr op : ctx.operands(e)) {
        if (ctx.is_const(op)) {
          *coef *= ctx.const_value(op);
        } else {
          atoms->push_back(op);
        }
      }
      return true;
    default: atoms->push_back(e); return true;
  }
}

}  // namespace

Expr ExactDiv(ExprContext& ctx, Expr a, Expr b) {
  std::optional<Expr> q = PolyDiv(ctx, a, b);
  return q.has_value() ? *q : Simplify(ctx, ctx.FloorDiv(a, b));
}

std::optional<Expr> PolyDiv(ExprContext& ctx, Expr a, Expr b) {
  const Expr sa = Simplify(ctx, a);
  const Expr sb = Simplify(ctx, b);
  if (ctx.is_const(sb) && ctx.const_value(sb) == 0) return std::nullopt;
  if (sa == sb) return ctx.Const(1);
  int64_t cb = 0;
  std::vector<Expr> bm;
  const std::optional<Expr> fallback;
  if (!AsTerm(ctx, sb, &cb, &bm) || cb == 0) return fallback;
  std::vector<Expr> terms;
  if (ctx.kind(sa) == ExprKind::kAdd) {
    for (Expr t : ctx.operands(sa)) terms.push_back(t);
  } else {
    terms.push_back(sa);
  }
  std::vector<Expr> quotient;
  for (Expr t : terms) {
    int64_t ct = 0;
    std::vector<Expr> tm;
    if (!AsTerm(ctx, t, &ct, &tm) || ct % cb != 0) return fallback;
    for (Expr atom : bm) {
      auto it = std::find(tm.begin(), tm.end(), atom);
      if (it == tm.end()) return fallback;
      tm.erase(it);
    }
    tm.push_back(ctx.Const(ct / cb));
    quotient.push_back(ctx.Mul(tm));
  }
  return Simplify(ctx, ctx.Add(quotient));
}

Expr Product(ExprContext& ctx, absl::Span<const Expr> factors) {
  return Simplify(ctx, ctx.Mul(factors));
}

std::optional<int64_t> ConstValueOf(ExprContext& ctx, Expr e) {
  const Expr s = Simplify(ctx, e);
  if (ctx.is_const(s)) return ctx.const_value(s);
  return std::nullopt;
}

bool SameExpr(ExprContext& ctx, Expr a, Expr b) { return ProvablyEqual(ctx, a, b); }

std::string ShapeString(const ExprContext& ctx, absl::Span<const Expr> shape) {
  std::vector<std::string> dims;
  for (Expr e : shape) dims.push_back(e.valid() ? ctx.ToString(e) : "?");
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

}  // namespace prism::internal
