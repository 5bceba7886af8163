// sGraph well-formedness (positive: every fixture at reduced and workload sizes; negative: one
// row per rule with the exact message), derived tile shapes and constraints, JSON round trip
// and errors, the printer, Bind and Instantiate errors.
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "block/fixtures/fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/ir/interpreter.h"
#include "prism/block/sgraph_json.h"
#include "prism/block/sgraph_printer.h"
#include "prism/ir/workloads.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr int64_t R_ = kReplicate;

fixtures::Fixture Reduced(absl::string_view name) {
  absl::StatusOr<fixtures::Fixture> f = fixtures::MakeFixture(name, fixtures::ReducedSizes(name));
  PRISM_CHECK(f.ok(), f.status().message());
  return *std::move(f);
}

Kernel& K(SGraph& g, absl::string_view kernel) {
  for (Kernel& k : g.mutable_kernels()) {
    if (k.name == kernel) return k;
  }
  PRISM_UNREACHABLE("no kernel ", kernel);
}
BlockOp& Op(SGraph& g, absl::string_view kernel, absl::string_view op) {
  BlockGraph& b = K(g, kernel).block();
  std::optional<int> i = b.FindOp(op);
  PRISM_CHECK(i.has_value(), "no op ", op);
  return b.ops[*i];
}
int Index(SGraph& g, absl::string_view kernel, absl::string_view op) {
  return *K(g, kernel).block().FindOp(op);
}
BlockOp& OutputOp(SGraph& g, absl::string_view kernel, int which = 0) {
  for (BlockOp& op : K(g, kernel).block().ops) {
    if (op.kind == BlockOpKind::kOutput && which-- == 0) return op;
  }
  PRISM_UNREACHABLE("no output");
}
void Append(SGraph& g, absl::string_view kernel, BlockOp op) {
  K(g, kernel).block().ops.push_back(std::move(op));
}
BlockOp MakeOp(BlockOpKind kind, std::string name, std::vector<int> operands,
               OpKind fn = OpKind::kInput) {
  BlockOp op;
  op.kind = kind;
  op.name = std::move(name);
  op.operands = std::move(operands);
  op.fn = fn;
  return op;
}

// ---- positive
// ---------------------------------------------------------------------------------------
TEST(BlockSGraphTest, EveryFixtureValidatesAtReducedAndWorkloadSizes) {
  for (const std::string& name : fixtures::FixtureNames()) {
    SCOPED_TRACE(name);
    fixtures::Fixture f = Reduced(name);
    EXPECT_OK(Validate(f.graph).status()) << SGraphToString(f.graph);
    for (int batch : {1, 8}) {
      ASSERT_OK_AND_ASSIGN(fixtures::Fixture full,
                           fixtures::MakeFixture(name, fixtures::WorkloadSizes(name, batch)));
      EXPECT_OK(Validate(full.graph).status());
      // The fixture's program is the built-in workload's, at the same sizes.
      ASSERT_OK_AND_ASSIGN(Program builtin, BuiltinWorkload(fixtures::WorkloadOf(name), batch));
      EXPECT_EQ(full.program.StructuralHash(), builtin.StructuralHash());
    }
  }
}

