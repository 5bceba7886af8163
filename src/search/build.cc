// search/: Building candidates: the one-kernel sGraph, the split-reduction form, validation and
// queueing. (searcher.h)
#include "searcher.h"

namespace prism::search::internal {

Searcher::Common Searcher::DeclareCommon(SGraph& g, const Maps& m, bool split) const {
  const size_t inputs = program_.inputs().size();
  const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
  const auto param = [&](absl::string_view name, ParamRole role, absl::StatusOr<Domain> d) {
    PRISM_CHECK(d.ok(), d.status().message());
    absl::StatusOr<Expr> e = g.AddParam(name, role, *d);
    PRISM_CHECK(e.ok(), e.status().message());
    return *e;
  };
  Common c;
  for (size_t i = 0; i < inputs; ++i) {
    if (m.fmap[i] != kR) {
      c.loop_gcd = std::gcd(c.loop_gcd, program_.node(program_.inputs()[i]).shape[m.fmap[i]]);
    }
  }
  // Grid sizes start at 2: an axis of one block is the family without that axis, which is
  // generated too (so families are disjoint).
  c.grid = {g.One(), g.One(), g.One()};
  for (int a = 0; a < m.axes; ++a) {
    const int64_t d = out_shape[m.omap[a]];
    c.grid[a] = param(kAxisParam[a], ParamRole::kGrid, Domain::DivisorsOf(d, 2, d));
  }
  if (split) {
    c.grid[m.axes] = param("gs", ParamRole::kGrid, Domain::DivisorsOf(c.loop_gcd, 2, c.loop_gcd));
  }
  const bool loop = c.loop_gcd > 0;
  c.forloop = loop ? param("F", ParamRole::kForloop, Domain::DivisorsOf(c.loop_gcd)) : g.One();
  c.threads = param("T", ParamRole::kThreads, Domain::Set({64, 128, 256, 512}));
  // Up to six cp.async stages: on the H200 lora b=8's split-K instance streamed W 3.5 % faster
  // with 5–6 stages than with 4, while rmsnorm_linear's were fastest at 3 (docs/performance.md,
  // 2026-12-03 night); shared memory bounds the product with the tile sizes per instance.
  c.stages = loop ? param("S", ParamRole::kStages, Domain::Range(1, 6)) : g.One();
  for (size_t i = 0; i < inputs; ++i) {
    const Node& n = program_.node(program_.inputs()[i]);
    c.tensors.push_back(g.AddInput(n.name, n.dtype, n.shape));
  }
  const Node& on = program_.node(program_.outputs()[0].tensor);
  c.output = g.AddOutput(on.name, on.dtype, on.shape);
  return c;
}

int Searcher::AddOp(BlockGraphBuilder& kb, SGraph& g, const GenOp& op, const std::vector<int>& id,
                    const std::string& name, int tensor, std::array<int64_t, kNumGridAxes> imap,
                    int64_t fmap) {
  switch (op.kind) {
    case BlockOpKind::kInput: return kb.Input(name, tensor, imap, fmap);
    case BlockOpKind::kMatMul: return kb.MatMul(name, id[op.a], id[op.b]);
    case BlockOpKind::kUnary:
      return op.fn == OpKind::kScale ? kb.Scale(name, id[op.a], op.scalar)
                                     : kb.Unary(name, op.fn, id[op.a]);
    case BlockOpKind::kBinary: return kb.Binary(name, op.fn, id[op.a], id[op.b]);
    case BlockOpKind::kReduce: return kb.Reduce(name, op.fn, id[op.a], -1);
    case BlockOpKind::kRms: return kb.Rms(name, id[op.a], -1, op.scalar);
    case BlockOpKind::kInvRms: return kb.InvRms(name, id[op.a], g.Const(op.count), op.scalar);
    case BlockOpKind::kDivCount: return kb.DivCount(name, id[op.a], g.Const(op.count));
    default: return kb.Accumulate(name, op.kind, id[op.a]);
  }
}

SGraph Searcher::BuildOneKernel(const std::vector<GenOp>& ops, const Maps& m) const {
  SGraph g("candidate");
  const Common c = DeclareCommon(g, m, /*split=*/false);
  BlockGraphBuilder kb(g, c.grid, c.threads, c.forloop, c.stages);
  std::vector<int> id;
  for (const GenOp& op : ops) {
    const size_t i = static_cast<size_t>(op.count);
    const bool in = op.kind == BlockOpKind::kInput;
    id.push_back(AddOp(kb, g, op, id, absl::StrCat("v", id.size()), in ? c.tensors[i] : -1,
                       in ? m.imap[i] : std::array<int64_t, kNumGridAxes>{kR, kR, kR},
                       in ? m.fmap[i] : kR));
  }
  kb.Output(id.back(), c.output, m.omap);
  std::move(kb).Finish("k0");
  return g;
}

std::optional<SGraph> Searcher::BuildSplit(const std::vector<GenOp>& ops,
                                           const std::vector<Value>& values, const Maps& m,
                                           const SGraphAnalysis& info) const {
  if (m.axes >= kNumGridAxes) return std::nullopt;
  const std::vector<TileInfo>& tiles = info.tiles[0];
  int64_t loop_gcd = 0;
  for (size_t i = 0; i < m.fmap.size(); ++i) {
    if (m.fmap[i] != kR) loop_gcd = std::gcd(loop_gcd, program_.node(program_.inputs()[i]).shape[m.fmap[i]]);
  }
  if (loop_gcd < 2) return std::nullopt;  // no forloop, or nothing to split
  const size_t n = ops.size();
  std::vector<bool> after(n), boundary(n);
  for (size_t j = 0; j < n; ++j) {
    after[j] = tiles[j].phase == Phase::kAfter && !IsAccumulator(ops[j].kind);
  }
  const auto mark = [&](int operand) {
    if (operand >= 0 && !after[operand]) boundary[operand] = true;
  };
  for (size_t j = 0; j < n; ++j) {
    if (after[j]) {
      mark(ops[j].a);
      mark(ops[j].b);
    }
  }
  mark(static_cast<int>(n) - 1);  // the stored value
  // A sum of split sums is the split sum of the sums: an after-loop add whose operands are
  // each an acc_sum (or such an add) used by it alone is computed in k0 and stored as one
  // partial, Σ_s (a_s + b_s) = Σ_s a_s + Σ_s b_s. lora's X·W + (X·A)·B then stores and
  // reduces one partial tensor instead of two (on the H200, b=8 14.97 → 14.41 µs,
  // docs/performance.md 2026-12-03 night).
  std::vector<int> uses(n, 0);
  for (size_t j = 0; j < n; ++j) {
    if (ops[j].a >= 0) ++uses[ops[j].a];
    if (ops[j].b >= 0) ++uses[ops[j].b];
  }
  ++uses[n - 1];
  std::vector<bool> summed(n);  // an acc_sum, or an add of such, whose partials may be added
  for (size_t j = 0; j < n; ++j) {
    summed[j] = ops[j].kind == BlockOpKind::kAccSum && tiles[j].phase == Phase::kAfter;
    const GenOp& op = ops[j];
    if (!after[j] || op.kind != BlockOpKind::kBinary || op.fn != OpKind::kAdd) continue;
    const bool fusable = [&] {
      for (int x : {op.a, op.b}) {
        if (x < 0 || !summed[x] || uses[x] != (op.a == op.b ? 2 : 1)) return false;
        if (values[x].shape != values[j].shape || tiles[x].grid_split != tiles[j].grid_split) {
          return false;
        }
      }
      return true;
    }();
    if (!fusable) continue;
    summed[j] = true;
    after[j] = false;
    boundary[op.a] = boundary[op.b] = false;
    boundary[j] = true;
  }
  for (size_t j = 0; j < n; ++j) {
    if (!boundary[j]) continue;
    if (tiles[j].phase == Phase::kInvariant && ops[j].kind != BlockOpKind::kInput) return std::nullopt;
    if (tiles[j].phase == Phase::kLoop) return std::nullopt;
  }
  SGraph g("candidate");
  const Common c = DeclareCommon(g, m, /*split=*/true);
  ExprContext& ctx = g.ctx();
  // Partial tensors and the omaps that store them.
  struct Partial {
    int tensor = -1;
    int64_t dim = 0;
    std::array<int64_t, kNumGridAxes> omap{kR, kR, kR};
    BlockOpKind combine = BlockOpKind::kAccSum;
  };
  std::vector<std::optional<Partial>> partial(n);
  for (size_t j = 0; j < n; ++j) {
    if (!boundary[j] || tiles[j].phase != Phase::kAfter) continue;
    if (ops[j].kind == BlockOpKind::kAccOnlineSum || ops[j].kind == BlockOpKind::kAccOnlineMatMul) {
      return std::nullopt;
    }
    const TileInfo& t = tiles[j];
    Partial p;
    for (int a = 0; a < m.axes; ++a) {
      for (size_t d = 0; d < t.grid_split.size(); ++d) {
        if (t.grid_split[d] & (1u << a)) p.omap[a] = static_cast<int64_t>(d);
      }
      // Not split by axis a (rmsnorm_linear's Σx², the same for every column block): a
      // replicated store, omap a = kR; kernel k1 reads it replicated as well. A partial
      // result along a would need a dim of its own.
      if (p.omap[a] == kR && (t.partial_axes & (1u << a))) return std::nullopt;
    }
    int64_t free_dim = kR;
    for (size_t d = 0; d < t.grid_split.size(); ++d) {
      if (t.grid_split[d] == 0) free_dim = static_cast<int64_t>(d);
    }
    if (free_dim == kR) return std::nullopt;
    p.dim = free_dim;
    p.omap[m.axes] = free_dim;
    p.combine = ops[j].kind == BlockOpKind::kAccMaxLast ? BlockOpKind::kAccMaxLast : BlockOpKind::kAccSum;
    // The accumulator's whole tensor (its abstract value's shape), gs times along free_dim.
    std::vector<Expr> shape;
    for (size_t d = 0; d < values[j].shape.size(); ++d) {
      const Expr e = ctx.Const(values[j].shape[d]);
      shape.push_back(static_cast<int64_t>(d) == free_dim ? ctx.Mul(e, c.grid[m.axes]) : e);
    }
    p.tensor = g.AddTensor(absl::StrCat("P", j), DType::kF32, std::move(shape));
    partial[j] = p;
  }
  // Kernel k0: every op but the after-loop ones; gs also splits the walked dims.
  {
    BlockGraphBuilder kb(g, c.grid, c.threads, c.forloop, c.stages);
    std::vector<int> id(n, -1);
    for (size_t j = 0; j < n; ++j) {
      if (after[j]) continue;
      const GenOp& op = ops[j];
      const size_t i = static_cast<size_t>(op.count);
      const bool in = op.kind == BlockOpKind::kInput;
      std::array<int64_t, kNumGridAxes> imap{kR, kR, kR};
      int64_t fmap = kR;
      if (in) {
        imap = m.imap[i];
        fmap = m.fmap[i];
        if (fmap != kR) imap[m.axes] = fmap;
      }
      id[j] = AddOp(kb, g, op, id, absl::StrCat("v", j), in ? c.tensors[i] : -1, imap, fmap);
    }
    for (size_t j = 0; j < n; ++j) {
      if (partial[j]) kb.Output(id[j], partial[j]->tensor, partial[j]->omap);
    }
    std::move(kb).Finish("k0");
  }
  // Kernel k1: the partials' reduction and the after-loop ops.
  {
    std::array<Expr, kNumGridAxes> grid = c.grid;
    grid[m.axes] = g.One();
    BlockGraphBuilder kb(g, grid, c.threads, c.grid[m.axes], c.stages);
    std::vector<int> id(n, -1);
    for (size_t j = 0; j < n; ++j) {
      if (partial[j]) {
        std::array<int64_t, kNumGridAxes> imap = partial[j]->omap;
        imap[m.axes] = kR;
        const int in = kb.Input(absl::StrCat("p", j), partial[j]->tensor, imap, partial[j]->dim);
        id[j] = kb.Accumulate(absl::StrCat("r", j), partial[j]->combine, in);
      } else if (boundary[j]) {  // a loop-invariant input tile, loaded again
        const size_t i = static_cast<size_t>(ops[j].count);
        id[j] = kb.Input(absl::StrCat("v", j), c.tensors[i], m.imap[i], kR);
      } else if (after[j]) {
        id[j] = AddOp(kb, g, ops[j], id, absl::StrCat("v", j), -1, {kR, kR, kR}, kR);
      }
    }
    kb.Output(id[n - 1], c.output, m.omap);
    std::move(kb).Finish("k1");
  }
  return g;
}

absl::Status Searcher::TryMaps(const std::vector<GenOp>& ops, const std::vector<Value>& values,
                               const Maps& m) {
  if (absl::Now() > deadline_) {
    result_.budget_exhausted = true;
    return absl::OkStatus();
  }
  const size_t inputs = program_.inputs().size();
  bool any_loop = false;
  for (size_t i = 0; i < inputs; ++i) any_loop = any_loop || m.fmap[i] != kR;
  // Every axis must split some input (else its blocks store copies).
  for (int a = 0; a < m.axes; ++a) {
    bool splits = false;
    for (size_t i = 0; i < inputs; ++i) splits = splits || m.imap[i][a] != kR;
    if (!splits) return absl::OkStatus();
  }
  // Canonical: without a forloop an accumulator is the identity, so the same family without
  // it is generated too.
  if (!any_loop) {
    for (const GenOp& op : ops) {
      if (IsAccumulator(op.kind)) return absl::OkStatus();
    }
  }
  ++result_.funnel.map_validated;
  SGraph g = BuildOneKernel(ops, m);
  absl::StatusOr<SGraphAnalysis> info = Validate(g);
  if (!info.ok()) return absl::OkStatus();
  const size_t t = templates_.size();
  templates_.push_back(Template{ops, m});
  if (config_.max_kernels >= 2) {
    if (std::optional<SGraph> split = BuildSplit(ops, values, m, *info)) {
      ++result_.funnel.split_built;
      if (Validate(*split).ok()) Queue(std::move(*split), t);
    }
  }
  Queue(std::move(g), t);
  return absl::OkStatus();
}

void Searcher::Queue(SGraph g, size_t template_index) {
  if (!seen_.insert(g.StructuralHash()).second) return;
  ++result_.funnel.mapped;
  Candidate c;
  c.graph = std::move(g);
  c.template_index = template_index;
  candidates_.push_back(std::move(c));
}

}  // namespace prism::search::internal
