// The one-kernel search (search.h) on reduced workloads: it finds the best-known one-kernel
// structure without being told it (rmsnorm_linear: Σx² accumulated next to X·W, the division
// after the loop), every family it returns is proved and emulates to the reference, the
// funnel adds up, it is deterministic, and SMT pruning loses nothing under the ranking model.
#include "prism/search/search.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/block/sgraph_printer.h"
#include "prism/ir/interpreter.h"
#include "prism/smt/target.h"
#include "testing/status_matchers.h"

namespace prism::search {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

// A smaller rmsnorm_linear than ReducedSizes so that the whole search runs in seconds.
Program RmsnormLinear(int64_t m, int64_t k, int64_t n) {
  ProgramBuilder pb;
  TensorId x = pb.Input("X", DType::kF16, {m, k});
  TensorId w = pb.Input("W", DType::kF16, {k, n});
  TensorId y = pb.MatMul(pb.RmsNorm(x, -1), w);
  pb.SetName(y, "Y");
  pb.Output(y);
  absl::StatusOr<Program> p = std::move(pb).Build();
  PRISM_CHECK(p.ok(), p.status().message());
  return *std::move(p);
}

std::string OpsOf(const SGraph& g) {
  std::vector<std::string> names;
  for (const BlockOp& op : g.kernels()[0].block().ops) {
    const BlockOpInfo& info = GetBlockOpInfo(op.kind);
    names.push_back(op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary ||
                            op.kind == BlockOpKind::kReduce
                        ? std::string(GetOpInfo(op.fn).name)
                        : std::string(info.name));
  }
  return absl::StrJoin(names, " ");
}

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Target> t = LoadTarget("h200");
    ASSERT_OK(t);
    target_ = *std::move(t);
  }
  Target target_;
};

TEST_F(SearchTest, FindsTheOneKernelRmsnormLinear) {
  // The sizes of WORKLOADS.md at b = 8 (the structure search is size-independent; the cost
  // model decides between a whole-row kernel and the K-walking one).
  const Program p = RmsnormLinear(16, 4096, 6144);
  SearchConfig config;
  ASSERT_OK_AND_ASSIGN(SearchResult r, Search(p, config, target_));
  const Funnel& f = r.funnel;
  std::printf("[ funnel ] generated %lld, pruned_abstract %lld, structures %lld, mapped %lld, "
              "proved %lld, unproved %lld (refuted %lld), survivors %lld, %.2f s\n",
              static_cast<long long>(f.generated), static_cast<long long>(f.pruned_abstract),
              static_cast<long long>(f.structures), static_cast<long long>(f.mapped),
              static_cast<long long>(f.proved), static_cast<long long>(f.unproved),
              static_cast<long long>(f.refuted), static_cast<long long>(f.survivors), r.elapsed_s);
  for (const auto& [rule, n] : f.pruned_by_rule) std::printf("[ pruned ] %s: %lld\n", rule.c_str(), static_cast<long long>(n));
  for (const FamilyResult& fam : r.families) {
    std::printf("[ family ] %.3f us  %s\n", fam.cost_us, OpsOf(*fam.graph).c_str());
  }
  EXPECT_FALSE(r.budget_exhausted);
  ASSERT_FALSE(r.families.empty());
  EXPECT_EQ(f.survivors, static_cast<int64_t>(r.families.size()));
  EXPECT_LE(f.proved, f.mapped);
  EXPECT_EQ(f.proved + f.unproved, f.mapped);
  // The best family: one kernel, K walked by the forloop, Σx² accumulated beside X·W.
  const SGraph& best = *r.families[0].graph;
  ASSERT_EQ(best.kernels().size(), 1u);
  EXPECT_EQ(OpsOf(best), "input input matmul acc_sum acc_sumsq_last inv_rms mul output");
  const BlockGraph& k = best.kernels()[0].block();
  EXPECT_EQ(best.ctx().ToString(k.forloop), "F");
  EXPECT_EQ(best.ctx().ToString(k.ops[0].fmap), "1");  // the forloop walks X's K dim
  EXPECT_EQ(best.ctx().ToString(k.ops[1].fmap), "0");  // and W's
  EXPECT_EQ(best.ctx().ToString(k.ops[1].map[0]), "1");  // the grid splits W's columns
  EXPECT_GT(r.families[0].proof_steps, 0u);
  // The whole-row (no forloop) families are cut by the SMT rules, not by the ranking alone.
  EXPECT_FALSE(f.pruned_by_rule.empty());
  // Every returned family is correct on the emulator at its preferred instance.
  const std::vector<Tensor> inputs = RandomInputs(p, /*seed=*/3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(p, inputs, EvalMode::kDevice));
  for (const FamilyResult& fam : r.families) {
    ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(*fam.graph, fam.best));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(inst, inputs));
    EXPECT_TRUE(WithinDefaultTolerance(got[0], want[0])) << SGraphToString(*fam.graph);
  }
}

TEST_F(SearchTest, IsDeterministic) {
  const Program p = RmsnormLinear(4, 128, 64);
  ASSERT_OK_AND_ASSIGN(SearchResult a, Search(p, SearchConfig{}, target_));
  ASSERT_OK_AND_ASSIGN(SearchResult b, Search(p, SearchConfig{}, target_));
  ASSERT_EQ(a.families.size(), b.families.size());
  for (size_t i = 0; i < a.families.size(); ++i) {
    EXPECT_TRUE(*a.families[i].graph == *b.families[i].graph) << i;
    EXPECT_EQ(a.families[i].cost_us, b.families[i].cost_us);
  }
  EXPECT_EQ(a.funnel.generated, b.funnel.generated);
  EXPECT_EQ(a.funnel.pruned_by_rule, b.funnel.pruned_by_rule);
}

TEST_F(SearchTest, PruningLosesNothing) {
  const Program p = RmsnormLinear(4, 128, 64);
  SearchConfig pruned;
  SearchConfig unpruned;
  unpruned.prune = false;
  ASSERT_OK_AND_ASSIGN(SearchResult a, Search(p, pruned, target_));
  ASSERT_OK_AND_ASSIGN(SearchResult b, Search(p, unpruned, target_));
  ASSERT_FALSE(a.families.empty());
  ASSERT_FALSE(b.families.empty());
  EXPECT_GE(b.families.size(), a.families.size());
  EXPECT_GE(b.families[0].cost_us, a.families[0].cost_us);
}

TEST_F(SearchTest, RejectsUnsupportedRequests) {
  const Program p = RmsnormLinear(4, 128, 64);
  SearchConfig two;
  two.max_kernels = 2;
  EXPECT_THAT(Search(p, two, target_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_kernels = 2: only one-kernel search is implemented")));
}

}  // namespace
}  // namespace prism::search
