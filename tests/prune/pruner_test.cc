// Tests of prune/pruner.h:
//   * a table of hand-built families, one per rule, with the expected decision and core;
//   * a differential soundness test over 240 seeded random small families: brute-force
//     enumeration of every assignment, with the rules evaluated by an independent oracle (Z3's
//     simplifier on the theory files, not the pruner's compiled rules nor its encoder), agrees
//     with every decision, and every reported core really excludes every assignment;
//   * the dumped SMT-LIB2 of every pruning decision, re-run through the `z3` command, answers
//     the same (unsat, same core);
//   * a zero budget prunes nothing; EnumerateInstances equals brute force (both strategies);
//   * malformed theory files and families are rejected with exact messages.
#include "prism/prune/pruner.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "testing/status_matchers.h"

namespace prism::prune {
namespace {

using ::prism::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Target H200() {
  absl::StatusOr<Target> t = LoadTarget("h200");
  PRISM_CHECK(t.ok(), t.status().ToString());
  return *std::move(t);
}

Pruner MakePruner(PrunerOptions options = {}) {
  absl::StatusOr<Pruner> p = Pruner::Create(H200(), std::move(options));
  PRISM_CHECK(p.ok(), p.status().ToString());
  return *std::move(p);
}

std::string Kind(const Decision& d) {
  if (std::holds_alternative<Infeasible>(d.result)) return "infeasible";
  if (std::holds_alternative<Dominated>(d.result)) return "dominated";
  if (std::holds_alternative<Feasible>(d.result)) return "feasible";
  return "unknown";
}

std::vector<std::string> Core(const Decision& d) {
  if (const auto* x = std::get_if<Infeasible>(&d.result)) return x->rules;
  if (const auto* x = std::get_if<Dominated>(&d.result)) return x->rules;
  return {};
}

// ---- hand-built families ---------------------------------------------------------------------

struct Spec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;       // name, domain
  std::vector<std::pair<std::string, std::string>> metrics;      // name, expression
  std::vector<std::pair<std::string, std::string>> constraints;  // name, condition
};

Family Build(ExprContext& ctx, const Spec& spec) {
  Family f(spec.name, ctx);
  for (const auto& [name, domain] : spec.params) {
    absl::StatusOr<Domain> d = Domain::Parse(domain);
    PRISM_CHECK(d.ok(), d.status().ToString());
    PRISM_CHECK(f.AddParameter(name, *d).ok());
  }
  for (const auto& [name, text] : spec.metrics) {
    absl::Status s = f.SetMetricText(name, text);
    PRISM_CHECK(s.ok(), s.ToString());
  }
  for (const auto& [name, text] : spec.constraints) {
    absl::Status s = f.AddConstraintText(name, text, "test");
    PRISM_CHECK(s.ok(), s.ToString());
  }
  return f;
}

Family LoadJsonFamily(ExprContext& ctx, const std::string& file) {
  absl::StatusOr<std::string> text =
      ReadFile(JoinPath(PRISM_SOURCE_DIR, absl::StrCat("tests/prune/families/", file)));
  PRISM_CHECK(text.ok(), text.status().ToString());
  absl::StatusOr<Family> f = Family::FromJson(nlohmann::json::parse(*text), ctx);
  PRISM_CHECK(f.ok(), f.status().ToString());
  return *std::move(f);
}

struct Row {
  Spec spec;
  std::optional<double> incumbent_us;
  std::string kind;
  std::vector<std::string> core;  // for infeasible / dominated
};

// One family per rule (plus constraints and a feasible one). Each family is designed so that
// exactly one label excludes every assignment, so the core is unique.
std::vector<Row> TableRows() {
  const std::string rms_smem = "S * (16 * (4096 floordiv F) + (4096 floordiv F) * (6144 floordiv g)) * 2";
  return {
      {{"smem_too_big",
        {{"g", "divisors(6144, 1, 64)"}, {"F", "{1, 2, 4}"}, {"T", "{64, 128}"}, {"S", "range(3, 4)"}},
        {{"smem_bytes", rms_smem}, {"threads_per_block", "T"}, {"grid_x", "g"}},
        {}},
       std::nullopt, "infeasible", {"smem_capacity"}},
      {{"too_many_threads", {{"T", "pow2(2048, 4096)"}}, {{"threads_per_block", "T"}}, {}},
       std::nullopt, "infeasible", {"thread_limits"}},
      {{"too_many_registers",
        {{"T", "{512, 1024}"}, {"A", "range(140, 200)"}},
        {{"threads_per_block", "T"}, {"regs_per_thread", "A"}},
        {}},
       std::nullopt, "infeasible", {"register_capacity"}},
      {{"grid_too_tall", {{"Y", "range(65536, 70000)"}}, {{"grid_y", "Y"}}, {}},
       std::nullopt, "infeasible", {"grid_limits"}},
      {{"partial_warps", {{"T", "{48, 80, 100}"}}, {{"threads_per_block", "T"}}, {}},
       std::nullopt, "infeasible", {"divisibility"}},
      {{"contradicting_constraint",
        {{"F", "pow2(1, 8)"}, {"T", "{128, 256}"}},
        {{"threads_per_block", "T"}},
        {{"f_large", "F > 8"}}},
       std::nullopt, "infeasible", {"constraint.f_large"}},
      {{"memory_bound",
        {{"g", "pow2(64, 1024)"}},
        {{"grid_x", "g"}, {"dram_bytes", "1000000000"}, {"l2_bytes", "1000000000"}},
        {}},
       100.0, "dominated", {"bandwidth_bound"}},
      {{"compute_bound",
        {{"g", "pow2(128, 1024)"}},
        {{"grid_x", "g"}, {"flops", "100000000000000"}, {"kernels", "2"}},
        {}},
       1000.0, "dominated", {"compute_bound"}},
      {{"one_block_cannot_pull_bandwidth",
        {{"T", "{256, 512}"}},
        {{"threads_per_block", "T"}, {"grid_x", "1"}, {"l2_bytes", "100000000"},
         {"dram_bytes", "100000000"}, {"kernels", "2"}},
        {}},
       100.0, "dominated", {"occupancy_floor"}},
      {{"one_block_too_many",
        {{"T", "{256, 512}"}},
        // Compute bound 40 us; the busiest of 132 SMs runs 2 of the 133 equal blocks: 79 us.
        {{"threads_per_block", "T"}, {"grid_x", "133"}, {"flops", "42822000000"},
         {"l2_bytes", "1000"}, {"dram_bytes", "1000"}},
        {}},
       60.0, "dominated", {"wave_quantization"}},
      {{"rmsnorm_like",
        {{"g", "divisors(6144)"}, {"F", "divisors(4096)"}, {"T", "{64, 128, 256, 512}"},
         {"S", "range(1, 4)"}},
        {{"smem_bytes", rms_smem}, {"threads_per_block", "T"}, {"grid_x", "g"},
         {"regs_per_thread", "(16 * (6144 floordiv g) + T - 1) floordiv T + 32"},
         {"dram_bytes", "50675712"}, {"l2_bytes", "g * 131072 + 50528256"}},
        {{"k_tile", "(4096 floordiv F) mod 16 == 0"}}},
       40.0, "feasible", {}},
  };
}

TEST(PrunerTest, RulesAreLoadedWithTheirSoundnessArguments) {
  Pruner p = MakePruner();
  std::vector<std::string> names;
  for (const RuleInfo& r : p.rules()) {
    names.push_back(r.name);
    EXPECT_GT(r.soundness.size(), 40u) << r.name;
    const bool dominance = r.name == "bandwidth_bound" || r.name == "compute_bound" ||
                           r.name == "occupancy_floor" || r.name == "wave_quantization";
    EXPECT_EQ(r.kind, dominance ? RuleInfo::Kind::kDominance : RuleInfo::Kind::kHard) << r.name;
  }
  EXPECT_THAT(names, ElementsAre("bandwidth_bound", "compute_bound", "divisibility",
                                 "grid_limits", "occupancy_floor", "register_capacity",
                                 "smem_capacity", "thread_limits", "wave_quantization"));
}

TEST(PrunerTest, EveryTargetLoadsTheTheories) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, ListTargets());
  for (const std::string& name : names) {
    ASSERT_OK_AND_ASSIGN(Target t, LoadTarget(name));
    EXPECT_OK(Pruner::Create(t).status()) << name;
  }
}

