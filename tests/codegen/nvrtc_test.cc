// NVRTC compilation of generated kernels for sm_80 and sm_90 (no GPU needed)
// and the resource audit against block_resources.h. Skipped when prism is built
// without CUDA.
#include "prism/codegen/nvrtc.h"

#include <initializer_list>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "split_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/codegen/audit.h"
#include "prism/codegen/codegen.h"
#include "testing/status_matchers.h"

namespace prism::codegen {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PtxasReportTest, Parses) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k_a' for 'sm_90'\n"
      "ptxas info    : Function properties for k_a\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 392 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k_b' for 'sm_90'\n"
      "ptxas info    : Function properties for k_b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 255 registers, 1024 bytes smem, 384 bytes "
      "cmem[0]\n";
  const std::vector<CompiledKernelInfo> k = ParsePtxasReport(log);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].function, "k_a");
  EXPECT_EQ(k[0].registers, 40);
  EXPECT_EQ(k[0].stack_frame_bytes, 8);
  EXPECT_EQ(k[0].spill_store_bytes, 4);
  EXPECT_EQ(k[0].spill_load_bytes, 12);
  EXPECT_EQ(k[0].static_smem_bytes, 0);
  EXPECT_EQ(k[1].function, "k_b");
  EXPECT_EQ(k[1].registers, 255);
  EXPECT_EQ(k[1].static_smem_bytes, 1024);
}

TEST(NvrtcTest, StubSaysUnavailable) {
  if (NvrtcAvailable()) GTEST_SKIP() << "built with NVRTC";
  EXPECT_THAT(CompileWithNvrtc("", 90),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("CUDA")));
}

struct AuditCase {
  const char* fixture;
  int batch;
  int g, f, t, s;
};

TEST(NvrtcAuditTest, CompilesForSm80AndSm90AndAudits) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  const AuditCase cases[] = {AuditCase{"rmsnorm_linear", 1, 192, 32, 128, 3},
                             AuditCase{"rmsnorm_linear", 8, 192, 32, 128, 3},
                             AuditCase{"rmsnorm_linear", 1, 384, 16, 128, 4},
                             AuditCase{"rmsnorm_linear", 8, 96, 32, 256, 3},
                             AuditCase{"rmsnorm_linear_square", 8, 192, 32, 128, 2},
                             AuditCase{"gated_mlp", 8, 128, 32, 128, 3},
                             // The variants fastest on the H200 (docs/codegen.md).
                             AuditCase{"rmsnorm_linear", 1, 96, 16, 256, 3},
                             AuditCase{"rmsnorm_linear", 8, 96, 16, 512, 3},
                             AuditCase{"gated_mlp", 1, 128, 16, 256, 3},
                             AuditCase{"gated_mlp", 8, 128, 16, 256, 3}};
  for (const AuditCase& c : cases) {
    SCOPED_TRACE(std::string(c.fixture) + " b=" + std::to_string(c.batch) +
                 " g=" + std::to_string(c.g));
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture fx,
        fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    Assignment a = {{"g", c.g}, {"F", c.f}, {"T", c.t}, {"S", c.s}};
    if (fx.graph.FindParam("h") != nullptr) a["h"] = 1;  // gated_mlp's row split
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, a));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    for (int sm : {80, 90}) {
      ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
      EXPECT_FALSE(r.cubin.empty());
      ASSERT_OK_AND_ASSIGN(std::vector<KernelAudit> audit, AuditResources(fx.graph, a, code, r));
      ASSERT_EQ(audit.size(), 1u);
      std::cout << c.fixture << " b=" << c.batch << " g=" << c.g << " F=" << c.f << " T=" << c.t
                << " S=" << c.s << ": " << FormatAudit(audit);
      const KernelAudit& k = audit[0];
      EXPECT_GT(k.compiled_regs, 0);
      EXPECT_LE(k.compiled_regs, 255);
      // Hard failures: the model's register lower bound violated, spills, or
      // over a limit. The smem difference (row padding) is expected and only
      // reported.
      EXPECT_GE(k.compiled_regs, k.model_regs_per_thread);
      EXPECT_EQ(k.spill_bytes, 0) << r.log;
      EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
      EXPECT_LE(k.generated_smem_bytes, MaxSmemPerBlock(sm));
      EXPECT_LE(k.compiled_regs * c.t, 65536);
    }
  }
}

// An instance of the gqa / qknorm_gqa fixtures' split-KV family.
Assignment AttentionAssignment(int64_t gx, int64_t gy, int64_t gz, int64_t f, int64_t t,
                               int64_t s) {
  return Assignment{{"gx", gx}, {"gy", gy}, {"gz", gz}, {"F", f}, {"T", t}, {"S", s}};
}

// "<fixture> b=<batch> gx=.. gy=.. gz=.. F=.. T=.. S=.." (a trace label).
std::string AttentionLabel(const char* fixture, int batch, const Assignment& a) {
  std::string label = std::string(fixture) + " b=" + std::to_string(batch);
  for (const char* k : {"gx", "gy", "gz", "F", "T", "S"}) {
    label += std::string(" ") + k + "=" + std::to_string(a.at(k));
  }
  return label;
}

