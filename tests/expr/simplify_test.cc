// The exact simplifier: a table of inputs and their canonical printed forms, canonicity
// (equal polynomials → the same handle), idempotence and round trip of canonical forms.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/expr/expr.h"
#include "prism/expr/parse.h"
#include "prism/expr/simplify.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

class SimplifyTest : public ::testing::Test {
 protected:
  SimplifyTest() {
    for (const char* name : {"x", "y", "z", "K", "F", "M", "N", "S", "g"}) {
      PRISM_CHECK(ctx_.Var(name, *Domain::Range(-1000, 1000)).ok());
    }
  }
  Expr P(const char* text) {
    absl::StatusOr<Expr> e = ParseExpr(ctx_, text);
    PRISM_CHECK(e.ok(), text, ": ", e.status().message());
    return *e;
  }
  ExprContext ctx_;
};

TEST_F(SimplifyTest, Table) {
  struct Row { const char* input; const char* expected; };
  const std::vector<Row> rows = {
      // Polynomial normal form: like terms merged, constants folded and last, canonical order
      // (higher degree first, then atoms in structural order).
      {"x + x", "2 * x"},
      {"x - x", "0"},
      {"x + 1 + 2", "x + 3"},
      {"1 + x", "x + 1"},
      {"y + x", "x + y"},
      {"(x + 1) * (x - 1)", "x * x - 1"},
      {"(x + y) * (x + y)", "x * x + 2 * x * y + y * y"},
      {"2 * (x + 3)", "2 * x + 6"},
      {"x * 0", "0"},
      {"x * 1 + 0", "x"},
      {"x - 2 * x", "-1 * x"},
      {"3 - x", "-1 * x + 3"},
      {"x * y - y * x", "0"},
      {"x * (y + z) - x * y", "x * z"},
      {"x - (y - (z - x))", "-1 * y + z"},
      {"(x + 1) * (x + 1) - (x * x + 2 * x + 1)", "0"},
      {"x * x * x - x * x * x", "0"},
      {"S * (M * (K floordiv F) + (K floordiv F) * (N floordiv g)) * 2",
       "2 * M * S * (K floordiv F) + 2 * S * (K floordiv F) * (N floordiv g)"},
      // Constant folding with floor semantics.
      {"7 floordiv 2", "3"},
      {"-7 floordiv 2", "-4"},
      {"7 floordiv -2", "-4"},
      {"-7 mod 2", "1"},
      {"7 mod -2", "-1"},
      {"-7 mod -2", "-1"},
      {"max(3, 5) + min(3, 5)", "8"},
      // floordiv / mod by constants.
      {"x floordiv 1", "x"},
      {"x floordiv -1", "-1 * x"},
      {"x mod 1", "0"},
      {"x mod -1", "0"},
      {"(4 * x) floordiv 2", "2 * x"},
      {"(4 * x + y) floordiv 2", "2 * x + y floordiv 2"},
      {"(2 * x + 1) floordiv 2", "x"},
      {"(2 * x + 3) floordiv 2", "x + 1"},
      {"(6 * x + 3 * y) floordiv 3", "2 * x + y"},
      {"((x + y) * 3) floordiv 3", "x + y"},
      {"(x * 8) mod 8", "0"},
      {"(-4 * x) mod 4", "0"},
      {"(8 * x + y + 3) mod 8", "(y + 3) mod 8"},
      {"(x floordiv 4) floordiv 8", "x floordiv 32"},
      {"((x + 1) floordiv 2) floordiv 2 + 1", "(x + 1) floordiv 4 + 1"},
      {"(x floordiv 2) floordiv -2", "(x floordiv 2) floordiv -2"},
      {"(x mod 16) mod 4", "x mod 4"},
      {"(x mod 16 + 4 * y) mod 4", "x mod 4"},
      {"(x mod 4) mod 16", "(x mod 4) mod 16"},
      {"((K + 15) floordiv 16) * 16", "16 * ((K + 15) floordiv 16)"},
      {"(K floordiv F) * 2 + (K floordiv F)", "3 * (K floordiv F)"},
      {"x floordiv y + x floordiv y", "2 * (x floordiv y)"},
      {"x floordiv (y + 1 - 1)", "x floordiv y"},
      {"(y * x) mod (x * y)", "(x * y) mod (x * y)"},
      // Division by zero is never folded.
      {"x floordiv 0", "x floordiv 0"},
      {"(2 * x) mod (1 - 1)", "(2 * x) mod 0"},
      // min / max.
      {"min(x, x)", "x"},
      {"max(x + 1, x)", "x + 1"},
      {"min(x + 1, x)", "x"},
      {"max(x, x - 3)", "x"},
      {"min(y, x)", "min(x, y)"},
      {"min(x + 0, 2 * x - x)", "x"},
      {"min(x, y) + min(y, x)", "2 * min(x, y)"},
      {"max(x * (y + 1), 0)", "max(0, x * y + x)"},
      // Comparisons: D = rhs - lhs, gcd-normalized, x < y becomes x + 1 <= y.
      {"x < y", "x + 1 <= y"},
      {"x <= y", "x <= y"},
      {"x > 3", "4 <= x"},
      {"2 * x <= 7", "x <= 3"},
      {"6 * x + 4 * y < 9", "3 * x + 2 * y <= 4"},
      {"3 * x + 1 <= 2 * x + 5", "x <= 4"},
      {"2 * x == 7", "false"},
      {"2 * x == 6", "x == 3"},
      {"y == x", "x == y"},
      {"x != x + 1", "true"},
      {"x < x + 1", "true"},
      {"(K floordiv F) mod 16 == 0", "(K floordiv F) mod 16 == 0"},
      // Boolean connectives.
      {"not x < y", "y <= x"},
      {"not x <= y", "y + 1 <= x"},
      {"not not (x == 1)", "x == 1"},
      {"not (x == 1)", "x != 1"},
      {"not (x != 1)", "x == 1"},
      {"x == 1 and true", "x == 1"},
      {"x == 1 and false", "false"},
      {"x == 1 or true", "true"},
      {"x == 1 or (y == 2 or x == 1)", "x == 1 or y == 2"},
      {"y == 2 and (x == 1 and y == 2)", "x == 1 and y == 2"},
      {"not (x == 1 and y == 2)", "not (x == 1 and y == 2)"},
      {"not true or 1 < 0", "false"},
  };
  for (const Row& r : rows) {
    Expr in = P(r.input);
    Expr out = Simplify(ctx_, in);
    EXPECT_EQ(ctx_.ToString(out), r.expected) << "input: " << r.input;
    // Canonical forms are fixed points and print/parse exactly.
    EXPECT_EQ(Simplify(ctx_, out), out) << "not idempotent: " << r.input;
    absl::StatusOr<Expr> reparsed = ParseExpr(ctx_, ctx_.ToString(out));
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    EXPECT_EQ(*reparsed, out) << r.input;
  }
  EXPECT_GE(rows.size(), 40u);
}

