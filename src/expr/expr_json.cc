#include "prism/expr/expr_json.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace prism {

nlohmann::json ExprToJson(const ExprContext& ctx, Expr e) { return ctx.ToString(e); }

absl::StatusOr<Expr> ExprFromJson(ExprContext& ctx, const nlohmann::json& j,
                                  const ParseOptions& options) {
  if (j.is_string()) return ParseExpr(ctx, j.get<std::string>(), options);
  if (j.is_number_integer() &&
      !(j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return ctx.Const(j.get<int64_t>());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected a string (expression) or an integer, found ", j.type_name(), " ", j.dump()));
}

}  // namespace prism