// Split-KV attention: the attention template (partial_kv) and the pointwise combine.
struct AttentionAuditCase {
  const char* fixture;
  int batch;
  Assignment assignment;
  int tiles_per_warp = 0;  // CodegenOptions::attention_tiles_per_warp
  bool pipeline = false;   // CodegenOptions::attention_pipeline
  bool lazy = false;       // CodegenOptions::attention_lazy_rescale
  bool exp16 = false;      // CodegenOptions::attention_exp_f16x2
};

TEST(NvrtcAuditTest, SplitKvAttentionCompilesForSm80AndSm90AndAudits) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  const auto a = AttentionAssignment;
  const AttentionAuditCase cases[] = {
      {"gqa", 1, a(2, 2, 16, 4, 256, 2)},         {"gqa", 1, a(2, 4, 16, 4, 128, 2)},
      {"gqa", 1, a(2, 2, 32, 1, 512, 1)},         {"gqa", 8, a(16, 2, 4, 16, 256, 3)},
      {"gqa", 8, a(16, 4, 2, 16, 256, 3)},        {"gqa", 8, a(8, 2, 8, 8, 256, 2)},
      {"qknorm_gqa", 1, a(2, 2, 16, 4, 256, 2)},  {"qknorm_gqa", 1, a(1, 4, 16, 4, 128, 2)},
      {"qknorm_gqa", 8, a(16, 2, 4, 16, 256, 3)}, {"qknorm_gqa", 8, a(16, 4, 2, 16, 256, 3)},
      // The variants fastest on the H200 (docs/codegen.md, 2026-12-01).
      {"gqa", 1, a(2, 8, 8, 4, 128, 3)},          {"qknorm_gqa", 1, a(2, 4, 16, 2, 128, 3), 2},
      {"gqa", 8, a(16, 2, 4, 8, 256, 3), 2},      {"qknorm_gqa", 8, a(16, 2, 4, 8, 256, 3), 2},
      // Software-pipelined loop (attention_pipeline).
      {"gqa", 1, a(2, 4, 16, 4, 128, 4), 2, true}, {"qknorm_gqa", 8, a(16, 2, 4, 16, 256, 4), 0, true},
      // Lazy rescaling and f16x2 exp (Σ P on the tensor cores).
      {"gqa", 1, a(2, 8, 16, 4, 128, 3), 0, false, true, true},
      {"gqa", 8, a(16, 1, 8, 8, 256, 2), 0, false, true, true},
      {"qknorm_gqa", 8, a(16, 1, 8, 8, 256, 2), 0, false, true, true},
      {"qknorm_gqa", 1, a(2, 8, 16, 2, 128, 3), 0, true, false, true}};
  for (const AttentionAuditCase& c : cases) {
    std::string label = AttentionLabel(c.fixture, c.batch, c.assignment);
    if (c.tiles_per_warp != 0) label += " W=" + std::to_string(c.tiles_per_warp);
    if (c.pipeline) label += " pipelined";
    if (c.lazy) label += " lazy";
    if (c.exp16) label += " exp16";
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture fx,
        fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    CodegenOptions options;
    options.attention_tiles_per_warp = c.tiles_per_warp;
    options.attention_pipeline = c.pipeline;
    options.attention_lazy_rescale = c.lazy;
    options.attention_exp_f16x2 = c.exp16;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    for (int sm : {80, 90}) {
      ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
      EXPECT_FALSE(r.cubin.empty());
      ASSERT_OK_AND_ASSIGN(std::vector<KernelAudit> audit,
                           AuditResources(fx.graph, c.assignment, code, r));
      ASSERT_EQ(audit.size(), 2u);
      std::cout << label << ":\n" << FormatAudit(audit);
      for (size_t i = 0; i < audit.size(); ++i) {
        const KernelAudit& k = audit[i];
        EXPECT_GT(k.compiled_regs, 0);
        EXPECT_LE(k.compiled_regs, 255);
        // The model's register bound assumes every accumulator element is register-resident;
        // the combine kernel (pointwise template) streams its elements, so the bound is checked
        // for partial_kv only (the mismatch is reported for combine).
        if (i == 0) {
          EXPECT_GE(k.compiled_regs, k.model_regs_per_thread);
          EXPECT_GE(k.compiled_regs, k.accumulator_regs);
        }
        EXPECT_EQ(k.spill_bytes, 0) << r.log;
        EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
        EXPECT_LE(k.generated_smem_bytes, MaxSmemPerBlock(sm));
        EXPECT_LE(k.compiled_regs * c.assignment.at("T"), 65536);
      }
    }
  }
}