TEST_F(SimplifyTest, EqualPolynomialsGetTheSameHandle) {
  const std::vector<std::vector<const char*>> classes = {
      {"(x + y) * (x - y)", "x * x - y * y", "-1 * y * y + x * x", "(x - y) * (y + x)"},
      {"2 * (x floordiv 3) + x floordiv 3", "3 * (x floordiv 3)", "(x floordiv 3) * 3"},
      {"(x + 1) * (y + 1)", "x * y + x + y + 1", "1 + y + x + y * x"},
      {"x * (y * z)", "z * y * x", "(x * y) * z"},
      {"min(x + 1, y) * 2", "2 * min(y, 1 + x)"},
      {"(4 * x + 2 * y) floordiv 2", "y + 2 * x", "2 * x + (2 * y) floordiv 2"},
      {"(K floordiv F) * (x - x + 1)", "K floordiv F", "(K + 0) floordiv (F * 1)"},
      {"x * x * y", "y * x * x", "x * (x * y)"},
      {"x < y", "x + 1 <= y", "not y <= x", "y > x", "2 * x < 2 * y"},
      {"x == 3", "3 == x", "2 * x == 6", "not x != 3"},
      {"x < 1 and y < 1", "y <= 0 and x <= 0"},
  };
  for (const auto& cls : classes) {
    const Expr first = Simplify(ctx_, P(cls[0]));
    for (const char* text : cls) {
      EXPECT_EQ(Simplify(ctx_, P(text)), first)
          << text << " → " << ctx_.ToString(Simplify(ctx_, P(text))) << ", but " << cls[0]
          << " → " << ctx_.ToString(first);
      EXPECT_TRUE(ProvablyEqual(ctx_, P(text), P(cls[0])));
    }
  }
  EXPECT_FALSE(ProvablyEqual(ctx_, P("x + 1"), P("x")));
  EXPECT_FALSE(ProvablyEqual(ctx_, P("x < 1"), P("x")));
}

TEST_F(SimplifyTest, CoefficientOverflowKeepsAnAtom) {
  // 2^62 * 4 does not fit: the product stays as an (exact) atom instead of wrapping.
  Expr e = P("(x * 4611686018427387904) * 4");
  Expr s = Simplify(ctx_, e);
  EXPECT_EQ(ctx_.ToString(s), "(4611686018427387904 * x) * 4");
  EXPECT_EQ(Simplify(ctx_, s), s);
}

// Simplify remembers its results in the context (a pure function of immutable expressions):
// asking again gives the same handle, the memo moves with the context, and a moved-from
// context, reused, keeps no stale entry for its new expressions (whose handles repeat the old
// ones' indices).
TEST(SimplifyMemoTest, SurvivesMovesAndLeavesNoStaleEntry) {
  ExprContext a;
  const Expr x = *a.Var("x", *Domain::Range(0, 9));
  const Expr e = a.Add({a.Mul({x, a.Const(2)}), x, a.Const(0)});
  const Expr s = Simplify(a, e);
  EXPECT_EQ(a.ToString(s), "3 * x");
  EXPECT_EQ(Simplify(a, e), s);
  EXPECT_EQ(Simplify(a, s), s);
  ExprContext b = std::move(a);
  EXPECT_EQ(Simplify(b, e), s);
  EXPECT_EQ(b.ToString(Simplify(b, e)), "3 * x");
  // `a` is empty again: the same handle values now name other expressions.
  const Expr y = *a.Var("y", *Domain::Range(0, 9));
  const Expr f = a.Add({a.Mul({y, a.Const(5)}), y, a.Const(7)});
  ASSERT_EQ(f, e);  // built in the same order: the same handle value
  EXPECT_EQ(a.ToString(Simplify(a, f)), "6 * y + 7");
}

}  // namespace
}  // namespace prism
