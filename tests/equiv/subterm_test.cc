// ContainsSubterm / SubtermIndex (subterm.h): which terms a saturated target graph represents,
// memoization, and the incremental FindNode form the search uses.
#include "prism/equiv/subterm.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "prism/equiv/tensor_analysis.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

class EquivSubtermTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(rules_, LoadDefaultRules(ctx_));
    TensorEnv env;
    env.ctx = &ctx_;
    env.SetLeafShape("X", {8, 64});
    env.SetLeafShape("W", {64, 32});
    target_ = std::make_unique<EGraph>(&ctx_, std::make_unique<TensorAnalysis>(env));
    ASSERT_OK_AND_ASSIGN(Term program, ParseTerm(ctx_, "(matmul (rms_norm X 1 1e-06) W)"));
    root_ = target_->AddTerm(program);
    RunnerLimits limits;
    limits.max_iterations = 4;
    Runner(target_.get(), limits).Run(rules_.rewrites());
  }
  Term T(const std::string& text) { return *ParseTerm(ctx_, text); }

  ExprContext ctx_;
  RuleSet rules_;
  std::unique_ptr<EGraph> target_;
  EClassId root_;
};

TEST_F(EquivSubtermTest, ContainsTermsOfTheSaturatedTarget) {
  struct Row {
    std::string term;
    bool contained;
  };
  const std::vector<Row> rows = {
      {"(matmul (rms_norm X 1 1e-06) W)", true},
      {"(rms_norm X 1 1e-06)", true},
      {"X", true},
      {"1e-06", true},
      // Spellings the rules derived (rms-norm-def, mean-def, square-def):
      {"(mul X (rsqrt (add (mean (square X) 1) 1e-06)))", true},
      {"(square X)", true},
      {"(div (sum (square X) 1) 64)", true},
      // Not in the target:
      {"(matmul W X)", false},
      {"(sum X 0)", false},
      {"(rms_norm X 0 1e-06)", false},
      {"(matmul (rms_norm X 1 1e-05) W)", false},
      {"Y", false},
  };
  SubtermIndex index(target_.get());
  for (const Row& r : rows) {
    const Term t = T(r.term);
    EXPECT_EQ(index.Contains(t), r.contained) << r.term;
    EXPECT_EQ(ContainsSubterm(*target_, t), r.contained) << r.term;
  }
  EXPECT_EQ(index.Find(T("(matmul (rms_norm X 1 1e-06) W)")), target_->Find(root_));
}

TEST_F(EquivSubtermTest, RepeatedQueriesHitTheMemo) {
  SubtermIndex index(target_.get());
  const Term t = T("(matmul (rms_norm X 1 1e-06) W)");  // 6 nodes
  EXPECT_TRUE(index.Contains(t));
  EXPECT_EQ(index.stats().lookups, 6u);
  EXPECT_EQ(index.stats().memo_hits, 0u);
  EXPECT_TRUE(index.Contains(t));
  EXPECT_EQ(index.stats().lookups, 6u);
  EXPECT_EQ(index.stats().memo_hits, 6u);
  // Absent nodes are remembered too; a query stops at the first absent node.
  EXPECT_FALSE(index.Contains(T("(sum X 0)")));  // X from the memo; 0 is absent: stop there
  EXPECT_FALSE(index.Contains(T("(sum X 0)")));  // X and the absent 0 from the memo
  EXPECT_EQ(index.stats().queries, 4u);
  EXPECT_EQ(index.stats().lookups, 7u);
  EXPECT_EQ(index.stats().memo_hits, 9u);
}

TEST_F(EquivSubtermTest, FindNodeBuildsBottomUp) {
  SubtermIndex index(target_.get());
  std::optional<EClassId> x = index.FindNode(Symbol("X"), {}, {});
  std::optional<EClassId> one = index.FindNode(Symbol("int"), Payload::Int(1), {});
  std::optional<EClassId> eps = index.FindNode(Symbol("real"), Payload::Real(1e-06), {});
  ASSERT_TRUE(x && one && eps);
  std::optional<EClassId> norm = index.FindNode(Symbol("rms_norm"), {}, {*x, *one, *eps});
  ASSERT_TRUE(norm.has_value());
  EXPECT_EQ(*norm, *index.Find(T("(rms_norm X 1 1e-06)")));
  EXPECT_FALSE(index.FindNode(Symbol("matmul"), {}, {*x, *x}).has_value());
  EXPECT_FALSE(index.FindNode(Symbol("neg"), {}, {EClassId::Invalid()}).has_value());
}

TEST_F(EquivSubtermTest, ChangingTheTargetIsABug) {
  SubtermIndex index(target_.get());
  target_->AddTerm(T("(neg X)"));
  target_->Rebuild();
  EXPECT_DEATH(index.Contains(T("X")), "the target e-graph changed after the SubtermIndex was made");
}

}  // namespace
}  // namespace prism::equiv
