// GenerateCuda on the hand-written fixtures: what is generated, determinism,
// and the Unimplemented statuses for block ops the generator does not cover.
#include "prism/codegen/codegen.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "block/fixtures/fixtures.h"
#include "library_checks.h"
#include "split_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "prism/codegen/nvrtc.h"
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
  EXPECT_THAT(code.source, HasSubstr("cp.async.cg.shared.global.L2::128B"));  // whole L2 lines
  EXPECT_THAT(code.source,
              HasSubstr("LoadBFragmentX4("));  // ldmatrix.x4.trans B tiles
  EXPECT_THAT(code.source,
              HasSubstr("LoadAFragment<true>"));  // Σx² fused into A loads
  EXPECT_THAT(code.source, HasSubstr("extern \"C\" __global__ void __launch_bounds__(128) "
                                     "prism_rmsnorm_linear_k0("));
  EXPECT_THAT(code.source, HasSubstr("1.0f / sqrtf("));  // inv_rms
  EXPECT_THAT(code.host_header, HasSubstr("device pointers, each\n// 16-byte aligned (as cudaMalloc "));
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

// CodegenOptions::gemm_warps_along_n: the warp split of the GEMM template, by policy (the
// comment line of the kernel names it).
TEST(CodegenTest, WarpSplitPolicy) {
  const struct {
    Assignment assignment;
    bool along_n;
    const char* split;
    // One warp along K and only accumulators stored (the partials P0 = Σ X·W and P1 = Σ x²):
    // each thread stores its fragments; else through shared memory (ReduceAcc).
    bool direct;
  } kCases[] = {
      // rmsnorm_linear's split at b=8: tile 16 x 192 x 64, 4 warps; 4 k16 chunks.
      {{{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 3}}, false, "warps 4 along K x 1 along N", false},
      {{{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 3}}, true, "warps 1 along K x 4 along N", true},
      // 8 warps, 24 n8 tiles: 8 along N, 3 tiles each.
      {{{"g", 32}, {"s", 4}, {"F", 16}, {"T", 256}, {"S", 3}}, true, "warps 1 along K x 8 along N", true},
      // 16 warps, 24 n8 tiles: 8 along N (16 does not divide 24), 2 along K.
      {{{"g", 32}, {"s", 4}, {"F", 16}, {"T", 512}, {"S", 3}}, true, "warps 2 along K x 8 along N", false},
      // 384 columns (48 n8 tiles), 16 warps: 16 along N, 3 n8 tiles each.
      {{{"g", 16}, {"s", 8}, {"F", 16}, {"T", 512}, {"S", 2}}, true, "warps 1 along K x 16 along N", true},
      // 32 columns (4 n8 tiles): two warps keep two tiles each.
      {{{"g", 192}, {"s", 2}, {"F", 16}, {"T", 128}, {"S", 2}}, true, "warps 2 along K x 2 along N", false},
  };
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       codegen_test::MakeSplitFixture("rmsnorm_linear_split",
                                                      fixtures::WorkloadSizes("rmsnorm_linear", 8)));
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.split);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    CodegenOptions options;
    options.gemm_warps_along_n = c.along_n;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    EXPECT_THAT(code.source, HasSubstr(c.split));
    const std::string k0 = code.source.substr(code.source.find("// kernel k0"));
    EXPECT_EQ(k0.find("fragments stored directly") != std::string::npos, c.direct);
    EXPECT_EQ(k0.substr(0, k0.find("// kernel k1")).find("ReduceAcc") == std::string::npos,
              c.direct);
  }
  // One kernel: the output is (Σ X·W) / rms(X), an expression, never stored directly.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture one, fixtures::MakeFixture("rmsnorm_linear",
                                                   fixtures::WorkloadSizes("rmsnorm_linear", 8)));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(one.graph, {{"g", 32}, {"F", 64}, {"T", 256}, {"S", 3}}));
  CodegenOptions along_n;
  along_n.gemm_warps_along_n = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, along_n));
  EXPECT_THAT(code.source, HasSubstr("warps 1 along K x 8 along N"));
  EXPECT_THAT(code.source, ::testing::Not(HasSubstr("fragments stored directly")));
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
    // Kernel 1 (f32 partials) generates; kernel 2's row sum of squares (`sum`) does not
    // (pinned in NamesTheMissingOp).
    {"rmsnorm_linear_splitk", absl::StatusCode::kOk, ""},
    {"gated_mlp", absl::StatusCode::kOk, ""},
    {"lora", absl::StatusCode::kOk, ""},
    {"ntrans", absl::StatusCode::kOk, ""},
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

// HasAttentionKernel by fixture: true exactly for the families with a kernel whose matmul
// result is exponentiated inside the forloop (split-KV attention), for every sampled instance.
// The online-softmax and flash forms exponentiate S − m (no template generates them yet), so
// the attention template's options cannot change them either.
TEST(CodegenTest, HasAttentionKernelByFixture) {
  const struct {
    const char* fixture;
    bool attention;
  } cases[] = {
      {"rmsnorm_linear", false}, {"rmsnorm_linear_splitk", false}, {"gated_mlp", false},
      {"lora", false},           {"ntrans", false},                {"gqa", true},
      {"qknorm_gqa", true},      {"gqa_online", false},            {"gqa_flash", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, 8)));
    ASSERT_OK_AND_ASSIGN(std::vector<Assignment> as, SampleAssignments(f.graph, /*seed=*/5, 3));
    ASSERT_FALSE(as.empty());
    for (const Assignment& a : as) {
      ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, a));
      EXPECT_EQ(HasAttentionKernel(p), c.attention);
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
      // K tile 4096/512 = 8 columns, under one mma k16.
      MissingCase{"lora",
                  {{"g", 128}, {"F", 512}, {"T", 256}, {"S", 3}},
                  absl::StatusCode::kUnimplemented,
                  "kernel k0, op P (matmul): the K tile must be a multiple of 16"},
      MissingCase{"rmsnorm_linear_splitk",
                  {{"g", 48}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 2}},
                  absl::StatusCode::kUnimplemented,
                  "kernel reduce_scale, op ss (sum): sum is supported only in kernels without a "
                  "forloop (forloop 8)"},
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
      // Q 128×(64+8) halves; 2 stages of K 64×(64+8) + V 64×(64+8) halves. One warp per
      // tile: the fragments are stored directly, no reduction buffer.
      {"gqa", 1, {{"gx", 2}, {"gy", 2}, {"gz", 16}, {"F", 4}, {"T", 256}, {"S", 2}},
       128 * 72 * 2 + 2 * (64 * 72 * 2 * 2),
       "8 m16 tile(s), 1 per warp, 1 warp(s) per tile along the chunk", 128 * 64 / 256},
      // 4 row tiles, 8 warps: 2 warps per tile along the 128-column chunk; the reduction
      // buffer (2 × 64 rows × (64+8) + 2 × 64 floats) is under the 3 stages.
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
  // rms(V)'s Σv² in one chain and the IEEE factor: the pipelined kernels sit at 255 registers,
  // and four chains or rsqrtf made qknorm_gqa b=8 T256 S4 spill (codegen_nvrtc_test).
  EXPECT_THAT(code.source,
              HasSubstr("            ss = fmaf(a, a, ss);\n            ss = fmaf(b, b, ss);\n"));
  EXPECT_THAT(code.source, HasSubstr("= 1.0f / sqrtf(ss / 64.0f + 9.99999997e-07f);"));
  EXPECT_THAT(code.source, ::testing::Not(HasSubstr("float sq[4]")));
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

// The attention template's epilogue and softmax options, by the lines they pin in the source:
// one warp per tile stores fragments directly (no reduction buffer), several warps per tile go
// through the padded buffer with float4 stores; attention_lazy_rescale puts the rescale behind
// a warp vote, attention_exp_f16x2 computes P as f16 pairs and Σ P on the tensor cores; rms(V)'s
// factors take four threads per row when the block has them.
struct AttentionSourceCase {
  const char* fixture;
  int batch;
  Assignment assignment;
  bool lazy = false, exp16 = false;
  std::vector<std::string> present, absent;
  int64_t reduction_bytes = 0;
};

TEST(CodegenTest, AttentionEpilogueAndSoftmaxOptions) {
  auto a = [](int64_t gx, int64_t gy, int64_t gz, int64_t f, int64_t t, int64_t s) {
    return Assignment{{"gx", gx}, {"gy", gy}, {"gz", gz}, {"F", f}, {"T", t}, {"S", s}};
  };
  const AttentionSourceCase cases[] = {
      // 16 tiles, 8 warps, 2 tiles per warp: one warp per tile group.
      {"gqa", 8, a(16, 1, 8, 8, 256, 2), false, false,
       {"stored from the fragments", "*reinterpret_cast<float2*>(t_Num + ",
        "const float ls_lo = QuadSum(l_lo[tp]), ls_hi = QuadSum(l_hi[tp]);",
        "const float e_lo = __fdividef(1.0f, ls_lo), e_hi = __fdividef(1.0f, ls_hi);",
        "const float sl = m_lo[tp] + __log2f(ls_lo), sh = m_hi[tp] + __log2f(ls_hi);",
        "Exp2(fmaf(sc[tp][j][0], qsc_lo[tp], -ml))"},
       {"float* red =", "__any_sync", "= Exp2F16x2(", "MmaM16N8K16(lacc", "// exp(m)"},
       0},
      // 2 tiles, 4 warps: two warps per tile, summed through shared memory (rows of 64 + 8).
      {"gqa", 1, a(2, 8, 16, 2, 128, 2), false, false,
       {"[ws][tiles·16][Dv + 8]", "*reinterpret_cast<float4*>(t_Num + ",
        "red + (w * 32 + pr) * 72 + c", "mx = fmaxf(mx, redm[w * 32 + pr]);",
        "wt[w] = Exp2(redm[w * 32 + pr] - mx);", "= mx + __log2f(ls);", "const float il = __fdividef(1.0f, ls);"},
       {"stored from the fragments", "// exp(m)"},
       2 * 32 * 72 * 4 + 2 * 2 * 32 * 4},
      {"gqa", 8, a(16, 1, 8, 8, 256, 2), true, false,
       {"if (__any_sync(0xffffffffu, cm_lo > m_lo[tp] + 8.f || cm_hi > m_hi[tp] + 8.f))"},
       {"= Exp2F16x2("},
       0},
      {"gqa", 8, a(16, 1, 8, 8, 256, 2), false, true,
       {"pf[tp][j][0] = Exp2F16x2(PackF16x2(", "MmaM16N8K16(lacc[tp], a, ones);",
        "const float ls_lo = lacc[tp][0], ls_hi = lacc[tp][2];"},
       {"__any_sync", "l_lo[tp] += p0 + p1;"},
       0},
      // rms(V): 64 V rows per chunk, 256 threads: four per row; the f16x2 P scaled after Σ P.
      // Σv² in four chains, the factor by rsqrtf (the pipelined loop keeps one chain and the
      // IEEE form: AttentionPipeline).
      {"qknorm_gqa", 8, a(16, 1, 8, 8, 256, 2), false, true,
       {"per-row factor, 4 threads per V row", "ss += __shfl_xor_sync(0xffffffffu, ss, 2);",
        "pf[tp][j][0] = MulF16x2(pf[tp][j][0], iv2);", "sq[j] = fmaf(a, a, sq[j]);",
        "ss = (sq[0] + sq[1]) + (sq[2] + sq[3]);",
        "= rsqrtf(ss * 0.015625f + 9.99999997e-07f);"},
       {"one thread per V row", "1.0f / sqrtf(ss"},
       0},
      // 128 V rows, 128 threads: one per row.
      {"qknorm_gqa", 1, a(2, 4, 16, 2, 128, 2), false, false,
       {"per-row factor, one thread per V row", "sq[j] = fmaf(a, a, sq[j]);",
        "vinv[r] = rsqrtf(ss * 0.015625f + 9.99999997e-07f);"},
       {"threads per V row\n", "1.0f / sqrtf(ss"},
       0},
  };
  for (const AttentionSourceCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.batch, c.lazy ? " lazy" : "",
                              c.exp16 ? " exp16" : ""));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                  c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    CodegenOptions options;
    options.attention_lazy_rescale = c.lazy;
    options.attention_exp_f16x2 = c.exp16;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    // (Not EXPECT_THAT on the whole source: a failure would print all of it.)
    for (const std::string& line : c.present) {
      EXPECT_NE(code.source.find(line), std::string::npos) << "missing: " << line;
    }
    for (const std::string& line : c.absent) {
      EXPECT_EQ(code.source.find(line), std::string::npos) << "unexpected: " << line;
    }
    EXPECT_EQ(code.launches[0].reduction_bytes, c.reduction_bytes);
  }
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// lora (after-loop matmul with a loop-invariant B tile) and ntrans (rms in the pointwise
// template) at WORKLOADS.md sizes: one kernel each; the pinned lines of the generated source.
struct OneKernelCase {
  const char* fixture;
  int batch;
  Assignment assignment;
  std::vector<const char*> lines;  // substrings of the source
  int64_t smem;                    // dynamic shared memory
  std::array<int64_t, 3> grid;
};

TEST(CodegenTest, LoraAndNtransGenerateOneKernel) {
  const OneKernelCase cases[] = {
      {"lora",
       8,
       {{"g", 64}, {"F", 16}, {"T", 256}, {"S", 3}},
       {"matmul tile 8x64x256 (1 m16 tile(s)); warps 8 along K x 1 along N",
        "float acc4[1][8][4] = {};", "float acc6[1][2][4] = {};",
        "LoadTileAsync<256, 16, 256>(reinterpret_cast<f16_t*>(base + 41088), 24, t_A",
        "const f16_t* bp = t_B + (0LL) * 4096LL + (long long)blockIdx.x * 64LL + n;",
        "for (int r = 0; r < 16; ++r) v8 += ReduceAcc(reinterpret_cast<const float*>(smem + "
        "36864), m * 24 + r, 384) * F16ToF32(bp[(long long)r * 4096LL]);",
        // The reduction rows padded (64 + 8 f32), stored as float2 (rows 0-7 only: M = 8).
        "*reinterpret_cast<float2*>(red + r * 72 + c) = make_float2(acc4[mt][nt][0], "
        "acc4[mt][nt][1]);",
        "const float v5 = ReduceAcc(reinterpret_cast<const float*>(smem + 0), m * 72 + n, 1152);",
        "const float v9 = v5 + v8;  // Yt (add)"},
       3 * 53376,
       {64, 1, 1}},
      // One m16 tile, 4 warps along K: X·A's 2 n8 tiles stay with each warp.
      {"lora",
       1,
       {{"g", 32}, {"F", 32}, {"T", 128}, {"S", 2}},
       {"matmul tile 1x128x128 (1 m16 tile(s)); warps 4 along K x 1 along N",
        "float acc6[1][2][4] = {};"},
       2 * (1 * 136 + 128 * 136 + 128 * 24) * 2,
       {32, 1, 1}},
      // Rows per block 8 over 256 threads: 128 elements per thread, re-read per pass.
      {"ntrans",
       8,
       {{"g", 1}, {"T", 256}},
       {"2 row pass(es) (rms, rms) over 8 row(s) of 4096, inputs re-read per pass",
        "__shared__ float inv3[8];", "for (int c = threadIdx.x; c < 4096; c += 256) {",
        "const float v3 = v1 * inv3[e / 4096];  // Hn (rms)",
        "inv7[threadIdx.x] = 1.0f / sqrtf(t / 4096.0f + 9.99999997e-07f);"},
       0,
       {1, 1, 1}},
      // One row per block, 8 elements per thread: inputs cached in registers.
      {"ntrans",
       8,
       {{"g", 8}, {"T", 512}},
       {"2 row pass(es) (rms, rms) over 1 row(s) of 4096, inputs in registers (8 per thread, "
        "16-byte loads)",
        "float x1[8];", "const U32x4 raw = *reinterpret_cast<const U32x4*>(t_H + ",
        "const float v1 = x1[q];  // Ht (input)", "ss[j * 4096 / 4096] += v6 * v6;",
        // One row: each pass's partials in its own array, the factor in a register of every
        // thread after the pass's one barrier.
        "__shared__ float red_inv3[16];",
        "float inv3[1];  // the row's rms factor (Hn (rms)), in every thread",
        "if (lane == 0) red_inv7[warp] = w;", "for (int w = 0; w < 16; ++w) t += red_inv7[w];",
        "inv7[0] = 1.0f / sqrtf(t / 4096.0f + 9.99999997e-07f);",
        "const float v7 = v6 * inv7[0];  // Yt (rms)",
        "= U32x4{PackF16x2(ov[0], ov[1]), PackF16x2(ov[2], ov[3]), PackF16x2(ov[4], ov[5]), "
        "PackF16x2(ov[6], ov[7])};"},
       0,
       {8, 1, 1}},
  };
  for (const OneKernelCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.batch));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 1u);
    EXPECT_EQ(code.launches[0].dynamic_smem_bytes, c.smem);
    EXPECT_EQ(code.launches[0].grid, c.grid);
    for (const char* line : c.lines) EXPECT_THAT(code.source, HasSubstr(line));
    if (c.fixture == std::string("ntrans") && c.grid[0] == 8) {
      // Two rms passes over one row per block: one barrier each.
      size_t barriers = 0;
      for (size_t at = 0; (at = code.source.find("__syncthreads();", at)) != std::string::npos;
           ++at) {
        ++barriers;
      }
      EXPECT_EQ(barriers, 2u);
    }
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p));
    EXPECT_EQ(code.source, again.source);
  }
}

// What the lora / ntrans extensions still refuse, by exact message.
TEST(CodegenTest, RmsAndAfterLoopMatmulLimits) {
  struct Case {
    const char* fixture;
    fixtures::Sizes sizes;
    Assignment assignment;
    const char* message;
  };
  const Case cases[] = {
      {"ntrans",
       {{"B", 64}, {"D", 256}},
       {{"g", 1}, {"T", 128}},
       "codegen: kernel k0, op Hn (rms): rms over 64 rows per block (at most 32 are supported)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(c.fixture, c.sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    EXPECT_THAT(GenerateCuda(p), StatusIs(absl::StatusCode::kUnimplemented, c.message));
  }
}

// Row reductions in the pointwise template (split_fixtures.h, row_softmax / row_stats): one
// pass per sum / max, softmax's exp shifted by the row max (a max pass before the sum), stores
// of the row tile and of one value per row, with inputs in registers or re-read per pass.
TEST(CodegenTest, RowReductions) {
  struct Case {
    const char* fixture;
    fixtures::Sizes sizes;
    Assignment assignment;
    std::vector<std::string> lines;
    std::array<int64_t, 3> grid;
  };
  const Case cases[] = {
      // One row per block, 8 elements per thread in registers, 16-byte loads and stores.
      {"row_softmax",
       {{"B", 8}, {"D", 4096}},
       {{"g", 8}, {"T", 512}},
       {"2 row pass(es) (max, sum) over 1 row(s) of 4096, inputs in registers (8 per thread, "
        "16-byte loads)",
        "float mx1[1];  // the row's max of exp's operand (E (exp), shifted), in every thread",
        "ss[j * 4096 / 4096] = fmaxf(ss[j * 4096 / 4096], v0);",
        "const float w = WarpMax(ss[0]);", "for (int w = 0; w < 16; ++w) t = fmaxf(t, red_mx1[w]);",
        "const float v1 = expf(v0 - mx1[0]);  // E (exp)", "ss[j * 4096 / 4096] += v1;",
        "const float v2 = row2[0];  // Se (sum)", "const float v3 = v1 / v2;  // Yt (div)",
        "= U32x4{PackF16x2(ov[0], ov[1])"},
       {8, 1, 1}},
      // Four rows per block over 64 threads (C = 100 is no multiple of T): re-read per pass,
      // each row's values in shared memory.
      {"row_softmax",
       {{"B", 8}, {"D", 100}},
       {{"g", 2}, {"T", 64}},
       {"2 row pass(es) (max, sum) over 4 row(s) of 100, inputs re-read per pass",
        "__shared__ float mx1[4];  // each row's max of exp's operand (E (exp), shifted)",
        "for (int c = threadIdx.x; c < 100; c += 64) {", "ss[row] = fmaxf(ss[row], v0);",
        "for (int w = 0; w < 2; ++w) t = fmaxf(t, red[w * 4 + threadIdx.x]);",
        "mx1[threadIdx.x] = t;", "const float v1 = expf(v0 - mx1[e / 100]);  // E (exp)",
        "const float v2 = row2[e / 100];  // Se (sum)"},
       {2, 1, 1}},
      // Two outputs: the row tile (X − max) and one f32 value per row (Σ X), stored by the
      // first threads after the row tile's stores.
      {"row_stats",
       {{"B", 16}, {"D", 1024}},
       {{"g", 4}, {"T", 128}},
       {"2 row pass(es) (sum, max) over 4 row(s) of 1024, inputs in registers (32 per thread, "
        "16-byte loads)",
        "__shared__ float row1[4];  // each row's sum (St (sum))",
        "__shared__ float row3[4];  // each row's max (Mt (max))", "ss[j * 1024 / 1024] += v0;",
        "const float v4 = v0 - v3;  // Yt (sub)", "for (int e = first; e < 4; e += 128) {",
        "const float v1 = row1[e / 1];  // St (sum)",
        "t_S[((long long)bx * 4LL + i0) * 1LL + (0LL + i1) * 1LL] = v1;"},
       {4, 1, 1}},
      // The same re-read per pass (3 rows of 100 per block): the row tile's loop, then the
      // per-row loop, both from `first`.
      {"row_stats",
       {{"B", 6}, {"D", 100}},
       {{"g", 2}, {"T", 64}},
       {"2 row pass(es) (sum, max) over 3 row(s) of 100, inputs re-read per pass",
        "for (int e = first; e < 300; e += 64) {", "const float v3 = row3[e / 100];  // Mt (max)",
        "for (int e = first; e < 3; e += 64) {", "const float v1 = row1[e / 1];  // St (sum)"},
       {2, 1, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " ", c.lines.front()));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture(c.fixture, c.sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 1u);
    EXPECT_EQ(code.launches[0].grid, c.grid);
    EXPECT_EQ(code.launches[0].dynamic_smem_bytes, 0);
    for (const std::string& line : c.lines) EXPECT_THAT(code.source, HasSubstr(line));
    if (::testing::Test::HasFailure()) std::cerr << code.source.substr(code.source.find("// kernel "));
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p));
    EXPECT_EQ(code.source, again.source);
  }
}

