// ExprContext: hash-consing, variable declaration, printing, hashing, traversal, substitution,
// import, evaluation and its errors.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/hash.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"
#include "prism/expr/parse.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;

Domain R(int64_t lo, int64_t hi) { return *Domain::Range(lo, hi); }

TEST(ExprContextTest, HashConsing) {
  ExprContext ctx;
  Expr x = *ctx.Var("x", R(0, 9));
  Expr y = *ctx.Var("y", R(0, 9));
  EXPECT_EQ(ctx.Const(3), ctx.Const(3));
  EXPECT_NE(ctx.Const(3), ctx.Const(4));
  EXPECT_EQ(ctx.Add(x, y), ctx.Add(x, y));
  EXPECT_NE(ctx.Add(x, y), ctx.Add(y, x));  // structural, not semantic
  EXPECT_EQ(ctx.Add({x, y, x}), ctx.Add({x, y, x}));
  EXPECT_NE(ctx.Add({x, y, x}), ctx.Add(ctx.Add(x, y), x));
  EXPECT_EQ(ctx.Add({x}), x);
  EXPECT_EQ(ctx.Add({}), ctx.Const(0));
  EXPECT_EQ(ctx.Mul({}), ctx.Const(1));
  EXPECT_EQ(ctx.And({}), ctx.Bool(true));
  EXPECT_EQ(ctx.Or({}), ctx.Bool(false));
  EXPECT_EQ(ctx.Gt(x, y), ctx.Lt(y, x));
  const size_t before = ctx.size();
  ctx.FloorDiv(ctx.Mul(x, y), ctx.Const(2));
  ctx.FloorDiv(ctx.Mul(x, y), ctx.Const(2));
  EXPECT_EQ(ctx.size(), before + 3);  // Mul, 2, FloorDiv
  EXPECT_EQ(ctx.kind(ctx.Mod(x, y)), ExprKind::kMod);
  EXPECT_EQ(ctx.sort(ctx.Lt(x, y)), Sort::kBool);
  EXPECT_EQ(KindName(ExprKind::kFloorDiv), "FloorDiv");
  EXPECT_EQ(KindInfo(ExprKind::kAdd).arity, kNaryArity);
}

TEST(ExprContextTest, VariableDeclaration) {
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(Expr g, ctx.Var("g", *Domain::DivisorsOf(6144)));
  ASSERT_OK_AND_ASSIGN(Expr g2, ctx.Var("g", *Domain::DivisorsOf(6144)));
  EXPECT_EQ(g, g2);
  EXPECT_EQ(ctx.var_name(g), "g");
  EXPECT_EQ(ctx.var_domain(g).ToString(), "divisors(6144)");
  EXPECT_EQ(ctx.FindVar("g"), g);
  EXPECT_EQ(ctx.FindVar("h"), std::nullopt);
  struct Row { const char* name; const char* message; };
  const std::vector<Row> rows = {
      {"g", "variable 'g' is already declared with domain divisors(6144), not range(0, 1)"},
      {"2x", "variable name '2x' is not an identifier (letters, digits, '_', not starting with a digit)"},
      {"", "variable name '' is not an identifier (letters, digits, '_', not starting with a digit)"},
      {"a-b", "variable name 'a-b' is not an identifier (letters, digits, '_', not starting with a digit)"},
      {"mod", "variable name 'mod' is a keyword of the expression syntax"},
      {"true", "variable name 'true' is a keyword of the expression syntax"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(ctx.Var(r.name, R(0, 1)),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)));
  }
  EXPECT_EQ(ctx.vars().size(), 1u);
}