// Each row decided with probes (the default) and without (Z3 only), with the same answer.
TEST(PrunerTest, TableOfFamilies) {
  for (int probes : {16, 0}) {
    PrunerOptions options;
    options.probe_limit = probes;
    Pruner p = MakePruner(options);
    for (const Row& row : TableRows()) {
      SCOPED_TRACE(absl::StrCat(row.spec.name, " probes=", probes));
      ExprContext ctx;
      Family f = Build(ctx, row.spec);
      ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, row.incumbent_us));
      EXPECT_EQ(Kind(d), row.kind) << d.ToString();
      EXPECT_EQ(Core(d), row.core) << d.ToString();
      if (const auto* feasible = std::get_if<Feasible>(&d.result)) {
        ASSERT_OK_AND_ASSIGN(InstanceCheck c, p.CheckInstance(f, feasible->witness, row.incumbent_us));
        EXPECT_TRUE(c.ok()) << absl::StrJoin(c.violated, ", ");
        EXPECT_LT(feasible->cost_lower_bound_us, *row.incumbent_us);
      }
      if (const auto* dominated = std::get_if<Dominated>(&d.result)) {
        EXPECT_EQ(dominated->incumbent_us, *row.incumbent_us);
        EXPECT_GE(dominated->lower_bound_us, *row.incumbent_us);
      }
    }
  }
}

TEST(PrunerTest, ShippedFamilies) {
  Pruner p = MakePruner();
  struct Case {
    const char* file;
    std::optional<double> incumbent_us;
    const char* kind;
  };
  // 15 us is near the rmsnorm_linear optimum (WALKTHROUGH.md section 6); 1 us is far below
  // any family's lower bound.
  const std::vector<Case> cases = {
      {"rmsnorm_linear.json", std::nullopt, "feasible"},
      {"rmsnorm_linear.json", 15.0, "feasible"},
      {"rmsnorm_linear.json", 1.0, "dominated"},
      {"gqa_split_kv.json", std::nullopt, "feasible"},
      {"gqa_split_kv.json", 1.0, "dominated"},
      {"vector_copy.json", std::nullopt, "feasible"},
      {"vector_copy.json", 0.5, "dominated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    ExprContext ctx;
    Family f = LoadJsonFamily(ctx, c.file);
    ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, c.incumbent_us));
    EXPECT_EQ(Kind(d), c.kind) << d.ToString();
  }
  EXPECT_GT(p.stats().total.queries, 0);
}

