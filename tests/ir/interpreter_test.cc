// Table-driven tests of the reference interpreter (ir/interpreter.h) against hand-computed values
// of docs/ir_semantics.md, of the difference between f64 and device mode, of RandomInputs'
// determinism, of every error path, and of the Tensor helpers (ir/tensor.h).
#include "prism/ir/interpreter.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/float16.h"
#include "prism/base/rng.h"
#include "prism/ir/program.h"
#include "prism/ir/tensor.h"
#include "prism/ir/types.h"
#include "prism/ir/workloads.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor MakeTensor(DType dtype, Shape shape, std::vector<double> data) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

// Builds a program with one input per tensor in `inputs` (named X0, X1, …, with their dtypes and
// shapes) and one output, the tensor `body` returns.
using Body = std::function<TensorId(ProgramBuilder&, const std::vector<TensorId>&)>;
absl::StatusOr<Program> SingleOutput(const std::vector<Tensor>& inputs, const Body& body) {
  ProgramBuilder b;
  std::vector<TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back(b.Input("X" + std::to_string(i), inputs[i].dtype, inputs[i].shape));
  }
  const TensorId y = body(b, ids);
  b.SetName(y, "Y");
  b.Output(y);
  return std::move(b).Build();
}

// Same value, treating NaN == NaN and distinguishing the sign of zero.
bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// ---- every op against hand-computed values ---------------------------------------------------
struct InterpreterOpRow {
  std::string name;
  std::vector<Tensor> inputs;  // f32; the same values are exact in f32 and f64
  Body body;
  Shape shape;
  std::vector<double> expected;
};

Tensor F32(Shape shape, std::vector<double> data) {
  return MakeTensor(DType::kF32, std::move(shape), std::move(data));
}

std::vector<InterpreterOpRow> OpRows() {
  const double e = std::exp(1.0);
  auto unary = [](OpKind op) {
    return Body(
        [op](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Unary(op, x[0]); });
  };
  auto binary = [](OpKind op) {
    return Body([op](ProgramBuilder& b, const std::vector<TensorId>& x) {
      return b.Binary(op, x[0], x[1]);
    });
  };
  auto reduce = [](OpKind op, int64_t dim) {
    return Body([op, dim](ProgramBuilder& b, const std::vector<TensorId>& x) {
      return b.Reduce(op, x[0], dim);
    });
  };
  auto rms = [](int64_t dim, double eps) {
    return Body([dim, eps](ProgramBuilder& b, const std::vector<TensorId>& x) {
      return b.RmsNorm(x[0], dim, eps);
    });
  };
  auto softmax = [](int64_t dim) {
    return Body(
        [dim](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Softmax(x[0], dim); });
  };
  auto concat = [](int64_t dim) {
    return Body(
        [dim](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Concat(x, dim); });
  };
  const Tensor m23 = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor r222 = F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  return {
      {"exp", {F32({3}, {0, 1, -1})}, unary(OpKind::kExp), {3}, {1, e, 1 / e}},
      {"silu",
       {F32({3}, {0, 1, -2})},
       unary(OpKind::kSilu),
       {3},
       {0, 0.7310585786300049, -0.2384058440442351}},
      {"gelu is the erf form",
       {F32({3}, {0, 1, -1})},
       unary(OpKind::kGelu),
       {3},
       {0, 0.8413447460685429, -0.15865525393145707}},
      {"relu", {F32({4}, {-1, 0, 2, -0.0})}, unary(OpKind::kRelu), {4}, {0, 0, 2, 0}},
      {"sqrt", {F32({3}, {4, 2, 0})}, unary(OpKind::kSqrt), {3}, {2, std::sqrt(2.0), 0}},
      {"rsqrt", {F32({2}, {4, 0.25})}, unary(OpKind::kRsqrt), {2}, {0.5, 2}},
      {"square", {F32({2}, {-3, 0.5})}, unary(OpKind::kSquare), {2}, {9, 0.25}},
      {"neg", {F32({2}, {1, -2})}, unary(OpKind::kNeg), {2}, {-1, 2}},
      {"recip", {F32({2}, {2, -4})}, unary(OpKind::kRecip), {2}, {0.5, -0.25}},
      {"scale 2.5",
       {F32({2}, {1, -2})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Scale(x[0], 2.5); },
       {2},
       {2.5, -5}},
      {"add same shape",
       {F32({2}, {1, 2}), F32({2}, {10, 20})},
       binary(OpKind::kAdd),
       {2},
       {11, 22}},
      {"add [2,1] + [3]",
       {F32({2, 1}, {10, 20}), F32({3}, {1, 2, 3})},
       binary(OpKind::kAdd),
       {2, 3},
       {11, 12, 13, 21, 22, 23}},
      {"sub [3] - [2,1]",
       {F32({3}, {1, 2, 3}), F32({2, 1}, {10, 20})},
       binary(OpKind::kSub),
       {2, 3},
       {-9, -8, -7, -19, -18, -17}},
      {"mul [2,1,2] * [2]",
       {F32({2, 1, 2}, {1, 2, 3, 4}), F32({2}, {10, 100})},
       binary(OpKind::kMul),
       {2, 1, 2},
       {10, 200, 30, 400}},
      {"mul [2,1,2] * [3,1] -> [2,3,2]",
       {F32({2, 1, 2}, {1, 2, 3, 4}), F32({3, 1}, {1, 10, 100})},
       binary(OpKind::kMul),
       {2, 3, 2},
       {1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 300, 400}},
      {"div [2,2] / [2]",
       {F32({2, 2}, {1, 2, 3, 4}), F32({2}, {2, 4})},
       binary(OpKind::kDiv),
       {2, 2},
       {0.5, 0.5, 1.5, 1}},
      {"div [1] / [4] broadcasts a 1",
       {F32({1}, {8}), F32({4}, {1, 2, 4, 8})},
       binary(OpKind::kDiv),
       {4},
       {8, 4, 2, 1}},
      {"sum dim 0", {m23}, reduce(OpKind::kSum, 0), {1, 3}, {5, 7, 9}},
      {"sum dim 1", {m23}, reduce(OpKind::kSum, 1), {2, 1}, {6, 15}},
      {"sum dim -1", {m23}, reduce(OpKind::kSum, -1), {2, 1}, {6, 15}},
      {"sum middle dim of rank 3", {r222}, reduce(OpKind::kSum, 1), {2, 1, 2}, {4, 6, 12, 14}},
      {"sum dim -3", {r222}, reduce(OpKind::kSum, -3), {1, 2, 2}, {6, 8, 10, 12}},
      {"mean dim -2", {m23}, reduce(OpKind::kMean, -2), {1, 3}, {2.5, 3.5, 4.5}},
      {"mean dim 1", {m23}, reduce(OpKind::kMean, 1), {2, 1}, {2, 5}},
      {"max dim 1", {m23}, reduce(OpKind::kMax, 1), {2, 1}, {3, 6}},
      {"max of negatives", {F32({1, 3}, {-5, -1, -3})}, reduce(OpKind::kMax, -1), {1, 1}, {-1}},
      {"max dim 0 of rank 3", {r222}, reduce(OpKind::kMax, 0), {1, 2, 2}, {5, 6, 7, 8}},
      {"rms_norm eps 0",
       {F32({1, 2}, {3, 4})},
       rms(-1, 0.0),
       {1, 2},
       {0.848528137423857, 1.131370849898476}},
      {"rms_norm default eps",
       {F32({1, 2}, {3, 4})},
       rms(-1, kDefaultRmsEps),
       {1, 2},
       {0.8485281034827336, 1.1313708046436448}},
      {"rms_norm eps 1",
       {F32({1, 2}, {1, 1})},
       rms(1, 1.0),
       {1, 2},
       {std::sqrt(0.5), std::sqrt(0.5)}},
      {"rms_norm dim 0",
       {F32({2, 2}, {3, 1, 4, 1})},
       rms(0, 0.0),
       {2, 2},
       {0.848528137423857, 1, 1.131370849898476, 1}},
      {"softmax",
       {F32({1, 3}, {1, 2, 3})},
       softmax(-1),
       {1, 3},
       {0.09003057317038046, 0.24472847105479764, 0.6652409557748218}},
      {"softmax of large values is stable",
       {F32({1, 3}, {1000, 1001, 1002})},
       softmax(1),
       {1, 3},
       {0.09003057317038046, 0.24472847105479764, 0.6652409557748218}},
      {"softmax of very negative values",
       {F32({3}, {-1000, -1000, -1000})},
       softmax(0),
       {3},
       {1 / 3.0, 1 / 3.0, 1 / 3.0}},
      {"softmax dim 0", {F32({2, 2}, {0, 1, 0, 1})}, softmax(0), {2, 2}, {0.5, 0.5, 0.5, 0.5}},
      {"softmax with -inf", {F32({3}, {0, -kInf, 0})}, softmax(-1), {3}, {0.5, 0, 0.5}},
      {"concat dim 0",
       {F32({1, 2}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})},
       concat(0),
       {3, 2},
       {1, 2, 3, 4, 5, 6}},
      {"concat dim -1",
       {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})},
       concat(-1),
       {2, 3},
       {1, 3, 4, 2, 5, 6}},
      {"concat three parts",
       {F32({1}, {1}), F32({2}, {2, 3}), F32({1}, {4})},
       concat(0),
       {4},
       {1, 2, 3, 4}},
      {"concat rank 3 dim 0",
       {r222, F32({1, 2, 2}, {9, 10, 11, 12})},
       concat(0),
       {3, 2, 2},
       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
      {"concat rank 3 dim 1",
       {r222, F32({2, 1, 2}, {9, 10, 11, 12})},
       concat(1),
       {2, 3, 2},
       {1, 2, 3, 4, 9, 10, 5, 6, 7, 8, 11, 12}},
      {"concat rank 3 dim 2",
       {r222, F32({2, 2, 1}, {9, 10, 11, 12})},
       concat(2),
       {2, 2, 3},
       {1, 2, 9, 3, 4, 10, 5, 6, 11, 7, 8, 12}},
  };
}

