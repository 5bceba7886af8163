// tune/: Optimize with use_gpu = false (the cost model selects) on small programs: the selected
// family, the files written, NVRTC compilation for sm_90, determinism, and the error paths by
// exact message.
#include "prism/tune/tune.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "codegen/split_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/block/sgraph_printer.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/text_format.h"
#include "prism/block/block_instance.h"
#include "prism/prune/block_family.h"
#include "prism/prune/pruner.h"
#include "prism/prism.h"
#include "prism/runtime/runtime.h"
#include "testing/files.h"
#include "testing/status_matchers.h"

namespace prism::tune {
namespace {
using ::prism::testing::ReadFile;
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempDir(const std::string& name) { return testing::FreshTempPath("tune", name); }

// Y = softmax(X, -1) on [4, 64]: its families need a row sum, which no template emits yet.
Program SoftmaxProgram() {
  ProgramBuilder p;
  TensorId x = p.Input("X", DType::kF16, {4, 64});
  TensorId y = p.Softmax(x, -1);
  p.SetName(y, "Y");
  p.Output(y);
  return *std::move(p).Build();
}

// An f32 matmul: the GEMM template multiplies f16 tiles only, so no family generates.
// Y = X·W with 12 columns: no family's tiles are whole 16-byte rows (codegen refuses them all).
Program NarrowMatmulProgram() {
  ProgramBuilder p;
  TensorId x = p.Input("X", DType::kF16, {4, 64});
  TensorId w = p.Input("W", DType::kF16, {64, 12});
  TensorId y = p.MatMul(x, w);
  p.SetName(y, "Y");
  p.Output(y);
  return *std::move(p).Build();
}

// Options without the search's wall-clock budgets: results must not depend on the machine's
// load (a search that runs out of budget under ASan returns fewer families; a pruning query
// that reaches Z3's 5 s wall-clock net prunes nothing, search.h query_budget).
TuneOptions Options(bool use_gpu) {
  TuneOptions o;
  o.use_gpu = use_gpu;
  o.search.budget = absl::Hours(1);
  o.search.query_budget.timeout_ms = 60'000;
  return o;
}

// Optimize without a GPU for the h200 target, on a fixture at its WORKLOADS.md sizes, with
// `top_families` and `instances_per_family` set where they are positive (else Options()').
absl::StatusOr<TuneResult> OptimizeAtWorkloadSizes(const char* fixture, int batch,
                                                   int top_families,
                                                   int instances_per_family = 0) {
  PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget("h200"));
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture f,
                         fixtures::MakeFixture(fixture, fixtures::WorkloadSizes(fixture, batch)));
  TuneOptions options = Options(false);
  if (top_families > 0) options.top_families = top_families;
  if (instances_per_family > 0) options.instances_per_family = instances_per_family;
  return Optimize(f.program, target, options);
}

// The top family only.
absl::StatusOr<TuneResult> OptimizeTopFamily(const char* fixture, int batch) {
  return OptimizeAtWorkloadSizes(fixture, batch, 1);
}

struct PipelineCase {
  const char* fixture;
  fixtures::Sizes sizes;
  int kernels;              // of the selected family
  const char* kernel_text;  // a substring of kernel.cu
  // Run twice and compare the files byte for byte (off for gqa only, to keep the test short
  // under sanitizers: its search dominates; the search's determinism is tested in search/).
  bool check_determinism = true;
  DType dtype = DType::kF16;  // the program's (and so its families') f16 tensors made this
};

// One row of the pipeline table: Optimize without a GPU, the files, determinism.
void CheckPipeline(const PipelineCase& c) {
  SCOPED_TRACE(c.fixture);
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(c.fixture, c.sizes));
  if (c.dtype != DType::kF16) {
    ASSERT_OK_AND_ASSIGN(f, codegen_test::WithDType(std::move(f), c.dtype));
  }
  TuneOptions options = Options(false);
  options.instances_per_family = 12;  // enough for the checks; 96 (the default) is slow under ASan
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  EXPECT_EQ(r.method, Method::kCostModel);
  EXPECT_EQ(r.no_gpu_reason, "--no-gpu");
  EXPECT_FALSE(r.device.has_value());
  ASSERT_GE(r.selected, 0);
  EXPECT_EQ(r.chosen_family().kernels, c.kernels);
  // The first generated candidate by the estimate, ties by the lower bound.
  for (const Candidate& k : r.candidates) {
    EXPECT_GE(std::make_pair(k.estimate_us, k.cost_us),
              std::make_pair(r.chosen().estimate_us, r.chosen().cost_us));
  }
  EXPECT_THAT(r.code.source, HasSubstr(c.kernel_text));
  // Step times: the candidates were built, nothing was measured, refined or confirmed; the
  // cost-model path compiles (timed) only with NVRTC.
  EXPECT_GE(r.times.candidates_s, 0);
  EXPECT_EQ(r.times.measure_s, -1);
  EXPECT_EQ(r.times.refine_s, -1);
  EXPECT_EQ(r.times.confirm_s, -1);
  if (codegen::NvrtcAvailable()) {
    EXPECT_EQ(r.sm, 90);
    EXPECT_TRUE(r.chosen().compiled);
    EXPECT_GE(r.times.compile_s, 0);
    ASSERT_OK(codegen::CompileWithNvrtc(r.code.source, 90).status());
  } else {
    EXPECT_EQ(r.times.compile_s, -1);
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
// The estimate's lora pick multiplies (X·A)·B in one kernel: X·A summed over the loop, ·B
// once in the output's epilogue, reading B from global memory.
const PipelineCase kLora = {"lora", {{"B", 2}, {"K", 256}, {"N", 128}, {"R", 16}}, 1,
                            "* F16ToF32(bp[(long long)r * 128LL]);"};
const PipelineCase kNtrans = {"ntrans", {{"B", 4}, {"D", 512}}, 1, "WarpSum(ss["};
const PipelineCase kGqa = {"gqa",
                           {{"G", 2}, {"Lq", 16}, {"D", 32}, {"L", 128}},
                           2,
                           "ex2.approx",
                           /*check_determinism=*/false};

TEST(OptimizeTest, RmsNormLinearByTheCostModelWithoutAGpu) { CheckPipeline(kRmsNormLinear); }
TEST(OptimizeTest, GqaByTheCostModelWithoutAGpu) { CheckPipeline(kGqa); }
TEST(OptimizeTest, LoraByTheCostModelWithoutAGpu) { CheckPipeline(kLora); }
TEST(OptimizeTest, NtransByTheCostModelWithoutAGpu) { CheckPipeline(kNtrans); }
// bf16 programs: the same pipeline, kernels on the bf16 spellings (docs/codegen.md).
TEST(OptimizeTest, BF16ProgramsByTheCostModelWithoutAGpu) {
  for (PipelineCase c : {kRmsNormLinear, kNtrans}) {
    c.dtype = DType::kBF16;
    c.kernel_text = std::string(c.fixture) == "ntrans" ? "BF16ToF32(" : "MmaM16N8K16BF16(";
    CheckPipeline(c);
  }
}
// lora in bf16: its own test so that the sanitizer pass can leave it out, as it leaves out the
// f16 lora pipeline (tests/tune/CMakeLists.txt: SLOW).
TEST(OptimizeTest, BF16LoraByTheCostModelWithoutAGpu) {
  PipelineCase c = kLora;
  c.dtype = DType::kBF16;
  c.kernel_text = "MmaM16N8K16BF16(";
  CheckPipeline(c);
}
// f32 programs with matmuls (gated_mlp: silu(X·A) ⊙ X·B; rmsnorm_linear): FMAs on the CUDA
// cores.
TEST(OptimizeTest, F32MatmulsByTheCostModelWithoutAGpu) {
  for (PipelineCase c : {PipelineCase{"gated_mlp", {{"B", 2}, {"K", 128}, {"N", 64}}, 1,
                                      "FmaTilesF32(acc"},
                         kRmsNormLinear}) {
    c.dtype = DType::kF32;
    c.kernel_text = "FmaTilesF32(acc";
    CheckPipeline(c);
  }
}

// The sample is examined by several workers (SampleInstances' parallel walk, and the families
// of a round in parallel); their number changes nothing: the same candidates in the same order,
// the same selection. A table of programs whose families have thousands of points (many
// rounds of the walk; the split family's past kMaxGenerate, walked in its permuted order).
TEST(OptimizeTest, SamplingWorkerCountChangesNothing) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  const struct {
    const char* fixture;
    fixtures::Sizes sizes;
  } kCases[] = {
      {"rmsnorm_linear", {{"M", 4}, {"K", 512}, {"N", 256}}},
      {"lora", {{"B", 2}, {"K", 256}, {"N", 128}, {"R", 16}}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.fixture);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(c.fixture, c.sizes));
    std::vector<std::string> first;
    std::string first_source;
    for (int threads : {1, 2, 5}) {
      SCOPED_TRACE(threads);
      TuneOptions options = Options(false);
      options.top_families = 2;
      options.instances_per_family = 24;
      options.search.threads = threads;
      ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
      std::vector<std::string> texts;
      for (const Candidate& cand : r.candidates) {
        texts.push_back(absl::StrCat(cand.family, " ",
                                     CandidateText(*r.search.families[cand.family].graph, cand),
                                     " ", cand.cost_us));
      }
      ASSERT_FALSE(texts.empty());
      if (first.empty()) {
        first = texts;
        first_source = r.code.source;
        continue;
      }
      EXPECT_EQ(texts, first);
      EXPECT_EQ(r.code.source, first_source);
    }
  }
}