// The row and batched-matmul fixtures are what their Programs say: the block emulator's outputs match the
// reference interpreter's (f64) to f16 rounding, so codegen_gpu_test's comparison with the
// emulator checks the Programs' semantics. With inputs × 64 the emulator's exact exp overflows
// (the reason the generated softmax shifts by the row max) while the reference's softmax does not.
TEST(CodegenTest, RowFixturesMatchTheirPrograms) {
  const struct {
    const char* name;
    fixtures::Sizes sizes;
    Assignment assignment;
  } cases[] = {
      {"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
      {"row_stats", {{"B", 6}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
      {"bmm", {{"B", 4}, {"M", 16}, {"K", 64}, {"N", 32}}, {{"b", 4}, {"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"bmm_y_batch", {{"B", 4}, {"M", 16}, {"K", 64}, {"N", 32}}, {{"b", 4}, {"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"linear3d", {{"B", 4}, {"M", 16}, {"K", 64}, {"N", 32}}, {{"b", 2}, {"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"linear3d_m", {{"B", 4}, {"M", 16}, {"K", 64}, {"N", 32}}, {{"b", 2}, {"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"gqa_scaled", {{"G", 2}, {"Lq", 16}, {"D", 32}, {"L", 128}}, {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 2}, {"T", 64}, {"S", 1}}},
      {"prologue_silu", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"prologue_exp_rms", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"prologue_swiglu", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"prologue_gain", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"epilogue_bias", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}},
      {"epilogue_residual", {{"M", 8}, {"K", 64}, {"N", 32}}, {{"g", 2}, {"F", 2}, {"T", 64}, {"S", 2}}}};
  for (const auto& [name, sizes, assignment] : cases) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture(name, sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, assignment));
    std::vector<Tensor> in = RandomInputs(f.program, 7);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> emulated, Emulate(p, in));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> reference, Evaluate(f.program, in, EvalMode::kF64));
    ASSERT_EQ(emulated.size(), reference.size());
    for (size_t o = 0; o < emulated.size(); ++o) {
      ASSERT_EQ(emulated[o].data.size(), reference[o].data.size());
      for (size_t i = 0; i < emulated[o].data.size(); ++i) {
        EXPECT_NEAR(emulated[o].data[i], reference[o].data[i],
                    2e-3 * std::max(1.0, std::abs(reference[o].data[i])))
            << "output " << o << " element " << i;
      }
    }
    if (std::string(name) != "row_softmax") continue;
    for (double& v : in[0].data) v *= 64.0;
    ASSERT_OK_AND_ASSIGN(emulated, Emulate(p, in));
    ASSERT_OK_AND_ASSIGN(reference, Evaluate(f.program, in, EvalMode::kF64));
    bool emulated_finite = true, reference_finite = true;
    for (double v : emulated[0].data) emulated_finite &= std::isfinite(v);
    for (double v : reference[0].data) reference_finite &= std::isfinite(v);
    EXPECT_FALSE(emulated_finite);
    EXPECT_TRUE(reference_finite);
  }
}

// A softmax's exp is shifted only when the shift cancels: an exp also stored, or whose sum
// is used otherwise, is evaluated as written.
TEST(CodegenTest, SoftmaxShiftOnlyWhereItCancels) {
  constexpr int64_t R = kReplicate;
  struct Case {
    const char* name;
    bool store_exp;  // exp(X) is a second output
    bool store_sum;  // sum(exp(X)) is a second output
    bool shifted;
  };
  const Case cases[] = {{"ratio only", false, false, true},
                        {"exp stored", true, false, false},
                        {"sum stored", false, true, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SGraph g("shift");
    const int x = g.AddInput("X", DType::kF16, {4, 256});
    const int y = g.AddOutput("Y", DType::kF16, {4, 256});
    BlockGraphBuilder kb(g, {g.Const(4), g.One(), g.One()}, g.Const(128), g.One(), g.One());
    const int xt = kb.Input("Xt", x, {0, R, R}, R);
    const int e = kb.Unary("E", OpKind::kExp, xt);
    const int se = kb.Reduce("Se", OpKind::kSum, e, -1);
    kb.Output(kb.Binary("Yt", OpKind::kDiv, e, se), y, {0, R, R});
    if (c.store_exp) kb.Output(e, g.AddOutput("Ex", DType::kF16, {4, 256}), {0, R, R});
    if (c.store_sum) kb.Output(se, g.AddOutput("Sx", DType::kF32, {4, 1}), {0, R, R});
    std::move(kb).Finish("k0");
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(g, {}));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    EXPECT_EQ(absl::StrContains(code.source, "expf(v0 - mx1[0])"), c.shifted);
    EXPECT_EQ(absl::StrContains(code.source, "const float v1 = expf(v0);  // E (exp)"), !c.shifted);
    EXPECT_THAT(code.source, HasSubstr(c.shifted ? "2 row pass(es) (max, sum)" : "1 row pass(es) (sum)"));
  }
}

// What the row path refuses, by exact message.
TEST(CodegenTest, RowReductionLimits) {
  constexpr int64_t R = kReplicate;
  struct Case {
    const char* name;
    std::function<void(SGraph&)> build;
    const char* message;
  };
  const Case cases[] = {
      {"more than 32 rows",
       [](SGraph& g) {
         const int x = g.AddInput("X", DType::kF16, {64, 256});
         BlockGraphBuilder kb(g, {g.One(), g.One(), g.One()}, g.Const(128), g.One(), g.One());
         kb.Output(kb.Reduce("St", OpKind::kSum, kb.Input("Xt", x, {0, R, R}, R), -1),
                   g.AddOutput("S", DType::kF32, {64, 1}), {0, R, R});
         std::move(kb).Finish("k0");
       },
       "codegen: kernel k0, op St (sum): sum over 64 rows per block (at most 32 are supported)"},
      {"not over the last dim",
       [](SGraph& g) {
         const int x = g.AddInput("X", DType::kF16, {8, 256});
         BlockGraphBuilder kb(g, {g.Const(4), g.One(), g.One()}, g.Const(128), g.One(), g.One());
         kb.Output(kb.Reduce("Mt", OpKind::kMax, kb.Input("Xt", x, {1, R, R}, R), 0),
                   g.AddOutput("M", DType::kF16, {1, 256}), {1, R, R});
         std::move(kb).Finish("k0");
       },
       "codegen: kernel k0, op Mt (max): max is supported only over the last dim (a row "
       "reduction)"},
      {"two row tiles",
       [](SGraph& g) {
         const int x = g.AddInput("X", DType::kF16, {8, 256});
         const int z = g.AddInput("Z", DType::kF16, {8, 128});
         BlockGraphBuilder kb(g, {g.Const(2), g.One(), g.One()}, g.Const(128), g.One(), g.One());
         const int sx = kb.Reduce("Sx", OpKind::kSum, kb.Input("Xt", x, {0, R, R}, R), -1);
         const int sz = kb.Reduce("Sz", OpKind::kSum, kb.Input("Zt", z, {0, R, R}, R), -1);
         kb.Output(kb.Binary("St", OpKind::kAdd, sx, sz), g.AddOutput("S", DType::kF32, {8, 1}),
                   {0, R, R});
         std::move(kb).Finish("k0");
       },
       "codegen: kernel k0, op Sz (sum): reduces a 4×128 tile where Sx (sum) reduces 4×256: the "
       "row reductions of a kernel must share one tile"},
      {"another stored tile",
       [](SGraph& g) {
         const int x = g.AddInput("X", DType::kF16, {8, 256});
         const int z = g.AddInput("Z", DType::kF16, {8, 128});
         BlockGraphBuilder kb(g, {g.Const(2), g.One(), g.One()}, g.Const(128), g.One(), g.One());
         kb.Output(kb.Reduce("Sx", OpKind::kSum, kb.Input("Xt", x, {0, R, R}, R), -1),
                   g.AddOutput("S", DType::kF32, {8, 1}), {0, R, R});
         kb.Output(kb.Unary("Zn", OpKind::kNeg, kb.Input("Zt", z, {0, R, R}, R)),
                   g.AddOutput("N", DType::kF16, {8, 128}), {0, R, R});
         std::move(kb).Finish("k0");
       },
       "codegen: kernel k0, op #5 (output): with row reductions, a stored tile must be the "
       "reduced tile (4×256) or one value per row (4×1), not 4×128"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SGraph g("limits");
    c.build(g);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(g, {}));
    EXPECT_THAT(GenerateCuda(p), StatusIs(absl::StatusCode::kUnimplemented, c.message));
  }
}

// A batched matmul (split_fixtures.h, bmm) with the batch split whole over the grid is
// generated on the rank-2 view of its tensors: tile origins in merged rows (batch · M + row),
// launch.json with the program's own rank-3 shapes. With part of the batch per block, or the
// batch on a grid axis after N's, the tiles are no rank-2 blocks of that view: refused.
TEST(CodegenTest, BatchedMatmulOnTheRank2View) {
  const fixtures::Sizes sizes = {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}};
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture("bmm", sizes));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(f.graph, {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  ASSERT_EQ(code.launches.size(), 1u);
  EXPECT_EQ(code.launches[0].grid, (std::array<int64_t, 3>{8, 2, 1}));
  for (const char* line :
       {"matmul tile 64x64x64 (4 m16 tile(s))",
        // X [8·64, 256]: rows blockIdx.x · 64; W [8·256, 128]: rows (blockIdx.x · 4 + it) · 64.
        "t_X + ((long long)blockIdx.x * 64LL) * 256LL + (long long)it * 64LL, 256LL, tid);",
        "t_W + ((long long)(blockIdx.x * 4LL + it) * 64LL) * 128LL + (long long)blockIdx.y * 64LL, "
        "128LL, tid);"}) {
    EXPECT_THAT(code.source, HasSubstr(line));
  }
  const nlohmann::json launch = nlohmann::json::parse(code.launch_json);
  for (const nlohmann::json& arg : launch["kernels"][0]["args"]) {
    EXPECT_EQ(arg["shape"].size(), 3u) << arg.dump();
  }
  ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p));
  EXPECT_EQ(code.source, again.source);

  ASSERT_OK_AND_ASSIGN(BlockProgram half,
                       Instantiate(f.graph, {{"b", 4}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}));
  EXPECT_THAT(GenerateCuda(half), StatusIs(absl::StatusCode::kUnimplemented,
                                           "codegen: kernel k0, op Xt (input): only rank-2 tiles "
                                           "are supported"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture swapped,
                       codegen_test::MakeSplitFixture("bmm_y_batch", sizes));
  ASSERT_OK_AND_ASSIGN(BlockProgram y_batch, Instantiate(swapped.graph, {{"b", 8}, {"g", 2}, {"F", 4},
                                                                         {"T", 128}, {"S", 3}}));
  EXPECT_THAT(GenerateCuda(y_batch), StatusIs(absl::StatusCode::kUnimplemented,
                                              "codegen: kernel k0, op Xt (input): only rank-2 "
                                              "tiles are supported"));
}

// A linear layer over a batch of rows (split_fixtures.h, linear3d: X [B, M, K] · W [K, N]):
// blocks of whole batches are contiguous rows of X viewed as [B·M, K], multiplied by the one W.
// Blocks of part of M are contiguous only with one batch per block (linear3d_m).
TEST(CodegenTest, LinearLayerOverABatchOfRows) {
  const fixtures::Sizes sizes = {{"B", 4}, {"M", 32}, {"K", 256}, {"N", 128}};
  struct Case {
    const char* fixture;
    Assignment assignment;
    std::vector<std::string> lines;  // empty: refused
    fixtures::Sizes sizes_override = {};
  };
  const Case cases[] = {
      // codegen_gpu_test's instances: decode-like (8 batches of one row: one m16 tile of 8
      // rows) and 4 × 128 rows split along M.
      {"linear3d",
       {{"b", 1}, {"g", 8}, {"F", 4}, {"T", 64}, {"S", 3}},
       {"matmul tile 8x64x256 (1 m16 tile(s))"},
       {{"B", 8}, {"M", 1}, {"K", 1024}, {"N", 512}}},
      {"linear3d_m",
       {{"b", 4}, {"g", 4}, {"F", 4}, {"T", 128}, {"S", 2}},
       {"matmul tile 32x64x128 (2 m16 tile(s))"},
       {{"B", 4}, {"M", 128}, {"K", 512}, {"N", 64}}},
      // Two batches of 32 rows per block: 64 merged rows from row blockIdx.x · 64.
      {"linear3d",
       {{"b", 2}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 2}},
       {"matmul tile 64x64x64 (4 m16 tile(s))",
        "t_X + ((long long)blockIdx.x * 64LL) * 256LL + (long long)it * 64LL, 256LL, tid);",
        "t_W + ((long long)it * 64LL) * 128LL + (long long)blockIdx.y * 64LL, 128LL, tid);"}},
      {"linear3d_m",
       {{"b", 4}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 2}},
       {"matmul tile 16x128x64 (1 m16 tile(s))",
        "t_X + ((long long)(blockIdx.x * 2LL + blockIdx.y) * 16LL) * 256LL + (long long)it * 64LL"}},
      {"linear3d_m", {{"b", 2}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 2}}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.assignment.at("b")));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeSplitFixture(
                             c.fixture, c.sizes_override.empty() ? sizes : c.sizes_override));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    absl::StatusOr<GeneratedCode> code = GenerateCuda(p);
    if (c.lines.empty()) {
      EXPECT_THAT(code, StatusIs(absl::StatusCode::kUnimplemented,
                                 "codegen: kernel k0, op Xt (input): only rank-2 tiles are "
                                 "supported"));
      continue;
    }
    ASSERT_OK(code.status());
    for (const std::string& line : c.lines) EXPECT_THAT(code->source, HasSubstr(line));
  }
}

// Attention whose scores are scaled before the softmax (split_fixtures.h, gqa_scaled:
// exp(scale(Q·Kt, 1/sqrt(D)))): the attention template folds c into the scores' log2(e)
// factor; unscaled attention keeps its source byte for byte (the other tests). A scale that is
// not positive is refused (the row maxima are taken before the factor).
TEST(CodegenTest, ScaledAttentionScores) {
  const fixtures::Sizes sizes = {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}};
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture("gqa_scaled", sizes));
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, {{"gx", 2}, {"gy", 1}, {"gz", 4},
                                                             {"F", 4}, {"T", 128}, {"S", 3}}));
  for (bool wgmma : {false, true}) {
    SCOPED_TRACE(wgmma ? "attention_wgmma" : "mma.sync");
    CodegenOptions options;
    options.attention_wgmma = wgmma;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_EQ(code.launches.size(), 2u);
    EXPECT_THAT(code.source, HasSubstr("attention template"));
    // log2(e) / 8 = 0.180336878...
    EXPECT_THAT(code.source,
                HasSubstr("constexpr float kLog2e = 0.180336878f;  // log2(e) · the score scale "
                          "0.125f"));
  }
  for (int k = 0; k < 2; ++k) {
    ConcreteBlockGraph& kernel = std::get<ConcreteBlockGraph>(p.kernels[0].body);
    for (ConcreteBlockOp& op : kernel.ops) {
      if (op.kind == BlockOpKind::kUnary && op.fn == OpKind::kScale) op.scalar = k == 0 ? -0.5 : 0.0;
    }
    EXPECT_THAT(GenerateCuda(p),
                StatusIs(absl::StatusCode::kUnimplemented,
                         absl::StrCat("codegen: kernel partial_kv, op Sc (scale): the score scale "
                                      "must be positive, found ",
                                      k == 0 ? "-0.5" : "0")));
  }
}

// lora's X·A split (split_fixtures.h, lora_split_xa) with the side accumulator or the combine's
// matmul operand used by something else, a contracted extent over 64, folded into the partial
// kernel (cluster_combine), or an f32 partial of a square: refused by exact message.
TEST(CodegenTest, SideAndCombineMatmulLimits) {
  struct Case {
    int misuse;
    const char* message;
    int64_t r = 16;        // the LoRA rank
    bool cluster = false;  // CodegenOptions::cluster_combine
  };
  const Case cases[] = {
      {0, "codegen: kernel k1, op XAB (matmul): the contracted extent (128) is over 64 (each "
          "element sums its own row of A)", 128},
      {0, "codegen: kernel k1, op XAB (matmul): cluster_combine: a combine kernel with a matmul "
          "cannot be folded", 16, true},
      {1, "codegen: kernel k0, op XA (matmul): the N tile (16) differs from the stored tile's "
          "(256) and its accumulator is not only stored"},
      {2, "codegen: kernel k1, op XAB (matmul): the pointwise template supports a matmul only "
          "after the forloop, as acc_sum(loop input tile) · (loop-invariant input tile), its A "
          "operand used by nothing else"},
      {3, "codegen: kernel k0, op #9 (output): f32 outputs are supported only of an "
          "accumulator or a sum of two (split partials)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.misuse);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeLoraSplitXaFixture(
                             {{"B", 2}, {"K", 1024}, {"N", 512}, {"R", c.r}}, c.misuse));
    ASSERT_OK_AND_ASSIGN(BlockProgram p,
                         Instantiate(f.graph, {{"g", 2}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 2}}));
    CodegenOptions options;
    options.cluster_combine = c.cluster;
    EXPECT_THAT(GenerateCuda(p, options), StatusIs(absl::StatusCode::kUnimplemented, c.message));
  }
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// Split-K GEMM families (split_fixtures.h, as the search emits them): kernel 1 from the GEMM
// template stores the f32 partial accumulators, kernel 2 is the pointwise combine.
struct SplitKCase {
  const char* fixture;
  int batch;
  Assignment assignment;
  std::array<int64_t, 3> grid0, grid1;  // the two launches' grids
  const char* combine_summary;          // substring of the combine kernel's source
};

TEST(CodegenTest, SplitKGemmGeneratesPartialAndCombineKernels) {
  const SplitKCase cases[] = {
      // N tile 4096/32 = 128, K chunk 4096/8 = 512 walked in 4 tiles of 128: 256 + combine.
      {"gated_mlp_splitk", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}},
       {32, 8, 1}, {32, 1, 1}, "prism_dev::Silu("},
      {"gated_mlp_splitk", 8, {{"g", 64}, {"s", 4}, {"F", 8}, {"T", 128}, {"S", 3}},
       {64, 4, 1}, {64, 1, 1}, "prism_dev::Silu("},
      // lora: (X·A)·B per K chunk inside the loop (X·A rounded to f16 as an mma A operand).
      {"lora_splitk", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}},
       {32, 8, 1}, {32, 1, 1}, "PackF16x2(xa[0][0], xa[0][1])"},
      {"lora_splitk", 8, {{"g", 64}, {"s", 4}, {"F", 8}, {"T", 256}, {"S", 2}},
       {64, 4, 1}, {64, 1, 1}, "u32_t bf"},
      // lora with X·A a side matmul (N tile 16 next to 128): in the combine, every element
      // sums its row of the [M, 16] partials (row 0; row i0) and multiplies by B's column.
      {"lora_split_xa", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}},
       {32, 8, 1}, {32, 1, 1}, "t_P1[(0LL + 0) * 128LL + ((long long)it * 16LL + r) * 1LL]"},
      {"lora_split_xa", 8, {{"g", 16}, {"s", 8}, {"F", 16}, {"T", 256}, {"S", 4}},
       {16, 8, 1}, {16, 1, 1}, "t_P1[(0LL + i0) * 128LL + ((long long)it * 16LL + r) * 1LL]"},
      // rmsnorm_linear: the Σx² partial [M, s] stored by every column block at the same place
      // (its address has no blockIdx.x), the inverse rms applied in the combine kernel.
      {"rmsnorm_linear_split", 8, {{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 3}},
       {32, 4, 1}, {32, 1, 1}, "float* out = t_P1 + (0LL) * 4LL + (long long)blockIdx.y * 1LL;"},
  };
  for (const SplitKCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.batch));
    const char* workload = absl::StartsWith(c.fixture, "lora")      ? "lora"
                           : absl::StartsWith(c.fixture, "rmsnorm") ? "rmsnorm_linear"
                                                                     : "gated_mlp";
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture f,
        codegen_test::MakeSplitFixture(c.fixture, fixtures::WorkloadSizes(workload, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 2u);
    EXPECT_EQ(code.launches[0].grid, c.grid0);
    // The combine kernel is pointwise: (gx, gy, gz·P) with P blocks per graph block.
    EXPECT_EQ(code.launches[1].grid[0], c.grid1[0]);
    // Kernel 1 writes unrounded f32 partials; its inputs stay f16.
    EXPECT_THAT(code.source, HasSubstr("float* __restrict__ t_P0"));
    EXPECT_THAT(code.source, HasSubstr("const prism_dev::f16_t* __restrict__ t_X"));
    if (absl::StartsWith(c.fixture, "lora_splitk")) {
      // One partial: (X·A)·B's accumulator added into X·W's after the loop, stored as one.
      EXPECT_THAT(code.source, Not(HasSubstr("t_P1")));
      EXPECT_THAT(code.source, HasSubstr("[mt][nt][e];  // Sum (add)"));
    } else {
      EXPECT_THAT(code.source, HasSubstr("float* __restrict__ t_P1"));
    }
    EXPECT_THAT(code.source, HasSubstr("float* out = t_P0"));
    EXPECT_THAT(code.source, HasSubstr("mma.sync.aligned.m16n8k16"));
    EXPECT_THAT(code.source, HasSubstr(c.combine_summary));
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["args"].back()["dtype"], "f32");
    EXPECT_EQ(j["kernels"][0]["args"].back()["access"], "write");
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p));
    EXPECT_EQ(again.source, code.source);  // deterministic
  }
}

