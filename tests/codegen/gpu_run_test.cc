// Runs generated kernels on a GPU and compares them with the CPU block emulator
// (ctest label `gpu`), through runtime/: the sources compiled in one child
// (runtime::CompileInChild), all cases run in one measuring child
// (runtime::MeasureAllInChild, a fresh one after a fault), every output of every
// case compared with the emulator's. Without a driver, a device or NVRTC, the
// test skips.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "block/fixtures/fixtures.h"
#include "split_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/codegen/codegen.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "prism/runtime/runtime.h"
#include "testing/status_matchers.h"

namespace prism::codegen {
namespace {

struct GpuCase {
  const char* fixture;
  fixtures::Sizes sizes;
  Assignment assignment;
  int tiles_per_warp = 0;  // CodegenOptions::attention_tiles_per_warp
  bool pipeline = false;   // CodegenOptions::attention_pipeline
  bool lazy = false;       // CodegenOptions::attention_lazy_rescale
  bool exp16 = false;      // CodegenOptions::attention_exp_f16x2
  bool cluster = false;    // CodegenOptions::cluster_combine (sm_90 devices only)
  bool pdl = false;        // CodegenOptions::programmatic_dependent_launch
  bool warps_n = false;    // CodegenOptions::gemm_warps_along_n
  bool wgmma = false;      // CodegenOptions::attention_wgmma (sm_90 devices only)
  bool defer = false;      // CodegenOptions::gemm_defer_chained
  bool b_smem = false;     // CodegenOptions::gemm_chained_b_smem (with defer)
  // When not 1: Kt scaled by this power of two, so that scores pass exp's f32 range (88.7);
  // compared with the reference program in f64, not the emulator (whose exact-exp block
  // semantics overflow there: the split-KV partials in log-sum-exp form do not).
  double k_scale = 1.0;
  const char* scaled = "Kt";  // the input k_scale multiplies
  DType dtype = DType::kF16;  // every f16 tensor made this (split_fixtures.h WithDType)
  // attention_wgmma's loop options: 1 attention_wgmma_late_loads, 2 attention_wgmma_split_pv.
  int wgmma_loop = 0;
  // CodegenOptions::library_matmul_cluster_split (sm_90 devices only); the case checks that
  // the kernel did split (a cluster along z), into clusters of `lib_split_size` blocks when
  // that is set; library_matmul_split_blocks_per_sm.
  bool lib_split = false;
  int lib_split_per_sm = 1;
  int64_t lib_split_size = 0;
  // CodegenOptions::constant_inputs, comma-separated ("": none).
  const char* constant = "";
};

GpuCase BF16(GpuCase c) {
  c.dtype = DType::kBF16;
  return c;
}
GpuCase F32(GpuCase c) {
  c.dtype = DType::kF32;
  return c;
}

GpuCase LibSplit(GpuCase c) {
  c.lib_split = true;
  return c;
}

// The split with two blocks per SM, into clusters of `size` blocks.
GpuCase LibSplit2(GpuCase c, int64_t size) {
  c.lib_split = true;
  c.lib_split_per_sm = 2;
  c.lib_split_size = size;
  return c;
}

GpuCase LargeScores(GpuCase c) {
  c.k_scale = 16.0;
  return c;
}

// c with attention_wgmma and the loop options `loop` (GpuCase::wgmma_loop) and PDL.
GpuCase WgmmaLoop(GpuCase c, int loop) {
  c.wgmma = true;
  c.pdl = true;
  c.wgmma_loop = loop;
  return c;
}

// c with PDL and the inputs `names` (comma-separated) declared constant: their prologue
// stages are loaded before griddepcontrol.wait (CodegenOptions::constant_inputs).
GpuCase Constant(GpuCase c, const char* names) {
  c.pdl = true;
  c.constant = names;
  return c;
}

// c with cluster_combine (the combine kernel folded into clusters along the split axis).
GpuCase Cluster(GpuCase c) {
  c.cluster = true;
  return c;
}

// A row softmax whose inputs pass exp's f32 range (standard normals × 64, up to about 220):
// the generated kernel shifts exp by the row max, the emulator's exact exp overflows.
GpuCase LargeInputs(GpuCase c) {
  c.k_scale = 64.0;
  c.scaled = "X";
  return c;
}

TEST(GpuRunTest, GeneratedKernelsMatchTheEmulator) {
  absl::StatusOr<runtime::DeviceInfo> dev = runtime::QueryDevice(0);
  if (!dev.ok()) GTEST_SKIP() << dev.status().message();
  if (!NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
  if (dev->cc_major < 8) GTEST_SKIP() << "needs sm_80+";

  const GpuCase cases[] = {GpuCase{"rmsnorm_linear",
                                   {{"M", 2}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           GpuCase{"rmsnorm_linear",
                                   {{"M", 16}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 2}}},
                           GpuCase{"rmsnorm_linear",
                                   {{"M", 24}, {"K", 512}, {"N", 256}},
                                   {{"g", 4}, {"F", 2}, {"T", 512}, {"S", 1}}},
                           GpuCase{"rmsnorm_linear_square",
                                   {{"M", 16}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 4}}},
                           GpuCase{"gated_mlp",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}},
                           GpuCase{"gated_mlp",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"h", 1}, {"F", 4}, {"T", 128}, {"S", 2}}},
                           // Split-KV attention (partial_kv + combine). 2 row tiles, 4 warps:
                           // 2 warps per tile along the 64-column chunk.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}},
                           // Lq 24: m16 tiles padded; 2 heads per block, 8 warps, chunk 32.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 24}, {"D", 32}, {"L", 256}},
                                   {{"gx", 1}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 256}, {"S", 3}}},
                           // Lq 24, one warp per tile (4 tiles, 4 warps): fragments stored
                           // directly, the padded rows 24..31 skipped.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 24}, {"D", 32}, {"L", 256}},
                                   {{"gx", 1}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 128}, {"S", 3}}},
                           // WORKLOADS.md head size, 2 tiles per warp, one stage.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 64}, {"S", 1}}},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 64}, {"D", 64}, {"L", 256}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 2}, {"T", 64}, {"S", 1}}},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // rms(V)'s factors by two threads per V row (128 rows, 256
                           // threads), one chunk per block.
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 1}, {"T", 256}, {"S", 1}}},
                           // Two row tiles per warp sharing K/V fragments, 2 warps per pair.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   2},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 64}, {"S", 2}},
                                   2},
                           // Software-pipelined loop: 3 and 4 stages, one chunk (F = 1), two
                           // tiles per warp, rms(V) double-buffered.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 8}, {"T", 64}, {"S", 3}},
                                   0, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 1}, {"T", 128}, {"S", 4}},
                                   2, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 4}, {"T", 128}, {"S", 4}},
                                   0, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 64}, {"S", 3}},
                                   2, true},
                           // Lazy rescaling and f16x2 exp (Σ P on the tensor cores), alone
                           // and together, with 1 and 2 tiles per warp, rms(Q, V), pipelined.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, true, false},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 8}, {"T", 64}, {"S", 2}},
                                   2, false, true, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 64}, {"D", 64}, {"L", 256}},
                                   {{"gx", 2}, {"gy", 2}, {"gz", 2}, {"F", 2}, {"T", 64}, {"S", 1}},
                                   0, false, true, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 2}, {"T", 256}, {"S", 2}},
                                   0, false, false, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 4}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 64}, {"S", 3}},
                                   2, true, true, true},
                           // lora: X·W and X·A in the loop, (X·A)·B after it (B invariant).
                           GpuCase{"lora",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 3}}},
                           GpuCase{"lora",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 16}, {"F", 8}, {"T", 64}, {"S", 1}}},
                           GpuCase{"lora",
                                   {{"B", 2}, {"K", 512}, {"N", 256}, {"R", 16}},
                                   {{"g", 2}, {"F", 2}, {"T", 128}, {"S", 2}}},
                           // ntrans: rms passes, inputs re-read (g=1) or cached in registers.
                           GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 1}, {"T", 256}}},
                           GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}},
                           GpuCase{"ntrans", {{"B", 4}, {"D", 1024}}, {{"g", 2}, {"T", 128}}},
                           // Split-K (split_fixtures.h): f32 partials of X·A, X·B per K chunk,
                           // then the combine kernel sums them and applies silu(·) ⊙ (·).
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 2}, {"K", 2048}, {"N", 256}},
                                   {{"g", 4}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // lora split: (X·A)·B per K chunk in the loop, B invariant.
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"lora_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}},
                           GpuCase{"lora_splitk",
                                   {{"B", 2}, {"K", 2048}, {"N", 256}, {"R", 16}},
                                   {{"g", 2}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // lora split with X·A [B, 16] a side matmul of the partial kernel
                           // (stored replicated along g) and ·B in the pointwise combine: warps
                           // along K (reduction buffer), warps along N with the side matmul's
                           // two n8 tiles on warps 0 and 1 only (direct stores; and with two
                           // warps along K), PDL.
                           GpuCase{"lora_split_xa",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"lora_split_xa",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}},
                           GpuCase{"lora_split_xa",
                                   {{"B", 2}, {"K", 2048}, {"N", 256}, {"R", 16}},
                                   {{"g", 2}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           GpuCase{"lora_split_xa",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, true},
                           GpuCase{"lora_split_xa",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 256}, {"S", 3}},
                                   0, false, false, false, false, false, true},
                           // rmsnorm_linear split: Σx² partials stored replicated along g
                           // (every column block), reduced with the products in k1.
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 2}, {"K", 1024}, {"N", 768}},
                                   {{"g", 4}, {"s", 4}, {"F", 4}, {"T", 128}, {"S", 3}}},
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 16}, {"K", 2048}, {"N", 384}},
                                   {{"g", 2}, {"s", 8}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 16}, {"K", 1024}, {"N", 768}},
                                   {{"g", 4}, {"s", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true},
                           // cluster_combine on split-K GEMMs (clusters along y): direct
                           // fragment stores into the kept tiles (rms, PDL), the reduction
                           // path (two warps along K), lora's chained matmul, gated_mlp.
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 16}, {"K", 1024}, {"N", 768}},
                                   {{"g", 4}, {"s", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, true, true, true},
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 2}, {"K", 2048}, {"N", 384}},
                                   {{"g", 2}, {"s", 8}, {"F", 2}, {"T", 256}, {"S", 2}},
                                   0, false, false, false, true},
                           GpuCase{"lora_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, true, false, true},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, true},
                           // Warps along N (gemm_warps_along_n): 4 x 12 n8 tiles with Σx²
                           // summed by the wn = 0 warps; 2 along K x 8 along N; one-kernel
                           // lora and gated_mlp.
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 16}, {"K", 1024}, {"N", 768}},
                                   {{"g", 4}, {"s", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, true},
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 2}, {"K", 2048}, {"N", 768}},
                                   {{"g", 4}, {"s", 2}, {"F", 8}, {"T", 512}, {"S", 2}},
                                   0, false, false, false, false, false, true},
                           GpuCase{"rmsnorm_linear",
                                   {{"M", 16}, {"K", 1024}, {"N", 512}},
                                   {{"g", 4}, {"F", 8}, {"T", 256}, {"S", 3}},
                                   0, false, false, false, false, false, true},
                           // Direct stores with M = 2 (rows past M skipped, Σx²'s quad sums).
                           GpuCase{"rmsnorm_linear_split",
                                   {{"M", 2}, {"K", 2048}, {"N", 768}},
                                   {{"g", 4}, {"s", 2}, {"F", 8}, {"T", 128}, {"S", 2}},
                                   0, false, false, false, false, false, true},
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, true},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}},
                                   0, false, false, false, false, false, true},
                           // gemm_defer_chained: (X·A)·B once after the loop, warps along N
                           // (each warp's whole X·A) and along K (the warps' shares summed).
                           GpuCase{"lora_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, true, false, true},
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, false, false, true},
                           // gemm_chained_b_smem: B's tile by cp.async with the first
                           // stage, its fragments read from shared memory after the loop
                           // (warps along N; along K with four stages, more than the loop's F).
                           GpuCase{"lora_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true, true, false, true, true},
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 256}, {"S", 4}},
                                   0, false, false, false, false, true, false, false, true, true},
                           // Constant inputs loaded before the PDL wait (one commit group
                           // per stage): lora with B's tile in shared memory early and late,
                           // rmsnorm_linear, gated_mlp two-kernel and folded into clusters.
                           Constant(GpuCase{"lora_splitk",
                                            {{"B", 1}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                            {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                            0, false, false, false, false, false, true, false,
                                            true, true},
                                    "W,A,B"),
                           Constant(GpuCase{"lora_splitk",
                                            {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                            {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 256}, {"S", 4}},
                                            0, false, false, false, false, false, false, false,
                                            true, true},
                                    "W,A"),
                           Constant(GpuCase{"rmsnorm_linear_split",
                                            {{"M", 16}, {"K", 1024}, {"N", 768}},
                                            {{"g", 4}, {"s", 4}, {"F", 4}, {"T", 128}, {"S", 3}}},
                                    "W"),
                           Constant(GpuCase{"gated_mlp_splitk",
                                            {{"B", 2}, {"K", 2048}, {"N", 256}},
                                            {{"g", 4}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
                                    "A,B"),
                           Constant(Cluster(GpuCase{"gated_mlp_splitk",
                                                    {{"B", 8}, {"K", 1024}, {"N", 512}},
                                                    {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128},
                                                     {"S", 3}}}),
                                    "A,B"),
                           // Programmatic dependent launch: GEMM, pointwise and attention
                           // kernels, one- and two-kernel programs.
                           GpuCase{"lora_splitk",
                                   {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                   {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, true},
                           GpuCase{"gated_mlp_splitk",
                                   {{"B", 1}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}},
                                   0, false, false, false, false, true},
                           GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}},
                                   0, false, false, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   2, false, false, false, false, true},
                           // cluster_combine: one warp per tile (fragments into the kept
                           // tile), two warps per tile (through the reduction buffer), rms,
                           // a non-portable cluster of 16, and with PDL.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 1}, {"T", 256}, {"S", 1}},
                                   0, false, false, false, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 8}, {"F", 2}, {"T", 256}, {"S", 2}},
                                   0, false, false, false, true, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 32}, {"D", 64}, {"L", 2048}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 16}, {"F", 1}, {"T", 64}, {"S", 1}},
                                   0, false, false, false, true},
                           // attention_wgmma: one warpgroup (64-column chunks), two warpgroups
                           // of 256-column wgmmas, two heads per block with two warpgroups per
                           // tile along the chunk (the reduction path), rms(Q, V) with one and
                           // two threads per V row, and lazy + f16x2 exp + PDL.
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 256}, {"S", 2}},
                                   0, false, false, false, false, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 4}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 512}, {"S", 1}},
                                   0, false, false, false, false, false, false, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}},
                                   0, false, false, false, false, false, false, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 512}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 1}, {"T", 256}, {"S", 1}},
                                   0, false, false, false, false, false, false, true},
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 2}},
                                   0, false, true, true, false, true, false, true},
                           // Lazy rescaling alone, at the shape whose first wgmma version
                           // ptxas miscompiled (Q fragments in registers, reused for P).
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 8}, {"T", 256}, {"S", 2}},
                                   0, false, true, false, false, false, false, true},
                           // attention_wgmma pipelined: S of chunk i+1 in flight during the
                           // softmax of chunk i (3 and 4 stages; rms(V) double-buffered).
                           GpuCase{"gqa",
                                   {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 8}, {"T", 256}, {"S", 3}},
                                   0, true, false, false, false, false, false, true},
                           GpuCase{"qknorm_gqa",
                                   {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 2}, {"F", 4}, {"T", 128}, {"S", 4}},
                                   0, true, false, true, false, false, false, true},
                           // Scores up to several hundred: mma.sync with two warps per tile
                           // (the shared-memory reduction), one warp per tile, wgmma with
                           // rms(Q, V), and the combine folded into a cluster.
                           LargeScores(GpuCase{"gqa",
                                               {{"G", 2}, {"Lq", 32}, {"D", 64}, {"L", 512}},
                                               {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}}),
                           LargeScores(GpuCase{"gqa",
                                               {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                               {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                               0, false, false, false, false, true}),
                           LargeScores(GpuCase{"qknorm_gqa",
                                               {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                               {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}},
                                               0, false, false, false, false, true, false, true}),
                           LargeScores(GpuCase{"gqa",
                                               {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                               {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                               0, false, false, false, true}),
                           // attention_wgmma's loop options (late loads, split P·V): each
                           // alone at the H200 selections' block shape, both with rms(Q, V),
                           // with two warpgroups of 64-column halves, and with large scores.
                           WgmmaLoop(GpuCase{"gqa",
                                             {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                             {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 2}}},
                                     1),
                           WgmmaLoop(GpuCase{"gqa",
                                             {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                             {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 2}}},
                                     2),
                           WgmmaLoop(GpuCase{"qknorm_gqa",
                                             {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                             {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}}},
                                     3),
                           WgmmaLoop(GpuCase{"gqa",
                                             {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                             {{"gx", 2}, {"gy", 2}, {"gz", 4}, {"F", 4}, {"T", 256}, {"S", 2}}},
                                     3),
                           LargeScores(WgmmaLoop(GpuCase{"qknorm_gqa",
                                                         {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                                         {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}},
                                                 3)),
                           // attention_wgmma with cluster_combine: the fragments straight
                           // into the kept tiles in a non-portable cluster of 16 and with
                           // rms(Q, V) and large scores; two warpgroups along the chunk (through
                           // the reduction buffer); bf16.
                           Cluster(WgmmaLoop(GpuCase{"gqa",
                                                     {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                                     {{"gx", 2}, {"gy", 2}, {"gz", 16}, {"F", 2}, {"T", 128}, {"S", 2}}},
                                             3)),
                           LargeScores(Cluster(WgmmaLoop(GpuCase{"qknorm_gqa",
                                                                 {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                                                 {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}},
                                                         3))),
                           Cluster(WgmmaLoop(GpuCase{"gqa",
                                                     {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                                     {{"gx", 2}, {"gy", 2}, {"gz", 8}, {"F", 2}, {"T", 256}, {"S", 2}}},
                                             0)),
                           BF16(Cluster(WgmmaLoop(GpuCase{"qknorm_gqa",
                                                          {{"G", 2}, {"Lq", 128}, {"D", 64}, {"L", 2048}},
                                                          {{"gx", 2}, {"gy", 2}, {"gz", 8}, {"F", 2}, {"T", 128}, {"S", 2}}},
                                                  2))),
                           // Row reductions (split_fixtures.h): softmax with one row per
                           // block in registers, two rows per block in registers, four rows
                           // re-read per pass (C = 100); row_stats' per-row f32 sums and
                           // X − max, in registers and re-read; softmax with large inputs.
                           GpuCase{"row_softmax", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}},
                           GpuCase{"row_softmax", {{"B", 256}, {"D", 1024}}, {{"g", 128}, {"T", 64}}},
                           GpuCase{"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
                           GpuCase{"row_stats", {{"B", 16}, {"D", 1024}}, {{"g", 4}, {"T", 128}}},
                           GpuCase{"row_stats", {{"B", 6}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
                           LargeInputs(GpuCase{"row_softmax", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}}),
                           LargeInputs(GpuCase{"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}}),
                           // Batched matmuls on the rank-2 view: 8 batches of 64 x 256 x 128
                           // (4 m16 tiles, 3 stages), 32 batches of one m16 tile each.
                           GpuCase{"bmm", {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}},
                                   {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}},
                           GpuCase{"bmm", {{"B", 32}, {"M", 16}, {"K", 1024}, {"N", 64}},
                                   {{"b", 32}, {"g", 1}, {"F", 8}, {"T", 256}, {"S", 4}}},
                           // Linear layers over a batch of rows (one W): decode-like 8 × 1 rows
                           // merged into one m16 tile, and 4 × 128 rows split along M (32 per block).
                           GpuCase{"linear3d", {{"B", 8}, {"M", 1}, {"K", 1024}, {"N", 512}},
                                   {{"b", 1}, {"g", 8}, {"F", 4}, {"T", 64}, {"S", 3}}},
                           GpuCase{"linear3d_m", {{"B", 4}, {"M", 128}, {"K", 512}, {"N", 64}},
                                   {{"b", 4}, {"g", 4}, {"F", 4}, {"T", 128}, {"S", 2}}},
                           // Scores scaled before the softmax (1/sqrt(D) folded into log2(e)),
                           // mma.sync and wgmma.
                           GpuCase{"gqa_scaled", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
                           GpuCase{"gqa_scaled", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                   {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}},
                                   0, false, false, false, false, false, false, true},
                           // bf16 inputs and outputs: the GEMM template (Σx², after-loop ·B,
                           // chained (X·A)·B with B in shared memory, split-K + combine), the
                           // pointwise one (16-byte vectors, scalar, row softmax) and attention
                           // (mma.sync with rms(Q, V), wgmma, a cluster combine).
                           BF16(GpuCase{"rmsnorm_linear",
                                        {{"M", 2}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           BF16(GpuCase{"gated_mlp",
                                        {{"B", 8}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}}),
                           BF16(GpuCase{"lora",
                                        {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                        {{"g", 8}, {"F", 4}, {"T", 256}, {"S", 3}}}),
                           BF16(GpuCase{"lora_splitk",
                                        {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                        {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                        0, false, false, false, false, true, false, false, true, true}),
                           BF16(GpuCase{"gated_mlp_splitk",
                                        {{"B", 1}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}}),
                           BF16(GpuCase{"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}}),
                           BF16(GpuCase{"row_softmax", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}}),
                           BF16(GpuCase{"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}}),
                           BF16(GpuCase{"qknorm_gqa",
                                        {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                        {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}}),
                           BF16(GpuCase{"gqa",
                                        {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                        {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                        2}),
                           BF16(GpuCase{"qknorm_gqa",
                                        {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                        {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}},
                                        0, false, false, false, false, false, false, true}),
                           BF16(GpuCase{"gqa",
                                        {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}},
                                        {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}},
                                        0, false, false, false, true}),
                           // f32 matmuls (FMAs on the CUDA cores): an epilogue with silu, the
                           // split-K partials and their combine, Σx² (rms), an after-loop ·B, a
                           // batched matmul, a linear layer over a batch of rows.
                           F32(GpuCase{"gated_mlp",
                                       {{"B", 8}, {"K", 1024}, {"N", 512}},
                                       {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}}),
                           F32(GpuCase{"gated_mlp_splitk",
                                       {{"B", 1}, {"K", 1024}, {"N", 512}},
                                       {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}}}),
                           F32(GpuCase{"rmsnorm_linear",
                                       {{"M", 2}, {"K", 1024}, {"N", 512}},
                                       {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           F32(GpuCase{"lora",
                                       {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}},
                                       {{"g", 8}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           F32(GpuCase{"bmm", {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}},
                                       {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}}),
                           F32(GpuCase{"linear3d", {{"B", 8}, {"M", 1}, {"K", 1024}, {"N", 512}},
                                       {{"b", 1}, {"g", 8}, {"F", 4}, {"T", 64}, {"S", 2}}}),
                           // Elementwise ops on the A fragments: silu (f16, bf16), exp(scale)
                           // beside Σx² of the raw tile, silu(G) ⊙ U of two tiles.
                           GpuCase{"prologue_silu", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           BF16(GpuCase{"prologue_silu", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           GpuCase{"prologue_exp_rms", {{"M", 24}, {"K", 512}, {"N", 256}},
                                   {{"g", 4}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           GpuCase{"prologue_swiglu", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           // RMSNorm's gain row broadcast over the A fragments (f16, bf16).
                           GpuCase{"prologue_gain", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           BF16(GpuCase{"prologue_gain", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           // The prologue on f32 tiles (FmaTilesF32Fn).
                           F32(GpuCase{"prologue_gain", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                       {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           F32(GpuCase{"prologue_swiglu", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                       {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           // A bias row (f16, bf16) and a residual added in the epilogue.
                           GpuCase{"epilogue_bias", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                   {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
                           BF16(GpuCase{"epilogue_bias", {{"M", 8}, {"K", 1024}, {"N", 512}},
                                        {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}}),
                           GpuCase{"epilogue_residual", {{"M", 24}, {"K", 512}, {"N", 256}},
                                   {{"g", 4}, {"F", 2}, {"T", 256}, {"S", 2}}},
                           // Matmul and elementwise library kernels (split_fixtures.h
                           // lib_<op>: X's dims x0, x1, ..., W's dims w0, w1, ...): matmul with
                           // odd M, K, N (a tail of 6 k; 7 and 17 rows), a batched X times a
                           // 2-D W (bf16), broadcast batch dims (f32), 256 x 512 x 384 (several
                           // tiles, whole k steps), whole k steps and a tail (bf16); rows at
                           // every shift of their 16-byte chunk: odd K and N with a k tail
                           // (PDL), 16 rows (bf16), one row, broadcast batch dims whose offsets
                           // are odd; add of [3, 1] and [1, 4], mul of [4, 1, 3] and [2, 1]
                           // (bf16), exp (bf16), scale by -0.7 over a grid-stride loop, div of
                           // equal shapes (f32), silu.
                           GpuCase{"lib_matmul", {{"x0", 7}, {"x1", 6}, {"w0", 6}, {"w1", 5}}, {}},
                           GpuCase{"lib_matmul", {{"x0", 17}, {"x1", 6}, {"w0", 6}, {"w1", 5}}, {}},
                           GpuCase{"lib_matmul", {{"x0", 8}, {"x1", 1001}, {"w0", 1001}, {"w1", 1003}}, {},
                                   0, false, false, false, false, true},
                           BF16(GpuCase{"lib_matmul", {{"x0", 16}, {"x1", 300}, {"w0", 300}, {"w1", 77}}, {}}),
                           GpuCase{"lib_matmul", {{"x0", 1}, {"x1", 2048}, {"w0", 2048}, {"w1", 333}}, {}},
                           GpuCase{"lib_matmul", {{"x0", 2}, {"x1", 1}, {"x2", 5}, {"x3", 37}, {"w0", 3}, {"w1", 37}, {"w2", 29}}, {}},
                           BF16(GpuCase{"lib_matmul", {{"x0", 3}, {"x1", 2}, {"x2", 6}, {"w0", 6}, {"w1", 1}}, {}}),
                           F32(GpuCase{"lib_matmul", {{"x0", 2}, {"x1", 1}, {"x2", 4}, {"x3", 8}, {"w0", 3}, {"w1", 8}, {"w2", 16}}, {}}),
                           GpuCase{"lib_matmul", {{"x0", 256}, {"x1", 512}, {"w0", 512}, {"w1", 384}}, {},
                                   0, false, false, false, false, true},
                           BF16(GpuCase{"lib_matmul", {{"x0", 100}, {"x1", 40}, {"w0", 40}, {"w1", 130}}, {}}),
                           // library_matmul_cluster_split: clusters of 2 (47 tiles, rows at
                           // odd shifts, bf16), 8 (16 tiles; 4 steps each), 8 over 6 broadcast
                           // batches, 5 of 5 steps over 2 x 3 tiles with an M tail (bf16), and
                           // 2 of 5 steps for one row (PDL).
                           LibSplit(BF16(GpuCase{"lib_matmul", {{"x0", 16}, {"x1", 5001}, {"w0", 5001}, {"w1", 3001}}, {}})),
                           LibSplit(GpuCase{"lib_matmul", {{"x0", 8}, {"x1", 1001}, {"w0", 1001}, {"w1", 1003}}, {}}),
                           LibSplit(GpuCase{"lib_matmul", {{"x0", 2}, {"x1", 1}, {"x2", 5}, {"x3", 2000}, {"w0", 3}, {"w1", 2000}, {"w2", 29}}, {}}),
                           LibSplit(BF16(GpuCase{"lib_matmul", {{"x0", 100}, {"x1", 800}, {"w0", 800}, {"w1", 130}}, {}})),
                           LibSplit(GpuCase{"lib_matmul", {{"x0", 1}, {"x1", 300}, {"w0", 300}, {"w1", 64}}, {},
                                            0, false, false, false, false, true}),
                           // Two blocks per SM: a non-portable cluster of 16 (16 tiles, 8
                           // steps each), 5 of 32 steps (47 tiles, bf16, PDL), and 2 over
                           // 100 tiles, which one block per SM leaves whole.
                           LibSplit2(GpuCase{"lib_matmul", {{"x0", 8}, {"x1", 4096}, {"w0", 4096}, {"w1", 1000}}, {}}, 16),
                           LibSplit2(BF16(GpuCase{"lib_matmul", {{"x0", 16}, {"x1", 5001}, {"w0", 5001}, {"w1", 3001}}, {},
                                                  0, false, false, false, false, true}), 5),
                           LibSplit2(GpuCase{"lib_matmul", {{"x0", 8}, {"x1", 4096}, {"w0", 4096}, {"w1", 6400}}, {}}, 2),
                           GpuCase{"lib_add", {{"x0", 3}, {"x1", 1}, {"w0", 1}, {"w1", 4}}, {}},
                           BF16(GpuCase{"lib_mul", {{"x0", 4}, {"x1", 1}, {"x2", 3}, {"w0", 2}, {"w1", 1}}, {}}),
                           BF16(GpuCase{"lib_exp", {{"x0", 5}, {"x1", 7}}, {}}),
                           GpuCase{"lib_scale", {{"x0", 1000}, {"x1", 333}}, {}},
                           F32(GpuCase{"lib_div", {{"x0", 6}, {"x1", 7}, {"w0", 6}, {"w1", 7}}, {},
                                       0, false, false, false, false, true}),
                           GpuCase{"lib_silu", {{"x0", 64}, {"x1", 96}}, {}},
                           // Concat library kernels (split_fixtures.h: X0's dims x0, x1, ...,
                           // the dim, the other parts' extents along it p1, p2, ...): the last
                           // dim in 16-byte vectors, inner extents 3 and 5 element by element,
                           // dim 0 (one row; odd), a rank-3 middle dim (bf16 vectors), three
                           // operands (f32 elements), f32 vectors with PDL, and grid-stride
                           // loops of several steps (528 blocks; vectors and elements).
                           GpuCase{"concat", {{"x0", 8}, {"x1", 4096}, {"dim", -1}, {"p1", 1024}}, {}},
                           GpuCase{"concat", {{"x0", 8}, {"x1", 3}, {"dim", 1}, {"p1", 5}}, {}},
                           GpuCase{"concat", {{"x0", 3}, {"x1", 7}, {"dim", 0}, {"p1", 5}}, {}},
                           BF16(GpuCase{"concat", {{"x0", 4}, {"x1", 6}, {"x2", 8}, {"dim", 1}, {"p1", 2}}, {}}),
                           BF16(GpuCase{"concat", {{"x0", 3}, {"x1", 5}, {"x2", 7}, {"dim", -2}, {"p1", 1}}, {}}),
                           F32(GpuCase{"concat", {{"x0", 2}, {"x1", 3}, {"dim", -1}, {"p1", 5}, {"p2", 1}}, {}}),
                           F32(GpuCase{"concat", {{"x0", 64}, {"x1", 96}, {"dim", 1}, {"p1", 32}}, {},
                                       0, false, false, false, false, true}),
                           GpuCase{"concat", {{"x0", 1024}, {"x1", 1024}, {"dim", 1}, {"p1", 512}, {"p2", 8}}, {}},
                           GpuCase{"concat", {{"x0", 1000}, {"x1", 333}, {"dim", 1}, {"p1", 211}}, {},
                                   0, false, false, false, false, true},
                           // Fibre-op library kernels (split_fixtures.h lib_<op>: X's dims x0,
                           // x1, ..., the dim): sum over dim 0, max over a middle dim, mean over
                           // dim -2, softmax over dim 0 and a middle dim, rms_norm over dim 1
                           // (eps 1e-5; rows and a middle dim), rows of sum and softmax (inner
                           // 1), rank 1; bf16 and f32; PDL; grids of several blocks.
                           GpuCase{"lib_sum", {{"x0", 64}, {"x1", 96}, {"dim", 0}}, {}},
                           BF16(GpuCase{"lib_sum", {{"x0", 64}, {"x1", 96}, {"dim", 0}}, {}}),
                           GpuCase{"lib_max", {{"x0", 4}, {"x1", 33}, {"x2", 16}, {"dim", 1}}, {}},
                           F32(GpuCase{"lib_max", {{"x0", 100}, {"dim", 0}}, {}}),
                           GpuCase{"lib_mean", {{"x0", 8}, {"x1", 100}, {"x2", 40}, {"dim", -2}}, {}},
                           F32(GpuCase{"lib_mean", {{"x0", 8}, {"x1", 100}, {"x2", 40}, {"dim", -2}}, {},
                                       0, false, false, false, false, true}),
                           GpuCase{"lib_softmax", {{"x0", 64}, {"x1", 96}, {"dim", 0}}, {}},
                           BF16(GpuCase{"lib_softmax", {{"x0", 2}, {"x1", 50}, {"x2", 300}, {"dim", 1}}, {}}),
                           F32(GpuCase{"lib_softmax", {{"x0", 4}, {"x1", 8}, {"x2", 2}, {"x3", 40}, {"dim", 2}}, {}}),
                           GpuCase{"lib_softmax", {{"x0", 1000}, {"x1", 77}, {"dim", -1}}, {},
                                   0, false, false, false, false, true},
                           GpuCase{"lib_rms_norm", {{"x0", 16}, {"x1", 4096}, {"dim", 1}}, {}},
                           BF16(GpuCase{"lib_rms_norm", {{"x0", 4}, {"x1", 512}, {"x2", 64}, {"dim", 1}}, {}}),
                           F32(GpuCase{"lib_rms_norm", {{"x0", 16}, {"x1", 4096}, {"dim", 1}}, {}}),
                           GpuCase{"lib_sum", {{"x0", 1000}, {"x1", 77}, {"dim", -1}}, {}},
                           // The cooperative layouts (library_gen.cc): column mode with long n
                           // (S 128, C 2, 16-byte units), row mode with 16-byte units, column
                           // mode bf16 with n 1000 (S 128), scalar column mode (V 1, C 16, S 16).
                           GpuCase{"lib_sum", {{"x0", 4096}, {"x1", 4096}, {"dim", 0}}, {}},
                           GpuCase{"lib_softmax", {{"x0", 16}, {"x1", 4096}, {"dim", 1}}, {}},
                           BF16(GpuCase{"lib_rms_norm", {{"x0", 8}, {"x1", 1000}, {"x2", 40}, {"dim", 1}}, {}}),
                           GpuCase{"lib_max", {{"x0", 2}, {"x1", 50}, {"x2", 300}, {"dim", 1}}, {}},
                           // 64 splits: the combine's running max (more than 32 iterations).
                           LargeScores(GpuCase{"gqa",
                                               {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 4096}},
                                               {{"gx", 2}, {"gy", 1}, {"gz", 64}, {"F", 1}, {"T", 128}, {"S", 1}},
                                               0, false, false, false, false, true})};
  // Per case: the instance, its code, inputs and the emulator's outputs.
  struct Run {
    std::string name;
    BlockProgram program;
    GeneratedCode code;
    std::vector<Tensor> inputs, expected;
  };
  std::vector<Run> runs;
  std::vector<std::string> sources;
  for (const GpuCase& c : cases) {
    SCOPED_TRACE(c.fixture);
    if ((c.cluster || c.wgmma || c.lib_split) && dev->sm() < 90) continue;  // clusters, wgmma: sm_90+
    // A fixtures.h fixture, else a split form of split_fixtures.h.
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         codegen_test::MakeAnyFixture(c.fixture, c.sizes, c.dtype));
    Run r;
    r.name = c.fixture;
    if (r.name == "concat" || absl::StartsWith(r.name, "lib_")) {
      for (const auto& [k, v] : c.sizes) absl::StrAppend(&r.name, " ", k, "=", v);
    }
    if (c.dtype != DType::kF16) absl::StrAppend(&r.name, " [", DTypeName(c.dtype), "]");
    ASSERT_OK_AND_ASSIGN(r.program, Instantiate(f.graph, c.assignment));
    CodegenOptions options;
    options.attention_tiles_per_warp = c.tiles_per_warp;
    options.attention_pipeline = c.pipeline;
    options.attention_lazy_rescale = c.lazy;
    options.attention_exp_f16x2 = c.exp16;
    options.cluster_combine = c.cluster;
    options.programmatic_dependent_launch = c.pdl;
    options.gemm_warps_along_n = c.warps_n;
    options.attention_wgmma = c.wgmma;
    options.gemm_defer_chained = c.defer;
    options.gemm_chained_b_smem = c.b_smem;
    options.attention_wgmma_late_loads = (c.wgmma_loop & 1) != 0;
    options.attention_wgmma_split_pv = (c.wgmma_loop & 2) != 0;
    options.library_matmul_cluster_split = c.lib_split;
    options.library_matmul_split_blocks_per_sm = c.lib_split_per_sm;
    if (c.lib_split) r.name += " [library_matmul_cluster_split]";
    if (c.lib_split_per_sm == 2) r.name += " [library_matmul_split_blocks_per_sm=2]";
    if (c.wgmma_loop & 1) r.name += " [late_loads]";
    if (c.wgmma_loop & 2) r.name += " [split_pv]";
    if (c.defer) r.name += " [gemm_defer_chained]";
    if (c.b_smem) r.name += " [gemm_chained_b_smem]";
    if (c.cluster) r.name += " [cluster_combine]";
    if (c.wgmma) r.name += " [attention_wgmma]";
    if (c.pdl) r.name += " [programmatic_dependent_launch]";
    if (*c.constant != '\0') {
      options.constant_inputs = absl::StrSplit(c.constant, ',');
      absl::StrAppend(&r.name, " [constant_inputs=", c.constant, "]");
    }
    ASSERT_OK_AND_ASSIGN(r.code, GenerateCuda(r.program, options));
    if (*c.constant != '\0') {
      EXPECT_THAT(r.code.source, ::testing::HasSubstr("  prism_dev::PdlWait();")) << r.name;
    }
    if (c.lib_split) {
      EXPECT_GT(r.code.launches[0].cluster[2], 1) << r.name << ": not split";
      if (c.lib_split_size > 0) {
        EXPECT_EQ(r.code.launches[0].cluster[2], c.lib_split_size) << r.name;
      }
    }
    r.inputs = RandomInputs(f.program, /*seed=*/7);
    if (c.k_scale != 1.0) {
      r.name += " [large scores]";
      for (size_t i = 0; i < f.program.inputs().size(); ++i) {
        if (f.program.node(f.program.inputs()[i]).name != c.scaled) continue;
        for (double& v : r.inputs[i].data) v *= c.k_scale;
      }
      // The regression this case guards: with exact-exp partials the emulator's (and the old
      // kernels') output is not finite here.
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> exact, Emulate(r.program, r.inputs));
      bool finite = true;
      for (double v : exact[0].data) finite &= std::isfinite(v);
      EXPECT_FALSE(finite) << r.name << ": scores too small to test the overflow";
      ASSERT_OK_AND_ASSIGN(r.expected, Evaluate(f.program, r.inputs, EvalMode::kF64));
    } else {
      ASSERT_OK_AND_ASSIGN(r.expected, Emulate(r.program, r.inputs));
    }
    sources.push_back(r.code.source);
    runs.push_back(std::move(r));
  }
  // NVRTC in a child: in this process it would break cuInit in the measuring child.
  ASSERT_OK_AND_ASSIGN(auto compiled,
                       runtime::CompileInChild(runtime::CompileCache(""), sources, dev->sm()));
  std::vector<std::string> cubins;
  for (size_t i = 0; i < runs.size(); ++i) {
    ASSERT_OK(compiled[i].status()) << runs[i].name;
    cubins.push_back(compiled[i]->cubin);
  }
  std::vector<runtime::MeasureJob> jobs;
  for (size_t i = 0; i < runs.size(); ++i) {
    jobs.push_back({&cubins[i], &runs[i].code.launches, &runs[i].program, &runs[i].inputs,
                    &runs[i].expected});
  }
  runtime::MeasureOptions mo;
  mo.replays = 3;  // correctness is the point here; the timing is incidental
  mo.warmup = 1;
  ASSERT_OK_AND_ASSIGN(std::vector<absl::StatusOr<runtime::Measurement>> measured,
                       runtime::MeasureAllInChild(dev->ordinal, jobs, {}, {}, mo));
  ASSERT_EQ(measured.size(), runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(runs[i].name);
    ASSERT_OK(measured[i].status());
    // Same f32 arithmetic in another summation order, then one f16 rounding: within a few f16
    // ulps of the emulator, on every output; NaN (an unwritten element) is infinite here.
    // bf16 keeps 3 fewer significand bits: 8 times the bound.
    const double bound = absl::StrContains(runs[i].name, "[bf16]") ? 1.6e-2 : 2e-3;
    EXPECT_LT(measured[i]->relative_error, bound) << runs[i].name << " (case " << i << ")";
    std::cout << runs[i].name << ": relative error vs "
              << (absl::StrContains(runs[i].name, "[large scores]") ? "the reference (f64) "
                                                                      : "emulator ")
              << measured[i]->relative_error << "\n";
  }
}

}  // namespace
}  // namespace prism::codegen
