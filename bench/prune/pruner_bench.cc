// Family decisions per second (DESIGN.md section 3): Pruner::Decide on representative families
// of at most 8 parameters, each benchmark one kind of outcome, on the H200 target.
//
//   build-smt/bench/prune/prune_bench --benchmark_min_time=2
//
// The "decisions/s" counter is per core (the benchmark is single-threaded).
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/prune/family.h"
#include "prism/prune/pruner.h"
#include "prism/smt/target.h"

namespace prism::prune {
namespace {

Family LoadFamily(ExprContext& ctx, const std::string& file) {
  absl::StatusOr<std::string> text =
      ReadFile(JoinPath(PRISM_SOURCE_DIR, "tests/prune/families/" + file));
  PRISM_CHECK(text.ok(), text.status().ToString());
  absl::StatusOr<Family> f = Family::FromJson(nlohmann::json::parse(*text), ctx);
  PRISM_CHECK(f.ok(), f.status().ToString());
  return *std::move(f);
}

// rmsnorm_linear with its domains narrowed so that every assignment needs more shared memory
// than any GPU has (S >= 3, F <= 4): infeasible, core {smem_capacity}.
Family InfeasibleVariant(ExprContext& ctx) {
  Family f("rmsnorm_linear.too_big", ctx);
  PRISM_CHECK(f.AddParameter("g", *Domain::DivisorsOf(6144, 1, 64)).ok());
  PRISM_CHECK(f.AddParameter("F", *Domain::Set({1, 2, 4})).ok());
  PRISM_CHECK(f.AddParameter("T", *Domain::Set({64, 128, 256, 512})).ok());
  PRISM_CHECK(f.AddParameter("S", *Domain::Range(3, 4)).ok());
  PRISM_CHECK(f.SetMetricText("smem_bytes",
                              "S * (16 * (4096 floordiv F) + (4096 floordiv F) * (6144 floordiv g)) * 2")
                  .ok());
  PRISM_CHECK(f.SetMetricText("threads_per_block", "T").ok());
  PRISM_CHECK(f.SetMetricText("grid_x", "g").ok());
  return f;
}

Pruner MakePruner(int probes) {
  absl::StatusOr<Target> target = LoadTarget("h200");
  PRISM_CHECK(target.ok());
  PrunerOptions options;
  options.probe_limit = probes;
  absl::StatusOr<Pruner> pruner = Pruner::Create(*target, options);
  PRISM_CHECK(pruner.ok(), pruner.status().ToString());
  return *std::move(pruner);
}

// One family, one incumbent, one expected kind of decision.
void RunCase(benchmark::State& state, const std::string& file, std::optional<double> incumbent,
             const char* expect, int probes) {
  Pruner pruner = MakePruner(probes);
  ExprContext ctx;
  Family family = file.empty() ? InfeasibleVariant(ctx) : LoadFamily(ctx, file);
  std::string last;
  for (auto _ : state) {
    absl::StatusOr<Decision> d = pruner.Decide(family, incumbent);
    PRISM_CHECK(d.ok(), d.status().ToString());
    last = d->ToString();
    benchmark::DoNotOptimize(d);
  }
  PRISM_CHECK(last.rfind(expect, 0) == 0, "unexpected decision: ", last);
  state.SetLabel(last.substr(0, 60));
  state.counters["decisions/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_RmsnormFeasibleByProbe(benchmark::State& s) { RunCase(s, "rmsnorm_linear.json", 40.0, "feasible", 16); }
void BM_RmsnormFeasibleZ3Only(benchmark::State& s) { RunCase(s, "rmsnorm_linear.json", 40.0, "feasible", 0); }
void BM_RmsnormDominated(benchmark::State& s) { RunCase(s, "rmsnorm_linear.json", 1.0, "dominated", 16); }
void BM_RmsnormTightIncumbent(benchmark::State& s) { RunCase(s, "rmsnorm_linear.json", 5.0, "feasible", 16); }
void BM_GqaFeasibleByProbe(benchmark::State& s) { RunCase(s, "gqa_split_kv.json", 100.0, "feasible", 16); }
void BM_GqaDominated(benchmark::State& s) { RunCase(s, "gqa_split_kv.json", 1.0, "dominated", 16); }
void BM_VectorFeasibleByProbe(benchmark::State& s) { RunCase(s, "vector_copy.json", std::nullopt, "feasible", 16); }
void BM_VectorDominated(benchmark::State& s) { RunCase(s, "vector_copy.json", 0.5, "dominated", 16); }
void BM_Infeasible(benchmark::State& s) { RunCase(s, "", std::nullopt, "infeasible", 16); }

// A representative mix: the three shipped families (4-5, 5 and 2 parameters) under the
// incumbents a search sees as it improves (none, loose, near the optimum, below it), and an
// infeasible variant. Every Decide counts as one decision.
void BM_Mix(benchmark::State& state) {
  Pruner pruner = MakePruner(16);
  // One context per family: the shipped families use the same parameter names with
  // different domains.
  std::vector<std::unique_ptr<ExprContext>> contexts;
  const auto ctx_for = [&]() -> ExprContext& {
    contexts.push_back(std::make_unique<ExprContext>());
    return *contexts.back();
  };
  struct Item {
    Family family;
    std::optional<double> incumbent;
  };
  std::vector<Item> items;
  for (std::optional<double> inc : {std::optional<double>(), std::optional<double>(40.0),
                                    std::optional<double>(15.0), std::optional<double>(1.0)}) {
    items.push_back({LoadFamily(ctx_for(), "rmsnorm_linear.json"), inc});
  }
  for (std::optional<double> inc : {std::optional<double>(), std::optional<double>(100.0),
                                    std::optional<double>(1.0)}) {
    items.push_back({LoadFamily(ctx_for(), "gqa_split_kv.json"), inc});
  }
  for (std::optional<double> inc : {std::optional<double>(), std::optional<double>(2.0),
                                    std::optional<double>(0.5)}) {
    items.push_back({LoadFamily(ctx_for(), "vector_copy.json"), inc});
  }
  items.push_back({InfeasibleVariant(ctx_for()), std::nullopt});
  int64_t decisions = 0;
  int64_t pruned = 0;
  for (auto _ : state) {
    for (const Item& item : items) {
      absl::StatusOr<Decision> d = pruner.Decide(item.family, item.incumbent);
      PRISM_CHECK(d.ok(), d.status().ToString());
      ++decisions;
      pruned += d->prunes();
    }
  }
  state.counters["decisions/s"] =
      benchmark::Counter(static_cast<double>(decisions), benchmark::Counter::kIsRate);
  state.counters["pruned_fraction"] = static_cast<double>(pruned) / static_cast<double>(decisions);
}

BENCHMARK(BM_RmsnormFeasibleByProbe);
BENCHMARK(BM_RmsnormFeasibleZ3Only);
BENCHMARK(BM_RmsnormDominated);
BENCHMARK(BM_RmsnormTightIncumbent);
BENCHMARK(BM_GqaFeasibleByProbe);
BENCHMARK(BM_GqaDominated);
BENCHMARK(BM_VectorFeasibleByProbe);
BENCHMARK(BM_VectorDominated);
BENCHMARK(BM_Infeasible);
BENCHMARK(BM_Mix);

}  // namespace
}  // namespace prism::prune