std::vector<InterpreterOpRow> MatMulRows() {
  auto mm =
      Body([](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.MatMul(x[0], x[1]); });
  return {
      {"matmul 2x3 . 3x2",
       {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({3, 2}, {7, 8, 9, 10, 11, 12})},
       mm,
       {2, 2},
       {58, 64, 139, 154}},
      {"matmul batched a, rank-2 b",
       {F32({2, 1, 2}, {1, 2, 3, 4}), F32({2, 1}, {1, 10})},
       mm,
       {2, 1, 1},
       {21, 43}},
      {"matmul rank-2 a, batched b",
       {F32({1, 2}, {1, 10}), F32({2, 2, 1}, {1, 2, 3, 4})},
       mm,
       {2, 1, 1},
       {21, 43}},
      // a batch [2,1], b batch [1,3] → [2,3]; a_i = row i, b_j = [[j],[1]] (j = 1..3).
      {"matmul broadcast batch dims",
       {F32({2, 1, 1, 2}, {1, 2, 3, 4}), F32({1, 3, 2, 1}, {1, 1, 2, 1, 3, 1})},
       mm,
       {2, 3, 1, 1},
       {3, 4, 5, 7, 10, 13}},
      {"matmul batched both",
       {F32({2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}), F32({2, 2, 2}, {1, 2, 3, 4, 1, 2, 3, 4})},
       mm,
       {2, 2, 2},
       {1, 2, 3, 4, 2, 4, 6, 8}},
  };
}

void CheckRow(const InterpreterOpRow& row, EvalMode mode) {
  SCOPED_TRACE(row.name + " in " + std::string(EvalModeName(mode)) + " mode");
  ASSERT_OK_AND_ASSIGN(Program p, SingleOutput(row.inputs, row.body));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, row.inputs, mode));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, row.shape);
  EXPECT_EQ(out[0].dtype, DType::kF32);
  ASSERT_EQ(out[0].data.size(), row.expected.size());
  // f64 mode is exact up to libm; device mode is f32 arithmetic.
  const double rtol = mode == EvalMode::kF64 ? 1e-14 : 3e-7;
  for (size_t i = 0; i < row.expected.size(); ++i) {
    EXPECT_NEAR(out[0].data[i], row.expected[i], rtol * std::fabs(row.expected[i]) + 1e-300)
        << "element " << i;
  }
}

