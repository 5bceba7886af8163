// Symbolic resources evaluated at an assignment equal hand counts (each expected value is
// written as the product a reader can check against the tiles of the printed fixture).
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/expr/eval.h"
#include "prism/block/block_instance.h"
#include "prism/block/block_resources.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

struct Row {
  std::string fixture;
  int batch;  // workload sizes at this batch
  Assignment assignment;
  int kernel;         // -1: the sGraph's family metric `field`
  std::string field;  // a KernelResources field or a metric name
  int64_t expected;
};

Expr Field(const KernelResources& r, absl::string_view f) {
  if (f == "smem_bytes") return r.smem_bytes;
  if (f == "accumulator_elems") return r.accumulator_elems;
  if (f == "regs_per_thread") return r.regs_per_thread;
  if (f == "blocks") return r.blocks;
  if (f == "l2_bytes") return r.l2_bytes;
  if (f == "dram_bytes") return r.dram_bytes;
  if (f == "flops") return r.flops;
  if (f == "sfu_ops") return r.sfu_ops;
  return Expr();
}

TEST(BlockResourcesTest, HandCounts) {
  const Assignment rl = {{"g", 48}, {"F", 4}, {"T", 128}, {"S", 4}};
  const Assignment at = {{"gx", 2}, {"gy", 4}, {"gz", 8}, {"F", 4}, {"T", 128}, {"S", 2}};
  const std::vector<Row> rows = {
      // rmsnorm_linear, b = 8: Xt [16, 1024], Wt [1024, 128] (f16), 48 blocks, 4 iterations.
      // The walkthrough's example: 4·(16·1024 + 1024·128)·2 = 1.2 MB.
      {"rmsnorm_linear", 8, rl, 0, "smem_bytes", 4 * (16 * 1024 + 1024 * 128) * 2},
      {"rmsnorm_linear", 8, rl, 0, "accumulator_elems", 16 * 128 + 16},
      {"rmsnorm_linear", 8, rl, 0, "regs_per_thread", 17},  // ceil(2064 / 128)
      {"rmsnorm_linear", 8, rl, 0, "blocks", 48},
      {"rmsnorm_linear", 8, rl, 0, "l2_bytes", 48 * 4 * (16 * 1024 + 1024 * 128) * 2},
      {"rmsnorm_linear", 8, rl, 0, "dram_bytes", (16 * 4096 + 4096 * 6144 + 16 * 6144) * 2},
      {"rmsnorm_linear", 8, rl, 0, "flops",
       int64_t{48} * (4 * (2 * 16 * 128 * 1024 + 2 * 16 * 1024 + 16 * 128) + (2 * 16 + 16 * 128))},
      {"rmsnorm_linear", 8, rl, 0, "sfu_ops", 48 * 16},
      // gqa, b = 1, kernel 1: Qt [1, 64, 64] invariant, Ktt [1, 64, 128] and Vt [1, 128, 64]
      // per iteration (f16); 2·4·8 = 64 blocks, 4 iterations.
      {"gqa", 1, at, 0, "smem_bytes", 2 * (64 * 128 + 128 * 64) * 2 + 64 * 64 * 2},
      {"gqa", 1, at, 0, "accumulator_elems", 64 * 64 + 64},
      {"gqa", 1, at, 0, "regs_per_thread", 33},  // ceil(4160 / 128)
      {"gqa", 1, at, 0, "l2_bytes", 64 * (4 * (64 * 128 + 128 * 64) * 2 + 64 * 64 * 2)},
      {"gqa", 1, at, 0, "dram_bytes",
       (2 * 256 * 64 + 2 * 64 * 4096 + 2 * 4096 * 64) * 2 + (2 * 256 * 512 + 2 * 256 * 8) * 4},
      {"gqa", 1, at, 0, "flops",
       int64_t{64} * 4 * (2 * 64 * 128 * 64 + 64 * 128 + 2 * 64 * 64 * 128 + 64 * 64 + 64 * 128)},
      {"gqa", 1, at, 0, "sfu_ops", 64 * 4 * 64 * 128},
      // gqa kernel 2: Nt [1, 64, 64] and Dt [1, 64, 1] (f32) per iteration, 8 blocks, gz = 8
      // iterations.
      {"gqa", 1, at, 1, "smem_bytes", 2 * (64 * 64 + 64) * 4},
      {"gqa", 1, at, 1, "l2_bytes", 8 * 8 * (64 * 64 + 64) * 4},
      {"gqa", 1, at, 1, "dram_bytes", (2 * 256 * 512 + 2 * 256 * 8) * 4 + 2 * 256 * 64 * 2},
      {"gqa", 1, at, 1, "flops", 8 * (8 * (64 * 64 + 64) + 64 * 64)},
      // gqa family metrics: capacity = max over kernels, work = sums.
      {"gqa", 1, at, -1, "smem_bytes", 2 * (64 * 128 + 128 * 64) * 2 + 64 * 64 * 2},
      {"gqa", 1, at, -1, "regs_per_thread", 33},
      {"gqa", 1, at, -1, "threads_per_block", 128},
      {"gqa", 1, at, -1, "grid_z", 8},
      {"gqa", 1, at, -1, "grid_blocks", 64},
      {"gqa", 1, at, -1, "dram_bytes",
       (2 * 256 * 64 + 2 * 64 * 4096 + 2 * 4096 * 64) * 2 + 2 * (2 * 256 * 512 + 2 * 256 * 8) * 4 +
           2 * 256 * 64 * 2},
      {"gqa", 1, at, -1, "l2_bytes",
       64 * (4 * (64 * 128 + 128 * 64) * 2 + 64 * 64 * 2) + 8 * 8 * (64 * 64 + 64) * 4},
      {"gqa", 1, at, -1, "kernels", 2},
      // Online accumulators keep a running max per row besides their sums.
      {"gqa_online", 1, at, 0, "accumulator_elems",
       64 /*M*/ + (64 + 64) /*L*/ + (64 * 64 + 64) /*A*/},
      {"gqa_online", 1, at, 0, "regs_per_thread", 34},  // ceil(4352 / 128)
      // ntrans, b = 8: three [2, 4096] f16 tiles loaded once per block, 4 blocks.
      {"ntrans", 8, {{"g", 4}, {"T", 256}}, 0, "smem_bytes", 3 * 2 * 4096 * 2},
      {"ntrans", 8, {{"g", 4}, {"T", 256}}, 0, "regs_per_thread", 0},
      {"ntrans", 8, {{"g", 4}, {"T", 256}}, 0, "l2_bytes", 4 * 3 * 2 * 4096 * 2},
      {"ntrans", 8, {{"g", 4}, {"T", 256}}, 0, "flops", 4 * (3 * 8192 * 2 + 3 * 8192)},
      {"ntrans", 8, {{"g", 4}, {"T", 256}}, 0, "sfu_ops", 4 * 2 * 2},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(absl::StrCat(r.fixture, " kernel ", r.kernel, " ", r.field));
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture f,
        fixtures::MakeFixture(r.fixture, fixtures::WorkloadSizes(r.fixture, r.batch)));
    ASSERT_OK_AND_ASSIGN(SGraphAnalysis info, Validate(f.graph));
    ASSERT_OK_AND_ASSIGN(SGraphResources res, ComputeResources(f.graph, info));
    ASSERT_OK(Instantiate(f.graph, r.assignment).status());
    const Expr e = r.kernel < 0 ? res.Metric(r.field) : Field(res.kernels[r.kernel], r.field);
    ASSERT_TRUE(e.valid());
    ASSERT_OK_AND_ASSIGN(int64_t value, EvaluateInt(f.graph.ctx(), e, r.assignment));
    EXPECT_EQ(value, r.expected) << f.graph.ctx().ToString(e);
  }
}