// The cross-warp reduction buffer of a GEMM kernel with several warps along K: each matmul's
// rows are padded to a pitch ≡ 8 or 24 (mod 32) f32 and stored as float2, so that a half warp's
// stores (rows g = 0..3, column pairs t = 0..3) fall in 32 distinct banks. (Unpadded rows of a
// multiple of 32 put a warp's eight rows in the same four banks: an 8-way conflict per store,
// 0.4–1.7 µs per call of the split-K GEMM rows on the H200, docs/performance.md.)
struct ReductionRowsCase {
  const char* fixture;
  const char* workload;
  int batch;
  Assignment assignment;
  std::vector<std::pair<int64_t, int64_t>> rows;  // (N tile, pitch) per matmul, in order
  bool upper_half = true;      // rows 8-15 of the m16 fragments stored (M > 8)
  const char* vector_loop = nullptr;  // the float4 epilogue of a split-K partial, if expected
};

TEST(CodegenTest, ReductionRowsAreConflictFree) {
  const ReductionRowsCase cases[] = {
      // M = 16: both fragment halves; the partial X·W stored four columns per thread.
      {"rmsnorm_linear_split", "rmsnorm_linear", 8,
       {{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 4}}, {{192, 200}}, true,
       "const float4 p = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(smem + "
       "0) + w * 3200 + m * 200 + n);"},
      // gated_mlp's split partials: both products, each four columns per thread (M = 8).
      {"gated_mlp_splitk", "gated_mlp", 8, {{"g", 64}, {"s", 4}, {"F", 8}, {"T", 128}, {"S", 3}},
       {{64, 72}, {64, 72}}, false,
       "const float4 p = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(smem + "
       "18432) + w * 1152 + m * 72 + n);"},
      // lora in one kernel: its output is X·W + (X·A)·B in f16, an expression: one element per
      // thread.
      {"lora", "lora", 8, {{"g", 64}, {"F", 16}, {"T", 256}, {"S", 3}}, {{64, 72}, {16, 24}},
       false},
      // M = 2: the upper halves (rows 8-15, all padding) are not stored. N = 96 (≡ 0 mod 32).
      {"rmsnorm_linear_split", "rmsnorm_linear", 1,
       {{"g", 64}, {"s", 8}, {"F", 8}, {"T", 256}, {"S", 3}}, {{96, 104}}, false,
       "for (int e = tid; e < 48; e += 256) {  // four columns per thread"},
      // lora's split partial is (X·W + (X·A)·B) in one accumulator: float4 as well.
      {"lora_splitk", "lora", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}},
       {{128, 136}}, false, "four columns per thread"},
  };
  for (const ReductionRowsCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.batch));
    const bool split = absl::StrContains(c.fixture, "split");
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         split ? codegen_test::MakeSplitFixture(
                                     c.fixture, fixtures::WorkloadSizes(c.workload, c.batch))
                               : fixtures::MakeFixture(
                                     c.fixture, fixtures::WorkloadSizes(c.workload, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    // (find, not HasSubstr: a failure would print the whole source.)
    ASSERT_EQ(code.source.find("warps 1 along K"), std::string::npos) << "no reduction buffer";
    size_t at = 0;
    for (const auto& [n, pitch] : c.rows) {
      const std::string comment =
          absl::StrCat("rows of ", n, " + ", pitch - n, " f32: a half warp's float2 stores");
      at = code.source.find(comment, at);
      ASSERT_NE(at, std::string::npos) << "missing: " << comment;
      const std::string store =
          absl::StrCat("*reinterpret_cast<float2*>(red + r * ", pitch, " + c)");
      EXPECT_NE(code.source.find(store, at), std::string::npos) << "missing: " << store;
      // The half warp's 16 float2 stores: 32 words in 32 distinct banks.
      std::set<int64_t> banks;
      for (int g = 0; g < 4; ++g)
        for (int t = 0; t < 4; ++t)
          for (int w = 0; w < 2; ++w) banks.insert((g * pitch + 2 * t + w) % 32);
      EXPECT_EQ(banks.size(), 32u) << "pitch " << pitch;
      ++at;
    }
    const bool upper = code.source.find("*reinterpret_cast<float2*>(red + (r + 8) * ") !=
                       std::string::npos;
    EXPECT_EQ(upper, c.upper_half);
    if (c.vector_loop != nullptr) {
      EXPECT_NE(code.source.find(c.vector_loop), std::string::npos)
          << "missing: " << c.vector_loop;
    } else {
      EXPECT_EQ(code.source.find("four columns per thread"), std::string::npos);
    }
  }
}

TEST(CodegenTest, SplitKLimits) {
  const MissingCase cases[] = {
      // One block keeps the whole N = 4096 row: 2 × 512 n8 tiles of f32 accumulators.
      MissingCase{"gated_mlp_splitk",
                  {{"g", 1}, {"s", 64}, {"F", 1}, {"T", 64}, {"S", 1}},
                  absl::StatusCode::kResourceExhausted,
                  "f32 accumulator registers per thread (matmul N tile 4096 over 1 warp(s) along "
                  "N), over the limit of 192"},
      // (X·A)·B inside the loop needs B as one k16 step: R = 16 (here R = 32).
      MissingCase{"lora_splitk",
                  {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}},
                  absl::StatusCode::kUnimplemented,
                  "kernel k0, op XAB (matmul): a matmul of a loop matmul must be (X·A)·B with "
                  "X·A [M, 16] used by nothing else and B a loop-invariant [16, N] tile, N a "
                  "multiple of 8"},
  };
  for (const MissingCase& c : cases) {
    SCOPED_TRACE(c.fixture);
    const bool lora = absl::StartsWith(c.fixture, "lora");
    fixtures::Sizes sizes = fixtures::WorkloadSizes(lora ? "lora" : "gated_mlp", 8);
    if (lora) sizes["R"] = 32;
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture(c.fixture, sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    EXPECT_THAT(GenerateCuda(p), StatusIs(c.code, HasSubstr(c.message)));
  }
}

namespace launch_options {

// Counts non-overlapping occurrences of `needle` in `hay`.
int Count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

struct ProgramCase {
  const char* fixture;  // fixtures.h, or split_fixtures.h when `split`
  const char* workload;
  int batch;
  bool split;
  const char* assignment;  // "name=value,..."
  size_t kernels;
};

Assignment Parse(absl::string_view text) {
  Assignment a;
  for (absl::string_view kv : absl::StrSplit(text, ',')) {
    const std::vector<std::string> p = absl::StrSplit(kv, '=');
    a[p[0]] = std::stoll(p[1]);
  }
  return a;
}

absl::StatusOr<BlockProgram> Make(const ProgramCase& c) {
  PRISM_ASSIGN_OR_RETURN(
      fixtures::Fixture f,
      c.split ? codegen_test::MakeSplitFixture(c.fixture, fixtures::WorkloadSizes(c.workload, c.batch))
              : fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.workload, c.batch)));
  return Instantiate(f.graph, Parse(c.assignment));
}

// A one-kernel X·W (acc_sum over a K loop, output `out` of dtype `dt`), instantiated at
// gx = N / 64, F = K / 64, T = 128 (warps along N: one along K, so the fragments are stored
// directly), S = 2.
absl::StatusOr<BlockProgram> PlainMatmul(int64_t m, int64_t k, int64_t n, DType dt) {
  constexpr int64_t R = kReplicate;
  SGraph g{"plain_matmul"};
  PRISM_ASSIGN_OR_RETURN(Expr gx, g.AddParam("g", ParamRole::kGrid, *Domain::DivisorsOf(n)));
  PRISM_ASSIGN_OR_RETURN(Expr f, g.AddParam("F", ParamRole::kForloop, *Domain::DivisorsOf(k)));
  PRISM_ASSIGN_OR_RETURN(Expr t, g.AddParam("T", ParamRole::kThreads, *Domain::Set({128})));
  PRISM_ASSIGN_OR_RETURN(Expr st, g.AddParam("S", ParamRole::kStages, *Domain::Range(1, 2)));
  const int x = g.AddInput("X", DType::kF16, {m, k});
  const int w = g.AddInput("W", DType::kF16, {k, n});
  const int y = g.AddOutput("Y", dt, {m, n});
  BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, f, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int wt = kb.Input("Wt", w, {1, R, R}, 0);
  kb.Output(kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("XW", xt, wt)), y, {1, R, R});
  std::move(kb).Finish("k0");
  return Instantiate(g, {{"g", n / 64}, {"F", k / 64}, {"T", 128}, {"S", 2}});
}

// Direct stores (one warp along K, an output that is an accumulator as it is) write each
// fragment pair, columns c and c + 1, with one store: a float2 for an f32 output, the pair
// packed by PackF16x2 (round to nearest even, as F32ToF16) for an f16 one; rows ≥ M of the
// m16 padding are skipped as before.
TEST(CodegenTest, DirectStoresWritePairs) {
  const struct {
    int64_t m;
    DType dt;
    std::vector<std::string> stores;  // the two store lines, in order
  } kCases[] = {
      {16, DType::kF32,
       {"      *reinterpret_cast<float2*>(out + (long long)r * 512LL + c) = "
        "make_float2(acc2[mt][nt][0], acc2[mt][nt][1]);\n",
        "      *reinterpret_cast<float2*>(out + (long long)(r + 8) * 512LL + c) = "
        "make_float2(acc2[mt][nt][2], acc2[mt][nt][3]);\n"}},
      {16, DType::kF16,
       {"      *reinterpret_cast<u32_t*>(out + (long long)r * 512LL + c) = "
        "PackF16x2(acc2[mt][nt][0], acc2[mt][nt][1]);\n",
        "      *reinterpret_cast<u32_t*>(out + (long long)(r + 8) * 512LL + c) = "
        "PackF16x2(acc2[mt][nt][2], acc2[mt][nt][3]);\n"}},
      {2, DType::kF16,
       {"      if (r < 2) *reinterpret_cast<u32_t*>(out + (long long)r * 512LL + c) = "
        "PackF16x2(acc2[mt][nt][0], acc2[mt][nt][1]);\n",
        "      if (r + 8 < 2) *reinterpret_cast<u32_t*>(out + (long long)(r + 8) * 512LL + c) = "
        "PackF16x2(acc2[mt][nt][2], acc2[mt][nt][3]);\n"}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(absl::StrCat("M=", c.m, " ", DTypeName(c.dt)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, PlainMatmul(c.m, 256, 512, c.dt));
    CodegenOptions o;
    o.gemm_warps_along_n = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, o));
    EXPECT_THAT(code.source, HasSubstr("fragments stored directly"));
    const size_t first = code.source.find(c.stores[0]);
    ASSERT_NE(first, std::string::npos) << code.source.substr(code.source.find("// kernel k0"));
    EXPECT_EQ(code.source.find(c.stores[1]), first + c.stores[0].size());
    EXPECT_EQ(Count(code.source, "F32ToF16(acc2"), 0);  // no scalar stores left
    if (NvrtcAvailable()) {
      for (int sm : {80, 90}) EXPECT_OK(CompileWithNvrtc(code.source, sm).status()) << "sm_" << sm;
    }
  }
}

// A partial that is the sum of two matmul accumulators of the same N tile (lora's split form:
// X·W + (X·A)·B, docs/search.md) is folded: the second accumulator is added into the first
// right after the loop (after the deferred ·B), and only the first is stored, straight from
// the fragments (one warp along K) or through one reduction buffer (warps along K).
TEST(CodegenTest, SumsOfAccumulatorsAreFoldedIntoOne) {
  struct Case {
    ProgramCase program;
    bool warps_n;
    const char* stored;  // how acc2 (X·W's accumulator, now the sum) is stored
  };
  const Case cases[] = {
      {{"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=6", 2}, true,
       "if (r < 1) *reinterpret_cast<float2*>(out + (long long)r * 4096LL + c) = "
       "make_float2(acc2[mt][nt][0], acc2[mt][nt][1]);"},
      {{"lora_splitk", "lora", 8, true, "g=16,s=8,F=16,T=256,S=6", 2}, false,
       "*reinterpret_cast<float2*>(red + r * 264 + c) = make_float2(acc2[mt][nt][0], "
       "acc2[mt][nt][1]);"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " b=", c.program.batch));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions o;
    o.gemm_warps_along_n = c.warps_n;
    o.gemm_defer_chained = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, o));
    const std::string fold = "acc2[mt][nt][e] += acc7[mt][nt][e];  // Sum (add)";
    EXPECT_EQ(Count(code.source, fold), 1);
    // After ·B (which writes acc7) and before the stores.
    EXPECT_LT(code.source.find("MmaM16N8K16(acc7[mt][nt], pa, bf7[nt])"), code.source.find(fold));
    EXPECT_LT(code.source.find(fold), code.source.find(c.stored));
    EXPECT_THAT(code.source, HasSubstr(c.stored));
    EXPECT_EQ(Count(code.source, "acc7[mt][nt][0], acc7"), 0);  // acc7 never stored
    EXPECT_EQ(absl::StrContains(code.source, "fragments stored directly"), c.warps_n);
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["args"].size(), 5u);  // X, W, A, B and the one partial
  }
}

// CodegenOptions::gemm_defer_chained: lora's chained (X·A)·B multiplies by B once after the
// loop. Per k16 chunk only X·A's two mma remain in the loop; after it, one k16 step per n8 tile
// of the warp; X·A's eight f32 accumulators per m16 tile are counted in accumulator_regs.
// Programs without a chained matmul are generated exactly as without the option.
TEST(CodegenTest, DeferChainedMatmul) {
  struct Case {
    ProgramCase program;
    bool warps_n;
    int tiles_per_warp;  // ·B's n8 tiles per warp (after the loop)
    bool chained;
  };
  const Case cases[] = {
      {{"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=3", 2}, true, 8, true},
      {{"lora_splitk", "lora", 8, true, "g=32,s=4,F=8,T=128,S=4", 2}, false, 16, true},
      {{"rmsnorm_linear_split", "rmsnorm_linear", 8, true, "g=32,s=4,F=16,T=128,S=4", 2}, false,
       0, false},
      {{"gated_mlp_splitk", "gated_mlp", 8, true, "g=64,s=2,F=16,T=256,S=4", 2}, true, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " b=", c.program.batch));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions plain;
    plain.gemm_warps_along_n = c.warps_n;
    CodegenOptions defer = plain;
    defer.gemm_defer_chained = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode a, GenerateCuda(p, plain));
    ASSERT_OK_AND_ASSIGN(GeneratedCode b, GenerateCuda(p, defer));
    if (!c.chained) {
      EXPECT_EQ(a.source, b.source);
      EXPECT_EQ(a.launches[0].accumulator_regs, b.launches[0].accumulator_regs);
      continue;
    }
    EXPECT_EQ(b.launches[0].accumulator_regs, a.launches[0].accumulator_regs + 8);
    EXPECT_THAT(b.source, HasSubstr("summed over the loop (gemm_defer_chained)"));
    EXPECT_THAT(b.source, HasSubstr("const u32_t pa[4] = {PackF16x2(xa7[mt][0][0], "));
    EXPECT_THAT(b.source, HasSubstr(absl::StrCat("for (int nt = 0; nt < ", c.tiles_per_warp,
                                                 "; ++nt) MmaM16N8K16(acc7[mt][nt], pa, bf7[nt]);\n  }")));
    EXPECT_EQ(Count(b.source, "float xa[2][4] = {};"), 0);
    EXPECT_EQ(Count(a.source, "float xa[2][4] = {};"), 1);
    // The ·B step moves from inside the k16 loop (two levels of indent deeper) to after it.
    EXPECT_EQ(Count(a.source, "          for (int nt = 0; nt < "), 1);
    EXPECT_EQ(Count(b.source, "          for (int nt = 0; nt < "), 0);
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, defer));
    EXPECT_EQ(again.source, b.source);  // deterministic
  }
}

// CodegenOptions::gemm_chained_b_smem: B's tile of a chained matmul is copied into shared
// memory in the first commit group (before the prologue's stages), after everything else in
// dynamic shared memory (rows of N + 8 f16), and the fragments are read from there after the
// loop, right before ·B; no global load of B remains. Without gemm_defer_chained it is an
// error by exact message; programs without a chained matmul are generated as without it.
TEST(CodegenTest, ChainedBTileInSharedMemory) {
  struct Case {
    ProgramCase program;
    bool warps_n;
    bool defer;
    const char* copy;     // the B tile's cp.async ("" when none)
    int64_t smem_added;   // dynamic shared memory over the same program without the option
    const char* error;    // "" when it generates
  };
  const Case cases[] = {
      {{"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=6", 2}, true, true,
       "  LoadTileAsync<16, 256, 128>(reinterpret_cast<f16_t*>(smem + 222048), 264, t_B + (0LL) "
       "* 4096LL + (long long)blockIdx.x * 256LL, 4096LL, tid);  // Bt (input) "
       "(gemm_chained_b_smem)\n",
       16 * 264 * 2, ""},
      {{"lora_splitk", "lora", 8, true, "g=16,s=8,F=16,T=256,S=6", 2}, false, true,
       "  LoadTileAsync<16, 256, 256>(reinterpret_cast<f16_t*>(smem + 114432), 264, t_B + (0LL) "
       "* 4096LL + (long long)blockIdx.x * 256LL, 4096LL, tid);  // Bt (input) "
       "(gemm_chained_b_smem)\n",
       16 * 264 * 2, ""},
      // A 64-column tile: 16 rows of 72.
      {{"lora_splitk", "lora", 1, true, "g=64,s=2,F=16,T=128,S=2", 2}, false, true,
       "  LoadTileAsync<16, 64, 128>(reinterpret_cast<f16_t*>(smem + ", 16 * 72 * 2, ""},
      {{"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=6", 2}, true, false, "", 0,
       "codegen: kernel k0: gemm_chained_b_smem needs gemm_defer_chained: without it the "
       "chained matmul XAB (matmul) multiplies by B at every k16 chunk (set both options, or "
       "neither)"},
      {{"rmsnorm_linear_split", "rmsnorm_linear", 8, true, "g=32,s=4,F=16,T=128,S=4", 2}, false,
       true, "", 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " b=", c.program.batch, " ", c.program.assignment));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions plain;
    plain.gemm_warps_along_n = c.warps_n;
    plain.gemm_defer_chained = c.defer;
    CodegenOptions smem = plain;
    smem.gemm_chained_b_smem = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode a, GenerateCuda(p, plain));
    absl::StatusOr<GeneratedCode> b = GenerateCuda(p, smem);
    if (*c.error != '\0') {
      EXPECT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument, ::testing::Eq(std::string(c.error))));
      continue;
    }
    ASSERT_OK(b.status());
    EXPECT_EQ(b->launches[0].dynamic_smem_bytes, a.launches[0].dynamic_smem_bytes + c.smem_added);
    if (*c.copy == '\0') {
      EXPECT_EQ(b->source, a.source);
      continue;
    }
    const std::string& src = b->source;
    EXPECT_THAT(src, HasSubstr(c.copy));
    // The copy precedes the prologue's first commit, so it is in the first group.
    EXPECT_LT(src.find(c.copy), src.find("    if (st < kF) load_stage(st, st);"));
    // No global load of B; the fragments read the tile after the loop, before ·B.
    EXPECT_THAT(a.source, HasSubstr("const f16_t* bp = t_B + "));
    EXPECT_THAT(src, ::testing::Not(HasSubstr("const f16_t* bp = t_B + ")));
    const size_t frag = src.find("    const f16_t* bp = reinterpret_cast<const f16_t*>(smem + ");
    ASSERT_NE(frag, std::string::npos);
    EXPECT_LT(src.find("for (int it = 0; it < kF; ++it) {"), frag);
    EXPECT_LT(frag, src.find("MmaM16N8K16(acc7[mt][nt], pa, bf7[nt])"));
    EXPECT_EQ(Count(src, "bf7[nt][0] = Pack2("), 1);
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, smem));
    EXPECT_EQ(again.source, src);  // deterministic
  }
}

// CodegenOptions::programmatic_dependent_launch in all three templates: every kernel begins
// with the prologue, is marked in launch.json, and host.h launches it with the attribute
// through cudaLaunchKernelEx; without the option none of it appears.
TEST(CodegenTest, ProgrammaticDependentLaunch) {
  const ProgramCase cases[] = {
      {"gqa", "gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=128,S=2", 2},  // attention + pointwise
      {"lora_splitk", "lora", 1, true,
       "g=32,s=8,F=4,T=128,S=3", 2},  // GEMM + pointwise
      {"ntrans", "ntrans", 8, false, "g=8,T=128", 1},    // pointwise with rms
  };
  for (const ProgramCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.fixture, " b=", c.batch));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c));
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(pdl ? "with" : "without");
      CodegenOptions options;
      options.programmatic_dependent_launch = pdl;
      ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
      ASSERT_EQ(code.launches.size(), c.kernels);
      EXPECT_EQ(Count(code.source, "  prism_dev::PdlPrologue();"), pdl ? static_cast<int>(c.kernels) : 0);
      EXPECT_EQ(Count(code.host_header, "cudaLaunchAttributeProgrammaticStreamSerialization"),
                pdl ? static_cast<int>(c.kernels) : 0);
      EXPECT_EQ(Count(code.host_header, "<<<"), pdl ? 0 : static_cast<int>(c.kernels));
      const nlohmann::json j = nlohmann::json::parse(code.launch_json);
      for (size_t k = 0; k < c.kernels; ++k) {
        EXPECT_EQ(code.launches[k].programmatic, pdl);
        EXPECT_EQ(j["kernels"][k].contains("programmatic_dependent_launch"), pdl);
        EXPECT_FALSE(j["kernels"][k].contains("cluster"));
      }
    }
  }
}