TEST(InterpreterTest, EveryOpAgainstHandComputedValues) {
  std::vector<InterpreterOpRow> rows = OpRows();
  for (const InterpreterOpRow& r : MatMulRows()) rows.push_back(r);
  for (const InterpreterOpRow& row : rows) {
    CheckRow(row, EvalMode::kF64);
    CheckRow(row, EvalMode::kDevice);
  }
}

TEST(InterpreterTest, EveryOpIsCovered) {
  // Every op of ops.def has a row in the tables above (row names start with the op name).
  std::vector<std::string> names;
  for (const InterpreterOpRow& r : OpRows()) names.push_back(r.name);
  for (const InterpreterOpRow& r : MatMulRows()) names.push_back(r.name);
  for (const OpInfo& info : AllOps()) {
    if (info.kind == OpKind::kInput) continue;
    bool found = false;
    for (const std::string& n : names) found = found || n.rfind(std::string(info.name), 0) == 0;
    EXPECT_TRUE(found) << "no row for " << info.name;
  }
}

// ---- special values (IEEE) --------------------------------------------------------------------
TEST(InterpreterTest, SpecialValues) {
  struct Row {
    std::string name;
    std::vector<Tensor> inputs;
    Body body;
    std::vector<double> expected;  // compared with SameValue, in both modes
  };
  auto unary = [](OpKind op) {
    return Body(
        [op](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Unary(op, x[0]); });
  };
  const std::vector<Row> rows = {
      {"div by zero",
       {F32({4}, {1, -1, 0, 1}), F32({4}, {0, 0, 0, -0.0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Div(x[0], x[1]); },
       {kInf, -kInf, kNaN, -kInf}},
      {"recip of zeros", {F32({2}, {0.0, -0.0})}, unary(OpKind::kRecip), {kInf, -kInf}},
      {"rsqrt", {F32({3}, {0.0, -1, kInf})}, unary(OpKind::kRsqrt), {kInf, kNaN, 0}},
      {"sqrt", {F32({3}, {-0.0, -1, kInf})}, unary(OpKind::kSqrt), {-0.0, kNaN, kInf}},
      {"relu", {F32({3}, {kNaN, -0.0, -kInf})}, unary(OpKind::kRelu), {kNaN, 0.0, 0.0}},
      {"neg zero", {F32({1}, {0.0})}, unary(OpKind::kNeg), {-0.0}},
      {"silu", {F32({3}, {kInf, -kInf, -1000})}, unary(OpKind::kSilu), {kInf, kNaN, -0.0}},
      {"gelu", {F32({2}, {kInf, -kInf})}, unary(OpKind::kGelu), {kInf, kNaN}},
      {"exp", {F32({2}, {-kInf, kInf})}, unary(OpKind::kExp), {0, kInf}},
      {"max propagates NaN",
       {F32({2, 3}, {1, kNaN, 3, kNaN, 5, 6})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) {
         return b.Reduce(OpKind::kMax, x[0], 1);
       },
       {kNaN, kNaN}},
      {"max keeps the first of -0, +0",
       {F32({2}, {-0.0, 0.0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) {
         return b.Reduce(OpKind::kMax, x[0], 0);
       },
       {-0.0}},
      {"softmax with +inf is NaN",
       {F32({2}, {kInf, 0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Softmax(x[0], 0); },
       {kNaN, kNaN}},
      {"softmax of all -inf is NaN",
       {F32({2}, {-kInf, -kInf})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Softmax(x[0], 0); },
       {kNaN, kNaN}},
      {"rms_norm of zeros with eps 0",
       {F32({2}, {0, 0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.RmsNorm(x[0], 0, 0.0); },
       {kNaN, kNaN}},
      {"sum of -0 is +0",
       {F32({2}, {-0.0, -0.0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Sum(x[0], 0); },
       {0.0}},
  };
  for (const Row& row : rows) {
    for (EvalMode mode : {EvalMode::kF64, EvalMode::kDevice}) {
      SCOPED_TRACE(row.name + " in " + std::string(EvalModeName(mode)) + " mode");
      ASSERT_OK_AND_ASSIGN(Program p, SingleOutput(row.inputs, row.body));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, row.inputs, mode));
      ASSERT_EQ(out[0].data.size(), row.expected.size());
      for (size_t i = 0; i < row.expected.size(); ++i) {
        EXPECT_TRUE(SameValue(out[0].data[i], row.expected[i]))
            << "element " << i << ": found " << out[0].data[i] << ", expected " << row.expected[i];
      }
    }
  }
}

// ---- f64 mode vs device mode -------------------------------------------------------------------
TEST(InterpreterTest, F64AndDeviceModesDifferExactlyAsSpecified) {
  struct Row {
    std::string name;
    std::vector<Tensor> inputs;
    Body body;
    std::vector<double> f64, device;  // exact expectations
  };
  auto scale = [](double c) {
    return Body(
        [c](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Scale(x[0], c); });
  };
  auto sum =
      Body([](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Sum(x[0], -1); });
  const double third_f32 = static_cast<double>(1.0f / 3.0f);
  const double tiny = std::ldexp(1.0, -24);
  const double u12 = 1 + std::ldexp(1.0, -12), u11 = 1 + std::ldexp(1.0, -11);
  const std::vector<Row> rows = {
      // recip in f32 then rounded to f16: 0x3555.
      {"f16 recip(3)",
       {MakeTensor(DType::kF16, {1}, {3})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) {
         return b.Unary(OpKind::kRecip, x[0]);
       },
       {1 / 3.0},
       {0.333251953125}},
      {"f32 recip(3)",
       {F32({1}, {3})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) {
         return b.Unary(OpKind::kRecip, x[0]);
       },
       {1 / 3.0},
       {third_f32}},
      {"bf16 div(1, 3)",
       {MakeTensor(DType::kBF16, {1}, {1}), MakeTensor(DType::kBF16, {1}, {3})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Div(x[0], x[1]); },
       {1 / 3.0},
       {0.333984375}},
      // Inputs are rounded to their dtype in device mode only.
      {"f16 input 70000 overflows",
       {MakeTensor(DType::kF16, {1}, {70000})},
       scale(1),
       {70000},
       {kInf}},
      {"f16 input 0.1 rounds",
       {MakeTensor(DType::kF16, {1}, {0.1})},
       scale(1),
       {0.1},
       {0.0999755859375}},
      {"bf16 input 1+2^-8 ties to even",
       {MakeTensor(DType::kBF16, {1}, {1 + 1.0 / 256})},
       scale(1),
       {1 + 1.0 / 256},
       {1}},
      // Each op's result is rounded to the dtype: 2·40000 overflows f16.
      {"f16 result 80000 overflows",
       {MakeTensor(DType::kF16, {1}, {40000})},
       scale(2),
       {80000},
       {kInf}},
      {"f16 exp(12) overflows",
       {MakeTensor(DType::kF16, {1}, {12})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Exp(x[0]); },
       {std::exp(12.0)},
       {kInf}},
      // scale's constant is rounded to f32 in device mode: 0.1f·1 = 0.100000001490116…
      {"f32 scale constant is f32(c)",
       {F32({1}, {1})},
       scale(0.1),
       {0.1},
       {static_cast<double>(0.1f)}},
      // Accumulation is in f32, not f16: 2048 + 1 + 1 = 2050 (an f16 accumulator would stay 2048).
      {"f16 sum accumulates in f32",
       {MakeTensor(DType::kF16, {3}, {2048, 1, 1})},
       sum,
       {2050},
       {2050}},
      // ... in increasing index order: 1e8 + 1 is 1e8 in f32.
      {"f32 sum left fold", {F32({3}, {1e8, 1, -1e8})}, sum, {1}, {0}},
      {"f32 sum left fold, other order", {F32({3}, {1e8, -1e8, 1})}, sum, {1}, {1}},
      {"f16 softmax of equal values",
       {MakeTensor(DType::kF16, {3}, {0, 0, 0})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.Softmax(x[0], 0); },
       {1 / 3.0, 1 / 3.0, 1 / 3.0},
       {0.333251953125, 0.333251953125, 0.333251953125}},
      // f32 matmul fuses multiply-add: -(1+2^-11) + (1+2^-12)² = 2^-24 exactly with fma, 0 without.
      {"f32 matmul uses fma",
       {F32({1, 2}, {1, u12}), F32({2, 1}, {-u11, u12})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.MatMul(x[0], x[1]); },
       {tiny},
       {tiny}},
      // f16 matmul: products exact in f32, result rounded to f16 once.
      {"f16 matmul rounds once",
       {MakeTensor(DType::kF16, {1, 3}, {1, 1, 1}), MakeTensor(DType::kF16, {3, 1}, {2048, 1, 1})},
       [](ProgramBuilder& b, const std::vector<TensorId>& x) { return b.MatMul(x[0], x[1]); },
       {2050},
       {2050}},
  };
  for (const Row& row : rows) {
    ASSERT_OK_AND_ASSIGN(Program p, SingleOutput(row.inputs, row.body));
    for (EvalMode mode : {EvalMode::kF64, EvalMode::kDevice}) {
      SCOPED_TRACE(row.name + " in " + std::string(EvalModeName(mode)) + " mode");
      const std::vector<double>& expected = mode == EvalMode::kF64 ? row.f64 : row.device;
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, row.inputs, mode));
      ASSERT_EQ(out[0].data.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(SameValue(out[0].data[i], expected[i]))
            << "element " << i << ": found " << out[0].data[i] << ", expected " << expected[i];
      }
    }
  }
}

// Device-mode input rounding (a fast bit-level path in the interpreter) equals RoundToDType.
TEST(InterpreterTest, DeviceRoundingEqualsRoundToDType) {
  std::vector<double> values = {
      0.0,         -0.0,        1.0,        65504.0,    65519.99,  65520.0,   -65520.0, 1e6,
      kInf,        -kInf,       kNaN,       0x1p-24,    0x1p-25,   0x1.8p-25, 0x1p-14,  0x1.ffcp-15,
      0x1p-126,    0x1p-133,    0x1p-134,   0x1.8p-134, 3.3961e38, 3.4e38,    1e-45,    1e300,
      1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-8, 1 + 0x3p-8, 0.1};
  Rng rng(2024);
  for (int i = 0; i < 1'000'000; ++i) {
    const double mant = rng.Uniform(1.0, 2.0);
    const int exp = static_cast<int>(rng.UniformInt(-150, 130));
    double v = std::ldexp(mant, exp) * (rng.UniformInt(0, 1) ? 1 : -1);
    // Half of the values exactly at or next to a tie of the f16/bf16 grid.
    if (i % 2 == 0) {
      const int bits = i % 4 == 0 ? 10 : 7;
      v = std::ldexp(std::round(std::ldexp(mant, bits + 1)) + (i % 3) - 1, exp - bits - 1);
    }
    values.push_back(v);
  }
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<Tensor> in = {
        MakeTensor(dtype, {static_cast<int64_t>(values.size())}, values)};
    ASSERT_OK_AND_ASSIGN(Program p,
                         SingleOutput(in, [](ProgramBuilder& b, const std::vector<TensorId>& x) {
                           return b.Scale(x[0], 1.0);
                         }));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, in, EvalMode::kDevice));
    int failures = 0;
    for (size_t i = 0; i < values.size() && failures < 10; ++i) {
      const double expected = RoundToDType(values[i], dtype);
      if (!SameValue(out[0].data[i], expected)) {
        ++failures;
        ADD_FAILURE() << std::hexfloat << values[i] << ": found " << out[0].data[i] << ", expected "
                      << expected;
      }
    }
  }
}

// Device-mode rounding of op results (f32 → dtype, another fast path) equals RoundToDType of the
// f32 result: random operands over the whole range, plus sums that land exactly on ties.
TEST(InterpreterTest, DeviceResultRoundingEqualsRoundToDType) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const int max_exp = dtype == DType::kF16 ? 15 : 127;
    const int min_exp = dtype == DType::kF16 ? -24 : -133;
    const int mant = dtype == DType::kF16 ? 10 : 7;
    std::vector<double> a, b;
    Rng rng(99);
    for (int i = 0; i < 200'000; ++i) {
      const double sa = rng.UniformInt(0, 1) ? 1 : -1, sb = rng.UniformInt(0, 1) ? 1 : -1;
      a.push_back(RoundToDType(
          sa * std::ldexp(rng.Uniform(1, 2), static_cast<int>(rng.UniformInt(min_exp, max_exp))),
          dtype));
      b.push_back(RoundToDType(
          sb * std::ldexp(rng.Uniform(1, 2), static_cast<int>(rng.UniformInt(min_exp, max_exp))),
          dtype));
    }
    // 1 + k·2^-(mant+1) for k = 1, 3: exact ties in f32, rounded to even.
    for (double k : {1.0, 3.0, -1.0, -3.0}) {
      a.push_back(1);
      b.push_back(k * std::ldexp(1.0, -(mant + 1)));
    }
    const int64_t n = static_cast<int64_t>(a.size());
    ProgramBuilder pb;
    const TensorId ta = pb.Input("A", dtype, {n});
    const TensorId tb = pb.Input("B", dtype, {n});
    pb.Output(pb.Add(ta, tb));
    pb.Output(pb.Mul(ta, tb));
    pb.Output(pb.Div(ta, tb));
    ASSERT_OK_AND_ASSIGN(Program p, std::move(pb).Build());
    ASSERT_OK_AND_ASSIGN(
        std::vector<Tensor> out,
        Evaluate(p, {MakeTensor(dtype, {n}, a), MakeTensor(dtype, {n}, b)}, EvalMode::kDevice));
    int failures = 0;
    for (int op = 0; op < 3; ++op) {
      for (int64_t i = 0; i < n && failures < 10; ++i) {
        const float fa = static_cast<float>(a[i]), fb = static_cast<float>(b[i]);
        const float f32 = op == 0 ? fa + fb : op == 1 ? fa * fb : fa / fb;
        const double expected = RoundToDType(f32, dtype);
        if (!SameValue(out[op].data[i], expected)) {
          ++failures;
          ADD_FAILURE() << "op " << op << " of " << a[i] << ", " << b[i] << ": found "
                        << out[op].data[i] << ", expected " << expected;
        }
      }
    }
    EXPECT_EQ(out[0].data[n - 4], 1.0);                            // 1 + 2^-(m+1) ties to even: 1
    EXPECT_EQ(out[0].data[n - 3], 1 + std::ldexp(1.0, 1 - mant));  // 1 + 3·2^-(m+1) → 1 + 2^-(m-1)
  }
}

// ---- RandomInputs -----------------------------------------------------------------------------
absl::StatusOr<Program> TwoInputProgram(Shape x_shape) {
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF16, x_shape);
  const TensorId w = b.Input("W", DType::kBF16, {2, 3});
  const TensorId y = b.Sum(x, -1);
  const TensorId z = b.Sum(w, -1);
  b.SetName(y, "Y");
  b.SetName(z, "Z");
  b.Output(y);
  b.Output(z);
  return std::move(b).Build();
}

