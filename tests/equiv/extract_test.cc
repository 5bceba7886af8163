// Extraction: tree cost vs greedy DAG cost vs exact DAG cost, custom costs, after saturation.
#include "prism/equiv/extract.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

class EquivExtractTest : public ::testing::Test {
 protected:
  EClassId Add(EGraph& g, absl::string_view text) { return g.AddTerm(*ParseTerm(ctx_, text)); }
  ExprContext ctx_;
};

TEST_F(EquivExtractTest, ExtractionTable) {
  struct Row {
    std::string what;
    std::vector<std::string> equal_terms;  // unioned into one class; the first is the root
    std::string tree, dag;
    double tree_cost, dag_cost;
  };
  const std::vector<Row> rows = {
      {"single term", {"(f (g a) b)"}, "(f (g a) b)", "(f (g a) b)", 4, 4},
      {"smaller alternative", {"(f (g a) b)", "(h a)"}, "(h a)", "(h a)", 2, 2},
      // Tree: (f (g a) (g a)) costs 5, (h a b c) costs 4. DAG: 3 vs 4 (g a is shared).
      {"sharing favours the DAG", {"(f (g a) (g a))", "(h a b c)"}, "(h a b c)", "(f (g a) (g a))", 4, 3},
  };
  for (const Row& r : rows) {
    EGraph g(&ctx_);
    EClassId root = Add(g, r.equal_terms[0]);
    for (size_t i = 1; i < r.equal_terms.size(); ++i) {
      g.Union(root, Add(g, r.equal_terms[i]), Justification::Given("test"));
    }
    g.Rebuild();
    Extractor ex(g);
    Extractor::Result tree = ex.ExtractTree(root);
    EXPECT_EQ(tree.term.ToString(&ctx_), r.tree) << r.what;
    EXPECT_EQ(tree.cost, r.tree_cost) << r.what;
    Extractor::Result dag = ex.ExtractDag(root);
    EXPECT_EQ(dag.term.ToString(&ctx_), r.dag) << r.what;
    EXPECT_EQ(dag.cost, r.dag_cost) << r.what;
    std::optional<Extractor::Result> exact = ex.ExtractDagExact(root);
    ASSERT_TRUE(exact.has_value()) << r.what;
    EXPECT_EQ(exact->cost, r.dag_cost) << r.what;
  }
}

TEST_F(EquivExtractTest, AfterSaturationAndWithCustomCost) {
  absl::StatusOr<RuleSet> rules = ParseRules(ctx_,
                                             "(rule mul-one (mul ?x 1) => ?x)\n"
                                             "(rule shift (mul ?x 2) => (shl ?x 1))\n",
                                             "t.rules", RuleParseOptions{.check_operators = false});
  ASSERT_OK(rules);
  EGraph g(&ctx_);
  EClassId root = Add(g, "(mul (mul (mul a 1) 2) 1)");
  Runner(&g).Run(rules->rewrites());
  Extractor ex(g);
  EXPECT_EQ(ex.ExtractTree(root).term.ToString(&ctx_), "(mul a 2)");
  // Make multiplication expensive: the shift wins.
  Extractor costly(g, [](const ENode& n) { return n.op == Symbol("mul") ? 10.0 : 1.0; });
  EXPECT_EQ(costly.ExtractTree(root).term.ToString(&ctx_), "(shl a 1)");
  EXPECT_EQ(costly.TreeCost(root), 3.0);
}

TEST_F(EquivExtractTest, CyclicClassesStillExtract) {
  EGraph g(&ctx_);
  EClassId a = Add(g, "a");
  EClassId fa = Add(g, "(f a)");
  g.Union(a, fa, Justification::Given("a = f(a)"));
  g.Rebuild();
  Extractor ex(g);
  EXPECT_EQ(ex.ExtractTree(fa).term.ToString(&ctx_), "a");
  EXPECT_EQ(ex.ExtractDag(fa).term.ToString(&ctx_), "a");
  EXPECT_EQ(ex.ExtractDagExact(fa)->term.ToString(&ctx_), "a");
  EXPECT_FALSE(ex.ExtractDagExact(fa, /*max_classes=*/0).has_value());
}

}  // namespace
}  // namespace prism::equiv
