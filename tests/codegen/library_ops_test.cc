// Library kernels of elementwise ops and matmul (src/codegen/library_ops_gen.cc): launch,
// arguments, key source lines, NVRTC for sm_80 and sm_90, determinism, refusals; and the
// codegen_gpu_test fixtures of these ops on the CPU emulator. Part of codegen_test.
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/codegen/codegen.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "library_checks.h"
#include "split_fixtures.h"
#include "testing/status_matchers.h"

namespace prism::codegen {
namespace {
namespace library_ops_test {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

constexpr DType kF16 = DType::kF16, kBF16 = DType::kBF16, kF32 = DType::kF32;

using library_checks::ExpectLibraryLaunch;
using library_checks::LibraryElem;
int Occurrences(const std::string& hay, const std::string& needle) {
  return library_checks::LibraryCount(hay, needle);
}

// A program of one elementwise or matmul library kernel (split_fixtures.h MakeLibraryOpFixture).
absl::StatusOr<BlockProgram> OpProgram(OpKind op, const std::vector<Shape>& shapes,
                                       DType dtype = kF16, std::vector<int> operands = {},
                                       double scalar = -0.7) {
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture f, codegen_test::MakeLibraryOpFixture(
                                                  op, shapes, dtype, std::move(operands), scalar));
  return Instantiate(f.graph, {});
}

// NVRTC compiles the source for sm_80 and sm_90, without spills or a stack frame.
void ExpectCompiles(const std::string& source) {
  if (!NvrtcAvailable()) return;
  for (int sm : {80, 90}) {
    absl::StatusOr<NvrtcResult> r = CompileWithNvrtc(source, sm);
    ASSERT_OK(r.status()) << "sm_" << sm;
    ASSERT_EQ(r->kernels.size(), 1u);
    EXPECT_EQ(r->kernels[0].spill_store_bytes + r->kernels[0].spill_load_bytes, 0) << "sm_" << sm;
    EXPECT_EQ(r->kernels[0].stack_frame_bytes, 0) << "sm_" << sm;
  }
}

// ---- matmul ----------------------------------------------------------------------------------

struct MatmulCase {
  const char* label;
  Shape x, w;
  DType dtype;
  std::vector<int> operands;        // empty: X, W
  std::array<int64_t, 3> grid;      // (tiles along N, tiles along M, batches), each ≤ 65535
  std::vector<std::string> args;
  std::string summary;              // in the kernel's comment line
  std::vector<std::string> lines;   // source lines (substrings) the kernel has
  bool compile;                     // NVRTC for sm_80 and sm_90
};

// A matmul library kernel, by case: the launch (grid x over N tiles, y over M tiles, z over
// batches, capped at 65535), the arguments, the constants, the batch offsets through
// broadcasting; f32 on the CUDA cores (k steps of 16, a tail loop over the last K % 16 only,
// fmaf in increasing k, static shared memory as f32), f16 and bf16 with M > 16 on the tensor
// cores (k steps of 32 in four cp.async stages, each row from its aligned 16-byte chunk and
// zero after its end; the fragment helpers for rows of whole chunks, per-row shifts and 16-bit
// loads otherwise; fragment stores); NVRTC; determinism.
TEST(LibraryOpsTest, MatmulLibraryKernel) {
  const std::vector<std::string> xw = {"X", "W", "Y"};
  const char* const kTc =
      " on the tensor cores (mma.sync m16n8k16, f32 accumulators); ";
  const std::string load_a =
      "prism_dev::CpAsync16Fill(&st[0][r * 40u + 8u * c], t_X + (end > e ? e : 0u), end <= e ? "
      "0u : end - e < 8u ? (end - e) * 2u : 16u);";
  const std::string unaligned_b =
      "if (i < 288u) prism_dev::CpAsync16Fill(&st[0][2560u + r * 88u + 8u * c], t_W + (end > e "
      "? e : 0u), end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);";
  const MatmulCase cases[] = {
      {"odd M, K, N", {17, 6}, {6, 5}, kF16, {}, {1, 1, 1}, xw,
       "1 batch(es) z of [17, 6] x [6, 5]; 64x64 tiles (1 x 1), 1 k step(s) of 32 on the tensor "
       "cores (mma.sync m16n8k16, f32 accumulators); X rows in aligned 16-byte chunks, W rows in "
       "aligned 16-byte chunks, by cp.async, 4 stages; grid (1, 1, 1), 128 threads, grid-stride, "
       "43008 B static shared memory",
       {"constexpr unsigned kM = 17u, kN = 5u, kK = 6u, kTilesM = 1u, kTilesN = 1u, kBatches = 1u;",
        "constexpr unsigned kSteps = 1u;", "const unsigned oa = 0u, ob = 0u;",
        "prism_dev::f16_t* __restrict__ y = t_Y;",
        absl::StrCat("if (i < 320u) ", load_a), unaligned_b,
        "const unsigned row = live ? oa + (m0 + r) * kK : 0u, e = ((row + 0u * 32u) & ~7u) + 8u * "
        "c, end = live ? row + kK : 0u;",
        "const unsigned row = live ? ob + (0u * 32u + r) * kN : 0u, e = ((row + n0) & ~7u) + 8u * "
        "c, end = live ? row + kN : 0u;",
        "fa[i][hh] = r * 40u + ((oa + (m0 + r) * kK) & 7u) + 2u * t;",
        "fb[q] = 2560u + kr * 88u + ((ob + kr * kN) & 7u) + static_cast<unsigned>(wn) + g;",
        "af[i][0] = prism_dev::Pack2(p0[0], p0[1]);  // (g, 2t..2t+1)",
        "bf[0] = prism_dev::Pack2(sa[fb[q] + c], sa[fb[q + 1] + c]);  // (2t..2t+1, g)",
        "prism_dev::MmaM16N8K16(acc[i][j], af[i], bf);",
        "if (n < kN) y[m * kN + n] = prism_dev::F32ToF16(acc[i][j][r]);",
        "if (n + 1u < kN) y[m * kN + n + 1u] = prism_dev::F32ToF16(acc[i][j][r + 1]);"},
       true},
      {"an LM head over an odd vocabulary", {8, 4096}, {4096, 32001}, kF16, {}, {501, 1, 1}, xw,
       "1 batch(es) z of [8, 4096] x [4096, 32001]; 64x64 tiles (1 x 501), 128 k step(s) of 32 "
       "on the tensor cores (mma.sync m16n8k16, f32 accumulators); X rows in whole 16-byte "
       "chunks, W rows in aligned 16-byte chunks, by cp.async, 4 stages; grid (501, 1, 1)",
       {"constexpr unsigned kM = 8u, kN = 32001u, kK = 4096u, kTilesM = 1u, kTilesN = 501u, "
        "kBatches = 1u;"},
       true},
      {"broadcast batch dims at odd offsets", {2, 1, 5, 37}, {3, 37, 29}, kF16, {}, {1, 1, 6}, xw,
       "6 batch(es) z of [5, 37] x [37, 29], runs [2, 3], X at p0, W at p1; 64x64 tiles (1 x 1)",
       {"const unsigned p1 = r % 3u, p0 = r / 3u;",
        "const unsigned oa = p0 * (kM * kK), ob = p1 * (kK * kN);"},
       true},
      {"batched X, 2-D W", {3, 20, 6}, {6, 1}, kF16, {}, {1, 1, 3}, xw,
       "3 batch(es) z of [20, 6] x [6, 1], X at z, W at 0; 64x64 tiles (1 x 1)",
       {"const unsigned oa = z * (kM * kK), ob = 0u;",
        "prism_dev::f16_t* __restrict__ y = t_Y + z * (kM * kN);"},
       true},
      {"broadcast batch dims", {2, 1, 4, 8}, {3, 8, 16}, kF32, {}, {1, 1, 6}, xw,
       "6 batch(es) z of [4, 8] x [8, 16], runs [2, 3], X at p0, W at p1;",
       {"const unsigned p1 = r % 3u, p0 = r / 3u;", "const float* __restrict__ a = t_X + p0 * (kM * kK);",
        "const float* __restrict__ b = t_W + p1 * (kK * kN);",
        "float* __restrict__ y = t_Y + z * (kM * kN);", "sa[i % 16u][i / 16u] = am < kM && ak < kK ? a[am * kK + ak] : 0.0f;",
        "if (n < kN) y[m * kN + n] = acc[i][j];"},
       true},
      {"bf16, whole k steps, whole chunks", {64, 128}, {128, 96}, kBF16, {}, {2, 1, 1}, xw,
       absl::StrCat("64x64 tiles (1 x 2), 4 k step(s) of 32", kTc,
                    "X rows in whole 16-byte chunks, W rows in whole 16-byte chunks, by cp.async, "
                    "4 stages;"),
       {load_a,
        "prism_dev::CpAsync16Fill(&st[0][2560u + r * 72u + 8u * c], t_W + (end > e ? e : 0u), "
        "end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);",
        "prism_dev::LoadAFragment<false, true>(af[i], sa, 40, 64, wm + 16 * i, kk, lane, unused, "
        "unused);",
        "prism_dev::LoadBFragment(bf, sb, 72, kk, wn + 8 * j, lane);",
        "prism_dev::MmaM16N8K16BF16(acc[i][j], af[i], bf);",
        "y[m * kN + n] = prism_dev::F32ToBF16(acc[i][j][r]);"},
       true},
      {"a tail, W rows not whole chunks", {100, 40}, {40, 130}, kBF16, {}, {3, 2, 1}, xw,
       "64x64 tiles (2 x 3), 2 k step(s) of 32 on the tensor cores (mma.sync m16n8k16, f32 "
       "accumulators); X rows in whole 16-byte chunks, W rows in aligned 16-byte chunks, by "
       "cp.async, 4 stages;",
       {load_a, unaligned_b}, true},
      {"odd N, K whole chunks", {1024, 1000}, {1000, 1003}, kF16, {}, {16, 16, 1}, xw,
       "64x64 tiles (16 x 16), 32 k step(s) of 32 on the tensor cores (mma.sync m16n8k16, f32 "
       "accumulators); X rows in whole 16-byte chunks, W rows in aligned 16-byte chunks, by "
       "cp.async, 4 stages; grid (16, 16, 1)",
       {"kN = 1003u, kK = 1000u"}, true},
      {"K = 1", {33, 1}, {1, 70}, kF32, {}, {2, 1, 1}, xw, "k in 0 step(s) of 16 + 1",
       {"for (int kk = 0; kk < 1; ++kk) {"}, true},
      {"the same tensor twice", {24, 24}, {}, kF16, {0, 0}, {1, 1, 1}, {"X", "Y"},
       "matmul(X f16 [24, 24], X f16 [24, 24]) -> Y f16 [24, 24]",
       {load_a, "prism_dev::CpAsync16Fill(&st[0][2560u + r * 72u + 8u * c], t_X + "}, true},
      {"4096 x 4096 x 4096", {4096, 4096}, {4096, 4096}, kF16, {}, {64, 64, 1}, xw,
       "64x64 tiles (64 x 64), 128 k step(s) of 32 on the tensor cores",
       {"kK = 4096u, kTilesM = 64u, kTilesN = 64u"}, true},
      {"f32 4096 x 4096 x 4096", {4096, 4096}, {4096, 4096}, kF32, {}, {64, 64, 1}, xw,
       "64x64 tiles (64 x 64), k in 256 step(s) of 16, fmaf in increasing k; grid (64, 64, 1)",
       {"kK = 4096u, kTilesM = 64u, kTilesN = 64u"}, false},
      {"more M tiles than gridDim.y", {4194305, 1}, {1, 1}, kF32, {}, {1, 65535, 1}, xw,
       "64x64 tiles (65537 x 1), k in 0 step(s) of 16 + 1, fmaf in increasing k; grid (1, 65535, 1)",
       {"for (unsigned tm = blockIdx.y; tm < kTilesM; tm += gridDim.y) {"}, false},
      {"more batches than gridDim.z", {70000, 17, 1}, {1, 1}, kF16, {}, {1, 1, 65535}, xw,
       "70000 batch(es) z of [17, 1] x [1, 1], X at z, W at 0;",
       {"for (unsigned z = blockIdx.z; z < kBatches; z += gridDim.z) {"}, false},
  };
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(c.label);
    std::vector<Shape> shapes = {c.x};
    if (!c.w.empty()) shapes.push_back(c.w);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kMatMul, shapes, c.dtype, c.operands));
    const bool tensor_cores = c.dtype != kF32;
    const int64_t k = c.x.back(), n = (c.w.empty() ? c.x : c.w).back();
    const bool whole_a = k % 8 == 0, whole_b = n % 8 == 0;
    // f32: sa[16][65] and sb[16][64] floats; f16 / bf16: four stages of 64 × 40 and 32 × 72
    // (whole chunks) or 32 × 88 16-bit elements.
    const int64_t smem = !tensor_cores ? 8256 : whole_b ? 4 * (64 * 40 + 32 * 72) * 2
                                                        : 4 * (64 * 40 + 32 * 88) * 2;
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(pdl ? "with PDL" : "without PDL");
      CodegenOptions options;
      options.programmatic_dependent_launch = pdl;
      ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
      ExpectLibraryLaunch(p, options, code, "prism_matmul_k0", c.grid, c.args, c.dtype, smem,
                          tensor_cores ? 128 : 256);
      const std::string body = code.source.substr(code.source.find("// kernel k0:"));
      EXPECT_THAT(body, HasSubstr(c.summary));
      for (const std::string& line : c.lines) EXPECT_THAT(body, HasSubstr(line));
      EXPECT_EQ(Occurrences(body, "__syncthreads();"), 2);
      if (tensor_cores) {
        // Steps 0..2 before the loop (as many as there are), s + 3 inside it, each an a and a
        // b load; one commit per stage, also when empty; 2 × 4 accumulators of 4 per warp from
        // +0, each stored once.
        const std::string elem = c.dtype == kBF16 ? "prism_dev::bf16_t" : "prism_dev::f16_t";
        EXPECT_THAT(body, HasSubstr(absl::StrCat("  __shared__ __align__(16) ", elem, " st[4][",
                                                 smem / 8, "];\n")));
        const int64_t steps = (k + 31) / 32;
        EXPECT_EQ(Occurrences(body, "prism_dev::CpAsync16Fill("), 2 * (std::min<int64_t>(steps, 3) + 1));
        EXPECT_EQ(Occurrences(body, "prism_dev::CpAsyncCommit();"), 4);
        EXPECT_EQ(Occurrences(body, "prism_dev::CpAsyncWait<2>();"), 1);
        EXPECT_EQ(Occurrences(body, "prism_dev::CpAsyncWait<0>();"), 1);
        EXPECT_THAT(body, HasSubstr("          if (s + 3u < kSteps)\n          {  // step (s + 3u) "
                                    "into stage (s + 3u) % 4u\n"));
        EXPECT_EQ(Occurrences(body, "prism_dev::LoadAFragment<"), whole_a ? 1 : 0);
        EXPECT_EQ(Occurrences(body, "unsigned fa[2][2];"), whole_a ? 0 : 1);
        EXPECT_EQ(Occurrences(body, "prism_dev::LoadBFragment(bf, sb, 72, kk, wn + 8 * j, lane);"),
                  whole_b ? 1 : 0);
        EXPECT_EQ(Occurrences(body, "unsigned fb[8];"), whole_b ? 0 : 1);
        EXPECT_EQ(Occurrences(body, "acc[i][j][r] = 0.0f;"), 1);
        EXPECT_EQ(Occurrences(body, c.dtype == kBF16 ? "prism_dev::MmaM16N8K16BF16("
                                                     : "prism_dev::MmaM16N8K16("),
                  1);
        EXPECT_EQ(Occurrences(body, "y[m * kN + n] = "), 1);
        EXPECT_EQ(Occurrences(body, "y[m * kN + n + 1u] = "), 1);
      } else {
        // Static shared memory only; fmaf in increasing k from +0, rounded once at the store.
        EXPECT_THAT(body, HasSubstr("  __shared__ float sa[16][65];  // a's tile, sa[k][m]\n"
                                    "  __shared__ float sb[16][64];  // b's tile, sb[k][n]\n"));
        EXPECT_EQ(Occurrences(body, "acc[i][j] = 0.0f;"), 1);
        const int folds = k % 16 != 0 && k > 16 ? 2 : 1;
        EXPECT_EQ(Occurrences(body, "acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);"), folds);
        EXPECT_EQ(Occurrences(body, " = acc[i][j];") + Occurrences(body, "(acc[i][j]);"), 1);
      }
      ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, options));
      EXPECT_EQ(again.source, code.source);
      if (!pdl && c.compile) ExpectCompiles(code.source);
    }
  }
}

