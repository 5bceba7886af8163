// Randomized (seeded, deterministic) tests: the evaluator against an independent __int128
// reference, Simplify against the original expression, and parse(print(e)) == e, over
// thousands of random expressions built with the raw factories.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/rng.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"
#include "prism/expr/parse.h"
#include "prism/expr/simplify.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

using Wide = __int128;

// Builds random expressions over x, y, z with the raw (non-simplifying) factories, covering
// every kind, n-ary nodes, nested same-kind nodes and negative constants.
class Generator {
 public:
  Generator(ExprContext& ctx, uint64_t seed) : ctx_(ctx), rng_(seed) {
    for (const char* n : {"x", "y", "z"}) vars_.push_back(*ctx_.Var(n, *Domain::Range(-20, 20)));
  }

  Expr Int(int depth) {
    if (depth <= 0 || rng_.UniformInt(0, 5) == 0) return Leaf();
    switch (rng_.UniformInt(0, 9)) {
      case 0: case 1: return ctx_.Add(Operands(depth, rng_.UniformInt(2, 3)));
      case 2: return ctx_.Sub(Int(depth - 1), Int(depth - 1));
      case 3: return ctx_.Mul(Operands(depth, rng_.UniformInt(2, 3)));
      case 4: return ctx_.Mul(ctx_.Const(rng_.UniformInt(-4, 4)), Int(depth - 1));
      case 5: return ctx_.FloorDiv(Int(depth - 1), Divisor(depth));
      case 6: return ctx_.Mod(Int(depth - 1), Divisor(depth));
      case 7: return ctx_.Min(Int(depth - 1), Int(depth - 1));
      case 8: return ctx_.Max(Int(depth - 1), Int(depth - 1));
      default: return ctx_.Neg(Int(depth - 1));
    }
  }

  Expr Bool(int depth) {
    if (depth <= 0) return Comparison(1);
    switch (rng_.UniformInt(0, 6)) {
      case 0: return ctx_.And(BoolOperands(depth));
      case 1: return ctx_.Or(BoolOperands(depth));
      case 2: return ctx_.Not(Bool(depth - 1));
      case 3: return ctx_.Bool(rng_.UniformInt(0, 1) == 1);
      default: return Comparison(depth);
    }
  }

  Assignment RandomAssignment() {
    return {{"x", rng_.UniformInt(-20, 20)}, {"y", rng_.UniformInt(-20, 20)},
            {"z", rng_.UniformInt(-20, 20)}};
  }
  Rng& rng() { return rng_; }

 private:
  Expr Leaf() {
    if (rng_.UniformInt(0, 2) == 0) return ctx_.Const(rng_.UniformInt(-6, 6));
    return vars_[rng_.UniformInt(0, 2)];
  }
  // Mostly constant divisors (which the simplifier rewrites), sometimes symbolic ones.
  Expr Divisor(int depth) {
    if (rng_.UniformInt(0, 3) == 0) return Int(depth - 1);
    int64_t c = rng_.UniformInt(-8, 8);
    return ctx_.Const(c == 0 ? 4 : c);
  }
  std::vector<Expr> Operands(int depth, int64_t n) {
    std::vector<Expr> ops;
    for (int64_t i = 0; i < n; ++i) ops.push_back(Int(depth - 1));
    return ops;
  }
  std::vector<Expr> BoolOperands(int depth) {
    std::vector<Expr> ops;
    for (int64_t i = 0, n = rng_.UniformInt(2, 3); i < n; ++i) ops.push_back(Bool(depth - 1));
    return ops;
  }
  Expr Comparison(int depth) {
    Expr a = Int(depth), b = Int(depth);
    switch (rng_.UniformInt(0, 3)) {
      case 0: return ctx_.Eq(a, b);
      case 1: return ctx_.Ne(a, b);
      case 2: return ctx_.Lt(a, b);
      default: return ctx_.Le(a, b);
    }
  }

  ExprContext& ctx_;
  Rng rng_;
  std::vector<Expr> vars_;
};

// Independent reference semantics in 128-bit arithmetic; nullopt = division by zero.
// Floor division via the floor remainder: a = b*q + r with r in [0, b) (b > 0) or (b, 0].
Wide RefMod(Wide a, Wide b) {
  if (b > 0) return ((a % b) + b) % b;
  return -RefMod(-a, -b);
}
Wide RefDiv(Wide a, Wide b) { return (a - RefMod(a, b)) / b; }

