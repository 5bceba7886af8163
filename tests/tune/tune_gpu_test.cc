// tune/ on a GPU (ctest label gpu; skips without a driver or device): Optimize measures the
// sampled candidates, then the refinement rounds' neighbours (TuneOptions::refine_rounds), and
// selects the fastest matching one over both.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "block/fixtures/fixtures.h"
#include "gtest/gtest.h"
#include "prism/codegen/nvrtc.h"
#include "prism/runtime/runtime.h"
#include "prism/tune/tune.h"
#include "testing/status_matchers.h"

namespace prism::tune {
namespace {

// A small rmsnorm_linear (M 16, K 1024, N 512) tuned on GPU 0 for the h200 target; skipped
// without a driver, a device or NVRTC.
class TuneGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<runtime::DeviceInfo> dev = runtime::QueryDevice(0);
    if (!dev.ok()) GTEST_SKIP() << dev.status().message();
    if (!codegen::NvrtcAvailable()) GTEST_SKIP() << "built without NVRTC";
    ASSERT_OK_AND_ASSIGN(target, LoadTarget("h200"));
    ASSERT_OK_AND_ASSIGN(f, fixtures::MakeFixture("rmsnorm_linear",
                                                  {{"M", 16}, {"K", 1024}, {"N", 512}}));
  }
  // One family, measured on the GPU (an error if it cannot be used).
  static TuneOptions OneFamily() {
    TuneOptions o;
    o.search.budget = absl::Hours(1);
    o.search.query_budget.timeout_ms = 60'000;
    o.require_gpu = true;
    o.top_families = 1;
    return o;
  }
  Target target;
  fixtures::Fixture f;
};

TEST_F(TuneGpuTest, RefinementMeasuresNeighboursOfTheFastest) {
  const struct {
    int rounds;
    bool refined;  // some candidate comes from a refinement round
  } kCases[] = {{0, false}, {1, true}};
  for (const auto& c : kCases) {
    TuneOptions o = OneFamily();
    o.instances_per_family = 6;
    o.refine_rounds = c.rounds;
    o.refine_max = 8;
    o.confirm_top = 0;  // the fastest first measurement selects (see the test below)
    ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, o));
    ASSERT_EQ(r.method, Method::kMeasured);
    int refined = 0, twins = 0;
    double fastest = 1e30;
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      const Candidate& k = r.candidates[i];
      if (k.measurement && k.measurement->matches) {
        fastest = std::min(fastest, k.measurement->median_us);
      }
      if (k.refined_from < 0) continue;
      ASSERT_LT(k.refined_from, static_cast<int>(i));
      const Candidate& from = r.candidates[k.refined_from];
      ASSERT_TRUE(from.measurement.has_value());
      EXPECT_TRUE(from.measurement->matches);
      EXPECT_EQ(k.family, from.family);
      if (k.assignment == from.assignment) {
        // The variant round's PDL twin of a one-kernel candidate (sm_90 on).
        ++twins;
        EXPECT_EQ(k.codegen_variant, from.codegen_variant.empty()
                                         ? "programmatic_dependent_launch"
                                         : from.codegen_variant + ",programmatic_dependent_launch");
        EXPECT_TRUE(k.compiled) << k.compile_error;
        ASSERT_TRUE(k.measurement.has_value()) << k.measure_error;
        EXPECT_TRUE(k.measurement->matches) << k.codegen_variant;
        continue;
      }
      ++refined;
      // A neighbour of a measured, matching, earlier candidate: same family and variant, one
      // parameter moved.
      EXPECT_EQ(k.codegen_variant, from.codegen_variant);
      int moved = 0;
      for (const auto& [name, value] : k.assignment) moved += from.assignment.at(name) != value;
      EXPECT_EQ(moved, 1) << CandidateText(*r.search.families[k.family].graph, k);
      EXPECT_TRUE(k.compiled) << k.compile_error;
      EXPECT_TRUE(k.measurement.has_value()) << k.measure_error;
    }
    EXPECT_EQ(refined > 0, c.refined) << "rounds " << c.rounds;
    EXPECT_LE(refined, o.refine_max * c.rounds);
    // Without refinement there is no variant round. (With it, whether a twin is added depends
    // on whether the sample already holds one: instances this small get PDL variants there.)
    if (c.rounds == 0) {
      EXPECT_EQ(twins, 0);
    }
    ASSERT_TRUE(r.chosen().measurement.has_value());
    EXPECT_EQ(r.chosen().measurement->median_us, fastest);
  }
}