// The walkthrough's table (WALKTHROUGH.md §3), at b = 8.
TEST(BlockSGraphTest, RmsNormLinearTilesMatchTheWalkthrough) {
  ASSERT_OK_AND_ASSIGN(
      fixtures::Fixture f,
      fixtures::MakeFixture("rmsnorm_linear_square", fixtures::WorkloadSizes("rmsnorm_linear", 8)));
  ASSERT_OK_AND_ASSIGN(SGraphAnalysis info, Validate(f.graph));
  struct Row {
    std::string op, shape;
    Phase phase;
  };
  const std::vector<Row> rows = {
      {"Xt", "[16, 4096 floordiv F]", Phase::kLoop},
      {"Wt", "[4096 floordiv F, 6144 floordiv g]", Phase::kLoop},
      {"P", "[16, 6144 floordiv g]", Phase::kLoop},
      {"Q", "[16, 4096 floordiv F]", Phase::kLoop},
      {"A", "[16, 6144 floordiv g]", Phase::kAfter},
      {"R", "[16, 1]", Phase::kAfter},
      {"r", "[16, 1]", Phase::kAfter},
      {"Yt", "[16, 6144 floordiv g]", Phase::kAfter},
  };
  const BlockGraph& b = f.graph.kernels()[0].block();
  for (const Row& r : rows) {
    const TileInfo& t = info.tiles[0][*b.FindOp(r.op)];
    std::vector<std::string> dims;
    for (Expr e : t.shape) dims.push_back(f.graph.ctx().ToString(e));
    EXPECT_EQ(absl::StrCat("[", absl::StrJoin(dims, ", "), "]"), r.shape) << r.op;
    EXPECT_EQ(t.phase, r.phase) << r.op;
  }
  std::vector<std::string> constraints;
  for (const Constraint& c : info.constraints) {
    constraints.push_back(absl::StrCat(f.graph.ctx().ToString(c.condition), " : ", c.reason));
  }
  EXPECT_THAT(constraints,
              ::testing::ElementsAre(
                  "4096 mod F == 0 : tensor X dim 1 is split by forloop = F (kernel k0, op Xt)",
                  "4096 mod F == 0 : tensor W dim 0 is split by forloop = F (kernel k0, op Wt)",
                  "6144 mod g == 0 : tensor W dim 1 is split by grid x = g (kernel k0, op Wt)",
                  "6144 mod g == 0 : tensor Y dim 1 is split by grid x = g (kernel k0, op "
                  "output Y)"));
}

TEST(BlockSGraphTest, SplitKvPartialsAreDerived) {
  fixtures::Fixture f = Reduced("gqa");
  ASSERT_OK_AND_ASSIGN(SGraphAnalysis info, Validate(f.graph));
  const ExprContext& ctx = f.graph.ctx();
  for (const char* name : {"Num", "Den"}) {
    const int t = *f.graph.FindTensor(name);
    ASSERT_EQ(info.partials[t].size(), 1u) << name;
    const PartialLayout& l = info.partials[t][0];
    EXPECT_EQ(l.dim, 2);
    EXPECT_EQ(l.axis, 2);
    EXPECT_EQ(l.kernel, 0);
    EXPECT_EQ(ctx.ToString(l.groups), "gz");
    EXPECT_EQ(ctx.ToString(l.group_extent), std::string(name) == "Num" ? "16" : "1");
    EXPECT_EQ(info.producer[t], 0);
  }
  EXPECT_TRUE(info.partials[*f.graph.FindTensor("O")].empty());
  // Kernel 2 walks the groups: its tile is a per-iteration partial, closed by acc_sum.
  EXPECT_TRUE(info.tiles[1][*f.graph.kernels()[1].block().FindOp("Nt")].loop_partial);
  EXPECT_EQ(info.tiles[0][*f.graph.kernels()[0].block().FindOp("N")].partial_axes, 0b100);
}

// A grid axis that no input and no partial result depends on, left out of the omap: every block
// along it stores the same tile (a split's Σx² partial is stored so by each column block).
TEST(BlockSGraphTest, ReplicatedStoreOfATileThatIgnoresTheAxis) {
  fixtures::Fixture f = Reduced("rmsnorm_linear");
  K(f.graph, "k0").block().grid[1] = f.graph.Const(2);
  ASSERT_OK(Validate(f.graph).status());
  // The same axis laid out on a dim would store copies side by side: still an error.
  OutputOp(f.graph, "k0").map[1] = f.graph.Const(0);
  EXPECT_THAT(Validate(f.graph), StatusIs(kInvalid, HasSubstr("so its blocks would store copies")));
}

// ---- negative: one row per rule
// ---------------------------------------------------------------------
struct BadRow {
  std::string rule;
  std::string fixture;
  std::function<void(SGraph&)> mutate;
  std::string message;
};

