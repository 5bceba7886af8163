// GenerateCuda on the hand-written fixtures: what is generated, determinism,
// and the Unimplemented statuses for block ops the generator does not cover.
#include "prism/codegen/codegen.h"

#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
    {"gqa", absl::StatusCode::kOk, ""},
    {"qknorm_gqa", absl::StatusCode::kOk, ""},
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
      // 64 threads = 2 warps for 16 m16 row tiles (Lq/gy = 256 rows of one head).
      MissingCase{"gqa",
                  {{"gx", 16}, {"gy", 1}, {"gz", 8}, {"F", 8}, {"T", 64}, {"S", 2}},
                  absl::StatusCode::kUnimplemented,
                  "kernel partial_kv: 16 m16 row tiles (16 per head) over 2 warps: expected 1 "
                  "or 2 tiles of one head per warp"},
      // KV chunk 4096/64/4 = 16 columns split over 8 warps per row tile.
      MissingCase{"qknorm_gqa",
                  {{"gx", 16}, {"gy", 16}, {"gz", 64}, {"F", 4}, {"T", 256}, {"S", 2}},
                  absl::StatusCode::kUnimplemented,
                  "kernel partial_kv, op S (matmul): the KV chunk (16 columns) split over 8 "
                  "warps must give multiples of 16 columns"},
      MissingCase{"gqa_online",
                  {{"gx", 16}, {"gy", 2}, {"gz", 4}, {"F", 16}, {"T", 256}, {"S", 2}},
                  absl::StatusCode::kUnimplemented,
                  "kernel partial_kv, op Qt (input): only rank-2 tiles are supported"},
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

