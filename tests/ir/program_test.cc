// ProgramBuilder::Build: shape inference, broadcasting, validation errors (exact messages),
// forward references and topological order, cycles, structural hashes, equality.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"
#include "prism/ir/types.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
constexpr auto kProgramInvalid = absl::StatusCode::kInvalidArgument;

// ---- shape inference, one row per op application --------------------------------------------
struct ProgramShapeRow {
  std::string what;
  std::function<TensorId(ProgramBuilder&, TensorId a, TensorId b)> build;
  Shape a, b;
  Shape expected;
};

TEST(ProgramTest, ShapeInferenceTable) {
  const std::vector<ProgramShapeRow> rows = {
      {"matmul 2d", [](auto& b, auto x, auto y) { return b.MatMul(x, y); }, {16, 64}, {64, 32}, {16, 32}},
      {"matmul batched", [](auto& b, auto x, auto y) { return b.MatMul(x, y); }, {4, 16, 64}, {4, 64, 8}, {4, 16, 8}},
      {"matmul batch broadcast", [](auto& b, auto x, auto y) { return b.MatMul(x, y); }, {4, 1, 16, 64}, {3, 64, 8}, {4, 3, 16, 8}},
      {"matmul batch one side", [](auto& b, auto x, auto y) { return b.MatMul(x, y); }, {16, 64}, {5, 64, 8}, {5, 16, 8}},
      {"exp", [](auto& b, auto x, auto) { return b.Exp(x); }, {3, 5}, {1}, {3, 5}},
      {"scale", [](auto& b, auto x, auto) { return b.Scale(x, 0.5); }, {7}, {1}, {7}},
      {"add same", [](auto& b, auto x, auto y) { return b.Add(x, y); }, {2, 3}, {2, 3}, {2, 3}},
      {"add row broadcast", [](auto& b, auto x, auto y) { return b.Add(x, y); }, {16, 4096}, {4096}, {16, 4096}},
      {"mul column broadcast", [](auto& b, auto x, auto y) { return b.Mul(x, y); }, {16, 4096}, {16, 1}, {16, 4096}},
      {"sub both broadcast", [](auto& b, auto x, auto y) { return b.Sub(x, y); }, {16, 1}, {1, 8}, {16, 8}},
      {"div rank extend", [](auto& b, auto x, auto y) { return b.Div(x, y); }, {2, 1, 3}, {4, 1}, {2, 4, 3}},
      {"sum last", [](auto& b, auto x, auto) { return b.Sum(x, -1); }, {16, 4096}, {1}, {16, 1}},
      {"sum first", [](auto& b, auto x, auto) { return b.Sum(x, 0); }, {16, 4096}, {1}, {1, 4096}},
      {"max middle", [](auto& b, auto x, auto) { return b.Reduce(OpKind::kMax, x, 1); }, {2, 3, 4}, {1}, {2, 1, 4}},
      {"mean -3", [](auto& b, auto x, auto) { return b.Reduce(OpKind::kMean, x, -3); }, {2, 3, 4}, {1}, {1, 3, 4}},
      {"rms_norm", [](auto& b, auto x, auto) { return b.RmsNorm(x, -1); }, {16, 4096}, {1}, {16, 4096}},
      {"softmax", [](auto& b, auto x, auto) { return b.Softmax(x, 2); }, {2, 256, 4096}, {1}, {2, 256, 4096}},
      {"concat dim 1", [](auto& b, auto x, auto y) { return b.Concat({x, y}, 1); }, {8, 4096}, {8, 16}, {8, 4112}},
      {"concat dim 0", [](auto& b, auto x, auto y) { return b.Concat({x, y}, 0); }, {4096, 64}, {16, 64}, {4112, 64}},
      {"concat -1 three", [](auto& b, auto x, auto y) { return b.Concat({x, y, x}, -1); }, {2, 3}, {2, 5}, {2, 11}},
  };
  for (const ProgramShapeRow& r : rows) {
    ProgramBuilder b;
    TensorId x = b.Input("A", DType::kF16, r.a);
    TensorId y = b.Input("B", DType::kF16, r.b);
    TensorId out = r.build(b, x, y);
    // Keep B used when the op is unary.
    b.Output(out);
    if (GetOpInfo(b.mutable_node(out).op).arity == 1) b.Output(y);
    absl::StatusOr<Program> p = std::move(b).Build();
    ASSERT_TRUE(p.ok()) << r.what << ": " << p.status();
    const TensorId pid = p->builder_to_program()[out.value()];
    EXPECT_EQ(ShapeToString(p->node(pid).shape), ShapeToString(r.expected)) << r.what;
    EXPECT_EQ(p->node(pid).dtype, DType::kF16) << r.what;
  }
}