// The first case above, whole: f16 [17, 6] × [6, 5] on the tensor cores (rows not whole chunks).
TEST(LibraryOpsTest, MatmulKernelSource) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kMatMul, {{17, 6}, {6, 5}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  const size_t at = code.source.find("// kernel k0:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.source.substr(at), R"(// kernel k0: library kernel matmul(X f16 [17, 6], W f16 [6, 5]) -> Y f16 [17, 5]; 1 batch(es) z of [17, 6] x [6, 5]; 64x64 tiles (1 x 1), 1 k step(s) of 32 on the tensor cores (mma.sync m16n8k16, f32 accumulators); X rows in aligned 16-byte chunks, W rows in aligned 16-byte chunks, by cp.async, 4 stages; grid (1, 1, 1), 128 threads, grid-stride, 43008 B static shared memory
extern "C" __global__ void __launch_bounds__(128) prism_matmul_k0(const prism_dev::f16_t* __restrict__ t_X, const prism_dev::f16_t* __restrict__ t_W, prism_dev::f16_t* __restrict__ t_Y) {
  constexpr unsigned kM = 17u, kN = 5u, kK = 6u, kTilesM = 1u, kTilesN = 1u, kBatches = 1u;
  constexpr unsigned kSteps = 1u;
  // A stage: X's 64 m rows (40 elements apart), then W's 32 k rows (88 apart); a row's element j at its shift + j.
  __shared__ __align__(16) prism_dev::f16_t st[4][5376];
  const unsigned tid = threadIdx.x, lane = tid % 32u, warp = tid / 32u, g = lane / 4u, t = lane % 4u;
  const int wm = static_cast<int>(warp / 2u) * 32, wn = static_cast<int>(warp % 2u) * 32;
  for (unsigned z = blockIdx.z; z < kBatches; z += gridDim.z) {
    const unsigned oa = 0u, ob = 0u;  // the batch's first elements of X and W
    prism_dev::f16_t* __restrict__ y = t_Y;
    unsigned fb[8];  // b's rows 2t, 2t+1, 2t+8, 2t+9, then 16 more: row × 88 + its shift + wn + g
#pragma unroll
    for (unsigned q = 0; q < 8u; ++q) {
      const unsigned kr = (q / 4u) * 16u + 2u * t + (q % 2u) + 8u * ((q / 2u) % 2u);
      fb[q] = 2560u + kr * 88u + ((ob + kr * kN) & 7u) + static_cast<unsigned>(wn) + g;
    }
    for (unsigned tm = blockIdx.y; tm < kTilesM; tm += gridDim.y) {
      for (unsigned tn = blockIdx.x; tn < kTilesN; tn += gridDim.x) {
        const unsigned m0 = tm * 64u, n0 = tn * 64u;
        unsigned fa[2][2];  // a's rows wm + 16i + g + 8h: row × 40 + its shift + 2t
#pragma unroll
        for (unsigned i = 0; i < 2u; ++i)
#pragma unroll
          for (unsigned hh = 0; hh < 2u; ++hh) {
            const unsigned r = static_cast<unsigned>(wm) + 16u * i + g + 8u * hh;
            fa[i][hh] = r * 40u + ((oa + (m0 + r) * kK) & 7u) + 2u * t;
          }
        float acc[2][4][4];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
        {  // step 0u into stage 0
#pragma unroll
          for (unsigned l = 0; l < 3u; ++l) {  // a: 64 rows of 5 chunks
            const unsigned i = tid + l * 128u, r = i / 5u, c = i % 5u;
            const bool live = m0 + r < kM;
            const unsigned row = live ? oa + (m0 + r) * kK : 0u, e = ((row + 0u * 32u) & ~7u) + 8u * c, end = live ? row + kK : 0u;
            if (i < 320u) prism_dev::CpAsync16Fill(&st[0][r * 40u + 8u * c], t_X + (end > e ? e : 0u), end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);
          }
#pragma unroll
          for (unsigned l = 0; l < 3u; ++l) {  // b: 32 rows of 9 chunks
            const unsigned i = tid + l * 128u, r = i / 9u, c = i % 9u;
            const bool live = 0u * 32u + r < kK;
            const unsigned row = live ? ob + (0u * 32u + r) * kN : 0u, e = ((row + n0) & ~7u) + 8u * c, end = live ? row + kN : 0u;
            if (i < 288u) prism_dev::CpAsync16Fill(&st[0][2560u + r * 88u + 8u * c], t_W + (end > e ? e : 0u), end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);
          }
        }
        prism_dev::CpAsyncCommit();
        prism_dev::CpAsyncCommit();
        prism_dev::CpAsyncCommit();
        for (unsigned s = 0; s < kSteps; ++s) {
          prism_dev::CpAsyncWait<2>();  // step s has landed
          __syncthreads();  // for every thread; and every warp is done with step s - 1's stage
          if (s + 3u < kSteps)
          {  // step (s + 3u) into stage (s + 3u) % 4u
#pragma unroll
            for (unsigned l = 0; l < 3u; ++l) {  // a: 64 rows of 5 chunks
              const unsigned i = tid + l * 128u, r = i / 5u, c = i % 5u;
              const bool live = m0 + r < kM;
              const unsigned row = live ? oa + (m0 + r) * kK : 0u, e = ((row + (s + 3u) * 32u) & ~7u) + 8u * c, end = live ? row + kK : 0u;
              if (i < 320u) prism_dev::CpAsync16Fill(&st[(s + 3u) % 4u][r * 40u + 8u * c], t_X + (end > e ? e : 0u), end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);
            }
#pragma unroll
            for (unsigned l = 0; l < 3u; ++l) {  // b: 32 rows of 9 chunks
              const unsigned i = tid + l * 128u, r = i / 9u, c = i % 9u;
              const bool live = (s + 3u) * 32u + r < kK;
              const unsigned row = live ? ob + ((s + 3u) * 32u + r) * kN : 0u, e = ((row + n0) & ~7u) + 8u * c, end = live ? row + kN : 0u;
              if (i < 288u) prism_dev::CpAsync16Fill(&st[(s + 3u) % 4u][2560u + r * 88u + 8u * c], t_W + (end > e ? e : 0u), end <= e ? 0u : end - e < 8u ? (end - e) * 2u : 16u);
            }
          }
          prism_dev::CpAsyncCommit();
          const prism_dev::f16_t* sa = st[s % 4u];
#pragma unroll
          for (int kk = 0; kk < 32; kk += 16) {
            prism_dev::u32_t af[2][4];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              const prism_dev::f16_t* p0 = sa + fa[i][0] + kk;
              const prism_dev::f16_t* p1 = sa + fa[i][1] + kk;
              af[i][0] = prism_dev::Pack2(p0[0], p0[1]);  // (g, 2t..2t+1)
              af[i][1] = prism_dev::Pack2(p1[0], p1[1]);  // (g+8, 2t..2t+1)
              af[i][2] = prism_dev::Pack2(p0[8], p0[9]);  // (g, 2t+8..2t+9)
              af[i][3] = prism_dev::Pack2(p1[8], p1[9]);  // (g+8, 2t+8..2t+9)
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              prism_dev::u32_t bf[2];
              const unsigned q = static_cast<unsigned>(kk) / 4u, c = 8u * static_cast<unsigned>(j);  // fb[q..q+3]: this kk's rows
              bf[0] = prism_dev::Pack2(sa[fb[q] + c], sa[fb[q + 1] + c]);  // (2t..2t+1, g)
              bf[1] = prism_dev::Pack2(sa[fb[q + 2] + c], sa[fb[q + 3] + c]);  // (2t+8..2t+9, g)
#pragma unroll
              for (int i = 0; i < 2; ++i) prism_dev::MmaM16N8K16(acc[i][j], af[i], bf);
            }
          }
        }
        prism_dev::CpAsyncWait<0>();
        __syncthreads();  // every warp is done with the stages before the next tile's loads
#pragma unroll
        for (int i = 0; i < 2; ++i) {
#pragma unroll
          for (int r = 0; r < 4; r += 2) {
            const unsigned m = m0 + static_cast<unsigned>(wm + 16 * i) + g + 4u * static_cast<unsigned>(r);
            if (m >= kM) continue;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const unsigned n = n0 + static_cast<unsigned>(wn + 8 * j) + 2u * t;
              if (n < kN) y[m * kN + n] = prism_dev::F32ToF16(acc[i][j][r]);
              if (n + 1u < kN) y[m * kN + n + 1u] = prism_dev::F32ToF16(acc[i][j][r + 1]);
            }
          }
        }
      }
    }
  }
}
)");
}