TEST(ExprContextTest, PrintingTable) {
  ExprContext ctx;
  Expr x = *ctx.Var("x", R(-9, 9));
  Expr y = *ctx.Var("y", R(-9, 9));
  Expr K = *ctx.Var("K", R(1, 8192));
  Expr F = *ctx.Var("F", R(1, 8192));
  auto c = [&](int64_t v) { return ctx.Const(v); };
  struct Row { Expr e; const char* printed; };
  const std::vector<Row> rows = {
      {c(42), "42"},
      {c(-7), "-7"},
      {ctx.Bool(true), "true"},
      {ctx.Add({x, y, c(1)}), "x + y + 1"},
      {ctx.Add(ctx.Add(x, y), c(1)), "(x + y) + 1"},
      {ctx.Add(x, ctx.Add(y, c(1))), "x + (y + 1)"},
      {ctx.Sub(x, y), "x - y"},
      {ctx.Add(x, c(-3)), "x - 3"},
      {ctx.Add(x, ctx.Mul(c(-2), y)), "x - 2 * y"},
      {ctx.Add(x, ctx.Mul({c(-1), x, y})), "x - x * y"},
      {ctx.Sub(x, ctx.Add(x, y)), "x - (x + y)"},
      {ctx.Sub(x, ctx.Mul(x, y)), "x - (x * y)"},
      {ctx.Sub(x, ctx.FloorDiv(x, y)), "x - x floordiv y"},
      {ctx.Add(x, ctx.Mul(c(-1), c(5))), "x + -1 * 5"},
      {ctx.Neg(x), "-1 * x"},
      {ctx.Mul(x, c(-3)), "x * -3"},
      {ctx.Mul(ctx.FloorDiv(K, F), c(2)), "(K floordiv F) * 2"},
      {ctx.FloorDiv(ctx.Mul(K, F), c(2)), "(K * F) floordiv 2"},
      {ctx.FloorDiv(ctx.FloorDiv(K, F), c(2)), "(K floordiv F) floordiv 2"},
      {ctx.FloorDiv(K, ctx.FloorDiv(F, c(2))), "K floordiv (F floordiv 2)"},
      {ctx.Mod(ctx.Add(K, c(15)), c(16)), "(K + 15) mod 16"},
      {ctx.Mul(ctx.Add(x, y), ctx.Sub(x, y)), "(x + y) * (x - y)"},
      {ctx.Min(ctx.Add(x, c(1)), ctx.Max(y, c(0))), "min(x + 1, max(y, 0))"},
      {ctx.Le(ctx.Add(x, c(1)), y), "x + 1 <= y"},
      {ctx.Gt(x, y), "y < x"},
      {ctx.And({ctx.Eq(x, y), ctx.Ne(x, c(0)), ctx.Not(ctx.Lt(x, y))}),
       "x == y and x != 0 and not x < y"},
      {ctx.Or(ctx.And(ctx.Bool(true), ctx.Bool(false)), ctx.Bool(true)), "true and false or true"},
      {ctx.And(ctx.Or(ctx.Bool(true), ctx.Bool(false)), ctx.Bool(true)), "(true or false) and true"},
      {ctx.Not(ctx.And(ctx.Bool(true), ctx.Bool(false))), "not (true and false)"},
      {ctx.Not(ctx.Not(ctx.Bool(true))), "not not true"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ctx.ToString(r.e), r.printed);
    // The printed form parses back to the same node.
    ASSERT_OK_AND_ASSIGN(Expr back, ParseExpr(ctx, ctx.ToString(r.e)));
    EXPECT_EQ(back, r.e) << r.printed << " re-parsed as " << ctx.ToString(back);
  }
}

TEST(ExprContextTest, StructuralHashIsStableAcrossContextsAndOrder) {
  ExprContext a, b;
  // Build in different orders so that handle values differ.
  b.Const(99);
  Expr bx = *b.Var("x", R(0, 9));
  Expr ax = *a.Var("x", R(0, 9));
  Expr ea = a.FloorDiv(a.Add(ax, a.Const(1)), a.Const(2));
  Expr eb = b.FloorDiv(b.Add(bx, b.Const(1)), b.Const(2));
  EXPECT_NE(ea.value(), eb.value());
  EXPECT_EQ(a.structural_hash(ea), b.structural_hash(eb));
  EXPECT_NE(a.structural_hash(ea), a.structural_hash(a.FloorDiv(a.Add(a.Const(1), ax), a.Const(2))));
  // The domain is part of a variable's identity.
  ExprContext c;
  Expr cx = *c.Var("x", R(0, 10));
  EXPECT_NE(a.structural_hash(ax), c.structural_hash(cx));
  // Golden value: the hash is part of cache keys; a change must be deliberate.
  EXPECT_EQ(HashToHex(a.structural_hash(ea)), "e4dfdbe2fc7b2912");
}