TEST(RandomInputsTest, DeterministicWithGoldenValues) {
  ASSERT_OK_AND_ASSIGN(Program p, TwoInputProgram({4, 3}));
  const std::vector<Tensor> a = RandomInputs(p, 1);
  const std::vector<Tensor> b = RandomInputs(p, 1);
  const std::vector<Tensor> c = RandomInputs(p, 2);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].dtype, DType::kF16);
  EXPECT_EQ(a[0].shape, (Shape{4, 3}));
  EXPECT_EQ(a[0].data.size(), 12u);
  EXPECT_EQ(a[1].dtype, DType::kBF16);
  EXPECT_EQ(a[1].data.size(), 6u);
  EXPECT_EQ(a[0].data, b[0].data);
  EXPECT_EQ(a[1].data, b[1].data);
  EXPECT_NE(a[0].data, c[0].data);
  // Golden values: part of the reproducibility contract (same seed → same inputs everywhere).
  // A deliberate change of the generator must update them.
  const std::vector<double> golden_x = {-0.11456298828125, 0.70947265625, -0.8935546875,
                                        0.78173828125};
  const std::vector<double> golden_w = {0.3984375, -0.255859375, 0.90625, 1.1484375};
  EXPECT_EQ(std::vector<double>(a[0].data.begin(), a[0].data.begin() + 4), golden_x);
  EXPECT_EQ(std::vector<double>(a[1].data.begin(), a[1].data.begin() + 4), golden_w);
  for (double v : a[0].data) EXPECT_EQ(v, RoundToF16(v));
  for (double v : a[1].data) EXPECT_EQ(v, RoundToBF16(v));
}