// The candidate sample covers the family's domain, not only the neighbours of the preferred
// instance (tune.h step 2): on rmsnorm_linear [8,4096]×[4096,6144], 32 distinct candidates over
// the 3 cheapest grid strata, every thread count, several stage counts and forloop counts.
TEST(OptimizeTest, CandidatesSpanTheDomain) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                "rmsnorm_linear", {{"M", 8}, {"K", 4096}, {"N", 6144}}));
  TuneOptions options = Options(false);
  options.top_families = 1;
  options.instances_per_family = 32;
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  ASSERT_EQ(r.candidates.size(), 32u);
  std::set<int64_t> grids, threads, stages, forloops;
  std::set<std::string> keys;
  int along_n = 0;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    if (!c.codegen_variant.empty()) {
      // A GEMM family's only variant here (one kernel, cost over 2 µs: no PDL): warps along N,
      // right after its base, where that changes the warp split.
      EXPECT_EQ(c.codegen_variant, "gemm_warps_along_n");
      ASSERT_GT(i, 0u);
      EXPECT_EQ(r.candidates[i - 1].assignment, c.assignment);
      EXPECT_EQ(r.candidates[i - 1].codegen_variant, "");
      ++along_n;
      continue;
    }
    std::string key;
    for (const auto& [name, v] : c.assignment) {
      const search::FamilyResult& fr = r.search.families[c.family];
      const Param* p = fr.graph->FindParam(name);
      ASSERT_NE(p, nullptr);
      if (p->role == ParamRole::kGrid) grids.insert(v);
      if (p->role == ParamRole::kThreads) threads.insert(v);
      if (p->role == ParamRole::kStages) stages.insert(v);
      if (p->role == ParamRole::kForloop) forloops.insert(v);
      key += name + "=" + std::to_string(v) + " ";
    }
    EXPECT_TRUE(keys.insert(key).second) << "duplicate candidate " << key;
  }
  EXPECT_GT(along_n, 0);
  // ⌈32/12⌉ = 3 grid strata (the preferred instance's among them), every thread count of the
  // domain {64, 128, 256, 512}, and several stage and forloop values.
  EXPECT_EQ(grids.size(), 3u);
  EXPECT_EQ(threads.size(), 4u);
  EXPECT_GE(stages.size(), 3u);
  EXPECT_GE(forloops.size(), 3u);
  EXPECT_EQ(r.candidates[0].assignment, r.search.families[0].best);
}

// The public API's defaults (prism.h OptimizeOptions, which the CLI, the Python module and
// prism::Optimize start from) are the tuner's: they are written twice, once per header.
TEST(TuneOptionsTest, PublicDefaultsAreTheTunersDefaults) {
  const OptimizeOptions api;
  const TuneOptions tune;
  EXPECT_EQ(api.top_families, tune.top_families);
  EXPECT_EQ(api.instances_per_family, tune.instances_per_family);
}