// CodegenOptions::library_matmul_cluster_split, by case: the cluster size S (min(8·b, ⌊b·sms /
// tiles⌋, ⌊steps / 4⌋) for b = library_matmul_split_blocks_per_sm, then the fewest blocks of
// ⌈steps / S⌉ steps), the grid (z times S) and
// cluster, the per-block step range, the reduction through distributed shared memory with one
// store per output element; and where S would be 1 (many tiles, few k steps, f32, the target's
// SMs), the unsplit kernel byte for byte. NVRTC: sm_90 compiles, sm_80 stops at the #error.
TEST(LibraryOpsTest, MatmulClusterSplit) {
  struct SplitCase {
    const char* label;
    Shape x, w;
    DType dtype;
    int64_t sms;                    // balance_residency.sms (0: the default 132)
    int per_sm;                     // library_matmul_split_blocks_per_sm
    std::array<int64_t, 3> grid;    // with the split
    int64_t split, per;             // 0: no split (the unsplit source)
    std::vector<std::string> lines;
  };
  const SplitCase cases[] = {
      {"47 tiles: two blocks of 79 steps", {16, 5001}, {5001, 3001}, kBF16, 0, 1, {47, 1, 2}, 2, 79,
       {"64x64 tiles (1 x 47), 157 k step(s) of 32", "grid (47, 1, 2), 128 threads",
        "k split over clusters of (1, 1, 2) blocks, 79 step(s) each, summed through distributed "
        "shared memory",
        "for (unsigned e = tid; e < 2048u; e += 128u) {  // this rank's rows part·32 …",
        "y[m * kN + n] = prism_dev::F32ToBF16(v);"}},
      {"16 tiles: eight blocks", {8, 4096}, {4096, 1000}, kF16, 0, 1, {16, 1, 8}, 8, 16,
       {"for (unsigned e = tid; e < 512u; e += 128u) {  // this rank's rows part·8 …",
        "y[m * kN + n] = prism_dev::F32ToF16(v);"}},
      {"25 steps: six blocks would leave one of 0 steps, five of 5", {1, 800}, {800, 64}, kF16, 0, 1,
       {1, 1, 5}, 5, 5,
       {"constexpr unsigned kSplit = 5u, kPer = 5u;",
        "for (unsigned e = tid; e < 832u; e += 128u) {  // this rank's rows part·13 …",
        "if (row >= 64u) break;"}},
      {"batches along z", {3, 20, 600}, {600, 40}, kF16, 0, 1, {1, 1, 12}, 4, 5,
       {"for (unsigned z = blockIdx.z / kSplit; z < kBatches; z += gridDim.z / kSplit) {",
        "const unsigned oa = z * (kM * kK), ob = 0u;"}},
      {"501 tiles: no split", {8, 4096}, {4096, 32001}, kF16, 0, 1, {501, 1, 1}, 0, 0, {}},
      {"7 k steps: no split", {16, 200}, {200, 300}, kF16, 0, 1, {5, 1, 1}, 0, 0, {}},
      {"47 tiles on 66 SMs: no split", {16, 5001}, {5001, 3001}, kBF16, 66, 1, {47, 1, 1}, 0, 0, {}},
      {"f32: no split", {16, 4096}, {4096, 64}, kF32, 0, 1, {1, 1, 1}, 0, 0, {}},
      // Two blocks per SM: S up to 16 (non-portable clusters), and tiles between sms / 2 and
      // sms split too.
      {"47 tiles, two per SM: five blocks of 32 steps", {16, 5001}, {5001, 3001}, kBF16, 0, 2,
       {47, 1, 5}, 5, 32,
       {"k split over clusters of (1, 1, 5) blocks, 32 step(s) each",
        "for (unsigned e = tid; e < 832u; e += 128u) {  // this rank's rows part·13 …"}},
      {"16 tiles, two per SM: sixteen blocks", {8, 4096}, {4096, 1000}, kF16, 0, 2, {16, 1, 16},
       16, 8,
       {"for (unsigned e = tid; e < 256u; e += 128u) {  // this rank's rows part·4 …"}},
      {"100 tiles, two per SM: two blocks", {8, 4096}, {4096, 6400}, kF16, 0, 2, {100, 1, 2}, 2,
       64, {}},
      {"100 tiles, one per SM: no split", {8, 4096}, {4096, 6400}, kF16, 0, 1, {100, 1, 1}, 0, 0,
       {}},
      {"47 tiles on 66 SMs, two per SM: two blocks", {16, 5001}, {5001, 3001}, kBF16, 66, 2,
       {47, 1, 2}, 2, 79, {}},
      {"501 tiles, two per SM: no split", {8, 4096}, {4096, 32001}, kF16, 0, 2, {501, 1, 1}, 0,
       0, {}},
      {"48 rows: no warp idles", {48, 4096}, {4096, 1000}, kF16, 0, 1, {16, 1, 8}, 8, 16,
       {"        // a's rows 48 … 63 (past M) zero in every stage, never copied\n"}},
  };
  for (const SplitCase& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kMatMul, {c.x, c.w}, c.dtype));
    CodegenOptions plain;
    plain.balance_residency.sms = c.sms;
    CodegenOptions split = plain;
    split.library_matmul_cluster_split = true;
    split.library_matmul_split_blocks_per_sm = c.per_sm;
    ASSERT_OK_AND_ASSIGN(GeneratedCode without, GenerateCuda(p, plain));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, split));
    ASSERT_EQ(code.launches.size(), 1u);
    const LaunchConfig& l = code.launches[0];
    EXPECT_EQ(l.grid, c.grid);
    if (c.split == 0) {
      EXPECT_EQ(code.source, without.source);
      EXPECT_EQ(code.launch_json, without.launch_json);
      EXPECT_EQ(l.cluster, (std::array<int64_t, 3>{1, 1, 1}));
      continue;
    }
    EXPECT_EQ(l.cluster, (std::array<int64_t, 3>{1, 1, c.split}));
    EXPECT_EQ(l.threads, 128);
    EXPECT_EQ(l.reduction_bytes, without.launches[0].reduction_bytes);  // the same stages
    EXPECT_EQ(nlohmann::json::parse(code.launch_json)["kernels"][0]["cluster"],
              nlohmann::json::array({1, 1, c.split}));
    EXPECT_THAT(code.host_header, HasSubstr(absl::StrCat("clusterDim.z = ", c.split, ";")));
    const std::string body = code.source.substr(code.source.find("// kernel k0:"));
    EXPECT_THAT(body, HasSubstr("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n#error "
                                "\"prism_matmul_k0: library_matmul_cluster_split kernels need "
                                "sm_90 or newer (thread block clusters)\"\n#endif\n"));
    EXPECT_THAT(body, HasSubstr(absl::StrCat("constexpr unsigned kSplit = ", c.split,
                                             "u, kPer = ", c.per, "u;")));
    EXPECT_THAT(body, HasSubstr("const unsigned part = blockIdx.z % kSplit, sb = part * kPer, ns "
                                "= kSteps - sb < kPer ? kSteps - sb : kPer;"));
    for (const std::string& line : c.lines) EXPECT_THAT(body, HasSubstr(line));
    // Steps sb + 0..2 before the loop, each only when the block has it; the loop over ns.
    for (int i = 0; i < 3; ++i) {
      EXPECT_THAT(body, HasSubstr(absl::StrCat("        if (", i, "u < ns)\n        {  // step (sb + ",
                                               i, "u) into stage ", i, "\n")));
    }
    EXPECT_THAT(body, HasSubstr("        for (unsigned s = 0; s < ns; ++s) {\n"));
    EXPECT_THAT(body, HasSubstr("          if (s + 3u < ns)\n          {  // step (sb + (s + 3u)) "
                                "into stage (s + 3u) % 4u\n"));
    // a's rows past M (every case has fewer than 64) zeroed once per tile and never copied
    // (the prologue's three a loads and the loop's guarded by `live`); with at most 32 rows
    // the second pair of warps skips the tensor-core steps. The unsplit source has neither.
    const int64_t m = c.x[c.x.size() - 2];
    ASSERT_LT(m, 64);
    EXPECT_EQ(Occurrences(body, "(past M) zero in every stage, never copied"), 1);
    EXPECT_EQ(Occurrences(body, "live) prism_dev::CpAsync16Fill(&st["), 4);
    EXPECT_EQ(Occurrences(body, "if (static_cast<unsigned>(wm) < kM) {"), m <= 32 ? 1 : 0);
    EXPECT_EQ(Occurrences(without.source, "(past M) zero in every stage"), 0);
    EXPECT_EQ(Occurrences(without.source, "if (static_cast<unsigned>(wm) < kM) {"), 0);
    // Each block's tile once into shared memory, two cluster barriers, S remote loads per
    // output element in rank order, one store of it; no fragment store.
    EXPECT_EQ(Occurrences(body, "= make_float2(acc[i][j][r], acc[i][j][r + 1]);"), 1);
    EXPECT_EQ(Occurrences(body, "prism_dev::ClusterSync();"), 2);
    EXPECT_THAT(body, HasSubstr("for (unsigned q = 0; q < kSplit; ++q) v += "
                                "prism_dev::LdClusterF32(prism_dev::MapShared(at, q));"));
    EXPECT_EQ(Occurrences(body, "y[m * kN + n] = "), 1);
    EXPECT_EQ(Occurrences(body, "y[m * kN + n + 1u] = "), 0);
    ASSERT_OK_AND_ASSIGN(GeneratedCode again, GenerateCuda(p, split));
    EXPECT_EQ(again.source, code.source);
    if (NvrtcAvailable()) {
      absl::StatusOr<NvrtcResult> r90 = CompileWithNvrtc(code.source, 90);
      ASSERT_OK(r90.status());
      EXPECT_EQ(r90->kernels[0].spill_store_bytes + r90->kernels[0].spill_load_bytes, 0);
      EXPECT_THAT(CompileWithNvrtc(code.source, 80).status(),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr("library_matmul_cluster_split kernels need sm_90")));
    }
  }
}

