// Split-K two-kernel sGraphs exactly as the search emits them (docs/search.md, split-reduction
// forms: a grid axis `gs` over the forloop's dim, f32 partials laid along dim 0, a second
// kernel whose forloop walks the gs partial groups). Test data for codegen (the hand-written
// fixtures of tests/block/fixtures are one-kernel for these workloads); the Program is the
// fixture's. Header-only: used by codegen_test and codegen_gpu_test.
//
//   gated_mlp_splitk  k0 grid (g over N, s over K): acc_sum(X·A), acc_sum(X·B) → P5, P7
//                     [s·B, N] f32; k1 grid (g): Σ_s P5, Σ_s P7, silu(·) ⊙ (·) → Y
//   lora_splitk       k0 grid (g, s): acc_sum(X·W) + acc_sum((X·A)·B) with B's column tile
//                     loop-invariant → P0 [s·B, N] (the search adds split sums before storing
//                     them: one partial); k1: Σ P0 → Y
//   lora_split_xa     k0 grid (g, s): acc_sum(X·W) → P0 [s·B, N], acc_sum(X·A) → P1 [B, s·R]
//                     (a side matmul: N tile R, stored replicated along g); k1 grid (g):
//                     Σ_s P0 + (Σ_s P1)·B with B's column tile loop-invariant → Y
//   rmsnorm_linear_split  k0 grid (g, s): acc_sum(X·W) → P0 [s·M, N], acc_sumsq_last(X) → P1
//                     [M, s], the latter stored replicated along g (omap x = -: every column
//                     block computes the same Σx² of its K chunk); k1 grid (g): Σ P0 ·
//                     inv_rms(Σ P1) → Y
//
// And one-kernel row reductions as the search emits them for standalone programs (grid g over
// the rows, forloop 1, whole rows per block; sizes B rows × D):
//   row_softmax       softmax(X, -1) as exp(X) / sum(exp(X), -1) → Y f16 [B, D]
//   row_stats         two outputs: S = sum(X, -1) f32 [B, 1] and Y = X − max(X, -1) f16 [B, D]
//
// And a batched matmul as the search emits it (sizes B, M, K, N): Y [B, M, N] = X [B, M, K] ·
// W [B, K, N], grid (b over the batch, g over N, 1), forloop over K:
//   bmm               acc_sum(X·W) → Y; with b = B the batch is split whole (codegen's rank-2
//                     view, SqueezeBatchDims)
//   bmm_y_batch       grid (g over M, b over the batch, 1): the merged view's rows would be
//                     linearized M-major, misplacing the tiles, so codegen refuses it
//   linear3d          a linear layer over a batch of rows: Y [B, M, N] = X [B, M, K] · W [K, N]
//                     (one W for every batch), grid (b over the batch, g over N, 1): b batches
//                     of whole M rows per block, contiguous rows of X viewed as [B·M, K]
//
// And split-KV attention with scaled scores (sizes G, Lq, D, L), gqa's form with
// E = exp(scale(S, c)), c = 1/sqrt(D): O = softmax(c · Q·Kt) · V:
//   gqa_scaled        partial_kv grid (gx over heads, gy over Lq, gz over L), then the combine
//   linear3d_m        the same with g over M: tiles of b > 1 batches and part of M are no
//                     contiguous rows: generated with one batch per block, refused with more
//
// And a concat library kernel (block_graph.h LibraryKernel; no parameters: Instantiate(g, {})):
//   concat            inputs X0, X1, ... and Y = concat(X0, X1, ..., dim) as one library kernel
//                     k0 (MakeConcatFixture); through MakeSplitFixture the sizes are x0, x1, ...
//                     (X0's dims), dim, and p1, p2, ... (the extents of X1, X2, ... along dim)
//
// And a fibre-op library kernel: sum, max, mean, softmax or rms_norm of one input over any dim:
//   lib_<op>          input X and Y = op(X, dim) as one library kernel k0
//                     (MakeLibraryReduceFixture); through MakeSplitFixture the sizes are x0, x1,
//                     ... (X's dims) and dim; rms_norm's eps is 1e-5
//
// And an elementwise or matmul library kernel (MakeLibraryOpFixture), the sGraph named after
// the op:
//   lib_<unary op>    input X and Y = op(X) as one library kernel k0 (scale: c = -0.7); through
//                     MakeSplitFixture the sizes are x0, x1, ... (X's dims)
//   lib_<binary op>   inputs X, W and Y = op(X, W) with numpy broadcasting (add, sub, mul, div)
//   lib_matmul        inputs X [..., M, K], W [..., K, N] and Y = matmul(X, W), batch dims
//                     broadcast; through MakeSplitFixture the sizes are x0, x1, ... (X's dims)
//                     and w0, w1, ... (W's dims)
#ifndef PRISM_TESTS_CODEGEN_SPLIT_FIXTURES_H_
#define PRISM_TESTS_CODEGEN_SPLIT_FIXTURES_H_

#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "block/fixtures/fixtures.h"
#include "prism/base/status.h"
#include "absl/strings/str_replace.h"
#include "prism/block/sgraph.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"