TEST(BlockSGraphTest, WellFormednessErrors) {
  const std::vector<BadRow> rows = {
      // Inside/after-loop rules.
      {"accumulator before its producer", "rmsnorm_linear",
       [](SGraph& g) { Op(g, "k0", "A").operands = {Index(g, "k0", "Yt")}; },
       "kernel k0, op A: operand 6 is not an earlier op, expected ops in dependency order (an "
       "op may only use ops before it)"},
      {"loop op consumes an accumulator", "rmsnorm_linear",
       [](SGraph& g) {
         Append(g, "k0",
                MakeOp(BlockOpKind::kBinary, "bad", {Index(g, "k0", "P"), Index(g, "k0", "A")},
                       OpKind::kMul));
       },
       "kernel k0, op bad: mixes P, computed inside the forloop, with A, an after-loop value; "
       "after-loop ops may only consume accumulators and loop-invariant tiles"},
      {"accumulator of an accumulator", "rmsnorm_linear",
       [](SGraph& g) {
         Append(g, "k0", MakeOp(BlockOpKind::kAccSum, "AA", {Index(g, "k0", "A")}));
       },
       "kernel k0, op AA: acc_sum consumes A, an after-loop value; nothing inside the forloop "
       "may consume an accumulator"},
      {"store of a loop-body tile", "rmsnorm_linear",
       [](SGraph& g) { OutputOp(g, "k0").operands = {Index(g, "k0", "P")}; },
       "kernel k0, op output Y: stores P, a tile computed inside the forloop; expected an "
       "accumulator, an after-loop value or a loop-invariant tile"},
      {"accumulating iterations that hold different elements", "rmsnorm_linear",
       [](SGraph& g) { Op(g, "k0", "A").operands = {Index(g, "k0", "Xt")}; },
       "kernel k0, op A: acc_sum: dim 1 of its operand is walked by the forloop, so iterations "
       "hold different elements, not partial results"},
      // Wrong maps.
      {"two grid axes split the same dim of two operands", "gated_mlp",
       [](SGraph& g) {
         BlockGraph& b = K(g, "k0").block();
         b.grid[1] = b.grid[0];  // both axes g, so the tile shapes agree
         Op(g, "k0", "Xt").map[1] = g.Replicate();
         Op(g, "k0", "Bt").map = {g.Replicate(), g.Const(1), g.Replicate()};
         OutputOp(g, "k0").map = {g.Const(1), g.Replicate(), g.Replicate()};
       },
       "kernel k0, op Yt: mul: dim 1 of G is split by (x) but dim 1 of XB by (y), so the tiles "
       "hold different elements; expected the same maps"},
      {"contraction dims split differently", "gqa",
       [](SGraph& g) {
         // Forloop 1 and no z split: E's L dim is "walked" by the forloop, V's is not; the
         // extents agree (L), the elements do not (in general).
         Op(g, "partial_kv", "Vt").map[2] = g.Replicate();
         Op(g, "partial_kv", "Vt").fmap = g.Replicate();
         Op(g, "partial_kv", "Ktt").map[2] = g.Replicate();
         K(g, "partial_kv").block().forloop = g.One();
       },
       "kernel partial_kv, op EV: matmul contraction: dim 2 of E is split by (forloop) but dim 1 "
       "of Vt by (nothing), so the tiles hold different elements; expected the same maps"},
      {"omap lays a split on the wrong dim", "rmsnorm_linear",
       [](SGraph& g) { OutputOp(g, "k0").map[0] = g.Const(0); },
       "kernel k0, op output Y: grid axis x splits tile dim 1 but the omap lays it out on dim 0, "
       "expected dim 1"},
      {"matmul inner dims differ", "rmsnorm_linear",
       [](SGraph& g) { Op(g, "k0", "Wt").fmap = g.Replicate(); },
       "kernel k0, op P: matmul: inner dims differ: found [4, 256 floordiv F] x [256, 192 "
       "floordiv g], expected a[..., K] x b[K, ...] with equal K"},
      {"rms over a split dim", "rmsnorm_linear",
       [](SGraph& g) {
         BlockOp op = MakeOp(BlockOpKind::kRms, "bad", {Index(g, "k0", "Xt")});
         op.dim = -1;
         Append(g, "k0", op);
       },
       "kernel k0, op bad: rms over dim 1 needs the whole dim in one tile, but it is split by "
       "(forloop); expected an unsplit dim (or acc_sumsq_last and inv_rms)"},
      {"omap drops an axis that splits the tile (race)", "rmsnorm_linear",
       [](SGraph& g) { OutputOp(g, "k0").map[0] = g.Replicate(); },
       "kernel k0, op output Y: grid axis x (g blocks) is not mapped by the omap, so its blocks "
       "would race on the same elements; expected an omap entry for x"},
      {"grid axis that splits nothing", "rmsnorm_linear",
       [](SGraph& g) {
         K(g, "k0").block().grid[1] = g.Const(2);
         OutputOp(g, "k0").map[1] = g.Const(0);
       },
       "kernel k0, op output Y: grid axis y (2 blocks) neither splits a dim of the stored tile "
       "nor holds partial results, so its blocks would store copies"},
      // Missing cross-block reductions.
      {"split-KV partials stored without a following reduction (race)", "gqa",
       [](SGraph& g) {
         g.mutable_kernels().pop_back();
         OutputOp(g, "partial_kv", 0).tensor = *g.FindTensor("O");
         OutputOp(g, "partial_kv", 0).map[2] = g.Replicate();
         K(g, "partial_kv").block().ops.pop_back();  // drop the Den store
       },
       "kernel partial_kv, op output O: grid axis z (gz blocks) is not mapped by the omap, so "
       "its blocks would race on the same elements; blocks along z hold partial results (z "
       "splits a reduction): map z to an output dim to lay the partials side by side and "
       "reduce them in a following kernel"},
      {"split-K partials as the program output", "rmsnorm_linear_splitk",
       [](SGraph& g) {
         g.mutable_kernels().pop_back();  // drop the kernel that reduces the partials
         g.mutable_outputs() = {*g.FindTensor("P")};
       },
       "sGraph output P holds s partial results along dim 0 (grid axis y of kernel partial_xw "
       "splits a reduction), but no following kernel reduces them"},
      {"consumer does not walk the partials", "gqa",
       [](SGraph& g) { K(g, "combine").block().forloop = g.FindParam("F")->var; },
       "kernel combine, op Nt: tensor Num holds gz partial results along dim 2 (one per block "
       "along grid axis z of kernel partial_kv), but the forloop (F iterations) does not walk "
       "them one group per iteration; expected forloop = gz"},
      {"library kernel that does not reduce partials", "gqa",
       [](SGraph& g) {
         g.mutable_kernels().pop_back();
         LibraryKernel lk;
         lk.op = OpKind::kExp;
         lk.operands = {*g.FindTensor("Den")};
         lk.result = *g.FindTensor("O");
         g.AddLibraryKernel("bad", lk);
       },
       "kernel bad: exp reads tensor Den, which holds gz partial results along dim 2 (grid axis "
       "z of kernel partial_kv); expected sum or max over dim 2 with one element per group, or "
       "a block graph whose forloop walks the groups"},
      {"partials stored again unreduced", "gqa_online",
       [](SGraph& g) { OutputOp(g, "combine").operands = {Index(g, "combine", "Mall")}; },
       "kernel combine, op output O: stores Mall, whose dim 2 still holds the unreduced partial "
       "results of an earlier kernel; expected them reduced"},
      // Graph-level rules.
      {"reads a tensor before it is written", "gqa",
       [](SGraph& g) { std::swap(g.mutable_kernels()[0], g.mutable_kernels()[1]); },
       "kernel combine, op Nt: reads tensor Num before any kernel writes it, expected a program "
       "input or a tensor written by an earlier kernel"},
      {"an intermediate that nobody reads", "gqa",
       [](SGraph& g) { g.AddTensor("Spare", DType::kF32, Shape{1}); },
       "tensor Spare is never written, expected an intermediate written by one kernel and read "
       "by a later one"},
      {"unresolved map", "rmsnorm_linear",
       [](SGraph& g) {
         Op(g, "k0", "Wt").map[0] = *g.AddParam("mW", ParamRole::kMap, *Domain::Range(-1, 1));
       },
       "kernel k0, op Wt: imap x is unresolved ('mW'), expected a constant: bind the map "
       "parameters before validating"},
      {"map out of range", "rmsnorm_linear", [](SGraph& g) { Op(g, "k0", "Wt").fmap = g.Const(2); },
       "kernel k0, op Wt: fmap = 2 is out of range for tensor W of rank 2, expected -1 (none) or "
       "0..1"},
      {"undeclared variable", "rmsnorm_linear",
       [](SGraph& g) { K(g, "k0").block().threads = *g.ctx().Var("q", *Domain::Range(1, 8)); },
       "expression 'q' uses 'q', which is not a declared parameter"},
      {"constant split that does not divide", "rmsnorm_linear",
       [](SGraph& g) { K(g, "k0").block().grid[0] = g.Const(5); },
       "kernel k0, op Wt: tensor W dim 1 (extent 192) is not divisible by 5 (grid x = 5), "
       "expected a divisor"},
      {"duplicate tensor names", "rmsnorm_linear",
       [](SGraph& g) { g.mutable_tensors()[1].name = "X"; },
       "tensor 'X' is declared twice, expected unique names"},
      {"wrong arity", "rmsnorm_linear", [](SGraph& g) { Op(g, "k0", "P").operands.pop_back(); },
       "kernel k0, op P: matmul takes 2 operand(s), found 1"},
      {"unary op with a binary function", "rmsnorm_linear",
       [](SGraph& g) {
         Append(g, "k0", MakeOp(BlockOpKind::kUnary, "bad", {Index(g, "k0", "A")}, OpKind::kAdd));
       },
       "kernel k0, op bad: 'add' is not a unary function, expected one of exp silu gelu relu "
       "sqrt rsqrt square neg recip scale"},
      {"no output op", "ntrans", [](SGraph& g) { K(g, "k0").block().ops.pop_back(); },
       "kernel k0: has no output op, expected at least one"},
      {"div_count by zero", "rmsnorm_linear",
       [](SGraph& g) {
         BlockOp op = MakeOp(BlockOpKind::kDivCount, "bad", {Index(g, "k0", "A")});
         op.count = g.Const(0);
         Append(g, "k0", op);
       },
       "kernel k0, op bad: div_count count is 0, expected ≥ 1"},
  };
  for (const BadRow& r : rows) {
    SCOPED_TRACE(r.rule);
    fixtures::Fixture f = Reduced(r.fixture);
    r.mutate(f.graph);
    EXPECT_THAT(Validate(f.graph), StatusIs(kInvalid, HasSubstr(r.message)));
  }
}

