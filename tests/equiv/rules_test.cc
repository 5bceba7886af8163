// Rule files: the shipped rules load (each with a soundness comment, every operator known);
// the loader's errors, with exact messages and locations.
#include "prism/equiv/rules.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

TEST(EquivRulesTest, ShippedRulesLoadWithSoundnessComments) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules = LoadDefaultRules(ctx);
  ASSERT_OK(rules);
  EXPECT_GE(rules->num_rules(), 60u);
  for (const Rewrite& r : rules->rewrites()) {
    EXPECT_FALSE(r.doc.empty()) << r.name << " at " << r.location << " has no soundness comment";
  }
  for (const char* name : {"split-k", "split-sum", "combine-partition", "matmul-rowscale",
                           "rms-norm-def", "concat-matmul", "matmul-concat", "online-rescale",
                           "reduce-regroup", "softmax-def", "div-as-mul", "matmul-rowdiv"}) {
    EXPECT_NE(rules->Find(name), nullptr) << name;
  }
  const Rewrite* rowscale = rules->Find("matmul-rowscale");
  ASSERT_NE(rowscale, nullptr);
  EXPECT_EQ(rowscale->ToString(&ctx),
            "(rule matmul-rowscale (mul (matmul ?a ?b) ?r) => (matmul (mul ?a ?r) ?b) if (row-scale ?r ?a))");
  const Rewrite* back = rules->Find("matmul-rowscale", /*reversed=*/true);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->lhs.ToString(&ctx), "(matmul (mul ?a ?r) ?b)");
  EXPECT_THAT(rowscale->location, HasSubstr("matmul.rules:4:1"));
}

TEST(EquivRulesTest, ParsesDocsConditionsAndNegation) {
  ExprContext ctx;
  absl::StatusOr<RuleSet> rules = ParseRules(ctx,
                                             "; first line\n"
                                             "; second line\n"
                                             "(rule r1 (sum ?x ?d) => (sum ?x ?d) if (not (dim-is ?x ?d -1)) (scalar ?x))\n"
                                             "\n"
                                             "; unrelated\n"
                                             "\n"
                                             "(rule r2 (exp ?x) <=> (exp (add ?x 0)))\n",
                                             "t.rules");
  ASSERT_OK(rules);
  ASSERT_EQ(rules->rewrites().size(), 3u);
  EXPECT_EQ(rules->names(), (std::vector<std::string>{"r1", "r2"}));
  const Rewrite& r1 = rules->rewrites()[0];
  EXPECT_EQ(r1.doc, "first line second line");
  ASSERT_EQ(r1.conditions.size(), 2u);
  EXPECT_TRUE(r1.conditions[0].negated);
  EXPECT_EQ(r1.conditions[0].ToString(r1.var_names()), "(not (dim-is ?x ?d -1))");
  EXPECT_EQ(rules->rewrites()[1].doc, "");
  EXPECT_TRUE(rules->rewrites()[2].reversed);
  EXPECT_EQ(rules->Without({"r1"}).names(), (std::vector<std::string>{"r2"}));
}

