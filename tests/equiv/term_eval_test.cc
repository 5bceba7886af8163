// The f64 term evaluator (term_eval.h): lowered Programs evaluate to what the reference
// interpreter computes (one table row per operator family), the parallel operators obey their
// definitions, and ill-formed terms are reported at the node that breaks.
#include "prism/equiv/term_eval.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"
#include "prism/equiv/lower.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/text_format.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;

double MaxDiff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (std::isnan(a.data[i]) && std::isnan(b.data[i])) continue;
    d = std::max(d, std::abs(a.data[i] - b.data[i]));
  }
  return d;
}

// Each program's output, lowered to a term, evaluates like the interpreter in f64 mode.
TEST(EquivTermEvalTest, LoweredProgramsMatchTheInterpreter) {
  const std::vector<std::string> programs = {
      "X = input f32[3, 5]\nW = input f32[5, 4]\nY = matmul(X, W)\noutput Y\n",
      "A = input f32[2, 1, 3, 4]\nB = input f32[5, 4, 2]\nY = matmul(A, B)\noutput Y\n",
      "X = input f32[3, 5]\nY = add(exp(X), add(silu(X), add(gelu(X), relu(X))))\noutput Y\n",
      "X = input f32[3, 5]\nY = add(sqrt(square(X)), add(rsqrt(add(square(X), scale(X, 0.0))), neg(recip(X))))\n"
      "output Y\n",
      "X = input f32[3, 5]\nR = input f32[3, 1]\nC = input f32[5]\nY = div(sub(mul(X, R), C), add(R, C))\noutput Y\n",
      "X = input f32[4, 6]\nY = add(sum(X, -1), add(max(X, -1), mean(X, 1)))\noutput Y\n",
      "X = input f32[4, 6]\nY = add(sum(X, 0), max(X, 0))\noutput Y\n",
      "X = input f32[4, 6]\nY = add(rms_norm(X, -1), softmax(X, 0))\noutput Y\n",
      "X = input f32[2, 3]\nZ = input f32[2, 2]\nW = input f32[2, 1]\nY = concat(X, Z, W, 1)\noutput Y\n",
      "X = input f32[2, 3]\nY = scale(rms_norm(X, 0, eps=0.5), 2.5)\noutput Y\n",
  };
  for (const std::string& text : programs) {
    absl::StatusOr<Program> p = ParseProgram(text);
    ASSERT_OK(p) << text;
    absl::StatusOr<Term> term = LowerProgramOutput(*p, 0);
    ASSERT_OK(term) << text;
    std::vector<Tensor> inputs = RandomInputs(*p, 7);
    absl::StatusOr<std::vector<Tensor>> want = Evaluate(*p, inputs, EvalMode::kF64);
    ASSERT_OK(want) << text;
    ExprContext ctx;
    TermEvaluator ev(&ctx, {});
    for (size_t i = 0; i < p->inputs().size(); ++i) ev.SetInput(p->node(p->inputs()[i]).name, inputs[i]);
    ASSERT_OK_AND_ASSIGN(TermPlan plan, ev.Plan(*term));
    ASSERT_OK_AND_ASSIGN(Tensor got, ev.Evaluate(*term, plan, {}));
    EXPECT_EQ(got.shape, (*want)[0].shape) << text;
    EXPECT_LE(MaxDiff(got, (*want)[0]), 1e-12) << text;
  }
}

class EquivParallelEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Rng rng(3);
    for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{{"X", {4, 6}}, {"W", {6, 8}}}) {
      Tensor t;
      t.shape = shape;
      for (int64_t i = 0; i < *NumElements(shape); ++i) t.data.push_back(rng.Normal());
      ev_.SetInput(name, t);
    }
  }
  absl::StatusOr<Tensor> Eval(const std::string& text, const BlockIndex& block = {}) {
    PRISM_ASSIGN_OR_RETURN(Term t, ParseTerm(ctx_, text));
    PRISM_ASSIGN_OR_RETURN(TermPlan plan, ev_.Plan(t));
    return ev_.Evaluate(t, plan, block);
  }
  ExprContext ctx_;
  TermEvaluator ev_{&ctx_, {{"g", 2}, {"F", 3}}};
};

