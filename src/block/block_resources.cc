// ComputeResources (contracts in block_resources.h; per-op counts in docs/block_graph.md).
#include "prism/block/block_resources.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "prism/base/check.h"
#include "prism/expr/simplify.h"
#include "symbolic.h"

namespace prism {
namespace {

using internal::Product;

class Counter {
 public:
  Counter(const SGraph& g, const SGraphAnalysis& a) : g_(g), a_(a), ctx_(g.ctx()) {}

  KernelResources Block(int k) {
    const BlockGraph& b = g_.kernels()[k].block();
    const std::vector<TileInfo>& tiles = a_.tiles[k];
    KernelResources r;
    r.grid = b.grid;
    r.blocks = Product(ctx_, {b.grid[0], b.grid[1], b.grid[2]});
    r.threads = b.threads;
    std::vector<Expr> loop_bytes, invariant_bytes, acc, loop_work, once_work, loop_sfu, once_sfu;
    absl::flat_hash_set<int> read, written;
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const BlockOp& op = b.ops[i];
      const TileInfo& t = tiles[i];
      if (op.kind == BlockOpKind::kInput) {
        const Expr bytes = ctx_.Mul(Elems(t.shape), Bytes(op.tensor));
        (t.phase == Phase::kLoop ? loop_bytes : invariant_bytes).push_back(bytes);
        read.insert(op.tensor);
        continue;
      }
      if (op.kind == BlockOpKind::kOutput) {
        written.insert(op.tensor);
        continue;
      }
      const bool in_loop = t.phase == Phase::kLoop || IsAccumulator(op.kind);
      const Work w = OpWork(b, tiles, static_cast<int>(i));
      (in_loop ? loop_work : once_work).push_back(w.flops);
      (in_loop ? loop_sfu : once_sfu).push_back(w.sfu);
      if (IsAccumulator(op.kind)) {
        acc.push_back(Elems(t.shape));
        if (op.kind == BlockOpKind::kAccOnlineSum || op.kind == BlockOpKind::kAccOnlineMatMul) {
          acc.push_back(Rows(t.shape));  // the running max
        }
      }
    }
    r.smem_bytes = S(ctx_.Add(ctx_.Mul(b.stages, ctx_.Add(loop_bytes)), ctx_.Add(invariant_bytes)));
    r.accumulator_elems = S(ctx_.Add(acc));
    r.regs_per_thread =
        S(ctx_.FloorDiv(ctx_.Add({r.accumulator_elems, b.threads, ctx_.Const(-1)}), b.threads));
    r.l2_bytes = S(ctx_.Mul(
        r.blocks, ctx_.Add(ctx_.Mul(b.forloop, ctx_.Add(loop_bytes)), ctx_.Add(invariant_bytes))));
    r.dram_bytes = S(ctx_.Add(TensorBytes(read), TensorBytes(written)));
    r.flops = S(ctx_.Mul(r.blocks,
                         ctx_.Add(ctx_.Mul(b.forloop, ctx_.Add(loop_work)), ctx_.Add(once_work))));
    r.sfu_ops = S(
        ctx_.Mul(r.blocks, ctx_.Add(ctx_.Mul(b.forloop, ctx_.Add(loop_sfu)), ctx_.Add(once_sfu))));
    return r;
  }