// The variant list by compute capability: clusters-era options only from sm_90 on.
TEST(CodegenVariantsTest, ByComputeCapability) {
  const struct {
    int sm;
    std::vector<std::string> names;
  } kCases[] = {
      {80,
       {"attention_tiles_per_warp=2", "gemm_warps_along_n", "gemm_chained_b_smem",
        "gemm_chained_b_smem,gemm_warps_along_n"}},
      {89,
       {"attention_tiles_per_warp=2", "gemm_warps_along_n", "gemm_chained_b_smem",
        "gemm_chained_b_smem,gemm_warps_along_n"}},
      {90,
       {"attention_tiles_per_warp=2", "programmatic_dependent_launch",
        "attention_tiles_per_warp=2,programmatic_dependent_launch", "attention_wgmma",
        "attention_wgmma,programmatic_dependent_launch", "gemm_warps_along_n",
        "gemm_warps_along_n,programmatic_dependent_launch",
        "cluster_combine,programmatic_dependent_launch",
        "cluster_combine,gemm_warps_along_n,programmatic_dependent_launch",
        "gemm_chained_b_smem,programmatic_dependent_launch",
        "gemm_chained_b_smem,gemm_warps_along_n,programmatic_dependent_launch",
        "library_matmul_cluster_split",
        "library_matmul_cluster_split,programmatic_dependent_launch",
        "library_matmul_cluster_split,library_matmul_split_blocks_per_sm=2",
        "library_matmul_cluster_split,library_matmul_split_blocks_per_sm=2,"
        "programmatic_dependent_launch"}},
  };
  for (const auto& c : kCases) {
    std::vector<std::string> names;
    for (const auto& [name, options] : CodegenVariants(c.sm)) {
      names.push_back(name);
      EXPECT_EQ(options.programmatic_dependent_launch,
                name.find("programmatic_dependent_launch") != std::string::npos)
          << name;
      EXPECT_EQ(options.attention_tiles_per_warp,
                name.find("attention_tiles_per_warp=2") != std::string::npos ? 2 : 0)
          << name;
      EXPECT_EQ(options.gemm_warps_along_n,
                name.find("gemm_warps_along_n") != std::string::npos)
          << name;
      EXPECT_EQ(options.attention_wgmma, name.find("attention_wgmma") != std::string::npos)
          << name;
      EXPECT_EQ(options.cluster_combine, name.find("cluster_combine") != std::string::npos)
          << name;
      EXPECT_EQ(options.gemm_chained_b_smem,
                name.find("gemm_chained_b_smem") != std::string::npos)
          << name;
      EXPECT_EQ(options.library_matmul_cluster_split,
                name.find("library_matmul_cluster_split") != std::string::npos)
          << name;
      EXPECT_EQ(options.library_matmul_split_blocks_per_sm,
                name.find("library_matmul_split_blocks_per_sm=2") != std::string::npos ? 2 : 1)
          << name;
    }
    EXPECT_EQ(names, c.names) << "sm " << c.sm;
  }
}

// The loop reorderings the loop-variant round tries: none below sm_90; from sm_90 three per
// base (attention_wgmma with and without PDL), each name the base's with its options appended,
// each option set exactly when its name says so.
TEST(WgmmaLoopVariantsTest, NamesAndOptions) {
  EXPECT_TRUE(WgmmaLoopVariants(80).empty());
  EXPECT_TRUE(WgmmaLoopVariants(89).empty());
  const std::string w = "attention_wgmma", p = "attention_wgmma,programmatic_dependent_launch";
  const std::string l = ",attention_wgmma_late_loads", s = ",attention_wgmma_split_pv";
  const std::vector<std::string> expected = {w + l, w + s, w + l + s, p + l, p + s, p + l + s};
  std::vector<std::string> names;
  for (const auto& [name, o] : WgmmaLoopVariants(90)) {
    names.push_back(name);
    EXPECT_TRUE(o.attention_wgmma) << name;
    EXPECT_EQ(o.programmatic_dependent_launch,
              name.find("programmatic_dependent_launch") != std::string::npos)
        << name;
    EXPECT_EQ(o.attention_wgmma_late_loads, name.find(l) != std::string::npos) << name;
    EXPECT_EQ(o.attention_wgmma_split_pv, name.find(s) != std::string::npos) << name;
    // Not among the sampled variants.
    for (const auto& [sampled, unused] : CodegenVariants(90)) EXPECT_NE(sampled, name);
  }
  EXPECT_EQ(names, expected);
}

// NeighborAssignments: per parameter (in declaration order), the nearest accepted value
// below, then above, within max_steps; parameters not assigned, or assigned a value outside
// their domain, get none.
TEST(NeighborAssignmentsTest, NearestAcceptedValueEachWay) {
  SGraph g{"neighbours"};
  ASSERT_OK(g.AddParam("g", ParamRole::kGrid, *Domain::DivisorsOf(64)).status());  // 1..64
  ASSERT_OK(g.AddParam("T", ParamRole::kThreads, *Domain::Set({64, 128, 256, 512})).status());
  ASSERT_OK(g.AddParam("S", ParamRole::kStages, *Domain::Range(1, 4)).status());
  auto all = [](const Assignment&) { return true; };
  auto no_4_16 = [](const Assignment& a) { return a.at("g") != 4 && a.at("g") != 16; };
  auto none = [](const Assignment&) { return false; };
  const struct {
    const char* name;
    Assignment a;
    std::function<bool(const Assignment&)> accept;
    int max_steps;
    std::vector<std::string> want;  // the moved parameter=value of each neighbour, in order
  } kCases[] = {
      {"every neighbour accepted", {{"g", 8}, {"T", 128}, {"S", 1}}, all, 8,
       {"g=4", "g=16", "T=64", "T=256", "S=2"}},
      {"rejected values are stepped over", {{"g", 8}, {"T", 128}, {"S", 2}}, no_4_16, 8,
       {"g=2", "g=32", "T=64", "T=256", "S=1", "S=3"}},
      {"max_steps bounds the walk", {{"g", 8}, {"T", 512}, {"S", 4}}, no_4_16, 1,
       {"T=256", "S=3"}},
      {"nothing accepted", {{"g", 8}, {"T", 128}, {"S", 2}}, none, 8, {}},
      {"a value outside the domain, an unassigned parameter", {{"g", 64}, {"T", 100}}, all, 8,
       {"g=32"}},
  };
  for (const auto& c : kCases) {
    std::vector<std::string> got;
    for (const Assignment& n : NeighborAssignments(g, c.a, c.accept, c.max_steps)) {
      std::vector<std::string> moved;
      for (const auto& [name, value] : n) {
        if (c.a.at(name) != value) moved.push_back(name + "=" + std::to_string(value));
      }
      ASSERT_EQ(moved.size(), 1u) << c.name;
      EXPECT_EQ(n.size(), c.a.size()) << c.name;
      got.push_back(moved[0]);
    }
    EXPECT_EQ(got, c.want) << c.name;
  }
}