// ---- JSON
// ------------------------------------------------------------------------------------------
TEST(BlockSGraphTest, JsonRoundTripsEveryFixture) {
  for (const std::string& name : fixtures::FixtureNames()) {
    SCOPED_TRACE(name);
    fixtures::Fixture f = Reduced(name);
    const nlohmann::json j = SGraphToJson(f.graph);
    ASSERT_OK_AND_ASSIGN(SGraph back, SGraphFromJsonText(j.dump(2)));
    EXPECT_TRUE(back == f.graph);
    EXPECT_EQ(back.StructuralHash(), f.graph.StructuralHash());
    EXPECT_EQ(SGraphToString(back), SGraphToString(f.graph));
    SGraph clone = f.graph.Clone();
    EXPECT_TRUE(clone == f.graph);
  }
  // div_count (mean = sum / n) keeps its count through JSON and prints it.
  fixtures::Fixture mean = Reduced("rmsnorm_linear");
  BlockOp dc = MakeOp(BlockOpKind::kDivCount, "Mean", {Index(mean.graph, "k0", "A")});
  dc.count = mean.graph.Const(256);
  Append(mean.graph, "k0", dc);
  ASSERT_OK_AND_ASSIGN(SGraph mean_back, SGraphFromJsonText(SGraphToJson(mean.graph).dump()));
  EXPECT_TRUE(mean_back == mean.graph);
  EXPECT_THAT(SGraphToString(mean_back), HasSubstr("Mean = div_count(A, n=256)"));

  fixtures::Fixture a = Reduced("gqa");
  fixtures::Fixture b = Reduced("gqa");
  Op(b.graph, "partial_kv", "E").fn = OpKind::kSilu;
  EXPECT_FALSE(a.graph == b.graph);
  EXPECT_NE(a.graph.StructuralHash(), b.graph.StructuralHash());
}

