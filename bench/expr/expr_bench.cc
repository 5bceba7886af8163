// Building, simplifying, parsing and evaluating representative resource expressions (the
// rmsnorm_linear family of WALKTHROUGH.md §6 and an attention-like family).
//
//   ./build/bench/expr/expr_bench --benchmark_filter=Simplify
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"
#include "prism/expr/parse.h"
#include "prism/expr/simplify.h"

namespace prism {
namespace {

const std::vector<std::string>& ResourceTexts() {
  static const std::vector<std::string> texts = {
      // smem, regs, threads, grid, bytes, flops: rmsnorm_linear, M = 16, K = 4096, N = 6144
      "S * (16 * (4096 floordiv F) + (4096 floordiv F) * (6144 floordiv g)) * 2",
      "(16 * (6144 floordiv g) + T - 1) floordiv T + 32",
      "T",
      "g",
      "(16 * 4096 + 4096 * 6144 + 16 * 6144) * 2",
      "g * 16 * 4096 * 2 + 4096 * 6144 * 2 + 16 * 6144 * 2",
      "2 * 16 * 4096 * 6144",
      // attention-like: grid (G, gy, gz), forloop over L / gz / F
      "S * ((256 floordiv gy) * 64 + 2 * ((4096 floordiv gz) floordiv F) * 64) * 2",
      "G * gy * gz",
      "(256 floordiv gy) * (4096 floordiv gz) * G * gy * gz",
      "max(4 * T, (256 floordiv gy) * 64 * 4 floordiv T) + min(S, 4) * 8",
      "(G * 256 * 64 + G * 64 * 4096 * 2) * 2 * gy + G * 256 * gz * 65 * 4",
  };
  return texts;
}

void DeclareVars(ExprContext& ctx) {
  (void)ctx.Var("g", *Domain::DivisorsOf(6144));
  (void)ctx.Var("F", *Domain::DivisorsOf(4096));
  (void)ctx.Var("T", *Domain::Set({64, 128, 256, 512}));
  (void)ctx.Var("S", *Domain::Range(1, 4));
  (void)ctx.Var("G", *Domain::Range(1, 64));
  (void)ctx.Var("gy", *Domain::PowerOfTwo(1, 256));
  (void)ctx.Var("gz", *Domain::PowerOfTwo(1, 64));
}

// Parse only (into a warm context: mostly hash-cons hits).
void BM_Parse(benchmark::State& state) {
  ExprContext ctx;
  DeclareVars(ctx);
  for (auto _ : state) {
    for (const std::string& t : ResourceTexts()) benchmark::DoNotOptimize(*ParseExpr(ctx, t));
  }
  state.SetItemsProcessed(state.iterations() * ResourceTexts().size());
}
BENCHMARK(BM_Parse);

// Fresh context each iteration: declare, parse (build) and simplify every expression.
void BM_BuildAndSimplifyFresh(benchmark::State& state) {
  for (auto _ : state) {
    ExprContext ctx;
    DeclareVars(ctx);
    for (const std::string& t : ResourceTexts()) {
      benchmark::DoNotOptimize(Simplify(ctx, *ParseExpr(ctx, t)));
    }
  }
  state.SetItemsProcessed(state.iterations() * ResourceTexts().size());
}
BENCHMARK(BM_BuildAndSimplifyFresh);

// Simplify in a warm context (nodes already exist; measures the normal-form computation).
void BM_SimplifyWarm(benchmark::State& state) {
  ExprContext ctx;
  DeclareVars(ctx);
  std::vector<Expr> exprs;
  for (const std::string& t : ResourceTexts()) exprs.push_back(*ParseExpr(ctx, t));
  for (auto _ : state) {
    for (Expr e : exprs) benchmark::DoNotOptimize(Simplify(ctx, e));
  }
  state.SetItemsProcessed(state.iterations() * exprs.size());
}
BENCHMARK(BM_SimplifyWarm);

// Polynomial expansion: (x1 + ... + xn)^2 has n(n+1)/2 terms.
void BM_SimplifySquareOfSum(benchmark::State& state) {
  ExprContext ctx;
  std::vector<Expr> vars;
  for (int i = 0; i < state.range(0); ++i) {
    vars.push_back(*ctx.Var("x" + std::to_string(i), *Domain::Range(0, 100)));
  }
  Expr sum = ctx.Add(vars);
  Expr square = ctx.Mul(sum, sum);
  for (auto _ : state) benchmark::DoNotOptimize(Simplify(ctx, square));
}
BENCHMARK(BM_SimplifySquareOfSum)->Arg(4)->Arg(16)->Arg(64);

// Evaluating the smem expression over the rmsnorm_linear parameter grid (the instantiation
// inner loop).
void BM_EvaluateGrid(benchmark::State& state) {
  ExprContext ctx;
  DeclareVars(ctx);
  Expr smem = Simplify(ctx, *ParseExpr(ctx, ResourceTexts()[0]));
  const std::vector<int64_t> gs = *Domain::DivisorsOf(6144).value().Enumerate();
  const std::vector<int64_t> fs = *Domain::DivisorsOf(4096).value().Enumerate();
  int64_t count = 0;
  for (auto _ : state) {
    Assignment a = {{"S", 3}};
    for (int64_t g : gs) {
      for (int64_t f : fs) {
        a["g"] = g;
        a["F"] = f;
        benchmark::DoNotOptimize(EvaluateInt(ctx, smem, a));
        ++count;
      }
    }
  }
  state.SetItemsProcessed(count);
}
BENCHMARK(BM_EvaluateGrid);

}  // namespace
}  // namespace prism