namespace prism::codegen_test {

inline absl::StatusOr<Expr> SplitParam(SGraph& g, absl::string_view name, ParamRole role,
                                       absl::StatusOr<Domain> domain) {
  PRISM_RETURN_IF_ERROR(domain.status());
  return g.AddParam(name, role, *domain);
}

// The parameters of a split-K family over [K] x [N]: g (grid over N), s (grid over K), F
// (forloop), T (threads), S (stages), with the search's domains.
struct SplitParams {
  Expr gx, gs, f, t, st;
};
inline absl::StatusOr<SplitParams> DeclareSplitParams(SGraph& g, int64_t k, int64_t n) {
  SplitParams p;
  PRISM_ASSIGN_OR_RETURN(p.gx, SplitParam(g, "g", ParamRole::kGrid, Domain::DivisorsOf(n)));
  PRISM_ASSIGN_OR_RETURN(p.gs, SplitParam(g, "s", ParamRole::kGrid, Domain::DivisorsOf(k)));
  PRISM_ASSIGN_OR_RETURN(p.f, SplitParam(g, "F", ParamRole::kForloop, Domain::DivisorsOf(k)));
  PRISM_ASSIGN_OR_RETURN(p.t, SplitParam(g, "T", ParamRole::kThreads,
                                         Domain::Set({64, 128, 256, 512})));
  PRISM_ASSIGN_OR_RETURN(p.st, SplitParam(g, "S", ParamRole::kStages, Domain::Range(1, 6)));
  return p;
}

// The parameters of a one-kernel GEMM family: g over N, F over K, threads and stages.
struct LoopParams {
  Expr gx, f, t, st;
};
inline absl::StatusOr<LoopParams> DeclareLoopParams(SGraph& g, int64_t k, int64_t n) {
  LoopParams p;
  PRISM_ASSIGN_OR_RETURN(p.gx, SplitParam(g, "g", ParamRole::kGrid, Domain::DivisorsOf(n)));
  PRISM_ASSIGN_OR_RETURN(p.f, SplitParam(g, "F", ParamRole::kForloop, Domain::DivisorsOf(k)));
  PRISM_ASSIGN_OR_RETURN(p.t, SplitParam(g, "T", ParamRole::kThreads,
                                         Domain::Set({64, 128, 256, 512})));
  PRISM_ASSIGN_OR_RETURN(p.st, SplitParam(g, "S", ParamRole::kStages, Domain::Range(1, 6)));
  return p;
}

// rmsnorm_linear's split form (file comment), at `sizes` (M, K, N).
inline absl::StatusOr<fixtures::Fixture> MakeRmsnormSplitFixture(const fixtures::Sizes& sizes) {
  constexpr int64_t R = kReplicate;
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture base, fixtures::MakeFixture("rmsnorm_linear", sizes));
  const int64_t m = sizes.at("M"), k = sizes.at("K"), n = sizes.at("N");
  SGraph g{"rmsnorm_linear_split"};
  PRISM_ASSIGN_OR_RETURN(const SplitParams sp, DeclareSplitParams(g, k, n));
  const Expr gx = sp.gx, gs = sp.gs, f = sp.f, t = sp.t, st = sp.st;
  const int x = g.AddInput("X", DType::kF16, {m, k});
  const int w = g.AddInput("W", DType::kF16, {k, n});
  const int y = g.AddOutput("Y", DType::kF16, {m, n});
  const int p0 = g.AddTensor("P0", DType::kF32, {g.ctx().Mul(g.Const(m), gs), g.Const(n)});
  const int p1 = g.AddTensor("P1", DType::kF32, {g.Const(m), gs});
  {
    BlockGraphBuilder kb(g, {gx, gs, g.One()}, t, f, st);
    const int xt = kb.Input("Xt", x, {R, 1, R}, 1);
    const int wt = kb.Input("Wt", w, {1, 0, R}, 0);
    const int acc = kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("XW", xt, wt));
    const int ss = kb.Accumulate("SS", BlockOpKind::kAccSumSqLast, xt);
    kb.Output(acc, p0, {1, 0, R});
    kb.Output(ss, p1, {R, 1, R});
    std::move(kb).Finish("k0");
  }
  {
    BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, gs, st);
    const int q0 = kb.Accumulate("R0", BlockOpKind::kAccSum, kb.Input("Q0", p0, {1, R, R}, 0));
    const int q1 = kb.Accumulate("R1", BlockOpKind::kAccSum, kb.Input("Q1", p1, {R, R, R}, 1));
    const int r = kb.InvRms("r", q1, g.Const(k));
    kb.Output(kb.Binary("Yt", OpKind::kMul, q0, r), y, {1, R, R});
    std::move(kb).Finish("k1");
  }
  return fixtures::Fixture{std::move(g), std::move(base.program)};
}

