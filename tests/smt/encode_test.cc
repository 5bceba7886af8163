// Tests of smt/encode.h: the Z3 encoding of expr/ expressions agrees with expr/'s evaluator
// (floor semantics for every sign, min/max, tables and unary filters), domains are encoded
// exactly, and divisions by a possibly-zero divisor are excluded through definedness().
#include "prism/smt/encode.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/base/rng.h"
#include "prism/expr/eval.h"
#include "prism/expr/parse.h"
#include "testing/status_matchers.h"

namespace prism::smt {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

struct Var {
  std::string name;
  std::string domain;
};

// Declares the variables in `ctx` and in a new scope of `s`.
std::vector<Expr> Declare(ExprContext& ctx, Solver& s, const std::vector<Var>& vars) {
  std::vector<Expr> out;
  for (const Var& v : vars) {
    absl::StatusOr<Domain> d = Domain::Parse(v.domain);
    PRISM_CHECK(d.ok(), d.status().ToString());
    absl::StatusOr<Expr> e = ctx.Var(v.name, *d);
    PRISM_CHECK(e.ok(), e.status().ToString());
    out.push_back(*e);
    PRISM_CHECK(s.Declare(*s.Symbol(v.name, SortKind::kInt)).ok());
  }
  return out;
}

// Every assignment of the variables' domains (small domains only).
std::vector<Assignment> Space(const ExprContext& ctx, const std::vector<Expr>& vars) {
  std::vector<Assignment> out = {{}};
  for (Expr v : vars) {
    std::vector<Assignment> next;
    const std::vector<int64_t> values = *ctx.var_domain(v).Enumerate();
    for (int64_t x : values) {
      for (Assignment a : out) {
        a[ctx.var_name(v)] = x;
        next.push_back(std::move(a));
      }
    }
    out = std::move(next);
  }
  return out;
}

// Checks that `text`, encoded with and without tabulation, equals expr/'s evaluation at every
// assignment of the domains where evaluation succeeds, and that definedness() is false
// exactly where it fails with a division by zero.
void CheckAgainstEvaluator(const std::vector<Var>& vars, const std::string& text) {
  SCOPED_TRACE(text);
  for (bool tabulate : {true, false}) {
    ExprContext ctx;
    Solver s;
    s.Push();
    const std::vector<Expr> v = Declare(ctx, s, vars);
    absl::StatusOr<Expr> e = ParseExpr(ctx, text);
    ASSERT_TRUE(e.ok()) << e.status();
    EncodeOptions options;
    options.tabulate = tabulate;
    ExprEncoder enc(s, ctx, options);
    ASSERT_OK_AND_ASSIGN(Term t, enc.Encode(*e));
    Term defined = s.And(enc.definedness());
    for (const Assignment& a : Space(ctx, v)) {
      absl::flat_hash_map<std::string, int64_t> values(a.begin(), a.end());
      absl::StatusOr<int64_t> want = Evaluate(ctx, *e, a);
      ASSERT_OK_AND_ASSIGN(double is_defined, s.EvaluateWithZ3(defined, values));
      if (!want.ok()) {
        // Only divisions by zero fail on these inputs; they must be excluded.
        EXPECT_THAT(want.status().message(), HasSubstr("division by zero"));
        EXPECT_EQ(is_defined, 0.0) << "tabulate=" << tabulate;
        continue;
      }
      EXPECT_EQ(is_defined, 1.0) << "tabulate=" << tabulate;
      ASSERT_OK_AND_ASSIGN(double got, s.EvaluateWithZ3(t, values));
      EXPECT_EQ(got, static_cast<double>(*want))
          << "tabulate=" << tabulate << " at " << absl::StrCat(a.begin()->first, "=", a.begin()->second);
    }
    s.Pop();
  }
}

TEST(EncodeTest, TableOfExpressions) {
  const std::vector<Var> pos = {{"F", "divisors(4096)"}, {"g", "{1, 3, 6, 48}"}, {"T", "pow2(32, 256)"}};
  const std::vector<Var> neg = {{"x", "range(-7, 7)"}, {"y", "{-3, -2, -1, 1, 2, 5}"}};
  const std::vector<Var> zero = {{"x", "range(-4, 4)"}, {"z", "range(-2, 2)"}};
  struct Row {
    const std::vector<Var>* vars;
    const char* text;
  };
  const std::vector<Row> rows = {
      {&pos, "4096 floordiv F"},
      {&pos, "(4096 floordiv F) mod 16"},
      {&pos, "(4096 floordiv F) mod 16 == 0"},
      {&pos, "3 * (16 * (4096 floordiv F) + (4096 floordiv F) * (6144 floordiv g)) * 2"},
      {&pos, "(16 * (6144 floordiv g) + T - 1) floordiv T + 32"},
      {&pos, "min(T, 128) + max(g, F floordiv 2)"},
      {&pos, "F * g mod T"},
      {&pos, "not (F < g) or T == 64 and g != 3"},
      {&neg, "x floordiv y"},
      {&neg, "x mod y"},
      {&neg, "(x * x - 7) floordiv y + (x mod 3)"},
      {&neg, "x floordiv (y - 1)"},
      {&neg, "min(x, y) * max(x, -y)"},
      {&zero, "x floordiv z"},
      {&zero, "x mod z + z floordiv (x + 5)"},
      {&zero, "(x floordiv z) mod 2 == 0"},
  };
  for (const Row& r : rows) CheckAgainstEvaluator(*r.vars, r.text);
}

// Random expressions over three variables, one of which may be zero or negative.
TEST(EncodeTest, RandomExpressionsAgreeWithTheEvaluator) {
  const std::vector<Var> vars = {{"a", "range(-3, 5)"}, {"b", "pow2(1, 16)"}, {"c", "{2, 6, 7}"}};
  Rng rng(11);
  const std::vector<std::string> leaves = {"a", "b", "c", "1", "-2", "3", "12"};
  const std::vector<std::string> ops = {"+", "-", "*", "floordiv", "mod"};
  std::function<std::string(int)> gen = [&](int depth) -> std::string {
    if (depth == 0 || rng.Uniform() < 0.3) {
      return leaves[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(leaves.size()) - 1))];
    }
    const int64_t k = rng.UniformInt(0, 6);
    if (k == 5) return absl::StrCat("min(", gen(depth - 1), ", ", gen(depth - 1), ")");
    if (k == 6) return absl::StrCat("max(", gen(depth - 1), ", ", gen(depth - 1), ")");
    std::string rhs = gen(depth - 1);
    if ((ops[k] == "floordiv" || ops[k] == "mod") && rhs == "0") rhs = "1";
    return absl::StrCat("(", gen(depth - 1), " ", ops[k], " ", rhs, ")");
  };
  for (int i = 0; i < 60; ++i) {
    std::string text = gen(3);
    if (i % 3 == 0) text = absl::StrCat(text, " <= ", gen(2));
    CheckAgainstEvaluator(vars, text);
  }
}