TEST(ProgramTest, BroadcastTable) {
  struct Row { Shape a, b; std::string expected; };  // "" expected = error
  const std::vector<Row> rows = {
      {{1}, {5}, "[5]"},
      {{5}, {1}, "[5]"},
      {{3, 1}, {1, 4}, "[3, 4]"},
      {{2, 3, 4}, {4}, "[2, 3, 4]"},
      {{2, 3, 4}, {3, 1}, "[2, 3, 4]"},
      {{1, 1, 1, 1}, {7}, "[1, 1, 1, 7]"},
      {{3}, {4}, ""},
      {{2, 3}, {3, 2}, ""},
  };
  for (const Row& r : rows) {
    absl::StatusOr<Shape> s = BroadcastShapes(r.a, r.b);
    if (r.expected.empty()) {
      EXPECT_THAT(s, StatusIs(kProgramInvalid, HasSubstr("expected equal dims or one of them 1")));
    } else {
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(ShapeToString(*s), r.expected);
    }
  }
  EXPECT_THAT(BroadcastShapes({3}, {4}),
              StatusIs(kProgramInvalid,
                       "cannot broadcast [3] with [4]: found dims 3 and 4 at position "
                       "-1, expected equal dims or one of them 1"));
}

// ---- validation errors, exact messages -------------------------------------------------------
struct ProgramErrorRow {
  std::string what;
  std::function<void(ProgramBuilder&)> build;
  std::string message;  // exact substring
};