// lora's split with X·A reduced in the combine kernel (file comment: lora_split_xa). For the
// generator's refusals, `misuse` 1 stores square(X·A) in f16 instead of X·A (the side
// accumulator is not only stored), 2 also stores Σ_s P1 to a tensor Z (the combine's matmul operand is used
// twice), 3 stores square(X·A) in f32 (an f32 output of neither an accumulator nor a sum of two).
inline absl::StatusOr<fixtures::Fixture> MakeLoraSplitXaFixture(const fixtures::Sizes& sizes,
                                                                int misuse = 0) {
  constexpr int64_t R = kReplicate;
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture base, fixtures::MakeFixture("lora", sizes));
  const int64_t b = sizes.at("B"), k = sizes.at("K"), n = sizes.at("N"), r = sizes.at("R");
  SGraph g{"lora_split_xa"};
  PRISM_ASSIGN_OR_RETURN(const SplitParams sp, DeclareSplitParams(g, k, n));
  const int x = g.AddInput("X", DType::kF16, {b, k});
  const int w = g.AddInput("W", DType::kF16, {k, n});
  const int a = g.AddInput("A", DType::kF16, {k, r});
  const int bb = g.AddInput("B", DType::kF16, {r, n});
  const int y = g.AddOutput("Y", DType::kF16, {b, n});
  const int p0 = g.AddTensor("P0", DType::kF32, {g.ctx().Mul(g.Const(b), sp.gs), g.Const(n)});
  const int p1 = g.AddTensor("P1", misuse == 1 ? DType::kF16 : DType::kF32,
                             {g.Const(b), g.ctx().Mul(g.Const(r), sp.gs)});
  const int z = misuse == 2 ? g.AddOutput("Z", DType::kF32, {b, r}) : -1;
  {
    BlockGraphBuilder kb(g, {sp.gx, sp.gs, g.One()}, sp.t, sp.f, sp.st);
    const int xt = kb.Input("Xt", x, {R, 1, R}, 1);
    const int wt = kb.Input("Wt", w, {1, 0, R}, 0);
    const int at = kb.Input("At", a, {R, 0, R}, 0);
    kb.Output(kb.Accumulate("A0", BlockOpKind::kAccSum, kb.MatMul("M0", xt, wt)), p0, {1, 0, R});
    const int a1 = kb.Accumulate("A1", BlockOpKind::kAccSum, kb.MatMul("XA", xt, at));
    kb.Output(misuse == 1 || misuse == 3 ? kb.Unary("Sq", OpKind::kSquare, a1) : a1, p1,
              {R, 1, R});
    std::move(kb).Finish("k0");
  }
  {
    BlockGraphBuilder kb(g, {sp.gx, g.One(), g.One()}, sp.t, sp.gs, sp.st);
    const int bt = kb.Input("Bt", bb, {1, R, R}, R);
    const int q0 = kb.Accumulate("R0", BlockOpKind::kAccSum, kb.Input("Q0", p0, {1, R, R}, 0));
    const int q1 = kb.Accumulate("R1", BlockOpKind::kAccSum, kb.Input("Q1", p1, {R, R, R}, 1));
    kb.Output(kb.Binary("Yt", OpKind::kAdd, q0, kb.MatMul("XAB", q1, bt)), y, {1, R, R});
    if (misuse == 2) kb.Output(q1, z, {R, R, R});
    std::move(kb).Finish("k1");
  }
  return fixtures::Fixture{std::move(g), std::move(base.program)};
}

