// Parser for the printed expression syntax (documented in expr.h), so that families can be
// written by hand in JSON: "S * (M * (K floordiv F) + (K floordiv F) * (N floordiv g)) * 2".
//
//   PRISM_ASSIGN_OR_RETURN(Expr e, ParseExpr(ctx, "min(T, 256) * 2"));
//
// Errors are InvalidArgument with the byte offset (0-based) into the text, what was found and
// what was expected, e.g.
//   "at offset 7: found ')', expected an expression"
//   "at offset 0: unknown variable 'Q' (declare it as a parameter)"
//   "at offset 4: found 'x < 1', expected an integer expression, not a boolean"
//   "at offset 2: integer literal 99999999999999999999 does not fit in 64 bits"
// Parsing never simplifies: parse(print(e)) == e for every expression e.
#ifndef PRISM_EXPR_PARSE_H_
#define PRISM_EXPR_PARSE_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/expr/domain.h"
#include "prism/expr/expr.h"

namespace prism {

struct ParseOptions {
  // If set, identifiers that are not declared in the context are declared with this domain;
  // otherwise they are an error ("unknown variable").
  std::optional<Domain> declare_unknown;
};

// Parses an expression of either sort.
absl::StatusOr<Expr> ParseExpr(ExprContext& ctx, absl::string_view text,
                               const ParseOptions& options = {});
// Parses and requires the given sort ("expected an integer expression" / "a boolean ...").
absl::StatusOr<Expr> ParseIntExpr(ExprContext& ctx, absl::string_view text,
                                  const ParseOptions& options = {});
absl::StatusOr<Expr> ParseBoolExpr(ExprContext& ctx, absl::string_view text,
                                   const ParseOptions& options = {});

}  // namespace prism

#endif  // PRISM_EXPR_PARSE_H_