  KernelResources Library(int k) {
    const LibraryKernel& lk = g_.kernels()[k].library();
    KernelResources r;
    r.library = true;
    absl::flat_hash_set<int> read(lk.operands.begin(), lk.operands.end());
    r.dram_bytes = S(ctx_.Add(TensorBytes(read), TensorBytes({lk.result})));
    r.l2_bytes = r.dram_bytes;
    const std::vector<Expr>& out = g_.tensors()[lk.result].shape;
    const std::vector<Expr>& in = g_.tensors()[lk.operands[0]].shape;
    const OpInfo& info = GetOpInfo(lk.op);
    switch (info.category) {
      case OpCategory::kMatMul:
        r.flops = S(ctx_.Mul({ctx_.Const(2), Elems(out), in.back()}));
        break;
      case OpCategory::kReduce: r.flops = S(Elems(in)); break;
      case OpCategory::kConcat: r.flops = ctx_.Const(0); break;  // data movement (ir §5)
      case OpCategory::kNorm: r.flops = S(ctx_.Mul(ctx_.Const(3), Elems(in))); break;
      default: r.flops = S(Elems(out)); break;
    }
    r.sfu_ops = Transcendental(lk.op)       ? S(Elems(out))
                : lk.op == OpKind::kSoftmax ? S(Elems(in))
                                            : ctx_.Const(0);
    if (lk.op == OpKind::kRmsNorm) {
      const int rank = static_cast<int>(in.size());
      const int d = static_cast<int>(lk.dim < 0 ? lk.dim + rank : lk.dim);
      r.sfu_ops = S(ExactDivE(Elems(in), in[d]));
    }
    return r;
  }

 private:
  struct Work {
    Expr flops;
    Expr sfu;
  };

  Expr S(Expr e) { return Simplify(ctx_, e); }
  Expr Elems(const std::vector<Expr>& shape) { return Product(ctx_, shape); }
  // Elements with the last dim dropped.
  Expr Rows(const std::vector<Expr>& shape) {
    return Product(ctx_, absl::MakeConstSpan(shape).subspan(0, shape.size() - 1));
  }
  Expr ExactDivE(Expr a, Expr b) { return internal::ExactDiv(ctx_, a, b); }
  Expr Bytes(int tensor) { return ctx_.Const(DTypeBytes(g_.tensors()[tensor].dtype)); }
  Expr TensorBytes(const absl::flat_hash_set<int>& tensors) {
    std::vector<int> sorted(tensors.begin(), tensors.end());
    std::sort(sorted.begin(), sorted.end());
    std::vector<Expr> terms;
    for (int t : sorted) terms.push_back(ctx_.Mul(Elems(g_.tensors()[t].shape), Bytes(t)));
    return ctx_.Add(terms);
  }
  static bool Transcendental(OpKind fn) {
    switch (fn) {
      case OpKind::kExp:
      case OpKind::kSilu:
      case OpKind::kGelu:
      case OpKind::kSqrt:
      case OpKind::kRsqrt:
      case OpKind::kRecip: return true;
      default: return false;
    }
  }

  Work OpWork(const BlockGraph& b, const std::vector<TileInfo>& tiles, int i) {
    const BlockOp& op = b.ops[i];
    const std::vector<Expr>& out = tiles[i].shape;
    const Expr zero = ctx_.Const(0);
    auto in = [&](int k) -> const std::vector<Expr>& { return tiles[op.operands[k]].shape; };
    switch (op.kind) {
      case BlockOpKind::kMatMul: return {ctx_.Mul({ctx_.Const(2), Elems(out), in(0).back()}), zero};
      case BlockOpKind::kUnary: return {Elems(out), Transcendental(op.fn) ? Elems(out) : zero};
      case BlockOpKind::kBinary: return {Elems(out), zero};
      case BlockOpKind::kReduce: {
        return {Elems(in(0)), zero};
      }
      case BlockOpKind::kRms: {
        const int rank = static_cast<int>(out.size());
        const int d = static_cast<int>(op.dim < 0 ? op.dim + rank : op.dim);
        return {ctx_.Mul(ctx_.Const(3), Elems(out)), ExactDivE(Elems(out), out[d])};
      }
      case BlockOpKind::kInvRms: return {ctx_.Mul(ctx_.Const(2), Elems(out)), Elems(out)};
      case BlockOpKind::kDivCount: return {Elems(out), zero};
      case BlockOpKind::kAccSum:
      case BlockOpKind::kAccSumLast:
      case BlockOpKind::kAccMaxLast: return {Elems(in(0)), zero};
      case BlockOpKind::kAccSumSqLast: return {ctx_.Mul(ctx_.Const(2), Elems(in(0))), zero};
      case BlockOpKind::kAccOnlineSum:
        // max, subtract, add per score; exp per score and one rescale per row.
        return {ctx_.Mul(ctx_.Const(3), Elems(in(0))), ctx_.Add(Elems(in(0)), Rows(in(0)))};
      case BlockOpKind::kAccOnlineMatMul:
        return {ctx_.Add({ctx_.Mul({ctx_.Const(2), Elems(out), in(0).back()}),
                          ctx_.Mul(ctx_.Const(2), Elems(in(0))), Elems(out)}),
                ctx_.Add(Elems(in(0)), Rows(in(0)))};
      case BlockOpKind::kInput:
      case BlockOpKind::kOutput: break;
    }
    return {zero, zero};
  }