// Pairs that are equal by the definitions of docs/rule_format.md (up to rounding).
TEST_F(EquivParallelEvalTest, ParallelOperatorsFollowTheirDefinitions) {
  struct Row {
    std::string a, b;
  };
  const std::vector<Row> rows = {
      {"(combine (partition X 1 @x {g}) 1 @x)", "X"},
      {"(combine (partition X 0 @x 4) 0 @x)", "X"},
      {"(reduce (sum (partition X 1 @f {F}) 1) @f)", "(sum X 1)"},
      {"(reduce_max (max (partition X 1 @f {F}) 1) @f)", "(max X 1)"},
      {"(reduce (matmul (partition X 1 @k {F}) (partition W 0 @k {F})) @k)", "(matmul X W)"},
      {"(combine (matmul (replicate X @x {g}) (partition W 1 @x {g})) 1 @x)", "(matmul X W)"},
      {"(reduce (partition (combine (matmul (partition X 1 @z 2) (partition W 0 @z 2)) 1 @z) 1 @y 2) @y)",
       "(matmul X W)"},
      {"(div X (dimsize X 1))", "(div X 6)"},
      {"(concat X X (dimof X -1))", "(concat X X 1)"},
      {"(mul X {g * F})", "(scale X 6.0)"},
  };
  for (const Row& r : rows) {
    absl::StatusOr<Tensor> a = Eval(r.a), b = Eval(r.b);
    ASSERT_OK(a) << r.a;
    ASSERT_OK(b) << r.b;
    EXPECT_EQ(a->shape, b->shape) << r.a;
    EXPECT_LE(MaxDiff(*a, *b), 1e-12) << r.a << " vs " << r.b;
  }
}

TEST_F(EquivParallelEvalTest, FreeAxesNeedABlockIndex) {
  // Block 1 of the column slices is columns 3..5.
  ASSERT_OK_AND_ASSIGN(Tensor slice, Eval("(partition X 1 @x 2)", {{"x", 1}}));
  ASSERT_OK_AND_ASSIGN(Tensor x, Eval("X"));
  EXPECT_EQ(slice.shape, (Shape{4, 3}));
  EXPECT_EQ(slice.data[0], x.data[3]);
  EXPECT_EQ(slice.data[5], x.data[6 + 5]);
  EXPECT_THAT(Eval("(partition X 1 @x 2)"),
              StatusIs(absl::StatusCode::kInvalidArgument, "no block index for axis @x"));
}

TEST_F(EquivParallelEvalTest, IllFormedTermsNameTheNode) {
  struct Row {
    std::string term, message;
  };
  const std::vector<Row> rows = {
      {"(combine (partition X 1 @x 4) 1 @x)", "(partition X 1 @x 4): dim 1 of size 6 is not divisible by 4"},
      {"(matmul X X)", "(matmul X X): shapes do not contract"},
      {"(add X Y)", "Y: not an operator or a bound input"},
      {"(partition X 1 @x {h})", "{h}: unbound variable 'h' in 'h'"},
      {"(reduce X @q)", "(reduce X @q): axis @q is not declared"},
      {"(add (partition X 0 @x 2) (partition X 0 @x 4))",
       "(partition X 0 @x 4): axis @x has two degrees"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(Eval(r.term), StatusIs(absl::StatusCode::kInvalidArgument, r.message)) << r.term;
  }
}

// Work is counted once per block index of the axes a node depends on; a subterm free of an
// axis is not recounted for each of its blocks.
TEST_F(EquivParallelEvalTest, PlanCountsWorkPerBlock) {
  ASSERT_OK_AND_ASSIGN(Term whole, ParseTerm(ctx_, "(matmul X W)"));
  ASSERT_OK_AND_ASSIGN(Term split, ParseTerm(ctx_, "(combine (matmul X (partition W 1 @x {g})) 1 @x)"));
  ASSERT_OK_AND_ASSIGN(TermPlan a, ev_.Plan(whole));
  ASSERT_OK_AND_ASSIGN(TermPlan b, ev_.Plan(split));
  EXPECT_EQ(a.ops, 24 + 48 + 4.0 * 8 * 6);  // the leaves' sizes and the matmul's multiply-adds
  EXPECT_EQ(b.degrees, (std::map<std::string, int64_t>{{"x", 2}}));
  EXPECT_EQ(b.axes.back(), std::vector<std::string>{});
  EXPECT_GE(b.ops, a.ops);
}

}  // namespace
}  // namespace prism::equiv
