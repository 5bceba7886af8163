// Tests of the theories as data (smt_theories/): they parse for every target; the dominance
// rules state exactly "cost_lb_ns < incumbent" of cost.smt2, term by term; occupancy matches
// the CUDA occupancy calculator; and the dominance bounds never exceed kernels measured on an
// H200 (/work/shared/hardware/), while a deliberately wrong ceiling is refuted by the same
// measurements (the negative control that shows the check has teeth).
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "prism/smt/solver.h"
#include "prism/smt/target.h"
#include "testing/status_matchers.h"

namespace prism::smt {
namespace {

const std::vector<std::string>& MetricNames() {
  static const std::vector<std::string> names = {
      "smem_bytes", "regs_per_thread", "threads_per_block", "grid_x", "grid_y", "grid_z",
      "grid_blocks", "dram_bytes", "l2_bytes", "flops", "sfu_ops", "kernels"};
  return names;
}

// The theory files loaded for one target, with the metrics (and the incumbent, in ps) as
// compile inputs and the known_* flags fixed.
class Theory {
 public:
  explicit Theory(const Target& target, const std::map<std::string, bool>& flags = {}) {
    for (const HardwareConstant& c : target.constants) {
      PRISM_CHECK(s_.Define(*s_.Symbol(c.name, SortKind::kInt), s_.Int(static_cast<int64_t>(c.value)))
                      .ok());
    }
    const std::string dir = JoinPath(*DataDir(), "smt_theories");
    std::vector<std::string> files = {JoinPath(dir, "resources.smt2"), JoinPath(dir, "cost.smt2")};
    std::vector<std::string> rules;
    for (const auto& e : std::filesystem::directory_iterator(JoinPath(dir, "rules"))) {
      rules.push_back(e.path().string());
    }
    std::sort(rules.begin(), rules.end());
    files.insert(files.end(), rules.begin(), rules.end());
    std::vector<ParsedDefinition> defs;
    for (const std::string& f : files) {
      absl::StatusOr<std::vector<ParsedDefinition>> d = s_.ParseDefinitions(f, *ReadFile(f));
      PRISM_CHECK(d.ok(), d.status().ToString());
      for (ParsedDefinition& x : *d) defs.push_back(std::move(x));
    }
    s_.Push();
    inputs_ = MetricNames();
    inputs_.push_back("incumbent_ps");
    for (const std::string& m : MetricNames()) {
      PRISM_CHECK(s_.Declare(*s_.Symbol(m, SortKind::kInt)).ok());
    }
    Term ps = *s_.Symbol("incumbent_ps", SortKind::kInt);
    PRISM_CHECK(s_.Declare(ps).ok());
    for (const char* f : {"known_grid", "known_threads_per_block", "known_l2_bytes"}) {
      auto it = flags.find(f);
      PRISM_CHECK(s_.Define(*s_.Symbol(f, SortKind::kBool), s_.Bool(it == flags.end() || it->second))
                      .ok());
    }
    PRISM_CHECK(s_.Define(*s_.Symbol("incumbent_ns", SortKind::kReal),
                          s_.RealDiv(s_.ToReal(ps), s_.Real(1000)))
                    .ok());
    for (const ParsedDefinition& d : defs) PRISM_CHECK(s_.Define(d.symbol, d.body).ok());
  }

  // The compiled definition `name` (a Bool rule_* or a number).
  CompiledTerm Compile(const std::string& name, SortKind sort) {
    absl::StatusOr<CompiledTerm> c = s_.Compile(*s_.Symbol(name, sort), inputs_);
    PRISM_CHECK(c.ok(), c.status().ToString());
    return *std::move(c);
  }

  static std::vector<int64_t> Inputs(const std::map<std::string, int64_t>& metrics,
                                     double incumbent_us) {
    std::vector<int64_t> in;
    for (const std::string& m : MetricNames()) {
      auto it = metrics.find(m);
      in.push_back(it == metrics.end() ? (m == "threads_per_block" || absl::StartsWith(m, "grid") ||
                                                  m == "kernels"
                                              ? 1
                                              : 0)
                                       : it->second);
    }
    in.push_back(static_cast<int64_t>(std::ceil(incumbent_us * 1e6)));
    return in;
  }