// ---- the independent oracle -------------------------------------------------------------------

// Evaluates the rules at concrete metric values with Z3's simplifier over the theory files,
// sharing nothing with the pruner but the files and the Solver's parser.
class Oracle {
 public:
  Oracle() {
    const Target t = H200();
    for (const HardwareConstant& c : t.constants) {
      smt::Term sym = *solver_.Symbol(c.name, smt::SortKind::kInt);
      PRISM_CHECK(solver_.Define(sym, solver_.Int(static_cast<int64_t>(c.value))).ok());
    }
    for (const MetricInfo& m : StandardMetrics()) {
      PRISM_CHECK(solver_.Symbol(m.name, smt::SortKind::kInt).ok());
      PRISM_CHECK(solver_.Symbol(absl::StrCat("known_", m.name), smt::SortKind::kBool).ok());
    }
    PRISM_CHECK(solver_.Symbol("known_grid", smt::SortKind::kBool).ok());
    PRISM_CHECK(solver_.Symbol("incumbent_ns", smt::SortKind::kReal).ok());
    const std::string dir = JoinPath(*DataDir(), "smt_theories");
    std::vector<std::string> files = {JoinPath(dir, "resources.smt2"), JoinPath(dir, "cost.smt2")};
    std::vector<std::string> rule_files;
    for (const auto& e : std::filesystem::directory_iterator(JoinPath(dir, "rules"))) {
      rule_files.push_back(e.path().string());
    }
    std::sort(rule_files.begin(), rule_files.end());
    files.insert(files.end(), rule_files.begin(), rule_files.end());
    for (const std::string& file : files) {
      absl::StatusOr<std::vector<smt::ParsedDefinition>> d =
          solver_.ParseDefinitions(file, *ReadFile(file));
      PRISM_CHECK(d.ok(), d.status().ToString());
      for (smt::ParsedDefinition& def : *d) {
        if (absl::StartsWith(def.name, "rule_")) rules_.push_back(def.name.substr(5));
        defs_.push_back(std::move(def));
      }
    }
  }