// library_matmul_split_blocks_per_sm other than 1 or 2: InvalidArgument, whatever the program
// (also without library_matmul_cluster_split, where it would be ignored).
TEST(LibraryOpsTest, SplitBlocksPerSmOutsideOneOrTwoIsRejected) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kMatMul, {{8, 4096}, {4096, 1000}}, kF16));
  for (const int bad : {0, 3, -1}) {
    for (const bool split : {true, false}) {
      CodegenOptions o;
      o.library_matmul_cluster_split = split;
      o.library_matmul_split_blocks_per_sm = bad;
      EXPECT_THAT(GenerateCuda(p, o),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           absl::StrCat("codegen: library_matmul_split_blocks_per_sm is ", bad,
                                        ", expected 1 or 2")));
    }
  }
}

// f32 [7, 6] × [6, 5], whole: on the CUDA cores, fmaf in increasing k.
TEST(LibraryOpsTest, MatmulKernelSourceF32) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kMatMul, {{7, 6}, {6, 5}}, kF32));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  const size_t at = code.source.find("// kernel k0:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.source.substr(at), R"(// kernel k0: library kernel matmul(X f32 [7, 6], W f32 [6, 5]) -> Y f32 [7, 5]; 1 batch(es) z of [7, 6] x [6, 5]; 64x64 tiles (1 x 1), k in 0 step(s) of 16 + 6, fmaf in increasing k; grid (1, 1, 1), 256 threads, grid-stride, 16 outputs per thread, 8256 B static shared memory
extern "C" __global__ void __launch_bounds__(256) prism_matmul_k0(const float* __restrict__ t_X, const float* __restrict__ t_W, float* __restrict__ t_Y) {
  constexpr unsigned kM = 7u, kN = 5u, kK = 6u, kTilesM = 1u, kTilesN = 1u, kBatches = 1u;
  __shared__ float sa[16][65];  // a's tile, sa[k][m]
  __shared__ float sb[16][64];  // b's tile, sb[k][n]
  const unsigned tid = threadIdx.x, tx = tid % 16u, ty = tid / 16u;
  for (unsigned z = blockIdx.z; z < kBatches; z += gridDim.z) {
    const float* __restrict__ a = t_X;
    const float* __restrict__ b = t_W;
    float* __restrict__ y = t_Y;
    for (unsigned tm = blockIdx.y; tm < kTilesM; tm += gridDim.y) {
      for (unsigned tn = blockIdx.x; tn < kTilesN; tn += gridDim.x) {
        const unsigned m0 = tm * 64u, n0 = tn * 64u;
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
        }
        for (unsigned k0 = 0; k0 < kK; k0 += 16u) {
          __syncthreads();  // every thread is done with the last step's tiles
#pragma unroll
          for (unsigned l = 0; l < 4u; ++l) {
            const unsigned i = tid + l * 256u;
            const unsigned am = m0 + i / 16u, ak = k0 + i % 16u;
            sa[i % 16u][i / 16u] = am < kM && ak < kK ? a[am * kK + ak] : 0.0f;
            const unsigned bk = k0 + i / 64u, bn = n0 + i % 64u;
            sb[i / 64u][i % 64u] = bk < kK && bn < kN ? b[bk * kN + bn] : 0.0f;
          }
          __syncthreads();
#pragma unroll
          for (int kk = 0; kk < 6; ++kk) {  // increasing k
            float av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) av[i] = sa[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) bv[j] = sb[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
              for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
          }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const unsigned m = m0 + ty + 16 * i;
          if (m >= kM) break;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const unsigned n = n0 + tx + 16 * j;
            if (n < kN) y[m * kN + n] = acc[i][j];
          }
        }
      }
    }
  }
}
)");
}

