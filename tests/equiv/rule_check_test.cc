// Tests of rule validation (equiv/rule_check.h): every shipped rule is proved, every rule of
// tests/equiv/wrong_rules/ is refuted, and small inline rules pin down the encoding.
#include "prism/equiv/rule_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prism/equiv/rules.h"

namespace prism::equiv {
namespace {

using ::testing::HasSubstr;

struct RuleCheckRow {
  std::string rule;  // one rule-file line
  prism::Verdict verdict;
  std::string reason;  // a substring of RuleCheckResult::reason
};

TEST(RuleCheckTest, InlineRules) {
  const std::vector<RuleCheckRow> rows = {
      {"(rule t (add ?a ?b) => (add ?b ?a))", prism::Verdict::kProved, "2 instantiations: in_a: ["},
      {"(rule t (div (mul ?a ?b) ?b) => ?a if (same-shape ?a ?b))", prism::Verdict::kProved,
       "2 instantiations"},
      {"(rule t (recip (recip ?a)) => ?a)", prism::Verdict::kProved, "instantiations"},
      {"(rule t (sqrt (square ?a)) => ?a)", prism::Verdict::kRefuted, "element ["},
      {"(rule t (square (sqrt ?a)) => ?a)", prism::Verdict::kProved, "instantiations"},
      {"(rule t (exp (neg ?a)) => (recip (exp ?a)))", prism::Verdict::kProved, "instantiations"},
      {"(rule t (exp (scale ?a ?c)) => (mul (exp ?a) ?c))", prism::Verdict::kRefuted, "element ["},
      {"(rule t (max (neg ?a) ?d) => (neg (max ?a ?d)))", prism::Verdict::kRefuted, "element ["},
      {"(rule t (relu (neg ?a)) => (neg (relu ?a)))", prism::Verdict::kRefuted, "element ["},
      {"(rule t (silu ?a) => (silu (add ?a ?a)))", prism::Verdict::kRefuted, "element ["},
      {"(rule t (sum ?x ?d) => ?x)", prism::Verdict::kRefuted,
       "the sides have different shapes: ["},
      {"(rule t (sum ?x ?d) => (sum ?x 7))", prism::Verdict::kRefuted,
       "the right side is ill-formed: sum: dim 7 is out of range for rank"},
      {"(rule t (sum ?x ?d) => (sum ?x ?d) if (distinct ?d ?d))", prism::Verdict::kUnknown,
       "no instantiation satisfies the conditions (4000 candidates drawn)"},
      {"(rule t (mul ?a 0.0) => (div ?a 0.0))", prism::Verdict::kUnknown,
       "cannot encode: division by the constant 0"},
  };
  for (const RuleCheckRow& row : rows) {
    ExprContext ctx;
    absl::StatusOr<RuleSet> rules = ParseRules(ctx, row.rule, "inline.rules");
    ASSERT_TRUE(rules.ok()) << row.rule << ": " << rules.status();
    const RuleCheckResult r = ValidateRule(rules->rewrites()[0], ctx);
    EXPECT_EQ(r.verdict, row.verdict) << row.rule << ": " << r.reason;
    EXPECT_THAT(r.reason, HasSubstr(row.reason)) << row.rule;
    EXPECT_EQ(r.rule, "t");
    EXPECT_EQ(r.location, "inline.rules:1:1");
  }
}

// A refutation names the instance, the element, both values and the inputs.
TEST(RuleCheckTest, CounterexampleNamesElementAndInputs) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules =
      ParseRules(ctx, "(rule t (sub ?a ?b) => (sub ?b ?a) if (same-shape ?a ?b))", "x.rules");
  ASSERT_TRUE(rules.ok()) << rules.status();
  const RuleCheckResult r = ValidateRule(rules->rewrites()[0], ctx);
  ASSERT_EQ(r.verdict, prism::Verdict::kRefuted);
  EXPECT_THAT(r.reason, ::testing::MatchesRegex(
                            "instance \\(sub in_a in_b\\) with in_a: \\[.*\\]; in_b: \\[.*\\]: "
                            "element \\[.*\\]: left .*, right .*; inputs in_a_0 = .*"));
  ASSERT_EQ(r.instances.size(), 1u);
  EXPECT_EQ(r.instances[0].verdict, prism::Verdict::kRefuted);
}

// The kept SMT-LIB2 script declares the functions and is a standalone query.
TEST(RuleCheckTest, KeepsSmtLib) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules =
      ParseRules(ctx, "(rule t (exp (add ?a ?b)) => (mul (exp ?a) (exp ?b)))", "x.rules");
  ASSERT_TRUE(rules.ok()) << rules.status();
  RuleCheckOptions options;
  options.keep_smtlib = true;
  const RuleCheckResult r = ValidateRule(rules->rewrites()[0], ctx, options);
  ASSERT_EQ(r.verdict, prism::Verdict::kProved) << r.reason;
  ASSERT_FALSE(r.instances.empty());
  EXPECT_THAT(r.instances[0].smtlib, HasSubstr("(declare-fun exp_ (Real) Real)"));
  EXPECT_THAT(r.instances[0].smtlib, HasSubstr("(check-sat)"));
  EXPECT_THAT(r.instances[0].smtlib, HasSubstr("; rule t: (exp (add in_a in_b)) = "));
}

TEST(RuleCheckTest, EveryWrongRuleIsRefuted) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules =
      LoadRuleDirectory(ctx, PRISM_SOURCE_DIR "/tests/equiv/wrong_rules");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_GE(rules->num_rules(), 3u);
  for (const RuleCheckResult& r : ValidateRules(*rules, ctx)) {
    EXPECT_EQ(r.verdict, prism::Verdict::kRefuted) << r.rule << ": " << r.reason;
  }
}

TEST(RuleCheckTest, EveryShippedRuleIsProved) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules = LoadDefaultRules(ctx);
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const RuleCheckResult& r : ValidateRules(*rules, ctx)) {
    EXPECT_EQ(r.verdict, prism::Verdict::kProved) << r.rule << ": " << r.reason;
    EXPECT_GE(r.instances.size(), 2u) << r.rule << ": " << r.reason;
  }
}

}  // namespace
}  // namespace prism::equiv