  // The labels violated at `a`: constraints by expr/ evaluation, rules by Z3's simplifier.
  // nullopt if the family cannot be evaluated at `a` (not an instance).
  std::optional<std::vector<std::string>> Violated(const Family& f, const Assignment& a,
                                                   std::optional<double> incumbent_us,
                                                   double* cost_lb_us = nullptr) {
    absl::StatusOr<Family::Evaluation> ev = f.Evaluate(a);
    if (!ev.ok()) return std::nullopt;
    std::vector<std::string> out;
    for (const std::string& c : ev->violated_constraints) out.push_back("constraint." + c);
    solver_.Push();
    for (const MetricInfo& m : StandardMetrics()) {
      PRISM_CHECK(solver_.Define(*solver_.Symbol(m.name, smt::SortKind::kInt),
                                 solver_.Int(ev->metrics.at(std::string(m.name))))
                      .ok());
      PRISM_CHECK(solver_.Define(*solver_.Symbol(absl::StrCat("known_", m.name), smt::SortKind::kBool),
                                 solver_.Bool(f.HasMetric(m.name)))
                      .ok());
    }
    const bool known_grid = f.HasMetric(kGridX) || f.HasMetric(kGridY) || f.HasMetric(kGridZ) ||
                            f.HasMetric(kGridBlocks);
    PRISM_CHECK(solver_.Define(*solver_.Symbol("known_grid", smt::SortKind::kBool),
                               solver_.Bool(known_grid)).ok());
    const int64_t ps = incumbent_us ? static_cast<int64_t>(std::ceil(*incumbent_us * 1e6)) : 0;
    PRISM_CHECK(solver_.Define(*solver_.Symbol("incumbent_ns", smt::SortKind::kReal),
                               solver_.Real(ps, 1000)).ok());
    for (const smt::ParsedDefinition& d : defs_) PRISM_CHECK(solver_.Define(d.symbol, d.body).ok());
    for (const std::string& r : rules_) {
      const bool dominance = r == "bandwidth_bound" || r == "compute_bound" ||
                             r == "occupancy_floor" || r == "wave_quantization";
      if (dominance && !incumbent_us) continue;
      absl::StatusOr<double> v =
          solver_.EvaluateWithZ3(*solver_.Symbol("rule_" + r, smt::SortKind::kBool), {});
      PRISM_CHECK(v.ok(), v.status().ToString());
      if (*v == 0.0) out.push_back(r);
    }
    if (cost_lb_us != nullptr) {
      *cost_lb_us = *solver_.EvaluateWithZ3(*solver_.Symbol("cost_lb_ns", smt::SortKind::kReal), {}) / 1000;
    }
    solver_.Pop();
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  smt::Solver solver_;
  std::vector<smt::ParsedDefinition> defs_;
  std::vector<std::string> rules_;
};

bool IsDominanceLabel(const std::string& l) {
  return l == "bandwidth_bound" || l == "compute_bound" || l == "occupancy_floor" ||
         l == "wave_quantization";
}

// A random small family: 1-3 parameters, a random subset of metrics built from them, maybe a
// constraint, so that every kind of decision and every rule occurs.
Spec RandomSpec(Rng& rng, int index) {
  Spec s;
  s.name = absl::StrCat("random_", index);
  const int n = static_cast<int>(rng.UniformInt(1, 3));
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < n; ++i) {
    std::string domain;
    switch (rng.UniformInt(0, 3)) {
      case 0: {
        const int64_t lo = rng.UniformInt(1, 8);
        domain = absl::StrCat("range(", lo, ", ", lo + rng.UniformInt(0, 5), ")");
        break;
      }
      case 1:
        domain = absl::StrCat("pow2(1, ", int64_t{1} << rng.UniformInt(2, 8), ")");
        break;
      case 2:
        domain = absl::StrCat("divisors(", rng.UniformInt(12, 96), ")");
        break;
      default: {
        // One draw per statement: the order in which function arguments are evaluated is
        // unspecified (GCC and clang differ), and the families must not depend on the compiler.
        // The order is GCC's, right to left, which keeps the families this test always had.
        const int64_t c = rng.UniformInt(17, 64);
        const int64_t b = rng.UniformInt(5, 16);
        const int64_t a = rng.UniformInt(1, 4);
        domain = absl::StrCat("{", a, ", ", b, ", ", c, "}");
      }
    }
    s.params.emplace_back(names[i], domain);
  }
  const auto param = [&] { return std::string(names[rng.UniformInt(0, n - 1)]); };
  const auto maybe = [&](double p) { return rng.Uniform() < p; };
  if (maybe(0.6)) {
    const std::string p2 = param();
    const std::string p1 = param();
    s.metrics.emplace_back("smem_bytes",
                           absl::StrCat(int64_t{1} << rng.UniformInt(8, 16), " * ", p1, " * ", p2));
  }
  if (maybe(0.6)) {
    s.metrics.emplace_back("threads_per_block",
                           maybe(0.7) ? absl::StrCat("32 * ", param()) : absl::StrCat("16 * ", param()));
  }
  if (maybe(0.4)) {
    const std::string p = param();
    const int64_t b = rng.UniformInt(1, 40);
    const int64_t a = rng.UniformInt(16, 64);
    s.metrics.emplace_back("regs_per_thread", absl::StrCat(a, " + ", b, " * ", p));
  }
  if (maybe(0.6)) {
    if (maybe(0.5)) {
      const std::string p = param();
      s.metrics.emplace_back("grid_x", absl::StrCat(rng.UniformInt(64, 4096), " floordiv ", p));
    } else {
      const std::string p = param();
      s.metrics.emplace_back("grid_x", absl::StrCat(rng.UniformInt(1, 200), " * ", p));
    }
  }
  if (maybe(0.2)) {
    const std::string p = param();
    s.metrics.emplace_back("grid_y", absl::StrCat(rng.UniformInt(1, 40000), " * ", p));
  }
  if (maybe(0.7)) {
    s.metrics.emplace_back("dram_bytes", absl::StrCat(rng.UniformInt(1, 400), " * 1000000"));
  }
  if (maybe(0.5)) {
    const std::string p = param();
    s.metrics.emplace_back("l2_bytes", absl::StrCat(rng.UniformInt(1, 200), " * 1000000 * ", p));
  }
  if (maybe(0.4)) {
    const std::string p = param();
    s.metrics.emplace_back("flops", absl::StrCat(rng.UniformInt(1, 2000), " * 1000000000 * ", p));
  }
  if (maybe(0.3)) s.metrics.emplace_back("sfu_ops", absl::StrCat(rng.UniformInt(1, 100), " * 1000000"));
  if (maybe(0.3)) s.metrics.emplace_back("kernels", absl::StrCat(rng.UniformInt(1, 3)));
  if (maybe(0.4)) {
    if (maybe(0.5)) {
      const int64_t m = rng.UniformInt(2, 8);
      const std::string p = param();
      const int64_t a = rng.UniformInt(16, 512);
      s.constraints.emplace_back("c0", absl::StrCat("(", a, " floordiv ", p, ") mod ", m, " == 0"));
    } else {
      const int64_t k = rng.UniformInt(-3, 3);
      const std::string p2 = param();
      const std::string p1 = param();
      s.constraints.emplace_back("c0", absl::StrCat(p1, " <= ", p2, " + ", k));
    }
  }
  return s;
}