TEST(ProgramTest, ValidationErrorTable) {
  const std::vector<ProgramErrorRow> rows = {
      {"empty", [](ProgramBuilder&) {}, "the program has no tensors"},
      {"no output", [](ProgramBuilder& b) { b.Input("X", DType::kF16, {4}); },
       "the program has no output; expected at least one `output NAME` statement"},
      {"rank 0", [](ProgramBuilder& b) { b.Output(b.Input("X", DType::kF16, {})); },
       "input: found a shape of rank 0, expected rank 1 to 4"},
      {"rank 5", [](ProgramBuilder& b) { b.Output(b.Input("X", DType::kF16, {1, 2, 3, 4, 5})); },
       "found a shape of rank 5 ([1, 2, 3, 4, 5]), expected rank at most 4"},
      {"zero dim", [](ProgramBuilder& b) { b.Output(b.Input("X", DType::kF16, {4, 0})); },
       "found dim 0 at position 1 of [4, 0], expected every dim in 1..2147483647"},
      {"negative dim", [](ProgramBuilder& b) { b.Output(b.Input("X", DType::kF16, {-3})); },
       "found dim -3 at position 0 of [-3]"},
      {"huge dim", [](ProgramBuilder& b) { b.Output(b.Input("X", DType::kF16, {int64_t{1} << 31})); },
       "found dim 2147483648 at position 0"},
      {"bad name", [](ProgramBuilder& b) { b.Output(b.Input("1x", DType::kF16, {4})); },
       "found tensor name '1x', expected an identifier"},
      {"op as name", [](ProgramBuilder& b) { b.Output(b.Input("exp", DType::kF16, {4})); },
       "found tensor name 'exp'"},
      {"duplicate name",
       [](ProgramBuilder& b) {
         b.Input("X", DType::kF16, {4}, {1, 1});
         b.Output(b.Input("X", DType::kF16, {4}, {2, 1}));
       },
       "2:1: tensor 'X' is already defined at 1:1; expected each name to be defined once"},
      {"matmul inner",
       [](ProgramBuilder& b) {
         b.Output(b.MatMul(b.Input("X", DType::kF16, {16, 4096}), b.Input("W", DType::kF16, {2048, 6144})));
       },
       "matmul: inner dims differ: found [16, 4096] x [2048, 6144], expected a[..., K] x "
       "b[..., K, N] with equal K (4096 vs 2048)"},
      {"matmul rank 1",
       [](ProgramBuilder& b) {
         b.Output(b.MatMul(b.Input("X", DType::kF16, {16}), b.Input("W", DType::kF16, {16, 4})));
       },
       "expected both of rank at least 2"},
      {"matmul batch",
       [](ProgramBuilder& b) {
         b.Output(b.MatMul(b.Input("X", DType::kF16, {2, 4, 8}), b.Input("W", DType::kF16, {3, 8, 4})));
       },
       "matmul: batch dims: cannot broadcast [2] with [3]"},
      {"broadcast", [](ProgramBuilder& b) {
         b.Output(b.Add(b.Input("X", DType::kF16, {16, 4096}), b.Input("Y", DType::kF16, {16})));
       },
       "add: cannot broadcast [16, 4096] with [16]: found dims 4096 and 16"},
      {"dtype mix", [](ProgramBuilder& b) {
         b.Output(b.Mul(b.Input("X", DType::kF16, {4}), b.Input("Y", DType::kF32, {4})));
       },
       "mul: found operands of dtypes f16 and f32, expected all operands of one dtype"},
      {"dim range", [](ProgramBuilder& b) { b.Output(b.Sum(b.Input("X", DType::kF16, {4, 4}), 2)); },
       "sum: dim 2 is out of range for rank 2: expected -2..1"},
      {"dim range neg", [](ProgramBuilder& b) { b.Output(b.Softmax(b.Input("X", DType::kF16, {4}), -2)); },
       "softmax: dim -2 is out of range for rank 1: expected -1..0"},
      {"eps", [](ProgramBuilder& b) { b.Output(b.RmsNorm(b.Input("X", DType::kF16, {4}), -1, -1.0)); },
       "rms_norm: found eps=-1, expected a finite number >= 0"},
      {"scale nan", [](ProgramBuilder& b) { b.Output(b.Scale(b.Input("X", DType::kF16, {4}), std::nan(""))); },
       "scale: found factor nan, expected a finite number"},
      {"concat one", [](ProgramBuilder& b) { b.Output(b.Concat({b.Input("X", DType::kF16, {4})}, 0)); },
       "concat: found 1 tensor operand, expected at least 2"},
      {"concat shapes", [](ProgramBuilder& b) {
         b.Output(b.Concat({b.Input("X", DType::kF16, {4, 3}), b.Input("Y", DType::kF16, {5, 2})}, 1));
       },
       "concat: found operand shapes [4, 3] and [5, 2] (operand 1), expected equal ranks and "
       "equal dims except dim 1"},
      {"unused input", [](ProgramBuilder& b) {
         b.Input("Z", DType::kF16, {4}, {3, 1});
         b.Output(b.Input("X", DType::kF16, {4}));
       },
       "3:1: tensor 'Z' is defined but never used; use it or declare it with `output Z`"},
      {"output twice", [](ProgramBuilder& b) {
         TensorId x = b.Input("X", DType::kF16, {4});
         b.Output(x, {2, 1});
         b.Output(x, {3, 1});
       },
       "3:1: tensor 'X' is output twice (first at 2:1); expected each output once"},
      {"bad operand id", [](ProgramBuilder& b) { b.Output(b.Exp(TensorId(42))); },
       "operand 0 refers to no tensor (id 42, but there are 1 tensors)"},
      {"unnamed input", [](ProgramBuilder& b) { b.Output(b.Input("", DType::kF16, {4})); },
       "input tensor %0 has no name"},
      {"cycle", [](ProgramBuilder& b) {
         Node a; a.op = OpKind::kExp; a.name = "A"; a.operands = {TensorId(1)}; a.loc = {1, 1};
         Node c; c.op = OpKind::kNeg; c.name = "B"; c.operands = {TensorId(0)}; c.loc = {2, 1};
         b.AddNode(a);
         b.Output(b.AddNode(c));
       },
       "1:1: found a cycle: A -> B -> A; expected an acyclic program"},
      {"self cycle", [](ProgramBuilder& b) {
         Node a; a.op = OpKind::kExp; a.name = "A"; a.operands = {TensorId(0)};
         b.Output(b.AddNode(a));
       },
       "found a cycle: A -> A"},
  };
  for (const ProgramErrorRow& r : rows) {
    ProgramBuilder b;
    r.build(b);
    EXPECT_THAT(std::move(b).Build(), StatusIs(kProgramInvalid, HasSubstr(r.message))) << r.what;
  }
}

