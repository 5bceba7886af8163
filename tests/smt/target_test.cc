// Tests of smt/target.h: every shipped hardware theory loads, its values match the
// architecture tables, every constant cites a source, the dominance ceilings are above the
// measured H200 figures, and malformed files are rejected with precise messages.
#include "prism/smt/target.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/status_matchers.h"

namespace prism {
namespace {

using ::prism::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TargetTest, ListsTheShippedTargets) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, ListTargets());
  EXPECT_THAT(names, ElementsAre("a100_80gb", "h100_sxm", "h200", "l40s", "rtx4090"));
}

TEST(TargetTest, UnknownTargetNamesTheKnownOnes) {
  EXPECT_THAT(LoadTarget("foo"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown target 'foo'; known targets: a100_80gb, h100_sxm, h200, l40s, "
                       "rtx4090"));
  EXPECT_THAT(LoadTarget("../hardware/h200"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown target")));
}

TEST(TargetTest, ArchitectureTable) {
  struct Row {
    const char* name;
    int64_t cc, sms, smem_optin, smem_sm, threads_sm, blocks_sm, l2;
  };
  // CUDA C++ Programming Guide compute-capability tables and vendor datasheets.
  const std::vector<Row> rows = {
      {"h200", 90, 132, 232448, 233472, 2048, 32, 62914560},
      {"h100_sxm", 90, 132, 232448, 233472, 2048, 32, 52428800},
      {"a100_80gb", 80, 108, 166912, 167936, 2048, 32, 41943040},
      {"l40s", 89, 142, 101376, 102400, 1536, 24, 100663296},
      {"rtx4090", 89, 128, 101376, 102400, 1536, 24, 75497472},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    ASSERT_OK_AND_ASSIGN(Target t, LoadTarget(r.name));
    EXPECT_EQ(t.name, r.name);
    EXPECT_FALSE(t.display_name.empty());
    EXPECT_EQ(t.compute_capability, r.cc);
    EXPECT_EQ(t.sms, r.sms);
    EXPECT_EQ(t.smem_per_block, 49152);
    EXPECT_EQ(t.smem_per_block_optin, r.smem_optin);
    EXPECT_EQ(t.smem_per_sm, r.smem_sm);
    // The opt-in maximum is the per-SM capacity minus the 1 KiB system reservation.
    EXPECT_EQ(t.smem_per_block_optin + t.smem_reserved_per_block, t.smem_per_sm);
    EXPECT_EQ(t.regs_per_sm, 65536);
    EXPECT_EQ(t.regs_per_block, 65536);
    EXPECT_EQ(t.regs_per_thread, 255);
    EXPECT_EQ(t.reg_alloc_unit, 256);
    EXPECT_EQ(t.warp_size, 32);
    EXPECT_EQ(t.threads_per_block, 1024);
    EXPECT_EQ(t.threads_per_sm, r.threads_sm);
    EXPECT_EQ(t.blocks_per_sm, r.blocks_sm);
    EXPECT_EQ(t.max_grid_x, 2147483647);
    EXPECT_EQ(t.max_grid_y, 65535);
    EXPECT_EQ(t.max_grid_z, 65535);
    EXPECT_EQ(t.l2_bytes, r.l2);
    // Ceilings are positive and consistent: one SM cannot out-pull the whole chip's L2.
    EXPECT_GT(t.sm_bytes_per_ns, 0);
    EXPECT_LE(t.sm_bytes_per_ns, t.l2_bytes_per_ns);
    EXPECT_GT(t.tensor_flops_per_ns, 0);
    EXPECT_GT(t.sfu_ops_per_ns, 0);
    EXPECT_GT(t.launch_floor_ns, 0);
    EXPECT_LE(t.launch_floor_ns, t.launch_overhead_ns);
  }
}

TEST(TargetTest, EveryConstantCitesASourceAndEveryFileHasTheSameConstants) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, ListTargets());
  ASSERT_OK_AND_ASSIGN(Target reference, LoadTarget("h200"));
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(Target t, LoadTarget(name));
    ASSERT_EQ(t.constants.size(), reference.constants.size());
    for (size_t i = 0; i < t.constants.size(); ++i) {
      EXPECT_EQ(t.constants[i].name, reference.constants[i].name);
      EXPECT_GE(t.constants[i].source.size(), 10u) << t.constants[i].name;
    }
  }
}