TEST(ExprContextTest, TraversalSubstitutionImport) {
  ExprContext ctx;
  Expr x = *ctx.Var("x", R(0, 9));
  Expr y = *ctx.Var("y", R(0, 9));
  Expr z = *ctx.Var("z", R(0, 9));
  Expr xy = ctx.Mul(x, y);
  Expr e = ctx.Add({xy, ctx.FloorDiv(xy, z), y});
  std::vector<Expr> order = PostOrder(ctx, {e});
  // Every node once, operands first.
  EXPECT_EQ(order.size(), 6u);  // x, y, xy, z, floordiv, e: nothing twice
  EXPECT_EQ(order.back(), e);
  for (size_t i = 0; i < order.size(); ++i) {
    for (Expr op : ctx.operands(order[i])) {
      auto pos = std::find(order.begin(), order.end(), op) - order.begin();
      EXPECT_LT(pos, static_cast<long>(i));
    }
  }
  std::vector<Expr> vars = FreeVars(ctx, e);
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(ctx.var_name(vars[0]), "x");
  EXPECT_EQ(ctx.var_name(vars[2]), "z");

  Expr s = Substitute(ctx, e, {{x, ctx.Const(2)}, {z, ctx.Add(y, ctx.Const(1))}});
  EXPECT_EQ(ctx.ToString(s), "2 * y + (2 * y) floordiv (y + 1) + y");

  ExprContext other;
  Expr imported = other.Import(ctx, e);
  EXPECT_EQ(other.ToString(imported), ctx.ToString(e));
  EXPECT_EQ(other.structural_hash(imported), ctx.structural_hash(e));
  EXPECT_EQ(other.var_domain(*other.FindVar("z")).ToString(), "range(0, 9)");

  // Moving a context keeps handles and hash-consing working.
  ExprContext moved = std::move(other);
  EXPECT_EQ(moved.ToString(imported), ctx.ToString(e));
  EXPECT_EQ(moved.Import(ctx, e), imported);
}

// Import through a memo: an entry placed beforehand substitutes for its node, and the nodes
// rebuilt stay in the memo for the next expressions (Bind imports every slot of a graph
// through one).
TEST(ExprContextTest, ImportThroughAMemo) {
  ExprContext ctx;
  Expr x = *ctx.Var("x", R(0, 9));
  Expr y = *ctx.Var("y", R(0, 9));
  Expr xy = ctx.Mul(x, y);
  ExprContext to;
  absl::flat_hash_map<Expr, Expr> memo = {{x, to.Const(3)}};
  const struct {
    Expr e;
    std::string want;
  } kRows[] = {
      {xy, "3 * y"},
      {ctx.Add(xy, x), "3 * y + 3"},
      {ctx.FloorDiv(y, ctx.Const(2)), "y floordiv 2"},
      {x, "3"},
  };
  for (const auto& row : kRows) {
    SCOPED_TRACE(row.want);
    EXPECT_EQ(to.ToString(to.Import(ctx, row.e, memo)), row.want);
    EXPECT_EQ(to.ToString(memo.at(row.e)), row.want);  // kept for the next expressions
  }
  EXPECT_EQ(memo.at(y), *to.FindVar("y"));
  // The memo's entry for xy is what a later import of xy returns, not a rebuilt node.
  const Expr marker = to.Const(42);
  memo[xy] = marker;
  EXPECT_EQ(to.ToString(to.Import(ctx, ctx.Add(xy, y), memo)), "42 + y");
}