// attention_wgmma at WORKLOADS.md sizes: compiles for sm_90 (NVRTC's sm_90a) without spills
// and within the occupancy the kernel asks for (two blocks of 256 threads: 128 registers); for
// sm_80 the source's #error names the kernel and the architecture it needs.
TEST(NvrtcAuditTest, AttentionWgmmaCompilesForSm90a) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    const char* fixture;
    int batch;
    Assignment assignment;
    int64_t max_regs;
    bool lazy = false;  // CodegenOptions::attention_lazy_rescale
    // The loop options: 1 attention_wgmma_late_loads, 2 attention_wgmma_split_pv.
    int loop = 0;
  };
  const auto a = AttentionAssignment;
  const Case cases[] = {
      {"gqa", 8, a(16, 2, 8, 8, 256, 2), 128},
      {"qknorm_gqa", 8, a(16, 2, 8, 8, 256, 3), 128},
      {"gqa", 8, a(16, 2, 4, 8, 256, 3), 255},  // m64n128k16 scores
      {"qknorm_gqa", 1, a(2, 4, 16, 2, 128, 4), 255},
      {"gqa", 8, a(16, 2, 8, 8, 256, 2), 128, true},
      // The H200 selections (two blocks of 128 threads per SM) with the loop options.
      {"gqa", 8, a(16, 4, 4, 8, 128, 2), 255, false, 1},
      {"gqa", 8, a(16, 4, 4, 8, 128, 2), 255, false, 2},
      {"qknorm_gqa", 8, a(16, 4, 4, 8, 128, 2), 255, false, 3},
      {"gqa", 1, a(2, 4, 16, 2, 128, 4), 255, false, 3},
      {"qknorm_gqa", 1, a(2, 4, 16, 2, 128, 4), 255, false, 2},
      // Two warpgroups (two heads' tiles) and 64-column halves of the chunk.
      {"gqa", 8, a(16, 2, 8, 8, 256, 2), 128, false, 3},
  };
  for (const Case& c : cases) {
    std::string label = AttentionLabel(c.fixture, c.batch, c.assignment);
    if (c.lazy) label += " lazy";
    if (c.loop & 1) label += " late_loads";
    if (c.loop & 2) label += " split_pv";
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture fx,
        fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    CodegenOptions options;
    options.attention_wgmma = true;
    options.attention_lazy_rescale = c.lazy;
    options.attention_wgmma_late_loads = (c.loop & 1) != 0;
    options.attention_wgmma_split_pv = (c.loop & 2) != 0;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, 90));
    EXPECT_FALSE(r.cubin.empty());
    ASSERT_OK_AND_ASSIGN(std::vector<KernelAudit> audit,
                         AuditResources(fx.graph, c.assignment, code, r));
    ASSERT_EQ(audit.size(), 2u);
    std::cout << label << " [attention_wgmma]:\n" << FormatAudit(audit);
    EXPECT_LE(audit[0].compiled_regs, c.max_regs);
    for (const KernelAudit& k : audit) {
      EXPECT_EQ(k.spill_bytes, 0) << r.log;
      EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
      EXPECT_LE(k.generated_smem_bytes, MaxSmemPerBlock(90));
    }
    EXPECT_THAT(CompileWithNvrtc(code.source, 80),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("prism_" + std::string(c.fixture) +
                                   "_partial_kv: attention_wgmma kernels need sm_90a (wgmma)")));
  }
}