// The differential soundness test. For every random family and decision:
//   Infeasible(core)  no assignment passes the constraints and hard rules, and every assignment
//                     violates a label of the core;
//   Dominated(core)   no assignment passes everything (dominance included), and every
//                     assignment violates a label of the core;
//   Feasible(w)       w passes everything by the oracle, and the pruner's CheckInstance agrees;
// and EnumerateInstances lists exactly the passing assignments, in order.
TEST(PrunerTest, DifferentialSoundnessOnRandomFamilies) {
  Oracle oracle;
  Pruner p = MakePruner();
  Rng rng(20261129);
  std::map<std::string, int> kinds;
  std::map<std::string, int> core_labels;
  constexpr int kFamilies = 240;
  for (int i = 0; i < kFamilies; ++i) {
    const Spec spec = RandomSpec(rng, i);
    std::optional<double> incumbent;
    if (rng.Uniform() < 0.6) incumbent = rng.Uniform(0.2, 300.0);
    ExprContext ctx;
    Family f = Build(ctx, spec);
    SCOPED_TRACE(absl::StrCat(spec.name, " incumbent=", incumbent.value_or(-1), " ",
                              f.ToJson().dump()));
    ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, incumbent));
    ASSERT_OK_AND_ASSIGN(InstanceChecker checker, p.MakeChecker(f));
    ++kinds[Kind(d)];
    for (const std::string& l : Core(d)) ++core_labels[l];
    // Brute force with the oracle.
    std::vector<Assignment> passing;
    std::vector<std::vector<std::string>> violations;
    ASSERT_OK(f.ForEachAssignment([&](const Assignment& a) {
      std::optional<std::vector<std::string>> v = oracle.Violated(f, a, incumbent);
      if (!v) return true;
      // The pruner's compiled evaluation agrees with the oracle.
      absl::StatusOr<InstanceCheck> c = p.CheckInstance(f, a, incumbent);
      EXPECT_TRUE(c.ok()) << c.status();
      // The pruner-free checker answers exactly as the pruner does.
      absl::StatusOr<InstanceCheck> by_checker = checker.Check(f, a, incumbent);
      EXPECT_EQ(by_checker.status(), c.status());
      if (c.ok() && by_checker.ok()) {
        EXPECT_EQ(by_checker->violated, c->violated);
        EXPECT_EQ(by_checker->domain_violations, c->domain_violations);
        EXPECT_EQ(by_checker->metrics, c->metrics);
        EXPECT_EQ(by_checker->cost_lower_bound_us, c->cost_lower_bound_us);
      }
      if (c.ok()) {
        std::vector<std::string> mine = c->violated;
        std::sort(mine.begin(), mine.end());
        EXPECT_EQ(mine, *v);
      }
      if (v->empty()) passing.push_back(a);
      violations.push_back(*v);
      return true;
    }));
    const auto hard_only = [](const std::vector<std::string>& v) {
      for (const std::string& l : v) {
        if (!IsDominanceLabel(l)) return false;
      }
      return true;
    };
    if (std::holds_alternative<Infeasible>(d.result) || std::holds_alternative<Dominated>(d.result)) {
      EXPECT_TRUE(passing.empty()) << d.ToString();
      const std::vector<std::string> core = Core(d);
      for (const auto& v : violations) {
        bool hit = false;
        for (const std::string& l : v) hit = hit || std::find(core.begin(), core.end(), l) != core.end();
        EXPECT_TRUE(hit) << "an assignment violating only {" << absl::StrJoin(v, ", ")
                         << "} escapes the core " << d.ToString();
        if (std::holds_alternative<Infeasible>(d.result)) {
          EXPECT_FALSE(hard_only(v) && !v.empty()) << "infeasible, but only dominance is violated";
        }
      }
    }
    if (const auto* w = std::get_if<Feasible>(&d.result)) {
      std::optional<std::vector<std::string>> v = oracle.Violated(f, w->witness, incumbent);
      ASSERT_TRUE(v.has_value());
      EXPECT_TRUE(v->empty()) << "witness violates " << absl::StrJoin(*v, ", ");
    }
    // Enumeration equals brute force.
    ASSERT_OK_AND_ASSIGN(std::vector<Assignment> listed, p.EnumerateInstances(f, incumbent, 1 << 20));
    EXPECT_EQ(listed, passing);
  }
  // The generator reaches every kind of decision and every rule.
  EXPECT_GE(kinds["infeasible"], 20);
  EXPECT_GE(kinds["dominated"], 20);
  EXPECT_GE(kinds["feasible"], 20);
  EXPECT_EQ(kinds["unknown"], 0);
  for (const char* rule : {"smem_capacity", "thread_limits", "divisibility", "grid_limits",
                           "bandwidth_bound", "compute_bound", "register_capacity"}) {
    EXPECT_GE(core_labels[rule], 1) << rule;
  }
}

// ---- dumps ----------------------------------------------------------------------------------

