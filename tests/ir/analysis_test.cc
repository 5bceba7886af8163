// Tests of ir/analysis.h: the per-op counting convention of docs/ir_semantics.md §5, and the
// roofline floors of the twelve rows of ../shared/WORKLOADS.md (for the programs built here and
// for the built-in workloads of ir/workloads.h).
#include "prism/ir/analysis.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/ir/program.h"
#include "prism/ir/workloads.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

constexpr double kDramBps = 4.19e12;
constexpr double kMatMulFlops = 750e12;

// ---- per-op counting (§5) ---------------------------------------------------------------------
struct OpRow {
  std::string name;
  // Builds the op from X f32[2, 3] (and more inputs if it needs them); returns the output.
  std::function<TensorId(ProgramBuilder&, TensorId)> body;
  double matmul_flops, elementwise_flops, transcendentals, min_bytes;
};

TEST(AnalysisTest, PerOpCountingConvention) {
  auto unary = [](OpKind op) {
    return [op](ProgramBuilder& b, TensorId x) { return b.Unary(op, x); };
  };
  // X is f32[2, 3]: 6 elements, 24 bytes; every row's min_bytes is 24 + inputs + output.
  const std::vector<OpRow> rows = {
      {"exp", unary(OpKind::kExp), 0, 6, 6, 48},
      {"silu", unary(OpKind::kSilu), 0, 6, 6, 48},
      {"gelu", unary(OpKind::kGelu), 0, 6, 6, 48},
      {"sqrt", unary(OpKind::kSqrt), 0, 6, 6, 48},
      {"rsqrt", unary(OpKind::kRsqrt), 0, 6, 6, 48},
      {"recip", unary(OpKind::kRecip), 0, 6, 6, 48},
      {"relu", unary(OpKind::kRelu), 0, 6, 0, 48},
      {"square", unary(OpKind::kSquare), 0, 6, 0, 48},
      {"neg", unary(OpKind::kNeg), 0, 6, 0, 48},
      {"scale", [](ProgramBuilder& b, TensorId x) { return b.Scale(x, 3); }, 0, 6, 0, 48},
      {"add broadcast [2,3] + [3]",
       [](ProgramBuilder& b, TensorId x) { return b.Add(x, b.Input("B", DType::kF32, {3})); }, 0, 6,
       0, 24 + 12 + 24},
      {"div broadcast [2,3] / [2,1,1] -> [2,2,3]",
       [](ProgramBuilder& b, TensorId x) {
         return b.Div(x, b.Input("B", DType::kF32, {2, 1, 1}));
       },
       0, 12, 0, 24 + 8 + 48},
      {"sum dim -1", [](ProgramBuilder& b, TensorId x) { return b.Sum(x, -1); }, 0, 6, 0, 32},
      {"max dim 0", [](ProgramBuilder& b, TensorId x) { return b.Reduce(OpKind::kMax, x, 0); }, 0,
       6, 0, 36},
      {"mean dim 0 (6 adds + 3 divides)",
       [](ProgramBuilder& b, TensorId x) { return b.Reduce(OpKind::kMean, x, 0); }, 0, 9, 0, 36},
      {"rms_norm dim -1 (3·6 + 3·2)",
       [](ProgramBuilder& b, TensorId x) { return b.RmsNorm(x, -1); }, 0, 24, 2, 48},
      {"rms_norm dim 0 (3·6 + 3·3)", [](ProgramBuilder& b, TensorId x) { return b.RmsNorm(x, 0); },
       0, 27, 3, 48},
      {"softmax (5·6)", [](ProgramBuilder& b, TensorId x) { return b.Softmax(x, 1); }, 0, 30, 6,
       48},
      {"concat",
       [](ProgramBuilder& b, TensorId x) {
         return b.Concat({x, x}, 0);
       },
       0, 0, 0, 24 + 48},
      {"matmul [2,3] x [3,4]",
       [](ProgramBuilder& b, TensorId x) {
         return b.MatMul(x, b.Input("W", DType::kF32, {3, 4}));
       },
       2 * 2 * 3 * 4, 0, 0, 24 + 48 + 32},
      {"matmul [2,3] x [5,3,4] (batch 5)",
       [](ProgramBuilder& b, TensorId x) {
         return b.MatMul(x, b.Input("W", DType::kF32, {5, 3, 4}));
       },
       5 * 2 * 2 * 3 * 4, 0, 0, 24 + 240 + 160},
      {"chain counts every op: exp(square(x))",
       [](ProgramBuilder& b, TensorId x) { return b.Exp(b.Square(x)); }, 0, 12, 6, 48},
  };
  for (const OpRow& row : rows) {
    SCOPED_TRACE(row.name);
    ProgramBuilder b;
    const TensorId x = b.Input("X", DType::kF32, {2, 3});
    b.Output(row.body(b, x));
    ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
    const ProgramStats s = AnalyzeProgram(p);
    EXPECT_EQ(s.matmul_flops, row.matmul_flops);
    EXPECT_EQ(s.elementwise_flops, row.elementwise_flops);
    EXPECT_EQ(s.transcendentals, row.transcendentals);
    EXPECT_EQ(s.min_bytes, row.min_bytes);
    EXPECT_EQ(s.total_flops(), row.matmul_flops + row.elementwise_flops);
  }
}

