// The CPU block emulator against the reference interpreter: every fixture at reduced sizes
// (same structure as the workloads) for 20+ seeded random valid assignments; negative fixtures
// that validate but compute something else must differ; the emulator's own checks.
#include "prism/block/emulator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/block/block_instance.h"
#include "prism/ir/interpreter.h"
#include "prism/block/sgraph_printer.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int kAssignmentsPerFixture = 24;

std::string AssignmentString(const Assignment& a) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : a) parts.push_back(absl::StrCat(k, "=", v));
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, " ");
}

// max over outputs of MaxToleranceRatio with the output dtype's default tolerance (≤ 1: within).
double WorstRatio(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Tolerance tol = DefaultTolerance(want[i].dtype);
    const double r = MaxToleranceRatio(got[i], want[i], tol.atol, tol.rtol);
    worst = std::isnan(r) ? INFINITY : std::max(worst, r);
  }
  return worst;
}

class FixtureEmulationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureEmulationTest, MatchesInterpreterForRandomAssignments) {
  const std::string name = GetParam();
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture(name, fixtures::ReducedSizes(name)));
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> assignments,
                       SampleAssignments(f.graph, /*seed=*/17, kAssignmentsPerFixture));
  ASSERT_GE(assignments.size(), 20u) << name << ": too few distinct valid assignments";
  const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/5);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(f.program, inputs, EvalMode::kDevice));
  for (const Assignment& a : assignments) {
    SCOPED_TRACE(absl::StrCat(name, " at ", AssignmentString(a)));
    ASSERT_OK_AND_ASSIGN(BlockProgram instance, Instantiate(f.graph, a));
    ASSERT_OK(CheckSignature(instance, f.program));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(instance, inputs));
    EXPECT_LE(WorstRatio(got, want), 1.0);
  }
}

// The extreme corners of each family (every parameter at its least / greatest value where the
// constraints allow) are covered explicitly, in addition to the random draws.
TEST_P(FixtureEmulationTest, MatchesInterpreterAtCorners) {
  const std::string name = GetParam();
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture(name, fixtures::ReducedSizes(name)));
  const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/6);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(f.program, inputs, EvalMode::kDevice));
  int instantiated = 0;
  for (bool greatest : {false, true}) {
    Assignment a;
    for (const Param& p : f.graph.params()) {
      const Domain& d = f.graph.ctx().var_domain(p.var);
      a[p.name] = greatest ? d.Max() : d.Min();
    }
    absl::StatusOr<BlockProgram> instance = Instantiate(f.graph, a);
    if (!instance.ok()) continue;  // e.g. gz = F = L violates L mod (gz·F) == 0
    ++instantiated;
    SCOPED_TRACE(absl::StrCat(name, " at ", AssignmentString(a)));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(*instance, inputs));
    EXPECT_LE(WorstRatio(got, want), 1.0);
  }
  EXPECT_GE(instantiated, 1);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureEmulationTest,
                         ::testing::ValuesIn(fixtures::FixtureNames()),
                         [](const auto& info) { return info.param; });

// ---- negative fixtures that validate but compute something else
// -----------------------------------
struct WrongRow {
  std::string what;
  std::string fixture;
  std::function<void(SGraph&)> mutate;
};

BlockOp& KernelOp(SGraph& g, absl::string_view kernel, absl::string_view op) {
  for (Kernel& k : g.mutable_kernels()) {
    if (k.name == kernel) return k.block().ops[*k.block().FindOp(op)];
  }
  PRISM_UNREACHABLE("no kernel ", kernel);
}