// ---- elementwise ops -------------------------------------------------------------------------

struct ElementwiseCase {
  const char* label;
  OpKind op;
  std::vector<Shape> shapes;  // X (and W)
  DType dtype;
  std::vector<int> operands;  // empty: each input once
  double scalar;              // scale's c
  int64_t grid;               // ⌈elements / 256⌉, at most 528
  std::vector<std::string> args;
  const char* summary;        // in the kernel's comment line: elements and the view
  std::vector<std::string> lines;  // the loads, the store (substrings)
  bool compile;
};

// An elementwise library kernel, by case: every unary op (scale with an f32 constant, and one
// that overflows f32 to inf), add / sub / mul / div through broadcasting (a lower-rank operand,
// both operands broadcast, rank 3 and 4, merged runs, a one-element operand, equal shapes read
// at e), the same tensor twice, f16 / bf16 / f32, grid caps; launch, loads, the one f32
// expression rounded once; NVRTC; determinism.
TEST(LibraryOpsTest, ElementwiseLibraryKernel) {
  const std::vector<std::string> x = {"X", "Y"}, xw = {"X", "W", "Y"};
  const char* const kFlat16 = "const float a = prism_dev::F16ToF32(t_X[e]);";
  auto store16 = [](const std::string& v) {
    return absl::StrCat("t_Y[e] = prism_dev::F32ToF16(", v, ");");
  };
  const ElementwiseCase cases[] = {
      {"exp", OpKind::kExp, {{5, 7}}, kF16, {}, 0, 1, x,
       "35 element(s) e, X at e; one per thread and step; grid 1, 256 threads, grid-stride",
       {kFlat16, store16("expf(a)")}, true},
      {"silu, grid capped", OpKind::kSilu, {{1000, 333}}, kBF16, {}, 0, 528, x,
       "333000 element(s) e, X at e;",
       {"const float a = prism_dev::BF16ToF32(t_X[e]);",
        "t_Y[e] = prism_dev::F32ToBF16(prism_dev::Silu(a));"},
       true},
      {"gelu", OpKind::kGelu, {{3, 5}}, kF32, {}, 0, 1, x, "15 element(s) e, X at e;",
       {"const float a = t_X[e];", "t_Y[e] = prism_dev::Gelu(a);"}, true},
      {"relu", OpKind::kRelu, {{64}}, kF16, {}, 0, 1, x, "64 element(s) e",
       {kFlat16, store16("prism_dev::Relu(a)")}, true},
      {"sqrt", OpKind::kSqrt, {{2, 3, 4}}, kBF16, {}, 0, 1, x, "24 element(s) e",
       {"t_Y[e] = prism_dev::F32ToBF16(sqrtf(a));"}, true},
      {"rsqrt", OpKind::kRsqrt, {{2, 3, 4, 5}}, kF16, {}, 0, 1, x, "120 element(s) e",
       {store16("1.0f / sqrtf(a)")}, true},
      {"square", OpKind::kSquare, {{300}}, kF32, {}, 0, 2, x, "300 element(s) e",
       {"t_Y[e] = a * a;"}, true},
      {"neg", OpKind::kNeg, {{9, 1}}, kF16, {}, 0, 1, x, "9 element(s) e", {store16("-a")}, true},
      {"recip", OpKind::kRecip, {{4, 4}}, kBF16, {}, 0, 1, x, "16 element(s) e",
       {"t_Y[e] = prism_dev::F32ToBF16(1.0f / a);"}, true},
      {"scale", OpKind::kScale, {{8, 16}}, kF16, {}, -0.7, 1, x,
       "scale(X f16 [8, 16], c -0.699999988f) -> Y f16 [8, 16]; 128 element(s) e",
       {store16("-0.699999988f * a")}, true},
      {"scale by a c beyond f32", OpKind::kScale, {{8, 16}}, kF32, {}, 1e39, 1, x,
       "128 element(s) e", {"t_Y[e] = __int_as_float(0x7f800000) * a;"}, true},
      {"add [2, 5] + [5]", OpKind::kAdd, {{2, 5}, {5}}, kF16, {}, 0, 1, xw,
       "10 element(s) e, runs [2, 5], X at e, W at p1;",
       {"const unsigned p1 = r % 5u, p0 = r / 5u;", kFlat16,
        "const float b = prism_dev::F16ToF32(t_W[p1]);", store16("a + b")},
       true},
      {"sub [3, 1] - [1, 4]", OpKind::kSub, {{3, 1}, {1, 4}}, kF16, {}, 0, 1, xw,
       "12 element(s) e, runs [3, 4], X at p0, W at p1;",
       {"const float a = prism_dev::F16ToF32(t_X[p0]);",
        "const float b = prism_dev::F16ToF32(t_W[p1]);", store16("a - b")},
       true},
      {"mul [4, 1, 3] * [2, 1]", OpKind::kMul, {{4, 1, 3}, {2, 1}}, kBF16, {}, 0, 1, xw,
       "24 element(s) e, runs [4, 2, 3], X at p0 * 3u + p2, W at p1;",
       {"const unsigned p2 = r % 3u;", "r /= 3u;", "const unsigned p1 = r % 2u, p0 = r / 2u;",
        "const float a = prism_dev::BF16ToF32(t_X[p0 * 3u + p2]);",
        "const float b = prism_dev::BF16ToF32(t_W[p1]);",
        "t_Y[e] = prism_dev::F32ToBF16(a * b);"},
       true},
      {"div, equal shapes", OpKind::kDiv, {{6, 7}, {6, 7}}, kF32, {}, 0, 1, xw,
       "42 element(s) e, X at e, W at e;",
       {"const float a = t_X[e];", "const float b = t_W[e];", "t_Y[e] = a / b;"}, true},
      {"mul(X, X)", OpKind::kMul, {{4, 5}}, kF16, {0, 0}, 0, 1, x, "mul(X f16 [4, 5], X f16 [4, 5])",
       {kFlat16, store16("a * a")}, true},
      {"add a one-element operand", OpKind::kAdd, {{4, 5}, {1}}, kF16, {}, 0, 1, xw,
       "20 element(s) e, X at e, W at 0;",
       {"const float b = prism_dev::F16ToF32(t_W[0]);"}, true},
      {"the first operand broadcast", OpKind::kSub, {{5}, {2, 5}}, kF32, {}, 0, 1, xw,
       "10 element(s) e, runs [2, 5], X at p1, W at e;",
       {"const float a = t_X[p1];", "const float b = t_W[e];"}, true},
      {"merged runs", OpKind::kAdd, {{2, 3, 4}, {4}}, kF16, {}, 0, 1, xw,
       "24 element(s) e, runs [6, 4], X at e, W at p1;", {"const unsigned p1 = r % 4u, p0 = r / 4u;"},
       false},
      {"rank 4", OpKind::kDiv, {{2, 3, 4, 5}, {3, 1, 5}}, kBF16, {}, 0, 1, xw,
       "120 element(s) e, runs [2, 3, 4, 5], X at e, W at p1 * 5u + p3;",
       {"const float b = prism_dev::BF16ToF32(t_W[p1 * 5u + p3]);"}, true},
      {"2^31 - 1 elements", OpKind::kExp, {{2147483647}}, kF16, {}, 0, 528, x,
       "2147483647 element(s) e, X at e;", {"constexpr unsigned kElements = 2147483647u;"}, false},
  };
  for (const ElementwiseCase& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p,
                         OpProgram(c.op, c.shapes, c.dtype, c.operands, c.scalar));
    const std::string function = absl::StrCat("prism_", GetOpInfo(c.op).name, "_k0");
    for (bool pdl : {false, true}) {
      SCOPED_TRACE(pdl ? "with PDL" : "without PDL");
      CodegenOptions options;
      options.programmatic_dependent_launch = pdl;
      ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
      ExpectLibraryLaunch(p, options, code, function, {c.grid, 1, 1}, c.args, c.dtype);
      const std::string body = code.source.substr(code.source.find("// kernel k0:"));
      EXPECT_THAT(body, HasSubstr(c.summary));
      for (const std::string& line : c.lines) EXPECT_THAT(body, HasSubstr(line));
      EXPECT_THAT(body, HasSubstr("  for (unsigned e = blockIdx.x * 256u + threadIdx.x; e < "
                                  "kElements; e += gridDim.x * 256u) {\n"));
      EXPECT_EQ(Occurrences(body, "t_Y[e] = "), 1);  // one store, rounded once
      EXPECT_EQ(Occurrences(body, "__shared__"), 0);
      const bool decomposes = absl::StrContains(c.summary, "runs [");
      EXPECT_EQ(Occurrences(body, "unsigned r = e;") + Occurrences(body, "const unsigned p0 = e;"),
                decomposes ? 1 : 0);
      if (!pdl && c.compile) ExpectCompiles(code.source);
    }
  }
}

