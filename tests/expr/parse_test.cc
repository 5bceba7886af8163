// The parser: accepted syntax (text → printed form) and exact error messages.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/expr/expr.h"
#include "prism/expr/expr_json.h"
#include "prism/expr/parse.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;

class ParseTest : public ::testing::Test {
 protected:
  ParseTest() {
    for (const char* name : {"x", "y", "z", "K", "F", "M", "N", "S", "g", "T", "_t1"}) {
      PRISM_CHECK(ctx_.Var(name, *Domain::Range(-100000, 100000)).ok());
    }
  }
  ExprContext ctx_;
};

TEST_F(ParseTest, AcceptedSyntax) {
  struct Row { const char* text; const char* printed; };
  const std::vector<Row> rows = {
      {"42", "42"},
      {"  -42 ", "-42"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"9223372036854775807", "9223372036854775807"},
      {"x", "x"},
      {"_t1*2", "_t1 * 2"},
      {"x+y+z", "x + y + z"},
      {"x+(y+z)", "x + (y + z)"},
      {"x - y - z", "x - y - z"},
      {"x - 3", "x - 3"},
      {"x - -3", "x + 3"},
      {"x - 2*y", "x - 2 * y"},
      {"x - y*z", "x - y * z"},
      {"x - (y*z)", "x - (y * z)"},
      {"-x", "-1 * x"},
      {"-x * y", "(-1 * x) * y"},
      {"--x", "-1 * (-1 * x)"},
      {"-3 * x", "-3 * x"},
      {"2 * x * y", "2 * x * y"},
      {"x * y floordiv 2", "(x * y) floordiv 2"},
      {"x floordiv 2 * y", "(x floordiv 2) * y"},
      {"x floordiv y floordiv z", "(x floordiv y) floordiv z"},
      {"x mod 4 + 1", "x mod 4 + 1"},
      {"min(x, y)", "min(x, y)"},
      {"max(x + 1, min(y, 2 * z))", "max(x + 1, min(y, 2 * z))"},
      {"x > y", "y < x"},
      {"x >= y", "y <= x"},
      {"x == y and y != z", "x == y and y != z"},
      {"not x < y or true", "not x < y or true"},
      {"not (x < y or false)", "not (x < y or false)"},
      {"(x < y)", "x < y"},
      {"x < y and (y < z and z < 3)", "x < y and (y < z and z < 3)"},
      {"S * (M * (K floordiv F) + (K floordiv F) * (N floordiv g)) * 2",
       "S * (M * (K floordiv F) + (K floordiv F) * (N floordiv g)) * 2"},
      {"(K floordiv F) mod 16 == 0", "(K floordiv F) mod 16 == 0"},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx_, r.text));
    EXPECT_EQ(ctx_.ToString(e), r.printed) << r.text;
  }
}

TEST_F(ParseTest, Errors) {
  struct Row { const char* text; const char* message; };
  const std::vector<Row> rows = {
      {"", "at offset 0: found end of input, expected an expression"},
      {"S * (M + )", "at offset 9: found ')', expected an expression"},
      {"x +", "at offset 3: found end of input, expected an expression"},
      {"(x + 1", "at offset 6: found end of input, expected ')'"},
      {"x y", "at offset 2: found 'y', expected an operator or end of input"},
      {"x # 2", "at offset 2: found '#', expected an operator or end of input"},
      {"x = 2", "at offset 2: found '=', expected an operator or end of input"},
      {"Q + 1", "at offset 0: unknown variable 'Q' (declare it as a parameter)"},
      {"x + Q", "at offset 4: unknown variable 'Q' (declare it as a parameter)"},
      {"x < y < z", "at offset 6: found '<', expected 'and' between comparisons (comparisons do not chain)"},
      {"1 + (x < 1)", "at offset 4: found '(x < 1)', expected an integer expression, not a boolean"},
      {"(x < 1) * 2", "at offset 0: found '(x < 1)', expected an integer expression, not a boolean"},
      {"x and y", "at offset 0: found 'x', expected a boolean expression, not an integer"},
      {"not x", "at offset 4: found 'x', expected a boolean expression, not an integer"},
      {"min(x < 1, y)", "at offset 4: found 'x < 1', expected an integer expression, not a boolean"},
      {"min(x)", "at offset 5: found ')', expected ',' (min takes 2 arguments)"},
      {"max(x, y, z)", "at offset 8: found ',', expected ')' (max takes 2 arguments)"},
      {"min x", "at offset 4: found 'x', expected '(' after 'min'"},
      {"x + mod", "at offset 4: found 'mod', expected an expression"},
      {"99999999999999999999", "at offset 0: integer literal 99999999999999999999 does not fit in 64 bits"},
      {"9223372036854775808", "at offset 0: integer literal 9223372036854775808 does not fit in 64 bits"},
      {"x - true", "at offset 4: found 'true', expected an integer expression, not a boolean"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(ParseExpr(ctx_, r.text),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)))
        << r.text;
  }
}

TEST_F(ParseTest, SortedEntryPoints) {
  EXPECT_OK(ParseIntExpr(ctx_, "x + 1"));
  EXPECT_OK(ParseBoolExpr(ctx_, "x < 1"));
  EXPECT_THAT(ParseIntExpr(ctx_, " x < 1 "),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "at offset 1: found 'x < 1', expected an integer expression, not a boolean"));
  EXPECT_THAT(ParseBoolExpr(ctx_, "x + 1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "at offset 0: found 'x + 1', expected a boolean expression, not an integer"));
}

TEST_F(ParseTest, DeclareUnknown) {
  ParseOptions options;
  options.declare_unknown = *Domain::PowerOfTwo(1, 64);
  ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx_, "x + new_var", options));
  EXPECT_EQ(ctx_.ToString(e), "x + new_var");
  EXPECT_EQ(ctx_.var_domain(*ctx_.FindVar("new_var")).ToString(), "pow2(1, 64)");
  EXPECT_EQ(ctx_.var_domain(*ctx_.FindVar("x")).ToString(), "range(-100000, 100000)");
}

TEST_F(ParseTest, Json) {
  ASSERT_OK_AND_ASSIGN(Expr e, ExprFromJson(ctx_, nlohmann::json("(K floordiv F) * 2")));
  EXPECT_EQ(ExprToJson(ctx_, e), nlohmann::json("(K floordiv F) * 2"));
  ASSERT_OK_AND_ASSIGN(Expr c, ExprFromJson(ctx_, nlohmann::json(7)));
  EXPECT_EQ(c, ctx_.Const(7));
  EXPECT_THAT(ExprFromJson(ctx_, nlohmann::json::parse("[1]")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "expected a string (expression) or an integer, found array [1]"));
  EXPECT_THAT(ExprFromJson(ctx_, nlohmann::json(1.5)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "expected a string (expression) or an integer, found number 1.5"));
}

}  // namespace
}  // namespace prism