// The hand-written JSON file is the fixture builder's graph at b = 8.
TEST(BlockSGraphTest, JsonFixtureFileMatchesTheBuilder) {
  ASSERT_OK_AND_ASSIGN(
      std::string text,
      ReadFile(JoinPath(PRISM_SOURCE_DIR, "tests/block/fixtures/rmsnorm_linear.json")));
  ASSERT_OK_AND_ASSIGN(SGraph from_file, SGraphFromJsonText(text));
  ASSERT_OK_AND_ASSIGN(
      fixtures::Fixture f,
      fixtures::MakeFixture("rmsnorm_linear", fixtures::WorkloadSizes("rmsnorm_linear", 8)));
  EXPECT_TRUE(from_file == f.graph) << SGraphToJson(from_file).dump(2) << "\nvs\n"
                                    << SGraphToJson(f.graph).dump(2);
  EXPECT_OK(Validate(from_file).status());
}

TEST(BlockSGraphTest, JsonErrorsNameThePath) {
  const nlohmann::json good = SGraphToJson(Reduced("gqa").graph);
  struct Row {
    std::string what;
    std::function<void(nlohmann::json&)> mutate;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"format", [](auto& j) { j["format"] = "x"; },
       "format: found \"x\", expected \"prism.sgraph\""},
      {"version", [](auto& j) { j["version"] = 2; }, "version: found 2, expected 1"},
      {"unknown op", [](auto& j) { j["kernels"][0]["ops"][4]["op"] = "expp"; },
       "kernels[0].ops[4].op: found \"expp\", expected a block op or a unary/binary/reduce "
       "function"},
      {"unknown operand", [](auto& j) { j["kernels"][0]["ops"][3]["operands"][0] = "Zt"; },
       "kernels[0].ops[3].operands[0]: unknown op 'Zt', expected the name of an earlier op of "
       "the kernel"},
      {"unknown tensor", [](auto& j) { j["kernels"][0]["ops"][0]["tensor"] = "Qq"; },
       "kernels[0].ops[0].tensor: unknown tensor 'Qq', expected a declared tensor"},
      {"bad expression", [](auto& j) { j["kernels"][0]["grid"][2] = "gz *"; },
       "kernels[0].grid[2]: at offset 4"},
      {"unknown variable", [](auto& j) { j["tensors"][4]["shape"][2] = "gw * 16"; },
       "tensors[4].shape[2]: at offset 0: unknown variable 'gw'"},
      {"bad role", [](auto& j) { j["params"][0]["role"] = "warp"; },
       "params[0].role: found \"warp\", expected grid, forloop, threads, stages, map or size"},
      {"bad domain", [](auto& j) { j["params"][0]["domain"] = "divisors(0)"; },
       "params[0].domain:"},
      {"bad kind", [](auto& j) { j["kernels"][1]["kind"] = "warp"; },
       "kernels[1].kind: found \"warp\", expected \"block\" or \"library\""},
      {"missing key", [](auto& j) { j["kernels"][0].erase("forloop"); },
       "kernels[0].forloop: missing, expected a value"},
      {"map arity",
       [](auto& j) {
         j["kernels"][0]["ops"][0]["imap"] = {0, 1};
       },
       "kernels[0].ops[0].imap: found 2 entries, expected 3"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    nlohmann::json j = good;
    r.mutate(j);
    EXPECT_THAT(SGraphFromJson(j), StatusIs(kInvalid, HasSubstr(r.message)));
  }
  EXPECT_THAT(SGraphFromJsonText("{\"format\": "), StatusIs(kInvalid, HasSubstr("malformed JSON")));
}