TEST(AnalysisTest, BytesFollowDtypeAndCountInputsThatAreOutputsTwice) {
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF16, {4, 8});
  const TensorId w = b.Input("W", DType::kBF16, {8});
  const TensorId y = b.Mul(x, b.Input("V", DType::kF16, {8}));
  b.Output(y);
  b.Output(x);
  b.Output(w);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  // inputs 32·2 + 8·2 + 8·2; outputs 32·2 (Y) + 32·2 (X again) + 8·2 (W again).
  EXPECT_EQ(AnalyzeProgram(p).min_bytes, 64 + 16 + 16 + 64 + 64 + 16);
}

TEST(AnalysisTest, RooflineFloorTable) {
  struct Row {
    double min_bytes, matmul_flops, bps, flops_per_s, expected_us;
  };
  const std::vector<Row> rows = {
      {4.19e6, 0, 4.19e12, 750e12, 1.0},    // memory-bound
      {0, 750e9, 4.19e12, 750e12, 1000.0},  // compute-bound
      {1e6, 1e9, 1e12, 1e15, 1.0},          // balanced: both terms 1 µs
      {2e6, 1e9, 1e12, 1e15, 2.0},          // max of the two
      {0, 0, 1e12, 1e15, 0.0},              // nothing to do
  };
  for (const Row& r : rows) {
    ProgramStats s;
    s.min_bytes = r.min_bytes;
    s.matmul_flops = r.matmul_flops;
    s.elementwise_flops = 1e12;  // never part of the floor
    EXPECT_NEAR(RooflineFloorUs(s, r.bps, r.flops_per_s), r.expected_us, 1e-9 * r.expected_us)
        << r.min_bytes << " B, " << r.matmul_flops << " flop";
  }
}

// ---- the six workloads of WORKLOADS.md ---------------------------------------------------------
// Built with ProgramBuilder exactly as the table states (fp16 in and out).
Program Workload(const std::string& name, int64_t b) {
  ProgramBuilder pb;
  TensorId y;
  if (name == "gqa" || name == "qknorm_gqa") {
    TensorId q = pb.Input("Q", DType::kF16, {2 * b, 256, 64});
    const TensorId kt = pb.Input("Kt", DType::kF16, {2 * b, 64, 4096});
    TensorId v = pb.Input("V", DType::kF16, {2 * b, 4096, 64});
    if (name == "qknorm_gqa") {
      q = pb.RmsNorm(q, -1);
      v = pb.RmsNorm(v, -1);
    }
    y = pb.MatMul(pb.Softmax(pb.MatMul(q, kt), -1), v);
  } else if (name == "rmsnorm_linear") {
    const TensorId x = pb.Input("X", DType::kF16, {2 * b, 4096});
    const TensorId w = pb.Input("W", DType::kF16, {4096, 6144});
    y = pb.MatMul(pb.RmsNorm(x, -1), w);
  } else if (name == "gated_mlp") {
    const TensorId x = pb.Input("X", DType::kF16, {b, 4096});
    const TensorId a = pb.Input("A", DType::kF16, {4096, 4096});
    const TensorId w = pb.Input("B", DType::kF16, {4096, 4096});
    y = pb.Mul(pb.Silu(pb.MatMul(x, a)), pb.MatMul(x, w));
  } else if (name == "lora") {
    const TensorId x = pb.Input("X", DType::kF16, {b, 4096});
    const TensorId w = pb.Input("W", DType::kF16, {4096, 4096});
    const TensorId a = pb.Input("A", DType::kF16, {4096, 16});
    const TensorId bb = pb.Input("B", DType::kF16, {16, 4096});
    y = pb.Add(pb.MatMul(x, w), pb.MatMul(pb.MatMul(x, a), bb));
  } else {
    const TensorId x = pb.Input("X", DType::kF16, {b, 4096});
    const TensorId h = pb.Input("H", DType::kF16, {b, 4096});
    const TensorId alpha = pb.Input("alpha", DType::kF16, {b, 4096});
    y = pb.RmsNorm(pb.Add(x, pb.Mul(alpha, pb.Sub(pb.RmsNorm(h, -1), x))), -1);
  }
  pb.SetName(y, "Y");
  pb.Output(y);
  absl::StatusOr<Program> p = std::move(pb).Build();
  EXPECT_TRUE(p.ok()) << name << ": " << p.status();
  return p.ok() ? *std::move(p) : Program();
}