struct Depth {
  const ExprContext& ctx;
  int Inner(Expr e) {
    int d = 0;
    for (Expr op : ctx.operands(e)) d = std::max(d, Dispatch(ctx, op, *this));
    return d + 1;
  }
#define PRISM_EXPR_KIND(Name, Arity, Sort, OperandSort, Syntax, Precedence, Spelling) \
  int Visit##Name(Expr e) {                                                          \
    return KindInfo(ExprKind::k##Name).syntax == ExprSyntax::kLeaf ? 0 : Inner(e);   \
  }
#include "prism/expr/expr_kinds.def"
#undef PRISM_EXPR_KIND
};

TEST(ExprContextTest, DispatchVisitor) {
  ExprContext ctx;
  Expr x = *ctx.Var("x", R(0, 9));
  Expr e = ctx.Lt(ctx.Add(x, ctx.Mul(x, ctx.Const(2))), ctx.Const(3));
  EXPECT_EQ(Dispatch(ctx, e, Depth{ctx}), 3);
}

TEST(EvalTest, ValuesAndFloorSemantics) {
  ExprContext ctx;
  ASSERT_OK(ctx.Var("x", R(-100, 100)).status());
  ASSERT_OK(ctx.Var("y", R(-100, 100)).status());
  struct Row { const char* text; int64_t x, y, value; };
  const std::vector<Row> rows = {
      {"x + y * 2", 3, 4, 11},
      {"x - y - 1", 3, 4, -2},
      {"x floordiv y", 7, 2, 3},
      {"x floordiv y", -7, 2, -4},
      {"x floordiv y", 7, -2, -4},
      {"x floordiv y", -7, -2, 3},
      {"x mod y", 7, 2, 1},
      {"x mod y", -7, 2, 1},
      {"x mod y", 7, -2, -1},
      {"x mod y", -7, -2, -1},
      {"min(x, y) + max(x, y)", -5, 9, 4},
      {"x < y", 1, 2, 1},
      {"x <= y", 2, 2, 1},
      {"x > y", 2, 2, 0},
      {"x >= y and x != 0 or x == 7", 7, 9, 1},
      {"not x == y", 1, 1, 0},
      // And is false when an operand is false, even if another one has an error.
      {"x floordiv y == 1 and x < 0", 3, 0, 0},
      {"x < 0 or x mod y == 1", -1, 0, 1},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx, r.text));
    absl::StatusOr<int64_t> v = Evaluate(ctx, e, {{"x", r.x}, {"y", r.y}});
    ASSERT_TRUE(v.ok()) << r.text << ": " << v.status();
    EXPECT_EQ(*v, r.value) << r.text << " at x=" << r.x << " y=" << r.y;
  }
}

TEST(EvalTest, Errors) {
  ExprContext ctx;
  ASSERT_OK(ctx.Var("K", R(0, INT64_MAX)).status());
  ASSERT_OK(ctx.Var("F", R(0, INT64_MAX)).status());
  struct Row { const char* text; Assignment a; const char* message; };
  const std::vector<Row> rows = {
      {"K floordiv F", {{"K", 8}}, "unbound variable 'F' in 'K floordiv F'"},
      {"K floordiv F", {{"K", 8}, {"F", 0}}, "division by zero in 'K floordiv F': the divisor 'F' is 0"},
      {"K mod (F - 1)", {{"K", 8}, {"F", 1}},
       "division by zero in 'K mod (F - 1)': the divisor 'F - 1' is 0"},
      {"K * F", {{"K", int64_t{1} << 62}, {"F", 2}},
       "integer overflow in 'K * F': 4611686018427387904 * 2"},
      {"K + F", {{"K", INT64_MAX}, {"F", 1}}, "integer overflow in 'K + F': 9223372036854775807 + 1"},
      {"(K - 9223372036854775807 - 1) floordiv (F - 1)", {{"K", 0}, {"F", 0}},
       "integer overflow in '(K - 9223372036854775807 - 1) floordiv (F - 1)': "
       "-9223372036854775808 floordiv -1"},
      {"K floordiv F == 1 and K floordiv F == 2", {{"K", 8}, {"F", 0}},
       "division by zero in 'K floordiv F': the divisor 'F' is 0"},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx, r.text));
    EXPECT_THAT(Evaluate(ctx, e, r.a),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)))
        << r.text;
  }
}