// Median and PickConfirmed (the confirmation round's choice, tune.h step 5): the lowest
// median wins, finalists without measurements are skipped, ties go to the first.
// The first measuring round's deadline: the measuring budget after the compilation, cut by
// the tuning budget's end less the confirmation's reserve, but never sooner than the minimum
// after the compilation.
TEST(MeasuringDeadlineTest, ByTable) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const absl::Time none = absl::InfiniteFuture();
  struct Case {
    const char* name;
    double measure_budget_s;
    absl::Time tune_end;
    absl::Time expected;
  };
  const absl::Duration reserve = absl::Seconds(3), min_measure = absl::Seconds(5);
  const Case cases[] = {
      {"measuring budget only", 45, none, t0 + absl::Seconds(45)},
      {"no budget at all", 0, none, none},
      {"tuning budget far away: the measuring budget", 45, t0 + absl::Seconds(100),
       t0 + absl::Seconds(45)},
      {"tuning budget nearer: its end less the reserve", 45, t0 + absl::Seconds(30),
       t0 + absl::Seconds(27)},
      {"tuning budget alone", 0, t0 + absl::Seconds(30), t0 + absl::Seconds(27)},
      {"tuning budget spent by the compilation: the minimum", 45, t0 - absl::Seconds(10),
       t0 + absl::Seconds(5)},
      {"end less reserve just under the minimum", 45, t0 + absl::Seconds(7),
       t0 + absl::Seconds(5)},
      {"measuring budget under the minimum stays", 2, t0 + absl::Seconds(30),
       t0 + absl::Seconds(2)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MeasuringDeadline(t0, c.measure_budget_s, c.tune_end, reserve, min_measure),
              c.expected);
  }
}

TEST(PickConfirmedTest, LowestMedianWins) {
  const struct {
    const char* name;
    std::vector<std::vector<double>> times;
    int want;
  } kCases[] = {
      {"no finalists", {}, -1},
      {"no measurements", {{}, {}}, -1},
      {"one measured", {{}, {5.0}}, 1},
      {"the median, not the minimum", {{1.0, 9.0, 9.0}, {5.0, 5.0, 5.0}}, 1},
      {"the median, not the first measurement", {{4.0, 6.0, 6.5}, {5.0, 5.5, 5.6}}, 1},
      {"even counts: the mean of the middle two", {{1.0, 8.0}, {4.0, 4.9}}, 1},
      {"a tie goes to the first", {{3.0, 2.0, 4.0}, {3.0}}, 0},
      {"unordered measurements", {{7.0, 2.0, 3.0}, {2.5, 2.9, 9.0}}, 1},
  };
  for (const auto& c : kCases) EXPECT_EQ(PickConfirmed(c.times), c.want) << c.name;
  const struct {
    std::vector<double> v;
    double want;
  } kMedians[] = {{{3.0}, 3.0}, {{2.0, 1.0}, 1.5}, {{5.0, 1.0, 3.0}, 3.0}, {{4.0, 1.0, 3.0, 2.0}, 2.5}};
  for (const auto& m : kMedians) EXPECT_EQ(Median(m.v), m.want);
}

// Attention families (split-KV: two kernels) on sm_90 that the warpgroup-MMA template does not
// fit (head dim 32; see AttentionFamiliesThatWgmmaFitsAreSampledWithItOnly for those it does):
// every sampled instance is measured with programmatic dependent launch only (in place of the default options), followed by its PDL
// variants that generate distinct code, in CodegenVariants order, right after it (same family
// and assignment): two tiles per warp and PDL (when the code differs); each named in
// CandidateText and family.json.
TEST(OptimizeTest, AttentionInstancesAlsoTryTheirCodegenVariants) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                "gqa", {{"G", 2}, {"Lq", 64}, {"D", 32}, {"L", 512}}));
  TuneOptions options = Options(false);
  options.top_families = 1;
  options.instances_per_family = 8;
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  ASSERT_EQ(r.candidates.size(), 8u);
  // The tuner generates with the target's residency balance: a kernel with dynamic shared
  // memory fits at most ceil(blocks / SMs) of its blocks per SM.
  for (const codegen::LaunchConfig& l : r.code.launches) {
    if (l.dynamic_smem_bytes == 0) continue;
    const int64_t blocks = l.grid[0] * l.grid[1] * l.grid[2];
    EXPECT_LE(target.smem_per_sm / (l.dynamic_smem_bytes + target.smem_reserved_per_block),
              (blocks + target.sms - 1) / target.sms)
        << l.function;
  }
  const std::vector<std::string> order = {"programmatic_dependent_launch",
                                          "attention_tiles_per_warp=2,programmatic_dependent_launch"};
  std::map<std::string, int> seen;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    const SGraph& g = *r.search.families[c.family].graph;
    const auto rank = std::find(order.begin(), order.end(), c.codegen_variant);
    ASSERT_NE(rank, order.end()) << "unknown variant " << c.codegen_variant;
    ++seen[c.codegen_variant];
    EXPECT_EQ(CandidateText(g, c), AssignmentText(g, c.assignment) + " [" + c.codegen_variant + "]");
    if (rank == order.begin()) continue;  // an instance's base: PDL in place of the defaults
    ASSERT_GT(i, 0u);
    const Candidate& prev = r.candidates[i - 1];
    EXPECT_EQ(prev.assignment, c.assignment) << "not right after its base";
    EXPECT_LT(std::find(order.begin(), order.end(), prev.codegen_variant), rank)
        << "variants out of order";
  }
  EXPECT_GT(seen["attention_tiles_per_warp=2,programmatic_dependent_launch"], 0)
      << "no instance had a two-tiles-per-warp variant";
  EXPECT_GT(seen["programmatic_dependent_launch"], 0);
  // The selection's family.json names its variant (the cost model ties an instance's
  // candidates: the base is selected, so select a variant by hand).
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    if (r.candidates[i].codegen_variant == "programmatic_dependent_launch") {
      r.selected = static_cast<int>(i);
      break;
    }
  }
  const nlohmann::json fam = nlohmann::json::parse(FamilyJson(r, "gqa"));
  EXPECT_EQ(fam["codegen_variant"], "programmatic_dependent_launch");
}

// sm_90: an attention family that the warpgroup-MMA template fits is sampled among the
// instances it fits only, each with it alone (two kernels: with programmatic dependent launch),
// and the sampler visits up to 80,000 points of the cross product for it. Regression
// (2026-12-02): gqa b=8's fastest instance on the H200, gx=16 gy=4 gs=4 F=8 T=128 S=2 (17.3 µs
// against the selected 19.1), was never sampled: 26 of the 543 pooled instances of its family
// fit wgmma, and the mma.sync variants took two thirds of the budget.
TEST(OptimizeTest, AttentionFamiliesThatWgmmaFitsAreSampledWithItOnly) {
  ASSERT_OK_AND_ASSIGN(TuneResult r, OptimizeAtWorkloadSizes("gqa", 8, 2));
  std::map<int, int> per_family;
  bool found = false;
  for (const Candidate& c : r.candidates) {
    EXPECT_EQ(c.codegen_variant, "attention_wgmma,programmatic_dependent_launch")
        << CandidateText(*r.search.families[c.family].graph, c);
    ++per_family[c.family];
    const Assignment want = {{"gx", 16}, {"gy", 4}, {"gs", 4}, {"F", 8}, {"T", 128}, {"S", 2}};
    if (c.assignment == want) found = true;
  }
  ASSERT_EQ(per_family.size(), 2u);
  // The family with a query-tile axis (gy) fills its budget of 96.
  EXPECT_EQ(std::max(per_family.begin()->second, per_family.rbegin()->second),
            Options(false).instances_per_family);
  EXPECT_TRUE(found) << "gx=16 gy=4 gs=4 F=8 T=128 S=2 was not sampled";
}