TEST(AnalysisTest, WorkloadFloorsMatchTheTable) {
  struct Row {
    std::string name;
    int64_t b;
    double min_bytes, matmul_flops;  // hand-computed from the shapes
    double table_floor_us;           // WORKLOADS.md, as printed
    int printed_decimals;
  };
  auto gqa_bytes = [](double b) {
    return 2 * b * (256 * 64 + 64 * 4096 + 4096 * 64 + 256 * 64) * 2;
  };
  auto gqa_flops = [](double b) { return 2 * (2 * b * 2 * 256 * 64 * 4096); };
  auto rl_bytes = [](double b) { return (2 * b * 4096 + 4096 * 6144 + 2 * b * 6144) * 2; };
  auto rl_flops = [](double b) { return 2 * (2 * b) * 4096 * 6144; };
  auto mlp_bytes = [](double b) { return (b * 4096 + 2 * 4096 * 4096 + b * 4096) * 2; };
  auto mlp_flops = [](double b) { return 2 * (2 * b * 4096 * 4096); };
  auto lora_bytes = [](double b) {
    return (b * 4096 + 4096 * 4096 + 4096 * 16 + 16 * 4096 + b * 4096) * 2;
  };
  auto lora_flops = [](double b) {
    return 2 * b * 4096 * 4096 + 2 * b * 4096 * 16 + 2 * b * 16 * 4096;
  };
  auto ntrans_bytes = [](double b) { return 4 * b * 4096 * 2; };
  const std::vector<Row> rows = {
      {"gqa", 1, gqa_bytes(1), gqa_flops(1), 0.72, 2},
      {"qknorm_gqa", 1, gqa_bytes(1), gqa_flops(1), 0.72, 2},
      {"rmsnorm_linear", 1, rl_bytes(1), rl_flops(1), 12.0, 1},
      {"gated_mlp", 1, mlp_bytes(1), mlp_flops(1), 16.0, 1},
      {"lora", 1, lora_bytes(1), lora_flops(1), 8.0, 1},
      {"ntrans", 1, ntrans_bytes(1), 0, 0.01, 2},
      {"gqa", 8, gqa_bytes(8), gqa_flops(8), 5.7, 1},
      {"qknorm_gqa", 8, gqa_bytes(8), gqa_flops(8), 5.7, 1},
      {"rmsnorm_linear", 8, rl_bytes(8), rl_flops(8), 12.1, 1},
      {"gated_mlp", 8, mlp_bytes(8), mlp_flops(8), 16.1, 1},
      {"lora", 8, lora_bytes(8), lora_flops(8), 8.1, 1},
      {"ntrans", 8, ntrans_bytes(8), 0, 0.06, 2},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name + " b=" + std::to_string(row.b));
    const Program p = Workload(row.name, row.b);
    const ProgramStats s = AnalyzeProgram(p);
    EXPECT_EQ(s.min_bytes, row.min_bytes);
    EXPECT_EQ(s.matmul_flops, row.matmul_flops);
    const double floor_us = RooflineFloorUs(s, kDramBps, kMatMulFlops);
    // Within 3 %, or within the rounding of the printed value (ntrans b=1 is 0.0078 µs,
    // printed as 0.01).
    const double half_unit = 0.5 * std::pow(10.0, -row.printed_decimals);
    EXPECT_LE(std::fabs(floor_us - row.table_floor_us),
              std::max(0.03 * row.table_floor_us, half_unit))
        << "floor " << floor_us << " µs";
    // The built-in workload (parsed from its .prism text) is the same program.
    ASSERT_OK_AND_ASSIGN(Program builtin, BuiltinWorkload(row.name, static_cast<int>(row.b)));
    EXPECT_EQ(builtin.StructuralHash(), p.StructuralHash());
    const ProgramStats sb = AnalyzeProgram(builtin);
    EXPECT_EQ(sb.min_bytes, s.min_bytes);
    EXPECT_EQ(sb.matmul_flops, s.matmul_flops);
    EXPECT_EQ(sb.elementwise_flops, s.elementwise_flops);
    EXPECT_EQ(sb.transcendentals, s.transcendentals);
  }
}

TEST(AnalysisTest, RmsNormLinearB8IsTheWalkthroughExample) {
  const ProgramStats s = AnalyzeProgram(Workload("rmsnorm_linear", 8));
  EXPECT_EQ(s.min_bytes, (16.0 * 4096 + 4096.0 * 6144 + 16.0 * 6144) * 2);  // 50 659 328
  EXPECT_EQ(s.matmul_flops, 2.0 * 16 * 4096 * 6144);
  // rms_norm over [16, 4096]: 3·65536 + 3·16 flops, 16 rsqrts.
  EXPECT_EQ(s.elementwise_flops, 3.0 * 16 * 4096 + 3 * 16);
  EXPECT_EQ(s.transcendentals, 16);
  EXPECT_NEAR(RooflineFloorUs(s, kDramBps, kMatMulFlops), 12.09, 0.005);
}

}  // namespace
}  // namespace prism