// lora (after-loop matmul, loop-invariant B) and ntrans (rms in the pointwise template) at
// WORKLOADS.md sizes: compile for sm_80 and sm_90, no spills, within the register file.
TEST(NvrtcAuditTest, LoraAndNtransCompileForSm80AndSm90) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    const char* fixture;
    int batch;
    Assignment assignment;
  };
  const Case cases[] = {
      {"lora", 1, {{"g", 64}, {"F", 8}, {"T", 64}, {"S", 1}}},
      {"lora", 1, {{"g", 64}, {"F", 16}, {"T", 256}, {"S", 3}}},
      {"lora", 8, {{"g", 128}, {"F", 16}, {"T", 128}, {"S", 3}}},
      {"lora", 8, {{"g", 32}, {"F", 32}, {"T", 512}, {"S", 2}}},
      {"ntrans", 1, {{"g", 1}, {"T", 512}}},
      {"ntrans", 8, {{"g", 8}, {"T", 256}}},
      {"ntrans", 8, {{"g", 1}, {"T", 512}}},
  };
  for (const Case& c : cases) {
    std::string label = std::string(c.fixture) + " b=" + std::to_string(c.batch);
    for (const auto& [k, v] : c.assignment) label += " " + k + "=" + std::to_string(v);
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(
        fixtures::Fixture fx,
        fixtures::MakeFixture(c.fixture, fixtures::WorkloadSizes(c.fixture, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    for (int sm : {80, 90}) {
      ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
      EXPECT_FALSE(r.cubin.empty());
      ASSERT_OK_AND_ASSIGN(std::vector<KernelAudit> audit,
                           AuditResources(fx.graph, c.assignment, code, r));
      ASSERT_EQ(audit.size(), 1u);
      std::cout << label << " sm_" << sm << ":\n" << FormatAudit(audit);
      const KernelAudit& k = audit[0];
      EXPECT_GT(k.compiled_regs, 0);
      EXPECT_LE(k.compiled_regs, 255);
      EXPECT_GE(k.compiled_regs, k.accumulator_regs);
      EXPECT_EQ(k.spill_bytes, 0) << r.log;
      EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
      EXPECT_LE(k.generated_smem_bytes, MaxSmemPerBlock(sm));
      EXPECT_LE(k.compiled_regs * c.assignment.at("T"), 65536);
    }
  }
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// Split-K gated_mlp and lora (split_fixtures.h) at WORKLOADS.md sizes: both kernels compile for sm_80
// and sm_90 without spills.
TEST(NvrtcAuditTest, SplitKGemmCompilesForSm80AndSm90) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    const char* fixture;
    int batch;
    Assignment assignment;
    bool along_n = false;  // gemm_warps_along_n: all warps along N, fragments stored directly
    bool b_smem = false;   // gemm_defer_chained + gemm_chained_b_smem
  };
  const Case cases[] = {
      {"gated_mlp_splitk", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}}},
      {"gated_mlp_splitk", 1, {{"g", 64}, {"s", 16}, {"F", 1}, {"T", 64}, {"S", 1}}},
      {"gated_mlp_splitk", 8, {{"g", 64}, {"s", 4}, {"F", 8}, {"T", 128}, {"S", 3}}},
      {"gated_mlp_splitk", 8, {{"g", 64}, {"s", 16}, {"F", 2}, {"T", 256}, {"S", 2}}},
      {"lora_splitk", 1, {{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}}},
      {"lora_splitk", 8, {{"g", 64}, {"s", 4}, {"F", 8}, {"T", 256}, {"S", 2}}},
      // One block per SM: 32 column blocks of 192 x 4 K chunks (6144 = 96 · 64 gives 96).
      {"rmsnorm_linear_split", 1, {{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 4}}},
      {"rmsnorm_linear_split", 8, {{"g", 16}, {"s", 8}, {"F", 16}, {"T", 256}, {"S", 4}}},
      // The H200's selections of 2026-12-02 (docs/performance.md): direct stores of the
      // partials, Σx² and the chained (X·A)·B among them.
      {"lora_splitk", 1, {{"g", 16}, {"s", 8}, {"F", 8}, {"T", 128}, {"S", 3}}, true},
      {"gated_mlp_splitk", 1, {{"g", 64}, {"s", 4}, {"F", 32}, {"T", 128}, {"S", 4}}, true},
      {"rmsnorm_linear_split", 8, {{"g", 32}, {"s", 4}, {"F", 16}, {"T", 128}, {"S", 4}}, true},
      // lora's split with X·A a side matmul and ·B in the pointwise combine.
      {"lora_split_xa", 1, {{"g", 16}, {"s", 8}, {"F", 8}, {"T", 128}, {"S", 3}}, true},
      {"lora_split_xa", 8, {{"g", 16}, {"s", 8}, {"F", 16}, {"T", 256}, {"S", 4}}},
      // The selections of 2026-12-04 with ·B's tile in shared memory (6 stages, +8,448 B).
      {"lora_splitk", 1, {{"g", 16}, {"s", 8}, {"F", 8}, {"T", 128}, {"S", 6}}, true, true},
      {"lora_splitk", 8, {{"g", 16}, {"s", 8}, {"F", 16}, {"T", 256}, {"S", 6}}, false, true},
  };
  for (const Case& c : cases) {
    std::string label = std::string(c.fixture) + " b=" + std::to_string(c.batch);
    for (const auto& [k, v] : c.assignment) label += " " + k + "=" + std::to_string(v);
    SCOPED_TRACE(label);
    const std::string fixture = c.fixture;
    const char* workload = fixture.starts_with("lora")         ? "lora"
                           : fixture == "rmsnorm_linear_split" ? "rmsnorm_linear"
                                                               : "gated_mlp";
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture fx,
                         codegen_test::MakeSplitFixture(
                             c.fixture, fixtures::WorkloadSizes(workload, c.batch)));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    CodegenOptions options;
    options.gemm_warps_along_n = c.along_n;
    options.gemm_defer_chained = options.gemm_chained_b_smem = c.b_smem;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    ASSERT_EQ(code.launches.size(), 2u);
    EXPECT_LE(code.launches[0].dynamic_smem_bytes, MaxSmemPerBlock(90));
    EXPECT_EQ(code.source.find("fragments stored directly") != std::string::npos, c.along_n);
    for (int sm : {80, 90}) {
      ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
      EXPECT_FALSE(r.cubin.empty());
      ASSERT_EQ(r.kernels.size(), 2u) << r.log;
      for (const CompiledKernelInfo& k : r.kernels) {
        std::cout << label << " sm_" << sm << " " << k.function << ": " << k.registers
                  << " registers, " << k.spill_store_bytes << " B spill stores\n";
        EXPECT_GT(k.registers, 0);
        EXPECT_LE(k.registers, 255);
        EXPECT_EQ(k.spill_store_bytes, 0) << r.log;
        EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
      }
    }
  }
}