TEST(RandomInputsTest, InputsAreIndependentStreams) {
  ASSERT_OK_AND_ASSIGN(Program small, TwoInputProgram({4, 3}));
  ASSERT_OK_AND_ASSIGN(Program big, TwoInputProgram({40, 3}));
  const std::vector<Tensor> a = RandomInputs(small, 7);
  const std::vector<Tensor> b = RandomInputs(big, 7);
  EXPECT_EQ(a[1].data, b[1].data) << "W must not depend on X's shape";
  EXPECT_EQ(std::vector<double>(b[0].data.begin(), b[0].data.begin() + 12), a[0].data);
}

TEST(RandomInputsTest, RoughlyStandardNormal) {
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF32, {100000});
  b.Output(b.Sum(x, 0));
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const Tensor t = RandomInputs(p, 3)[0];
  const TensorSummary s = Summarize(t);
  double var = 0;
  for (double v : t.data) var += v * v;
  EXPECT_NEAR(s.mean, 0, 0.02);
  EXPECT_NEAR(var / t.data.size(), 1, 0.02);
}

// ---- errors -----------------------------------------------------------------------------------
absl::StatusOr<Program> RmsNormLinear(int64_t m, int64_t k, int64_t n) {
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF16, {m, k});
  const TensorId w = b.Input("W", DType::kF16, {k, n});
  const TensorId y = b.MatMul(b.RmsNorm(x, -1), w);
  b.SetName(y, "Y");
  b.Output(y);
  return std::move(b).Build();
}