TEST(BlockEmulatorTest, WrongButWellFormedGraphsDifferFromTheReference) {
  const std::vector<WrongRow> rows = {
      {"denominator accumulated with max instead of sum", "gqa",
       [](SGraph& g) { KernelOp(g, "partial_kv", "Dn").kind = BlockOpKind::kAccMaxLast; }},
      {"split-KV partials reduced with max instead of sum", "gqa",
       [](SGraph& g) { KernelOp(g, "combine", "Ds").kind = BlockOpKind::kAccMaxLast; }},
      {"online combine without the rescale", "gqa_online",
       [](SGraph& g) {
         // Num = Σ acc_z instead of Σ exp(m_z − M)·acc_z.
         KernelOp(g, "combine", "Num").operands = {*g.kernels()[1].block().FindOp("Az")};
       }},
      {"rms count of one tile instead of the whole row", "rmsnorm_linear",
       [](SGraph& g) { KernelOp(g, "k0", "r").count = g.Const(64); }},
      {"exp of the scores dropped", "gqa",
       [](SGraph& g) { KernelOp(g, "partial_kv", "E").fn = OpKind::kNeg; }},
      {"gate on the wrong product", "gated_mlp",
       [](SGraph& g) {
         const BlockGraph& b = g.kernels()[0].block();
         KernelOp(g, "k0", "G").operands = {*b.FindOp("XB")};
       }},
  };
  for (const WrongRow& r : rows) {
    SCOPED_TRACE(r.what);
    ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                         fixtures::MakeFixture(r.fixture, fixtures::ReducedSizes(r.fixture)));
    r.mutate(f.graph);
    ASSERT_OK(Validate(f.graph).status()) << SGraphToString(f.graph);
    ASSERT_OK_AND_ASSIGN(std::vector<Assignment> as, SampleAssignments(f.graph, 3, 4));
    const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/9);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(f.program, inputs, EvalMode::kDevice));
    for (const Assignment& a : as) {
      ASSERT_OK_AND_ASSIGN(BlockProgram instance, Instantiate(f.graph, a));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(instance, inputs));
      EXPECT_GT(WorstRatio(got, want), 1.0) << AssignmentString(a);
    }
  }
}

// ---- library kernels: kernel 2 of gqa as sum(Den) + a block graph
// ---------------------------------
TEST(BlockEmulatorTest, LibraryKernelReducesPartials) {
  const fixtures::Sizes s = fixtures::ReducedSizes("gqa");
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f, fixtures::MakeFixture("gqa", s));
  SGraph& g = f.graph;
  const int den = *g.FindTensor("Den"), num = *g.FindTensor("Num"), o = *g.FindTensor("O");
  const int den_sum = g.AddTensor("DenSum", DType::kF32, Shape{s.at("G"), s.at("Lq"), 1});
  // Replace kernel "combine" by: DenSum = sum(Den, dim=2); then Σ_z Num_z / DenSum.
  Kernel k1 = std::move(g.mutable_kernels()[0]);
  g.mutable_kernels().clear();
  g.AddKernel(std::move(k1));
  LibraryKernel lk;
  lk.op = OpKind::kSum;
  lk.operands = {den};
  lk.result = den_sum;
  lk.dim = 2;
  g.AddLibraryKernel("den_sum", lk);
  const Expr gx = g.FindParam("gx")->var, gy = g.FindParam("gy")->var, gz = g.FindParam("gz")->var,
             t = g.FindParam("T")->var, st = g.FindParam("S")->var;
  BlockGraphBuilder kb(g, {gx, gy, g.One()}, t, gz, st);
  const int nt = kb.Input("Nt", num, {0, 1, kReplicate}, 2);
  const int dt = kb.Input("Dt", den_sum, {0, 1, kReplicate}, kReplicate);
  const int na = kb.Accumulate("Ns", BlockOpKind::kAccSum, nt);
  kb.Output(kb.Binary("Ot", OpKind::kDiv, na, dt), o, {0, 1, kReplicate});
  std::move(kb).Finish("combine");
  ASSERT_OK(Validate(g).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Assignment> as, SampleAssignments(g, 4, 20));
  ASSERT_GE(as.size(), 20u);
  const std::vector<Tensor> inputs = RandomInputs(f.program, /*seed=*/2);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(f.program, inputs, EvalMode::kDevice));
  for (const Assignment& a : as) {
    ASSERT_OK_AND_ASSIGN(BlockProgram instance, Instantiate(g, a));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(instance, inputs));
    EXPECT_LE(WorstRatio(got, want), 1.0) << AssignmentString(a);
  }
}