// The broadcast add of the table above, whole: f16 [4, 1, 3] ⊕ [2, 1] (as mul there).
TEST(LibraryOpsTest, ElementwiseKernelSource) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(OpKind::kAdd, {{4, 1, 3}, {2, 1}}));
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
  const size_t at = code.source.find("// kernel k0:");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(code.source.substr(at), R"(// kernel k0: library kernel add(X f16 [4, 1, 3], W f16 [2, 1]) -> Y f16 [4, 2, 3]; 24 element(s) e, runs [4, 2, 3], X at p0 * 3u + p2, W at p1; one per thread and step; grid 1, 256 threads, grid-stride
extern "C" __global__ void __launch_bounds__(256) prism_add_k0(const prism_dev::f16_t* __restrict__ t_X, const prism_dev::f16_t* __restrict__ t_W, prism_dev::f16_t* __restrict__ t_Y) {
  constexpr unsigned kElements = 24u;
  for (unsigned e = blockIdx.x * 256u + threadIdx.x; e < kElements; e += gridDim.x * 256u) {
    unsigned r = e;
    const unsigned p2 = r % 3u;
    r /= 3u;
    const unsigned p1 = r % 2u, p0 = r / 2u;
    const float a = prism_dev::F16ToF32(t_X[p0 * 3u + p2]);
    const float b = prism_dev::F16ToF32(t_W[p1]);
    t_Y[e] = prism_dev::F32ToF16(a + b);
  }
}
)");
}