namespace prism::codegen {
namespace {

// Split-KV attention (gqa, qknorm_gqa at WORKLOADS.md sizes): two kernels, the attention
// template then the pointwise combine.
struct AttentionCase {
  const char* fixture;
  int batch;
  Assignment assignment;
  int64_t smem;         // partial_kv's dynamic shared memory
  const char* summary;  // partial_kv's comment line
  int64_t combine_parts;
};

TEST(CodegenTest, SplitKvAttention) {
  const AttentionCase cases[] = {
      // Q 128×(64+8) halves; 2 stages of K 64×(64+8) + V 64×(64+8) halves.
      {"gqa", 1, {{"gx", 2}, {"gy", 2}, {"gz", 16}, {"F", 4}, {"T", 256}, {"S", 2}},
       128 * 72 * 2 + 2 * (64 * 72 * 2 * 2),
       "8 m16 tile(s), 1 per warp, 1 warp(s) per tile along the chunk", 128 * 64 / 256},
      // 4 row tiles, 8 warps: 2 warps per tile along the 128-column chunk; the reduction
      // buffer (2 × 64 rows × 64 + 2 × 64 floats) is under the 3 stages.
      {"gqa", 8, {{"gx", 16}, {"gy", 4}, {"gz", 2}, {"F", 16}, {"T", 256}, {"S", 3}},
       64 * 72 * 2 + 3 * (64 * 136 * 2 + 128 * 72 * 2),
       "4 m16 tile(s), 1 per warp, 2 warp(s) per tile along the chunk", 64 * 64 / 256},
      // Two heads per block, 2 tiles per warp; rms(V) adds its factor row (2 × 64 floats).
      {"qknorm_gqa", 1, {{"gx", 1}, {"gy", 4}, {"gz", 16}, {"F", 4}, {"T", 128}, {"S", 2}},
       2 * 64 * 72 * 2 + 2 * 64 * 4 + 2 * 2 * (64 * 72 * 2 * 2),
       "8 m16 tile(s), 2 per warp, 1 warp(s) per tile along the chunk; rms(Q) as row scale; "
       "rms(V) as P column scale", 2 * 64 * 64 / 128},
  };
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                  c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 2u);
    const LaunchConfig& k1 = code.launches[0];
    const LaunchConfig& k2 = code.launches[1];
    EXPECT_EQ(k1.function, absl::StrCat("prism_", c.fixture, "_partial_kv"));
    EXPECT_EQ(k2.function, absl::StrCat("prism_", c.fixture, "_combine"));
    EXPECT_EQ(k1.grid, (std::array<int64_t, 3>{c.assignment.at("gx"), c.assignment.at("gy"),
                                               c.assignment.at("gz")}));
    // combine: each graph block is launched as (its elements / T) blocks along z.
    EXPECT_EQ(k2.grid, (std::array<int64_t, 3>{c.assignment.at("gx"), c.assignment.at("gy"),
                                               c.combine_parts}));
    EXPECT_EQ(k1.dynamic_smem_bytes, c.smem);
    EXPECT_EQ(k2.dynamic_smem_bytes, 0);
    EXPECT_THAT(code.source, HasSubstr(c.summary));
    EXPECT_THAT(code.source, HasSubstr("MmaM16N8K16(o[tp][2 * np], a, b0)"));  // P·V on tensor cores
    EXPECT_THAT(code.source, HasSubstr("float* __restrict__ t_Num"));
    EXPECT_THAT(code.source, HasSubstr("prism_dev::f16_t* __restrict__ t_O, const float* "
                                       "__restrict__ t_Num, const float* __restrict__ t_Den"));
    EXPECT_THAT(code.host_header, HasSubstr("static_cast<const float*>(t_Num)"));
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["args"][3]["dtype"], "f32");
    EXPECT_EQ(j["kernels"][0]["args"][3]["access"], "write");
    // Deterministic.
    ASSERT_OK_AND_ASSIGN(BlockProgram p2, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p2));
    EXPECT_EQ(code.source, again.source);
    EXPECT_EQ(code.launch_json, again.launch_json);
    EXPECT_EQ(code.host_header, again.host_header);
  }
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// CodegenOptions::attention_tiles_per_warp: 2 makes a warp's two row tiles share the K and V
// fragments; instances it does not fit, and bad values, are refused.
TEST(CodegenTest, AttentionTilesPerWarp) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", fixtures::WorkloadSizes("gqa", 8)));
  // 4 row tiles (Lq/gy = 64), 4 warps.
  ASSERT_OK_AND_ASSIGN(
      BlockProgram p,
      Instantiate(f.graph, {{"gx", 16}, {"gy", 4}, {"gz", 2}, {"F", 16}, {"T", 128}, {"S", 3}}));
  CodegenOptions two;
  two.attention_tiles_per_warp = 2;
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, two));
  EXPECT_THAT(code.source, HasSubstr("4 m16 tile(s), 2 per warp, 2 warp(s) per tile along the chunk"));
  EXPECT_THAT(code.source, HasSubstr("float sc[2][8][4] = {};"));
  EXPECT_EQ(code.launches[0].accumulator_regs, 2 * (64 / 8 * 4 + 4 + 8 * 4));
  ASSERT_OK_AND_ASSIGN(GeneratedCode auto_code, GenerateCuda(p));
  EXPECT_THAT(auto_code.source,
              HasSubstr("4 m16 tile(s), 1 per warp, 1 warp(s) per tile along the chunk"));
  // Lq/gy = 16: one tile per head, so two tiles of a warp would span two heads.
  ASSERT_OK_AND_ASSIGN(
      BlockProgram q,
      Instantiate(f.graph, {{"gx", 8}, {"gy", 16}, {"gz", 2}, {"F", 16}, {"T", 64}, {"S", 3}}));
  EXPECT_THAT(GenerateCuda(q, two),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("kernel partial_kv: 2 m16 row tiles (1 per head) over 2 warps: "
                                 "expected 1 or 2 tiles of one head per warp")));
  CodegenOptions bad;
  bad.attention_tiles_per_warp = 3;
  EXPECT_THAT(GenerateCuda(p, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("attention_tiles_per_warp is 3, expected 0 (auto), 1 or 2")));
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// CodegenOptions::attention_pipeline: S for chunk i+1 before the softmax of chunk i; needs 3
// stages.
TEST(CodegenTest, AttentionPipeline) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                "qknorm_gqa", fixtures::WorkloadSizes("qknorm_gqa", 1)));
  CodegenOptions pipe;
  pipe.attention_pipeline = true;
  ASSERT_OK_AND_ASSIGN(
      BlockProgram p,
      Instantiate(f.graph, {{"gx", 2}, {"gy", 8}, {"gz", 8}, {"F", 4}, {"T", 128}, {"S", 4}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, pipe));
  EXPECT_THAT(code.source, HasSubstr("CpAsyncWait<kStages - 3>();"));
  EXPECT_THAT(code.source, HasSubstr("float sn[1][8][4] = {};"));
  // rms(V)'s factors double-buffered: Q 32×72 halves, 2 × 64 floats, 4 stages of K 64×136 +
  // V 128×72 halves.
  EXPECT_EQ(code.launches[0].dynamic_smem_bytes, 32 * 72 * 2 + 2 * 128 * 4 + 4 * (64 * 136 * 2 + 128 * 72 * 2));
  ASSERT_OK_AND_ASSIGN(GeneratedCode plain, GenerateCuda(p));
  EXPECT_THAT(plain.source, ::testing::Not(HasSubstr("float sn[")));
  ASSERT_OK_AND_ASSIGN(
      BlockProgram two,
      Instantiate(f.graph, {{"gx", 2}, {"gy", 8}, {"gz", 8}, {"F", 4}, {"T", 128}, {"S", 2}}));
  EXPECT_THAT(GenerateCuda(two, pipe),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("kernel partial_kv: the software-pipelined attention loop needs at "
                                 "least 3 stages, found 2")));
}

}  // namespace
}  // namespace prism::codegen
