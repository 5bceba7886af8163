// tune/: Optimize with use_gpu = false (the cost model selects) on small programs: the selected
// family, the files written, NVRTC compilation for sm_90, determinism, and the error paths by
// exact message.
#include "prism/tune/tune.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/codegen/nvrtc.h"
#include "prism/runtime/runtime.h"
#include "testing/status_matchers.h"

namespace prism::tune {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempDir(const std::string& name) {
  const std::string d =
      ::testing::TempDir() + "/prism_tune_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  return d;
}

// Options without the search's wall-clock budget: results must not depend on the machine's
// load (a search that runs out of budget under ASan returns fewer families).
TuneOptions Options(bool use_gpu) {
  TuneOptions o;
  o.use_gpu = use_gpu;
  o.search.budget = absl::Hours(1);
  return o;
}

struct PipelineCase {
  const char* fixture;
  fixtures::Sizes sizes;
  int kernels;              // of the selected family
  const char* kernel_text;  // a substring of kernel.cu
  // Run twice and compare the files byte for byte (off for gqa only, to keep the test short
  // under sanitizers: its search dominates; the search's determinism is tested in search/).
  bool check_determinism = true;
};

// One row of the pipeline table: Optimize without a GPU, the files, determinism.
void CheckPipeline(const PipelineCase& c) {
  SCOPED_TRACE(c.fixture);
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(c.fixture, c.sizes));
  const TuneOptions options = Options(false);
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  EXPECT_EQ(r.method, Method::kCostModel);
  EXPECT_EQ(r.no_gpu_reason, "--no-gpu");
  EXPECT_FALSE(r.device.has_value());
  ASSERT_GE(r.selected, 0);
  EXPECT_EQ(r.chosen_family().kernels, c.kernels);
  // The cheapest generated candidate by the cost model.
  for (const Candidate& k : r.candidates) EXPECT_GE(k.cost_us, r.chosen().cost_us);
  EXPECT_THAT(r.code.source, HasSubstr(c.kernel_text));
  if (codegen::NvrtcAvailable()) {
    EXPECT_EQ(r.sm, 90);
    EXPECT_TRUE(r.chosen().compiled);
    ASSERT_OK(codegen::CompileWithNvrtc(r.code.source, 90).status());
  }
  const std::string dir = TempDir(std::string(c.fixture) + "_a");
  ASSERT_OK(WriteOutputs(r, "test", dir + "/nested"));
  for (const char* name : {"kernel.cu", "launch.json", "host.h", "family.json"}) {
    EXPECT_FALSE(ReadFile(dir + "/nested/" + name).empty()) << name;
  }
  EXPECT_EQ(ReadFile(dir + "/nested/kernel.cu"), r.code.source);
  const nlohmann::json fam = nlohmann::json::parse(ReadFile(dir + "/nested/family.json"));
  EXPECT_EQ(fam["selection"], "cost model");
  EXPECT_EQ(fam["kernels"], c.kernels);
  EXPECT_TRUE(fam["assignment"].is_object());
  EXPECT_TRUE(fam["sgraph"].is_object());
  EXPECT_FALSE(fam.contains("measured_us"));

  // Determinism: the same input gives byte-identical files.
  if (!c.check_determinism) {
    std::filesystem::remove_all(dir);
    return;
  }
  ASSERT_OK_AND_ASSIGN(TuneResult again, Optimize(f.program, target, options));
  ASSERT_OK(WriteOutputs(again, "test", dir + "/again"));
  for (const char* name : {"kernel.cu", "launch.json", "host.h", "family.json"}) {
    EXPECT_EQ(ReadFile(dir + "/nested/" + name), ReadFile(dir + "/again/" + name)) << name;
  }
  std::filesystem::remove_all(dir);
}

// The table's rows are separate tests so that ctest runs them in parallel.
const PipelineCase kRmsNormLinear = {
    "rmsnorm_linear", {{"M", 4}, {"K", 128}, {"N", 64}}, 1, "mma.sync"};
const PipelineCase kGqa = {"gqa",
                           {{"G", 2}, {"Lq", 16}, {"D", 32}, {"L", 128}},
                           2,
                           "ex2.approx",
                           /*check_determinism=*/false};

TEST(OptimizeTest, RmsNormLinearByTheCostModelWithoutAGpu) { CheckPipeline(kRmsNormLinear); }
TEST(OptimizeTest, GqaByTheCostModelWithoutAGpu) { CheckPipeline(kGqa); }

TEST(OptimizeTest, ErrorsByExactMessage) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  // No family of lora can be generated yet (loop-invariant B tile in the GEMM template).
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture lora,
                       fixtures::MakeFixture("lora", fixtures::ReducedSizes("lora")));
  const TuneOptions options = Options(false);
  EXPECT_THAT(Optimize(lora.program, target, options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("no family can be generated as CUDA yet: ")));
  TuneOptions bad = options;
  bad.top_families = 0;
  EXPECT_THAT(Optimize(lora.program, target, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "top_families and instances_per_family must be at least 1"));

  // --gpu N when there is no driver: an error, not a fallback.
  if (!runtime::DriverLibraryPresent()) {
    TuneOptions gpu = Options(true);
    gpu.require_gpu = true;
    EXPECT_THAT(Optimize(lora.program, target, gpu).status(),
                StatusIs(absl::StatusCode::kUnavailable,
                         StartsWith("--gpu 0: no CUDA driver: dlopen(\"libcuda.so.1\") failed (")));
    // Without require_gpu: falls back to the cost model and says why.
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture f,
        fixtures::MakeFixture("rmsnorm_linear", {{"M", 4}, {"K", 128}, {"N", 64}}));
    const TuneOptions fallback = Options(true);
    ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, fallback));
    EXPECT_EQ(r.method, Method::kCostModel);
    EXPECT_THAT(r.no_gpu_reason, StartsWith("no CUDA driver: dlopen(\"libcuda.so.1\") failed ("));
  }

  // An output directory that cannot be created (below a regular file).
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("rmsnorm_linear", {{"M", 4}, {"K", 128}, {"N", 64}}));
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  const std::string dir = TempDir("err");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/file") << "x";
  EXPECT_THAT(WriteOutputs(r, "test", dir + "/file/out"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("cannot create the output directory '" + dir + "/file/out': ")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace prism::tune