// CodegenOptions::constant_inputs: with programmatic dependent launch and a pipeline, a GEMM
// kernel issues the constant inputs' prologue stages (and a constant chained B tile in shared
// memory) between griddepcontrol.launch_dependents and griddepcontrol.wait, one commit group
// per stage, and the other inputs' stages after the wait; the loop and the launch are
// unchanged. Without PDL, with one stage, with names that are not inputs, and in the attention
// and pointwise templates the source is byte-identical to an empty list.
TEST(CodegenTest, ConstantInputsLoadBeforeTheWait) {
  struct Case {
    ProgramCase program;
    bool pdl;
    bool b_smem;
    std::vector<std::string> constant;
    // In the first kernel, in this order: PdlLaunchDependents, `before` (each), PdlWait,
    // `after` (each), the loop. Both empty: the source equals the one without constant inputs.
    std::vector<std::string> before;
    std::vector<std::string> after;
  };
  const std::string early = "    if (st < kF) load_early(st, st);\n    CpAsyncCommit();\n";
  const std::string late = "    if (st < kF) load_late(st, st);\n    CpAsyncCommit();\n";
  const std::string all = "    if (st < kF) load_stage(st, st);\n    CpAsyncCommit();\n";
  const ProgramCase rms = {"rmsnorm_linear_split", "rmsnorm_linear", 8, true,
                           "g=32,s=4,F=16,T=128,S=4", 2};
  const ProgramCase rms1 = {"rmsnorm_linear_split", "rmsnorm_linear", 8, true,
                            "g=32,s=4,F=16,T=128,S=1", 2};
  const ProgramCase lora = {"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=6", 2};
  const ProgramCase gqa = {"gqa", "gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=128,S=2", 2};
  const ProgramCase ntrans = {"ntrans", "ntrans", 8, false, "g=8,T=128", 1};
  const std::string b_tile = "(gemm_chained_b_smem, constant input)\n";
  const Case cases[] = {
      {rms, true, false, {"W"}, {"auto load_early", early}, {late}},
      {rms, true, false, {"W", "X"}, {all}, {}},  // every input: one prologue, then the wait
      {rms, true, false, {"X"}, {early}, {late}},  // any input the caller declares
      {rms, false, false, {"W"}, {}, {}},          // no PDL: nothing to overlap
      {rms, true, false, {"Z", "P3"}, {}, {}},     // not inputs of the program
      {rms1, true, false, {"W"}, {}, {}},          // one stage: no prologue
      {lora, true, true, {"W", "A", "B"}, {b_tile, early}, {late}},
      {lora, true, true, {"W", "A"}, {early}, {"(gemm_chained_b_smem)\n", late}},
      {lora, true, true, {"B"}, {b_tile, "  CpAsyncCommit();\n"}, {all}},
      {lora, true, false, {"B"}, {}, {}},  // B's fragments are read after the wait anyway
      {gqa, true, false, {"Q", "Kt", "V"}, {}, {}},
      {ntrans, true, false, {"X"}, {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " ", c.program.assignment, " pdl ", c.pdl,
                              " constant ", absl::StrJoin(c.constant, ",")));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions plain;
    plain.programmatic_dependent_launch = c.pdl;
    plain.gemm_defer_chained = c.b_smem;
    plain.gemm_chained_b_smem = c.b_smem;
    plain.gemm_warps_along_n = std::string(c.program.fixture) == "lora_splitk";  // fits 256 columns
    CodegenOptions with = plain;
    with.constant_inputs = c.constant;
    ASSERT_OK_AND_ASSIGN(GeneratedCode a, GenerateCuda(p, plain));
    ASSERT_OK_AND_ASSIGN(GeneratedCode b, GenerateCuda(p, with));
    if (c.before.empty() && c.after.empty()) {
      EXPECT_EQ(b.source, a.source);
      continue;
    }
    EXPECT_EQ(b.launch_json, a.launch_json);
    EXPECT_EQ(b.host_header, a.host_header);
    const std::string& src = b.source;
    const size_t k1 = src.find("extern \"C\" __global__", src.find("extern \"C\" __global__") + 1);
    const std::string k0 = src.substr(0, k1);
    EXPECT_EQ(Count(k0, "prism_dev::PdlPrologue();"), 0);
    EXPECT_EQ(Count(k0, "  prism_dev::PdlLaunchDependents();"), 1);
    EXPECT_EQ(Count(k0, "  prism_dev::PdlWait();"), 1);
    EXPECT_EQ(Count(src, "  prism_dev::PdlPrologue();"), 1);  // the combine kernel's
    size_t at = k0.find("  prism_dev::PdlLaunchDependents();");
    for (const std::string& x : c.before) {
      const size_t next = k0.find(x, at);
      ASSERT_NE(next, std::string::npos) << x;
      at = next + x.size();
    }
    const size_t wait = k0.find("  prism_dev::PdlWait();");
    EXPECT_LE(at, wait);
    at = wait;
    for (const std::string& x : c.after) {
      const size_t next = k0.find(x, at);
      ASSERT_NE(next, std::string::npos) << x;
      at = next + x.size();
    }
    EXPECT_LT(at, k0.find("  for (int it = 0; it < kF; ++it) {"));
    // The refill in the loop still loads every input.
    EXPECT_EQ(Count(k0, "load_stage(it + kStages - 1, (it + kStages - 1) % kStages);"), 1);
    // load_early loads exactly the constant inputs, load_late the others.
    const size_t le = k0.find("  auto load_early = ");
    if (le != std::string::npos) {
      const std::string body = k0.substr(le, k0.find("  };\n", le) - le);
      const std::string lbody =
          k0.substr(k0.find("  auto load_late = "),
                    k0.find("  };\n", k0.find("  auto load_late = ")) - k0.find("  auto load_late = "));
      for (const std::string name : {"X", "W", "A"}) {
        const std::string param = absl::StrCat("t_", name, " + ");
        const bool constant =
            std::find(c.constant.begin(), c.constant.end(), name) != c.constant.end();
        if (!absl::StrContains(a.source, param)) continue;
        EXPECT_EQ(absl::StrContains(body, param), constant) << name;
        EXPECT_EQ(absl::StrContains(lbody, param), !constant && name != "B") << name;
      }
    }
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, with));
    EXPECT_EQ(again.source, src);  // deterministic
  }
}

// CodegenOptions::balance_residency: a kernel with dynamic shared memory whose grid fits in
// one wave gets padding so that at most ceil(blocks / sms) of its blocks fit in an SM; the
// pointwise combine kernel (no dynamic shared memory), a grid the padding cannot narrow
// further, and padding over max_dynamic_smem_bytes are left alone. H200: 132 SMs of
// 233,472 B, 1,024 B reserved per block.
TEST(CodegenTest, BalanceResidency) {
  const CodegenOptions::Residency h200 = {132, 233472, 1024};
  struct ResidencyCase {
    const char* name;
    ProgramCase program;
    bool wgmma, along_n;
    CodegenOptions::Residency residency;
    int64_t max_dynamic_smem_bytes;
    int64_t want_bytes;  // kernel 0's dynamic shared memory
    int64_t want_pad;    // of which padding
  };
  const ProgramCase gqa8 = {"gqa", "gqa", 8, false, "gx=16,gy=4,gz=4,F=8,T=128,S=2", 2};
  const ProgramCase rms8 = {"rmsnorm_linear_split", "rmsnorm_linear", 8, true,
                            "g=32,s=4,F=16,T=128,S=4", 2};
  const ProgramCase lora1 = {"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=3", 2};
  const ResidencyCase cases[] = {
      // 256 blocks: two per SM. 233472 / 3 - 1024 + 1 = 76801 bytes, three no longer fit.
      {"gqa b=8, two per SM", gqa8, true, false, h200, 227 * 1024, 76801, 76801 - 74752},
      {"off", gqa8, true, false, {}, 227 * 1024, 74752, 0},
      // 64 SMs: four per SM; 233472 / 5 - 1023 = 45671 bytes, less than the kernel uses.
      {"fewer SMs: nothing to narrow", gqa8, true, false, {64, 233472, 1024}, 227 * 1024, 74752, 0},
      {"padding over the limit", gqa8, true, false, h200, 76800, 74752, 0},
      // 128 blocks: one per SM, 233472 / 2 - 1023 = 115713 bytes.
      {"rmsnorm_linear b=8, one per SM", rms8, false, false, h200, 227 * 1024, 115713,
       115713 - 111616},
      {"lora b=1, one per SM", lora1, false, true, h200, 227 * 1024, 115713, 115713 - 111024},
  };
  for (const ResidencyCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions options;
    options.attention_wgmma = c.wgmma;
    options.gemm_warps_along_n = c.along_n;
    options.balance_residency = c.residency;
    options.max_dynamic_smem_bytes = c.max_dynamic_smem_bytes;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_EQ(code.launches.size(), 2u);
    EXPECT_EQ(code.launches[0].dynamic_smem_bytes, c.want_bytes);
    EXPECT_EQ(code.launches[0].residency_pad_bytes, c.want_pad);
    EXPECT_EQ(code.launches[1].dynamic_smem_bytes, 0);  // the combine kernel
    EXPECT_EQ(code.launches[1].residency_pad_bytes, 0);
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["dynamic_smem_bytes"], c.want_bytes);
    EXPECT_EQ(j["kernels"][0].contains("residency_pad_bytes"), c.want_pad > 0);
    if (c.want_pad > 0) {
      EXPECT_EQ(j["kernels"][0]["residency_pad_bytes"], c.want_pad);
    }
    EXPECT_THAT(code.host_header,
                HasSubstr(absl::StrCat("MaxDynamicSharedMemorySize, ", c.want_bytes)));
    // The padding changes the launch only.
    CodegenOptions plain = options;
    plain.balance_residency = {};
    ASSERT_OK_AND_ASSIGN(GeneratedCode unpadded, GenerateCuda(p, plain));
    EXPECT_EQ(code.source, unpadded.source);
  }
  // A cluster launch (cluster_combine) is not padded: its blocks must share a GPC. (With 512
  // SMs its 256 blocks would be capped at one per SM: 115,713 bytes.)
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(gqa8));
  CodegenOptions options;
  options.cluster_combine = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode unpadded, GenerateCuda(p, options));
  ASSERT_LT(unpadded.launches[0].dynamic_smem_bytes, 115713);
  options.balance_residency = {512, 233472, 1024};
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
  ASSERT_EQ(code.launches.size(), 1u);
  EXPECT_EQ(code.launches[0].dynamic_smem_bytes, unpadded.launches[0].dynamic_smem_bytes);
  EXPECT_EQ(code.launches[0].residency_pad_bytes, 0);
}

// CodegenOptions::cluster_combine folds the split-KV combine kernel into the partial kernel:
// one launch in clusters of (1, 1, gz), no partial tensors among its arguments, the tiles in
// shared memory read back through distributed shared memory between two cluster barriers.
TEST(CodegenTest, ClusterCombine) {
  struct ClusterCase {
    ProgramCase program;
    int64_t gz;
    bool direct;  // one warp per row tile: fragments written straight into the kept tile
    bool wgmma = false;  // CodegenOptions::attention_wgmma (one warpgroup per 64-row tile)
  };
  const ClusterCase cases[] = {
      {{"gqa", "gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=128,S=2", 1}, 16, true},
      {{"gqa", "gqa", 8, false, "gx=16,gy=2,gz=8,F=16,T=128,S=2", 1}, 8, true},
      {{"gqa", "gqa", 1, false, "gx=2,gy=8,gz=16,F=2,T=128,S=2", 1}, 16, false},  // 2 warps per tile
      {{"qknorm_gqa", "qknorm_gqa", 8, false, "gx=16,gy=1,gz=8,F=8,T=256,S=2", 1}, 8, true},
      // attention_wgmma: the warpgroups' fragments go straight into the kept tiles too.
      {{"gqa", "gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=128,S=2", 1}, 16, true, true},
      {{"gqa", "gqa", 1, false, "gx=2,gy=4,gz=8,F=4,T=128,S=2", 1}, 8, true, true},
      {{"qknorm_gqa", "qknorm_gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=128,S=2", 1}, 16, true, true},
      {{"gqa", "gqa", 8, false, "gx=16,gy=4,gz=4,F=8,T=128,S=2", 1}, 4, true, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " b=", c.program.batch, " gz=", c.gz,
                              c.wgmma ? " wgmma" : ""));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions plain_options;
    plain_options.attention_wgmma = c.wgmma;
    ASSERT_OK_AND_ASSIGN(GeneratedCode plain, GenerateCuda(p, plain_options));
    CodegenOptions options = plain_options;
    options.cluster_combine = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_EQ(plain.launches.size(), 2u);
    ASSERT_EQ(code.launches.size(), 1u);
    const LaunchConfig& l = code.launches[0];
    EXPECT_EQ(l.kernel, "partial_kv+combine");
    EXPECT_EQ(l.grid, plain.launches[0].grid);
    EXPECT_EQ(l.cluster, (std::array<int64_t, 3>{1, 1, c.gz}));
    std::vector<std::string> args;
    for (int t : l.args) args.push_back(p.tensors[t].name);
    EXPECT_THAT(args, ::testing::ElementsAre("Q", "Kt", "V", "O"));
    EXPECT_GE(l.dynamic_smem_bytes, plain.launches[0].dynamic_smem_bytes);
    EXPECT_EQ(Count(code.source, "  ClusterSync();"), 2);
    EXPECT_THAT(code.source, HasSubstr("cluster_combine kernels need sm_90 or newer"));
    EXPECT_THAT(code.source, HasSubstr("const float v0 = LdClusterF32(rb[it] + 0u + "));
    EXPECT_THAT(code.source, HasSubstr("rb[r] = MapShared(fz, r);"));
    EXPECT_EQ(Count(code.source, "stored from the fragments"), c.direct ? 1 : 0);
    EXPECT_EQ(Count(code.source, "attention_wgmma kernels need sm_90a"), c.wgmma ? 1 : 0);
    EXPECT_EQ(code.source.find("t_Num"), std::string::npos);
    EXPECT_EQ(code.source.find("t_Den"), std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["cluster"], nlohmann::json::array({1, 1, c.gz}));
    EXPECT_THAT(code.host_header, HasSubstr("attr[0].val.clusterDim.z = " + std::to_string(c.gz)));
    EXPECT_EQ(Count(code.host_header, "cudaFuncAttributeNonPortableClusterSizeAllowed"),
              c.gz > 8 ? 1 : 0);
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, options));
    EXPECT_EQ(again.source, code.source);  // deterministic
  }
}

// cluster_combine on the search's split-K GEMM forms (grid (g, s, 1), the combine's forloop
// over s): one launch in clusters of (1, s, 1); the partial tiles (and rmsnorm's Σx²) kept
// row-major after the stages, written straight from the fragments (warps along N) or through
// the reduction buffer; the combine's elements of block (x, 0, 0) spread over the ranks.
TEST(CodegenTest, ClusterCombineSplitKGemm) {
  struct GemmClusterCase {
    ProgramCase program;
    bool warps_n;
    int64_t s;
    std::vector<std::string> args;
    std::vector<std::string> present;
  };
  const GemmClusterCase cases[] = {
      {{"rmsnorm_linear_split", "rmsnorm_linear", 8, true, "g=32,s=4,F=16,T=128,S=4", 2}, true, 4,
       {"X", "W", "Y"},
       {"float* out = reinterpret_cast<float*>(smem + 111616);",
        "*reinterpret_cast<float2*>(out + (long long)r * 192LL + c) = make_float2(acc2[mt][nt][0], "
        "acc2[mt][nt][1]);",
        "const float v2 = LdClusterF32(rb[it] + 12288u + static_cast<u32_t>(i0 * 1) * 4u);",
        "const long long bx = blockIdx.x, by = 0, bz = blockIdx.z;",
        "evaluate the elements of combine block (x, 0, z)"}},
      {{"lora_splitk", "lora", 1, true, "g=16,s=8,F=8,T=128,S=3", 2}, true, 8,
       {"X", "W", "A", "B", "Y"},
       {"launched as clusters of (1, 8, 1) blocks; kernel k1 folded in"}},
      {{"gated_mlp_splitk", "gated_mlp", 8, true, "g=32,s=4,F=16,T=128,S=4", 2}, false, 4,
       {"X", "A", "B", "Y"},
       {"for (int e = first; e < 1024; e += 512) {", "prism_dev::Silu("}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.program.fixture);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions plain_options;
    plain_options.gemm_warps_along_n = c.warps_n;
    ASSERT_OK_AND_ASSIGN(GeneratedCode plain, GenerateCuda(p, plain_options));
    CodegenOptions options = plain_options;
    options.cluster_combine = true;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_EQ(plain.launches.size(), 2u);
    ASSERT_EQ(code.launches.size(), 1u);
    const LaunchConfig& l = code.launches[0];
    EXPECT_EQ(l.kernel, "k0+k1");
    EXPECT_EQ(l.grid, plain.launches[0].grid);
    EXPECT_EQ(l.cluster, (std::array<int64_t, 3>{1, c.s, 1}));
    std::vector<std::string> args;
    for (int t : l.args) args.push_back(p.tensors[t].name);
    EXPECT_EQ(args, c.args);
    EXPECT_GT(l.dynamic_smem_bytes, plain.launches[0].dynamic_smem_bytes);
    EXPECT_EQ(Count(code.source, "  ClusterSync();"), 2);
    EXPECT_THAT(code.source, HasSubstr("cluster_combine kernels need sm_90 or newer"));
    for (const std::string& line : c.present) EXPECT_THAT(code.source, HasSubstr(line));
    EXPECT_EQ(code.source.find("t_P0"), std::string::npos);
    EXPECT_EQ(code.source.find("t_P1"), std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(code.launch_json);
    EXPECT_EQ(j["kernels"][0]["cluster"], nlohmann::json::array({1, c.s, 1}));
    EXPECT_THAT(code.host_header, HasSubstr("attr[0].val.clusterDim.y = " + std::to_string(c.s)));
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, options));
    EXPECT_EQ(again.source, code.source);  // deterministic
    // The kept tiles count against the shared-memory limit, and the message says so.
    options.max_dynamic_smem_bytes = l.dynamic_smem_bytes - 1;
    EXPECT_THAT(GenerateCuda(p, options),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         HasSubstr(absl::StrCat("needs ", l.dynamic_smem_bytes,
                                                " bytes of shared memory"))));
  }
  // Exactly, for rmsnorm_linear's instance: 4 stages of 27904 B, then the 12288 B product tile
  // and the 16-row Σx² column (64 B) at 16-byte alignment.
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(cases[0].program));
  CodegenOptions options;
  options.gemm_warps_along_n = true;
  options.cluster_combine = true;
  options.max_dynamic_smem_bytes = 120000;
  EXPECT_THAT(GenerateCuda(p, options),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::Eq("codegen: kernel k0 needs 123968 bytes of shared memory (4 "
                                     "stages of 27904 B, reduction buffer 12864 B, kept partial "
                                     "tiles 12352 B), over the limit of 120000")));
}

