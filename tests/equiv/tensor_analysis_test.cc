// TensorAnalysis: symbolic shapes, exact constant folding (with literals added to classes),
// axis dependence, ill-formed nodes, and SymSize arithmetic.
#include "prism/equiv/tensor_analysis.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/rules.h"
#include "proof_check.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::testing::HasSubstr;

class EquivTensorAnalysisTest : public ::testing::Test {
 protected:
  EquivTensorAnalysisTest() {
    env_.ctx = &ctx_;
    env_.SetLeafShape("X", {16, 4096});
    env_.SetLeafShape("W", {4096, 6144});
    env_.SetLeafShape("Q", {2, 8, 4});
    env_.SetLeafShape("K", {2, 4, 16});
    env_.SetLeafShape("r", {16, 1});
    env_.SetLeafShape("b", {6144});
  }
  ExprContext ctx_;
  TensorEnv env_;
};

TEST_F(EquivTensorAnalysisTest, DataTable) {
  struct Row {
    std::string term;
    std::string data;  // TensorData::ToString
  };
  const std::vector<Row> rows = {
      {"X", "[16, 4096]"},
      {"(matmul X W)", "[16, 6144]"},
      {"(matmul Q K)", "[2, 8, 16]"},
      {"(matmul W Q)", "? error: matmul: inner dims differ: [4096, 6144] x [2, 8, 4]"},
      {"(exp (matmul W Q))", "? error: an operand is ill-formed"},
      {"(add (matmul X W) b)", "[16, 6144]"},
      {"(mul X r)", "[16, 4096]"},
      {"(sum X 1)", "[16, 1]"},
      {"(mean X 0)", "[1, 4096]"},
      {"(rms_norm X 1 1e-06)", "[16, 4096]"},
      {"(softmax Q 2)", "[2, 8, 4]"},
      {"(concat X X 1)", "[16, 8192]"},
      {"(partition W 1 @x {g})", "[4096, 6144/g] deps{x}"},
      {"(partition (partition W 1 @x {g}) 0 @F {F})", "[4096/F, 6144/g] deps{F,x}"},
      {"(combine (partition W 1 @x {g}) 1 @x)", "[4096, 6144]"},
      {"(reduce (partition X 1 @F 4) @F)", "[16, 1024]"},
      {"(replicate X @y {h})", "[16, 4096]"},
      {"(partition X 1 @z 3)", "? deps{z} error: partition: dim 1 of size 4096 is not divisible by 3"},
      {"(sum X 2)", "? error: sum: dim 2 is out of range for rank 2"},
      {"(combine X 0 @nowhere)", "? error: combine: axis @nowhere is not declared by a partition or replicate"},
      {"(add X W)", "? error: add: cannot broadcast [16, 4096] with [4096, 6144]"},
      {"(add 2 3)", "[] = 5"},
      {"(mul 1.5 4)", "[] = 6.0"},
      {"(recip 4)", "[] = 0.25"},
      {"(recip 3)", "[]"},            // 1/3 is not exact: no fold
      {"(add 0.1 0.2)", "[]"},        // rounds: no fold
      {"(dimsize X 1)", "[] = 4096"},
      {"(dimsize (partition X 1 @F {F}) 1)", "[] = 4096/F"},  // a size is the same in every block
      {"(dimof Q -1)", "[] = 2"},
      {"(recip (dimsize X 1))", "[] = 0.000244140625"},
      {"{g * F}", "[] = g*F"},
      {"@x", "axis @x"},
      {"(f X)", "?"},  // uninterpreted operator
  };
  for (const Row& r : rows) {
    absl::StatusOr<Term> t = ParseTerm(ctx_, r.term);
    ASSERT_OK(t) << r.term;
    TensorEnv env = env_;
    EXPECT_EQ(ComputeTermData(env, *t).back().ToString(&ctx_), r.data) << r.term;
  }
}