std::optional<std::string> RunZ3(const std::string& path) {
  if (std::system("command -v z3 > /dev/null 2>&1") != 0) return std::nullopt;
  std::string output;
  FILE* pipe = popen(absl::StrCat("z3 -smt2 ", path, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) output.append(buf, n);
  pclose(pipe);
  return output;
}

TEST(PrunerTest, DumpedQueriesAreRecheckedByTheZ3Command) {
  const std::string dir = JoinPath(::testing::TempDir(), "prism_pruner_dumps");
  std::filesystem::remove_all(dir);
  for (int probes : {16, 0}) {
    PrunerOptions options;
    options.dump_dir = dir;
    options.probe_limit = probes;
    Pruner p = MakePruner(options);
    for (const Row& row : TableRows()) {
      SCOPED_TRACE(absl::StrCat(row.spec.name, " probes=", probes));
      ExprContext ctx;
      Family f = Build(ctx, row.spec);
      ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, row.incumbent_us));
      if (!d.prunes()) {
        EXPECT_TRUE(d.smt_file.empty());
        continue;
      }
      ASSERT_FALSE(d.smt_file.empty());
      ASSERT_OK_AND_ASSIGN(std::string text, ReadFile(d.smt_file));
      EXPECT_THAT(text, HasSubstr("(set-option :produce-unsat-cores true)"));
      EXPECT_THAT(text, HasSubstr("; family: " + row.spec.name));
      EXPECT_THAT(text, HasSubstr("(check-sat)\n(get-unsat-core)"));
      std::optional<std::string> out = RunZ3(d.smt_file);
      if (!out) GTEST_SKIP() << "the z3 command is not installed";
      std::vector<std::string> lines = absl::StrSplit(*out, '\n', absl::SkipEmpty());
      ASSERT_GE(lines.size(), 2u) << *out;
      EXPECT_EQ(lines[0], "unsat") << *out;
      // z3's (minimised) core, without the domain-membership labels, is the reported one.
      std::string core_line = lines[1];
      ASSERT_GE(core_line.size(), 2u);
      std::vector<std::string> z3_core;
      for (absl::string_view l : absl::StrSplit(core_line.substr(1, core_line.size() - 2), ' ',
                                                absl::SkipEmpty())) {
        if (!absl::StartsWith(l, "domain.")) z3_core.emplace_back(l);
      }
      std::sort(z3_core.begin(), z3_core.end());
      EXPECT_EQ(z3_core, Core(d)) << *out;
    }
  }
  std::filesystem::remove_all(dir);
}

// ---- budgets, enumeration, errors ---------------------------------------------------------------

TEST(PrunerTest, ZeroBudgetPrunesNothing) {
  for (int probes : {16, 0}) {
    PrunerOptions options;
    options.budget = smt::Budget::Zero();
    options.probe_limit = probes;
    Pruner p = MakePruner(options);
    std::vector<Row> rows = TableRows();
    Rng rng(5);
    for (int i = 0; i < 40; ++i) rows.push_back({RandomSpec(rng, i), rng.Uniform(0.2, 50.0), "", {}});
    for (const Row& row : rows) {
      SCOPED_TRACE(row.spec.name);
      ExprContext ctx;
      Family f = Build(ctx, row.spec);
      ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, row.incumbent_us));
      EXPECT_FALSE(d.prunes()) << d.ToString();
      if (const auto* u = std::get_if<Unknown>(&d.result)) {
        EXPECT_THAT(u->reason, HasSubstr("zero budget"));
      } else {
        EXPECT_TRUE(std::get<Feasible>(d.result).from_probe);
        EXPECT_GT(probes, 0);
      }
    }
    EXPECT_EQ(p.stats().total.proved + p.stats().total.refuted, 0);
  }
}

// A past deadline (a search's budget spent) prunes nothing, like a zero budget, but says why;
// a depth-first enumeration stops at it with the exact reason, a brute-force one completes.
TEST(PrunerTest, PastDeadlinePrunesNothingAndStopsDepthFirstEnumeration) {
  PrunerOptions options;
  options.deadline = absl::Now() - absl::Seconds(1);
  options.probe_limit = 0;  // every decision goes to Z3
  Pruner p = MakePruner(options);
  for (const Row& row : TableRows()) {
    SCOPED_TRACE(row.spec.name);
    ExprContext ctx;
    Family f = Build(ctx, row.spec);
    ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(f, row.incumbent_us));
    EXPECT_FALSE(d.prunes()) << d.ToString();
    ASSERT_TRUE(std::holds_alternative<Unknown>(d.result)) << d.ToString();
    EXPECT_THAT(std::get<Unknown>(d.result).reason, HasSubstr(": deadline passed"));
  }
  EXPECT_EQ(p.stats().total.proved + p.stats().total.refuted, 0);

  ExprContext ctx;
  Spec spec = TableRows().back().spec;
  spec.params = {{"g", "divisors(6144, 1, 96)"}, {"F", "pow2(1, 64)"}, {"T", "{64, 128, 256, 512}"},
                 {"S", "range(1, 4)"}};
  Family f = Build(ctx, spec);  // a space of 1456 assignments
  struct Case {
    int64_t brute_force_limit;
    bool completes;
  };
  for (const Case& c : std::vector<Case>{{1 << 16, true}, {0, false}}) {
    PrunerOptions o = options;
    o.brute_force_limit = c.brute_force_limit;
    Pruner q = MakePruner(o);
    absl::StatusOr<std::vector<Assignment>> got = q.EnumerateInstances(f, 40.0, 1 << 20);
    if (c.completes) {
      ASSERT_OK(got.status());
      EXPECT_FALSE(got->empty());
    } else {
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                "family " + spec.name +
                                    ": the deadline passed while its instances were enumerated "
                                    "(0 assignments of 1456 evaluated); give the search a larger "
                                    "budget"));
    }
  }
}