// What cluster_combine refuses, by exact message.
TEST(CodegenTest, ClusterCombineRefusals) {
  struct RefusalCase {
    ProgramCase program;
    const char* message;
  };
  const RefusalCase cases[] = {
      {{"lora", "lora", 1, false, "g=32,F=32,T=128,S=2", 1},
       "codegen: cluster_combine: program lora has no split-KV attention or split-K GEMM kernel "
       "followed by a combine kernel"},
      {{"rmsnorm_linear_split", "rmsnorm_linear", 8, true, "g=32,s=32,F=2,T=128,S=2", 2},
       "codegen: cluster_combine: kernels k0, k1: the producer's grid y (32) is not a cluster "
       "size in [2, 16]"},
      {{"lora_splitk", "lora", 1, true, "g=32,s=1,F=32,T=128,S=2", 2},
       "codegen: cluster_combine: kernels k0, k1: the producer's grid y (1) is not a cluster "
       "size in [2, 16]"},
      {{"gqa", "gqa", 1, false, "gx=2,gy=4,gz=32,F=1,T=128,S=1", 2},
       "codegen: cluster_combine: kernels partial_kv, combine: the producer's grid z (32) is not "
       "a cluster size in [2, 16]"},
      {{"gqa", "gqa", 1, false, "gx=2,gy=4,gz=1,F=32,T=128,S=2", 2},
       "codegen: cluster_combine: kernels partial_kv, combine: the producer's grid z (1) is not "
       "a cluster size in [2, 16]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.program.fixture);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions options;
    options.cluster_combine = true;
    EXPECT_THAT(GenerateCuda(p, options),
                StatusIs(absl::StatusCode::kUnimplemented, ::testing::Eq(c.message)));
  }
}

// CodegenOptions::attention_wgmma: the attention template on warpgroup tensor cores, by the
// lines it pins (the sm_90a guard, the wgmma wrappers for the score and P·V widths, swizzled
// K/V stages, the async-proxy fence, the occupancy hint) and its shared memory: the Q tile,
// rms(V)'s factors, then 1024-byte-aligned unpadded stages and 1024 bytes to align the buffer.
TEST(CodegenTest, AttentionWgmma) {
  struct WgmmaCase {
    ProgramCase program;
    bool pipeline;
    std::vector<std::string> present, absent;
    int64_t dynamic_smem_bytes;
  };
  const WgmmaCase cases[] = {
      // 2 warpgroups of 64 rows, 64-column chunks: two resident blocks, fragments stored.
      {{"gqa", "gqa", 8, false, "gx=16,gy=2,gz=8,F=8,T=256,S=2", 2},
       false,
       {"#error \"prism_gqa_partial_kv: attention_wgmma kernels need sm_90a (wgmma)\"",
        "__launch_bounds__(256, 2)", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16",
        "LoadTileSw128Async<64, 64, 256>(base + h * 8192, ",
        "LoadTileSw128Async<64, 64, 256>(base + 8192 + h * 8192, ",
        "    FenceProxyAsyncShared();\n    __syncthreads();",
        "const unsigned char* qb = smem + wh * 16384 + ((tile0 & ~3) % 8) * 16 * 128;",
        "WgmmaM64N64K16SS(sc[0], WgmmaDescSw128(qb + (kc >> 2) * 16384 + (kc & 3) * 32, 16, "
        "1024), WgmmaDescSw128(kb + kc * 2048, 8192, 1024), kc);",
        "LoadTileSw128Async<128, 64, 256>(smem + h * 16384, ",
        "WgmmaM64N64K16(o[0], a, WgmmaDescSw128(reinterpret_cast<const unsigned char*>(vs) + "
        "(col0 + kc * 16) * 128, 8192, 1024), 1);",
        "stored from the fragments"},
       {"LoadBFragmentX4", "MmaM16N8K16(", "float* red =", "qf[", "if (it == 0)"},
       128 * 64 * 2 + 2 * 2 * 64 * 64 * 2 + 1024},
      // 128-column chunks: the m64n128k16 score wgmma, one block per SM.
      {{"gqa", "gqa", 8, false, "gx=16,gy=2,gz=4,F=8,T=256,S=3", 2},
       false,
       {"__launch_bounds__(256, 1)", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", "WgmmaM64N128K16SS(sc[0], "},
       {},
       128 * 64 * 2 + 3 * 2 * 64 * 128 * 2 + 1024},
      // rms(Q, V), two warpgroups along a 128-column chunk: rms(Q)'s and rms(V)'s rows read
      // through the swizzle, the warpgroups' partial sums through the reduction buffer.
      {{"qknorm_gqa", "qknorm_gqa", 1, false, "gx=2,gy=4,gz=16,F=2,T=256,S=3", 2},
       false,
       {"per-row factor, 2 threads per V row",
        "Sw128Offset(128, r % 128, part * 32 + c)",
        "const float ssl = SumSqRowSw128(qh, 64, r_lo, t4 * 16, 16), ssh = SumSqRowSw128(qh, "
        "64, r_lo + 8, t4 * 16, 16);",
        "float* red = reinterpret_cast<float*>(smem + 9216)"},
       {"stored from the fragments"},
       9216 + 3 * 2 * 128 * 64 * 2 + 1024},
      // Pipelined: S of chunk i+1 issued, not waited, before the softmax of chunk i.
      {{"gqa", "gqa", 8, false, "gx=16,gy=2,gz=8,F=8,T=256,S=3", 2},
       true,
       {"CpAsyncWait<kStages - 3>();\n    FenceProxyAsyncShared();\n    __syncthreads();",
        "WgmmaFenceReg(sn[0][j][e]);", "__launch_bounds__(256, 1)"},
       {},
       128 * 64 * 2 + 3 * 2 * 64 * 64 * 2 + 1024},
  };
  for (const WgmmaCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.program.fixture, " ", c.program.assignment));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make(c.program));
    CodegenOptions options;
    options.attention_wgmma = true;
    options.attention_pipeline = c.pipeline;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    // The generated part (after the embedded device_common.cuh, which defines every helper).
    const auto kernels = [](const std::string& source) {
      return source.substr(source.find("// kernel partial_kv:"));
    };
    const std::string k = kernels(code.source);
    for (const std::string& line : c.present) {
      EXPECT_NE(k.find(line), std::string::npos) << "missing: " << line;
    }
    for (const std::string& line : c.absent) {
      EXPECT_EQ(k.find(line), std::string::npos) << "unexpected: " << line;
    }
    EXPECT_EQ(code.launches[0].dynamic_smem_bytes, c.dynamic_smem_bytes);
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, options));
    EXPECT_EQ(again.source, code.source);
    // Without the option the same instance uses the mma.sync template.
    absl::StatusOr<GeneratedCode> plain = GenerateCuda(p);
    if (plain.ok()) {
      EXPECT_EQ(kernels(plain->source).find("wgmma"), std::string::npos);
    }
  }
}

// What attention_wgmma refuses, by exact message.
TEST(CodegenTest, AttentionWgmmaRefusals) {
  struct RefusalCase {
    const char* assignment;
    int tiles_per_warp;
    const char* message;
  };
  const RefusalCase cases[] = {
      {"gx=16,gy=8,gz=8,F=8,T=128,S=2", 0,
       "codegen: kernel partial_kv: attention_wgmma: 32 query rows per head are not a multiple "
       "of 64 (one warpgroup tile)"},
      {"gx=16,gy=2,gz=8,F=8,T=128,S=2", 0,
       "codegen: kernel partial_kv: attention_wgmma: 4 warps are not a multiple of 4 per "
       "64-row tile (2 tile(s))"},
      {"gx=16,gy=2,gz=8,F=8,T=512,S=2", 0,
       "codegen: kernel partial_kv, op S (matmul): attention_wgmma: the warpgroup's KV columns "
       "(64 / 2 = 32) must be a multiple of 64, at most 256"},
      {"gx=16,gy=2,gz=8,F=8,T=256,S=2", 2,
       "codegen: kernel partial_kv: attention_wgmma: one m16 row tile per warp "
       "(attention_tiles_per_warp 2)"},
  };
  for (const RefusalCase& c : cases) {
    SCOPED_TRACE(c.assignment);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make({"gqa", "gqa", 8, false, c.assignment, 2}));
    CodegenOptions options;
    options.attention_wgmma = true;
    options.attention_tiles_per_warp = c.tiles_per_warp;
    EXPECT_THAT(GenerateCuda(p, options),
                StatusIs(absl::StatusCode::kUnimplemented, ::testing::Eq(c.message)));
  }
  // Four warpgroups with a 256-column score tile each: the score wgmma needs 154 registers
  // per thread and 512 threads leave 128. Regression: ptxas refused such candidates ("Insufficient
  // registers"), 12 on every attention row of the 2026-12-06 tuning runs. With 128 columns
  // (F 4) the same block generates.
  for (const auto& [assignment, ok] :
       {std::pair{"gx=16,gy=1,gz=8,F=2,T=512,S=1", false}, {"gx=16,gy=1,gz=8,F=4,T=512,S=1", true}}) {
    SCOPED_TRACE(assignment);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make({"gqa", "gqa", 8, false, assignment, 2}));
    CodegenOptions options;
    options.attention_wgmma = true;
    if (ok) {
      EXPECT_OK(GenerateCuda(p, options).status());
    } else {
      EXPECT_THAT(GenerateCuda(p, options),
                  StatusIs(absl::StatusCode::kResourceExhausted,
                           ::testing::Eq("codegen: kernel partial_kv: attention_wgmma: the score "
                                         "wgmma's 64 x 256 accumulator needs at least 154 "
                                         "registers per thread, over the 128 that 512 threads "
                                         "and 1 resident block(s) leave; use fewer threads or a "
                                         "shorter KV chunk")));
    }
  }
  // A 32-wide head: Q's rows are not whole 128-byte swizzle rows.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", {{"G", 2}, {"Lq", 64}, {"D", 32}, {"L", 512}}));
  ASSERT_OK_AND_ASSIGN(
      BlockProgram p,
      Instantiate(f.graph, {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 128}, {"S", 2}}));
  CodegenOptions options;
  options.attention_wgmma = true;
  EXPECT_THAT(GenerateCuda(p, options),
              StatusIs(absl::StatusCode::kUnimplemented,
                       ::testing::Eq("codegen: kernel partial_kv, op S (matmul): attention_wgmma: "
                                     "the head dim 32 must be a multiple of 64 (whole 128-byte "
                                     "rows of Q)")));
}

// attention_wgmma's loop options, alone and together: what each puts in the loop (late loads:
// the refill between the score wgmma's commit and its wait; split P·V: two halves of four k16
// steps around the second half's exponentials), and what each refuses, by exact message.
TEST(CodegenTest, AttentionWgmmaLoopOptions) {
  struct LoopCase {
    int loop;  // 1 late loads, 2 split P·V
    std::vector<std::string> present, absent;
  };
  const std::string late =
      "    WgmmaCommit();\n    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + "
      "kStages - 1) % kStages);  // late: while the score wgmma runs\n    CpAsyncCommit();\n    "
      "WgmmaWait<0>();";
  const std::string early_head =
      "    __syncthreads();\n    if (it + kStages - 1 < kF) load_stage(";
  const std::string split =
      "      }\n#pragma unroll\n    for (int j = 0; j < 8; ++j)\n#pragma unroll\n    for (int e "
      "= 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);\n    WgmmaFence();\n#pragma unroll\n    for "
      "(int kc = 0; kc < 4; ++kc) {";
  const std::string second_half =
      "      for (int j = 8; j < 16; ++j) {\n        const float p0 = Exp2(";
  const LoopCase cases[] = {
      {0, {early_head, "WgmmaM64N128K16SS(sc[0], "}, {late, split, "qf["}},
      {1, {late, "WgmmaM64N128K16SS(sc[0], "}, {early_head, split}},
      {2, {split, second_half, "for (int kc = 4; kc < 8; ++kc) {"}, {late}},
      {3, {late, split, second_half}, {early_head}},
  };
  for (const LoopCase& c : cases) {
    SCOPED_TRACE(c.loop);
    ASSERT_OK_AND_ASSIGN(BlockProgram p,
                         Make({"gqa", "gqa", 8, false, "gx=16,gy=4,gz=4,F=8,T=128,S=2", 2}));
    CodegenOptions options;
    options.attention_wgmma = true;
    options.attention_wgmma_late_loads = (c.loop & 1) != 0;
    options.attention_wgmma_split_pv = (c.loop & 2) != 0;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    const std::string k = code.source.substr(code.source.find("// kernel partial_kv:"));
    for (const std::string& line : c.present) {
      EXPECT_NE(k.find(line), std::string::npos) << "missing: " << line;
    }
    for (const std::string& line : c.absent) {
      EXPECT_EQ(k.find(line), std::string::npos) << "unexpected: " << line;
    }
  }
  struct RefusalCase {
    int loop;
    bool wgmma, pipeline, exp16;
    const char* assignment;
    const char* message;
  };
  const RefusalCase refusals[] = {
      {1, false, false, false, "gx=16,gy=4,gz=4,F=8,T=128,S=2",
       "codegen: kernel partial_kv: attention_wgmma_late_loads needs attention_wgmma without "
       "attention_pipeline"},
      {2, true, true, false, "gx=16,gy=4,gz=4,F=8,T=128,S=3",
       "codegen: kernel partial_kv: attention_wgmma_split_pv needs attention_wgmma without "
       "attention_pipeline"},
      {1, true, false, false, "gx=16,gy=4,gz=4,F=8,T=128,S=1",
       "codegen: kernel partial_kv: attention_wgmma_late_loads needs at least 2 stages (with "
       "one, the chunk's own load comes first)"},
      {2, true, false, true, "gx=16,gy=4,gz=4,F=8,T=128,S=2",
       "codegen: kernel partial_kv: attention_wgmma_split_pv and attention_exp_f16x2 cannot be "
       "combined"},
  };
  for (const RefusalCase& c : refusals) {
    SCOPED_TRACE(c.message);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Make({"gqa", "gqa", 8, false, c.assignment, 2}));
    CodegenOptions options;
    options.attention_wgmma = c.wgmma;
    options.attention_pipeline = c.pipeline;
    options.attention_exp_f16x2 = c.exp16;
    options.attention_wgmma_late_loads = (c.loop & 1) != 0;
    options.attention_wgmma_split_pv = (c.loop & 2) != 0;
    EXPECT_THAT(GenerateCuda(p, options),
                StatusIs(absl::StatusCode::kUnimplemented, ::testing::Eq(c.message)));
  }
}

}  // namespace launch_options

// Split-KV partials in log-sum-exp form (FindLsePairs, docs/codegen.md): the attention kernel
// stores N / Dn and log2 Dn, and the combine weights partial i by 2^(Dn'_i − max Dn') — but
// only when the pair is read as Σ N / Σ Dn with the rows of one producer block. Each case
// changes the gqa b=1 program and says which form both kernels take.
struct LseCase {
  const char* name;
  std::function<void(BlockProgram&)> change;
  bool cluster = false;  // CodegenOptions::cluster_combine (the combine folded in)
  bool lse = true;
  int64_t gz = 16, f = 2;  // KV splits (the combine's iterations) and the forloop
  // The combine's form: one lane per split (the default here), Dn' in registers, or (more than
  // 32 splits) a running max.
  std::vector<std::string> combine = {
      "const int lane = threadIdx.x & 31, it = lane < kF ? lane : kF - 1;",
      "const float d = lane < kF ? v1 : -__int_as_float(0x7f800000);",
      "mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));", "lse_wl4 = prism_dev::Exp2(d - mx);",
      "const float lse_w4 = __shfl_sync(0xffffffffu, lse_wl4, it);", "v2 += v0 * lse_w4;",
      "v3 += lse_w4;"};
};

int OpNamed(const ConcreteBlockGraph& k, absl::string_view name) {
  for (int i = 0; i < static_cast<int>(k.ops.size()); ++i) {
    if (k.ops[i].name == name) return i;
  }
  return -1;
}

TEST(CodegenTest, SplitKvPartialsInLogSumExpForm) {
  auto combine = [](BlockProgram& p) -> ConcreteBlockGraph& {
    return std::get<ConcreteBlockGraph>(p.kernels[1].body);
  };
  const LseCase cases[] = {
      {"as generated", [](BlockProgram&) {}},
      {"folded into a cluster: Dn' in registers",
       [](BlockProgram&) {},
       true,
       true,
       8,
       4,
       {"float lse_d4[kF];", "lse_d4[it] = v1;", "prism_dev::Exp2(lse_d4[it] - lse_mx4);"}},
      {"64 splits: a running max",
       [](BlockProgram&) {},
       false,
       true,
       64,
       1,
       {"const float lse_m4 = fmaxf(lse_mx4, v1);", "const float lse_r4 = prism_dev::Exp2(lse_mx4 - lse_m4);",
        "v2 *= lse_r4;", "v3 *= lse_r4;", "v2 += v0 * lse_w4;"}},
      {"Den also a program output",
       [](BlockProgram& p) {
         for (int t = 0; t < static_cast<int>(p.tensors.size()); ++t) {
           if (p.tensors[t].name == "Den") p.outputs.push_back(t);
         }
       },
       false, false},
      {"N / Dn replaced by N · Dn",
       [&](BlockProgram& p) {
         ConcreteBlockGraph& k = combine(p);
         k.ops[OpNamed(k, "Ot")].fn = OpKind::kMul;
       },
       false, false},
      {"N read from other rows than Dn (rows of block y = 0 only)",
       [&](BlockProgram& p) {
         ConcreteBlockGraph& k = combine(p);
         k.ops[OpNamed(k, "Nt")].map[1] = static_cast<int>(kReplicate);
       },
       false, false},
      {"Dn summed into a second output",
       [&](BlockProgram& p) {
         ConcreteBlockGraph& k = combine(p);
         ConcreteBlockOp out = k.ops.back();  // O's store
         out.operands = {OpNamed(k, "Ds")};
         k.ops.push_back(out);
       },
       false, false},
  };
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", fixtures::WorkloadSizes("gqa", 1)));
  for (const LseCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(BlockProgram p,
                         Instantiate(f.graph, {{"gx", 2}, {"gy", 4}, {"gz", c.gz}, {"F", c.f},
                                               {"T", 128}, {"S", c.f == 1 ? 1 : 2}}));
    c.change(p);
    CodegenOptions options;
    options.cluster_combine = c.cluster;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    const std::vector<std::string> lse = {
        "const float sl = m_lo[tp] + __log2f(ls_lo), sh = m_hi[tp] + __log2f(ls_hi);",
        "float lse_w"};
    const std::vector<std::string> exact = {
        "const float e_lo = Exp2(m_lo[tp]), e_hi = Exp2(m_hi[tp]);  // exp(m)"};
    for (const std::string& line : c.lse ? lse : exact) {
      EXPECT_NE(code.source.find(line), std::string::npos) << "missing: " << line;
    }
    for (const std::string& line : c.lse ? exact : lse) {
      EXPECT_EQ(code.source.find(line), std::string::npos) << "unexpected: " << line;
    }
    if (c.lse) {
      for (const std::string& line : c.combine) {
        EXPECT_NE(code.source.find(line), std::string::npos) << "missing: " << line;
      }
    }
    if (c.cluster) {
      EXPECT_NE(code.source.find("LdClusterF32"), std::string::npos);
    }
  }
}

// How often `tok` occurs in `src` as a whole name (not preceded by a letter, digit or '_'):
// "F16ToF32(" in "BF16ToF32(" does not count.
int CountName(const std::string& src, const std::string& tok) {
  int n = 0;
  for (size_t at = src.find(tok); at != std::string::npos; at = src.find(tok, at + 1)) {
    const char before = at == 0 ? ' ' : src[at - 1];
    n += !(std::isalnum(static_cast<unsigned char>(before)) || before == '_');
  }
  return n;
}

struct BF16Case {
  const char* fixture;
  fixtures::Sizes sizes;
  Assignment assignment;
  CodegenOptions options;
  std::vector<const char*> expected;  // in the kernels' code
};

CodegenOptions Options(std::function<void(CodegenOptions&)> set) {
  CodegenOptions o;
  set(o);
  return o;
}