TEST(EquivRulesTest, LoaderErrorTable) {
  struct Row {
    std::string text;
    std::string message;  // the whole message
  };
  const std::vector<Row> rows = {
      {"; c\n\n(rule x (mul ?a ?b) => (mul ?a ?c))",
       "rule 'x' (t.rules:3:1): right side uses ?c, which the left side does not bind"},
      {"(rule y (mul ?a ?b) <=> (exp ?a))",
       "rule 'y' (t.rules:1:1): left side uses ?b, which the right side does not bind (a <=> rule "
       "rewrites both ways)"},
      {"(rule z (exp ?a) => (exp ?a) if (scalar ?q))",
       "rule 'z' (t.rules:1:1): condition (scalar ?q) uses ?q, which the left side does not bind"},
      {"(rule b ?a => (exp ?a))",
       "rule 'b' (t.rules:1:1): left side is a bare variable, which would match every class"},
      {"(rule b2 (exp ?a) <=> ?a)",
       "rule 'b2' (t.rules:1:1): right side of a <=> rule is a bare variable, which would match every class"},
      {"(rule u (matmull ?a ?b) => ?a)", "t.rules:1:10: unknown operator 'matmull'"},
      {"(rule u (matmul ?a) => ?a)", "t.rules:1:10: operator 'matmul' takes 2 operands (t t), found 1"},
      {"(rule u (exp X) => X)",
       "t.rules:1:14: found 'X', expected ?variable, a number, {size}, @axis or (op ...)"},
      {"(rule u (exp exp) => (exp ?a))",
       "t.rules:1:14: operator 'exp' takes 1 operands, found 0 (write (exp ...))"},
      {"(rule p (exp ?a) => (exp ?a) if (rowvec ?a))", "t.rules:1:34: unknown predicate 'rowvec'"},
      {"(rule p (exp ?a) => (exp ?a) if (row-scale ?a))",
       "t.rules:1:34: predicate 'row-scale' takes 2 arguments, found 1"},
      {"(rule p (exp ?a) => (exp ?a) if (free-of 3 ?a))",
       "t.rules:1:42: argument 1 of 'free-of': found '3', expected a ?variable"},
      {"(rule p (exp ?a) => (exp ?a) if (dim-is ?a ?a x))",
       "t.rules:1:47: argument 3 of 'dim-is': found 'x', expected a ?variable or an integer"},
      {"(rule p (exp ?a) => (exp ?a) if)", "t.rules:1:30: found ')' after 'if', expected a condition"},
      {"(rule p (exp ?a) => (exp ?a) when (scalar ?a))", "t.rules:1:30: found 'when', expected 'if' or ')'"},
      {"(rule v (exp ?a) -> (exp ?a))", "t.rules:1:18: found '->', expected '=>' or '<=>'"},
      {"(rule w (exp ?a) => (exp ?a)",
       "t.rules:1:29: found end of input, expected ')' to close the '(' at 1:1"},
      {"(rule Bad (exp ?a) => (exp ?a))",
       "t.rules:1:7: found 'Bad', expected a rule name ([a-z0-9][a-z0-9_-]*)"},
      {"(rule short (exp ?a))",
       "t.rules:1:1: rule 'short' is incomplete, expected (rule NAME LHS => RHS [if CONDITION...])"},
      {"(rewrite x (exp ?a) => (exp ?a))",
       "t.rules:1:1: found '(rewrite ...)', expected (rule NAME LHS => RHS [if CONDITION...])"},
      {"(rule d (exp ?a) => (exp ?a))\n(rule d (neg ?a) => (neg ?a))",
       "rule 'd' (t.rules:2:1): duplicate name (first defined at t.rules:1:1)"},
      {"(rule s (exp ?a) => (exp (add ?a {F +})))", "t.rules:1:34: in symbolic size '{F +}': at offset 3: found end of input, expected an expression"},
  };
  for (const Row& r : rows) {
    ExprContext ctx;
    absl::StatusOr<RuleSet> rules = ParseRules(ctx, r.text, "t.rules");
    ASSERT_FALSE(rules.ok()) << r.text;
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument) << r.text;
    EXPECT_EQ(rules.status().message(), r.message) << r.text;
  }
}

TEST(EquivRulesTest, MissingFilesAndDirectories) {
  ExprContext ctx;
  EXPECT_THAT(LoadRuleFile(ctx, "/nonexistent/x.rules"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("x.rules")));
  EXPECT_THAT(LoadRuleDirectory(ctx, "/nonexistent-dir"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent-dir")));
}

TEST(EquivRulesTest, DuplicateAcrossFiles) {
  ExprContext ctx;
  RuleSet a = *ParseRules(ctx, "(rule x (exp ?a) => (exp ?a))", "a.rules");
  RuleSet b = *ParseRules(ctx, "\n(rule x (neg ?a) => (neg ?a))", "b.rules");
  EXPECT_THAT(a.Append(b), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("rule 'x' (b.rules:2:1): duplicate name (first defined at a.rules:1:1)")));
}

}  // namespace
}  // namespace prism::equiv