TEST(InterpreterTest, InputErrorsNameTheInput) {
  ASSERT_OK_AND_ASSIGN(Program p, RmsNormLinear(2, 3, 4));
  const Tensor x = Tensor::Zeros(DType::kF16, {2, 3});
  const Tensor w = Tensor::Zeros(DType::kF16, {3, 4});
  Tensor short_x = x;
  short_x.data.pop_back();
  struct Row {
    std::string name;
    std::vector<Tensor> inputs;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"too few", {x}, "expected 2 inputs (X, W), found 1"},
      {"too many", {x, w, w}, "expected 2 inputs (X, W), found 3"},
      {"dtype",
       {Tensor::Zeros(DType::kF32, {2, 3}), w},
       "input 'X' (#0): found dtype f32, expected f16"},
      {"shape",
       {x, Tensor::Zeros(DType::kF16, {3, 5})},
       "input 'W' (#1): found shape [3, 5], expected [3, 4]"},
      {"rank",
       {x, Tensor::Zeros(DType::kF16, {12})},
       "input 'W' (#1): found shape [12], expected [3, 4]"},
      {"data size", {short_x, w}, "input 'X' (#0): found 5 values, expected 6 for shape [2, 3]"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    for (EvalMode mode : {EvalMode::kF64, EvalMode::kDevice}) {
      EXPECT_THAT(Evaluate(p, row.inputs, mode),
                  StatusIs(absl::StatusCode::kInvalidArgument, row.message));
      EXPECT_THAT(EvaluateAll(p, row.inputs, mode),
                  StatusIs(absl::StatusCode::kInvalidArgument, row.message));
    }
  }
  EXPECT_OK(Evaluate(p, {x, w}, EvalMode::kDevice));
}

TEST(InterpreterTest, WorkloadSizedShapeErrorMessage) {
  ASSERT_OK_AND_ASSIGN(Program p, RmsNormLinear(16, 4096, 6144));
  Tensor x;
  x.dtype = DType::kF16;
  x.shape = {16, 4096};
  Tensor w;
  w.dtype = DType::kF16;
  w.shape = {4096, 128};
  EXPECT_THAT(Evaluate(p, {x, w}, EvalMode::kF64),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 'W' (#1): found shape [4096, 128], expected [4096, 6144]"));
}

TEST(InterpreterTest, RefusesTensorsOverTheElementLimit) {
  // S = X·Xt has 2^15 · 2^15 = 2^30 elements (> 2^28) although the inputs are small.
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF16, {32768, 8});
  const TensorId xt = b.Input("Xt", DType::kF16, {8, 32768});
  const TensorId s = b.MatMul(x, xt);
  b.SetName(s, "S");
  b.Output(b.Sum(s, -1));
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::vector<Tensor> in = RandomInputs(p, 1);
  EXPECT_THAT(Evaluate(p, in, EvalMode::kDevice),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "cannot evaluate: tensor 'S' has shape [32768, 32768] (1073741824 "
                       "elements), more than the interpreter's limit of 2^28 (268435456) "
                       "elements per tensor; evaluate the program at a smaller batch"));

  // An input over the limit: RandomInputs leaves its data empty, Evaluate names the limit.
  ProgramBuilder b2;
  const TensorId big = b2.Input("Big", DType::kF16, {32768, 16384});
  b2.Output(b2.Sum(big, -1));
  ASSERT_OK_AND_ASSIGN(Program p2, std::move(b2).Build());
  const std::vector<Tensor> in2 = RandomInputs(p2, 1);
  ASSERT_EQ(in2.size(), 1u);
  EXPECT_EQ(in2[0].shape, (Shape{32768, 16384}));
  EXPECT_TRUE(in2[0].data.empty());
  EXPECT_THAT(Evaluate(p2, in2, EvalMode::kF64),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("tensor 'Big'")));
}

TEST(InterpreterTest, RefusesTooManyLiveElements) {
  // A chain X → exp → exp → exp → exp of 2^28-element tensors: EvaluateAll keeps all five
  // (5·2^28 > 2^30); Evaluate frees each after use (peak 2·2^28) and gets as far as the data check.
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF16, {16384, 16384});
  TensorId t = x;
  for (int i = 0; i < 4; ++i) t = b.Exp(t);
  b.SetName(t, "E4");
  b.Output(t);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  Tensor in;  // right dtype and shape, no data: the limits are checked before the data
  in.dtype = DType::kF16;
  in.shape = {16384, 16384};
  EXPECT_THAT(EvaluateAll(p, {in}, EvalMode::kDevice),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "cannot evaluate: the tensors alive when computing 'E4' total 1342177280 "
                       "elements, more than the interpreter's limit of 2^30 (1073741824); "
                       "evaluate the program at a smaller batch"));
  EXPECT_THAT(Evaluate(p, {in}, EvalMode::kDevice),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 'X' (#0): found 0 values, expected 268435456 for shape "
                       "[16384, 16384]"));
}

// ---- EvaluateAll and output order -------------------------------------------------------------
TEST(InterpreterTest, EvaluateAllIsIndexedByTensorId) {
  // Built out of order (forward references): Build() renumbers, EvaluateAll follows the Program.
  ProgramBuilder b;
  Node sum_node;
  sum_node.op = OpKind::kAdd;
  sum_node.name = "S";
  const TensorId s = b.AddNode(sum_node);  // S = add(E, Y), operands set below
  const TensorId x = b.Input("X", DType::kF16, {2});
  const TensorId y = b.Input("Y", DType::kF16, {2});
  const TensorId e = b.Scale(x, 3);
  b.SetName(e, "E");
  b.mutable_node(s).operands = {e, y};
  b.Output(s);
  b.Output(e);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::vector<Tensor> in = {MakeTensor(DType::kF16, {2}, {1, 0.1}),
                                  MakeTensor(DType::kF16, {2}, {10, 20})};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> all, EvaluateAll(p, in, EvalMode::kDevice));
  ASSERT_EQ(all.size(), p.num_tensors());
  auto value_of = [&](absl::string_view name) {
    std::optional<TensorId> id = p.Find(name);
    EXPECT_TRUE(id.has_value()) << name;
    return all[id->value()];
  };
  const double x1 = RoundToF16(0.1);
  EXPECT_EQ(value_of("X").data, (std::vector<double>{1, x1}));  // rounded input
  EXPECT_EQ(value_of("Y").data, (std::vector<double>{10, 20}));
  EXPECT_EQ(value_of("E").data, (std::vector<double>{3, RoundToF16(3 * x1)}));
  EXPECT_EQ(value_of("S").data, (std::vector<double>{13, RoundToF16(20 + RoundToF16(3 * x1))}));
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].shape, p.nodes()[i].shape);
    EXPECT_EQ(all[i].dtype, p.nodes()[i].dtype);
  }
  // Evaluate: outputs in declaration order (S, then E).
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, in, EvalMode::kDevice));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data, value_of("S").data);
  EXPECT_EQ(out[1].data, value_of("E").data);
}