// ---- forward references, order, hashing ------------------------------------------------------
absl::StatusOr<Program> RmsLinear(int64_t m, bool forward, const std::string& y = "Y") {
  ProgramBuilder b;
  if (forward) {
    // Y defined before its operands exist (as the text format allows).
    Node mm; mm.op = OpKind::kMatMul; mm.name = y; mm.operands = {TensorId(2), TensorId(1)};
    TensorId out = b.AddNode(mm);
    b.Input("W", DType::kF16, {64, 32});
    Node rms; rms.op = OpKind::kRmsNorm; rms.dim = -1; rms.operands = {TensorId(3)};
    b.AddNode(rms);
    b.Input("X", DType::kF16, {m, 64});
    b.Output(out);
  } else {
    TensorId x = b.Input("X", DType::kF16, {m, 64});
    TensorId w = b.Input("W", DType::kF16, {64, 32});
    TensorId out = b.MatMul(b.RmsNorm(x, -1), w);
    b.SetName(out, y);
    b.Output(out);
  }
  return std::move(b).Build();
}

TEST(ProgramTest, ForwardReferencesAreSortedTopologically) {
  ASSERT_OK_AND_ASSIGN(Program p, RmsLinear(16, /*forward=*/true));
  ASSERT_EQ(p.num_tensors(), 4u);
  for (size_t i = 0; i < p.num_tensors(); ++i) {
    for (TensorId op : p.nodes()[i].operands) EXPECT_LT(op.value(), i);
  }
  EXPECT_EQ(p.node(*p.Find("Y")).shape, (Shape{16, 32}));
  EXPECT_EQ(p.builder_to_program()[0], *p.Find("Y"));
  EXPECT_EQ(p.use_counts()[p.Find("X")->value()], 1);
  EXPECT_EQ(p.DisplayName(*p.Find("W")), "W");
}

// OutputCone: each output's program alone — the nodes it depends on in the original order,
// the inputs it reads, the names kept; the other outputs' nodes and inputs dropped.
TEST(ProgramTest, OutputConeKeepsWhatOneOutputNeeds) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("X = input f16[8, 64]\n"
                                               "W = input f16[64, 32]\n"
                                               "V = input f16[64, 16]\n"
                                               "H = rms_norm(X, -1)\n"
                                               "Q = matmul(H, W)\n"
                                               "K = matmul(H, V)\n"
                                               "S = softmax(X, -1)\n"
                                               "output Q\noutput K\noutput S\n"));
  const struct {
    size_t output;
    const char* text;
  } kCases[] = {
      {0, "X = input f16[8, 64]\nW = input f16[64, 32]\nH = rms_norm(X, -1)\nQ = matmul(H, W)\n"
          "output Q\n"},
      {1, "X = input f16[8, 64]\nV = input f16[64, 16]\nH = rms_norm(X, -1)\nK = matmul(H, V)\n"
          "output K\n"},
      {2, "X = input f16[8, 64]\nS = softmax(X, -1)\noutput S\n"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.output);
    ASSERT_OK_AND_ASSIGN(Program cone, OutputCone(p, c.output));
    ASSERT_OK_AND_ASSIGN(Program want, ParseProgram(c.text));
    EXPECT_EQ(PrintProgram(cone), PrintProgram(want));
    EXPECT_EQ(cone.outputs().size(), 1u);
  }
  EXPECT_THAT(OutputCone(p, 3),
              StatusIs(absl::StatusCode::kOutOfRange, "output 3 of a program with 3 outputs"));
}