TEST(EncodeTest, DomainsAreExact) {
  struct Row {
    const char* domain;
    int64_t max_enumerated;
  };
  const std::vector<Row> rows = {
      {"range(3, 9)", 4096},      {"pow2(4, 512)", 4096},       {"divisors(720)", 4096},
      {"divisors(720)", 5},       {"divisors(4096, 16, 256)", 4096},
      {"{1, 2, 3, 4, 9, 10, 11, 40}", 4096},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.domain);
    ExprContext ctx;
    Solver s;
    s.Push();
    const std::vector<Expr> v = Declare(ctx, s, {{"v", r.domain}});
    EncodeOptions options;
    options.max_enumerated_domain = r.max_enumerated;
    ExprEncoder enc(s, ctx, options);
    ASSERT_OK_AND_ASSIGN(Term member, enc.DomainConstraint(v[0]));
    ASSERT_OK_AND_ASSIGN(Term bounds, enc.DomainBounds(v[0]));
    const Domain& d = ctx.var_domain(v[0]);
    for (int64_t x = d.Min() - 3; x <= d.Max() + 3; ++x) {
      ASSERT_OK_AND_ASSIGN(double in, s.EvaluateWithZ3(member, {{"v", x}}));
      EXPECT_EQ(in == 1.0, d.Contains(x)) << x;
      ASSERT_OK_AND_ASSIGN(double in_bounds, s.EvaluateWithZ3(bounds, {{"v", x}}));
      EXPECT_EQ(in_bounds == 1.0, x >= d.Min() && x <= d.Max()) << x;
    }
    // Satisfiable exactly with the members: count the models.
    ASSERT_OK(s.Assert(member));
    int64_t models = 0;
    for (int i = 0; i < 1000; ++i) {
      CheckResult c = s.Check("models", Budget{});
      if (c.verdict != Verdict::kRefuted) break;
      ++models;
      EXPECT_TRUE(d.Contains(c.model.at("v")));
      ASSERT_OK(s.Assert(s.Not(s.Eq(*s.Symbol("v", SortKind::kInt), s.Int(c.model.at("v"))))));
    }
    EXPECT_EQ(models, d.Size());
    s.Pop();
  }
}

TEST(EncodeTest, DivisionByConstantZeroIsAnError) {
  ExprContext ctx;
  Solver s;
  s.Push();
  Declare(ctx, s, {{"x", "range(1, 4)"}, {"y", "range(1, 4)"}});
  ExprEncoder enc(s, ctx);
  // Two variables, so no table: the node itself is encoded.
  Expr e = ctx.FloorDiv(ctx.Add(*ctx.FindVar("x"), *ctx.FindVar("y")), ctx.Const(0));
  EXPECT_THAT(enc.Encode(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                      "division by the constant 0 in '(x + y) floordiv 0'"));
  s.Pop();
}

}  // namespace
}  // namespace prism::smt