// lora's split-K program (split_fixtures.h lora_splitk) at batch 1, instantiated at `a`.
absl::StatusOr<BlockProgram> LoraSplitB1(const Assignment& a) {
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture split,
                         codegen_test::MakeSplitFixture("lora_splitk",
                                                        fixtures::WorkloadSizes("lora", 1)));
  return Instantiate(split.graph, a);
}

// The launch options' device code: programmatic dependent launch compiles for both
// architectures (a no-op below sm_90); a folded combine kernel (thread block clusters) for
// sm_90, and sm_80 is refused by the kernel's own #error.
TEST(NvrtcAuditTest, LaunchOptionsCompile) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  ASSERT_OK_AND_ASSIGN(BlockProgram lora, LoraSplitB1({{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}}));
  CodegenOptions pdl;
  pdl.programmatic_dependent_launch = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode pdl_code, GenerateCuda(lora, pdl));
  for (int sm : {80, 90}) {
    SCOPED_TRACE(sm);
    ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(pdl_code.source, sm));
    EXPECT_EQ(r.kernels.size(), 2u) << r.log;
  }
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture gqa,
                       fixtures::MakeFixture("gqa", fixtures::WorkloadSizes("gqa", 1)));
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(gqa.graph, {{"gx", 2}, {"gy", 4}, {"gz", 16},
                                                               {"F", 2}, {"T", 128}, {"S", 2}}));
  // Folded combine kernels: split-KV attention (clusters along z) and lora's split-K GEMM
  // (along y), each one spill-free kernel for sm_90 and refused for sm_80 by its #error.
  CodegenOptions cluster;
  cluster.cluster_combine = true;
  const std::pair<const BlockProgram*, const char*> folded[] = {
      {&p, "prism_gqa_partial_kv"}, {&lora, "prism_lora_splitk_k0"}};
  for (const auto& [program, function] : folded) {
    SCOPED_TRACE(function);
    ASSERT_OK_AND_ASSIGN(GeneratedCode fused, GenerateCuda(*program, cluster));
    ASSERT_OK_AND_ASSIGN(NvrtcResult r90, CompileWithNvrtc(fused.source, 90));
    ASSERT_EQ(r90.kernels.size(), 1u) << r90.log;
    EXPECT_EQ(r90.kernels[0].spill_store_bytes, 0) << r90.log;
    EXPECT_THAT(CompileWithNvrtc(fused.source, 80),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat(function, ": cluster_combine kernels need sm_90 or "
                                                          "newer (thread block clusters)"))));
  }
}

}  // namespace
}  // namespace prism::codegen

namespace prism::codegen {
namespace {

// Compiles `code` with NVRTC for each of `sms`: one compiled kernel per launch, each within the
// register file at its block size, without spills or a stack frame (printed with `label`).
void ExpectCompilesWithoutSpills(const std::string& label, const GeneratedCode& code,
                                 std::initializer_list<int> sms) {
  for (int sm : sms) {
    ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
    ASSERT_EQ(r.kernels.size(), code.launches.size()) << r.log;
    for (const CompiledKernelInfo& k : r.kernels) {
      std::cout << label << " sm_" << sm << " " << k.function << ": " << k.registers
                << " registers, " << k.static_smem_bytes << " B static shared memory\n";
      EXPECT_GT(k.registers, 0);
      for (const LaunchConfig& l : code.launches) {
        if (l.function == k.function) {
          EXPECT_LE(k.registers * l.threads, 65536);
        }
      }
      EXPECT_EQ(k.spill_store_bytes, 0) << r.log;
      EXPECT_EQ(k.stack_frame_bytes, 0) << r.log;
    }
  }
}

// The constant inputs' early loads (CodegenOptions::constant_inputs) with programmatic
// dependent launch: lora's split-K program with W, A and B declared, also with B's tile in
// shared memory (its 2026-12-04 selection's form) and with the combine folded into clusters,
// compiles spill-free (the folded form for sm_90 only).
TEST(NvrtcAuditTest, ConstantInputsEarlyLoadsCompile) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  ASSERT_OK_AND_ASSIGN(BlockProgram lora, LoraSplitB1({{"g", 32}, {"s", 8}, {"F", 4}, {"T", 128}, {"S", 3}}));
  ASSERT_OK_AND_ASSIGN(BlockProgram lora6, LoraSplitB1({{"g", 16}, {"s", 8}, {"F", 8}, {"T", 128}, {"S", 6}}));
  CodegenOptions early;
  early.programmatic_dependent_launch = true;
  early.constant_inputs = {"W", "A", "B"};
  ASSERT_OK_AND_ASSIGN(GeneratedCode plain_early, GenerateCuda(lora, early));
  CodegenOptions b_smem = early;
  b_smem.gemm_warps_along_n = b_smem.gemm_defer_chained = b_smem.gemm_chained_b_smem = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode smem_early, GenerateCuda(lora6, b_smem));
  CodegenOptions folded = early;
  folded.cluster_combine = true;
  ASSERT_OK_AND_ASSIGN(GeneratedCode folded_early, GenerateCuda(lora, folded));
  for (const GeneratedCode* code : {&plain_early, &smem_early, &folded_early}) {
    EXPECT_THAT(code->source, HasSubstr("  prism_dev::PdlWait();"));
  }
  ExpectCompilesWithoutSpills("lora constant W,A,B", plain_early, {80, 90});
  ExpectCompilesWithoutSpills("lora constant W,A,B, B in shared memory", smem_early, {80, 90});
  ExpectCompilesWithoutSpills("lora constant W,A,B, folded combine", folded_early, {90});
}