// SplitAt: the first part is the cut tensor's cone (named when anonymous), the second the
// program with that tensor an input where its definition was; what only the cut needed is left
// out of the second, and what it does not need out of the first. Inputs and outputs cannot be cut, nor a name reused.
TEST(ProgramTest, SplitAtCutsAProgramInTwo) {
  const struct {
    const char* text;
    const char* cut;  // the tensor by name, or "": the output's first operand
    const char* first;
    const char* second;
  } kCases[] = {
      {"X = input f16[8, 64]\nW1 = input f16[64, 128]\nW2 = input f16[128, 32]\n"
       "Y = matmul(gelu(matmul(X, W1)), W2)\noutput Y\n",
       "",
       "X = input f16[8, 64]\nW1 = input f16[64, 128]\nH = gelu(matmul(X, W1))\noutput H\n",
       "W2 = input f16[128, 32]\nH = input f16[8, 128]\nY = matmul(H, W2)\noutput Y\n"},
      // A named cut keeps its name; X, needed on both sides, is an input of both.
      {"X = input f16[8, 64]\nW = input f16[64, 128]\nV = input f16[128, 64]\n"
       "G = silu(matmul(X, W))\nY = add(matmul(G, V), X)\noutput Y\n",
       "G",
       "X = input f16[8, 64]\nW = input f16[64, 128]\nG = silu(matmul(X, W))\noutput G\n",
       "X = input f16[8, 64]\nV = input f16[128, 64]\nG = input f16[8, 128]\n"
       "Y = add(matmul(G, V), X)\noutput Y\n"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.text);
    ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(c.text));
    const TensorId cut = *c.cut != '\0' ? *p.Find(c.cut)
                                         : p.node(p.outputs()[0].tensor).operands[0];
    ASSERT_OK_AND_ASSIGN(ProgramSplit split, SplitAt(p, cut, "H"));
    ASSERT_OK_AND_ASSIGN(Program first, ParseProgram(c.first));
    ASSERT_OK_AND_ASSIGN(Program second, ParseProgram(c.second));
    EXPECT_EQ(PrintProgram(split.first), PrintProgram(first));
    EXPECT_EQ(PrintProgram(split.second), PrintProgram(second));
  }
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("X = input f16[8, 64]\nH = input f16[8, 64]\n"
                                               "E = exp(X)\nY = add(E, H)\noutput Y\n"));
  EXPECT_THAT(SplitAt(p, *p.Find("X"), "T"),
              StatusIs(absl::StatusCode::kInvalidArgument, "SplitAt: X is an input"));
  EXPECT_THAT(SplitAt(p, *p.Find("Y"), "T"),
              StatusIs(absl::StatusCode::kInvalidArgument, "SplitAt: the tensor is an output"));
  ASSERT_OK_AND_ASSIGN(Program anon, ParseProgram("X = input f16[8, 64]\nH = input f16[8, 64]\n"
                                                  "Y = add(exp(X), H)\noutput Y\n"));
  EXPECT_THAT(SplitAt(anon, anon.node(anon.outputs()[0].tensor).operands[0], "H"),
              StatusIs(absl::StatusCode::kInvalidArgument, "SplitAt: the name H is taken"));
}