TEST(InterpreterTest, OutputsMayBeInputsAndIntermediates) {
  ProgramBuilder b;
  const TensorId x = b.Input("X", DType::kF32, {3});
  const TensorId sq = b.Square(x);
  b.SetName(sq, "Q");
  const TensorId m = b.Reduce(OpKind::kMean, sq, 0);
  b.SetName(m, "M");
  b.Output(m);
  b.Output(x);
  b.Output(sq);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::vector<Tensor> in = {F32({3}, {1, 2, 3})};
  for (EvalMode mode : {EvalMode::kF64, EvalMode::kDevice}) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, in, mode));
    ASSERT_EQ(out.size(), 3u);
    EXPECT_NEAR(out[0].data[0], 14.0 / 3, 1e-6);
    EXPECT_EQ(out[1].data, (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(out[2].data, (std::vector<double>{1, 4, 9}));
  }
}

TEST(InterpreterTest, SameOperandTwice) {
  ASSERT_OK_AND_ASSIGN(
      Program p,
      SingleOutput({F32({2}, {3, -4})}, [](ProgramBuilder& b, const std::vector<TensorId>& x) {
        return b.Mul(b.Exp(x[0]), b.Exp(x[0]));
      }));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, Evaluate(p, {F32({2}, {3, -4})}, EvalMode::kF64));
  EXPECT_NEAR(out[0].data[0], std::exp(6.0), 1e-9);
  EXPECT_NEAR(out[0].data[1], std::exp(-8.0), 1e-18);
}

TEST(InterpreterTest, EvalModeNames) {
  EXPECT_EQ(EvalModeName(EvalMode::kF64), "f64");
  EXPECT_EQ(EvalModeName(EvalMode::kDevice), "device");
}

// ---- device mode against f64 on workload-shaped programs ----------------------------------------
TEST(InterpreterTest, DeviceModeIsWithinToleranceOfF64OnWorkloadShapes) {
  struct Row {
    std::string name;
    std::function<absl::StatusOr<Program>()> build;
  };
  const std::vector<Row> rows = {
      {"rmsnorm_linear (K=1024)", [] { return RmsNormLinear(4, 1024, 256); }},
      {"attention",
       [] {
         ProgramBuilder b;
         const TensorId q = b.Input("Q", DType::kF16, {2, 16, 64});
         const TensorId kt = b.Input("Kt", DType::kF16, {2, 64, 512});
         const TensorId v = b.Input("V", DType::kF16, {2, 512, 64});
         const TensorId o =
             b.MatMul(b.Softmax(b.MatMul(b.RmsNorm(q, -1), kt), -1), b.RmsNorm(v, -1));
         b.Output(o);
         return std::move(b).Build();
       }},
      {"gated_mlp bf16",
       [] {
         ProgramBuilder b;
         const TensorId x = b.Input("X", DType::kBF16, {2, 256});
         const TensorId a = b.Input("A", DType::kBF16, {256, 256});
         const TensorId w = b.Input("B", DType::kBF16, {256, 256});
         b.Output(b.Mul(b.Silu(b.MatMul(x, a)), b.MatMul(x, w)));
         return std::move(b).Build();
       }},
      {"built-in gqa b=1", [] { return BuiltinWorkload("gqa", 1); }},
      {"built-in ntrans b=1", [] { return BuiltinWorkload("ntrans", 1); }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    ASSERT_OK_AND_ASSIGN(Program p, row.build());
    const std::vector<Tensor> in = RandomInputs(p, 11);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> ref, Evaluate(p, in, EvalMode::kF64));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> dev, Evaluate(p, in, EvalMode::kDevice));
    const Tolerance tol = DefaultTolerance(p.node(p.outputs()[0].tensor).dtype);
    EXPECT_LE(RelativeError(dev[0], ref[0]), tol.rtol);
    EXPECT_GT(RelativeError(dev[0], ref[0]), 0) << "device mode must round";
  }
}