// The row-reduction fixtures (file comment) at `sizes` (B, D).
inline absl::StatusOr<fixtures::Fixture> MakeRowFixture(absl::string_view name,
                                                        const fixtures::Sizes& sizes) {
  constexpr int64_t R = kReplicate;
  const bool softmax = name == "row_softmax";
  if (!softmax && name != "row_stats") return absl::NotFoundError(absl::StrCat("no row fixture ", name));
  if (sizes.count("B") == 0 || sizes.count("D") == 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes B and D"));
  }
  const int64_t b = sizes.at("B"), d = sizes.at("D");
  SGraph g(std::string{name});
  PRISM_ASSIGN_OR_RETURN(const Expr gx, SplitParam(g, "g", ParamRole::kGrid, Domain::DivisorsOf(b)));
  PRISM_ASSIGN_OR_RETURN(const Expr t, SplitParam(g, "T", ParamRole::kThreads,
                                                  Domain::Set({64, 128, 256, 512})));
  const int x = g.AddInput("X", DType::kF16, {b, d});
  ProgramBuilder p;
  const TensorId px = p.Input("X", DType::kF16, {b, d});
  BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, g.One(), g.One());
  const int xt = kb.Input("Xt", x, {0, R, R}, R);
  if (softmax) {
    const int y = g.AddOutput("Y", DType::kF16, {b, d});
    const int e = kb.Unary("E", OpKind::kExp, xt);
    kb.Output(kb.Binary("Yt", OpKind::kDiv, e, kb.Reduce("Se", OpKind::kSum, e, -1)), y, {0, R, R});
    const TensorId py = p.Softmax(px, -1);
    p.SetName(py, "Y");
    p.Output(py);
  } else {
    const int so = g.AddOutput("S", DType::kF32, {b, 1});
    const int y = g.AddOutput("Y", DType::kF16, {b, d});
    kb.Output(kb.Reduce("St", OpKind::kSum, xt, -1), so, {0, R, R});
    kb.Output(kb.Binary("Yt", OpKind::kSub, xt, kb.Reduce("Mt", OpKind::kMax, xt, -1)), y,
              {0, R, R});
    const TensorId ps = p.Reduce(OpKind::kSum, px, -1);
    const TensorId py = p.Sub(px, p.Reduce(OpKind::kMax, px, -1));
    p.SetName(ps, "S");
    p.SetName(py, "Y");
    p.Output(ps);
    p.Output(py);
  }
  std::move(kb).Finish("k0");
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// The batched-matmul and linear-layer fixtures (file comment) at `sizes` (B, M, K, N): bmm,
// bmm_y_batch, linear3d, linear3d_m.
inline absl::StatusOr<fixtures::Fixture> MakeBatchedMatmulFixture(absl::string_view name,
                                                                  const fixtures::Sizes& sizes) {
  constexpr int64_t R = kReplicate;
  // Per variant: whether W is one [K, N] for every batch, whether g splits M (else N), whether
  // the batch is on grid axis y (else x), and the maps of X, W (with W's fmap) and Y.
  struct Variant {
    const char* name;
    bool shared_w, over_m, batch_on_y;
    std::array<int64_t, 3> x, w;
    int64_t w_fmap;
    std::array<int64_t, 3> y;
  };
  static constexpr Variant kVariants[] = {
      {"bmm", false, false, false, {0, R, R}, {0, 2, R}, 1, {0, 2, R}},
      {"bmm_y_batch", false, true, true, {1, 0, R}, {R, 0, R}, 1, {1, 0, R}},
      {"linear3d", true, false, false, {0, R, R}, {R, 1, R}, 0, {0, 2, R}},
      {"linear3d_m", true, true, false, {0, 1, R}, {R, R, R}, 0, {0, 1, R}},
  };
  const Variant* v = nullptr;
  for (const Variant& c : kVariants) {
    if (name == c.name) v = &c;
  }
  if (v == nullptr) return absl::NotFoundError(absl::StrCat("no batched matmul fixture ", name));
  for (const char* d : {"B", "M", "K", "N"}) {
    if (sizes.count(d) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes B, M, K and N"));
    }
  }
  const int64_t b = sizes.at("B"), m = sizes.at("M"), k = sizes.at("K"), n = sizes.at("N");
  SGraph g(std::string{name});
  PRISM_ASSIGN_OR_RETURN(const Expr gb, SplitParam(g, "b", ParamRole::kGrid, Domain::DivisorsOf(b)));
  PRISM_ASSIGN_OR_RETURN(const Expr gn, SplitParam(g, "g", ParamRole::kGrid,
                                                   Domain::DivisorsOf(v->over_m ? m : n)));
  PRISM_ASSIGN_OR_RETURN(const Expr f, SplitParam(g, "F", ParamRole::kForloop, Domain::DivisorsOf(k)));
  PRISM_ASSIGN_OR_RETURN(const Expr t, SplitParam(g, "T", ParamRole::kThreads,
                                                  Domain::Set({64, 128, 256, 512})));
  PRISM_ASSIGN_OR_RETURN(const Expr st, SplitParam(g, "S", ParamRole::kStages, Domain::Range(1, 6)));
  const Shape w_shape = v->shared_w ? Shape{k, n} : Shape{b, k, n};
  const int x = g.AddInput("X", DType::kF16, {b, m, k});
  const int w = g.AddInput("W", DType::kF16, w_shape);
  const int y = g.AddOutput("Y", DType::kF16, {b, m, n});
  BlockGraphBuilder kb(g, {v->batch_on_y ? gn : gb, v->batch_on_y ? gb : gn, g.One()}, t, f, st);
  const int xt = kb.Input("Xt", x, v->x, 2);
  const int wt = kb.Input("Wt", w, v->w, v->w_fmap);
  kb.Output(kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", xt, wt)), y, v->y);
  std::move(kb).Finish("k0");
  ProgramBuilder p;
  const TensorId px = p.Input("X", DType::kF16, {b, m, k});
  const TensorId pw = p.Input("W", DType::kF16, w_shape);
  const TensorId py = p.MatMul(px, pw);
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// A matmul with unary ops on its A operand, as the search emits it (sizes M, K, N): Y [M, N] =
// f(X [M, K]) · W [K, N], grid g over N, forloop over K, f applied to each X tile in the loop:
//   prologue_silu     silu(X)·W
//   prologue_exp_rms  a chain of two, exp(scale(X, 0.5))·W, and Σx² of the raw X tile beside
//                     it: Y = (exp(X/2)·W) ⊙ 1/sqrt(Σ_k X²/K) (inv_rms with eps 0): a sum of
//                     squares and a prologue on one tile
//   prologue_swiglu   SwiGLU's down projection from G and U [M, K]: (silu(G) ⊙ U)·W, both
//                     tiles loaded and combined per fragment
//   prologue_gain     Llama's RMSNorm with its gain Gn [1, K] before a linear layer:
//                     ((X ⊙ Gn)·W) ⊙ 1/sqrt(Σ_k X²/K) (eps 0), Gn's one-row tile broadcast
//                     over the A fragments' rows, Σx² of the raw X tile beside it
// (epilogue_bias and epilogue_residual: MakeEpilogueFixture below.)
inline absl::StatusOr<fixtures::Fixture> MakePrologueFixture(absl::string_view name,
                                                             const fixtures::Sizes& sizes) {
  const bool gain = name == "prologue_gain";
  const bool rms = name == "prologue_exp_rms" || gain, swiglu = name == "prologue_swiglu";
  if (!rms && !swiglu && name != "prologue_silu") {
    return absl::NotFoundError(absl::StrCat("no prologue fixture ", name));
  }
  for (const char* d : {"M", "K", "N"}) {
    if (sizes.count(d) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes M, K and N"));
    }
  }
  const int64_t m = sizes.at("M"), k = sizes.at("K"), n = sizes.at("N");
  constexpr int64_t R = kReplicate;
  SGraph g{std::string(name)};
  PRISM_ASSIGN_OR_RETURN(const LoopParams lp, DeclareLoopParams(g, k, n));
  const Expr gn = lp.gx, f = lp.f, t = lp.t, st = lp.st;
  const int x = g.AddInput("X", DType::kF16, {m, k});
  const int gate = swiglu ? g.AddInput("Up", DType::kF16, {m, k})
                   : gain  ? g.AddInput("Gn", DType::kF16, {1, k})
                           : -1;
  const int w = g.AddInput("W", DType::kF16, {k, n});
  const int y = g.AddOutput("Y", DType::kF16, {m, n});
  BlockGraphBuilder kb(g, {gn, g.One(), g.One()}, t, f, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int upt = swiglu ? kb.Input("Upt", gate, {R, R, R}, 1)
                  : gain  ? kb.Input("Gnt", gate, {R, R, R}, 1)
                          : -1;
  const int wt = kb.Input("Wt", w, {1, R, R}, 0);
  const int u = gain     ? kb.Binary("H", OpKind::kMul, xt, upt)
                : rms      ? kb.Unary("E", OpKind::kExp, kb.Scale("H", xt, 0.5))
                : swiglu ? kb.Binary("H", OpKind::kMul, kb.Unary("S", OpKind::kSilu, xt), upt)
                         : kb.Unary("U", OpKind::kSilu, xt);
  int out = kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", u, wt));
  if (rms) {
    const int ss = kb.Accumulate("Q", BlockOpKind::kAccSumSqLast, xt);
    out = kb.Binary("Yt", OpKind::kMul, out, kb.InvRms("r", ss, g.Const(k), /*eps=*/0.0));
  }
  kb.Output(out, y, {1, R, R});
  std::move(kb).Finish("k0");
  ProgramBuilder p;
  const TensorId px = p.Input("X", DType::kF16, {m, k});
  const TensorId pup = swiglu ? p.Input("Up", DType::kF16, {m, k})
                       : gain  ? p.Input("Gn", DType::kF16, {1, k})
                               : TensorId();
  const TensorId pw = p.Input("W", DType::kF16, {k, n});
  TensorId py;
  if (swiglu) {
    py = p.MatMul(p.Mul(p.Silu(px), pup), pw);
  } else if (rms) {
    const TensorId e = gain ? p.Mul(px, pup) : p.Exp(p.Scale(px, 0.5));
    const TensorId inv = p.Rsqrt(p.Scale(p.Sum(p.Square(px), 1), 1.0 / static_cast<double>(k)));
    py = p.Mul(p.MatMul(e, pw), inv);
  } else {
    py = p.MatMul(p.Silu(px), pw);
  }
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// A linear layer with a loop-invariant input added after the loop, as the search emits it
// (sizes M, K, N): Y [M, N] = X [M, K] · W [K, N] + E, grid g over N, forloop over K, E's
// column tile read by the epilogue (imap on N, no fmap):
//   epilogue_bias      E = Bv [1, N], a bias row broadcast over the M rows
//   epilogue_residual  E = Res [M, N], a residual
inline absl::StatusOr<fixtures::Fixture> MakeEpilogueFixture(absl::string_view name,
                                                             const fixtures::Sizes& sizes) {
  const bool bias = name == "epilogue_bias";
  if (!bias && name != "epilogue_residual") {
    return absl::NotFoundError(absl::StrCat("no epilogue fixture ", name));
  }
  for (const char* d : {"M", "K", "N"}) {
    if (sizes.count(d) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes M, K and N"));
    }
  }
  const int64_t m = sizes.at("M"), k = sizes.at("K"), n = sizes.at("N");
  const int64_t em = bias ? 1 : m;
  const char* ename = bias ? "Bv" : "Res";
  constexpr int64_t R = kReplicate;
  SGraph g{std::string(name)};
  PRISM_ASSIGN_OR_RETURN(const LoopParams lp, DeclareLoopParams(g, k, n));
  const Expr gn = lp.gx, f = lp.f, t = lp.t, st = lp.st;
  const int x = g.AddInput("X", DType::kF16, {m, k});
  const int w = g.AddInput("W", DType::kF16, {k, n});
  const int e = g.AddInput(ename, DType::kF16, {em, n});
  const int y = g.AddOutput("Y", DType::kF16, {m, n});
  BlockGraphBuilder kb(g, {gn, g.One(), g.One()}, t, f, st);
  const int xt = kb.Input("Xt", x, {R, R, R}, 1);
  const int wt = kb.Input("Wt", w, {1, R, R}, 0);
  const int et = kb.Input("Et", e, {1, R, R}, R);
  const int acc = kb.Accumulate("A", BlockOpKind::kAccSum, kb.MatMul("P", xt, wt));
  kb.Output(kb.Binary("Yt", OpKind::kAdd, acc, et), y, {1, R, R});
  std::move(kb).Finish("k0");
  ProgramBuilder p;
  const TensorId px = p.Input("X", DType::kF16, {m, k});
  const TensorId pw = p.Input("W", DType::kF16, {k, n});
  const TensorId pe = p.Input(ename, DType::kF16, {em, n});
  const TensorId py = p.Add(p.MatMul(px, pw), pe);
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// gqa_scaled (file comment) at `sizes` (G, Lq, D, L).
inline absl::StatusOr<fixtures::Fixture> MakeScaledAttentionFixture(const fixtures::Sizes& sizes) {
  constexpr int64_t R = kReplicate;
  for (const char* d : {"G", "Lq", "D", "L"}) {
    if (sizes.count(d) == 0) {
      return absl::InvalidArgumentError("gqa_scaled needs the sizes G, Lq, D and L");
    }
  }
  const int64_t heads = sizes.at("G"), lq = sizes.at("Lq"), d = sizes.at("D"), l = sizes.at("L");
  const double c = 1.0 / std::sqrt(static_cast<double>(d));
  SGraph g("gqa_scaled");
  ExprContext& ctx = g.ctx();
  PRISM_ASSIGN_OR_RETURN(const Expr gx, SplitParam(g, "gx", ParamRole::kGrid, Domain::DivisorsOf(heads)));
  PRISM_ASSIGN_OR_RETURN(const Expr gy, SplitParam(g, "gy", ParamRole::kGrid, Domain::DivisorsOf(lq)));
  PRISM_ASSIGN_OR_RETURN(const Expr gz, SplitParam(g, "gz", ParamRole::kGrid, Domain::DivisorsOf(l)));
  PRISM_ASSIGN_OR_RETURN(const Expr f, SplitParam(g, "F", ParamRole::kForloop, Domain::DivisorsOf(l)));
  PRISM_ASSIGN_OR_RETURN(const Expr t, SplitParam(g, "T", ParamRole::kThreads,
                                                  Domain::Set({64, 128, 256, 512})));
  PRISM_ASSIGN_OR_RETURN(const Expr st, SplitParam(g, "S", ParamRole::kStages, Domain::Range(1, 6)));
  const int q = g.AddInput("Q", DType::kF16, {heads, lq, d});
  const int kt = g.AddInput("Kt", DType::kF16, {heads, d, l});
  const int v = g.AddInput("V", DType::kF16, {heads, l, d});
  const int o = g.AddOutput("O", DType::kF16, {heads, lq, d});
  const int num = g.AddTensor("Num", DType::kF32, {ctx.Const(heads), ctx.Const(lq), ctx.Mul(gz, ctx.Const(d))});
  const int den = g.AddTensor("Den", DType::kF32, {ctx.Const(heads), ctx.Const(lq), gz});
  {
    BlockGraphBuilder kb(g, {gx, gy, gz}, t, f, st);
    const int qt = kb.Input("Qt", q, {0, 1, R}, R);
    const int ktt = kb.Input("Ktt", kt, {0, R, 2}, 2);
    const int vt = kb.Input("Vt", v, {0, R, 1}, 1);
    const int e = kb.Unary("E", OpKind::kExp, kb.Scale("Sc", kb.MatMul("S", qt, ktt), c));
    const int n = kb.Accumulate("N", BlockOpKind::kAccSum, kb.MatMul("EV", e, vt));
    const int dn = kb.Accumulate("Dn", BlockOpKind::kAccSumLast, e);
    kb.Output(n, num, {0, 1, 2});
    kb.Output(dn, den, {0, 1, 2});
    std::move(kb).Finish("partial_kv");
  }
  {
    BlockGraphBuilder kb(g, {gx, gy, g.One()}, t, gz, st);
    const int nt = kb.Input("Nt", num, {0, 1, R}, 2);
    const int dt = kb.Input("Dt", den, {0, 1, R}, 2);
    const int na = kb.Accumulate("Ns", BlockOpKind::kAccSum, nt);
    const int da = kb.Accumulate("Ds", BlockOpKind::kAccSum, dt);
    kb.Output(kb.Binary("Ot", OpKind::kDiv, na, da), o, {0, 1, R});
    std::move(kb).Finish("combine");
  }
  ProgramBuilder b;
  const TensorId pq = b.Input("Q", DType::kF16, {heads, lq, d});
  const TensorId pk = b.Input("Kt", DType::kF16, {heads, d, l});
  const TensorId pv = b.Input("V", DType::kF16, {heads, l, d});
  const TensorId po = b.MatMul(b.Softmax(b.Scale(b.MatMul(pq, pk), c), -1), pv);
  b.SetName(po, "O");
  b.Output(po);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(b).Build());
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// "gated_mlp_splitk", "lora_splitk", "lora_split_xa" or "rmsnorm_linear_split" at `sizes`
// (fixtures::WorkloadSizes of the workload), or a row, batched-matmul, linear-layer or scaled
// attention fixture (file comment).
// The concat fixture (file comment): inputs X0, X1, ... of shapes `parts`, output Y of `dtype`
// written by library kernel k0 = concat(operands, dim), the operands indices into the inputs
// (empty: each input once, in order). The Program is the same concat.
inline absl::StatusOr<fixtures::Fixture> MakeConcatFixture(const std::vector<Shape>& parts,
                                                           int64_t dim, DType dtype = DType::kF16,
                                                           std::vector<int> operands = {}) {
  if (operands.empty()) {
    for (int i = 0; i < static_cast<int>(parts.size()); ++i) operands.push_back(i);
  }
  SGraph g("concat");
  ProgramBuilder p;
  std::vector<int> ins;
  std::vector<TensorId> pins;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string name = absl::StrCat("X", i);
    ins.push_back(g.AddInput(name, dtype, parts[i]));
    pins.push_back(p.Input(name, dtype, parts[i]));
  }
  LibraryKernel lk;
  lk.op = OpKind::kConcat;
  lk.dim = dim;
  std::vector<TensorId> cat;
  for (int i : operands) {
    lk.operands.push_back(ins.at(i));
    cat.push_back(pins.at(i));
  }
  const TensorId py = p.Concat(cat, dim);
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());  // checks dim and the shapes
  const int64_t rank = static_cast<int64_t>(parts.at(0).size());
  const size_t d = static_cast<size_t>(dim < 0 ? dim + rank : dim);
  Shape shape = parts.at(0);
  shape[d] = 0;
  for (int i : operands) shape[d] += parts.at(i)[d];
  lk.result = g.AddOutput("Y", dtype, shape);
  g.AddLibraryKernel("k0", lk);
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// The fibre-op fixture (file comment): input X of `shape` and `dtype`, output Y written by
// library kernel k0 = op(X, dim) (op: sum, max, mean, softmax or rms_norm; eps for rms_norm),
// the sGraph named after the op. The Program is the same op.
inline absl::StatusOr<fixtures::Fixture> MakeLibraryReduceFixture(OpKind op, const Shape& shape,
                                                                  int64_t dim,
                                                                  DType dtype = DType::kF16,
                                                                  double eps = 1e-5) {
  SGraph g{std::string(GetOpInfo(op).name)};
  ProgramBuilder p;
  const TensorId px = p.Input("X", dtype, shape);
  // sum, max, mean through Reduce (which rejects any other op).
  const TensorId py = op == OpKind::kSoftmax   ? p.Softmax(px, dim)
                      : op == OpKind::kRmsNorm ? p.RmsNorm(px, dim, eps)
                                               : p.Reduce(op, px, dim);
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());  // checks dim
  LibraryKernel lk;
  lk.op = op;
  lk.dim = dim;
  lk.eps = op == OpKind::kRmsNorm ? eps : 0.0;
  lk.operands = {g.AddInput("X", dtype, shape)};
  lk.result = g.AddOutput("Y", dtype, program.node(py).shape);
  g.AddLibraryKernel("k0", lk);
  return fixtures::Fixture{std::move(g), std::move(program)};
}

// The elementwise / matmul fixture (file comment): inputs X (and W) of `shapes` (one for a
// unary op, one or two for a binary op or matmul) and `dtype`, output Y written by library
// kernel k0 = op(operands...), the operands indices into the inputs (empty: each input once, in
// order; mul(X, X) is {X [4, 5]} with operands {0, 0}); `scalar` is scale's c. The sGraph is
// named after the op; the Program is the same op (Build checks the shapes).
inline absl::StatusOr<fixtures::Fixture> MakeLibraryOpFixture(OpKind op,
                                                              const std::vector<Shape>& shapes,
                                                              DType dtype = DType::kF16,
                                                              std::vector<int> operands = {},
                                                              double scalar = -0.7) {
  if (operands.empty()) {
    for (int i = 0; i < static_cast<int>(shapes.size()); ++i) operands.push_back(i);
  }
  const OpCategory category = GetOpInfo(op).category;
  const size_t arity = category == OpCategory::kUnary ? 1 : 2;
  if (category != OpCategory::kUnary && category != OpCategory::kBinary &&
      category != OpCategory::kMatMul) {
    return absl::InvalidArgumentError(
        absl::StrCat("MakeLibraryOpFixture: ", GetOpInfo(op).name, " is no elementwise op or matmul"));
  }
  if (operands.size() != arity) {
    return absl::InvalidArgumentError(absl::StrCat("MakeLibraryOpFixture: ", GetOpInfo(op).name,
                                                   " takes ", arity, " operand(s)"));
  }
  SGraph g{std::string(GetOpInfo(op).name)};
  ProgramBuilder p;
  const char* const names[] = {"X", "W"};
  std::vector<int> ins;
  std::vector<TensorId> pins;
  for (size_t i = 0; i < shapes.size() && i < 2; ++i) {
    ins.push_back(g.AddInput(names[i], dtype, shapes[i]));
    pins.push_back(p.Input(names[i], dtype, shapes[i]));
  }
  LibraryKernel lk;
  lk.op = op;
  lk.scalar = op == OpKind::kScale ? scalar : 0.0;
  for (int i : operands) lk.operands.push_back(ins.at(i));
  const TensorId a = pins.at(operands[0]);
  const TensorId py = category == OpCategory::kMatMul ? p.MatMul(a, pins.at(operands[1]))
                      : category == OpCategory::kBinary
                          ? p.Binary(op, a, pins.at(operands[1]))
                      : op == OpKind::kScale ? p.Scale(a, scalar)
                                             : p.Unary(op, a);
  p.SetName(py, "Y");
  p.Output(py);
  PRISM_ASSIGN_OR_RETURN(Program program, std::move(p).Build());  // checks the shapes
  lk.result = g.AddOutput("Y", dtype, program.node(py).shape);
  g.AddLibraryKernel("k0", lk);
  return fixtures::Fixture{std::move(g), std::move(program)};
}

inline absl::StatusOr<fixtures::Fixture> MakeSplitFixture(absl::string_view name,
                                                          const fixtures::Sizes& sizes) {
  constexpr int64_t R = kReplicate;
  if (name == "concat") {
    Shape x0;
    for (int d = 0; sizes.count(absl::StrCat("x", d)); ++d) {
      x0.push_back(sizes.at(absl::StrCat("x", d)));
    }
    if (x0.empty() || sizes.count("dim") == 0) {
      return absl::InvalidArgumentError("concat needs the sizes x0, x1, ..., dim, p1, p2, ...");
    }
    const int64_t dim = sizes.at("dim");
    const int64_t rank = static_cast<int64_t>(x0.size());
    if (dim < -rank || dim >= rank) return absl::InvalidArgumentError("concat: dim out of range");
    const size_t d = static_cast<size_t>(dim < 0 ? dim + rank : dim);
    std::vector<Shape> parts = {x0};
    for (int i = 1; sizes.count(absl::StrCat("p", i)); ++i) {
      parts.push_back(x0);
      parts.back()[d] = sizes.at(absl::StrCat("p", i));
    }
    return MakeConcatFixture(parts, dim);
  }
  if (absl::StartsWith(name, "lib_")) {
    Shape x;
    for (int d = 0; sizes.count(absl::StrCat("x", d)); ++d) {
      x.push_back(sizes.at(absl::StrCat("x", d)));
    }
    if (x.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes x0, x1, ..."));
    }
    std::optional<OpKind> op = ParseOpName(name.substr(4));
    if (!op) return absl::NotFoundError(absl::StrCat("no split fixture ", name));
    const OpCategory category = GetOpInfo(*op).category;
    if (category == OpCategory::kUnary) return MakeLibraryOpFixture(*op, {x});
    if (category == OpCategory::kBinary || category == OpCategory::kMatMul) {
      Shape w;
      for (int d = 0; sizes.count(absl::StrCat("w", d)); ++d) {
        w.push_back(sizes.at(absl::StrCat("w", d)));
      }
      if (w.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " needs the sizes x0, x1, ..., w0, w1, ..."));
      }
      return MakeLibraryOpFixture(*op, {x, w});
    }
    if (sizes.count("dim") == 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, " needs the sizes x0, x1, ..., dim"));
    }
    for (OpKind reduce : {OpKind::kSum, OpKind::kMax, OpKind::kMean, OpKind::kSoftmax,
                          OpKind::kRmsNorm}) {
      if (*op == reduce) return MakeLibraryReduceFixture(reduce, x, sizes.at("dim"));
    }
    return absl::NotFoundError(absl::StrCat("no split fixture ", name));
  }
  if (name == "rmsnorm_linear_split") return MakeRmsnormSplitFixture(sizes);
  if (name == "lora_split_xa") return MakeLoraSplitXaFixture(sizes);
  if (name == "row_softmax" || name == "row_stats") return MakeRowFixture(name, sizes);
  if (name == "bmm" || name == "bmm_y_batch" || name == "linear3d" || name == "linear3d_m") {
    return MakeBatchedMatmulFixture(name, sizes);
  }
  if (name == "gqa_scaled") return MakeScaledAttentionFixture(sizes);
  if (absl::StartsWith(name, "prologue_")) return MakePrologueFixture(name, sizes);
  if (absl::StartsWith(name, "epilogue_")) return MakeEpilogueFixture(name, sizes);
  const bool lora = name == "lora_splitk";
  if (!lora && name != "gated_mlp_splitk") {
    return absl::NotFoundError(absl::StrCat("no split fixture ", name));
  }
  PRISM_ASSIGN_OR_RETURN(fixtures::Fixture base,
                         fixtures::MakeFixture(lora ? "lora" : "gated_mlp", sizes));
  const int64_t b = sizes.at("B"), k = sizes.at("K"), n = sizes.at("N");
  SGraph g{std::string(name)};
  PRISM_ASSIGN_OR_RETURN(const SplitParams sp, DeclareSplitParams(g, k, n));
  const Expr gx = sp.gx, gs = sp.gs, f = sp.f, t = sp.t, st = sp.st;
  const int x = g.AddInput("X", DType::kF16, {b, k});
  int wa = -1, wb = -1, a = -1, bb = -1;
  if (lora) {
    const int64_t r = sizes.at("R");
    wa = g.AddInput("W", DType::kF16, {k, n});
    a = g.AddInput("A", DType::kF16, {k, r});
    bb = g.AddInput("B", DType::kF16, {r, n});
  } else {
    wa = g.AddInput("A", DType::kF16, {k, n});
    wb = g.AddInput("B", DType::kF16, {k, n});
  }
  const int y = g.AddOutput("Y", DType::kF16, {b, n});
  const Expr rows = g.ctx().Mul(g.Const(b), gs);
  const int p0 = g.AddTensor("P0", DType::kF32, {rows, g.Const(n)});
  const int p1 = lora ? -1 : g.AddTensor("P1", DType::kF32, {rows, g.Const(n)});
  {
    BlockGraphBuilder kb(g, {gx, gs, g.One()}, t, f, st);
    const int xt = kb.Input("Xt", x, {R, 1, R}, 1);
    const int w0 = kb.Input(lora ? "Wt" : "At", wa, {1, 0, R}, 0);
    int acc0 = kb.Accumulate("A0", BlockOpKind::kAccSum, kb.MatMul("M0", xt, w0));
    int acc1 = -1;
    if (lora) {
      const int at = kb.Input("At", a, {R, 0, R}, 0);
      const int bt = kb.Input("Bt", bb, {1, R, R}, R);
      const int xa = kb.MatMul("XA", xt, at);
      acc1 = kb.Accumulate("A1", BlockOpKind::kAccSum, kb.MatMul("XAB", xa, bt));
    } else {
      const int w1 = kb.Input("Bt", wb, {1, 0, R}, 0);
      acc1 = kb.Accumulate("A1", BlockOpKind::kAccSum, kb.MatMul("M1", xt, w1));
    }
    if (lora) {
      kb.Output(kb.Binary("Sum", OpKind::kAdd, acc0, acc1), p0, {1, 0, R});
    } else {
      kb.Output(acc0, p0, {1, 0, R});
      kb.Output(acc1, p1, {1, 0, R});
    }
    std::move(kb).Finish("k0");
  }
  {
    BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, gs, st);
    const int q0 = kb.Accumulate("R0", BlockOpKind::kAccSum, kb.Input("Q0", p0, {1, R, R}, 0));
    const int v =
        lora ? q0
             : kb.Binary("Yt", OpKind::kMul, kb.Unary("Sg", OpKind::kSilu, q0),
                         kb.Accumulate("R1", BlockOpKind::kAccSum,
                                       kb.Input("Q1", p1, {1, R, R}, 0)));
    kb.Output(v, y, {1, R, R});
    std::move(kb).Finish("k1");
  }
  return fixtures::Fixture{std::move(g), std::move(base.program)};
}