// Library kernels of every op generate, also after a concat kernel in the same program (what
// OtherLibraryKernelsAreUnimplemented checked for exp, add and matmul before they were).
TEST(LibraryOpsTest, BesideAConcatKernel) {
  for (OpKind op : {OpKind::kExp, OpKind::kAdd, OpKind::kMatMul}) {
    SCOPED_TRACE(GetOpInfo(op).name);
    SGraph g("lib");
    const int x = g.AddInput("X", kF16, {8, 16});
    LibraryKernel cat;
    cat.op = OpKind::kConcat;
    cat.operands = {x, x};
    cat.dim = 0;
    cat.result = g.AddOutput("X2", kF16, {16, 16});
    g.AddLibraryKernel("cat", cat);
    LibraryKernel lk;
    lk.op = op;
    lk.operands = {x};
    if (op == OpKind::kAdd) lk.operands = {x, x};
    if (op == OpKind::kMatMul) lk.operands = {x, g.AddInput("W", kF16, {16, 8})};
    lk.result = g.AddOutput("Y", kF16, op == OpKind::kMatMul ? Shape{8, 8} : Shape{8, 16});
    g.AddLibraryKernel("k9", lk);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(g, {}));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 2u);
    EXPECT_EQ(code.launches[0].function, "prism_lib_cat");
    EXPECT_EQ(code.launches[1].function, "prism_lib_k9");
    EXPECT_THAT(code.source,
                HasSubstr(absl::StrCat("// kernel k9: library kernel ", GetOpInfo(op).name, "(")));
  }
}

// ---- refusals --------------------------------------------------------------------------------