// One AssignmentEvaluator for many roots that share subexpressions: every value and every
// error (message included, which quotes the root being evaluated) equals the free function's,
// whatever the order, also after a shared subexpression was memoized under another root.
TEST(EvalTest, AssignmentEvaluatorMatchesEvaluateAcrossRoots) {
  ExprContext ctx;
  ASSERT_OK(ctx.Var("K", R(0, INT64_MAX)).status());
  ASSERT_OK(ctx.Var("F", R(0, INT64_MAX)).status());
  ASSERT_OK(ctx.Var("T", R(0, INT64_MAX)).status());
  const std::vector<const char*> roots = {
      "K floordiv F",
      "(K floordiv F) * T",
      "(K floordiv F) * T <= 4096",
      "K floordiv F == 1 and T < 0",
      "K mod (F - 1)",
      "K * T + K floordiv F",
      "T floordiv (K - 8)",
  };
  const std::vector<Assignment> assignments = {
      {{"K", 64}, {"F", 4}, {"T", 128}},  // all defined
      {{"K", 8}, {"F", 1}, {"T", 3}},     // K mod (F - 1) and T floordiv (K - 8) divide by zero
      {{"K", 8}, {"F", 0}, {"T", 1}},     // K floordiv F divides by zero under every root
      {{"K", 8}, {"F", 2}},               // T unbound
  };
  std::vector<Expr> es;
  for (const char* text : roots) {
    ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx, text));
    es.push_back(e);
  }
  for (const Assignment& a : assignments) {
    for (bool reversed : {false, true}) {
      AssignmentEvaluator values(ctx, a);
      for (size_t k = 0; k < es.size(); ++k) {
        const Expr e = es[reversed ? es.size() - 1 - k : k];
        const absl::StatusOr<int64_t> want = Evaluate(ctx, e, a);
        const absl::StatusOr<int64_t> got = values.Evaluate(e);
        ASSERT_EQ(got.status(), want.status()) << ctx.ToString(e);
        if (want.ok()) {
          EXPECT_EQ(*got, *want) << ctx.ToString(e);
        }
        if (ctx.sort(e) == Sort::kBool) {
          EXPECT_EQ(values.EvaluateBool(e).status(), EvaluateBool(ctx, e, a).status());
        } else {
          EXPECT_EQ(values.EvaluateInt(e).status(), EvaluateInt(ctx, e, a).status());
        }
      }
    }
  }
  // The message names the root being evaluated, not the one that memoized the shared part.
  const Assignment zero_f = {{"K", 8}, {"F", 0}, {"T", 1}};
  AssignmentEvaluator values(ctx, zero_f);
  ASSERT_OK_AND_ASSIGN(Expr a, ParseExpr(ctx, "(K floordiv F) * T"));
  ASSERT_OK_AND_ASSIGN(Expr b, ParseExpr(ctx, "K floordiv F"));
  EXPECT_THAT(values.Evaluate(a),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "division by zero in 'K floordiv F': the divisor 'F' is 0"));
  EXPECT_THAT(values.Evaluate(b),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "division by zero in 'K floordiv F': the divisor 'F' is 0"));
}