std::optional<Wide> Ref(const ExprContext& ctx, Expr e, const Assignment& a) {
  auto ops = ctx.operands(e);
  auto both = [&]() -> std::optional<std::pair<Wide, Wide>> {
    auto l = Ref(ctx, ops[0], a), r = Ref(ctx, ops[1], a);
    if (!l || !r) return std::nullopt;
    return std::make_pair(*l, *r);
  };
  switch (ctx.kind(e)) {
    case ExprKind::kConst: return ctx.const_value(e);
    case ExprKind::kBoolConst: return ctx.bool_value(e) ? 1 : 0;
    case ExprKind::kVar: return a.at(ctx.var_name(e));
    case ExprKind::kAdd:
    case ExprKind::kMul: {
      Wide acc = ctx.kind(e) == ExprKind::kAdd ? 0 : 1;
      for (Expr op : ops) {
        auto v = Ref(ctx, op, a);
        if (!v) return std::nullopt;
        acc = ctx.kind(e) == ExprKind::kAdd ? acc + *v : acc * *v;
      }
      return acc;
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kMod: {
      auto p = both();
      if (!p || p->second == 0) return std::nullopt;
      return ctx.kind(e) == ExprKind::kMod ? RefMod(p->first, p->second)
                                           : RefDiv(p->first, p->second);
    }
    case ExprKind::kMin: { auto p = both(); if (!p) return std::nullopt; return std::min(p->first, p->second); }
    case ExprKind::kMax: { auto p = both(); if (!p) return std::nullopt; return std::max(p->first, p->second); }
    case ExprKind::kEq: { auto p = both(); if (!p) return std::nullopt; return p->first == p->second; }
    case ExprKind::kNe: { auto p = both(); if (!p) return std::nullopt; return p->first != p->second; }
    case ExprKind::kLt: { auto p = both(); if (!p) return std::nullopt; return p->first < p->second; }
    case ExprKind::kLe: { auto p = both(); if (!p) return std::nullopt; return p->first <= p->second; }
    case ExprKind::kNot: { auto v = Ref(ctx, ops[0], a); if (!v) return std::nullopt; return *v == 0; }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      const Wide absorbing = ctx.kind(e) == ExprKind::kAnd ? 0 : 1;
      bool error = false;
      for (Expr op : ops) {
        auto v = Ref(ctx, op, a);
        if (!v) { error = true; continue; }
        if (*v == absorbing) return absorbing;
      }
      if (error) return std::nullopt;
      return 1 - absorbing;
    }
  }
  return std::nullopt;
}

bool FitsInt64(Wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

TEST(RandomExprTest, EvaluatorMatchesReference) {
  ExprContext ctx;
  Generator gen(ctx, /*seed=*/1);
  int compared = 0, div_by_zero = 0;
  for (int i = 0; i < 3000; ++i) {
    Expr e = i % 3 == 0 ? gen.Bool(3) : gen.Int(4);
    for (int k = 0; k < 4; ++k) {
      Assignment a = gen.RandomAssignment();
      std::optional<Wide> ref = Ref(ctx, e, a);
      absl::StatusOr<int64_t> got = Evaluate(ctx, e, a);
      if (!ref.has_value()) {
        ++div_by_zero;
        EXPECT_THAT(got, ::prism::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                    ::testing::HasSubstr("division by zero")))
            << ctx.ToString(e);
        continue;
      }
      if (!FitsInt64(*ref)) continue;  // intermediate overflow is reported, tested elsewhere
      ASSERT_TRUE(got.ok()) << ctx.ToString(e) << ": " << got.status();
      EXPECT_EQ(*got, static_cast<int64_t>(*ref)) << ctx.ToString(e);
      ++compared;
    }
  }
  EXPECT_GT(compared, 10000);
  EXPECT_GT(div_by_zero, 10);
}

TEST(RandomExprTest, SimplifyPreservesValues) {
  ExprContext ctx;
  Generator gen(ctx, /*seed=*/2);
  int exprs = 0, compared = 0;
  for (int i = 0; i < 3000; ++i) {
    Expr e = i % 3 == 0 ? gen.Bool(3) : gen.Int(4);
    Expr s = Simplify(ctx, e);
    ++exprs;
    ASSERT_EQ(Simplify(ctx, s), s) << "not idempotent: " << ctx.ToString(e) << " → "
                                   << ctx.ToString(s);
    for (int k = 0; k < 8; ++k) {
      Assignment a = gen.RandomAssignment();
      absl::StatusOr<int64_t> want = Evaluate(ctx, e, a);
      if (!want.ok()) continue;  // Simplify may remove errors (simplify.h)
      absl::StatusOr<int64_t> got = Evaluate(ctx, s, a);
      ASSERT_TRUE(got.ok()) << ctx.ToString(e) << " → " << ctx.ToString(s) << ": " << got.status();
      ASSERT_EQ(*got, *want) << ctx.ToString(e) << " → " << ctx.ToString(s) << " at x="
                             << a["x"] << " y=" << a["y"] << " z=" << a["z"];
      ++compared;
    }
  }
  EXPECT_GE(exprs, 1000);
  EXPECT_GT(compared, 15000);
}