// Row reductions (split_fixtures.h: row_softmax, row_stats) compile for sm_80 and sm_90 without
// spills, in each form: one row per block in registers with 16-byte loads, several rows in
// registers, and re-read per pass with the per-row stores; so do batched matmuls on their
// rank-2 view (bmm, linear3d) and attention with scaled scores (gqa_scaled).
TEST(NvrtcAuditTest, RowReductionsAndBatchedMatmulsCompile) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    const char* fixture;
    fixtures::Sizes sizes;
    Assignment assignment;
  };
  const Case cases[] = {
      {"row_softmax", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}},
      {"row_softmax", {{"B", 256}, {"D", 1024}}, {{"g", 128}, {"T", 64}}},
      {"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
      {"row_stats", {{"B", 16}, {"D", 1024}}, {{"g", 4}, {"T", 128}}},
      {"row_stats", {{"B", 6}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
      {"bmm", {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}}, {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}},
      {"bmm", {{"B", 32}, {"M", 16}, {"K", 1024}, {"N", 64}}, {{"b", 32}, {"g", 1}, {"F", 8}, {"T", 256}, {"S", 4}}},
      {"linear3d", {{"B", 8}, {"M", 1}, {"K", 4096}, {"N", 4096}}, {{"b", 1}, {"g", 64}, {"F", 16}, {"T", 64}, {"S", 4}}},
      {"linear3d_m", {{"B", 4}, {"M", 128}, {"K", 1024}, {"N", 128}}, {{"b", 4}, {"g", 4}, {"F", 8}, {"T", 256}, {"S", 3}}},
      {"gqa_scaled", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}}, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 4}, {"T", 128}, {"S", 3}}},
  };
  for (const Case& c : cases) {
    std::string label = c.fixture;
    for (const auto& [k, v] : c.sizes) label += " " + k + "=" + std::to_string(v);
    for (const auto& [k, v] : c.assignment) label += " " + k + "=" + std::to_string(v);
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture fx, codegen_test::MakeSplitFixture(c.fixture, c.sizes));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p));
    ExpectCompilesWithoutSpills(label, code, {80, 90});
  }
}

