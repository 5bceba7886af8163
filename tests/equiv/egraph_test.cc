// EGraph: hash-consing, union + Rebuild restoring congruence (a congruence-closure table),
// lookups, explanations of congruences, and determinism of ids and dumps.
#include "prism/equiv/egraph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/pattern.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "proof_check.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

class EquivEGraphTest : public ::testing::Test {
 protected:
  EClassId Add(EGraph& g, absl::string_view text) {
    absl::StatusOr<Term> t = ParseTerm(ctx_, text);
    EXPECT_TRUE(t.ok()) << t.status();
    return g.AddTerm(*t);
  }
  ExprContext ctx_;
};

TEST_F(EquivEGraphTest, HashConsing) {
  EGraph g(&ctx_);
  EClassId a = Add(g, "(f a b)");
  EClassId b = Add(g, "(f a b)");
  EXPECT_EQ(a, b);
  EXPECT_EQ(g.num_classes(), 3u);
  EClassId c = Add(g, "(f b a)");
  EXPECT_NE(g.Find(a), g.Find(c));
  g.Rebuild();
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.class_ids().size(), 4u);
}

// After the unions, the listed pairs must be equal (congruence) and the others must not.
TEST_F(EquivEGraphTest, CongruenceClosureTable) {
  struct Row {
    std::string what;
    std::vector<std::string> terms;
    std::vector<std::pair<std::string, std::string>> unions;
    std::vector<std::pair<std::string, std::string>> equal;
    std::vector<std::pair<std::string, std::string>> not_equal;
  };
  const std::vector<Row> rows = {
      {"f(a) = f(b) after a = b", {"(f a)", "(f b)"}, {{"a", "b"}}, {{"(f a)", "(f b)"}}, {}},
      {"nested", {"(g (f a) b)", "(g (f b) a)"}, {{"a", "b"}}, {{"(g (f a) b)", "(g (f b) a)"}}, {}},
      {"f(a) = a makes f(f(f(a))) = a", {"(f (f (f a)))"}, {{"(f a)", "a"}},
       {{"(f (f a))", "a"}, {"(f (f (f a)))", "a"}}, {}},
      {"argument order matters", {"(h a b)", "(h b a)", "c"}, {}, {}, {{"(h a b)", "(h b a)"}}},
      {"unrelated leaves stay apart", {"(h a)", "(h c)"}, {{"a", "b"}}, {}, {{"(h a)", "(h c)"}}},
      {"two-step chain", {"(k (k a))", "(k (k c))"}, {{"a", "b"}, {"b", "c"}}, {{"(k (k a))", "(k (k c))"}},
       {}},
      {"payloads distinguish", {"(f 1)", "(f 2)"}, {}, {}, {{"(f 1)", "(f 2)"}}},
  };
  for (const Row& r : rows) {
    EGraph g(&ctx_);
    for (const std::string& t : r.terms) Add(g, t);
    for (const auto& [x, y] : r.unions) g.Union(Add(g, x), Add(g, y), Justification::Given(x + " = " + y));
    g.Rebuild();
    EXPECT_TRUE(g.clean());
    for (const auto& [x, y] : r.equal) {
      EXPECT_TRUE(g.Equivalent(Add(g, x), Add(g, y))) << r.what << ": " << x << " vs " << y;
    }
    for (const auto& [x, y] : r.not_equal) {
      EXPECT_FALSE(g.Equivalent(Add(g, x), Add(g, y))) << r.what << ": " << x << " vs " << y;
    }
    // Invariant: every root class's nodes are canonical and distinct, and memo lookups agree.
    for (EClassId id : g.class_ids()) {
      for (const ENode& n : g.eclass(id).nodes) {
        EXPECT_EQ(g.Canonicalize(n), n) << r.what;
        EXPECT_EQ(g.Lookup(n), id) << r.what;
      }
    }
  }
}