TEST(PrunerTest, EnumerationIsDeterministicAndBothStrategiesAgree) {
  ExprContext ctx;
  Spec spec = TableRows().back().spec;  // rmsnorm_like, with narrower domains: 576 assignments
  spec.params = {{"g", "divisors(6144, 1, 96)"}, {"F", "pow2(1, 64)"}, {"T", "{64, 128, 256, 512}"},
                 {"S", "range(1, 4)"}};
  Family f = Build(ctx, spec);
  PrunerOptions brute;
  PrunerOptions dfs;
  dfs.brute_force_limit = 0;  // depth-first with Z3 cutting subtrees
  Pruner a = MakePruner(brute);
  Pruner b = MakePruner(dfs);
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> x, a.EnumerateInstances(f, 40.0, 1 << 20));
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> y, b.EnumerateInstances(f, 40.0, 1 << 20));
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> x2, a.EnumerateInstances(f, 40.0, 1 << 20));
  EXPECT_FALSE(x.empty());
  EXPECT_EQ(x, y);
  EXPECT_EQ(x, x2);
  EXPECT_GT(b.stats().by_name.at("prune.enumerate").proved, 0);  // some subtrees were cut
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> first3, a.EnumerateInstances(f, 40.0, 3));
  EXPECT_EQ(first3, std::vector<Assignment>(x.begin(), x.begin() + 3));
  for (const Assignment& asg : x) {
    ASSERT_OK_AND_ASSIGN(InstanceCheck c, a.CheckInstance(f, asg, 40.0));
    EXPECT_TRUE(c.ok());
  }
}

TEST(PrunerTest, FamilyErrors) {
  Pruner p = MakePruner();
  ExprContext ctx;
  Family f = Build(ctx, {"clash", {{"flops", "range(1, 4)"}}, {}, {}});
  EXPECT_THAT(p.Decide(f, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "family clash: parameter 'flops' cannot be declared in the SMT theory "
                       "(its name is taken by a theory symbol)"));
  // The pruner stays usable after an error.
  Family g = Build(ctx, {"ok", {{"T", "{64}"}}, {{"threads_per_block", "T"}}, {}});
  ASSERT_OK_AND_ASSIGN(Decision d, p.Decide(g, std::nullopt));
  EXPECT_EQ(Kind(d), "feasible");
  EXPECT_THAT(p.CheckInstance(g, {{"T", 64}, {"U", 1}}, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("U")));
}

// InstanceChecker: its errors by exact message, and checks from several threads at once (each
// with a family of its own) equal to the pruner's.
TEST(PrunerTest, InstanceChecker) {
  Pruner p = MakePruner();
  ExprContext ctx;
  const Spec spec = {"shared", {{"T", "{64, 128, 256, 512, 1024, 2048}"}, {"S", "range(1, 4)"}},
                     {{"threads_per_block", "T"}, {"smem_bytes", "S * T * 256"}}, {}};
  Family f = Build(ctx, spec);
  ASSERT_OK_AND_ASSIGN(InstanceChecker checker, p.MakeChecker(f));
  ExprContext ctx2;  // T with another domain
  Family other = Build(ctx2, {"other", {{"T", "{64}"}}, {{"threads_per_block", "T"}}, {}});
  EXPECT_THAT(checker.Check(other, {{"T", 64}}, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "family other sets other metrics than family shared, for which this "
                       "instance checker was made: make one for it (Pruner::MakeChecker)"));
  Family clash = Build(ctx2, {"clash", {{"flops", "range(1, 4)"}}, {}, {}});
  EXPECT_THAT(p.MakeChecker(clash),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "family clash: parameter 'flops' cannot be declared in the SMT theory "
                       "(its name is taken by a theory symbol)"));
  EXPECT_THAT(checker.Check(f, {{"T", 64}}, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, "parameter 'S' is not assigned"));
  std::vector<InstanceCheck> want;
  ASSERT_OK(f.ForEachAssignment([&](const Assignment& a) {
    absl::StatusOr<InstanceCheck> c = p.CheckInstance(f, a, 5.0);
    EXPECT_TRUE(c.ok()) << c.status();
    want.push_back(*c);
    return true;
  }));
  int failing = 0;
  for (const InstanceCheck& c : want) failing += c.ok() ? 0 : 1;
  EXPECT_GT(failing, 0);  // smem_capacity fails the largest tiles
  EXPECT_LT(failing, static_cast<int>(want.size()));
  std::vector<std::vector<InstanceCheck>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      ExprContext own;
      Family mine = Build(own, spec);
      (void)mine.ForEachAssignment([&](const Assignment& a) {
        absl::StatusOr<InstanceCheck> c = checker.Check(mine, a, 5.0);
        if (c.ok()) got[t].push_back(*c);
        return true;
      });
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::vector<InstanceCheck>& g : got) {
    ASSERT_EQ(g.size(), want.size());
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i].violated, want[i].violated);
      EXPECT_EQ(g[i].metrics, want[i].metrics);
      EXPECT_EQ(g[i].cost_lower_bound_us, want[i].cost_lower_bound_us);
    }
  }
  EXPECT_DEATH((void)InstanceChecker().Check(f, {{"T", 64}, {"S", 1}}, std::nullopt),
               "InstanceChecker::Check on a checker no pruner made");
}

