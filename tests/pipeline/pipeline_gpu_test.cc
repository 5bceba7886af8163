// pipeline/ on a GPU (ctest label gpu; skips when GpuMode::kRequire finds no device):
// prism::Optimize's tuning options reach the tuner. With OptimizeOptions::tune_cache_dir the
// second run of a program is selected from the cache (Result::tune_cache_hit) with the same
// instance and files; another refine_rounds is another cache entry. Written on 2026-12-05
// without a device to run it on (the next device session runs it: bench/gpu/run_session.sh).
#include <string>

#include "gtest/gtest.h"
#include "prism/prism.h"
#include "testing/files.h"
#include "testing/programs.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

Program RmsNormLinear() { return testing::RmsnormLinear(16, 1024, 512); }

TEST(PipelineGpuTest, TheTuningCacheSelectsWithoutMeasuring) {
  OptimizeOptions o;
  o.search_budget_s = 3600;
  o.gpu_mode = GpuMode::kRequire;
  o.top_families = 1;
  o.instances_per_family = 4;
  o.refine_rounds = 0;
  o.build_report = false;
  o.tune_cache_dir = testing::FreshTempPath("pipeline_gpu", "tune_cache");
  absl::StatusOr<Result> first = Optimize(RmsNormLinear(), o);
  if (absl::IsUnavailable(first.status())) GTEST_SKIP() << first.status().message();
  ASSERT_OK(first.status());
  ASSERT_EQ(first->selection, Selection::kMeasured);
  EXPECT_FALSE(first->tune_cache_hit);
  EXPECT_EQ(first->tune_cache_note, "");

  ASSERT_OK_AND_ASSIGN(Result second, Optimize(RmsNormLinear(), o));
  EXPECT_TRUE(second.tune_cache_hit);
  EXPECT_EQ(second.selection, Selection::kMeasured);
  EXPECT_EQ(second.assignment, first->assignment);
  EXPECT_EQ(second.cuda_source, first->cuda_source);
  // The cached time (the confirmation rounds' median when there were any), not a new one.
  ASSERT_TRUE(second.measured_us.has_value());
  EXPECT_GT(*second.measured_us, 0);

  o.refine_rounds = 1;  // part of the cache key: measured again
  ASSERT_OK_AND_ASSIGN(Result third, Optimize(RmsNormLinear(), o));
  EXPECT_FALSE(third.tune_cache_hit);
  EXPECT_EQ(third.selection, Selection::kMeasured);
}

}  // namespace
}  // namespace prism