// One-kernel instances with a cost bound of at most 2 µs (ntrans) are also tried with
// programmatic dependent launch, right after their base; longer ones (the GEMM families of
// CandidatesSpanTheDomain) are not.
TEST(OptimizeTest, ShortOneKernelInstancesAlsoTryPdl) {
  ASSERT_OK_AND_ASSIGN(TuneResult r, OptimizeTopFamily("ntrans", 8));
  ASSERT_GE(r.candidates.size(), 2u);
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    EXPECT_LE(c.cost_us, 2.0);
    EXPECT_EQ(c.codegen_variant, i % 2 == 0 ? "" : "programmatic_dependent_launch") << i;
    if (i % 2 == 1) {
      EXPECT_EQ(c.assignment, r.candidates[i - 1].assignment);
    }
  }
}

// The fallback's matmul library kernel (search.library_kernel) is also tried split along k over
// clusters where its tiles are few (bf16 [16, 5001] x [5001, 3001]: 47 tiles, clusters of two,
// and of five with two blocks per SM), right after its base; with 501 tiles (an LM head) the
// split sources are the base's and are not
// measured twice.
TEST(OptimizeTest, FewTileLibraryMatmulsAlsoTryTheClusterSplit) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  const struct {
    const char* text;
    bool split;
  } kCases[] = {
      {"X = input bf16[16, 5001]\nW = input bf16[5001, 3001]\nY = matmul(X, W)\noutput Y\n", true},
      {"X = input f16[8, 4096]\nW = input f16[4096, 32001]\nY = matmul(X, W)\noutput Y\n", false},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.text);
    ASSERT_OK_AND_ASSIGN(Program program, ParseProgram(c.text));
    TuneOptions options = Options(false);
    options.search.library_kernel = true;
    ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(program, target, options));
    std::vector<std::string> variants;
    for (const Candidate& k : r.candidates) variants.push_back(k.codegen_variant);
    // One library kernel costing more than 2 µs: no PDL twins (kPdlOneKernelMaxCostUs).
    const std::vector<std::string> want =
        c.split ? std::vector<std::string>{"", "library_matmul_cluster_split",
                                           "library_matmul_cluster_split,"
                                           "library_matmul_split_blocks_per_sm=2"}
                : std::vector<std::string>{""};
    EXPECT_EQ(variants, want);
    if (c.split) {
      EXPECT_EQ(r.candidates[1].assignment, r.candidates[0].assignment);
      EXPECT_EQ(r.candidates[2].assignment, r.candidates[0].assignment);
    }
  }
}

// Split (two-kernel) families: the sampled strata fill at least 7/8 of one wave (one block per
// SM; 132 SMs on the H200) in their first kernel when the domain has such grids; gated_mlp's split-K family is
// generated (kernel 1 writes f32 partials) and tried next to the one-kernel family.
TEST(OptimizeTest, SplitFamiliesAreSampledAtNearlyOneWaveOrMore) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("gated_mlp", {{"B", 8}, {"K", 1024}, {"N", 512}}));
  TuneOptions options = Options(false);
  options.instances_per_family = 12;
  // The first three families (two split-K forms among them). The fourth at these sizes splits
  // K only (grid (gs, 1, 1), every block all 512 columns): its one-wave strata (gs ≥ 128) hold
  // fewer members than the 12 sampled, so smaller grids are added by design.
  options.top_families = 3;
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, options));
  int split = 0;
  for (const Candidate& c : r.candidates) {
    const search::FamilyResult& fr = r.search.families[c.family];
    if (fr.kernels < 2) continue;
    ++split;
    // sm_90 (h200): two-kernel instances are measured with programmatic dependent launch only.
    EXPECT_NE(c.codegen_variant.find("programmatic_dependent_launch"), std::string::npos)
        << c.codegen_variant;
    int64_t blocks = 1;
    for (const auto& [name, v] : c.assignment) {
      const Param* p = fr.graph->FindParam(name);
      ASSERT_NE(p, nullptr);
      if (p->role == ParamRole::kGrid) blocks *= v;  // k0's grid: (gx, gs, 1)
    }
    // The preferred instance (the family's cheapest by the lower bound) comes first regardless.
    if (c.assignment == fr.best) continue;
    EXPECT_GE(blocks * 8, target.sms * 7) << "family #" << c.family + 1;
  }
  EXPECT_GT(split, 0) << "no split family was generated";
}

// sm_90: split-K GEMM instances are also tried folded into thread block clusters
// (cluster_combine), but only where the clusters have two blocks (gs = 2): clusters of four
// and eight were slower than the two kernels on every row measured (docs/performance.md).
TEST(OptimizeTest, SplitGemmInstancesTryClustersOfTwoOnly) {
  ASSERT_OK_AND_ASSIGN(TuneResult r, OptimizeAtWorkloadSizes("gated_mlp", 8, 0, 60));
  std::map<int64_t, int> split_by_gs, cluster_by_gs;
  for (const Candidate& c : r.candidates) {
    if (r.search.families[c.family].kernels < 2 || !c.assignment.count("gs")) continue;
    const int64_t gs = c.assignment.at("gs");
    ++split_by_gs[gs];
    if (c.codegen_variant.find("cluster_combine") != std::string::npos) {
      ++cluster_by_gs[gs];
      EXPECT_NE(c.codegen_variant.find("programmatic_dependent_launch"), std::string::npos);
    }
  }
  EXPECT_GT(split_by_gs[2], 0) << "no split instance with gs = 2 was sampled";
  EXPECT_GT(cluster_by_gs[2], 0);
  for (const auto& [gs, n] : cluster_by_gs) EXPECT_EQ(gs, 2) << n << " candidates";
  EXPECT_GT(split_by_gs.size(), 1u) << "only one split count sampled";
}