TEST_F(EquivTensorAnalysisTest, FoldedClassesContainTheirLiteral) {
  EGraph g(&ctx_, std::make_unique<TensorAnalysis>(env_));
  EClassId k = g.AddTerm(*ParseTerm(ctx_, "(dimsize (square X) 1)"));
  EClassId inv = g.AddTerm(*ParseTerm(ctx_, "(recip (dimsize (square X) 1))"));
  g.Rebuild();
  EXPECT_EQ(g.LookupTerm(*ParseTerm(ctx_, "4096")), g.Find(k));
  EXPECT_EQ(g.LookupTerm(*ParseTerm(ctx_, "0.000244140625")), g.Find(inv));
  // The fold is explained: (dimsize (square X) 1) -> 4096 by const-fold.
  absl::StatusOr<Explanation> e = g.Explain(k, g.AddTerm(*ParseTerm(ctx_, "4096")));
  ASSERT_OK(e);
  ASSERT_EQ(e->steps.size(), 1u);
  EXPECT_EQ(e->steps[0].kind, Justification::Kind::kAnalysis);
  EXPECT_EQ(e->steps[0].rule.name(), "const-fold");
  // The independent checker recomputes the fold (no rule file is involved).
  EXPECT_OK(testing::CheckWithProofChecker(*e, env_, RuleSet(), &ctx_));
  auto* ta = static_cast<TensorAnalysis*>(g.analysis());
  EXPECT_THAT(ta->diagnostics(), ::testing::IsEmpty());
}

TEST_F(EquivTensorAnalysisTest, MergeConflictsAreDiagnosed) {
  EGraph g(&ctx_, std::make_unique<TensorAnalysis>(env_));
  EClassId x = g.AddTerm(*ParseTerm(ctx_, "X"));
  EClassId w = g.AddTerm(*ParseTerm(ctx_, "W"));
  EClassId two = g.AddTerm(*ParseTerm(ctx_, "2"));
  EClassId three = g.AddTerm(*ParseTerm(ctx_, "3"));
  g.Union(x, w, Justification::Given("bad"));
  g.Union(two, three, Justification::Given("bad"));
  g.Rebuild();
  auto* ta = static_cast<TensorAnalysis*>(g.analysis());
  EXPECT_THAT(ta->diagnostics(),
              ::testing::ElementsAre(HasSubstr("merged classes with different shapes [16, 4096] and [4096, 6144]"),
                                     HasSubstr("merged classes with different constants 2 and 3")));
}

TEST_F(EquivTensorAnalysisTest, DepsAreConservativeAcrossMerges) {
  EGraph g(&ctx_, std::make_unique<TensorAnalysis>(env_));
  EClassId a = g.AddTerm(*ParseTerm(ctx_, "(reduce (partition X 1 @F 4) @F)"));
  EClassId p = g.AddTerm(*ParseTerm(ctx_, "(partition X 1 @F 4)"));
  auto* ta = static_cast<TensorAnalysis*>(g.analysis());
  EXPECT_FALSE(ta->data(g.Find(a)).DependsOn(Symbol("F")));
  EXPECT_TRUE(ta->data(g.Find(p)).DependsOn(Symbol("F")));
}

TEST(EquivSymSizeTest, Arithmetic) {
  ExprContext ctx;
  Expr g = *ctx.Var("g", *Domain::Range(1, 1024));
  Expr f = *ctx.Var("F", *Domain::Range(1, 1024));
  SymSize n = SymSize::Const(6144);
  SymSize sg = SymSize::FromExpr(ctx, g), sf = SymSize::FromExpr(ctx, f);
  SymSize q = *n.DividedBy(sg);
  EXPECT_EQ(q.ToString(&ctx), "6144/g");
  EXPECT_EQ(*q.Times(sg), n);
  EXPECT_EQ(SymSize::FromExpr(ctx, ctx.Mul(g, f)), *sg.Times(sf));
  EXPECT_EQ(SymSize::FromExpr(ctx, ctx.Mul(ctx.Const(2), g)).ToString(&ctx), "2*g");
  EXPECT_EQ(*SymSize::Const(6).DividedBy(SymSize::Const(4)), *SymSize::Const(3).DividedBy(SymSize::Const(2)));
  EXPECT_EQ(SymSize::Const(3).DividedBy(SymSize::Const(2))->ToString(nullptr), "3/2");
  EXPECT_EQ(*q.Plus(q), *SymSize::Const(12288).DividedBy(sg));
  EXPECT_FALSE(q.Plus(sg).has_value());
  EXPECT_FALSE(SymSize::Const(1).DividedBy(SymSize::Const(0)).has_value());
  EXPECT_FALSE(SymSize::Const(int64_t{1} << 62).Times(SymSize::Const(8)).has_value());
}

}  // namespace
}  // namespace prism::equiv