// ---- Tensor helpers ---------------------------------------------------------------------------
TEST(TensorTest, ZerosStridesOffsetAt) {
  Tensor t = Tensor::Zeros(DType::kF16, {2, 3, 4});
  EXPECT_EQ(t.data.size(), 24u);
  EXPECT_EQ(Tensor::Strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(Tensor::Strides({5}), (std::vector<int64_t>{1}));
  EXPECT_EQ(t.Offset({1, 2, 3}), 23);
  EXPECT_EQ(t.Offset({0, 1, 0}), 4);
  t.at({1, 0, 2}) = 0.5;
  EXPECT_EQ(t.data[14], 0.5);
  const Tensor& ct = t;
  EXPECT_EQ(ct.at({1, 0, 2}), 0.5);
}

TEST(TensorTest, SummarizeTable) {
  struct Row {
    std::vector<double> data;
    TensorSummary expected;
  };
  const std::vector<Row> rows = {
      {{1, 2, 3, -6}, {0, -6, 3, 0, 0, 0}},
      {{1, kNaN, 3}, {4, 1, 3, 2, 1, 0}},
      {{kInf, 1, -2}, {kInf, -2, kInf, kInf, 0, 1}},
      {{kNaN}, {0, 0, 0, 0, 1, 0}},
  };
  for (const Row& r : rows) {
    const TensorSummary s = Summarize(F32({static_cast<int64_t>(r.data.size())}, r.data));
    EXPECT_EQ(s.checksum, r.expected.checksum);
    EXPECT_EQ(s.min, r.expected.min);
    EXPECT_EQ(s.max, r.expected.max);
    EXPECT_EQ(s.mean, r.expected.mean);
    EXPECT_EQ(s.nan_count, r.expected.nan_count);
    EXPECT_EQ(s.inf_count, r.expected.inf_count);
  }
}

TEST(TensorTest, RelativeErrorTable) {
  struct Row {
    std::string name;
    Tensor a, b;
    double expected;  // NaN means "is NaN"
  };
  const std::vector<Row> rows = {
      {"equal", F32({2}, {3, 4}), F32({2}, {3, 4}), 0},
      {"3-4-5", F32({2}, {3, 4}), F32({2}, {0, 0}), kInf},
      {"small", F32({2}, {3, 4.5}), F32({2}, {3, 4}), 0.1},
      {"both zero", F32({2}, {0, 0}), F32({2}, {0, 0}), 0},
      {"shape differs", F32({2}, {3, 4}), F32({2, 1}, {3, 4}), kInf},
      {"NaN", F32({2}, {kNaN, 4}), F32({2}, {3, 4}), kNaN},
      {"equal infinities", F32({2}, {kInf, 0}), F32({2}, {kInf, 0}), 0},
      {"missed infinity", F32({2}, {1, 0}), F32({2}, {kInf, 0}), kInf},
  };
  for (const Row& r : rows) {
    const double got = RelativeError(r.a, r.b);
    if (std::isnan(r.expected)) {
      EXPECT_TRUE(std::isnan(got)) << r.name;
    } else {
      EXPECT_DOUBLE_EQ(got, r.expected) << r.name;
    }
  }
}

TEST(TensorTest, MaxToleranceRatioTable) {
  struct Row {
    std::string name;
    Tensor a, b;
    double atol, rtol, expected;
  };
  const std::vector<Row> rows = {
      {"equal", F32({2}, {1, 2}), F32({2}, {1, 2}), 0, 0, 0},
      {"within", F32({2}, {1.01, 2}), F32({2}, {1, 2}), 0.01, 0.01, 0.5},
      {"worst element", F32({2}, {1, 2.2}), F32({2}, {1, 2}), 0.0, 0.1, 1},
      {"zero allowance", F32({1}, {1}), F32({1}, {2}), 0, 0, kInf},
      {"NaN vs number", F32({1}, {kNaN}), F32({1}, {2}), 1, 1, kInf},
      {"NaN vs NaN", F32({1}, {kNaN}), F32({1}, {kNaN}), 1, 1, 0},
      {"inf vs inf", F32({1}, {kInf}), F32({1}, {kInf}), 1, 1, 0},
      {"missed inf", F32({1}, {1}), F32({1}, {kInf}), 1, 1, kInf},
      {"shape differs", F32({1}, {1}), F32({2}, {1, 1}), 1, 1, kInf},
  };
  for (const Row& r : rows) {
    const double got = MaxToleranceRatio(r.a, r.b, r.atol, r.rtol);
    if (std::isinf(r.expected)) {
      EXPECT_EQ(got, kInf) << r.name;
    } else {
      EXPECT_NEAR(got, r.expected, 1e-12) << r.name;
    }
  }
}

TEST(TensorTest, DefaultTolerances) {
  EXPECT_EQ(DefaultTolerance(DType::kF16).rtol, 2e-2);
  EXPECT_EQ(DefaultTolerance(DType::kF16).atol, 2e-2);
  EXPECT_EQ(DefaultTolerance(DType::kBF16).rtol, 5e-2);
  EXPECT_EQ(DefaultTolerance(DType::kF32).rtol, 1e-4);
  EXPECT_EQ(DefaultTolerance(DType::kF32).atol, 1e-4);
}

}  // namespace
}  // namespace prism

namespace prism {
namespace {

// Regression: with a fixed atol, device-mode results of real workloads failed the default
// f16 tolerance against f64 (outputs ~±64; errors near zero outputs exceed atol = 2e-2).
// The tolerance's atol is relative to the reference's RMS.
TEST(ToleranceTest, DeviceModeWithinDefaultToleranceOfF64OnWorkloads) {
  struct Row { const char* workload; };
  for (const Row& r : std::vector<Row>{{"rmsnorm_linear"}, {"lora"}, {"ntrans"}}) {
    absl::StatusOr<Program> p = BuiltinWorkload(r.workload, 1);
    ASSERT_TRUE(p.ok()) << p.status();
    const std::vector<Tensor> in = RandomInputs(*p, 3);
    absl::StatusOr<std::vector<Tensor>> dev = Evaluate(*p, in, EvalMode::kDevice);
    absl::StatusOr<std::vector<Tensor>> ref = Evaluate(*p, in, EvalMode::kF64);
    ASSERT_TRUE(dev.ok() && ref.ok());
    EXPECT_TRUE(WithinDefaultTolerance((*dev)[0], (*ref)[0]))
        << r.workload << ": ratio "
        << ReferenceToleranceRatio((*dev)[0], (*ref)[0], DefaultTolerance(DType::kF16));
  }
}

TEST(ToleranceTest, ReferenceScaledTable) {
  Tensor ref = Tensor::Zeros(DType::kF16, {4});
  ref.data = {100, -100, 0.0, 50};
  Tensor close = ref;
  close.data[2] = 1.0;  // |err| 1 near a zero output: within 2e-2 · rms(ref) ≈ 1.5
  Tensor far = ref;
  far.data[2] = 3.0;
  EXPECT_NEAR(RootMeanSquare(ref), 75.0, 1e-12);
  EXPECT_TRUE(WithinDefaultTolerance(close, ref));
  EXPECT_FALSE(WithinDefaultTolerance(far, ref));
  Tensor nan = ref;
  nan.data[0] = std::nan("");
  EXPECT_FALSE(WithinDefaultTolerance(nan, ref));
}

}  // namespace
}  // namespace prism
