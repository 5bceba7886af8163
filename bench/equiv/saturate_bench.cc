// Equivalence-module benchmarks: saturating and proving the walkthrough's rmsnorm_linear
// (block-graph term vs Program term, WALKTHROUGH.md §5) and the split-KV / LoRA fixtures under
// the shipped rules. Counters report the e-graph size, iterations and proof length.
//
//   ./build/bench/equiv/equiv_bench --benchmark_filter=Rmsnorm
#include <string>

#include "benchmark/benchmark.h"
#include "prism/base/check.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/prove.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"

namespace prism::equiv {
namespace {

constexpr char kRmsnormBlock[] = R"(
  (combine
    (mul (reduce (matmul (partition X 1 @F {F}) (partition (partition W 1 @x {g}) 0 @F {F})) @F)
         (rsqrt (add (div (reduce (sum (square (partition X 1 @F {F})) 1) @F) 4096) 1e-06)))
    1 @x))";
constexpr char kRmsnormProgram[] = "(matmul (rms_norm X 1 1e-06) W)";

std::string FlashDecoding() {
  const std::string s = "(matmul Q (partition Kt 2 @z {Z}))";
  const std::string m = "(max " + s + " 2)";
  const std::string big_m = "(reduce_max " + m + " @z)";
  const std::string e = "(exp (sub " + s + " " + m + "))";
  const std::string scale = "(exp (sub " + m + " " + big_m + "))";
  return "(div (reduce (mul (matmul " + e + " (partition V 1 @z {Z})) " + scale + ") @z) (reduce (mul (sum " +
         e + " 2) " + scale + ") @z))";
}

struct Fixture {
  ExprContext ctx;
  TensorEnv env;
  RuleSet rules;
  Term a, b;
};

Fixture Make(absl::string_view a, absl::string_view b,
             std::vector<std::pair<std::string, std::vector<int64_t>>> leaves) {
  Fixture f;
  f.env.ctx = &f.ctx;
  for (auto& [name, shape] : leaves) f.env.SetLeafShape(name, shape);
  absl::StatusOr<RuleSet> rules = LoadDefaultRules(f.ctx);
  PRISM_CHECK(rules.ok(), rules.status().message());
  f.rules = *std::move(rules);
  f.a = *ParseTerm(f.ctx, a);
  f.b = *ParseTerm(f.ctx, b);
  return f;
}

// Full saturation (no early stop at the goal) of both rmsnorm_linear terms in one e-graph.
void BM_SaturateRmsnormLinear(benchmark::State& state) {
  Fixture f = Make(kRmsnormBlock, kRmsnormProgram, {{"X", {16, 4096}}, {"W", {4096, 6144}}});
  size_t nodes = 0, classes = 0, iterations = 0;
  bool proved = false;
  StopReason stop = StopReason::kSaturated;
  for (auto _ : state) {
    EGraph g(&f.ctx, std::make_unique<TensorAnalysis>(f.env));
    EClassId a = g.AddTerm(f.a), b = g.AddTerm(f.b);
    Runner runner(&g, RunnerLimits{.max_iterations = static_cast<int>(state.range(0)),
                                   .max_nodes = 200'000, .time_limit = absl::Seconds(30)});
    stop = runner.Run(f.rules.rewrites());
    nodes = g.num_nodes();
    classes = g.num_classes();
    iterations = runner.iterations().size();
    proved = g.Equivalent(a, b);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["classes"] = static_cast<double>(classes);
  state.counters["iterations"] = static_cast<double>(iterations);
  state.counters["saturated"] = stop == StopReason::kSaturated ? 1 : 0;
  state.counters["proved"] = proved ? 1 : 0;
}
BENCHMARK(BM_SaturateRmsnormLinear)->Arg(5)->Arg(10)->Arg(30)->Unit(benchmark::kMillisecond);

void Prove(benchmark::State& state, const Fixture& f) {
  ProveResult r;
  for (auto _ : state) {
    r = ProveEquivalent(const_cast<ExprContext&>(f.ctx), f.env, f.a, f.b, f.rules);
    PRISM_CHECK(r.verdict == Verdict::kProved, r.reason);
  }
  state.counters["nodes"] = static_cast<double>(r.nodes);
  state.counters["iterations"] = static_cast<double>(r.iterations);
  state.counters["steps"] = static_cast<double>(r.proof->steps.size());
}

void BM_ProveRmsnormLinear(benchmark::State& state) {
  Fixture f = Make(kRmsnormBlock, kRmsnormProgram, {{"X", {16, 4096}}, {"W", {4096, 6144}}});
  Prove(state, f);
}
BENCHMARK(BM_ProveRmsnormLinear)->Unit(benchmark::kMillisecond);

void BM_ProveFlashDecoding(benchmark::State& state) {
  Fixture f = Make(FlashDecoding(), "(matmul (softmax (matmul Q Kt) 2) V)",
                   {{"Q", {16, 256, 64}}, {"Kt", {16, 64, 4096}}, {"V", {16, 4096, 64}}});
  Prove(state, f);
}
BENCHMARK(BM_ProveFlashDecoding)->Unit(benchmark::kMillisecond);

void BM_ProveLora(benchmark::State& state) {
  Fixture f = Make("(matmul (concat X (matmul X A) 1) (concat W B 0))",
                   "(add (matmul X W) (matmul (matmul X A) B))",
                   {{"X", {8, 4096}}, {"W", {4096, 4096}}, {"A", {4096, 16}}, {"B", {16, 4096}}});
  Prove(state, f);
}
BENCHMARK(BM_ProveLora)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace prism::equiv