TEST(TargetTest, DominanceCeilingsAreAboveTheMeasuredH200Figures) {
  // /work/shared/hardware/h200-2026-11-29.json (CuPy probes, CUDA-event medians).
  constexpr double kMeasuredDramBytesPerNs = 4276.6;
  constexpr double kMeasuredL2BytesPerNs = 6795.7;
  constexpr double kMeasuredOneSmBytesPerNs = 133.1;  // 1 block, 8 loads in flight
  constexpr double kMeasuredTensorFlopsPerNs = 754000;  // cuBLAS 8192^3 f16
  constexpr double kMeasuredTrivialKernelNs = 1500;
  ASSERT_OK_AND_ASSIGN(Target t, LoadTarget("h200"));
  EXPECT_GT(t.dram_bytes_per_ns, kMeasuredDramBytesPerNs);
  EXPECT_GT(t.l2_bytes_per_ns, kMeasuredL2BytesPerNs);
  EXPECT_GT(t.sm_bytes_per_ns, kMeasuredOneSmBytesPerNs);
  EXPECT_GT(t.tensor_flops_per_ns, kMeasuredTensorFlopsPerNs);
  EXPECT_LT(t.launch_floor_ns, kMeasuredTrivialKernelNs);
  // Per-block measurements: k blocks on k SMs never beat k x the per-SM ceiling.
  const std::vector<std::pair<int, double>> by_blocks = {
      {1, 133.1}, {2, 266.8}, {8, 998.6}, {32, 2890.6}, {132, 3903.5}};
  for (const auto& [blocks, bytes_per_ns] : by_blocks) {
    EXPECT_GT(static_cast<double>(blocks) * t.sm_bytes_per_ns, bytes_per_ns) << blocks;
  }
}

TEST(TargetTest, TextAndJson) {
  ASSERT_OK_AND_ASSIGN(Target t, LoadTarget("h200"));
  const std::string text = TargetText(t);
  EXPECT_THAT(text, HasSubstr("h200: NVIDIA H200"));
  EXPECT_THAT(text, HasSubstr("hw_sms"));
  EXPECT_THAT(text, HasSubstr("132"));
  EXPECT_THAT(text, HasSubstr("multiProcessorCount"));
  const std::string list = TargetListText({t});
  EXPECT_THAT(list, HasSubstr("h200"));
  EXPECT_THAT(list, HasSubstr("132 SMs"));
  const nlohmann::json j = TargetToJson(t);
  EXPECT_EQ(j["name"], "h200");
  EXPECT_EQ(j["sms"], 132);
  EXPECT_EQ(j["smem_per_block_optin"], 232448);
  EXPECT_EQ(j["constants"].size(), t.constants.size());
  EXPECT_EQ(TargetListToJson({t, t}).size(), 2u);
}

TEST(TargetTest, MalformedFiles) {
  ASSERT_OK_AND_ASSIGN(Target good, LoadTarget("h200"));
  const std::string& text = good.smtlib;
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = text;
    const size_t pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    s.replace(pos, from.size(), to);
    return s;
  };
  struct Row {
    std::string smtlib;
    std::string message;
  };
  const std::vector<Row> rows = {
      {replace("; source: measured, cudaDeviceProp.multiProcessorCount = 132 "
               "(h200-2026-11-29.json \"sms\")\n",
               ""),
       "x.smt2:17: constant 'hw_sms' has no '; source:' comment above it"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun hw_sms () Bool 132)"),
       "constant 'hw_sms' has sort 'Bool', expected Int or Real"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun hw_sms () Real 132.5)"),
       "constant 'hw_sms' must have sort Int"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun hw_sms () Int lots)"),
       "constant 'hw_sms' has value 'lots', expected a non-negative integer literal"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun sms () Int 132)"),
       "constant 'sms' must be named hw_<something>"},
      {replace("(define-fun hw_sms () Int 132)", "(assert true)"),
       "expected (define-fun hw_<name> () Int|Real <literal>), found '(assert true)'"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun hw_warp_size () Int 32)"),
       "constant 'hw_warp_size' is defined twice"},
      {replace("(define-fun hw_launch_floor_ns () Int 500)", ""),
       "x.smt2: missing constant 'hw_launch_floor_ns'"},
      {replace("; target: NVIDIA H200 SXM 141GB", ";"),
       "missing the '; target: <display name>' header comment"},
      {replace("(define-fun hw_sms () Int 132)", "(define-fun hw_sms () Int 132"),
       "unbalanced '('"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(ParseTarget("x", r.smtlib),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(r.message)))
        << r.message;
  }
  // An extra constant is allowed and kept.
  ASSERT_OK_AND_ASSIGN(Target extra, ParseTarget("x", text + "\n; source: test\n"
                                                             "(define-fun hw_extra () Real 1.5)\n"));
  ASSERT_NE(extra.FindConstant("hw_extra"), nullptr);
  EXPECT_DOUBLE_EQ(extra.FindConstant("hw_extra")->value, 1.5);
}

}  // namespace
}  // namespace prism