  const SGraph& g_;
  const SGraphAnalysis& a_;
  ExprContext& ctx_;
};

}  // namespace

Expr SGraphResources::Metric(absl::string_view name) const {
  for (const auto& [n, e] : metrics) {
    if (n == name) return e;
  }
  PRISM_UNREACHABLE("no metric ", name);
}

absl::StatusOr<SGraphResources> ComputeResources(const SGraph& graph,
                                                 const SGraphAnalysis& analysis) {
  if (analysis.tiles.size() != graph.kernels().size()) {
    return absl::InvalidArgumentError(
        "the analysis does not belong to this graph (kernel counts differ); run Validate first");
  }
  ExprContext& ctx = graph.ctx();
  Counter counter(graph, analysis);
  SGraphResources out;
  for (size_t k = 0; k < graph.kernels().size(); ++k) {
    out.kernels.push_back(graph.kernels()[k].is_block() ? counter.Block(static_cast<int>(k))
                                                        : counter.Library(static_cast<int>(k)));
  }
  auto max_over_blocks = [&](auto field, int64_t neutral) {
    Expr m;
    for (const KernelResources& r : out.kernels) {
      if (r.library) continue;
      const Expr v = field(r);
      m = m.valid() ? ctx.Max(m, v) : v;
    }
    return m.valid() ? Simplify(ctx, m) : ctx.Const(neutral);
  };
  auto sum = [&](auto field) {
    std::vector<Expr> terms;
    for (const KernelResources& r : out.kernels) terms.push_back(field(r));
    return Simplify(ctx, ctx.Add(terms));
  };
  out.metrics = {
      {"smem_bytes", max_over_blocks([](const KernelResources& r) { return r.smem_bytes; }, 0)},
      {"regs_per_thread",
       max_over_blocks([](const KernelResources& r) { return r.regs_per_thread; }, 0)},
      {"threads_per_block", max_over_blocks([](const KernelResources& r) { return r.threads; }, 1)},
      {"grid_x", max_over_blocks([](const KernelResources& r) { return r.grid[0]; }, 1)},
      {"grid_y", max_over_blocks([](const KernelResources& r) { return r.grid[1]; }, 1)},
      {"grid_z", max_over_blocks([](const KernelResources& r) { return r.grid[2]; }, 1)},
      {"grid_blocks", max_over_blocks([](const KernelResources& r) { return r.blocks; }, 1)},
      {"dram_bytes", sum([](const KernelResources& r) { return r.dram_bytes; })},
      {"l2_bytes", sum([](const KernelResources& r) { return r.l2_bytes; })},
      {"flops", sum([](const KernelResources& r) { return r.flops; })},
      {"sfu_ops", sum([](const KernelResources& r) { return r.sfu_ops; })},
      {"kernels", ctx.Const(static_cast<int64_t>(graph.kernels().size()))},
  };
  // Only library kernels (a concat's copy): no block graph defines the capacity metrics, so
  // they stay absent (known_<metric> false) rather than the neutral 1 thread per block, which
  // the hard rules would read as a block size.
  bool any_block = false;
  for (const KernelResources& r : out.kernels) any_block = any_block || !r.library;
  if (!any_block) {
    std::erase_if(out.metrics, [](const std::pair<std::string, Expr>& m) {
      return m.first != "dram_bytes" && m.first != "l2_bytes" && m.first != "flops" &&
             m.first != "sfu_ops" && m.first != "kernels";
    });
  }
  return out;
}

}  // namespace prism
