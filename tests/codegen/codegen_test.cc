// GenerateCuda on the hand-written fixtures: what is generated, determinism,
// and the Unimplemented statuses for block ops the generator does not cover.
#include "prism/codegen/codegen.h"

#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "testing/status_matchers.h"

namespace prism::codegen {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<BlockProgram> RmsNormLinear(int batch, const Assignment& a) {
  PRISM_ASSIGN_OR_RETURN(
      fixtures::Fixture f,
      fixtures::MakeFixture("rmsnorm_linear", fixtures::WorkloadSizes("rmsnorm_linear", batch)));
  return Instantiate(f.graph, a);
}

TEST(CodegenTest, RmsNormLinearWalkthroughInstance) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       RmsNormLinear(8, {{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  ASSERT_EQ(code.launches.size(), 1u);
  const LaunchConfig& l = code.launches[0];
  EXPECT_EQ(l.function, "prism_rmsnorm_linear_k0");
  EXPECT_EQ(l.grid, (std::array<int64_t, 3>{192, 1, 1}));
  EXPECT_EQ(l.threads, 128);
  // Stage: X tile 16×(128+8) + W tile 128×(32+8) halves = 4352 + 10240 bytes; 3
  // stages.
  EXPECT_EQ(l.stage_bytes, 16 * 136 * 2 + 128 * 40 * 2);
  EXPECT_EQ(l.dynamic_smem_bytes, 3 * l.stage_bytes);
  // 4 warps along K (8 k-chunks), 4 n8 tiles × 4 floats + Σx² lo/hi.
  EXPECT_EQ(l.accumulator_regs, 4 * 4 + 2);
  EXPECT_THAT(code.source, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
  EXPECT_THAT(code.source, HasSubstr("cp.async.cg.shared.global"));
  EXPECT_THAT(code.source,
              HasSubstr("LoadBFragmentX4("));  // ldmatrix.x4.trans B tiles
  EXPECT_THAT(code.source,
              HasSubstr("LoadAFragment<true>"));  // Σx² fused into A loads
  EXPECT_THAT(code.source, HasSubstr("extern \"C\" __global__ void __launch_bounds__(128) "
                                     "prism_rmsnorm_linear_k0("));
  EXPECT_THAT(code.source, HasSubstr("1.0f / sqrtf("));  // inv_rms
  EXPECT_THAT(code.host_header, HasSubstr("inline cudaError_t Launch_k0(const void* t_X, "
                                          "const void* t_W, void* t_Y"));
  const nlohmann::json j = nlohmann::json::parse(code.launch_json);
  EXPECT_EQ(j["kernels"][0]["grid"], nlohmann::json({192, 1, 1}));
  EXPECT_EQ(j["kernels"][0]["block"], nlohmann::json({128, 1, 1}));
  EXPECT_EQ(j["kernels"][0]["dynamic_smem_bytes"], l.dynamic_smem_bytes);
  EXPECT_EQ(j["kernels"][0]["args"][2]["access"], "write");
}

TEST(CodegenTest, Deterministic) {
  const Assignment a = {{"g", 96}, {"F", 16}, {"T", 256}, {"S", 2}};
  ASSERT_OK_AND_ASSIGN(BlockProgram p1, RmsNormLinear(1, a));
  ASSERT_OK_AND_ASSIGN(BlockProgram p2, RmsNormLinear(1, a));
  ASSERT_OK_AND_ASSIGN(GeneratedCode c1, GenerateCuda(p1));
  ASSERT_OK_AND_ASSIGN(GeneratedCode c2, GenerateCuda(p2));
  EXPECT_EQ(c1.source, c2.source);
  EXPECT_EQ(c1.launch_json, c2.launch_json);
  EXPECT_EQ(c1.host_header, c2.host_header);
}

TEST(CodegenTest, NameSuffix) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       RmsNormLinear(1, {{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}));
  CodegenOptions options;
  options.name_suffix = "_v7";
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
  EXPECT_EQ(code.launches[0].function, "prism_rmsnorm_linear_k0_v7");
}

TEST(CodegenTest, SplitsNAcrossWarpsWhenKIsShort) {
  // K tile 4096/256 = 16 → one 16-chunk; 8 warps split N = 6144/48 = 128 (16 n8
  // tiles).
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       RmsNormLinear(1, {{"g", 48}, {"F", 256}, {"T", 256}, {"S", 2}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  EXPECT_THAT(code.source, HasSubstr("warps 1 along K x 8 along N"));
  EXPECT_THAT(code.source, HasSubstr("if (wn == 0) LoadAFragment<true>"));
}

TEST(CodegenTest, SharedMemoryLimit) {
  // gated_mlp b=1, K tile 512, two 512×(32+8) W tiles per stage, 3 stages: 250
  // KB > 227 KiB.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gated_mlp", fixtures::WorkloadSizes("gated_mlp", 1)));
  ASSERT_OK_AND_ASSIGN(
      BlockProgram p, Instantiate(f.graph, {{"g", 128}, {"h", 1}, {"F", 8}, {"T", 512}, {"S", 3}}));
  EXPECT_THAT(GenerateCuda(p), StatusIs(absl::StatusCode::kResourceExhausted,
                                        HasSubstr("over the limit of 232448")));
  CodegenOptions big;
  big.max_dynamic_smem_bytes = 1 << 20;
  EXPECT_OK(GenerateCuda(p, big));
}

// Every fixture: either generated, or Unimplemented naming the kernel and op.
struct FixtureCase {
  const char* fixture;
  absl::StatusCode code;
  const char* message;  // substring of the status message ("" for OK)
};

const FixtureCase kFixtureCases[] = {
    {"rmsnorm_linear", absl::StatusCode::kOk, ""},
    {"rmsnorm_linear_square", absl::StatusCode::kOk, ""},
    {"rmsnorm_linear_splitk", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"gated_mlp", absl::StatusCode::kOk, ""},
    {"lora", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"ntrans", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"gqa", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"qknorm_gqa", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"gqa_online", absl::StatusCode::kUnimplemented, "codegen: kernel"},
    {"gqa_flash", absl::StatusCode::kUnimplemented, "codegen: kernel"},
};

TEST(CodegenTest, EveryFixtureGeneratesOrSaysWhatIsMissing) {
  for (const FixtureCase& c : kFixtureCases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, 8)));
    ASSERT_OK_AND_ASSIGN(std::vector<Assignment> as, SampleAssignments(f.graph, /*seed=*/3, 4));
    for (const Assignment& a : as) {
      ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, a));
      absl::StatusOr<GeneratedCode> code = GenerateCuda(p);
      if (&a == &as.front()) std::cout << c.fixture << ": " << code.status() << "\n";
      if (c.code == absl::StatusCode::kOk) {
        // Instances outside the template's shape limits (e.g. a K tile under
        // 16) may be Unimplemented, or ResourceExhausted (shared memory), never
        // another error.
        if (!code.ok() && code.status().code() != absl::StatusCode::kResourceExhausted) {
          EXPECT_THAT(code.status(),
                      StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("codegen: kernel")));
        }
      } else {
        EXPECT_THAT(code.status(), StatusIs(c.code, HasSubstr(c.message)));
      }
    }
  }
}

// Fixed instances at WORKLOADS.md sizes (b = 8) whose first unsupported op is
// pinned.
struct MissingCase {
  const char* fixture;
  Assignment assignment;
  absl::StatusCode code;
  const char* message;
};

TEST(CodegenTest, NamesTheMissingOp) {
  const MissingCase cases[] = {
      MissingCase{"lora",
                  {{"g", 128}, {"F", 16}, {"T", 256}, {"S", 3}},
                  absl::StatusCode::kUnimplemented,
                  "kernel k0, op Bt (input): loop-invariant input tiles are "
                  "not supported"},
      MissingCase{"rmsnorm_linear",
                  {{"g", 48}, {"F", 4}, {"T", 256}, {"S", 3}},
                  absl::StatusCode::kResourceExhausted,
                  "bytes of shared memory"}};
  for (const MissingCase& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, 8)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    EXPECT_THAT(GenerateCuda(p), StatusIs(c.code, HasSubstr(c.message)));
  }
}

}  // namespace
}  // namespace prism::codegen
