// Patterns: search tables (linear, non-linear, literal payloads, variable roots),
// instantiation, and the runner's stop reasons on small rule sets.
#include "prism/equiv/pattern.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

class EquivPatternTest : public ::testing::Test {
 protected:
  EClassId Add(EGraph& g, absl::string_view text) { return g.AddTerm(*ParseTerm(ctx_, text)); }
  ExprContext ctx_;
};

TEST_F(EquivPatternTest, SearchTable) {
  struct Row {
    std::string pattern;
    std::vector<std::string> expected;  // one "?v=term ..." per substitution, all classes
  };
  // Graph: (f a b), (f a a), (g (f a a)), (sum x 1), (sum x 0).
  const std::vector<Row> rows = {
      {"(f ?x ?y)", {"x=a y=b", "x=a y=a"}},
      {"(f ?x ?x)", {"x=a"}},
      {"(g (f ?x ?x))", {"x=a"}},
      {"(g (f ?x b))", {}},
      {"(sum ?t 1)", {"t=x"}},
      {"(sum ?t ?d)", {"t=x d=1", "t=x d=0"}},
      {"(h ?x)", {}},
      {"a", {""}},
  };
  EGraph g(&ctx_);
  for (const char* t : {"(f a b)", "(f a a)", "(g (f a a))", "(sum x 1)", "(sum x 0)"}) Add(g, t);
  g.Rebuild();
  for (const Row& r : rows) {
    absl::StatusOr<Pattern> p = Pattern::Parse(ctx_, r.pattern);
    ASSERT_OK(p) << r.pattern;
    std::vector<std::string> got;
    for (const SearchMatch& m : p->Search(g)) {
      for (const Subst& s : m.substs) {
        std::string line;
        for (int slot : p->vars()) {
          if (!line.empty()) line += " ";
          line += p->var_names()[slot] + "=" + g.TermOf(s[slot]).ToString(&ctx_);
        }
        got.push_back(line);
      }
    }
    EXPECT_THAT(got, ::testing::UnorderedElementsAreArray(r.expected)) << r.pattern;
  }
}

TEST_F(EquivPatternTest, VariableRootMatchesEveryClass) {
  EGraph g(&ctx_);
  Add(g, "(f a b)");
  g.Rebuild();
  Pattern p = *Pattern::Parse(ctx_, "?any");
  EXPECT_EQ(p.Search(g).size(), g.num_classes());
}

TEST_F(EquivPatternTest, InstantiateAddsTheExactTerm) {
  EGraph g(&ctx_);
  EClassId fab = Add(g, "(f a b)");
  g.Rebuild();
  Pattern lhs = *Pattern::Parse(ctx_, "(f ?x ?y)");
  std::vector<SearchMatch> m = lhs.Search(g);
  ASSERT_EQ(m.size(), 1u);
  Pattern rhs(*Pattern::Parse(ctx_, "(h ?y (k ?x) 7)"));
  // Reuse lhs slots: build rhs with the same variable table.
  std::vector<Pattern::Node> nodes = rhs.nodes();
  for (Pattern::Node& n : nodes) {
    if (n.var >= 0) n.var = lhs.slot(rhs.var_names()[n.var]);
  }
  Pattern rhs2(nodes, lhs.var_names());
  EClassId h = rhs2.Instantiate(g, m[0].substs[0]);
  EXPECT_EQ(g.TermOf(h).ToString(&ctx_), "(h b (k a) 7)");
  EXPECT_FALSE(g.Equivalent(h, fab));
}

TEST_F(EquivPatternTest, RunnerStopReasons) {
  struct Row {
    std::string rules;
    std::string term;
    RunnerLimits limits;
    StopReason expected;
  };
  RunnerLimits few_iterations;
  few_iterations.max_iterations = 3;
  few_iterations.match_limit = 0;
  RunnerLimits few_nodes;
  few_nodes.max_nodes = 50;
  few_nodes.match_limit = 0;
  RunnerLimits no_time;
  no_time.time_limit = absl::ZeroDuration();
  const std::vector<Row> rows = {
      {"(rule comm (f ?x ?y) => (f ?y ?x))", "(f a b)", RunnerLimits{}, StopReason::kSaturated},
      {"(rule grow (f ?x) => (f (f ?x)))", "(f a)", RunnerLimits{}, StopReason::kSaturated},
      {"(rule grow (f ?x) => (g (f ?x)))", "(f a)", RunnerLimits{}, StopReason::kSaturated},
      {"(rule grow (f ?x) => (f (g ?x)))", "(f a)", few_iterations, StopReason::kIterationLimit},
      {"(rule grow (f ?x) => (f (g ?x)))", "(f a)", few_nodes, StopReason::kNodeLimit},
      {"(rule grow (f ?x) => (f (g ?x)))", "(f a)", no_time, StopReason::kTimeLimit},
  };
  for (const Row& r : rows) {
    absl::StatusOr<RuleSet> rules = ParseRules(ctx_, r.rules, "t.rules", RuleParseOptions{.check_operators = false});
    ASSERT_OK(rules);
    EGraph g(&ctx_);
    Add(g, r.term);
    Runner runner(&g, r.limits);
    EXPECT_EQ(runner.Run(rules->rewrites()), r.expected) << r.rules;
    EXPECT_TRUE(g.clean());
  }
}

TEST_F(EquivPatternTest, GoalStopsTheRunner) {
  absl::StatusOr<RuleSet> rules = ParseRules(ctx_, "(rule grow (f ?x) => (f (g ?x)))", "t.rules",
                                             RuleParseOptions{.check_operators = false});
  ASSERT_OK(rules);
  EGraph g(&ctx_);
  EClassId a = Add(g, "(f a)");
  EClassId b = Add(g, "(f (g (g a)))");
  Runner runner(&g);
  runner.StopWhenEquivalent(a, b);
  EXPECT_EQ(runner.Run(rules->rewrites()), StopReason::kGoalReached);
  EXPECT_EQ(runner.iterations().size(), 2u);
  EXPECT_EQ(StopReasonName(StopReason::kGoalReached), "goal reached");
}

}  // namespace
}  // namespace prism::equiv