// ---- printer
// -----------------------------------------------------------------------------------------
TEST(BlockSGraphTest, PrinterGolden) {
  EXPECT_EQ(SGraphToString(Reduced("rmsnorm_linear").graph),
            R"(sgraph rmsnorm_linear
  param g: grid in divisors(192)
  param F: forloop in divisors(256)
  param T: threads in {64, 128, 256, 512}
  param S: stages in range(1, 4)
  tensor X: f16[4, 256] input
  tensor W: f16[256, 192] input
  tensor Y: f16[4, 192] output
  kernel k0: block grid (g, 1, 1) threads T forloop F stages S
    Xt = input X imap (-, -, -) fmap 1            # [4, 256 floordiv F] loop
    Wt = input W imap (1, -, -) fmap 0            # [256 floordiv F, 192 floordiv g] loop
    P = matmul(Xt, Wt)                            # [4, 192 floordiv g] loop
    R = acc_sumsq_last(Xt)                        # [4, 1] after
    A = acc_sum(P)                                # [4, 192 floordiv g] after
    r = inv_rms(R, n=256, eps=1e-06)              # [4, 1] after
    Yt = mul(A, r)                                # [4, 192 floordiv g] after
    output Y = Yt omap (1, -, -)                  # [4, 192 floordiv g] after
)");
  fixtures::Fixture f = Reduced("rmsnorm_linear");
  Op(f.graph, "k0", "Wt").fmap = f.graph.Replicate();
  EXPECT_THAT(SGraphToString(f.graph),
              HasSubstr("  # invalid: kernel k0, op P: matmul: inner dims differ"));
}

