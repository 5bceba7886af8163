// The exact simplifier: rewrites an expression to a canonical form that is equal to it for
// every integer assignment (integers are unbounded, as in the SMT layer), using only sound
// identities and never introducing a division that is not exact.
//
// Canonical form of an integer expression: a polynomial with int64 coefficients over atoms,
//   sum of terms  c * a1 * a2 * ... * ak   (+ constant, printed last),
// where atoms are variables and FloorDiv/Mod/Min/Max nodes whose operands are themselves
// canonical. Terms are sorted by degree (descending), then by the atoms' structural order
// (ExprContext::StructuralCompare); like terms are merged and zero terms dropped; coefficient 1
// is omitted; a term is Mul(Const(c), a1, ..., ak) with the atoms sorted (x*x stays Mul(x, x)).
// Hence two expressions that are equal as polynomials over their atoms simplify to the same
// handle, independently of construction order.
//
// Atom rules (c, c1, c2 are nonzero constants; P, Q polynomials; all sound over Z):
//   constants fold with floor semantics: floordiv(-7, 2) = -4, mod(-7, 2) = 1, mod(7, -2) = -1
//   floordiv(P, 1) = P; floordiv(P, -1) = -P; mod(P, 1) = mod(P, -1) = 0
//   floordiv(c*Q + R, c) = Q + floordiv(R, c)   (terms whose coefficient c divides move out)
//   mod(c*Q + R, c) = mod(R, c)                 (e.g. mod(x * 8, 8) = 0)
//   floordiv(floordiv(P, c1), c2) = floordiv(P, c1 * c2)      for c1, c2 > 0
//   mod(mod(P, c1), c2) = mod(P, c2)                          for c1, c2 > 0, c2 | c1
//   min(P, Q) / max(P, Q): equal → P; constant difference → the smaller/larger; otherwise the
//   operands are sorted (structural order)
// Division by the constant 0 is never folded (the node stays, evaluation reports it).
// Boolean rules: a comparison becomes `lhs OP rhs` with D = rhs - lhs split into positive
// terms (right) and negative terms (left); Lt(a, b) becomes Le(a + 1, b); the non-constant
// coefficients of D are divided by their gcd (rounding the constant soundly: 2x <= 7 → x <= 3;
// 2x == 7 → false); Eq/Ne are oriented so that the leading term is on the left; constant
// comparisons fold. And/Or flatten, drop neutral elements, short-circuit on absorbing ones,
// dedupe and sort; not(not p) = p; not of a comparison is the complementary comparison.
//
// Contract on errors: wherever the input evaluates without error (eval.h), the result
// evaluates to the same value. The result may be defined where the input is not (a term such
// as 0 * (x floordiv 0) disappears), and, because products are expanded, may overflow int64 in
// evaluation where the factored input did not. If a coefficient would overflow int64 during
// simplification, the affected node is kept as an atom (with simplified operands).
//
//   Expr e = *ParseExpr(ctx, "(x + 1) * (x - 1) - x * x");
//   ctx.ToString(Simplify(ctx, e));   // "-1"
#ifndef PRISM_EXPR_SIMPLIFY_H_
#define PRISM_EXPR_SIMPLIFY_H_

#include "prism/expr/expr.h"

namespace prism {

// The canonical form of `e` (see the file comment). Idempotent: Simplify(Simplify(e)) ==
// Simplify(e). Does not depend on variable domains.
Expr Simplify(ExprContext& ctx, Expr e);

// True if `a` and `b` have the same canonical form (a sound but incomplete equality test:
// false means "not proved equal", e.g. for floordiv identities the rules above do not cover).
bool ProvablyEqual(ExprContext& ctx, Expr a, Expr b);

}  // namespace prism

#endif  // PRISM_EXPR_SIMPLIFY_H_