// What these kernels refuse, by exact message: malformed kernels (InvalidArgument; the program
// is edited after Instantiate, which never makes them) and tensors over 2^31 − 1 elements.
TEST(LibraryOpsTest, Refusals) {
  struct Refusal {
    const char* label;
    OpKind op;
    std::vector<Shape> shapes;
    std::function<void(BlockProgram&)> change;
    absl::StatusCode code;
    const char* message;
  };
  auto kernel = [](BlockProgram& p) -> LibraryKernel& {
    return std::get<LibraryKernel>(p.kernels[0].body);
  };
  constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  constexpr absl::StatusCode kExhausted = absl::StatusCode::kResourceExhausted;
  const std::vector<Shape> add = {{4, 6}, {6}}, mm = {{7, 6}, {6, 5}};
  auto none = [](BlockProgram&) {};
  const Refusal cases[] = {
      // Elementwise.
      {"one operand of add", OpKind::kAdd, add, [&](BlockProgram& p) { kernel(p).operands.pop_back(); },
       kInvalid, "codegen: kernel k0: add: takes 2 operands, found 1"},
      {"two operands of exp", OpKind::kExp, {{4, 6}},
       [&](BlockProgram& p) { kernel(p).operands.push_back(0); }, kInvalid,
       "codegen: kernel k0: exp: takes 1 operand, found 2"},
      {"an operand out of range", OpKind::kSub, add, [&](BlockProgram& p) { kernel(p).operands[1] = 7; },
       kInvalid, "codegen: kernel k0: sub: operand index 7 is out of range"},
      {"the result out of range", OpKind::kMul, add, [&](BlockProgram& p) { kernel(p).result = -1; },
       kInvalid, "codegen: kernel k0: mul: result index -1 is out of range"},
      {"the result among the operands", OpKind::kDiv, add,
       [&](BlockProgram& p) { kernel(p).operands[1] = kernel(p).result; }, kInvalid,
       "codegen: kernel k0: div: the result Y is also an operand"},
      {"the result as the operand", OpKind::kNeg, {{4, 6}},
       [&](BlockProgram& p) { kernel(p).operands[0] = kernel(p).result; }, kInvalid,
       "codegen: kernel k0: neg: the result Y is also the operand"},
      {"rank 0", OpKind::kRelu, {{4, 6}}, [](BlockProgram& p) { p.tensors[0].shape = {}; },
       kInvalid, "codegen: kernel k0: relu: X [] has rank 0"},
      {"an empty dim", OpKind::kAdd, add, [](BlockProgram& p) { p.tensors[1].shape = {0}; },
       kInvalid, "codegen: kernel k0: add: W [0] has an empty dim"},
      {"dtypes differ", OpKind::kAdd, add, [](BlockProgram& p) { p.tensors[1].dtype = kBF16; },
       kInvalid, "codegen: kernel k0: add: W is bf16 but X is f16"},
      {"no broadcast", OpKind::kAdd, add, [](BlockProgram& p) { p.tensors[1].shape = {4}; },
       kInvalid, "codegen: kernel k0: add: X [4, 6] and W [4] do not broadcast"},
      {"the result's shape", OpKind::kAdd, add, [](BlockProgram& p) { p.tensors[2].shape = {4, 5}; },
       kInvalid, "codegen: kernel k0: add: the result Y is f16 [4, 5], expected f16 [4, 6]"},
      {"the result's dtype", OpKind::kExp, {{4, 6}}, [](BlockProgram& p) { p.tensors[1].dtype = kF32; },
       kInvalid, "codegen: kernel k0: exp: the result Y is f32 [4, 6], expected f16 [4, 6]"},
      {"scale by NaN", OpKind::kScale, {{4, 6}},
       [&](BlockProgram& p) { kernel(p).scalar = std::nan(""); }, kInvalid,
       "codegen: kernel k0: scale: c nan is not finite"},
      {"2^31 elements", OpKind::kExp, {{65536, 32768}}, none, kExhausted,
       "codegen: kernel k0: exp result Y [65536, 32768] has more than 2147483647 elements (the "
       "kernel indexes with 32 bits)"},
      // Matmul.
      {"one operand of matmul", OpKind::kMatMul, mm,
       [&](BlockProgram& p) { kernel(p).operands.pop_back(); }, kInvalid,
       "codegen: kernel k0: matmul: takes 2 operands, found 1"},
      {"the result among the matmul's operands", OpKind::kMatMul, mm,
       [&](BlockProgram& p) { kernel(p).operands[0] = kernel(p).result; }, kInvalid,
       "codegen: kernel k0: matmul: the result Y is also an operand"},
      {"rank 1", OpKind::kMatMul, mm, [](BlockProgram& p) { p.tensors[1].shape = {6}; }, kInvalid,
       "codegen: kernel k0: matmul: W [6] has rank 1 (at least 2)"},
      {"matmul dtypes differ", OpKind::kMatMul, mm, [](BlockProgram& p) { p.tensors[0].dtype = kF32; },
       kInvalid, "codegen: kernel k0: matmul: W is f16 but X is f32"},
      {"K differs", OpKind::kMatMul, mm, [](BlockProgram& p) { p.tensors[1].shape = {5, 5}; },
       kInvalid, "codegen: kernel k0: matmul: X [7, 6] and W [5, 5] differ in K (6 and 5)"},
      {"batch dims", OpKind::kMatMul, mm,
       [](BlockProgram& p) {
         p.tensors[0].shape = {2, 7, 6};
         p.tensors[1].shape = {3, 6, 5};
       },
       kInvalid,
       "codegen: kernel k0: matmul: the batch dims of X [2, 7, 6] and W [3, 6, 5] do not "
       "broadcast"},
      {"the matmul's result", OpKind::kMatMul, mm, [](BlockProgram& p) { p.tensors[2].shape = {7, 6}; },
       kInvalid, "codegen: kernel k0: matmul: the result Y is f16 [7, 6], expected f16 [7, 5]"},
      {"the matmul's result batch", OpKind::kMatMul, {{2, 7, 6}, {6, 5}},
       [](BlockProgram& p) { p.tensors[2].shape = {7, 5}; }, kInvalid,
       "codegen: kernel k0: matmul: the result Y is f16 [7, 5], expected f16 [2, 7, 5]"},
      {"an operand of 2^31 elements", OpKind::kMatMul, {{65536, 32768}, {32768, 1}}, none,
       kExhausted,
       "codegen: kernel k0: matmul operand X [65536, 32768] has more than 2147483647 elements "
       "(the kernel indexes with 32 bits)"},
      {"a result of 2^31 elements", OpKind::kMatMul, {{65536, 1}, {1, 32768}}, none, kExhausted,
       "codegen: kernel k0: matmul result Y [65536, 32768] has more than 2147483647 elements "
       "(the kernel indexes with 32 bits)"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.label);
    ASSERT_OK_AND_ASSIGN(BlockProgram p, OpProgram(c.op, c.shapes));
    c.change(p);
    EXPECT_THAT(GenerateCuda(p), StatusIs(c.code, ::testing::Eq(c.message)));
  }
}

// ---- the codegen_gpu_test cases on the CPU ---------------------------------------------------

// Every lib_matmul / elementwise case of gpu_run_test.cc (same fixture, sizes and dtype) builds,
// generates and runs on the block emulator here, with finite outputs: the GPU run fails only on
// the GPU's own results.
TEST(LibraryOpsTest, GpuFixturesRunOnTheEmulator) {
  struct GpuFixture {
    const char* name;
    fixtures::Sizes sizes;
    DType dtype;
  };
  const GpuFixture cases[] = {
      {"lib_matmul", {{"x0", 7}, {"x1", 6}, {"w0", 6}, {"w1", 5}}, kF16},
      {"lib_matmul", {{"x0", 17}, {"x1", 6}, {"w0", 6}, {"w1", 5}}, kF16},
      {"lib_matmul", {{"x0", 8}, {"x1", 1001}, {"w0", 1001}, {"w1", 1003}}, kF16},
      {"lib_matmul", {{"x0", 16}, {"x1", 300}, {"w0", 300}, {"w1", 77}}, kBF16},
      {"lib_matmul", {{"x0", 1}, {"x1", 2048}, {"w0", 2048}, {"w1", 333}}, kF16},
      {"lib_matmul",
       {{"x0", 2}, {"x1", 1}, {"x2", 5}, {"x3", 37}, {"w0", 3}, {"w1", 37}, {"w2", 29}},
       kF16},
      {"lib_matmul", {{"x0", 3}, {"x1", 2}, {"x2", 6}, {"w0", 6}, {"w1", 1}}, kBF16},
      {"lib_matmul", {{"x0", 2}, {"x1", 1}, {"x2", 4}, {"x3", 8}, {"w0", 3}, {"w1", 8}, {"w2", 16}},
       kF32},
      {"lib_matmul", {{"x0", 256}, {"x1", 512}, {"w0", 512}, {"w1", 384}}, kF16},
      {"lib_matmul", {{"x0", 100}, {"x1", 40}, {"w0", 40}, {"w1", 130}}, kBF16},
      // The library_matmul_cluster_split cases (but the 16 x 5001 x 3001 one: 240 M products,
      // too slow for the emulator under the sanitizers).
      {"lib_matmul", {{"x0", 8}, {"x1", 1001}, {"w0", 1001}, {"w1", 1003}}, kF16},
      {"lib_matmul",
       {{"x0", 2}, {"x1", 1}, {"x2", 5}, {"x3", 2000}, {"w0", 3}, {"w1", 2000}, {"w2", 29}},
       kF16},
      {"lib_matmul", {{"x0", 100}, {"x1", 800}, {"w0", 800}, {"w1", 130}}, kBF16},
      {"lib_matmul", {{"x0", 1}, {"x1", 300}, {"w0", 300}, {"w1", 64}}, kF16},
      {"lib_add", {{"x0", 3}, {"x1", 1}, {"w0", 1}, {"w1", 4}}, kF16},
      {"lib_mul", {{"x0", 4}, {"x1", 1}, {"x2", 3}, {"w0", 2}, {"w1", 1}}, kBF16},
      {"lib_exp", {{"x0", 5}, {"x1", 7}}, kBF16},
      {"lib_scale", {{"x0", 1000}, {"x1", 333}}, kF16},
      {"lib_div", {{"x0", 6}, {"x1", 7}, {"w0", 6}, {"w1", 7}}, kF32},
      {"lib_silu", {{"x0", 64}, {"x1", 96}}, kF16},
  };
  for (const GpuFixture& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, codegen_test::MakeAnyFixture(c.name, c.sizes, c.dtype));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(f.graph, {}));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ASSERT_EQ(code.launches.size(), 1u);
    EXPECT_EQ(p.tensors[p.outputs[0]].dtype, c.dtype);
    const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/7);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Emulate(p, inputs));
    ASSERT_EQ(out.size(), 1u);
    // The emulator's library kernel is the interpreter's device mode of the fixture's Program.
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(f.program, inputs, EvalMode::kDevice));
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(out[0].shape, want[0].shape);
    EXPECT_EQ(out[0].data, want[0].data);
    for (double v : out[0].data) ASSERT_TRUE(std::isfinite(v));
  }
}

}  // namespace library_ops_test
}  // namespace
}  // namespace prism::codegen