// The confirmation round (tune.h step 5): the confirm_top fastest matching candidates by their
// first measurement, and only they, are measured confirm_rounds more times; the selection is
// the finalist with the lowest median of those.
TEST_F(TuneGpuTest, ConfirmationPicksTheLowestMedianOfTheFinalists) {
  TuneOptions o = OneFamily();
  o.instances_per_family = 8;
  o.refine_rounds = 0;
  o.confirm_top = 3;
  o.confirm_rounds = 2;
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(f.program, target, o));
  ASSERT_EQ(r.method, Method::kMeasured);
  std::vector<size_t> ranked;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& k = r.candidates[i];
    if (k.measurement && k.measurement->matches) ranked.push_back(i);
  }
  ASSERT_GE(ranked.size(), 3u);
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return r.candidates[a].measurement->median_us < r.candidates[b].measurement->median_us;
  });
  std::vector<std::vector<double>> times;
  for (size_t k = 0; k < ranked.size(); ++k) {
    const Candidate& c = r.candidates[ranked[k]];
    if (k < 3) {
      EXPECT_EQ(c.confirm_us.size(), 2u) << CandidateText(*r.search.families[c.family].graph, c);
      times.push_back(c.confirm_us);
    } else {
      EXPECT_TRUE(c.confirm_us.empty());
    }
  }
  const int pick = PickConfirmed(times);
  ASSERT_GE(pick, 0);
  EXPECT_EQ(r.selected, static_cast<int>(ranked[static_cast<size_t>(pick)]));
}

// The loop-variant round (tune.h step 4): on sm_90 each of the refine_top fastest matching
// candidates that is a wgmma attention instance is measured again with each of
// WgmmaLoopVariants' three reorderings of its variant, same family and assignment, and every
// one of them compiles and matches the reference; other candidates get none.
TEST_F(TuneGpuTest, LoopVariantRoundMeasuresTheWgmmaCandidatesReordered) {
  ASSERT_OK_AND_ASSIGN(runtime::DeviceInfo dev, runtime::QueryDevice(0));
  if (dev.sm() < 90) GTEST_SKIP() << "wgmma needs sm_90";
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture gqa,
                       fixtures::MakeFixture("gqa", {{"G", 2}, {"Lq", 64}, {"D", 64}, {"L", 4096}}));
  TuneOptions o = OneFamily();
  // At L = 1024 the H200's sample of 12 held no wgmma instance (2026-12-06); at 4096 the
  // sample (as `prism optimize --no-gpu` lists it) is 11 wgmma instances of 12.
  o.instances_per_family = 8;
  o.refine_rounds = 1;
  o.refine_top = 1000;  // every matching candidate
  o.refine_max = 0;     // the loop-variant round only
  o.confirm_top = 0;
  ASSERT_OK_AND_ASSIGN(TuneResult r, Optimize(gqa.program, target, o));
  ASSERT_EQ(r.method, Method::kMeasured);
  std::map<int, int> reordered;  // base candidate → its reorderings
  int wgmma = 0;                 // sampled wgmma candidates that matched
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& k = r.candidates[i];
    const size_t at = k.codegen_variant.find(",attention_wgmma_");
    if (at == std::string::npos) {
      if (absl::StartsWith(k.codegen_variant, "attention_wgmma") && k.measurement &&
          k.measurement->matches) {
        ++wgmma;
      }
      continue;
    }
    ASSERT_GE(k.refined_from, 0);
    ASSERT_LT(k.refined_from, static_cast<int>(i));
    const Candidate& from = r.candidates[k.refined_from];
    EXPECT_EQ(k.family, from.family);
    EXPECT_EQ(k.assignment, from.assignment);
    EXPECT_EQ(k.codegen_variant.substr(0, at), from.codegen_variant);
    ++reordered[k.refined_from];
    EXPECT_TRUE(k.compiled) << k.compile_error;
    ASSERT_TRUE(k.measurement.has_value()) << k.measure_error;
    EXPECT_TRUE(k.measurement->matches)
        << k.codegen_variant << ": rel. error " << k.measurement->relative_error;
  }
  ASSERT_GT(wgmma, 0) << "the sample has no wgmma candidate: the test proves nothing";
  EXPECT_EQ(static_cast<int>(reordered.size()), wgmma);
  // Late loads need two stages: a one-stage base gets split P·V only.
  for (const auto& [base, n] : reordered) {
    EXPECT_EQ(n, r.candidates[base].assignment.at("S") >= 2 ? 3 : 1) << "candidate " << base;
  }
}

}  // namespace
}  // namespace prism::tune