// Every template on bf16 inputs (split_fixtures.h WithDType): the kernels' code names only the
// bf16 spellings (device_common.cuh: bf16_t, BF16ToF32, F32ToBF16, PackBF16x2, the bf16 mma
// and wgmma), none of the f16 ones; the GPU test (gpu_run_test.cc) runs them.
TEST(CodegenTest, BF16InputsUseTheBF16Spellings) {
  const BF16Case cases[] = {
      {"rmsnorm_linear", {{"M", 2}, {"K", 1024}, {"N", 512}},
       {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, {},
       {"const prism_dev::bf16_t* __restrict__ t_X", "LoadAFragment<true, true>(",
        "MmaM16N8K16BF16(acc", "out[(long long)m * 512LL + n] = F32ToBF16("}},
      {"lora", {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
       {{"g", 8}, {"F", 4}, {"T", 128}, {"S", 2}}, {},
       {"LoadAFragment<false, true>(", "const bf16_t* bp = t_B + ",
        ") * BF16ToF32(bp[(long long)r * 512LL]);"}},
      {"lora_splitk", {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
       {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
       Options([](CodegenOptions& o) {
         o.gemm_defer_chained = true;
         o.gemm_chained_b_smem = true;
       }),
       {"LoadTileAsync<16, 64, 128>(reinterpret_cast<bf16_t*>(smem + ",
        "const bf16_t* bp = reinterpret_cast<const bf16_t*>(smem + ",
        "const u32_t pa[4] = {PackBF16x2(xa", "t_Y[(0LL + i0) * 512LL + ((long long)bx * 64LL + i1) * 1LL] = F32ToBF16("}},
      {"gated_mlp", {{"B", 8}, {"K", 1024}, {"N", 512}},
       {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}, {},
       {"MmaM16N8K16BF16(acc", "= F32ToBF16("}},
      {"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}, {},
       {"= BF16ToF32(static_cast<bf16_t>((w[k >> 1] >> (16 * (k & 1))) & 0xffffu));",
        "= U32x4{PackBF16x2(ov[0], ov[1]), PackBF16x2(ov[2], ov[3]), PackBF16x2(ov[4], ov[5]), "
        "PackBF16x2(ov[6], ov[7])};"}},
      {"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}, {},
       {"BF16ToF32(t_X[", "= F32ToBF16("}},
      {"gqa", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
       {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}}, {},
       {"bf16_t* qs = reinterpret_cast<bf16_t*>(smem);",
        "const bf16_t* ks = reinterpret_cast<const bf16_t*>(",
        "pf[tp][j][0] = PackBF16x2(p0, p1);", "MmaM16N8K16BF16(o[tp][2 * np], a, b0);"}},
      {"qknorm_gqa", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
       {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}},
       Options([](CodegenOptions& o) { o.attention_wgmma = true; }),
       {"SumSqRowSw128<true>(qh, ", "WgmmaM64N64K16BF16(o[0], a, ",
        "pf[tp][j][0] = PackBF16x2(p0 * iv.x, p1 * iv.y);",
        "const float a = BF16ToF32(ws4[j] & 0xffff), b = BF16ToF32(ws4[j] >> 16);"}},
      {"gqa", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
       {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
       Options([](CodegenOptions& o) { o.cluster_combine = true; }),
       {"MmaM16N8K16BF16(", "F32ToBF16("}},
  };
  for (const BF16Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeAnyFixture(c.fixture, c.sizes, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, c.options));
    const size_t at = code.source.find("extern \"C\" __global__");
    ASSERT_NE(at, std::string::npos);
    const std::string kernels = code.source.substr(at);
    for (const char* line : c.expected) {
      EXPECT_TRUE(absl::StrContains(kernels, line)) << line;
    }
    for (const char* f16 : {"f16_t", "F16ToF32(", "F32ToF16(", "PackF16x2(", "MmaM16N8K16(",
                            "LdClusterF16(", "Exp2F16x2(", "MulF16x2("}) {
      EXPECT_EQ(CountName(kernels, f16), 0) << f16;
    }
    EXPECT_FALSE(absl::StrContains(code.source, "k16.f32.f16.f16"));  // a wgmma helper
    // The same program in f16 names the f16 spellings (the table is not vacuous).
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture h, codegen_test::MakeAnyFixture(c.fixture, c.sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram ph, Instantiate(h.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code16, GenerateCuda(ph, c.options));
    EXPECT_GT(CountName(code16.source.substr(code16.source.find("extern \"C\" __global__")),
                        "f16_t"),
              0);
    EXPECT_EQ(CountName(code16.source, "bf16_t*"), 0);
  }
}

TEST(CodegenTest, BF16Refusals) {
  const fixtures::Sizes sizes = {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}};
  // lora with W in bf16 and X, A, B in f16: one kernel reads one format.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture mixed, fixtures::MakeFixture("lora", sizes));
  for (SGraphTensor& t : mixed.graph.mutable_tensors()) {
    if (t.name == "W") t.dtype = DType::kBF16;
  }
  ASSERT_OK_AND_ASSIGN(BlockProgram pm,
                       Instantiate(mixed.graph, {{"g", 8}, {"F", 4}, {"T", 128}, {"S", 2}}));
  EXPECT_THAT(GenerateCuda(pm),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel k0, op Wt (input): W is bf16 but X is f16; one kernel "
                       "reads one 16-bit format"));
  // An f32 matmul input.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f32, fixtures::MakeFixture("lora", sizes));
  for (SGraphTensor& t : f32.graph.mutable_tensors()) {
    if (t.name == "X") t.dtype = DType::kF32;
  }
  ASSERT_OK_AND_ASSIGN(BlockProgram pf,
                       Instantiate(f32.graph, {{"g", 8}, {"F", 4}, {"T", 128}, {"S", 2}}));
  EXPECT_THAT(GenerateCuda(pf),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel k0, op Xt (input): X is f32 but B is f16; one kernel "
                       "reads one format"));
  // The f16x2 exponential of attention_exp_f16x2 on bf16 scores.
  ASSERT_OK_AND_ASSIGN(
      fixtures::Fixture gqa,
      codegen_test::MakeAnyFixture("gqa", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(BlockProgram pg, Instantiate(gqa.graph, {{"gx", 2}, {"gy", 1}, {"gz", 4},
                                                                {"F", 2}, {"T", 128}, {"S", 3}}));
  CodegenOptions exp16;
  exp16.attention_exp_f16x2 = true;
  EXPECT_THAT(GenerateCuda(pg, exp16),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel partial_kv: attention_exp_f16x2: the inputs are bf16; the f16x2 "
                       "exponential needs f16 (P is rounded to the inputs' format)"));
}

// Matmuls of f32 tensors: f32 tiles (LoadTileAsyncF32, 4-byte elements in the stage layout),
// FMAs on the CUDA cores in the tensor cores' accumulator layout (FmaTilesF32), the same
// epilogue, Σx² in the fragment loads' lane share (SumSqRowsF32); the chained (X·A)·B, whose
// X·A is a packed tensor-core fragment, is refused by exact message.
TEST(CodegenTest, F32Matmuls) {
  struct Case {
    const char* fixture;
    fixtures::Sizes sizes;
    Assignment assignment;
    std::vector<const char*> expected;  // in the kernels' code; empty: `error` expected
    const char* error = "";
  };
  const fixtures::Sizes lora = {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}};
  const Case cases[] = {
      {"gated_mlp", {{"B", 8}, {"K", 1024}, {"N", 512}},
       {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}},
       {"LoadTileAsyncF32<8, 128, 256>(reinterpret_cast<float*>(base + 0), 136, t_X + ",
        // X's tile 8 x 136 f32 (4352 B), then A's 128 x 40 f32: 4-byte elements.
        "LoadTileAsyncF32<128, 32, 256>(reinterpret_cast<float*>(base + 4352), 40, t_A + ",
        "FmaTilesF32(acc3, reinterpret_cast<const float*>(base + 0), 136, 8, kc * 16, "
        "reinterpret_cast<const float*>(base + 4352), 40, wn * 32, 4, lane);",
        "const float v7 = prism_dev::Silu(v4);", "out[(long long)m * 512LL + n] = v8;"}},
      {"gated_mlp_splitk", {{"B", 1}, {"K", 1024}, {"N", 512}},
       {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}},
       {"FmaTilesF32(acc", "float* __restrict__ t_P0"}},
      // Σx² in LoadAFragment<true>'s lane share; 4 warps along K, 1 along N.
      {"rmsnorm_linear", {{"M", 2}, {"K", 1024}, {"N", 512}},
       {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}},
       {"SumSqRowsF32(ssl3, ssh3, reinterpret_cast<const float*>(base + 0), 136, 2, kc * 16, "
        "lane);  // R (acc_sumsq_last)",
        "const float v5 = 1.0f / sqrtf(v3 / 1024.0f + 9.99999997e-07f);"}},
      // The after-loop ·B reads f32 B from global memory.
      {"lora", lora, {{"g", 8}, {"F", 4}, {"T", 128}, {"S", 2}},
       {"const float* bp = t_B + ", ") * (bp[(long long)r * 512LL]);"}},
      {"lora_splitk", lora, {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}, {},
       "codegen: kernel k0, op XAB (matmul): a chained matmul (X·A)·B is not supported on f32 "
       "tiles (its X·A is a tensor-core A fragment)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeAnyFixture(c.fixture, c.sizes, DType::kF32));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, c.assignment));
    absl::StatusOr<GeneratedCode> code = GenerateCuda(p);
    if (c.expected.empty()) {
      EXPECT_THAT(code, StatusIs(absl::StatusCode::kUnimplemented, c.error));
      continue;
    }
    ASSERT_OK(code.status());
    const std::string kernels = code->source.substr(code->source.find("extern \"C\" __global__"));
    for (const char* line : c.expected) {
      EXPECT_TRUE(absl::StrContains(kernels, line)) << line;
    }
    for (const char* half : {"f16_t", "MmaM16N8K16(", "LoadAFragment<", "LoadBFragment"}) {
      EXPECT_EQ(CountName(kernels, half), 0) << half;
    }
  }
  // f32 and f16 inputs in one kernel.
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture mixed,
                       fixtures::MakeFixture("gated_mlp", {{"B", 8}, {"K", 1024}, {"N", 512}}));
  for (SGraphTensor& t : mixed.graph.mutable_tensors()) {
    if (t.name == "B") t.dtype = DType::kF32;
  }
  ASSERT_OK_AND_ASSIGN(BlockProgram pm, Instantiate(mixed.graph, {{"g", 16}, {"h", 1}, {"F", 8},
                                                                  {"T", 256}, {"S", 3}}));
  EXPECT_THAT(GenerateCuda(pm), StatusIs(absl::StatusCode::kUnimplemented,
                                         "codegen: kernel k0, op Bt (input): B is f32 but A is "
                                         "f16; one kernel reads one format"));
}

// Unary ops on a matmul's A operand inside the loop (split_fixtures.h prologue_*): applied to
// the A fragments after each load, in f32, rounded back to the inputs' format; Σx² of the same
// tile from the raw values. Chains elsewhere in the loop are refused by exact message.
// The parameters of the hand-built [8, 1024] · [1024, 512] graphs of the refusal tests below:
// g over N, F over K, T = 128, S in [1, 3).
struct GemvParams {
  Expr gx, f, t, st;
};
absl::StatusOr<GemvParams> DeclareGemvParams(SGraph& g) {
  GemvParams p;
  PRISM_ASSIGN_OR_RETURN(p.gx, g.AddParam("g", ParamRole::kGrid, *Domain::DivisorsOf(512)));
  PRISM_ASSIGN_OR_RETURN(p.f, g.AddParam("F", ParamRole::kForloop, *Domain::DivisorsOf(1024)));
  PRISM_ASSIGN_OR_RETURN(p.t, g.AddParam("T", ParamRole::kThreads, *Domain::Set({128})));
  PRISM_ASSIGN_OR_RETURN(p.st, g.AddParam("S", ParamRole::kStages, *Domain::Range(1, 3)));
  return p;
}

TEST(CodegenTest, PrologueOnTheAFragments) {
  const fixtures::Sizes sizes = {{"M", 8}, {"K", 1024}, {"N", 512}};
  const Assignment a = {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}};
  struct Case {
    const char* fixture;
    DType dtype;
    std::vector<const char*> expected;
  };
  const Case cases[] = {
      {"prologue_silu", DType::kF16,
       {"LoadAFragment<false>(a2[mt], ",
        "for (int j = 0; j < 4; ++j) {  // U (silu) on the A fragment\n"
        "          const float x0 = F16ToF32(a2[mt][j] & 0xffffu), x1 = F16ToF32(a2[mt][j] >> 16);\n"
        "          a2[mt][j] = PackF16x2(prism_dev::Silu(x0), prism_dev::Silu(x1));",
        "MmaM16N8K16(acc3[mt][nt], a2[mt], b0);"}},
      {"prologue_silu", DType::kBF16,
       {"a2[mt][j] = PackBF16x2(prism_dev::Silu(x0), prism_dev::Silu(x1));",
        "const float x0 = BF16ToF32(a2[mt][j] & 0xffffu)"}},
      // The chain's last op names the fragments; Σx² by the same load, of the raw values.
      {"prologue_exp_rms", DType::kF16,
       {"LoadAFragment<true>(a3[mt], ",
        "// H (scale), E (exp) on the A fragment",
        "a3[mt][j] = PackF16x2(expf(0.5f * x0), expf(0.5f * x1));",
        "MmaM16N8K16(acc4[mt][nt], a3[mt], b0);"}},
      // Two tiles per fragment: G into the fragments, Up beside them (l<op>).
      {"prologue_swiglu", DType::kF16,
       {"LoadAFragment<false>(a4[mt], ", "u32_t l1[4];\n        LoadAFragment<false>(l1, ",
        "// S (silu), H (mul) on the A fragment\n"
        "          const float x0_0 = F16ToF32(a4[mt][j] & 0xffffu), x0_1 = F16ToF32(a4[mt][j] >> 16),\n"
        "                      x1_0 = F16ToF32(l1[j] & 0xffffu), x1_1 = F16ToF32(l1[j] >> 16);\n"
        "          a4[mt][j] = PackF16x2((prism_dev::Silu(x0_0) * x1_0), (prism_dev::Silu(x0_1) * x1_1));"}},
      // A one-row tile (RMSNorm's gain) broadcast over the fragments' rows; Σx² of X beside.
      {"prologue_gain", DType::kF16,
       {"LoadAFragment<true>(a3[mt], ",
        "LoadARowFragment(l1, reinterpret_cast<const f16_t*>(base + 2176), kc * 16, lane);",
        "a3[mt][j] = PackF16x2((x0_0 * x1_0), (x0_1 * x1_1));"}},
      {"prologue_gain", DType::kBF16,
       {"LoadARowFragment(l1, reinterpret_cast<const bf16_t*>(base + 2176), kc * 16, lane);",
        "a3[mt][j] = PackBF16x2((x0_0 * x1_0), (x0_1 * x1_1));"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.fixture) + " " + std::string(DTypeName(c.dtype)));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeAnyFixture(c.fixture, sizes, c.dtype));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, a));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    for (const char* line : c.expected) {
      EXPECT_TRUE(absl::StrContains(code.source, line)) << line;
    }
  }
  // On f32 tiles (FMAs on the CUDA cores) each A value is computed where FmaTilesF32Fn reads
  // it, from the staged elements of its leaves (a one-row leaf at row 0), unrounded.
  const struct {
    const char* fixture;
    std::vector<const char*> expected;
  } f32_cases[] = {
      {"prologue_silu",
       {"      {  // U (silu) on the A tile\n        const auto a_at = [&](int r, int k) {\n"
        "          const float x0 = reinterpret_cast<const float*>(base + 0)[r * 136 + k];\n"
        "          return prism_dev::Silu(x0);\n        };\n"
        "        FmaTilesF32Fn(acc3, a_at, 8, kc * 16, "}},
      {"prologue_gain",
       {"SumSqRowsF32(ssl6, ssh6, reinterpret_cast<const float*>(base + 0), 136, 8, kc * 16, "
        "lane);",
        "          const float x1 = reinterpret_cast<const float*>(base + 4352)[k];\n"
        "          return (x0 * x1);\n"}},
  };
  for (const auto& c : f32_cases) {
    SCOPED_TRACE(std::string(c.fixture) + " f32");
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f32,
                         codegen_test::MakeAnyFixture(c.fixture, sizes, DType::kF32));
    ASSERT_OK_AND_ASSIGN(BlockProgram p32, Instantiate(f32.graph, a));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p32));
    for (const char* line : c.expected) {
      EXPECT_TRUE(absl::StrContains(code.source, line)) << line << "\n" << code.source;
    }
  }
  // An op on the B tile (matmul(X, exp(W))) has no prologue: refused by name.
  constexpr int64_t R = kReplicate;
  SGraph g{"b_prologue"};
  ASSERT_OK_AND_ASSIGN(const GemvParams gp, DeclareGemvParams(g));
  const Expr gx = gp.gx, fl = gp.f, t = gp.t, st = gp.st;
  const int x = g.AddInput("X", DType::kF16, {8, 1024});
  const int w = g.AddInput("W", DType::kF16, {1024, 512});
  const int y = g.AddOutput("Y", DType::kF16, {8, 512});
  BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, fl, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int ew = kb.Unary("EW", OpKind::kExp, kb.Input("Wt", w, {1, R, R}, 0));
  kb.Output(kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", xt, ew)), y, {1, R, R});
  std::move(kb).Finish("k0");
  ASSERT_OK_AND_ASSIGN(BlockProgram pb, Instantiate(g, a));
  EXPECT_THAT(GenerateCuda(pb),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel k0, op P (matmul): matmul operands must be loop input "
                       "tiles (or, for A, elementwise ops of such tiles)"));
}

// A loop-invariant input tile as an operand of an after-loop elementwise op (a linear layer's
// bias or residual): read from global memory per stored element at its block origin, a bias
// row broadcast over the rows; any other invariant use is refused by name.
TEST(CodegenTest, InvariantInputsInTheEpilogue) {
  const fixtures::Sizes sizes = {{"M", 8}, {"K", 1024}, {"N", 512}};
  const Assignment a = {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}};
  struct Case {
    const char* fixture;
    DType dtype;
    const char* expected;
  };
  const Case cases[] = {
      {"epilogue_bias", DType::kF16,
       "const float v2 = F16ToF32(t_Bv[(long long)(0LL + 0) * 512LL + (long long)blockIdx.x * "
       "32LL + n]);  // Et (input)"},
      {"epilogue_bias", DType::kBF16,
       "const float v2 = BF16ToF32(t_Bv[(long long)(0LL + 0) * 512LL + (long long)blockIdx.x * "
       "32LL + n]);  // Et (input)"},
      {"epilogue_bias", DType::kF32,
       "const float v2 = t_Bv[(long long)(0LL + 0) * 512LL + (long long)blockIdx.x * 32LL + "
       "n];  // Et (input)"},
      {"epilogue_residual", DType::kF16,
       "const float v2 = F16ToF32(t_Res[(long long)(0LL + m) * 512LL + (long long)blockIdx.x * "
       "32LL + n]);  // Et (input)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.fixture) + " " + std::string(DTypeName(c.dtype)));
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeAnyFixture(c.fixture, sizes, c.dtype));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, a));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    EXPECT_TRUE(absl::StrContains(code.source, c.expected)) << code.source;
    EXPECT_THAT(code.source, HasSubstr("const float v5 = v4 + v2;  // Yt (add)"));
  }
  // An invariant tile stored as it is (no elementwise op reads it): refused by name.
  constexpr int64_t R = kReplicate;
  SGraph g{"stored_bias"};
  ASSERT_OK_AND_ASSIGN(const GemvParams gp, DeclareGemvParams(g));
  const Expr gx = gp.gx, fl = gp.f, t = gp.t, st = gp.st;
  const int x = g.AddInput("X", DType::kF16, {8, 1024});
  const int w = g.AddInput("W", DType::kF16, {1024, 512});
  const int bv = g.AddInput("Bv", DType::kF16, {1, 512});
  const int y = g.AddOutput("Y", DType::kF16, {8, 512});
  const int bc = g.AddOutput("Bc", DType::kF16, {1, 512});
  BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, fl, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int wt = kb.Input("Wt", w, {1, R, R}, 0);
  const int bt = kb.Input("Bt", bv, {1, R, R}, R);
  kb.Output(kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", xt, wt)), y, {1, R, R});
  kb.Output(bt, bc, {1, R, R});
  std::move(kb).Finish("k0");
  ASSERT_OK_AND_ASSIGN(BlockProgram pb, Instantiate(g, a));
  EXPECT_THAT(GenerateCuda(pb),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel k0, op #6 (output): only outputs computed after the "
                       "forloop are supported"));
}

// The one-row operand of an A prologue (RMSNorm's gain) is loaded by broadcast, not as an A
// tile: a sum of squares over it is refused by name.
TEST(CodegenTest, SumOfSquaresOfABroadcastRowIsRefused) {
  constexpr int64_t R = kReplicate;
  SGraph g{"gain_sumsq"};
  ASSERT_OK_AND_ASSIGN(const GemvParams gp, DeclareGemvParams(g));
  const Expr gx = gp.gx, fl = gp.f, t = gp.t, st = gp.st;
  const int x = g.AddInput("X", DType::kF16, {8, 1024});
  const int gn = g.AddInput("Gn", DType::kF16, {1, 1024});
  const int w = g.AddInput("W", DType::kF16, {1024, 512});
  const int y = g.AddOutput("Y", DType::kF16, {8, 512});
  BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, fl, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int gt = kb.Input("Gnt", gn, {R, R, R}, 1);
  const int wt = kb.Input("Wt", w, {1, R, R}, 0);
  const int acc = kb.Accumulate(
      "A", BlockOpKind::kAccSum, kb.MatMul("P", kb.Binary("H", OpKind::kMul, xt, gt), wt));
  const int ss = kb.Accumulate("Q", BlockOpKind::kAccSumSqLast, gt);
  kb.Output(kb.Binary("Yt", OpKind::kMul, acc, kb.InvRms("r", ss, g.Const(1024), 0.0)), y,
            {1, R, R});
  std::move(kb).Finish("k0");
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(g, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 2}}));
  EXPECT_THAT(GenerateCuda(p),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "codegen: kernel k0, op Q (acc_sumsq_last): the sum of squares of a row "
                       "broadcast over the A tile is not supported"));
}

}  // namespace
}  // namespace prism::codegen

// ---- library kernels: concat (library_gen.cc) ---------------------------------------------------
namespace prism::codegen {
namespace {

using launch_options::Count;
using launch_options::Parse;

// A program of one concat library kernel (split_fixtures.h MakeConcatFixture).
absl::StatusOr<BlockProgram> ConcatProgram(const std::vector<Shape>& parts, int64_t dim,
                                           DType dtype = DType::kF16,
                                           std::vector<int> operands = {}) {
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture f, codegen_test::MakeConcatFixture(
                                                  parts, dim, dtype, std::move(operands)));
  return Instantiate(f.graph, {});
}

struct ConcatCase {
  const char* label;
  std::vector<Shape> parts;
  int64_t dim;
  DType dtype;
  std::vector<int> operands;  // indices into parts (empty: each part once, in order)
  bool vec;                   // 16-byte vectors: every part's row a multiple of 16 bytes
  int64_t grid;               // ⌈units / 256⌉, at most 528
  std::vector<std::string> args;
  const char* summary;        // in the kernel's comment line: rows, units per row, units
};

// A concat library kernel becomes one copy kernel, by case: the launch (grid, 256 threads, each
// operand tensor once in operand order then the result, no shared memory, PDL per option), the
// source (its signature, 16-byte vectors exactly when every part's row is a multiple of 16
// bytes, the row division only with more than one row), launch.json and host.h; determinism.
TEST(CodegenTest, ConcatLibraryKernel) {
  constexpr DType kF16 = DType::kF16, kBF16 = DType::kBF16, kF32 = DType::kF32;
  const std::vector<std::string> two = {"X0", "X1", "Y"}, three = {"X0", "X1", "X2", "Y"};
  const ConcatCase cases[] = {
      {"last dim, 16-byte parts", {{8, 4096}, {8, 1024}}, -1, kF16, {}, true, 20, two,
       "8 row(s) of 512 + 128 = 640 16-byte vectors, 5120 in all"},
      {"inner extents 3 and 5", {{8, 3}, {8, 5}}, 1, kF16, {}, false, 1, two,
       "8 row(s) of 3 + 5 = 8 elements, 64 in all"},
      {"8- and 24-byte parts of a 32-byte row", {{8, 4}, {8, 12}}, 1, kF16, {}, false, 1, two,
       "8 row(s) of 4 + 12 = 16 elements, 128 in all"},
      {"one 16-byte part and one 8-byte part", {{1000, 8}, {1000, 4}}, 1, kF16, {}, false, 47,
       two, "1000 row(s) of 8 + 4 = 12 elements, 12000 in all"},
      {"dim 0", {{2, 64}, {6, 64}}, 0, kF32, {}, true, 1, two,
       "1 row(s) of 32 + 96 = 128 16-byte vectors, 128 in all"},
      {"dim 0, odd sizes", {{3, 7}, {5, 7}}, 0, kF16, {}, false, 1, two,
       "1 row(s) of 21 + 35 = 56 elements, 56 in all"},
      {"rank 3, middle dim", {{4, 6, 8}, {4, 2, 8}}, 1, kBF16, {}, true, 1, two,
       "4 row(s) of 6 + 2 = 8 16-byte vectors, 32 in all"},
      {"dim -3 of rank 3", {{2, 3, 8}, {1, 3, 8}}, -3, kBF16, {}, true, 1, two,
       "1 row(s) of 6 + 3 = 9 16-byte vectors, 9 in all"},
      {"three operands, odd", {{2, 3}, {2, 5}, {2, 1}}, -1, kF32, {}, false, 1, three,
       "2 row(s) of 3 + 5 + 1 = 9 elements, 18 in all"},
      {"three operands, rank 1", {{16}, {16}, {32}}, 0, kF32, {}, true, 1, three,
       "1 row(s) of 4 + 4 + 8 = 16 16-byte vectors, 16 in all"},
      {"rank 4, dim 2", {{2, 3, 4, 5}, {2, 3, 1, 5}}, 2, kF32, {}, false, 1, two,
       "6 row(s) of 20 + 5 = 25 elements, 150 in all"},
      {"the same operand twice", {{2, 8}, {2, 16}}, 1, kF16, {0, 1, 0}, true, 1, two,
       "2 row(s) of 1 + 2 + 1 = 4 16-byte vectors, 8 in all"},
      {"grid capped", {{4096, 8192}, {4096, 8192}}, 1, kBF16, {}, true, 528, two,
       "4096 row(s) of 1024 + 1024 = 2048 16-byte vectors, 8388608 in all"},
      {"rows of 2^31 - 1 elements", {{2147483646}, {1}}, 0, kF16, {}, false, 528, two,
       "1 row(s) of 2147483646 + 1 = 2147483647 elements, 2147483647 in all"},
  };
  for (const ConcatCase& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, ConcatProgram(c.parts, c.dim, c.dtype, c.operands));
    const std::string elem = c.dtype == kF32    ? "float"
                             : c.dtype == kBF16 ? "prism_dev::bf16_t"
                                                : "prism_dev::f16_t";
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(pdl ? "with PDL" : "without PDL");
      CodegenOptions options;
      options.programmatic_dependent_launch = pdl;
      ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
      // Launch, arguments, signature, launch.json, host.h, determinism.
      library_checks::ExpectLibraryLaunch(p, options, code, "prism_concat_k0", {c.grid, 1, 1},
                                          c.args, c.dtype);
      // The source.
      EXPECT_THAT(code.source, HasSubstr(c.summary));
      EXPECT_EQ(Count(code.source, "  prism_dev::PdlPrologue();"), pdl ? 1 : 0);
      EXPECT_EQ(Count(code.source, "  prism_dev::U32x4* __restrict__ dst = "), c.vec ? 1 : 0);
      EXPECT_EQ(Count(code.source, absl::StrCat("  ", elem, "* __restrict__ dst = ")),
                c.vec ? 0 : 1);
      const bool rows = !absl::StartsWith(c.summary, "1 row(s)");
      EXPECT_EQ(Count(code.source, "const unsigned r = e / kRow, col = e - r * kRow;"),
                rows ? 1 : 0);
      EXPECT_EQ(Count(code.source, "const unsigned col = e;"), rows ? 0 : 1);
      // One load per operand position.
      for (size_t i = 0; i < c.args.size() + 2; ++i) {
        const size_t parts = c.operands.empty() ? c.parts.size() : c.operands.size();
        EXPECT_EQ(Count(code.source, absl::StrCat("v[j] = src", i, "[")), i < parts ? 1 : 0);
      }
      // The result's shape in launch.json.
      const nlohmann::json j = nlohmann::json::parse(code.launch_json);
      EXPECT_EQ(j["kernels"][0]["args"][c.args.size() - 1]["shape"],
                nlohmann::json(p.tensors[p.outputs[0]].shape));
    }
  }
}