// `f` with every f16 tensor made `dtype` (bf16 or f32), in the sGraph and in the Program
// (printed, edited and parsed again): the same structure on another element type. Tensors
// already f32 (split partials) stay f32.
inline absl::StatusOr<fixtures::Fixture> WithDType(fixtures::Fixture f, DType dtype) {
  for (SGraphTensor& t : f.graph.mutable_tensors()) {
    if (t.dtype == DType::kF16) t.dtype = dtype;
  }
  const std::string to = absl::StrCat(" ", DTypeName(dtype), "[");
  PRISM_ASSIGN_OR_RETURN(f.program,
                         ParseProgram(absl::StrReplaceAll(PrintProgram(f.program),
                                                          {{" f16[", to}})));
  return f;
}

// A fixtures.h fixture, else a split form above; its f16 tensors made `dtype` (WithDType).
inline absl::StatusOr<fixtures::Fixture> MakeAnyFixture(absl::string_view name,
                                                        const fixtures::Sizes& sizes,
                                                        DType dtype = DType::kF16) {
  absl::StatusOr<fixtures::Fixture> made = fixtures::MakeFixture(name, sizes);
  if (absl::IsNotFound(made.status())) made = MakeSplitFixture(name, sizes);
  if (!made.ok() || dtype == DType::kF16) return made;
  return WithDType(*std::move(made), dtype);
}

}  // namespace prism::codegen_test

#endif  // PRISM_TESTS_CODEGEN_SPLIT_FIXTURES_H_