// PadBroadcastInputs: an input of lower rank that elementwise ops broadcast (directly or
// through unary ops), all to one rank, is declared at that rank with leading 1s; the values of every output stay the same from the
// same input data (the interpreter on both programs). Anything else keeps its shape.
TEST(ProgramTest, PadBroadcastInputsDeclaresBroadcastInputsAtTheirUsersRank) {
  const struct {
    const char* text;
    const char* padded_text;  // "" : unchanged
    std::vector<std::string> padded;
  } kCases[] = {
      {"X = input f16[8, 64]\nW = input f16[64, 32]\nB = input f16[32]\n"
       "Y = add(matmul(X, W), B)\noutput Y\n",
       "X = input f16[8, 64]\nW = input f16[64, 32]\nB = input f16[1, 32]\n"
       "Y = add(matmul(X, W), B)\noutput Y\n",
       {"B"}},
      // Read twice at rank 3, and a scalar-like [1] broadcast too.
      {"X = input f16[2, 4, 16]\nG = input f16[16]\nS = input f16[1]\n"
       "Y = mul(add(mul(X, G), G), S)\noutput Y\n",
       "X = input f16[2, 4, 16]\nG = input f16[1, 1, 16]\nS = input f16[1, 1, 1]\n"
       "Y = mul(add(mul(X, G), G), S)\noutput Y\n",
       {"G", "S"}},
      // Read by a matmul too, broadcast to two ranks, or an output: unchanged.
      {"X = input f16[8, 32]\nV = input f16[32]\nW = input f16[32, 32]\n"
       "Y = add(matmul(X, W), V)\nZ = sum(V, 0)\noutput Y\noutput Z\n",
       "", {}},
      // sum keeps its dim, so Y is [1, 8, 32]: X and V are both read at rank 3.
      {"X = input f16[8, 32]\nT = input f16[2, 8, 32]\nV = input f16[32]\n"
       "Y = add(add(X, V), sum(add(T, V), 0))\noutput Y\n",
       "X = input f16[1, 8, 32]\nT = input f16[2, 8, 32]\nV = input f16[1, 1, 32]\n"
       "Y = add(add(X, V), sum(add(T, V), 0))\noutput Y\n",
       {"X", "V"}},
      // Broadcast to rank 2 for one output and rank 3 for the other: unchanged.
      {"X = input f16[8, 32]\nT = input f16[2, 8, 32]\nV = input f16[32]\n"
       "Y = add(X, V)\nZ = add(T, V)\noutput Y\noutput Z\n",
       "", {}},
      // Through unary ops: b and the exp of it gain the leading 1.
      {"X = input f16[8, 32]\nb = input f16[32]\nY = add(X, scale(exp(b), 2))\noutput Y\n",
       "X = input f16[8, 32]\nb = input f16[1, 32]\nY = add(X, scale(exp(b), 2))\noutput Y\n",
       {"b"}},
      // ... unless the unary op's result is an output itself.
      {"X = input f16[8, 32]\nb = input f16[32]\nE = exp(b)\nY = add(X, E)\noutput Y\n"
       "output E\n",
       "", {}},
      {"X = input f16[8, 32]\nV = input f16[32]\nY = add(X, V)\noutput Y\noutput V\n",
       "", {}},
      // Through a norm or a reduction over a dim counted from the end (random programs,
      // 2026-12-05: add(rms_norm(t0, -1), T) with t0 [1, 3] and T [3, 3, 3] had no family).
      {"X = input f32[3, 3, 3]\nt = input f32[1, 3]\nY = add(rms_norm(t, -1), X)\noutput Y\n",
       "X = input f32[3, 3, 3]\nt = input f32[1, 1, 3]\nY = add(rms_norm(t, -1), X)\noutput Y\n",
       {"t"}},
      {"X = input f16[8, 32]\nb = input f16[32]\nY = mul(X, softmax(b, -1))\nZ = add(X, "
       "sum(b, -1))\noutput Y\noutput Z\n",
       "X = input f16[8, 32]\nb = input f16[1, 32]\nY = mul(X, softmax(b, -1))\nZ = add(X, "
       "sum(b, -1))\noutput Y\noutput Z\n",
       {"b"}},
      // ... not over a dim counted from the start: that dim would move.
      {"X = input f16[8, 32]\nb = input f16[32]\nY = mul(X, softmax(b, 0))\noutput Y\n", "",
       {}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.text);
    ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(c.text));
    ASSERT_OK_AND_ASSIGN(BroadcastView v, PadBroadcastInputs(p));
    EXPECT_EQ(PrintProgram(v.program), *c.padded_text ? std::string(c.padded_text) : PrintProgram(p));
    std::vector<std::string> names;
    for (const auto& [name, shape] : v.padded) {
      names.push_back(name);
      EXPECT_EQ(shape, p.node(*p.Find(name)).shape) << name;
    }
    EXPECT_EQ(names, c.padded);
    // Same data (the same elements in the same order), same outputs.
    std::vector<Tensor> in = RandomInputs(p, 7);
    std::vector<Tensor> in_padded = in;
    for (size_t i = 0; i < in.size(); ++i) {
      in_padded[i].shape = v.program.node(v.program.inputs()[i]).shape;
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(p, in, EvalMode::kF64));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Evaluate(v.program, in_padded, EvalMode::kF64));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape, want[i].shape);
      EXPECT_EQ(got[i].data, want[i].data);
    }
  }
}