// CompiledExprs case by case (randomized agreement with Evaluate: random_test.cc): each row
// is one root over x and y (bound) and u (unbound), at x = X, y = Y; want_ok/want are the
// expected run result.
TEST(CompiledExprsTest, Cases) {
  ExprContext ctx;
  const Expr x = *ctx.Var("x", R(INT64_MIN, INT64_MAX));
  const Expr y = *ctx.Var("y", R(INT64_MIN, INT64_MAX));
  ASSERT_OK(ctx.Var("u", R(0, 9)).status());
  const struct {
    const char* text;
    int64_t x, y;
    bool want_ok;
    int64_t want;
  } kCases[] = {
      {"x + y * 3", 2, 5, true, 17},
      {"x floordiv y", -7, 2, true, -4},
      {"x mod y", -7, 2, true, 1},
      {"x mod y", INT64_MIN, -1, true, 0},          // no INT64_MIN % -1 trap
      {"x floordiv y", INT64_MIN, -1, false, 0},    // overflow
      {"x floordiv y", 5, 0, false, 0},             // division by zero
      {"x mod y", 5, 0, false, 0},
      {"x * y", INT64_MAX, 2, false, 0},            // overflow
      {"x + y", INT64_MAX, 1, false, 0},
      {"min(x, y) + max(x, y)", 3, -4, true, -1},
      {"x == y", 4, 4, true, 1},
      {"x != y", 4, 4, true, 0},
      {"x < y", 3, 4, true, 1},
      {"x <= y", 5, 4, true, 0},
      {"not (x < y)", 3, 4, true, 0},
      {"u + 1", 0, 0, false, 0},                    // unbound
      // And / Or: an absorbing operand decides even when another operand fails.
      {"x floordiv y == 1 and x < 0", 5, 0, true, 0},
      {"x floordiv y == 1 and x > 0", 5, 0, false, 0},
      {"x floordiv y == 1 or x > 0", 5, 0, true, 1},
      {"x floordiv y == 1 or x < 0", 5, 0, false, 0},
      {"u == 1 or x == 5", 5, 0, true, 1},
      {"true and x == 5", 5, 0, true, 1},
      {"7", 0, 0, true, 7},
  };
  std::vector<Expr> roots;
  for (const auto& c : kCases) {
    ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx, c.text));
    roots.push_back(e);
  }
  roots.push_back(roots[0]);  // a root listed twice
  const CompiledExprs compiled(ctx, roots, {x, y});
  EXPECT_EQ(compiled.num_vars(), 2u);
  ASSERT_EQ(compiled.num_roots(), roots.size());
  CompiledExprs::Scratch scratch;
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const auto& c = kCases[i];
    compiled.Run({c.x, c.y}, scratch);
    const Assignment a = {{"x", c.x}, {"y", c.y}};
    EXPECT_EQ(compiled.ok(scratch, i), c.want_ok) << c.text;
    EXPECT_EQ(Evaluate(ctx, roots[i], a).ok(), c.want_ok) << c.text;
    if (c.want_ok && compiled.ok(scratch, i)) {
      EXPECT_EQ(compiled.value(scratch, i), c.want) << c.text;
    }
  }
  compiled.Run({2, 5}, scratch);
  EXPECT_EQ(compiled.value(scratch, roots.size() - 1), 17);
  // No roots: runs, with nothing to read.
  const CompiledExprs empty(ctx, {}, {x});
  empty.Run({1}, scratch);
  EXPECT_EQ(empty.num_roots(), 0u);
}

TEST(CompiledExprsDeathTest, MisuseIsChecked) {
  ExprContext ctx;
  const Expr x = *ctx.Var("x", R(0, 9));
  ASSERT_OK_AND_ASSIGN(Expr e, ParseExpr(ctx, "x floordiv 0"));
  EXPECT_DEATH(CompiledExprs(ctx, {e}, {e}), "vars\\[0\\] is not a variable: x floordiv 0");
  EXPECT_DEATH(CompiledExprs(ctx, {e}, {x, x}), "variable 'x' is listed twice");
  const CompiledExprs compiled(ctx, {e}, {x});
  CompiledExprs::Scratch scratch;
  EXPECT_DEATH(compiled.Run({1, 2}, scratch), "CompiledExprs::Run with 2 values for 1 variables");
  compiled.Run({1}, scratch);
  EXPECT_FALSE(compiled.ok(scratch, 0));
  EXPECT_DEATH((void)compiled.value(scratch, 0), "CompiledExprs::value of root 0, which failed");
}

}  // namespace
}  // namespace prism