// Regression (2026-12-01): gqa b=1's fastest instance on the H200, gx=2 gy=4 gs=16 (8.35 µs
// against 9.05 for the best one sampled), has 128 blocks for 132 SMs; while the sampler put
// strata under one full wave last, no 128-block grid was ever measured.
TEST(OptimizeTest, SplitFamiliesSampleGridsOfNearlyOneWave) {
  ASSERT_OK_AND_ASSIGN(TuneResult r, OptimizeTopFamily("gqa", 1));
  ASSERT_EQ(r.search.families.at(0).kernels, 2);
  std::set<int64_t> grids;
  for (const Candidate& c : r.candidates) {
    int64_t blocks = 1;
    for (const auto& [name, v] : c.assignment) {
      const Param* p = r.search.families[c.family].graph->FindParam(name);
      ASSERT_NE(p, nullptr);
      if (p->role == ParamRole::kGrid) blocks *= v;
    }
    grids.insert(blocks);
  }
  EXPECT_TRUE(grids.count(128)) << "first-kernel grids sampled: " << absl::StrJoin(grids, ", ");
}

// The tuning cache: key, miss, store, hit, corrupt files (by exact message), disabled.
TEST(TuneCacheTest, MissStoreHitCorrupt) {
  const std::string dir = TempDir("tcache");
  const TuneCache cache(dir);
  runtime::DeviceInfo dev;
  dev.name = "NVIDIA H200";
  dev.driver_version = 13000;
  dev.cc_major = 9;
  const Program softmax = SoftmaxProgram();
  const TuneOptions options = Options(true);
  const std::string key = TuneCache::Key(softmax, dev, "13.0", "h200", options);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key, TuneCache::Key(softmax, dev, "13.0", "h200", options));
  // Every part of the identity changes the key.
  runtime::DeviceInfo other = dev;
  other.name = "NVIDIA A100";
  EXPECT_NE(key, TuneCache::Key(softmax, other, "13.0", "h200", options));
  other = dev;
  other.driver_version = 12080;
  EXPECT_NE(key, TuneCache::Key(softmax, other, "13.0", "h200", options));
  EXPECT_NE(key, TuneCache::Key(softmax, dev, "12.8", "h200", options));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                "rmsnorm_linear", {{"M", 4}, {"K", 128}, {"N", 64}}));
  EXPECT_NE(key, TuneCache::Key(f.program, dev, "13.0", "h200", options));
  TuneOptions more = options;
  more.instances_per_family += 1;
  EXPECT_NE(key, TuneCache::Key(softmax, dev, "13.0", "h200", more));
  for (int TuneOptions::*knob :
       {&TuneOptions::refine_rounds, &TuneOptions::refine_top, &TuneOptions::refine_max}) {
    more = options;
    more.*knob += 1;
    EXPECT_NE(key, TuneCache::Key(softmax, dev, "13.0", "h200", more));
  }
  // Constant inputs change the code: a set, in any order.
  more = options;
  more.constant_inputs = {"W", "X"};
  const std::string with_constant = TuneCache::Key(softmax, dev, "13.0", "h200", more);
  EXPECT_NE(key, with_constant);
  more.constant_inputs = {"X", "W"};
  EXPECT_EQ(with_constant, TuneCache::Key(softmax, dev, "13.0", "h200", more));
  more.constant_inputs = {"X"};
  EXPECT_NE(with_constant, TuneCache::Key(softmax, dev, "13.0", "h200", more));

  ASSERT_OK_AND_ASSIGN(std::optional<TuneCacheEntry> miss, cache.Lookup(key));
  EXPECT_FALSE(miss.has_value());
  TuneCacheEntry e;
  e.family = 1;
  e.assignment = {{"g", 96}, {"F", 16}, {"T", 512}, {"S", 3}};
  e.median_us = 23.5;
  e.relative_error = 3e-4;
  e.input_sets = 3;
  ASSERT_OK(cache.Store(key, e));
  ASSERT_OK_AND_ASSIGN(std::optional<TuneCacheEntry> hit, cache.Lookup(key));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->family, 1);
  EXPECT_EQ(hit->assignment, e.assignment);
  EXPECT_EQ(hit->codegen_variant, "");
  EXPECT_THAT(ReadFile(cache.PathOf(key)), ::testing::Not(HasSubstr("codegen_variant")));
  e.codegen_variant = "attention_tiles_per_warp=2";
  ASSERT_OK(cache.Store(key, e));
  ASSERT_OK_AND_ASSIGN(hit, cache.Lookup(key));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->codegen_variant, "attention_tiles_per_warp=2");
  EXPECT_EQ(hit->median_us, 23.5);
  EXPECT_EQ(hit->input_sets, 3);

  const std::string path = dir + "/" + key + ".json";
  EXPECT_EQ(cache.PathOf(key), path);
  struct Corrupt {
    const char* text;
    std::string why;
  };
  const Corrupt corrupt[] = {
      {"{not json", "not a JSON object"},
      {R"({"format": "other", "version": 1})", "not format prism.tune-cache version 1"},
      {R"({"format": "prism.tune-cache", "version": 1, "key": "0000000000000000"})",
       "its key differs from the file name"},
      {nullptr, "no field 'median_us'"},
      {nullptr, "a field has the wrong type"},
      {"variant", "a field has the wrong type"},
  };
  for (const Corrupt& c : corrupt) {
    std::string text = c.text ? c.text : "";
    if (text == "variant") {
      text = "{\"format\": \"prism.tune-cache\", \"version\": 1, \"key\": \"" + key +
             "\", \"family\": 0, \"assignment\": {}, \"codegen_variant\": 2, \"median_us\": 1, "
             "\"relative_error\": 0, \"input_sets\": 1}";
    } else if (c.text == nullptr && c.why == "no field 'median_us'") {
      text = "{\"format\": \"prism.tune-cache\", \"version\": 1, \"key\": \"" + key +
             "\", \"family\": 0, \"assignment\": {}, \"relative_error\": 0, \"input_sets\": 1}";
    } else if (c.text == nullptr) {
      text = "{\"format\": \"prism.tune-cache\", \"version\": 1, \"key\": \"" + key +
             "\", \"family\": 0, \"assignment\": {\"g\": \"x\"}, \"median_us\": 1, "
             "\"relative_error\": 0, \"input_sets\": 1}";
    }
    std::ofstream(path, std::ios::trunc) << text;
    EXPECT_THAT(cache.Lookup(key).status(),
                StatusIs(absl::StatusCode::kDataLoss,
                         "corrupt tuning-cache entry '" + path + "': " + c.why));
  }
  // Disabled: always a miss, Store does nothing.
  const TuneCache off("");
  ASSERT_OK_AND_ASSIGN(std::optional<TuneCacheEntry> none, off.Lookup(key));
  EXPECT_FALSE(none.has_value());
  EXPECT_OK(off.Store(key, e));
  // Unwritable: the directory is a regular file.
  std::ofstream(dir + "/plain") << "x";
  EXPECT_THAT(TuneCache(dir + "/plain").Store(key, e),
              StatusIs(absl::StatusCode::kInternal,
                       StartsWith("cannot write the tuning cache '" + dir + "/plain/" + key +
                                  ".json': ")));
  std::filesystem::remove_all(dir);
}