// ---- Bind and Instantiate
// ---------------------------------------------------------------------------
TEST(BlockSGraphTest, BindResolvesMapParameters) {
  fixtures::Fixture f = Reduced("rmsnorm_linear");
  const Expr m = *f.graph.AddParam("mW", ParamRole::kMap, *Domain::Range(-1, 1));
  Op(f.graph, "k0", "Wt").map[0] = m;
  EXPECT_THAT(Validate(f.graph), StatusIs(kInvalid, HasSubstr("imap x is unresolved ('mW')")));
  ASSERT_OK_AND_ASSIGN(SGraph resolved, Bind(f.graph, {{"mW", 1}}));
  EXPECT_TRUE(resolved == Reduced("rmsnorm_linear").graph);
  ASSERT_OK_AND_ASSIGN(SGraph wrong, Bind(f.graph, {{"mW", 0}}));
  EXPECT_THAT(Validate(wrong), StatusIs(kInvalid, HasSubstr("kernel k0, op P: matmul")));
  EXPECT_THAT(Bind(f.graph, {{"mW", 2}}),
              StatusIs(kInvalid, HasSubstr("parameter mW = 2 is outside its domain range(-1, 1)")));
}

TEST(BlockSGraphTest, InstantiateErrors) {
  fixtures::Fixture f = Reduced("rmsnorm_linear");
  EXPECT_THAT(Instantiate(f.graph, {{"g", 2}, {"T", 128}, {"S", 1}}),
              StatusIs(kInvalid, HasSubstr("parameter 'F' is not assigned")));
  EXPECT_THAT(Instantiate(f.graph, {{"g", 2}, {"F", 3}, {"T", 128}, {"S", 1}}),
              StatusIs(kInvalid, HasSubstr("parameter F = 3 is outside its domain divisors(256)")));
  fixtures::Fixture g = Reduced("gqa");
  // gz · F = 128 does not divide L = 64.
  EXPECT_THAT(
      Instantiate(g.graph, {{"gx", 1}, {"gy", 1}, {"gz", 8}, {"F", 16}, {"T", 64}, {"S", 1}}),
      StatusIs(kInvalid, HasSubstr("kernel partial_kv, op Ktt: tensor Kt dim 2 (extent 64) "
                                   "is not divisible by 128 (grid z = 8 and forloop = 16)")));
  ASSERT_OK_AND_ASSIGN(
      BlockProgram p,
      Instantiate(g.graph, {{"gx", 2}, {"gy", 4}, {"gz", 4}, {"F", 2}, {"T", 64}, {"S", 1}}));
  EXPECT_EQ(p.tensors[*g.graph.FindTensor("Num")].shape, (Shape{4, 8, 64}));
  const ConcreteBlockGraph& k2 = p.kernels[1].block();
  EXPECT_EQ(k2.forloop, 4);
  EXPECT_TRUE(k2.ops[0].walks_groups);
  EXPECT_EQ(k2.ops[0].tile, (Shape{2, 2, 16}));
  EXPECT_OK(CheckSignature(p, g.program));
  ASSERT_OK_AND_ASSIGN(Program other, BuiltinWorkload("gqa", 1));
  EXPECT_THAT(CheckSignature(p, other),
              StatusIs(kInvalid, HasSubstr("input 0: the instance has Q f16[4, 8, 16] but the "
                                           "program has Q f16[2, 256, 64]")));
}