// ---- semantics of tile placement, exactly
// ------------------------------------------------------------ Y = X · 2 copied through one block
// graph whose 2-D grid and forloop split both dims: every element must land where the imap/omap
// linearization (x major, then the forloop) puts it.
TEST(BlockEmulatorTest, TilePlacementFollowsTheMaps) {
  SGraph g("copy");
  const int x = g.AddInput("X", DType::kF32, Shape{6, 8});
  const int y = g.AddOutput("Y", DType::kF32, Shape{6, 8});
  const Expr a = *g.AddParam("a", ParamRole::kGrid, *Domain::DivisorsOf(6));
  const Expr b = *g.AddParam("b", ParamRole::kGrid, *Domain::DivisorsOf(8));
  const Expr c = *g.AddParam("c", ParamRole::kGrid, *Domain::DivisorsOf(8));
  BlockGraphBuilder kb(g, {a, b, c}, g.Const(32), g.One(), g.One());
  // Grid y and z both split dim 1 (y major): tiles [6/a, 8/(b·c)].
  const int xt = kb.Input("Xt", x, {0, 1, 1}, kReplicate);
  kb.Output(kb.Scale("Yt", xt, 2.0), y, {0, 1, 1});
  std::move(kb).Finish("k0");
  ProgramBuilder pb;
  TensorId px = pb.Input("X", DType::kF32, {6, 8});
  TensorId py = pb.Scale(px, 2.0);
  pb.SetName(py, "Y");
  pb.Output(py);
  ASSERT_OK_AND_ASSIGN(Program program, std::move(pb).Build());
  const std::vector<Tensor> inputs = RandomInputs(program, 1);
  for (int64_t av : {1, 2, 3, 6}) {
    for (int64_t bv : {1, 2, 4}) {
      for (int64_t cv : {1, 2}) {
        ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(g, {{"a", av}, {"b", bv}, {"c", cv}}));
        ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(inst, inputs));
        for (size_t i = 0; i < got[0].data.size(); ++i) {
          ASSERT_EQ(got[0].data[i], 2.0 * inputs[0].data[i]) << av << " " << bv << " " << cv;
        }
      }
    }
  }
}

// Regression (found by the search): a row sum [.., 1] broadcast against a column tile that a
// grid axis splits down to one element (gy = D) validated symbolically but was rejected once
// bound ("dim 1 of P is split by (y) but dim 1 of s by (nothing)"): at extent 1 on both sides
// the unsplit one is the whole size-1 dim and broadcasts.
TEST(BlockEmulatorTest, RowSumBroadcastsAgainstOneElementColumnTiles) {
  SGraph g("row_normalize");
  const int x = g.AddInput("X", DType::kF32, Shape{4, 8});
  const int y = g.AddOutput("Y", DType::kF32, Shape{4, 8});
  const Expr gy = *g.AddParam("gy", ParamRole::kGrid, *Domain::DivisorsOf(8));
  BlockGraphBuilder kb(g, {g.One(), gy, g.One()}, g.Const(32), g.One(), g.One());
  const int whole = kb.Input("Xw", x, {kReplicate, kReplicate, kReplicate}, kReplicate);
  const int cols = kb.Input("Xc", x, {kReplicate, 1, kReplicate}, kReplicate);
  const int s = kb.Reduce("s", OpKind::kSum, whole, 1);
  kb.Output(kb.Binary("q", OpKind::kDiv, cols, s), y, {kReplicate, 1, kReplicate});
  std::move(kb).Finish("k0");
  ASSERT_OK(Validate(g).status());
  ProgramBuilder pb;
  TensorId px = pb.Input("X", DType::kF32, {4, 8});
  TensorId py = pb.Div(px, pb.Sum(px, 1));
  pb.SetName(py, "Y");
  pb.Output(py);
  ASSERT_OK_AND_ASSIGN(Program program, std::move(pb).Build());
  const std::vector<Tensor> inputs = RandomInputs(program, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(program, inputs, EvalMode::kF64));
  for (int64_t v : {1, 2, 4, 8}) {
    ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(g, {{"gy", v}}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(inst, inputs));
    EXPECT_TRUE(WithinDefaultTolerance(got[0], want[0])) << "gy = " << v;
  }
}

