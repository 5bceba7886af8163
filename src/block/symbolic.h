// Private helpers for the block module's symbolic extents: exact division of canonical
// polynomials, products, constant extraction and printing of symbolic shapes.
//
//   Expr e = ExactDiv(ctx, ctx.Mul(gz, ctx.Const(64)), gz);   // 64
//   Expr t = ExactDiv(ctx, ctx.Const(4096), f);               // 4096 floordiv F
#ifndef PRISM_SRC_BLOCK_SYMBOLIC_H_
#define PRISM_SRC_BLOCK_SYMBOLIC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "prism/expr/expr.h"

namespace prism::internal {

// a / b as a simplified expression: the exact polynomial quotient when every term of a is a
// multiple of b (b a single term: coefficient and atoms), else Simplify(a floordiv b). Equal
// to floor(a / b) wherever b divides a (the divisibility constraints guarantee that).
Expr ExactDiv(ExprContext& ctx, Expr a, Expr b);

// a / b when it is an exact polynomial division (every term of a is a multiple of the single
// term b), else nullopt. A value means b divides a for every assignment (b ≠ 0).
std::optional<Expr> PolyDiv(ExprContext& ctx, Expr a, Expr b);

// Simplified product of the factors (1 for none).
Expr Product(ExprContext& ctx, absl::Span<const Expr> factors);

// The value of `e` if it simplifies to a constant.
std::optional<int64_t> ConstValueOf(ExprContext& ctx, Expr e);

// True if a and b simplify to the same canonical form.
bool SameExpr(ExprContext& ctx, Expr a, Expr b);

// "[16, 4096 floordiv F]".
std::string ShapeString(const ExprContext& ctx, absl::Span<const Expr> shape);

}  // namespace prism::internal

#endif  // PRISM_SRC_BLOCK_SYMBOLIC_H_