// The kernel of the first case above, whole: [8, 4096] and [8, 1024] f16 along the last dim.
TEST(CodegenTest, ConcatKernelSource) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, ConcatProgram({{8, 4096}, {8, 1024}}, -1));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  const size_t at = code.source.find("// kernel k0:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.source.substr(at), R"(// kernel k0: library kernel concat(X0 [8, 4096], X1 [8, 1024], dim 1) -> Y f16 [8, 5120]; 8 row(s) of 512 + 128 = 640 16-byte vectors, 5120 in all; grid 20, 256 threads, grid-stride, 4 units in flight per thread and step
extern "C" __global__ void __launch_bounds__(256) prism_concat_k0(const prism_dev::f16_t* __restrict__ t_X0, const prism_dev::f16_t* __restrict__ t_X1, prism_dev::f16_t* __restrict__ t_Y) {
  constexpr unsigned kRow = 640u, kUnits = 5120u;  // 16-byte vectors
  const prism_dev::U32x4* __restrict__ src0 = reinterpret_cast<const prism_dev::U32x4*>(t_X0);  // 512 per row
  const prism_dev::U32x4* __restrict__ src1 = reinterpret_cast<const prism_dev::U32x4*>(t_X1);  // 128 per row
  prism_dev::U32x4* __restrict__ dst = reinterpret_cast<prism_dev::U32x4*>(t_Y);
  const unsigned stride = gridDim.x * 256u;
  for (unsigned e0 = blockIdx.x * 256u + threadIdx.x; e0 < kUnits; e0 += 4u * stride) {
    prism_dev::U32x4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned e = e0 + j * stride;
      if (e >= kUnits) break;
      const unsigned r = e / kRow, col = e - r * kRow;
      if (col < 512u) {
        v[j] = src0[r * 512u + col];
      } else {
        v[j] = src1[r * 128u + (col - 512u)];
      }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned e = e0 + j * stride;
      if (e >= kUnits) break;
      dst[e] = v[j];
    }
  }
}
)");
}

// Appends library kernel `kernel` = concat(`parts`, dim) to `g`, writing a new program output
// `out` of shape `shape` (`parts`' dtype).
absl::Status AppendConcat(SGraph& g, const std::string& kernel,
                          const std::vector<std::string>& parts, int64_t dim, const Shape& shape,
                          const std::string& out) {
  LibraryKernel lk;
  lk.op = OpKind::kConcat;
  lk.dim = dim;
  for (const std::string& name : parts) {
    const std::optional<int> t = g.FindTensor(name);
    if (!t.has_value()) return absl::NotFoundError(name);
    lk.operands.push_back(*t);
  }
  lk.result = g.AddOutput(out, g.tensors()[lk.operands[0]].dtype, shape);
  g.AddLibraryKernel(kernel, lk);
  return Validate(g).status();
}

// cluster_combine folds a split form's combine kernel into its producer and leaves a concat
// kernel after them as it is; a program with nothing to fold is refused as any such program
// is (CodegenOptions::cluster_combine). The fused pair keeps its partials in shared memory, so
// a library kernel that reads them prevents the fold.
TEST(CodegenTest, ConcatWithClusterCombine) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       codegen_test::MakeSplitFixture("gated_mlp_splitk",
                                                      fixtures::WorkloadSizes("gated_mlp", 8)));
  ASSERT_OK(AppendConcat(f.graph, "cat", {"Y", "Y"}, 0, {16, 4096}, "Z"));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(f.graph, Parse("g=32,s=4,F=16,T=128,S=4")));
  CodegenOptions options;
  options.cluster_combine = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
  ASSERT_EQ(code.launches.size(), 2u);
  EXPECT_EQ(code.launches[0].kernel, "k0+k1");
  EXPECT_EQ(code.launches[0].cluster, (std::array<int64_t, 3>{1, 4, 1}));
  EXPECT_EQ(code.launches[1].kernel, "cat");
  EXPECT_EQ(code.launches[1].function, "prism_gated_mlp_splitk_cat");
  EXPECT_EQ(code.launches[1].cluster, (std::array<int64_t, 3>{1, 1, 1}));
  EXPECT_THAT(code.source, HasSubstr("// kernel cat: library kernel concat(Y [8, 4096], Y [8, "
                                     "4096], dim 0) -> Z f16 [16, 4096]; 1 row(s) of 4096 + "
                                     "4096 = 8192 16-byte vectors"));
  std::vector<std::string> args;
  for (int t : code.launches[1].args) args.push_back(p.tensors[t].name);
  EXPECT_THAT(args, ::testing::ElementsAre("Y", "Z"));

  // A library kernel reading the partials P0.
  BlockProgram reads = p;
  int partial = -1;
  for (int t = 0; t < static_cast<int>(reads.tensors.size()); ++t) {
    if (reads.tensors[t].name == "P0") partial = t;
  }
  ASSERT_GE(partial, 0);
  ConcreteTensor twice = reads.tensors[partial];
  twice.name = "P0x2";
  twice.shape[0] *= 2;
  reads.tensors.push_back(twice);
  LibraryKernel lk;
  lk.op = OpKind::kConcat;
  lk.operands = {partial, partial};
  lk.result = static_cast<int>(reads.tensors.size()) - 1;
  reads.kernels.push_back(ConcreteKernel{"cat2", lk});
  ASSERT_OK_AND_ASSIGN(GeneratedCode unfused, GenerateCuda(reads));
  EXPECT_EQ(unfused.launches.size(), 4u);
  EXPECT_THAT(GenerateCuda(reads, options),
              StatusIs(absl::StatusCode::kUnimplemented,
                       ::testing::Eq("codegen: cluster_combine: kernels k0, k1: tensor P0 is read "
                                     "by kernel cat2")));

  ASSERT_OK_AND_ASSIGN(BlockProgram alone, ConcatProgram({{8, 4096}, {8, 1024}}, -1));
  EXPECT_THAT(GenerateCuda(alone, options),
              StatusIs(absl::StatusCode::kUnimplemented,
                       ::testing::Eq("codegen: cluster_combine: program concat has no split-KV "
                                     "attention or split-K GEMM kernel followed by a combine "
                                     "kernel")));
}

// A batched matmul generated on its rank-2 view (SqueezeBatchDims) next to a concat of its
// rank-3 result: the concat kernel sees the program's own shapes ([8, 64, 128] along dim 1:
// 8 rows of two 64 × 128 parts), not the merged [512, 128] view.
TEST(CodegenTest, ConcatBesideABatchedMatmul) {
  const fixtures::Sizes sizes = {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}};
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeSplitFixture("bmm", sizes));
  ASSERT_OK(AppendConcat(f.graph, "cat", {"Y", "Y"}, 1, {8, 128, 128}, "Z"));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(f.graph, {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  ASSERT_EQ(code.launches.size(), 2u);
  EXPECT_EQ(code.launches[0].grid, (std::array<int64_t, 3>{8, 2, 1}));
  EXPECT_THAT(code.source, HasSubstr("matmul tile 64x64x64 (4 m16 tile(s))"));
  EXPECT_THAT(code.source, HasSubstr("-> Z f16 [8, 128, 128]; 8 row(s) of 1024 + 1024 = 2048 "
                                     "16-byte vectors, 16384 in all"));
  const nlohmann::json j = nlohmann::json::parse(code.launch_json);
  EXPECT_EQ(j["kernels"][1]["args"][1]["shape"], nlohmann::json({8, 128, 128}));
}

// Split-KV partials stay in log-sum-exp form when a library kernel reads other tensors (here
// the attention's output O), and not when one reads them as stored (N and Dn must then hold
// the exact-exp block values).
TEST(CodegenTest, ConcatAndPartialsInLogSumExpForm) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gqa", fixtures::WorkloadSizes("gqa", 1)));
  ASSERT_OK(AppendConcat(f.graph, "cat", {"O", "O"}, -1, {2, 256, 128}, "Z"));
  ASSERT_OK_AND_ASSIGN(BlockProgram p,
                       Instantiate(f.graph, {{"gx", 2}, {"gy", 4}, {"gz", 16}, {"F", 2},
                                             {"T", 128}, {"S", 2}}));
  const std::string lse = "float lse_w";
  const std::string exact = "const float e_lo = Exp2(m_lo[tp]), e_hi = Exp2(m_hi[tp]);  // exp(m)";
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  EXPECT_EQ(code.launches.size(), 3u);
  EXPECT_THAT(code.source, HasSubstr(lse));
  EXPECT_THAT(code.source, ::testing::Not(HasSubstr(exact)));
  // The concat reads Num instead.
  int num = -1;
  for (int t = 0; t < static_cast<int>(p.tensors.size()); ++t) {
    if (p.tensors[t].name == "Num") num = t;
  }
  ASSERT_GE(num, 0);
  ConcreteTensor twice = p.tensors[num];
  twice.name = "Num2";
  twice.shape[0] *= 2;
  p.tensors.push_back(twice);
  LibraryKernel& lk = std::get<LibraryKernel>(p.kernels.back().body);
  lk.operands = {num, num};
  lk.dim = 0;
  lk.result = static_cast<int>(p.tensors.size()) - 1;
  ASSERT_OK_AND_ASSIGN(code, GenerateCuda(p));
  EXPECT_THAT(code.source, ::testing::Not(HasSubstr(lse)));
  EXPECT_THAT(code.source, HasSubstr(exact));
}

// What a concat kernel refuses, by exact message: malformed kernels (InvalidArgument; Instantiate
// never makes them, so the program is edited after it) and results over 2^31 − 1 elements.
TEST(CodegenTest, ConcatRefusals) {
  struct Refusal {
    const char* label;
    std::function<void(BlockProgram&)> change;
    absl::StatusCode code;
    const char* message;
  };
  auto kernel = [](BlockProgram& p) -> LibraryKernel& {
    return std::get<LibraryKernel>(p.kernels[0].body);
  };
  constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  const Refusal cases[] = {
      {"one operand", [&](BlockProgram& p) { kernel(p).operands.pop_back(); }, kInvalid,
       "codegen: kernel k0: concat: takes at least 2 operands, found 1"},
      {"dim 2 of rank 2", [&](BlockProgram& p) { kernel(p).dim = 2; }, kInvalid,
       "codegen: kernel k0: concat: dim 2 is out of range for rank 2"},
      {"dim -3 of rank 2", [&](BlockProgram& p) { kernel(p).dim = -3; }, kInvalid,
       "codegen: kernel k0: concat: dim -3 is out of range for rank 2"},
      {"the result among the operands", [&](BlockProgram& p) { kernel(p).operands[1] = 2; },
       kInvalid, "codegen: kernel k0: concat: the result Y is also an operand"},
      {"an operand out of range", [&](BlockProgram& p) { kernel(p).operands[1] = 7; }, kInvalid,
       "codegen: kernel k0: concat: operand index 7 is out of range"},
      {"the result out of range", [&](BlockProgram& p) { kernel(p).result = -1; }, kInvalid,
       "codegen: kernel k0: concat: result index -1 is out of range"},
      {"dtypes differ", [](BlockProgram& p) { p.tensors[1].dtype = DType::kBF16; }, kInvalid,
       "codegen: kernel k0: concat: X1 is bf16 but X0 is f16"},
      {"ranks differ", [](BlockProgram& p) { p.tensors[1].shape = {8, 1, 1024}; }, kInvalid,
       "codegen: kernel k0: concat: X1 [8, 1, 1024] and X0 [8, 4096] differ in rank"},
      {"other dims differ", [](BlockProgram& p) { p.tensors[1].shape = {4, 1024}; }, kInvalid,
       "codegen: kernel k0: concat: X1 [4, 1024] and X0 [8, 4096] differ outside dim 1"},
      {"an empty dim", [](BlockProgram& p) { p.tensors[1].shape = {8, 0}; }, kInvalid,
       "codegen: kernel k0: concat: X1 [8, 0] has an empty dim"},
      {"the result's shape", [](BlockProgram& p) { p.tensors[2].shape = {8, 5121}; }, kInvalid,
       "codegen: kernel k0: concat: the result Y is f16 [8, 5121], expected f16 [8, 5120]"},
      {"the result's dtype", [](BlockProgram& p) { p.tensors[2].dtype = DType::kF32; }, kInvalid,
       "codegen: kernel k0: concat: the result Y is f32 [8, 5120], expected f16 [8, 5120]"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, ConcatProgram({{8, 4096}, {8, 1024}}, -1));
    c.change(p);
    EXPECT_THAT(GenerateCuda(p), StatusIs(c.code, ::testing::Eq(c.message)));
  }
  // 65537 · 32768 = 2^31 + 32768 elements (2^31 − 1 are generated: ConcatLibraryKernel).
  ASSERT_OK_AND_ASSIGN(BlockProgram big, ConcatProgram({{65536, 32768}, {1, 32768}}, 0));
  EXPECT_THAT(GenerateCuda(big),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::Eq("codegen: kernel k0: concat result Y [65537, 32768] has "
                                     "more than 2147483647 elements (the kernel indexes with 32 "
                                     "bits)")));
}

}  // namespace
}  // namespace prism::codegen