TEST(ProgramTest, StructuralHash) {
  ASSERT_OK_AND_ASSIGN(Program a, RmsLinear(16, false));
  ASSERT_OK_AND_ASSIGN(Program renamed, RmsLinear(16, false, "Out"));
  ASSERT_OK_AND_ASSIGN(Program bigger, RmsLinear(32, false));
  ASSERT_OK_AND_ASSIGN(Program again, RmsLinear(16, false));
  // Names don't matter; shapes do; the shape-free hash ignores sizes.
  EXPECT_EQ(a.StructuralHash(), renamed.StructuralHash());
  EXPECT_EQ(a.StructuralHash(), again.StructuralHash());
  EXPECT_NE(a.StructuralHash(), bigger.StructuralHash());
  EXPECT_EQ(a.ShapeFreeHash(), bigger.ShapeFreeHash());
  EXPECT_NE(a.StructuralHash(), a.ShapeFreeHash());
  EXPECT_TRUE(a == again);
  EXPECT_FALSE(a == renamed);
  EXPECT_FALSE(a == bigger);
}

TEST(ProgramTest, HashSeesAttributesAndWiring) {
  auto build = [](std::function<TensorId(ProgramBuilder&, TensorId, TensorId)> f) {
    ProgramBuilder b;
    TensorId x = b.Input("X", DType::kF32, {4, 4});
    TensorId y = b.Input("Y", DType::kF32, {4, 4});
    b.Output(f(b, x, y));
    return std::move(b).Build()->StructuralHash();
  };
  const uint64_t sub_xy = build([](auto& b, auto x, auto y) { return b.Sub(x, y); });
  const uint64_t sub_yx = build([](auto& b, auto x, auto y) { return b.Sub(y, x); });
  const uint64_t s1 = build([](auto& b, auto x, auto y) { return b.Add(b.Scale(x, 2.0), y); });
  const uint64_t s2 = build([](auto& b, auto x, auto y) { return b.Add(b.Scale(x, 3.0), y); });
  const uint64_t sum_m1 = build([](auto& b, auto x, auto y) { return b.Add(b.Sum(x, -1), y); });
  const uint64_t sum_1 = build([](auto& b, auto x, auto y) { return b.Add(b.Sum(x, 1), y); });
  const uint64_t sum_0 = build([](auto& b, auto x, auto y) { return b.Add(b.Sum(x, 0), y); });
  EXPECT_NE(sub_xy, sub_yx);
  EXPECT_NE(s1, s2);
  EXPECT_EQ(sum_m1, sum_1);  // normalized axis
  EXPECT_NE(sum_1, sum_0);
}

TEST(ProgramTest, OpTable) {
  EXPECT_EQ(AllOps().size(), 22u);
  for (const OpInfo& info : AllOps()) {
    EXPECT_EQ(GetOpInfo(info.kind).name, info.name);
    EXPECT_EQ(ParseOpName(info.name), info.kind);
    EXPECT_FALSE(IsValidTensorName(info.name));
  }
  EXPECT_FALSE(ParseOpName("expp").has_value());
  EXPECT_TRUE(IsValidTensorName("Kt"));
  EXPECT_TRUE(IsValidTensorName("_x9"));
  EXPECT_FALSE(IsValidTensorName("f16"));
  EXPECT_FALSE(IsValidTensorName("output"));
  EXPECT_FALSE(IsValidTensorName("a-b"));
}

TEST(TypesTest, DTypeAndDimTables) {
  EXPECT_EQ(ParseDType("bf16"), DType::kBF16);
  EXPECT_FALSE(ParseDType("f64").has_value());
  EXPECT_EQ(DTypeBytes(DType::kF32), 4);
  EXPECT_EQ(DTypeBytes(DType::kF16), 2);
  EXPECT_EQ(RoundToDType(1.0 / 3, DType::kF16), 0.333251953125);
  EXPECT_EQ(*NormalizeDim(-1, 3), 2);
  EXPECT_EQ(*NormalizeDim(0, 1), 0);
  EXPECT_EQ(NumElements({16, 4096}), 65536);
  EXPECT_FALSE(NumElements({kMaxDim, kMaxDim, kMaxDim}).has_value());
  EXPECT_EQ(ShapeToString({2, 3}), "[2, 3]");
}

}  // namespace
}  // namespace prism

namespace prism {
namespace {
// Regression: the output-twice check was quadratic (40,000 outputs took 9 s in Build()).
TEST(ProgramTest, ManyOutputsBuildInLinearTime) {
  ProgramBuilder b;
  for (int i = 0; i < 40000; ++i) b.Output(b.Input(absl::StrCat("X", i), DType::kF16, {4}));
  absl::StatusOr<Program> p = std::move(b).Build();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->outputs().size(), 40000u);
}
}  // namespace
}  // namespace prism
