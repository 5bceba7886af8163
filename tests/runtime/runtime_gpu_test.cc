// runtime/ on a GPU (ctest label gpu; skips without a driver or device): the device query and
// the measurement of a generated rmsnorm_linear instance against the emulator, alone and
// batched with a trapping kernel.
#include <string>
#include <vector>

#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/block/emulator.h"
#include "prism/codegen/codegen.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "prism/runtime/runtime.h"
#include "testing/status_matchers.h"

namespace prism::runtime {
namespace {
using ::prism::testing::StatusIs;

TEST(RuntimeGpuTest, QueriesAndMeasures) {
  absl::StatusOr<DeviceInfo> dev = QueryDevice(0);
  if (!dev.ok()) GTEST_SKIP() << dev.status().message();
  if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  EXPECT_FALSE(dev->name.empty());
  EXPECT_GT(dev->sms, 0);
  EXPECT_GE(dev->sm(), 80);
  EXPECT_GT(dev->driver_version, 0);
  EXPECT_THAT(
      QueryDevice(1000).status(),
      StatusIs(absl::StatusCode::kUnavailable, ::testing::StartsWith("no GPU with ordinal 1000")));

  ASSERT_OK_AND_ASSIGN(
      fixtures::Fixture f,
      fixtures::MakeFixture("rmsnorm_linear", {{"M", 16}, {"K", 1024}, {"N", 512}}));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(f.graph, {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 2}}));
  ASSERT_OK_AND_ASSIGN(codegen::GeneratedCode code, codegen::GenerateCuda(p));
  // Compiled in a child: NVRTC here would break cuInit in the measuring child.
  ASSERT_OK_AND_ASSIGN(auto compiled, CompileInChild(CompileCache(""), {code.source}, dev->sm()));
  ASSERT_EQ(compiled.size(), 1u);
  ASSERT_OK(compiled[0].status());
  const CachedCompile& r = *compiled[0];
  const std::vector<Tensor> inputs = RandomInputs(f.program, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> ref, Emulate(p, inputs));
  ASSERT_OK_AND_ASSIGN(Measurement m, MeasureInChild(0, r.cubin, code.launches, p, inputs, ref));
  EXPECT_TRUE(m.matches) << m.relative_error;
  EXPECT_LT(m.relative_error, 2e-3);
  EXPECT_GT(m.median_us, 0);
  EXPECT_GE(m.input_sets, 2);
  // A wrong reference is reported as a mismatch, not an error.
  std::vector<Tensor> wrong = ref;
  for (double& v : wrong[0].data) v += 100;
  ASSERT_OK_AND_ASSIGN(Measurement w, MeasureInChild(0, r.cubin, code.launches, p, inputs, wrong));
  EXPECT_FALSE(w.matches);

  // Batched (one child for several programs): a kernel that traps is recorded as failed and
  // the jobs after it are measured in a fresh child.
  std::string trapping = code.source;
  const std::string body = "  using namespace prism_dev;\n";
  const size_t at = trapping.find(body);
  ASSERT_NE(at, std::string::npos);
  trapping.insert(at + body.size(), "  asm volatile(\"trap;\");\n");
  ASSERT_OK_AND_ASSIGN(auto both,
                       CompileInChild(CompileCache(""), {trapping}, dev->sm()));
  ASSERT_OK(both[0].status());
  const std::string& bad = both[0]->cubin;
  const std::vector<MeasureJob> jobs = {{&r.cubin, &code.launches, &p},
                                        {&bad, &code.launches, &p},
                                        {&r.cubin, &code.launches, &p},
                                        {&r.cubin, &code.launches, &p}};
  ASSERT_OK_AND_ASSIGN(auto all, MeasureAllInChild(0, jobs, inputs, ref));
  ASSERT_EQ(all.size(), 4u);
  for (int i : {0, 2, 3}) {
    ASSERT_OK(all[i].status()) << i;
    EXPECT_TRUE(all[i]->matches) << i;
    EXPECT_GT(all[i]->median_us, 0);
  }
  EXPECT_FALSE(all[1].ok());
  // Past the deadline nothing starts.
  ASSERT_OK_AND_ASSIGN(auto late, MeasureAllInChild(0, jobs, inputs, ref, {}, absl::Now()));
  for (const auto& m : late) EXPECT_THAT(m.status(), StatusIs(absl::StatusCode::kDeadlineExceeded, "not started: the deadline passed"));

  // Early stop: a program far slower than the fastest matching one measured before it in the
  // same child stops after early_stop_replays timed replays; the first program, and every
  // program without the option, run all of them.
  std::string slow = code.source;
  slow.insert(at + body.size(),
              "  { const long long t0 = clock64(); while (clock64() - t0 < 2000000) {} }\n");
  ASSERT_OK_AND_ASSIGN(auto slow_compiled, CompileInChild(CompileCache(""), {slow}, dev->sm()));
  ASSERT_OK(slow_compiled[0].status());
  const std::string& slow_cubin = slow_compiled[0]->cubin;
  const std::vector<MeasureJob> fast_slow = {{&slow_cubin, &code.launches, &p},
                                             {&r.cubin, &code.launches, &p},
                                             {&slow_cubin, &code.launches, &p}};
  MeasureOptions early;
  early.early_stop_factor = 1.5;
  for (const auto& [factor, last_replays] : {std::pair{1.5, 5}, std::pair{0.0, 50}}) {
    early.early_stop_factor = factor;
    ASSERT_OK_AND_ASSIGN(auto fs, MeasureAllInChild(0, fast_slow, inputs, ref, early));
    ASSERT_EQ(fs.size(), 3u);
    for (const auto& m : fs) {
      ASSERT_OK(m.status());
      EXPECT_TRUE(m->matches);
    }
    EXPECT_EQ(fs[0]->replays, 50);  // nothing measured before it
    EXPECT_EQ(fs[1]->replays, 50);
    EXPECT_EQ(fs[2]->replays, last_replays) << factor;
    EXPECT_GT(fs[2]->median_us, 1.5 * fs[1]->median_us);
  }

  // Compiled and measured side by side in one child: the good programs match and come back
  // with their cubins, the trapping one fails after compiling (a fresh child goes on), the one
  // that is not CUDA does not compile.
  const std::string not_cuda = "not CUDA";
  const std::vector<CompileMeasureJob> cm = {{&code.source, &code.launches, &p},
                                             {&trapping, &code.launches, &p},
                                             {&not_cuda, &code.launches, &p},
                                             {&code.source, &code.launches, &p}};
  for (int threads : {1, 0}) {
    ASSERT_OK_AND_ASSIGN(auto res, CompileAndMeasureInChild(0, CompileCache(""), dev->sm(), cm,
                                                            inputs, ref, {}, absl::InfiniteFuture(),
                                                            threads));
    ASSERT_EQ(res.size(), 4u);
    for (int i : {0, 3}) {
      ASSERT_OK(res[i].compiled.status()) << i;
      EXPECT_FALSE(res[i].compiled->cubin.empty()) << i;
      ASSERT_OK(res[i].measured.status()) << i;
      EXPECT_TRUE(res[i].measured->matches) << i << " " << res[i].measured->relative_error;
      EXPECT_GT(res[i].measured->median_us, 0);
    }
    ASSERT_OK(res[1].compiled.status());
    EXPECT_TRUE(res[1].compiled->cubin.empty());
    EXPECT_FALSE(res[1].measured.ok());
    EXPECT_THAT(res[2].compiled.status(), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
    EXPECT_THAT(res[2].measured.status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, "not measured: it did not compile"));
  }
}

}  // namespace
}  // namespace prism::runtime