// ---- library kernels: sum, max, mean, softmax, rms_norm over any dim (library_gen.cc) -----------
namespace prism::codegen {
namespace {

using launch_options::Count;

// A program of one fibre-op library kernel (split_fixtures.h MakeLibraryReduceFixture).
absl::StatusOr<BlockProgram> FibreProgram(OpKind op, const Shape& shape, int64_t dim,
                                          DType dtype = DType::kF16, double eps = 1e-5) {
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture f,
                         codegen_test::MakeLibraryReduceFixture(op, shape, dim, dtype, eps));
  return Instantiate(f.graph, {});
}

struct FibreCase {
  const char* label;
  OpKind op;
  Shape shape;
  int64_t dim;
  DType dtype;
  bool rows;            // row mode (inner = 1), else column mode
  int64_t v;            // elements per unit (16-byte units: 16 / bytes)
  int64_t c, s;         // column mode: C groups × S threads along k (rows: 0, 0)
  int64_t grid;
  const char* view;     // in the comment line: the [outer, n, inner] view, fibres, stride
};

// A sum / max / mean / softmax / rms_norm library kernel becomes one cooperative kernel, by case:
// the layout the rule of library_gen.cc picks (row or column mode, V, C × S, the grid) in the
// launch, the comment line and the constants; the launch (256 threads, X then Y, no dynamic
// shared memory, the static combine buffer as reduction_bytes, PDL per option), the source
// (signature, one fold loop per pass, the combine by mode, the f32 arithmetic per op, the
// conversions of the dtype), launch.json and host.h; determinism.
TEST(CodegenTest, FibreLibraryKernel) {
  constexpr DType kF16 = DType::kF16, kBF16 = DType::kBF16, kF32 = DType::kF32;
  constexpr OpKind kSum = OpKind::kSum, kMax = OpKind::kMax, kMean = OpKind::kMean;
  constexpr OpKind kSoftmax = OpKind::kSoftmax, kRms = OpKind::kRmsNorm;
  constexpr bool kRows = true, kCols = false;
  const FibreCase cases[] = {
      // Many fibres, short n: S = P(64); C = 4 groups of 8 columns (64 bytes per warp row).
      {"sum over dim 0, short n", kSum, {64, 4096}, 0, kF16, kCols, 8, 4, 64, 128,
       "viewed as [1, 64, 4096]: 4096 fibre(s) of 64 at stride 4096"},
      // Long n: S = 256 / 2 (C = 2: 32 bytes per warp row), 65536 threads.
      {"sum over dim 0, long n", kSum, {4096, 4096}, 0, kF16, kCols, 8, 2, 128, 256,
       "viewed as [1, 4096, 4096]: 4096 fibre(s) of 4096 at stride 4096"},
      {"sum over the last dim (rows, scalar)", kSum, {1000, 77}, -1, kF16, kRows, 1, 0, 0, 125,
       "viewed as [1000, 77, 1]: 1000 fibre(s) of 77 at stride 1"},
      {"softmax over the last dim (rows, vectors)", kSoftmax, {16, 4096}, 1, kF16, kRows, 8, 0,
       0, 2, "viewed as [16, 4096, 1]: 16 fibre(s) of 4096 at stride 1"},
      // inner 300 is no multiple of 8: scalar columns, C = 16 (32 bytes per warp row).
      {"max over a middle dim (scalar columns)", kMax, {2, 50, 300}, 1, kF16, kCols, 1, 16, 16,
       38, "viewed as [2, 50, 300]: 600 fibre(s) of 50 at stride 300"},
      {"softmax over a middle dim (scalar columns)", kSoftmax, {2, 50, 300}, 1, kBF16, kCols, 1,
       16, 16, 38, "viewed as [2, 50, 300]: 600 fibre(s) of 50 at stride 300"},
      {"max over a middle dim (vector columns)", kMax, {4, 33, 16}, 1, kBF16, kCols, 8, 4, 64, 2,
       "viewed as [4, 33, 16]: 64 fibre(s) of 33 at stride 16"},
      {"mean over dim -2", kMean, {8, 100, 40}, -2, kF32, kCols, 4, 2, 128, 40,
       "viewed as [8, 100, 40]: 320 fibre(s) of 100 at stride 40"},
      {"softmax over dim 0", kSoftmax, {64, 96}, 0, kF16, kCols, 8, 4, 64, 3,
       "viewed as [1, 64, 96]: 96 fibre(s) of 64 at stride 96"},
      {"softmax over the last dim, n 5", kSoftmax, {3, 5}, 1, kF32, kRows, 1, 0, 0, 1,
       "viewed as [3, 5, 1]: 3 fibre(s) of 5 at stride 1"},
      {"rms_norm over rows", kRms, {16, 4096}, 1, kF32, kRows, 4, 0, 0, 2,
       "viewed as [16, 4096, 1]: 16 fibre(s) of 4096 at stride 1"},
      {"rms_norm over a middle dim", kRms, {4, 512, 64}, -2, kF16, kCols, 8, 2, 128, 16,
       "viewed as [4, 512, 64]: 256 fibre(s) of 512 at stride 64"},
      {"rms_norm over a middle dim, bf16", kRms, {8, 1000, 40}, 1, kBF16, kCols, 8, 2, 128, 20,
       "viewed as [8, 1000, 40]: 320 fibre(s) of 1000 at stride 40"},
      {"max of rank 1", kMax, {100}, 0, kF32, kRows, 4, 0, 0, 1,
       "viewed as [1, 100, 1]: 1 fibre(s) of 100 at stride 1"},
      // S = P(n) = 4: no block of mostly idle k-threads.
      {"sum of rank 4, dim 2", kSum, {2, 3, 4, 5}, 2, kBF16, kCols, 1, 64, 4, 1,
       "viewed as [6, 4, 5]: 30 fibre(s) of 4 at stride 5"},
      // n = 1: S = 1, no shared memory.
      {"mean over extent 1", kMean, {7, 1, 3}, 1, kF16, kCols, 1, 256, 1, 1,
       "viewed as [7, 1, 3]: 21 fibre(s) of 1 at stride 3"},
      // Two fibres: C = P(2) (the sector width is not reachable), S = 128.
      {"sum of two long f32 columns", kSum, {4096, 2}, 0, kF32, kCols, 1, 2, 128, 1,
       "viewed as [1, 4096, 2]: 2 fibre(s) of 4096 at stride 2"},
      {"a 2^31 - 1 element fibre", kSum, {2147483647}, 0, kF16, kRows, 1, 0, 0, 1,
       "viewed as [1, 2147483647, 1]: 1 fibre(s) of 2147483647 at stride 1"},
      {"2^31 - 65536 elements, 32767 fibres", kSoftmax, {65536, 32767}, 0, kBF16, kCols, 1, 32,
       8, 1024, "viewed as [1, 65536, 32767]: 32767 fibre(s) of 65536 at stride 32767"},
  };
  for (const FibreCase& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, FibreProgram(c.op, c.shape, c.dim, c.dtype));
    const std::string op(GetOpInfo(c.op).name);
    const std::string function = absl::StrCat("prism_", op, "_k0");
    const std::string elem = c.dtype == kF32    ? "float"
                             : c.dtype == kBF16 ? "prism_dev::bf16_t"
                                                : "prism_dev::f16_t";
    const std::string cvt = c.dtype == kF32 ? "" : c.dtype == kBF16 ? "BF16" : "F16";
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    const int d = static_cast<int>(c.dim < 0 ? c.dim + rank : c.dim);
    const int64_t n = c.shape[d];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i) outer *= c.shape[i];
    for (int i = d + 1; i < rank; ++i) inner *= c.shape[i];
    const bool reduces = c.op == kSum || c.op == kMax || c.op == kMean;
    const bool shared = !c.rows && c.s > 1;
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(pdl ? "with PDL" : "without PDL");
      CodegenOptions options;
      options.programmatic_dependent_launch = pdl;
      ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
      // Launch (the static combine buffer as reduction_bytes), arguments X then Y, signature,
      // launch.json, host.h, determinism.
      library_checks::ExpectLibraryLaunch(p, options, code, function, {c.grid, 1, 1}, {"X", "Y"},
                                          c.dtype, shared ? c.v * 256 * 4 : 0);
      // The source: signature, comment line (the view, the mode, the rule's values, the grid).
      EXPECT_THAT(code.source,
                  HasSubstr(absl::StrCat("extern \"C\" __global__ void __launch_bounds__(256) ",
                                         function, "(const ", elem, "* __restrict__ t_X, ", elem,
                                         "* __restrict__ t_Y) {\n")));
      const std::string unit_text =
          c.v > 1 ? absl::StrCat("16-byte units of V = ", c.v) : std::string("elements, V = 1");
      const std::string loads = absl::StrCat(", 256 threads, ", c.v > 1 ? 4 : 8,
                                             " loads in flight per thread\n");
      if (c.rows) {
        EXPECT_THAT(code.source,
                    HasSubstr(absl::StrCat(c.view, "; row mode: one warp per fibre, 8 per block, "
                                           "lanes along k in ", unit_text, " (", n / c.v,
                                           " per fibre), xor-butterfly combine; grid ceil(",
                                           outer, " / 8) = ", c.grid, loads)));
      } else {
        EXPECT_THAT(code.source,
                    HasSubstr(absl::StrCat(c.view, "; column mode: ", unit_text, ", ",
                                           outer * inner / c.v, " column group(s) of V fibres")));
        EXPECT_THAT(code.source,
                    HasSubstr(absl::StrCat(") = ", c.s, " threads along k, C = 256 / S = ", c.c,
                                           " groups per block",
                                           shared ? ", pairwise-tree combine in shared memory"
                                                  : "",
                                           "; grid ceil(", outer * inner / c.v, " / ", c.c,
                                           ") = ", c.grid, loads)));
      }
      // The kernel alone (device_common.cuh comes before it).
      const std::string body = code.source.substr(code.source.find("// kernel k0:"));
      EXPECT_EQ(Count(body, "  prism_dev::PdlPrologue();"), pdl ? 1 : 0);
      if (c.rows) {
        EXPECT_EQ(Count(body, absl::StrCat("constexpr unsigned kUnits = ", n / c.v, "u, kRows = ",
                                           outer, "u;")),
                  1);
      } else {
        EXPECT_EQ(Count(body, absl::StrCat("constexpr unsigned kN = ", n, "u, kInnerU = ",
                                           inner / c.v, "u, kGroups = ", outer * inner / c.v,
                                           "u, kC = ", c.c, "u, kS = ", c.s, "u;")),
                  1);
        EXPECT_EQ(Count(body, "const unsigned o = gp / kInnerU, i = gp - o * kInnerU;"),
                  outer > 1 ? 1 : 0);
      }
      EXPECT_EQ(Count(body, absl::StrCat("__shared__ float red[", c.v, "][256];")), shared ? 1 : 0);
      EXPECT_EQ(Count(body, "__shared__"), shared ? 1 : 0);
      EXPECT_EQ(Count(body, "prism_dev::U32x4") > 0, c.v > 1);  // 16-byte loads and stores
      EXPECT_EQ(Count(body, absl::StrCat("* __restrict__ y = ")), reduces ? 0 : 1);
      // One loop over the thread's units per pass (fold or store), each in increasing k.
      const int folds = c.op == kSoftmax ? 2 : 1;
      const int passes = c.op == kSoftmax ? 3 : c.op == kRms ? 2 : 1;
      EXPECT_EQ(Count(body, c.rows ? "for (unsigned k0 = lane; k0 < kUnits; k0 += "
                                   : "for (unsigned k0 = k_first; k0 < kN; k0 += "),
                passes);
      // The combine of each fold: a butterfly over the warp, a tree in shared memory, or none.
      EXPECT_EQ(Count(body, "__shfl_xor_sync(0xffffffffu, a[0], off);"), c.rows ? folds : 0);
      EXPECT_EQ(Count(body, "__shfl_sync(0xffffffffu, a[0], 0);"), c.rows ? folds : 0);
      EXPECT_EQ(Count(body, "for (unsigned h = kS / 2u; h > 0u; h /= 2u)"), shared ? folds : 0);
      EXPECT_EQ(Count(body, "__syncthreads();  // before red is written again"),
                shared && c.op == kSoftmax ? 1 : 0);
      // The f32 arithmetic per op.
      const bool max = c.op == kMax || c.op == kSoftmax;
      EXPECT_EQ(Count(body, "a[j] = a[j] + v;"), c.op == kSum || c.op == kMean ? 1 : 0);
      EXPECT_EQ(Count(body, "if (v > a[j] || v != v) a[j] = v;"), max ? 1 : 0);  // NaN kept
      EXPECT_EQ(Count(body, "= __int_as_float(0xff800000);"), max ? 1 : 0);      // from -inf
      EXPECT_EQ(Count(body, " || b != b) "), c.rows || shared ? (max ? 1 : 0) : 0);
      EXPECT_EQ(Count(body, "expf(v - "), c.op == kSoftmax ? 2 : 0);
      EXPECT_EQ(Count(body, "a[j] = fmaf(v, v, a[j]);"), c.op == kRms ? 1 : 0);
      const std::string j = c.rows ? "" : "[j]";
      EXPECT_EQ(Count(body, absl::StrCat("acc", j, " / ", n, ".0f")), c.op == kMean ? 1 : 0);
      EXPECT_EQ(Count(body, absl::StrCat("1.0f / sqrtf(ss", j, " / ", n,
                                         ".0f + 9.99999975e-06f)")),
                c.op == kRms ? 1 : 0);
      EXPECT_EQ(Count(body, absl::StrCat("prism_dev::", cvt, "ToF32(")) > 0, !cvt.empty());
      EXPECT_EQ(Count(body, absl::StrCat("prism_dev::F32To", cvt, "(")),
                cvt.empty() || c.v > 1 ? 0 : 1);
      EXPECT_EQ(Count(body, absl::StrCat("prism_dev::Pack", cvt, "x2(")),
                cvt.empty() || c.v == 1 ? 0 : 4);
      // The operand's and the result's shapes in launch.json.
      const nlohmann::json js = nlohmann::json::parse(code.launch_json);
      const nlohmann::json& k = js["kernels"][0];
      EXPECT_EQ(k["args"][0]["shape"], nlohmann::json(c.shape));
      Shape out = c.shape;
      if (reduces) out[d] = 1;
      EXPECT_EQ(k["args"][1]["shape"], nlohmann::json(out));
    }
  }
}

// Two kernels of the table above, whole: softmax over dim 0 of f16 [64, 96] (column mode,
// 16-byte units, a tree in shared memory) and sum over the last dim of f16 [1000, 77] (row
// mode, single elements, a warp butterfly).
TEST(CodegenTest, FibreKernelSource) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, FibreProgram(OpKind::kSoftmax, {64, 96}, 0));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  const size_t at = code.source.find("// kernel k0:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.source.substr(at), R"(// kernel k0: library kernel softmax(X f16 [64, 96], dim 0) -> Y [64, 96]; viewed as [1, 64, 96]: 96 fibre(s) of 64 at stride 96; column mode: 16-byte units of V = 8, 12 column group(s) of V fibres; S = min(256 / 2, P(n) 64, P(ceil(135168 / 12)) 16384) = 64 threads along k, C = 256 / S = 4 groups per block, pairwise-tree combine in shared memory; grid ceil(12 / 4) = 3, 256 threads, 4 loads in flight per thread
extern "C" __global__ void __launch_bounds__(256) prism_softmax_k0(const prism_dev::f16_t* __restrict__ t_X, prism_dev::f16_t* __restrict__ t_Y) {
  constexpr unsigned kN = 64u, kInnerU = 12u, kGroups = 12u, kC = 4u, kS = 64u;  // units of 8 element(s)
  const unsigned c = threadIdx.x % kC, s = threadIdx.x / kC;  // thread (c, s): k = s, s + kS, ...
  const unsigned g = blockIdx.x * kC + c;  // the column group: fibres g * V ... g * V + V - 1
  const bool live = g < kGroups;  // an idle group folds and stores nothing
  const unsigned k_first = live ? s : kN, gp = live ? g : 0u;  // gp: the group the pointers use
  __shared__ float red[8][256];  // partials: red[j][c + kC * s]
  const prism_dev::U32x4* __restrict__ x = reinterpret_cast<const prism_dev::U32x4*>(t_X) + gp;
  prism_dev::U32x4* __restrict__ y = reinterpret_cast<prism_dev::U32x4*>(t_Y) + gp;
  float m[8];  // pass 1: the max of each fibre, a NaN kept
  {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = __int_as_float(0xff800000);
    for (unsigned k0 = k_first; k0 < kN; k0 += 4u * kS) {
      prism_dev::U32x4 ld[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const unsigned k = k0 + u * kS;
        if (k >= kN) break;
        ld[u] = x[k * kInnerU];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const unsigned k = k0 + u * kS;
        if (k >= kN) break;
        const prism_dev::u32_t w[4] = {ld[u].x, ld[u].y, ld[u].z, ld[u].w};
        float f[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) f[j] = prism_dev::F16ToF32(static_cast<prism_dev::f16_t>((w[j >> 1] >> (16 * (j & 1))) & 0xffffu));
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float v = f[j];
          if (v > a[j] || v != v) a[j] = v;
        }
        (void)k;
      }
    }
    // pairwise tree over s: at h = kS / 2, ..., 1 thread (c, s < h) takes (c, s + h)
#pragma unroll
    for (int j = 0; j < 8; ++j) red[j][threadIdx.x] = a[j];
    __syncthreads();
#pragma unroll
    for (unsigned h = kS / 2u; h > 0u; h /= 2u) {
      if (s < h) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float b = red[j][threadIdx.x + h * kC];
          if (b > a[j] || b != b) a[j] = b;
          red[j][threadIdx.x] = a[j];
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) m[j] = red[j][c];  // (c, 0)'s value
    __syncthreads();  // before red is written again
  }
  float sum[8];  // pass 2: the sum of expf(x - m)
  {
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = 0.0f;
    for (unsigned k0 = k_first; k0 < kN; k0 += 4u * kS) {
      prism_dev::U32x4 ld[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const unsigned k = k0 + u * kS;
        if (k >= kN) break;
        ld[u] = x[k * kInnerU];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const unsigned k = k0 + u * kS;
        if (k >= kN) break;
        const prism_dev::u32_t w[4] = {ld[u].x, ld[u].y, ld[u].z, ld[u].w};
        float f[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) f[j] = prism_dev::F16ToF32(static_cast<prism_dev::f16_t>((w[j >> 1] >> (16 * (j & 1))) & 0xffffu));
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float v = f[j];
          a[j] = a[j] + expf(v - m[j]);
        }
        (void)k;
      }
    }
    // pairwise tree over s: at h = kS / 2, ..., 1 thread (c, s < h) takes (c, s + h)
#pragma unroll
    for (int j = 0; j < 8; ++j) red[j][threadIdx.x] = a[j];
    __syncthreads();
#pragma unroll
    for (unsigned h = kS / 2u; h > 0u; h /= 2u) {
      if (s < h) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float b = red[j][threadIdx.x + h * kC];
          a[j] = a[j] + b;
          red[j][threadIdx.x] = a[j];
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) sum[j] = red[j][c];  // (c, 0)'s value
  }
  // pass 3: expf(x - m) / sum
  for (unsigned k0 = k_first; k0 < kN; k0 += 4u * kS) {
    prism_dev::U32x4 ld[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const unsigned k = k0 + u * kS;
      if (k >= kN) break;
      ld[u] = x[k * kInnerU];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const unsigned k = k0 + u * kS;
      if (k >= kN) break;
      const prism_dev::u32_t w[4] = {ld[u].x, ld[u].y, ld[u].z, ld[u].w};
      float f[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = prism_dev::F16ToF32(static_cast<prism_dev::f16_t>((w[j >> 1] >> (16 * (j & 1))) & 0xffffu));
      float r[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float v = f[j];
        r[j] = expf(v - m[j]) / sum[j];
      }
      y[k * kInnerU] = prism_dev::U32x4{prism_dev::PackF16x2(r[0], r[1]), prism_dev::PackF16x2(r[2], r[3]), prism_dev::PackF16x2(r[4], r[5]), prism_dev::PackF16x2(r[6], r[7])};
      (void)k;
    }
  }
}
)");
  ASSERT_OK_AND_ASSIGN(BlockProgram rows, FibreProgram(OpKind::kSum, {1000, 77}, -1));
  ASSERT_OK_AND_ASSIGN(code, GenerateCuda(rows));
  const size_t at_rows = code.source.find("// kernel k0:");
  ASSERT_NE(at_rows, std::string::npos);
  EXPECT_EQ(code.source.substr(at_rows), R"(// kernel k0: library kernel sum(X f16 [1000, 77], dim 1) -> Y [1000, 1]; viewed as [1000, 77, 1]: 1000 fibre(s) of 77 at stride 1; row mode: one warp per fibre, 8 per block, lanes along k in elements, V = 1 (77 per fibre), xor-butterfly combine; grid ceil(1000 / 8) = 125, 256 threads, 8 loads in flight per thread
extern "C" __global__ void __launch_bounds__(256) prism_sum_k0(const prism_dev::f16_t* __restrict__ t_X, prism_dev::f16_t* __restrict__ t_Y) {
  constexpr unsigned kUnits = 77u, kRows = 1000u;  // a fibre: kUnits units of 1 element(s)
  const unsigned lane = threadIdx.x % 32u, r = blockIdx.x * 8u + threadIdx.x / 32u;  // lane of fibre r's warp
  if (r >= kRows) return;  // the whole warp
  const prism_dev::f16_t* __restrict__ x = t_X + r * kUnits;
  float acc;  // the sum of each fibre
  {
    float a[1];
#pragma unroll
    for (int j = 0; j < 1; ++j) a[j] = 0.0f;
    for (unsigned k0 = lane; k0 < kUnits; k0 += 8u * 32u) {
      prism_dev::f16_t ld[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const unsigned k = k0 + u * 32u;
        if (k >= kUnits) break;
        ld[u] = x[k];
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const unsigned k = k0 + u * 32u;
        if (k >= kUnits) break;
        const float f[1] = {prism_dev::F16ToF32(ld[u])};
#pragma unroll
        for (int j = 0; j < 1; ++j) {
          const float v = f[j];
          a[j] = a[j] + v;
        }
        (void)k;
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {  // xor butterfly over the warp
      const float b = __shfl_xor_sync(0xffffffffu, a[0], off);
      a[0] = a[0] + b;
    }
    acc = __shfl_sync(0xffffffffu, a[0], 0);  // lane 0's value
  }
  if (lane == 0u) t_Y[r] = prism_dev::F32ToF16(acc);
}
)");
}

// Of the options only name_suffix and programmatic_dependent_launch apply to a library kernel
// (a concat, a fibre op): the attention, GEMM and residency options (even values a block kernel
// would refuse) leave its code and launch as they are.
TEST(CodegenTest, LibraryKernelsIgnoreTheTemplateOptions) {
  ASSERT_OK_AND_ASSIGN(BlockProgram concat, ConcatProgram({{8, 4096}, {8, 1024}}, -1));
  ASSERT_OK_AND_ASSIGN(BlockProgram fibre, FibreProgram(OpKind::kRmsNorm, {4, 512, 64}, 1));
  const struct {
    const BlockProgram* program;
    const char* function;  // with the suffix _v7
    const char* launch;    // host.h's launch
  } kCases[] = {
      {&concat, "prism_concat_k0_v7", "prism_concat_k0_v7<<<dim3(20, 1, 1), dim3(256), 0, "},
      {&fibre, "prism_rms_norm_k0_v7", "prism_rms_norm_k0_v7<<<dim3(16, 1, 1), dim3(256), 0, "},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.function);
    ASSERT_OK_AND_ASSIGN(GeneratedCode plain, GenerateCuda(*c.program));
    CodegenOptions options;
    options.max_dynamic_smem_bytes = 0;
    options.attention_tiles_per_warp = 5;
    options.attention_pipeline = options.attention_lazy_rescale = true;
    options.attention_exp_f16x2 = options.attention_wgmma = true;
    options.attention_wgmma_late_loads = options.attention_wgmma_split_pv = true;
    options.gemm_warps_along_n = options.gemm_chained_b_smem = true;
    options.balance_residency = {132, 233472, 1024};
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(*c.program, options));
    EXPECT_EQ(code.source, plain.source);
    EXPECT_EQ(code.launch_json, plain.launch_json);
    EXPECT_EQ(code.host_header, plain.host_header);
    options.gemm_defer_chained = true;
    options.name_suffix = "_v7";
    ASSERT_OK_AND_ASSIGN(code, GenerateCuda(*c.program, options));
    ASSERT_EQ(code.launches.size(), 1u);
    EXPECT_EQ(code.launches[0].function, c.function);
    EXPECT_EQ(code.launches[0].grid, plain.launches[0].grid);
    EXPECT_THAT(code.source,
                HasSubstr(absl::StrCat("void __launch_bounds__(256) ", c.function, "(")));
    EXPECT_THAT(code.host_header, HasSubstr(c.launch));
  }
}

// What a fibre kernel refuses, by exact message: malformed kernels (InvalidArgument; the program
// is edited after Instantiate, which never makes them) and operands over 2^31 − 1 elements.
TEST(CodegenTest, FibreRefusals) {
  struct Refusal {
    const char* label;
    OpKind op;
    std::function<void(BlockProgram&)> change;
    const char* message;
  };
  auto kernel = [](BlockProgram& p) -> LibraryKernel& {
    return std::get<LibraryKernel>(p.kernels[0].body);
  };
  const Refusal cases[] = {
      {"two operands", OpKind::kSum, [&](BlockProgram& p) { kernel(p).operands.push_back(0); },
       "codegen: kernel k0: sum: takes 1 operand, found 2"},
      {"dim 2 of rank 2", OpKind::kMax, [&](BlockProgram& p) { kernel(p).dim = 2; },
       "codegen: kernel k0: max: dim 2 is out of range for rank 2"},
      {"dim -3 of rank 2", OpKind::kSoftmax, [&](BlockProgram& p) { kernel(p).dim = -3; },
       "codegen: kernel k0: softmax: dim -3 is out of range for rank 2"},
      {"the result as the operand", OpKind::kSoftmax,
       [&](BlockProgram& p) { kernel(p).operands[0] = kernel(p).result; },
       "codegen: kernel k0: softmax: the result Y is also the operand"},
      {"an operand out of range", OpKind::kMean, [&](BlockProgram& p) { kernel(p).operands[0] = 7; },
       "codegen: kernel k0: mean: operand index 7 is out of range"},
      {"the result out of range", OpKind::kMean, [&](BlockProgram& p) { kernel(p).result = -1; },
       "codegen: kernel k0: mean: result index -1 is out of range"},
      {"an empty dim", OpKind::kSum, [](BlockProgram& p) { p.tensors[0].shape = {0, 96}; },
       "codegen: kernel k0: sum: X [0, 96] has an empty dim"},
      {"a reduction's result not keepdim", OpKind::kSum,
       [](BlockProgram& p) { p.tensors[1].shape = {96}; },
       "codegen: kernel k0: sum: the result Y is f16 [96], expected f16 [1, 96]"},
      {"a norm's result reduced", OpKind::kRmsNorm,
       [](BlockProgram& p) { p.tensors[1].shape = {1, 96}; },
       "codegen: kernel k0: rms_norm: the result Y is f16 [1, 96], expected f16 [64, 96]"},
      {"the result's dtype", OpKind::kMax, [](BlockProgram& p) { p.tensors[1].dtype = DType::kF32; },
       "codegen: kernel k0: max: the result Y is f32 [1, 96], expected f16 [1, 96]"},
      {"a negative eps", OpKind::kRmsNorm, [&](BlockProgram& p) { kernel(p).eps = -1; },
       "codegen: kernel k0: rms_norm: eps -1 is not finite and at least 0"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, FibreProgram(c.op, {64, 96}, 0));
    c.change(p);
    EXPECT_THAT(GenerateCuda(p),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::Eq(c.message)));
  }
  // 65536 · 32768 = 2^31 elements (2^31 − 1 are generated: FibreLibraryKernel); the operand is
  // counted also when the result is 1/n of it.
  for (OpKind op : {OpKind::kSum, OpKind::kSoftmax}) {
    const std::string name(GetOpInfo(op).name);
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(BlockProgram big, FibreProgram(op, {65536, 32768}, 0));
    EXPECT_THAT(GenerateCuda(big),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         ::testing::Eq(absl::StrCat("codegen: kernel k0: ", name,
                                                    " operand X [65536, 32768] has more than "
                                                    "2147483647 elements (the kernel indexes with "
                                                    "32 bits)"))));
  }
}

}  // namespace
}  // namespace prism::codegen