TEST_F(EquivEGraphTest, ExplainCongruence) {
  EGraph g(&ctx_);
  EClassId fa = Add(g, "(g (f a) c)");
  EClassId fb = Add(g, "(g (f b) c)");
  g.Union(Add(g, "a"), Add(g, "b"), Justification::Given("a = b"));
  g.Rebuild();
  absl::StatusOr<Explanation> e = g.Explain(fa, fb);
  ASSERT_OK(e);
  ASSERT_EQ(e->steps.size(), 1u);
  EXPECT_EQ(e->steps[0].rule.name(), "a = b");
  EXPECT_EQ(e->steps[0].position, (std::vector<int>{0, 0}));
  EXPECT_EQ(e->steps[0].before.ToString(&ctx_), "(g (f a) c)");
  EXPECT_EQ(e->steps[0].after.ToString(&ctx_), "(g (f b) c)");
  EXPECT_EQ(e->ToString(&ctx_),
            "start: (g (f a) c)\n  1. given a = b forward at [0, 0]: (g (f b) c)\ngoal: (g (f b) c)\n");
  // Proofs over uninterpreted operators and assumptions are not certificates: the checker
  // refuses them.
  TensorEnv env;
  EXPECT_THAT(testing::CheckWithProofChecker(*e, env, RuleSet(), &ctx_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the start term is ill-formed: unknown operator 'f'"));
  // Backward: explaining b-side to a-side flips the direction.
  absl::StatusOr<Explanation> back = g.Explain(fb, fa);
  ASSERT_OK(back);
  EXPECT_EQ(back->steps[0].direction, Direction::kBackward);
}

TEST_F(EquivEGraphTest, ExplainChainsThroughSeveralUnions) {
  EGraph g(&ctx_);
  EClassId start = Add(g, "(f a a)");
  EClassId goal = Add(g, "(f c d)");
  g.Union(Add(g, "a"), Add(g, "b"), Justification::Given("ab"));
  g.Union(Add(g, "c"), Add(g, "b"), Justification::Given("cb"));
  g.Union(Add(g, "d"), Add(g, "a"), Justification::Given("da"));
  g.Rebuild();
  absl::StatusOr<Explanation> e = g.Explain(start, goal);
  ASSERT_OK(e);
  // a -> b -> c at [0]; a -> d at [1].
  ASSERT_EQ(e->steps.size(), 3u);
  EXPECT_EQ(e->steps[0].after.ToString(&ctx_), "(f b a)");
  EXPECT_EQ(e->steps[1].after.ToString(&ctx_), "(f c a)");
  EXPECT_EQ(e->steps[2].after.ToString(&ctx_), "(f c d)");
  EXPECT_EQ(e->steps[1].direction, Direction::kBackward);  // recorded as c = b
}

TEST_F(EquivEGraphTest, ExplainErrors) {
  EGraph g(&ctx_);
  EXPECT_THAT(g.Explain(Add(g, "a"), Add(g, "b")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("the terms are not equal: a and b are in different e-classes")));
  EGraph plain(&ctx_, nullptr, EGraphOptions{.explanations = false});
  EClassId a = Add(plain, "a");
  EXPECT_THAT(plain.Explain(a, a), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            HasSubstr("explanations are off")));
}

TEST_F(EquivEGraphTest, UncanonicalIdsKeepExactTerms) {
  EGraph g(&ctx_);
  EClassId fa = Add(g, "(f a)");
  g.Union(Add(g, "a"), Add(g, "b"), Justification::Given("ab"));
  g.Rebuild();
  const size_t classes = g.num_classes();
  EClassId fb = Add(g, "(f b)");  // congruent to (f a): same class, its own term id
  EXPECT_NE(fa, fb);
  EXPECT_TRUE(g.Equivalent(fa, fb));
  EXPECT_EQ(g.num_classes(), classes);
  EXPECT_EQ(g.TermOf(fb).ToString(&ctx_), "(f b)");
  // Without explanations, the same add returns the class.
  EGraph plain(&ctx_, nullptr, EGraphOptions{.explanations = false});
  EClassId pa = Add(plain, "(f a)");
  plain.Union(Add(plain, "a"), Add(plain, "b"), Justification::Given("ab"));
  plain.Rebuild();
  EXPECT_EQ(Add(plain, "(f b)"), plain.Find(pa));
}

TEST_F(EquivEGraphTest, LookupTermDoesNotInsert) {
  EGraph g(&ctx_);
  EClassId x = Add(g, "(matmul X (exp W))");
  g.Rebuild();
  const size_t ids = g.num_ids();
  EXPECT_TRUE(g.LookupTerm(*ParseTerm(ctx_, "(exp W)")).has_value());
  EXPECT_EQ(g.LookupTerm(*ParseTerm(ctx_, "(matmul X (exp W))")), g.Find(x));
  EXPECT_FALSE(g.LookupTerm(*ParseTerm(ctx_, "(exp X)")).has_value());
  EXPECT_FALSE(g.LookupTerm(*ParseTerm(ctx_, "(matmul (exp W) X)")).has_value());
  EXPECT_EQ(g.num_ids(), ids);
}

TEST_F(EquivEGraphTest, DeterministicIdsAndDump) {
  auto run = [&]() {
    EGraph g(&ctx_);
    Add(g, "(f (g a) (g b))");
    Add(g, "(h (f (g b) (g a)))");
    g.Union(Add(g, "a"), Add(g, "b"), Justification::Given("ab"));
    g.Rebuild();
    absl::StatusOr<RuleSet> rules = ParseRules(ctx_, "(rule comm (f ?x ?y) => (f ?y ?x))\n"
                                                     "(rule wrap (g ?x) => (k (g ?x)))",
                                               "det.rules", RuleParseOptions{.check_operators = false});
    EXPECT_OK(rules);
    RunnerLimits limits;
    limits.max_iterations = 4;
    Runner(&g, limits).Run(rules->rewrites());
    return std::make_pair(g.Dump(), g.num_ids());
  };
  auto first = run();
  auto second = run();
  EXPECT_EQ(first.first, second.first);
  EXPECT_EQ(first.second, second.second);
  EXPECT_THAT(first.first, HasSubstr("(f "));
}

// A user-defined analysis through the generic interface: the minimum term depth of a class
// (make = 1 + max over children, merge = min), with upward propagation on Rebuild.
class MinDepth final : public TypedAnalysis<int> {
 public:
  absl::string_view name() const override { return "min-depth"; }
  std::string Describe(EClassId id) const override { return absl::StrCat("depth ", data(id)); }

 protected:
  int Make(const EGraph& g, const ENode& node) override {
    int d = 0;
    for (EClassId c : node.children) d = std::max(d, data(g.Find(c)));
    return d + 1;
  }
  MergeResult Join(int& into, const int& from) override {
    const int before = into;
    into = std::min(into, from);
    return {into != before, into != from};
  }
};

TEST_F(EquivEGraphTest, CustomAnalysisPropagatesUpward) {
  EGraph g(&ctx_, std::make_unique<MinDepth>());
  EClassId top = Add(g, "(f (g (h a)))");
  EClassId h = Add(g, "(h a)");
  auto* depth = static_cast<MinDepth*>(g.analysis());
  EXPECT_EQ(depth->data(g.Find(top)), 4);
  g.Union(h, Add(g, "b"), Justification::Given("h(a) = b"));
  g.Rebuild();
  EXPECT_EQ(depth->data(g.Find(h)), 1);
  EXPECT_EQ(depth->data(g.Find(top)), 3);  // re-derived through the parents
  EXPECT_THAT(g.Dump(), HasSubstr("[depth 3]: (f "));
}

TEST_F(EquivEGraphTest, DumpFormat) {
  EGraph g(&ctx_);
  Add(g, "(f a 3)");
  g.Rebuild();
  EXPECT_EQ(g.Dump(), "e0: a\ne1: 3\ne2: (f e0 e1)\n");
}

}  // namespace
}  // namespace prism::equiv