// Every metric of every fixture evaluates (no division by zero, no overflow) at valid
// assignments, capacity metrics are positive where they must be, and the metric names are the
// standard vocabulary of prune/family.h.
TEST(BlockResourcesTest, MetricsEvaluateForEveryFixture) {
  for (const std::string& name : fixtures::FixtureNames()) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(name, fixtures::WorkloadSizes(name, 8)));
    ASSERT_OK_AND_ASSIGN(SGraphAnalysis info, Validate(f.graph));
    ASSERT_OK_AND_ASSIGN(SGraphResources res, ComputeResources(f.graph, info));
    std::vector<std::string> names;
    for (const auto& [n, e] : res.metrics) names.push_back(n);
    EXPECT_THAT(names,
                ::testing::ElementsAre("smem_bytes", "regs_per_thread", "threads_per_block",
                                       "grid_x", "grid_y", "grid_z", "grid_blocks", "dram_bytes",
                                       "l2_bytes", "flops", "sfu_ops", "kernels"));
    ASSERT_OK_AND_ASSIGN(std::vector<Assignment> as, SampleAssignments(f.graph, 8, 5));
    for (const Assignment& a : as) {
      for (const auto& [n, e] : res.metrics) {
        ASSERT_OK_AND_ASSIGN(int64_t v, EvaluateInt(f.graph.ctx(), e, a));
        EXPECT_GE(v, n == "regs_per_thread" || n == "sfu_ops" ? 0 : 1) << n;
      }
    }
  }
}

// A graph of library kernels only (the search's concat of inputs): work metrics and the
// launch count, and no capacity metric (no block graph defines one; the pruner then reads
// them as unknown rather than as one thread per block). Graphs with a block graph keep all
// twelve (MetricsEvaluateForEveryFixture).
TEST(BlockResourcesTest, LibraryKernelsAloneHaveNoCapacityMetrics) {
  SGraph g("concat");
  const int a = g.AddInput("A", DType::kF16, Shape{8, 4096});
  const int b = g.AddInput("B", DType::kF16, Shape{8, 1024});
  LibraryKernel lk;
  lk.op = OpKind::kConcat;
  lk.operands = {a, b};
  lk.result = g.AddOutput("Y", DType::kF16, Shape{8, 5120});
  lk.dim = -1;
  g.AddLibraryKernel("k0", lk);
  ASSERT_OK_AND_ASSIGN(SGraphAnalysis info, Validate(g));
  ASSERT_OK_AND_ASSIGN(SGraphResources res, ComputeResources(g, info));
  const struct {
    const char* name;
    int64_t value;
  } kWant[] = {{"dram_bytes", 2 * (8 * 4096 + 8 * 1024 + 8 * 5120)},
               {"l2_bytes", 2 * (8 * 4096 + 8 * 1024 + 8 * 5120)},
               {"flops", 0},
               {"sfu_ops", 0},
               {"kernels", 1}};
  ASSERT_EQ(res.metrics.size(), std::size(kWant));
  for (size_t i = 0; i < std::size(kWant); ++i) {
    SCOPED_TRACE(kWant[i].name);
    EXPECT_EQ(res.metrics[i].first, kWant[i].name);
    ASSERT_OK_AND_ASSIGN(int64_t v, EvaluateInt(g.ctx(), res.metrics[i].second, Assignment{}));
    EXPECT_EQ(v, kWant[i].value);
  }
}

}  // namespace
}  // namespace prism
