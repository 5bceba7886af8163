// Google Benchmark of the reference interpreter on the largest workloads of WORKLOADS.md
// (batch 8), in both modes. The interpreter is the oracle of every correctness test, so its
// speed bounds how many shapes the tests can afford.
//
//   build-interp/bench/ir/interpreter_bench --benchmark_filter=RmsNormLinear
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "prism/base/check.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/program.h"

namespace prism {
namespace {

// rmsnorm_linear at batch b: Y = rms_norm(X, -1) · W, X f16[2b, 4096], W f16[4096, 6144].
Program RmsNormLinear(int b) {
  ProgramBuilder pb;
  const TensorId x = pb.Input("X", DType::kF16, {2 * b, 4096});
  const TensorId w = pb.Input("W", DType::kF16, {4096, 6144});
  const TensorId y = pb.MatMul(pb.RmsNorm(x, -1), w);
  pb.SetName(y, "Y");
  pb.Output(y);
  absl::StatusOr<Program> p = std::move(pb).Build();
  PRISM_CHECK(p.ok(), p.status().message());
  return *std::move(p);
}

// gqa at batch b: O = softmax(Q · Kt, -1) · V, Q[2b,256,64], Kt[2b,64,4096], V[2b,4096,64].
Program Gqa(int b) {
  ProgramBuilder pb;
  const TensorId q = pb.Input("Q", DType::kF16, {2 * b, 256, 64});
  const TensorId kt = pb.Input("Kt", DType::kF16, {2 * b, 64, 4096});
  const TensorId v = pb.Input("V", DType::kF16, {2 * b, 4096, 64});
  const TensorId o = pb.MatMul(pb.Softmax(pb.MatMul(q, kt), -1), v);
  pb.SetName(o, "O");
  pb.Output(o);
  absl::StatusOr<Program> p = std::move(pb).Build();
  PRISM_CHECK(p.ok(), p.status().message());
  return *std::move(p);
}

// gated_mlp at batch b: silu(X·A) ⊙ (X·B), X[b,4096], A, B [4096,4096].
Program GatedMlp(int b) {
  ProgramBuilder pb;
  const TensorId x = pb.Input("X", DType::kF16, {b, 4096});
  const TensorId a = pb.Input("A", DType::kF16, {4096, 4096});
  const TensorId w = pb.Input("B", DType::kF16, {4096, 4096});
  const TensorId y = pb.Mul(pb.Silu(pb.MatMul(x, a)), pb.MatMul(x, w));
  pb.SetName(y, "Y");
  pb.Output(y);
  absl::StatusOr<Program> p = std::move(pb).Build();
  PRISM_CHECK(p.ok(), p.status().message());
  return *std::move(p);
}

// state.range(0): 0 = f64, 1 = device.
void RunEvaluate(benchmark::State& state, const Program& p) {
  const EvalMode mode = state.range(0) == 0 ? EvalMode::kF64 : EvalMode::kDevice;
  state.SetLabel(std::string(EvalModeName(mode)));
  const std::vector<Tensor> inputs = RandomInputs(p, 1);
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = Evaluate(p, inputs, mode);
    PRISM_CHECK(out.ok(), out.status().message());
    benchmark::DoNotOptimize(out->front().data.data());
  }
}

void BM_EvaluateRmsNormLinearB8(benchmark::State& state) { RunEvaluate(state, RmsNormLinear(8)); }
BENCHMARK(BM_EvaluateRmsNormLinearB8)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_EvaluateGqaB8(benchmark::State& state) { RunEvaluate(state, Gqa(8)); }
BENCHMARK(BM_EvaluateGqaB8)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_EvaluateGatedMlpB8(benchmark::State& state) { RunEvaluate(state, GatedMlp(8)); }
BENCHMARK(BM_EvaluateGatedMlpB8)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_RandomInputsRmsNormLinearB8(benchmark::State& state) {
  const Program p = RmsNormLinear(8);
  for (auto _ : state) {
    std::vector<Tensor> in = RandomInputs(p, 1);
    benchmark::DoNotOptimize(in.back().data.data());
  }
}
BENCHMARK(BM_RandomInputsRmsNormLinearB8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace prism