// CompiledExprs against Evaluate, root by root: the same value where Evaluate has one, a
// failed root exactly where Evaluate errs. Programs of 40 roots share subexpressions; z is
// left out of the compiled variables in half of them (unbound, as when the assignment lacks
// it), and one assignment in four is large enough to overflow.
TEST(RandomExprTest, CompiledExprsMatchEvaluate) {
  ExprContext ctx;
  Generator gen(ctx, /*seed=*/5);
  const Expr x = *ctx.Var("x", *Domain::Range(-20, 20));
  const Expr y = *ctx.Var("y", *Domain::Range(-20, 20));
  const Expr z = *ctx.Var("z", *Domain::Range(-20, 20));
  int values = 0, failures = 0, overflows = 0, unbound = 0;
  for (int program = 0; program < 60; ++program) {
    std::vector<Expr> roots;
    for (int i = 0; i < 40; ++i) roots.push_back(i % 3 == 0 ? gen.Bool(3) : gen.Int(4));
    const bool with_z = program % 2 == 0;
    const std::vector<Expr> vars = with_z ? std::vector<Expr>{y, x, z} : std::vector<Expr>{x, y};
    const CompiledExprs compiled(ctx, roots, vars);
    ASSERT_EQ(compiled.num_roots(), roots.size());
    CompiledExprs::Scratch scratch;
    for (int k = 0; k < 8; ++k) {
      Assignment a = gen.RandomAssignment();
      if (k % 4 == 3) {
        for (auto& [name, v] : a) v *= int64_t{1} << 58;
      }
      if (!with_z) a.erase("z");
      std::vector<int64_t> in;
      for (Expr v : vars) in.push_back(a.at(ctx.var_name(v)));
      compiled.Run(in, scratch);
      for (size_t i = 0; i < roots.size(); ++i) {
        const absl::StatusOr<int64_t> want = Evaluate(ctx, roots[i], a);
        ASSERT_EQ(compiled.ok(scratch, i), want.ok())
            << ctx.ToString(roots[i]) << ": " << want.status();
        if (want.ok()) {
          ASSERT_EQ(compiled.value(scratch, i), *want) << ctx.ToString(roots[i]);
          ++values;
        } else {
          ++failures;
          const std::string message(want.status().message());
          overflows += absl::StrContains(message, "overflow") ? 1 : 0;
          unbound += absl::StrContains(message, "unbound") ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(values, 10000);
  EXPECT_GT(overflows, 50);
  EXPECT_GT(unbound, 500);
  EXPECT_GT(failures, overflows + unbound);  // divisions by zero too
}

TEST(RandomExprTest, ParsePrintRoundTrip) {
  ExprContext ctx;
  Generator gen(ctx, /*seed=*/3);
  for (int i = 0; i < 3000; ++i) {
    Expr e = i % 3 == 0 ? gen.Bool(3) : gen.Int(5);
    for (Expr x : {e, Simplify(ctx, e)}) {
      const std::string text = ctx.ToString(x);
      absl::StatusOr<Expr> back = ParseExpr(ctx, text);
      ASSERT_TRUE(back.ok()) << text << ": " << back.status();
      ASSERT_EQ(*back, x) << text << " re-parsed as " << ctx.ToString(*back);
    }
  }
}

TEST(RandomExprTest, HashAndImportAcrossContexts) {
  ExprContext a, b;
  Generator gen(a, /*seed=*/4);
  b.Const(12345);  // shift b's handles
  for (int i = 0; i < 500; ++i) {
    Expr e = i % 2 == 0 ? gen.Bool(3) : gen.Int(4);
    Expr in_b = b.Import(a, e);
    EXPECT_EQ(b.structural_hash(in_b), a.structural_hash(e));
    EXPECT_EQ(b.ToString(in_b), a.ToString(e));
    EXPECT_EQ(b.ToString(Simplify(b, in_b)), a.ToString(Simplify(a, e)));
  }
}

}  // namespace
}  // namespace prism