// Every template on bf16 inputs, the GEMM template on f32 inputs (split_fixtures.h
// WithDType) and with unary ops on its A fragments (the cases of codegen_test's
// BF16InputsUseTheBF16Spellings, F32Matmuls and PrologueOnTheAFragments and of gpu_run_test):
// compile for sm_80 and sm_90 (wgmma and clusters: sm_90 only), without spills.
TEST(NvrtcAuditTest, BF16F32AndPrologueKernelsCompile) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    const char* fixture;
    fixtures::Sizes sizes;
    Assignment assignment;
    DType dtype = DType::kBF16;
    bool wgmma = false, cluster = false, defer = false;
  };
  const fixtures::Sizes att = {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 1024}};
  const fixtures::Sizes lora = {{"B", 8}, {"K", 1024}, {"N", 512}, {"R", 16}};
  const fixtures::Sizes rms = {{"M", 2}, {"K", 1024}, {"N", 512}};
  const fixtures::Sizes mlp8 = {{"B", 8}, {"K", 1024}, {"N", 512}};
  const fixtures::Sizes mlp1 = {{"B", 1}, {"K", 1024}, {"N", 512}};
  const Assignment split = {{"g", 16}, {"s", 8}, {"F", 1}, {"T", 64}, {"S", 1}};
  const fixtures::Sizes prologue = {{"M", 8}, {"K", 1024}, {"N", 512}};
  constexpr DType kF32 = DType::kF32, kBF16 = DType::kBF16;
  const Case cases[] = {
      {"rmsnorm_linear", rms, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
      {"lora", lora, {{"g", 8}, {"F", 4}, {"T", 128}, {"S", 2}}},
      {"lora_splitk", lora, {{"g", 8}, {"s", 4}, {"F", 2}, {"T", 128}, {"S", 3}}, kBF16, false,
       false, true},
      {"gated_mlp_splitk", mlp1, split},
      {"ntrans", {{"B", 8}, {"D", 4096}}, {{"g", 8}, {"T", 512}}},
      {"row_softmax", {{"B", 8}, {"D", 100}}, {{"g", 2}, {"T", 64}}},
      {"gqa", att, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}}},
      {"qknorm_gqa", att, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}},
      {"qknorm_gqa", att, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}, kBF16,
       true},
      {"gqa", att, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 3}}, kBF16, false,
       true},
      {"qknorm_gqa", att, {{"gx", 2}, {"gy", 1}, {"gz", 4}, {"F", 2}, {"T", 128}, {"S", 2}}, kBF16,
       true, true},
      {"gated_mlp", mlp8, {{"g", 16}, {"h", 1}, {"F", 8}, {"T", 256}, {"S", 3}}, kF32},
      {"gated_mlp_splitk", mlp1, split, kF32},
      {"rmsnorm_linear", rms, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, kF32},
      {"lora", lora, {{"g", 8}, {"F", 8}, {"T", 128}, {"S", 3}}, kF32},
      {"bmm", {{"B", 8}, {"M", 64}, {"K", 256}, {"N", 128}},
       {{"b", 8}, {"g", 2}, {"F", 4}, {"T", 128}, {"S", 3}}, kF32},
      {"linear3d", {{"B", 8}, {"M", 1}, {"K", 1024}, {"N", 512}},
       {{"b", 1}, {"g", 8}, {"F", 4}, {"T", 64}, {"S", 2}}, kF32},
      // Unary ops on the A fragments (codegen_test's PrologueOnTheAFragments).
      {"prologue_silu", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
      {"prologue_silu", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
      {"prologue_exp_rms", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
      {"prologue_swiglu", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
      {"prologue_swiglu", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
      {"prologue_gain", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
      {"prologue_gain", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
      // The same prologues on f32 tiles (FmaTilesF32Fn).
      {"prologue_gain", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, kF32},
      {"prologue_swiglu", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, kF32},
      // A bias row and a residual added in the epilogue (codegen_test's
      // InvariantInputsInTheEpilogue).
      {"epilogue_bias", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
      {"epilogue_bias", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}},
      {"epilogue_residual", prologue, {{"g", 16}, {"F", 8}, {"T", 128}, {"S", 3}}, DType::kF16},
  };
  for (const Case& c : cases) {
    std::string label = absl::StrCat(c.fixture, " ", DTypeName(c.dtype));
    for (const auto& [k, v] : c.assignment) label += " " + k + "=" + std::to_string(v);
    if (c.wgmma) label += " [attention_wgmma]";
    if (c.cluster) label += " [cluster_combine]";
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture fx,
                         codegen_test::MakeAnyFixture(c.fixture, c.sizes, c.dtype));
    ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, c.assignment));
    CodegenOptions options;
    options.attention_wgmma = c.wgmma;
    options.cluster_combine = c.cluster;
    options.gemm_defer_chained = options.gemm_chained_b_smem = c.defer;
    ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
    if (c.wgmma || c.cluster) {
      ExpectCompilesWithoutSpills(label, code, {90});
    } else {
      ExpectCompilesWithoutSpills(label, code, {80, 90});
    }
  }
}

// A one-library-kernel fixture (split_fixtures.h) generated with or without programmatic
// dependent launch: compiles for sm_80 and sm_90 without spills, and its audit has one kernel
// named `function` whose shared memory is the static buffer the generator declares
// (LaunchConfig::reduction_bytes: a fibre kernel's combine buffer, 0 for concat) and no mismatch.
void ExpectLibraryKernelCompilesAndAudits(const std::string& label, const fixtures::Fixture& fx,
                                          bool pdl, const std::string& function) {
  ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(fx.graph, {}));
  CodegenOptions options;
  options.programmatic_dependent_launch = pdl;
  ASSERT_OK_AND_ASSIGN(GeneratedCode code, GenerateCuda(p, options));
  ExpectCompilesWithoutSpills(label, code, {80, 90});
  for (int sm : {80, 90}) {
    ASSERT_OK_AND_ASSIGN(NvrtcResult r, CompileWithNvrtc(code.source, sm));
    ASSERT_OK_AND_ASSIGN(std::vector<KernelAudit> audit, AuditResources(fx.graph, {}, code, r));
    std::cout << label << ": " << FormatAudit(audit);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].function, function);
    EXPECT_EQ(audit[0].model_smem_bytes, code.launches[0].reduction_bytes);
    EXPECT_EQ(audit[0].generated_smem_bytes, code.launches[0].reduction_bytes);
    EXPECT_EQ(code.launches[0].dynamic_smem_bytes, 0);
    EXPECT_THAT(audit[0].mismatches, ::testing::IsEmpty()) << r.log;
  }
}