// Optimize with the tuning cache and a fake device identity (nothing runs on it): a hit selects
// the cached instance without compiling or measuring; a corrupt or stale entry is reported in
// tune_cache_note and measuring is attempted (which fails here: no GPU behind the identity).
TEST(TuneCacheTest, OptimizeHitSkipsMeasurement) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture(
                                                "rmsnorm_linear", {{"M", 4}, {"K", 128}, {"N", 64}}));
  const std::string dir = TempDir("tcache_opt");
  runtime::DeviceInfo dev;
  dev.name = "Fake GPU";
  dev.driver_version = 1;
  dev.cc_major = 9;
  TuneOptions options = Options(true);
  options.top_families = 1;
  options.instances_per_family = 4;
  options.fake_device = dev;
  options.tune_cache_dir = dir;
  options.measure.timeout = absl::Seconds(20);
  // The candidates, by the cost model (same search, same sample).
  TuneOptions by_cost = Options(false);
  by_cost.top_families = 1;
  by_cost.instances_per_family = 4;
  ASSERT_OK_AND_ASSIGN(TuneResult plain, Optimize(f.program, target, by_cost));
  ASSERT_GE(plain.candidates.size(), 2u);
  const Candidate& pick = plain.candidates[1];
  const std::string nvrtc = plain.nvrtc_version;
  const std::string key = TuneCache::Key(f.program, dev, nvrtc, target.name, options);
  TuneCacheEntry e;
  e.family = pick.family;
  e.assignment = pick.assignment;
  e.median_us = 7.25;
  e.relative_error = 1e-4;
  e.input_sets = 4;
  ASSERT_OK(TuneCache(dir).Store(key, e));
  ASSERT_OK_AND_ASSIGN(TuneResult hit, Optimize(f.program, target, options));
  EXPECT_TRUE(hit.tune_cache_hit);
  EXPECT_EQ(hit.tune_cache_key, key);
  EXPECT_EQ(hit.tune_cache_note, "");
  EXPECT_EQ(hit.method, Method::kMeasured);
  EXPECT_EQ(hit.chosen().assignment, pick.assignment);
  ASSERT_TRUE(hit.chosen().measurement.has_value());
  EXPECT_EQ(hit.chosen().measurement->median_us, 7.25);
  for (const Candidate& c : hit.candidates) EXPECT_FALSE(c.compiled);  // nothing compiled
  EXPECT_GE(hit.times.candidates_s, 0);
  for (double t : {hit.times.compile_s, hit.times.measure_s, hit.times.refine_s,
                   hit.times.confirm_s}) {
    EXPECT_EQ(t, -1);  // nor timed
  }

  // A refinement round's selection: feasible, but not among the sampled candidates. The hit
  // regenerates it from its assignment and appends it.
  {
    const SGraph& g = *plain.search.families[pick.family].graph;
    ASSERT_OK_AND_ASSIGN(prune::Pruner pruner, prune::Pruner::Create(target));
    ExprContext ctx;
    ASSERT_OK_AND_ASSIGN(prune::Family fam, BuildFamily(g, ctx));
    auto accept = [&](const Assignment& n) {
      for (const Candidate& c : plain.candidates) {
        if (c.assignment == n) return false;
      }
      absl::StatusOr<prune::InstanceCheck> check = pruner.CheckInstance(fam, n, std::nullopt);
      absl::StatusOr<BlockProgram> bp = Instantiate(g, n);
      return check.ok() && check->ok() && bp.ok() && codegen::GenerateCuda(*bp).ok();
    };
    const std::vector<Assignment> next = NeighborAssignments(g, pick.assignment, accept);
    ASSERT_FALSE(next.empty());
    TuneCacheEntry r = e;
    r.assignment = next.front();
    r.codegen_variant = "gemm_warps_along_n";
    ASSERT_OK(TuneCache(dir).Store(key, r));
    ASSERT_OK_AND_ASSIGN(TuneResult refined, Optimize(f.program, target, options));
    EXPECT_TRUE(refined.tune_cache_hit);
    EXPECT_EQ(refined.tune_cache_note, "");
    EXPECT_EQ(refined.candidates.size(), plain.candidates.size() + 1);
    EXPECT_EQ(refined.selected, static_cast<int>(refined.candidates.size()) - 1);
    EXPECT_EQ(refined.chosen().assignment, next.front());
    EXPECT_EQ(refined.chosen().codegen_variant, "gemm_warps_along_n");
    EXPECT_EQ(refined.chosen().measurement->median_us, 7.25);
    codegen::CodegenOptions along_n;
    along_n.gemm_warps_along_n = true;
    ASSERT_OK_AND_ASSIGN(BlockProgram bp, Instantiate(g, next.front()));
    ASSERT_OK_AND_ASSIGN(codegen::GeneratedCode want, codegen::GenerateCuda(bp, along_n));
    EXPECT_EQ(refined.code.source, want.source);
  }

  // Stale: an instance that is not a candidate.
  e.assignment["T"] = 12345;
  ASSERT_OK(TuneCache(dir).Store(key, e));
  absl::StatusOr<TuneResult> stale = Optimize(f.program, target, options);
  if (!runtime::DriverLibraryPresent()) {
    EXPECT_THAT(stale.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         StartsWith("no candidate matched the reference on the GPU: ")));
  }
  // Corrupt: reported, then measuring is attempted.
  std::ofstream(dir + "/" + key + ".json", std::ios::trunc) << "{";
  absl::StatusOr<TuneResult> corrupt = Optimize(f.program, target, options);
  if (!runtime::DriverLibraryPresent()) {
    EXPECT_THAT(corrupt.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                           StartsWith("no candidate matched the reference on the GPU: ")));
  }
  std::filesystem::remove_all(dir);
}