 private:
  Solver s_;
  std::vector<std::string> inputs_;
};

Target Load(const std::string& name) {
  absl::StatusOr<Target> t = LoadTarget(name);
  PRISM_CHECK(t.ok(), t.status().ToString());
  return *std::move(t);
}

TEST(TheoryTest, ParsesForEveryTarget) {
  const std::vector<std::string> names = *ListTargets();
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    Theory theory(Load(name));
    theory.Compile("cost_lb_ns", SortKind::kReal);
    for (const char* r : {"rule_smem_capacity", "rule_register_capacity", "rule_thread_limits",
                          "rule_grid_limits", "rule_divisibility", "rule_occupancy_floor",
                          "rule_wave_quantization", "rule_bandwidth_bound", "rule_compute_bound"}) {
      theory.Compile(r, SortKind::kBool);
    }
  }
}

// Each dominance rule is "t_launch_ns + its cost terms < incumbent", and all of them together
// are "cost_lb_ns < incumbent": checked exactly (rational arithmetic) on random metrics.
TEST(TheoryTest, DominanceRulesStateTheCostLowerBound) {
  Rng rng(3);
  for (bool known : {true, false}) {
    Theory theory(Load("h200"), {{"known_grid", known}, {"known_l2_bytes", known}});
    struct Pair {
      const char* rule;
      std::vector<const char*> terms;
    };
    const std::vector<Pair> pairs = {
        {"rule_bandwidth_bound", {"t_dram_ns", "t_l2_ns"}},
        {"rule_compute_bound", {"t_flops_ns", "t_sfu_ns"}},
        {"rule_occupancy_floor", {"t_ingress_ns"}},
        {"rule_wave_quantization", {"t_wave_ns"}},
    };
    std::vector<CompiledTerm> rules;
    std::vector<std::vector<CompiledTerm>> terms;
    for (const Pair& p : pairs) {
      rules.push_back(theory.Compile(p.rule, SortKind::kBool));
      terms.emplace_back();
      for (const char* t : p.terms) terms.back().push_back(theory.Compile(t, SortKind::kReal));
    }
    CompiledTerm launch = theory.Compile("t_launch_ns", SortKind::kReal);
    CompiledTerm cost = theory.Compile("cost_lb_ns", SortKind::kReal);
    for (int i = 0; i < 3000; ++i) {
      const int64_t grid = rng.UniformInt(1, 600);
      std::map<std::string, int64_t> m = {
          {"grid_x", grid},
          {"grid_blocks", grid},
          {"dram_bytes", rng.UniformInt(0, 400'000'000)},
          {"l2_bytes", rng.UniformInt(0, 2'000'000'000)},
          {"flops", rng.UniformInt(0, 100'000'000'000)},
          {"sfu_ops", rng.UniformInt(0, 1'000'000'000)},
          {"kernels", rng.UniformInt(1, 3)},
      };
      const double incumbent = rng.Uniform(0.1, 500.0);
      const std::vector<int64_t> in = Theory::Inputs(m, incumbent);
      const double inc_ns = static_cast<double>(in.back()) / 1000.0;
      const double launch_ns = *launch.EvaluateNumber(in);
      bool all = true;
      for (size_t k = 0; k < pairs.size(); ++k) {
        double worst = 0;
        for (const CompiledTerm& t : terms[k]) worst = std::max(worst, *t.EvaluateNumber(in));
        const bool rule = *rules[k].EvaluateBool(in);
        all = all && rule;
        const double lhs = launch_ns + worst;
        // Away from exact ties (double rounding), the rule is the comparison.
        if (std::abs(lhs - inc_ns) > 1e-6 * inc_ns && (worst > 0 || !known)) {
          const bool guarded_off = worst == 0 && pairs[k].rule != std::string("rule_bandwidth_bound") &&
                                   pairs[k].rule != std::string("rule_compute_bound");
          if (!guarded_off) {
            EXPECT_EQ(rule, lhs < inc_ns) << pairs[k].rule << " sample " << i;
          }
        }
      }
      const double lb = *cost.EvaluateNumber(in);
      if (std::abs(lb - inc_ns) > 1e-6 * inc_ns) {
        EXPECT_EQ(all, lb < inc_ns) << "sample " << i << " lb " << lb << " incumbent " << inc_ns;
      }
    }
  }
}

// Resident blocks per SM for configurations whose answers the CUDA occupancy calculator gives
// (compute capability 9.0: 64K registers, 228 KiB shared memory, 2048 threads, 32 blocks).
TEST(TheoryTest, OccupancyMatchesTheOccupancyCalculator) {
  struct Row {
    int64_t threads, regs, smem, blocks;
  };
  const std::vector<Row> rows = {
      {256, 64, 49152, 4},    // smem: 233472 / (49152 + 1024) = 4; regs: 65536 / 16384 = 4
      {128, 32, 0, 16},       // threads: 2048 / 128 = 16; regs: 65536 / 4096 = 16
      {64, 32, 0, 32},        // the 32-block limit
      {1024, 64, 0, 1},       // regs: 65536 / 65536 = 1
      {256, 65, 0, 3},        // 65 registers round to 72 per thread: 65536 / 18432 = 3
      {128, 0, 100000, 2},    // smem: 233472 / 101024 = 2
      {96, 40, 0, 17},        // 3 warps x 1280 registers: 65536 / 3840 = 17 (threads: 21)
  };
  Theory theory(Load("h200"));
  CompiledTerm blocks = theory.Compile("blocks_per_sm", SortKind::kInt);
  for (const Row& r : rows) {
    const std::vector<int64_t> in = Theory::Inputs(
        {{"threads_per_block", r.threads}, {"regs_per_thread", r.regs}, {"smem_bytes", r.smem}}, 1);
    EXPECT_EQ(*blocks.EvaluateInt(in), r.blocks)
        << r.threads << " threads, " << r.regs << " regs, " << r.smem << " smem";
  }
}

// A kernel that was measured on the H200 must never be dominated at its measured time: the
// dominance rules must all hold (lower bound < measured time). Measurements from
// /work/shared/hardware/README.md and h200-2026-11-29.json.
struct Measured {
  const char* what;
  std::map<std::string, int64_t> metrics;
  double time_us;
};
std::vector<Measured> MeasuredH200() {
  const int64_t gib = int64_t{1} << 30;
  std::vector<Measured> out;
  // Reads of 1 GiB with k blocks of 1024 threads, 8 loads in flight: bandwidth per k.
  const std::vector<std::pair<int64_t, double>> ilp8 = {
      {1, 133.116e9}, {2, 266.830e9}, {8, 998.644e9}, {32, 2890.63e9}, {132, 3903.49e9}, {264, 4192.21e9}};
  for (const auto& [k, bps] : ilp8) {
    out.push_back({"read, 8 loads in flight",
                   {{"grid_x", k}, {"grid_blocks", k}, {"threads_per_block", 1024}, {"dram_bytes", gib},
                    {"l2_bytes", gib}, {"kernels", 1}},
                   static_cast<double>(gib) / bps * 1e6});
  }
  // Whole-GPU DRAM read at 4.28 TB/s, L2 re-read at 6.80 TB/s (16 MiB, many passes).
  out.push_back({"DRAM read", {{"grid_x", 1320}, {"grid_blocks", 1320}, {"dram_bytes", 4 * gib},
                               {"l2_bytes", 4 * gib}, {"kernels", 1}},
                 4.0 * gib / 4276.63e9 * 1e6});
  out.push_back({"L2 re-read", {{"grid_x", 1320}, {"grid_blocks", 1320}, {"dram_bytes", 16 << 20},
                                {"l2_bytes", 4 * gib}, {"kernels", 1}},
                 4.0 * gib / 6795.70e9 * 1e6});
  // cuBLAS 8192^3 f16 matmul at 754 TFLOP/s.
  const int64_t n = 8192;
  out.push_back({"cuBLAS 8192^3", {{"grid_x", 512}, {"grid_blocks", 512}, {"flops", 2 * n * n * n},
                                   {"dram_bytes", 3 * n * n * 2}, {"l2_bytes", 3 * n * n * 2}, {"kernels", 1}},
                 2.0 * n * n * n / 754e12 * 1e6});
  // A trivial kernel as a CUDA-graph node: 1.5 us.
  out.push_back({"trivial kernel", {{"grid_x", 1}, {"grid_blocks", 1}, {"kernels", 1}}, 1.5});
  return out;
}

bool AllDominanceRulesHold(Theory& theory, const Measured& m) {
  bool all = true;
  for (const char* r : {"rule_bandwidth_bound", "rule_compute_bound", "rule_occupancy_floor",
                        "rule_wave_quantization"}) {
    all = all && *theory.Compile(r, SortKind::kBool).EvaluateBool(Theory::Inputs(m.metrics, m.time_us));
  }
  return all;
}

TEST(TheoryTest, MeasuredH200KernelsAreNeverDominated) {
  Theory theory(Load("h200"));
  for (const Measured& m : MeasuredH200()) {
    EXPECT_TRUE(AllDominanceRulesHold(theory, m)) << m.what << " at " << m.time_us << " us";
  }
}

// Negative control: the same check refutes ceilings set to typical rather than peak values.
TEST(TheoryTest, AWrongCeilingIsRefutedByTheMeasurements) {
  struct Wrong {
    const char* constant;
    double value;  // a "typical" figure, below what the hardware was measured to do
  };
  const std::vector<Wrong> wrong = {
      {"hw_sm_bytes_per_ns", 42},          // one load in flight per thread (README table)
      {"hw_dram_bytes_per_ns", 3350},      // the H100's datasheet bandwidth
      {"hw_tensor_flops_per_ns", 700000},  // a "typical" matmul efficiency
      {"hw_launch_floor_ns", 2000},        // a typical launch latency, above the measured 1.5 us
  };
  for (const Wrong& w : wrong) {
    SCOPED_TRACE(w.constant);
    Target t = Load("h200");
    for (HardwareConstant& c : t.constants) {
      if (c.name == w.constant) c.value = w.value;
    }
    Theory theory(t);
    bool refuted = false;
    for (const Measured& m : MeasuredH200()) refuted = refuted || !AllDominanceRulesHold(theory, m);
    EXPECT_TRUE(refuted);
  }
}

}  // namespace
}  // namespace prism::smt