// Random structural mutations of every fixture: Validate never aborts (it answers OK or
// InvalidArgument), and whatever validates also instantiates and emulates without an internal
// error (the emulator's write checks hold for every validated graph).
TEST(BlockSGraphTest, MutatedGraphsNeverCrashAndValidOnesEmulate) {
  Rng rng(2026);
  int valid = 0, total = 0;
  for (int round = 0; round < 60; ++round) {
    for (const std::string& name : fixtures::FixtureNames()) {
      fixtures::Fixture f = Reduced(name);
      SGraph& g = f.graph;
      const int mutations = static_cast<int>(rng.UniformInt(1, 3));
      for (int m = 0; m < mutations; ++m) {
        Kernel& k = g.mutable_kernels()[rng.UniformInt(0, g.kernels().size() - 1)];
        if (!k.is_block()) continue;
        BlockGraph& b = k.block();
        BlockOp& op = b.ops[rng.UniformInt(0, b.ops.size() - 1)];
        const int n = static_cast<int>(b.ops.size());
        switch (rng.UniformInt(0, 7)) {
          case 0:
            if (!op.operands.empty()) {
              op.operands[rng.UniformInt(0, op.operands.size() - 1)] =
                  static_cast<int>(rng.UniformInt(-1, n));
            }
            break;
          case 1: op.map[rng.UniformInt(0, 2)] = g.Const(rng.UniformInt(-2, 3)); break;
          case 2: op.fmap = g.Const(rng.UniformInt(-2, 3)); break;
          case 3:
            op.kind = AllBlockOps()[rng.UniformInt(0, AllBlockOps().size() - 1)].kind;
            break;
          case 4: op.fn = AllOps()[rng.UniformInt(0, AllOps().size() - 1)].kind; break;
          case 5: op.dim = rng.UniformInt(-4, 4); break;
          case 6: op.tensor = static_cast<int>(rng.UniformInt(-1, g.tensors().size())); break;
          case 7: b.grid[rng.UniformInt(0, 2)] = g.Const(rng.UniformInt(0, 4)); break;
        }
      }
      ++total;
      absl::StatusOr<SGraphAnalysis> info = Validate(g);
      if (!info.ok()) {
        EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      ++valid;
      absl::StatusOr<std::vector<Assignment>> as = SampleAssignments(g, round, 2);
      if (!as.ok()) continue;
      for (const Assignment& a : *as) {
        ASSERT_OK_AND_ASSIGN(BlockProgram p, Instantiate(g, a));
        EXPECT_OK(EmulateAll(p, RandomInputs(f.program, 1)).status()) << SGraphToString(g);
      }
    }
  }
  EXPECT_GT(valid, 0);
  EXPECT_LT(valid, total);
}

}  // namespace
}  // namespace prism