// IsNoFamilyError: Optimize's two "no family" errors only (they send a program to the
// cuts and the library-kernel fallback), not the other FailedPrecondition errors.
TEST(OptimizeTest, IsNoFamilyErrorKnowsTheTwoNoFamilyErrors) {
  const struct {
    absl::Status status;
    bool no_family;
  } kCases[] = {
      {absl::FailedPreconditionError("the search found no family for this program"), true},
      {absl::FailedPreconditionError(
           "the search found no family for this program; concat (line 3) is not a block op"),
       true},
      {absl::FailedPreconditionError("no family can be generated as CUDA yet: 2 families tried; "
                                     "codegen: kernel k0: ..."),
       true},
      {absl::FailedPreconditionError("no candidate compiled with NVRTC: error"), false},
      {absl::FailedPreconditionError("no candidate matched the reference on the GPU: x"), false},
      {absl::FailedPreconditionError("cannot create the output directory 'd': x"), false},
      {absl::DeadlineExceededError(
           "the search found no family for this program within its budget of 30 s, which ran "
           "out"),
       false},
      {absl::InvalidArgumentError("no family can be generated as CUDA yet"), false},
      {absl::OkStatus(), false},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(IsNoFamilyError(c.status), c.no_family) << c.status;
  }
}

// Generated names: every kernel function and host.h's namespace carry the program's name, so
// that two programs' kernels link into one binary (before 2026-12-05 every program's kernel
// was prism_candidate_k0).
TEST(OptimizeTest, ProgramNameNamesTheKernels) {
  const struct {
    const char* label;
    const char* name;
  } kNames[] = {{"softmax", "softmax"},       {"rmsnorm_linear_b8", "rmsnorm_linear_b8"},
                {"my-model.v2", "my_model_v2"}, {"7b", "p_7b"},
                {"", "program"}};
  for (const auto& c : kNames) EXPECT_EQ(ProgramNameFrom(c.label), c.name) << c.label;
  EXPECT_EQ(ProgramNameFrom(std::string(80, 'a')), std::string(64, 'a'));

  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  TuneOptions options = Options(false);
  options.program_name = "row_softmax_4x64";
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(SoftmaxProgram(), target, options));
  EXPECT_THAT(r.code.source, HasSubstr("prism_row_softmax_4x64_k0("));
  EXPECT_THAT(r.code.host_header, HasSubstr("namespace row_softmax_4x64 {"));
  for (const codegen::LaunchConfig& l : r.code.launches) {
    EXPECT_THAT(l.function, StartsWith("prism_row_softmax_4x64_"));
  }
}

// A concat of inputs: one family without parameters (a library kernel, codegen's copy), one
// instance and its PDL twin (its cost is under the 2 µs bound), shown as "(no parameters)".
TEST(OptimizeTest, AConcatOfInputsIsItsCopyKernel) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  ProgramBuilder b;
  const TensorId a = b.Input("A", DType::kF16, {8, 256});
  const TensorId h = b.Input("H", DType::kF16, {8, 64});
  const TensorId y = b.Concat({a, h}, -1);
  b.SetName(y, "Y");
  b.Output(y);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  TuneOptions options = Options(false);
  options.program_name = "cat";
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(p, target, options));
  ASSERT_EQ(r.search.families.size(), 1u);
  ASSERT_EQ(r.candidates.size(), 2u);
  const SGraph& g = *r.search.families[0].graph;
  EXPECT_EQ(CandidateText(g, r.candidates[0]), "(no parameters)");
  EXPECT_EQ(CandidateText(g, r.candidates[1]), "(no parameters) [programmatic_dependent_launch]");
  ASSERT_EQ(r.code.launches.size(), 1u);
  EXPECT_EQ(r.code.launches[0].function, "prism_cat_k0");
  EXPECT_THAT(r.code.source, HasSubstr("prism_dev::U32x4"));  // 16-byte copies
}

TEST(OptimizeTest, ErrorsByExactMessage) {
  ASSERT_OK_AND_ASSIGN(Target target, LoadTarget("h200"));
  // No family of an f32 matmul can be generated yet: every family's reason once, with the
  // families it stopped.
  const Program softmax = SoftmaxProgram();
  const TuneOptions options = Options(false);
  EXPECT_THAT(Optimize(NarrowMatmulProgram(), target, options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no family can be generated as CUDA yet: 11 families tried; codegen: "
                       "kernel k0, op v2 (matmul): matmul operands must be loop input tiles "
                       "(or, for A, elementwise ops of such tiles) (families #1, #3, #5, #7); "
                       "codegen: kernel k0, op v1 (input): tile rows must be whole 16-byte "
                       "chunks (columns a multiple of 8) (families #2, #4, #6, #8); codegen: "
                       "kernel k0, op v0 (input): tile rows must be whole 16-byte chunks "
                       "(columns a multiple of 8) (families #9-#11); W f16[64, 12], Y f16[4, "
                       "12] have rows that are not whole 16-byte chunks, which the kernels load "
                       "and store: make the last dims multiples of 16 bytes (8 elements of f16 "
                       "or bf16), e.g. by padding with zeros where the program allows"));
  // A program_name that is no identifier.
  for (const char* name : {"2fast", "a-b", "with space"}) {
    TuneOptions named = options;
    named.program_name = name;
    EXPECT_THAT(Optimize(softmax, target, named).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("program_name '", name,
                                      "' is not an identifier: use letters, digits and '_', not "
                                      "starting with a digit, at most 64 characters")));
  }
  // A search whose budget runs out before any family: DeadlineExceeded, not "no family".
  TuneOptions hurried = options;
  hurried.search.budget = absl::Nanoseconds(1);
  EXPECT_THAT(Optimize(softmax, target, hurried).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       "the search found no family for this program within its budget of 1e-09 "
                       "s, which ran out: give it more (prism optimize --budget-s, "
                       "OptimizeOptions.search_budget_s)"));
  // Constant inputs that are not inputs of the program, or named twice.
  const struct {
    std::vector<std::string> names;
    const char* error;
  } constant_cases[] = {
      {{"Y"}, "constant input 'Y' is not an input of the program (inputs: X)"},
      {{"X", "W"}, "constant input 'W' is not an input of the program (inputs: X)"},
      {{"X", "X"}, "constant input 'X' is named twice"},
  };
  for (const auto& c : constant_cases) {
    TuneOptions constant = options;
    constant.constant_inputs = c.names;
    EXPECT_THAT(Optimize(softmax, target, constant).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, c.error));
  }
  TuneOptions bad = options;
  bad.top_families = 0;
  EXPECT_THAT(Optimize(softmax, target, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "top_families and instances_per_family must be at least 1"));

  // --gpu N when there is no driver: an error, not a fallback.
  if (!runtime::DriverLibraryPresent()) {
    TuneOptions gpu = Options(true);
    gpu.require_gpu = true;
    EXPECT_THAT(Optimize(softmax, target, gpu).status(),
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
