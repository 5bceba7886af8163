// sGraph → prune::Family: parameters, divisibility constraints and metrics of the fixtures, and
// evaluation at hand-checked assignments.
#include <string>
#include <vector>

#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/prune/block_family.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

using ::prism::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BlockFamilyTest, RmsNormLinearFamily) {
  ASSERT_OK_AND_ASSIGN(
      fixtures::Fixture f,
      fixtures::MakeFixture("rmsnorm_linear", fixtures::WorkloadSizes("rmsnorm_linear", 8)));
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(prune::Family family, BuildFamily(f.graph, ctx));
  EXPECT_EQ(family.name(), "rmsnorm_linear");
  std::vector<std::string> params, constraints;
  for (const prune::Parameter& p : family.parameters()) {
    params.push_back(absl::StrCat(p.name, " in ", p.domain.ToString(), " (", p.doc, ")"));
  }
  for (const prune::NamedConstraint& c : family.constraints()) {
    constraints.push_back(absl::StrCat(c.name, ": ", ctx.ToString(c.condition)));
  }
  EXPECT_THAT(params,
              ElementsAre("g in divisors(6144) (grid)", "F in divisors(4096) (forloop)",
                          "T in {64, 128, 256, 512} (threads)", "S in range(1, 4) (stages)"));
  // X dim 1 and W dim 0 share the condition 4096 mod F == 0 (one constraint, both reasons).
  EXPECT_THAT(constraints, ElementsAre("split.X.1: 4096 mod F == 0", "split.W.1: 6144 mod g == 0"));
  EXPECT_THAT(family.constraints()[0].why,
              HasSubstr("(kernel k0, op Xt); tensor W dim 0 is split by forloop = F"));
  // The walkthrough's pruned example (S = 4, F = 4, g = 48) and its chosen instance.
  ASSERT_OK_AND_ASSIGN(prune::Family::Evaluation big,
                       family.Evaluate({{"g", 48}, {"F", 4}, {"T", 128}, {"S", 4}}));
  EXPECT_TRUE(big.feasible());
  EXPECT_EQ(big.metrics.at("smem_bytes"), 4 * (16 * 1024 + 1024 * 128) * 2);
  ASSERT_OK_AND_ASSIGN(prune::Family::Evaluation chosen,
                       family.Evaluate({{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}));
  EXPECT_EQ(chosen.metrics.at("smem_bytes"), 3 * (16 * 128 + 128 * 32) * 2);
  EXPECT_EQ(chosen.metrics.at("grid_blocks"), 192);
  EXPECT_EQ(chosen.metrics.at("regs_per_thread"), 5);  // ceil((16·32 + 16) / 128)
  EXPECT_EQ(chosen.metrics.at("dram_bytes"), (16 * 4096 + 4096 * 6144 + 16 * 6144) * 2);
  EXPECT_EQ(chosen.metrics.at("kernels"), 1);
  ASSERT_OK_AND_ASSIGN(prune::Family::Evaluation bad,
                       family.Evaluate({{"g", 5}, {"F", 32}, {"T", 128}, {"S", 3}}));
  EXPECT_FALSE(bad.feasible());
  EXPECT_THAT(bad.domain_violations, ElementsAre(HasSubstr("g = 5")));
  // The family survives its own JSON round trip.
  ExprContext ctx2;
  ASSERT_OK_AND_ASSIGN(prune::Family back, prune::Family::FromJson(family.ToJson(), ctx2));
  EXPECT_EQ(back.StableHash(), family.StableHash());
}

TEST(BlockFamilyTest, SplitKvConstraintsAreViolatedWhereTheSplitDoesNotDivide) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", fixtures::WorkloadSizes("gqa", 1)));
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(prune::Family family, BuildFamily(f.graph, ctx));
  std::vector<std::string> names;
  for (const prune::NamedConstraint& c : family.constraints()) names.push_back(c.name);
  EXPECT_THAT(names, ::testing::Contains("split.Kt.2"));
  // gz · F = 8192 > L = 4096.
  ASSERT_OK_AND_ASSIGN(
      prune::Family::Evaluation ev,
      family.Evaluate({{"gx", 2}, {"gy", 4}, {"gz", 8}, {"F", 1024}, {"T", 128}, {"S", 2}}));
  EXPECT_THAT(ev.violated_constraints, ::testing::Contains("split.Kt.2"));
  ASSERT_OK_AND_ASSIGN(
      prune::Family::Evaluation ok,
      family.Evaluate({{"gx", 2}, {"gy", 4}, {"gz", 8}, {"F", 4}, {"T", 128}, {"S", 2}}));
  EXPECT_TRUE(ok.feasible());
  EXPECT_EQ(ok.metrics.at("kernels"), 2);
  EXPECT_EQ(ok.metrics.at("grid_z"), 8);
}

TEST(BlockFamilyTest, EveryFixtureBuildsAFamily) {
  for (const std::string& name : fixtures::FixtureNames()) {
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(name, fixtures::WorkloadSizes(name, 8)));
    ExprContext ctx;
    EXPECT_OK(BuildFamily(f.graph, ctx).status()) << name;
  }
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", fixtures::ReducedSizes("gqa")));
  f.graph.mutable_kernels().pop_back();
  ExprContext ctx;
  EXPECT_THAT(BuildFamily(f.graph, ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sGraph output O is never written by a kernel")));
}

}  // namespace
}  // namespace prism