// A theory is loaded into Z3 once per process: later pruners of the same theory start without
// a solver and make one only when Z3 is asked something, after repeating the compilations the
// eager pruner made at the same points, so their decisions (cores, dumped queries, solver
// statistics) are the eager one's. A theory changed on disk under a pruner is an error.
TEST(PrunerTest, TheoryIsLoadedOncePerProcessAndZ3WhenAsked) {
  const std::string dir = JoinPath(::testing::TempDir(), "prism_lazy_theories");
  std::filesystem::remove_all(dir);
  std::filesystem::copy(JoinPath(*DataDir(), "smt_theories"), dir,
                        std::filesystem::copy_options::recursive);
  PrunerOptions options;
  options.theory_dir = dir;
  options.keep_queries = true;
  ASSERT_OK_AND_ASSIGN(Pruner eager, Pruner::Create(H200(), options));  // the first: loads
  ASSERT_OK_AND_ASSIGN(Pruner lazy, Pruner::Create(H200(), options));
  EXPECT_TRUE(lazy.stats().by_name.empty());
  EXPECT_EQ(lazy.rules().size(), eager.rules().size());
  for (Pruner* p : {&eager, &lazy}) {
    // Compile for one family's flags first (no Z3 query), then decide the table's families.
    ExprContext ctx;
    Family f = Build(ctx, TableRows().front().spec);
    const Assignment a = {{"g", 1}, {"F", 1}, {"T", 64}, {"S", 3}};
    ASSERT_OK(p->CheckInstance(f, a, std::nullopt).status());
  }
  EXPECT_TRUE(lazy.stats().by_name.empty());  // a concrete check needs no solver
  for (const Row& row : TableRows()) {
    SCOPED_TRACE(row.spec.name);
    ExprContext ctx;
    Family f = Build(ctx, row.spec);
    ASSERT_OK_AND_ASSIGN(Decision a, eager.Decide(f, row.incumbent_us));
    ASSERT_OK_AND_ASSIGN(Decision b, lazy.Decide(f, row.incumbent_us));
    EXPECT_EQ(b.ToString(), a.ToString());
    EXPECT_EQ(b.smt_query, a.smt_query);
    EXPECT_EQ(b.smt_text, a.smt_text);
    EXPECT_EQ(b.queries.size(), a.queries.size());
  }
  EXPECT_FALSE(lazy.stats().by_name.empty());
  for (const auto& [name, st] : eager.stats().by_name) {
    ASSERT_TRUE(lazy.stats().by_name.contains(name)) << name;
    EXPECT_EQ(lazy.stats().by_name.at(name).proved, st.proved) << name;
  }
  // A rule file edited, then one removed, under pruners that have no solver yet.
  const std::string changed = absl::StrCat(
      "the theory in '", dir,
      "' changed while a pruner was using it: make a new pruner (prune::Pruner::Create)");
  ExprContext ctx;
  Family f = Build(ctx, TableRows().front().spec);  // infeasible: its decision needs Z3
  ASSERT_OK_AND_ASSIGN(Pruner edited, Pruner::Create(H200(), options));
  ASSERT_OK_AND_ASSIGN(Pruner removed, Pruner::Create(H200(), options));
  const size_t rules = removed.rules().size();
  const std::string path = JoinPath(dir, "rules/thread_limits.smt2");
  ASSERT_OK_AND_ASSIGN(std::string text, ReadFile(path));
  ASSERT_OK(WriteFile(path, text + "\n"));
  EXPECT_THAT(edited.Decide(f, std::nullopt),
              StatusIs(absl::StatusCode::kFailedPrecondition, changed));
  std::filesystem::remove(path);
  EXPECT_THAT(removed.Decide(f, std::nullopt),
              StatusIs(absl::StatusCode::kFailedPrecondition, changed));
  // A pruner made now loads the theory as it is.
  ASSERT_OK_AND_ASSIGN(Pruner fresh, Pruner::Create(H200(), options));
  EXPECT_EQ(fresh.rules().size(), rules - 1);
}

TEST(PrunerTest, MalformedTheoryFiles) {
  const std::string src = JoinPath(*DataDir(), "smt_theories");
  struct Bad {
    std::string file;      // relative to the theory dir
    std::string contents;  // replaces it
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"rules/extra.smt2", "; kind: hard\n(define-fun rule_other () Bool true)\n",
       "extra.smt2: must define (define-fun rule_extra () Bool ...)"},
      {"rules/extra.smt2", "(define-fun rule_extra () Bool true)\n",
       "extra.smt2:1: rule_extra needs a '; kind: hard' or '; kind: dominance' comment above it"},
      {"rules/extra.smt2", "; kind: hard\n(define-fun rule_extra () Bool true)\n",
       "extra.smt2:2: rule_extra needs a '; soundness:' argument in the comment above it"},
      {"rules/extra.smt2", "; kind: hard\n; soundness: x\n(define-fun rule_extra () Int 1)\n",
       "extra.smt2:3: rule_extra must have sort Bool"},
      {"rules/flops.smt2", "; kind: hard\n; soundness: x\n(define-fun rule_flops () Bool true)\n",
       "flops.smt2: the rule name 'flops' is already the name of a theory symbol"},
      {"rules/extra.smt2", "; kind: hard\n; soundness: x\n(define-fun rule_extra () Bool (< nope 1))\n",
       "extra.smt2:3: in 'rule_extra'"},
      {"cost.smt2", "", "cost.smt2: missing (define-fun cost_lb_ns () Real ...)"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.file);
    const std::string dir = JoinPath(::testing::TempDir(), "prism_bad_theories");
    std::filesystem::remove_all(dir);
    std::filesystem::copy(src, dir, std::filesystem::copy_options::recursive);
    ASSERT_OK(WriteFile(JoinPath(dir, b.file), b.contents));
    PrunerOptions options;
    options.theory_dir = dir;
    EXPECT_THAT(Pruner::Create(H200(), options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(b.message)));
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace prism::prune
