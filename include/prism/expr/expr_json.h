// JSON helpers for expressions (nlohmann::json). An expression is stored as its printed
// syntax (a JSON string); a plain JSON integer is accepted as a constant.
//
//   nlohmann::json j = ExprToJson(ctx, smem);            // "S * (M * (K floordiv F)) * 2"
//   PRISM_ASSIGN_OR_RETURN(Expr e, ExprFromJson(ctx, j));
#ifndef PRISM_EXPR_EXPR_JSON_H_
#define PRISM_EXPR_EXPR_JSON_H_

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "prism/expr/expr.h"
#include "prism/expr/parse.h"

namespace prism {

nlohmann::json ExprToJson(const ExprContext& ctx, Expr e);
// InvalidArgument "expected a string (expression) or an integer, found <type>" or the
// parser's error.
absl::StatusOr<Expr> ExprFromJson(ExprContext& ctx, const nlohmann::json& j,
                                  const ParseOptions& options = {});

}  // namespace prism

#endif  // PRISM_EXPR_EXPR_JSON_H_