// Concat library kernels (split_fixtures.h MakeConcatFixture; library_gen.cc) compile for sm_80
// and sm_90, with and without programmatic dependent launch, and pass the resource audit
// without a mismatch: no shared memory (a library kernel's model has none), no spills.
TEST(NvrtcAuditTest, ConcatLibraryKernelsCompileAndAudit) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    std::vector<Shape> parts;
    int64_t dim;
    DType dtype;
    bool pdl = false;
  };
  const Case cases[] = {
      {{{8, 4096}, {8, 1024}}, -1, DType::kF16},             // 16-byte vectors, rows
      {{{8, 3}, {8, 5}}, 1, DType::kF16, true},              // elements, rows
      {{{3, 7}, {5, 7}}, 0, DType::kBF16},                   // elements, one row
      {{{4, 6, 8}, {4, 2, 8}}, 1, DType::kBF16, true},       // vectors, rank 3
      {{{2, 64}, {6, 64}, {1, 64}}, 0, DType::kF32},         // vectors, one row, three operands
      {{{2, 3, 4, 5}, {2, 3, 1, 5}}, 2, DType::kF32},        // elements, rank 4
      {{{4096, 8192}, {4096, 8192}}, 1, DType::kF16, true},  // a capped grid
  };
  for (const Case& c : cases) {
    std::string label = absl::StrCat("concat ", DTypeName(c.dtype), " dim ", c.dim);
    for (const Shape& s : c.parts) label += " [" + absl::StrJoin(s, ", ") + "]";
    if (c.pdl) label += " [programmatic_dependent_launch]";
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture fx,
                         codegen_test::MakeConcatFixture(c.parts, c.dim, c.dtype));
    ExpectLibraryKernelCompilesAndAudits(label, fx, c.pdl, "prism_concat_k0");
  }
}

// Fibre-op library kernels (sum, max, mean, softmax, rms_norm over any dim; split_fixtures.h
// MakeLibraryReduceFixture; library_gen.cc) compile for sm_80 and sm_90, with and without
// programmatic dependent launch, and pass the resource audit without a mismatch: the static
// combine buffer of column mode as declared, no dynamic shared memory, no spills.
TEST(NvrtcAuditTest, FibreLibraryKernelsCompileAndAudit) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "prism built without CUDA";
  struct Case {
    OpKind op;
    Shape shape;
    int64_t dim;
    DType dtype;
    bool pdl = false;
  };
  const Case cases[] = {
      {OpKind::kSum, {64, 96}, 0, DType::kF16},                 // columns (outer 1)
      {OpKind::kMax, {4, 33, 16}, 1, DType::kBF16, true},       // a middle dim
      {OpKind::kMean, {8, 100, 40}, -2, DType::kF32},           // a middle dim
      {OpKind::kSum, {1000, 77}, -1, DType::kBF16},             // rows (inner 1)
      {OpKind::kSoftmax, {64, 96}, 0, DType::kF16},             // columns
      {OpKind::kSoftmax, {2, 50, 300}, 1, DType::kBF16, true},  // a middle dim
      {OpKind::kSoftmax, {8, 4096}, -1, DType::kF32},           // rows
      {OpKind::kRmsNorm, {16, 4096}, 1, DType::kF16},           // rows
      {OpKind::kRmsNorm, {4, 512, 64}, 1, DType::kF32, true},   // a middle dim
      {OpKind::kMax, {100}, 0, DType::kF16},                    // rank 1
      {OpKind::kSum, {64, 4096}, 0, DType::kF16},               // columns, short n
      {OpKind::kSum, {4096, 4096}, 0, DType::kF16},             // columns, long n
      {OpKind::kSoftmax, {16, 4096}, 1, DType::kF16, true},     // rows, 16-byte units
      {OpKind::kRmsNorm, {8, 1000, 40}, 1, DType::kBF16},       // columns, 16-byte units
      {OpKind::kMax, {2, 50, 300}, 1, DType::kF16},             // scalar columns
      {OpKind::kMean, {7, 1, 3}, 1, DType::kF16},               // extent 1: S = 1, no smem
      {OpKind::kSum, {4096, 2}, 0, DType::kF32},                // two fibres
      {OpKind::kSum, {2147483647}, 0, DType::kF16},             // 2^31 - 1 elements
      {OpKind::kSoftmax, {65536, 32767}, 0, DType::kBF16},      // 2^31 - 65536 elements
  };
  for (const Case& c : cases) {
    const std::string op(GetOpInfo(c.op).name);
    std::string label = absl::StrCat(op, " ", DTypeName(c.dtype), " [",
                                     absl::StrJoin(c.shape, ", "), "] dim ", c.dim);
    if (c.pdl) label += " [programmatic_dependent_launch]";
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture fx,
                         codegen_test::MakeLibraryReduceFixture(c.op, c.shape, c.dim, c.dtype));
    ExpectLibraryKernelCompilesAndAudits(label, fx, c.pdl, absl::StrCat("prism_", op, "_k0"));
  }
}

}  // namespace
}  // namespace prism::codegen