// A matmul of tiles of different ranks broadcasts like the IR's: [B, M, K] x [K, N] multiplies
// every batch by the one B (a linear layer over a batch of rows). Before 2026-12-05 the block
// graph required equal ranks, so the search found no family for such a Program. Rank-1 tiles
// are still refused.
TEST(BlockEmulatorTest, MatMulBroadcastsARank2Operand) {
  SGraph g("linear");
  const int x = g.AddInput("X", DType::kF32, Shape{4, 6, 16});
  const int w = g.AddInput("W", DType::kF32, Shape{16, 8});
  const int y = g.AddOutput("Y", DType::kF32, Shape{4, 6, 8});
  const Expr gb = *g.AddParam("gb", ParamRole::kGrid, *Domain::DivisorsOf(4));
  const Expr gn = *g.AddParam("gn", ParamRole::kGrid, *Domain::DivisorsOf(8));
  const Expr f = *g.AddParam("F", ParamRole::kForloop, *Domain::DivisorsOf(16));
  BlockGraphBuilder kb(g, {gb, gn, g.One()}, g.Const(32), f, g.One());
  // Batches over x, N over y, K walked by the forloop; W is the same for every batch.
  const int xt = kb.Input("Xt", x, {0, kReplicate, kReplicate}, 2);
  const int wt = kb.Input("Wt", w, {kReplicate, 1, kReplicate}, 0);
  kb.Output(kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", xt, wt)), y, {0, 2, kReplicate});
  std::move(kb).Finish("k0");
  ASSERT_OK(Validate(g).status());
  ProgramBuilder pb;
  const TensorId px = pb.Input("X", DType::kF32, {4, 6, 16});
  const TensorId pw = pb.Input("W", DType::kF32, {16, 8});
  const TensorId py = pb.MatMul(px, pw);
  pb.SetName(py, "Y");
  pb.Output(py);
  ASSERT_OK_AND_ASSIGN(Program program, std::move(pb).Build());
  const std::vector<Tensor> inputs = RandomInputs(program, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Evaluate(program, inputs, EvalMode::kF64));
  for (const Assignment& a : {Assignment{{"gb", 1}, {"gn", 1}, {"F", 1}},
                              Assignment{{"gb", 4}, {"gn", 2}, {"F", 4}},
                              Assignment{{"gb", 2}, {"gn", 8}, {"F", 16}}}) {
    ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(g, a));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Emulate(inst, inputs));
    EXPECT_TRUE(WithinDefaultTolerance(got[0], want[0])) << a.at("gb") << " " << a.at("gn");
  }

  SGraph bad("rank1");
  const int v = bad.AddInput("V", DType::kF32, Shape{16});
  const int m = bad.AddInput("M", DType::kF32, Shape{16, 8});
  BlockGraphBuilder bb(bad, {bad.One(), bad.One(), bad.One()}, bad.Const(32), bad.One(), bad.One());
  bb.Output(bb.MatMul("P", bb.Input("Vt", v, {kReplicate, kReplicate, kReplicate}, kReplicate),
                      bb.Input("Mt", m, {kReplicate, kReplicate, kReplicate}, kReplicate)),
            bad.AddOutput("O", DType::kF32, Shape{8}), {kReplicate, kReplicate, kReplicate});
  std::move(bb).Finish("k0");
  EXPECT_THAT(Validate(bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("kernel k0, op P: matmul: found tiles of rank 1 and 2, expected "
                                 "ranks ≥ 2")));
}

TEST(BlockEmulatorTest, RejectsMismatchedInputs) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("ntrans", fixtures::ReducedSizes("ntrans")));
  ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(f.graph, {{"g", 3}, {"T", 128}}));
  std::vector<Tensor> inputs = RandomInputs(f.program, 1);
  EXPECT_THAT(
      Emulate(inst, absl::MakeConstSpan(inputs).subspan(0, 2)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 3 inputs, found 2")));
  inputs[1] = Tensor::Zeros(DType::kF16, {12, 128});
  EXPECT_THAT(Emulate(inst, inputs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input H: found f16[12, 128], expected f16[12, 256]")));
}

// Racing writes are caught by the emulator itself (for instances that bypassed validation).
TEST(BlockEmulatorTest, DetectsRacingAndMissingWrites) {
  ASSERT_OK_AND_ASSIGN(fixtures::Fixture f,
                       fixtures::MakeFixture("ntrans", fixtures::ReducedSizes("ntrans")));
  ASSERT_OK_AND_ASSIGN(BlockProgram inst, Instantiate(f.graph, {{"g", 3}, {"T", 128}}));
  const std::vector<Tensor> inputs = RandomInputs(f.program, 1);
  BlockProgram racing = inst;
  auto& ops = std::get<ConcreteBlockGraph>(racing.kernels[0].body).ops;
  ops.back().map = {kReplicate, kReplicate, kReplicate};  // all 3 blocks store rows 0..3
  // (Different rows in every block: the copies of a replicated store disagree.)
  EXPECT_THAT(Emulate(racing, inputs),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("kernel k0: element 0 of tensor Y is stored by every block along "
                                 "a replicated axis, but block 1,0,0 stores ")));
  // Two blocks along y that read and store the same tiles (no map names y): a replicated
  // store whose copies agree, accepted, with the same result.
  BlockProgram copies = inst;
  std::get<ConcreteBlockGraph>(copies.kernels[0].body).grid[1] = 2;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> once, Emulate(inst, inputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> twice, Emulate(copies, inputs));
  ASSERT_EQ(once.size(), twice.size());
  for (size_t i = 0; i < once.size(); ++i) EXPECT_EQ(once[i].data, twice[i].data);
  BlockProgram missing = inst;
  std::get<ConcreteBlockGraph>(missing.kernels[0].body).grid[0] = 2;
  EXPECT_THAT(Emulate(missing, inputs),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("kernel k0: element 2048 of tensor Y is never written")));
}

}  // namespace
}  // namespace prism
