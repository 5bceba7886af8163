#include "prism/equiv/lower_sgraph.h"

#include <array>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "absl/strings/str_join.h"
#include "prism/equiv/language.h"
#include "prism/equiv/lower.h"
#include "prism/ir/program.h"

namespace prism::equiv {
namespace {

// One axis of a kernel: its term name and degree (in the lowering's context).
struct Axis {
  Symbol name;
  Expr degree;
};

class Lowerer {
 public:
  Lowerer(const SGraph& graph, const SGraphAnalysis& info, ExprContext& ctx)
      : graph_(graph), info_(info), ctx_(ctx), tensor_(graph.tensors().size(), -1) {}

  absl::StatusOr<LoweredSGraph> Run() {
    LoweredSGraph out;
    out.env.ctx = &ctx_;
    for (const Param& p : graph_.params()) {
      absl::StatusOr<Expr> v = ctx_.Var(p.name, graph_.ctx().var_domain(p.var));
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter '", p.name, "' cannot be imported: ", v.status().message()));
      }
    }
    for (int in : graph_.inputs()) {
      const SGraphTensor& t = graph_.tensors()[in];
      std::vector<int64_t> shape;
      for (Expr e : t.shape) {
        if (!graph_.ctx().is_const(e)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tensor ", t.name, " has a symbolic shape; expected constant input shapes"));
        }
        shape.push_back(graph_.ctx().const_value(e));
      }
      out.env.SetLeafShape(t.name, shape);
      tensor_[in] = static_cast<int64_t>(term_.Add(Symbol(t.name)));
    }
    for (size_t k = 0; k < graph_.kernels().size(); ++k) {
      const Kernel& kernel = graph_.kernels()[k];
      if (kernel.is_block()) {
        LowerBlock(static_cast<int>(k), kernel.block());
      } else {
        LowerLibrary(kernel.library());
      }
    }
    for (int o : graph_.outputs()) {
      PRISM_CHECK(tensor_[o] >= 0, "a validated graph writes every output");
      out.outputs.push_back(term_.Subterm(static_cast<uint32_t>(tensor_[o])));
    }
    return out;
  }

 private:
  uint32_t Int(int64_t v) { return term_.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(v)); }
  uint32_t Real(double v) {
    return term_.Add(LeafOpFor(Payload::Kind::kReal), {}, Payload::Real(v));
  }
  // An integer: a literal when constant, else a symbolic size.
  uint32_t Size(Expr e) {
    if (ctx_.is_const(e)) return Int(ctx_.const_value(e));
    return term_.Add(LeafOpFor(Payload::Kind::kSym), {}, Payload::Sym(e));
  }
  uint32_t AxisLeaf(const Axis& a) {
    return term_.Add(LeafOpFor(Payload::Kind::kAxis), {}, Payload::Axis(a.name));
  }
  uint32_t Op(TermOp op, std::vector<uint32_t> children) {
    return term_.Add(TermOpSymbol(op), std::move(children));
  }
  uint32_t Named(absl::string_view name, std::vector<uint32_t> children) {
    return term_.Add(Symbol(name), std::move(children));
  }
  uint32_t Partition(uint32_t t, int64_t dim, const Axis& a) {
    return Op(TermOp::kPartition, {t, Int(dim), AxisLeaf(a), Size(a.degree)});
  }
  uint32_t Combine(uint32_t t, int64_t dim, const Axis& a) {
    return Op(TermOp::kCombine, {t, Int(dim), AxisLeaf(a)});
  }
  uint32_t Reduce(uint32_t t, const std::optional<Axis>& a) {
    return a ? Op(TermOp::kReduce, {t, AxisLeaf(*a)}) : t;
  }
  uint32_t ReduceMax(uint32_t t, const std::optional<Axis>& a) {
    return a ? Op(TermOp::kReduceMax, {t, AxisLeaf(*a)}) : t;
  }

  // The axis of a degree: named by the degree, unique within the kernel (`used`).
  std::optional<Axis> MakeAxis(Expr degree_in_graph, absl::string_view fallback,
                               absl::flat_hash_set<std::string>& used) {
    const Expr degree = ctx_.Import(graph_.ctx(), degree_in_graph);
    if (ctx_.is_const(degree) && ctx_.const_value(degree) == 1) return std::nullopt;
    std::string base;
    if (ctx_.kind(degree) == ExprKind::kVar) {
      base = ctx_.var_name(degree);
    } else if (ctx_.is_const(degree)) {
      base = absl::StrCat("c", ctx_.const_value(degree));
    } else {
      base = std::string(fallback);
    }
    std::string name = base;
    for (int i = 2; used.contains(name); ++i) name = absl::StrCat(base, ".", i);
    used.insert(name);
    return Axis{Symbol(name), degree};
  }

  void LowerBlock(int k, const BlockGraph& bg) {
    absl::flat_hash_set<std::string> used;
    std::array<std::optional<Axis>, kNumGridAxes> grid;
    for (int p = 0; p < kNumGridAxes; ++p) {
      grid[p] = MakeAxis(bg.grid[p], absl::StrCat("k", k, ".", GridAxisName(p)), used);
    }
    const std::optional<Axis> loop = MakeAxis(bg.forloop, absl::StrCat("k", k, ".F"), used);
    const ExprContext& gctx = graph_.ctx();
    auto constant = [&](Expr e) { return gctx.const_value(e); };
    std::vector<uint32_t> val(bg.ops.size(), 0);
    const std::vector<TileInfo>& tiles = info_.tiles[k];
    for (size_t i = 0; i < bg.ops.size(); ++i) {
      const BlockOp& op = bg.ops[i];
      auto arg = [&](int j) { return val[op.operands[j]]; };
      auto rank_of = [&](int j) { return static_cast<int>(tiles[op.operands[j]].shape.size()); };
      auto norm = [&](int64_t dim, int rank) {
        absl::StatusOr<int> d = NormalizeDim(dim, rank);
        PRISM_CHECK(d.ok(), "a validated block op has an out-of-range dim");
        return static_cast<int64_t>(*d);
      };
      auto last = [&](int j) { return static_cast<int64_t>(rank_of(j) - 1); };
      switch (op.kind) {
        case BlockOpKind::kInput: {
          uint32_t t = static_cast<uint32_t>(tensor_[op.tensor]);
          const int64_t rank = static_cast<int64_t>(graph_.tensors()[op.tensor].shape.size());
          for (int64_t d = 0; d < rank; ++d) {
            for (int p = 0; p < kNumGridAxes; ++p) {
              if (grid[p] && constant(op.map[p]) == d) t = Partition(t, d, *grid[p]);
            }
          }
          const int64_t f = constant(op.fmap);
          if (loop && f != kReplicate) t = Partition(t, f, *loop);
          val[i] = t;
          break;
        }
        case BlockOpKind::kOutput: {
          uint32_t t = arg(0);
          for (int p = kNumGridAxes - 1; p >= 0; --p) {
            const int64_t d = constant(op.map[p]);
            if (grid[p] && d != kReplicate) t = Combine(t, d, *grid[p]);
          }
          tensor_[op.tensor] = t;
          val[i] = t;
          break;
        }
        case BlockOpKind::kMatMul:
          val[i] = Op(TermOp::kMatMul, {arg(0), arg(1)});
          break;
        case BlockOpKind::kUnary:
          if (op.fn == OpKind::kScale) {
            val[i] = Named("scale", {arg(0), Real(op.scalar)});
          } else {
            val[i] = Named(GetOpInfo(op.fn).name, {arg(0)});
          }
          break;
        case BlockOpKind::kBinary:
          val[i] = Named(GetOpInfo(op.fn).name, {arg(0), arg(1)});
          break;
        case BlockOpKind::kReduce:
          val[i] = Named(GetOpInfo(op.fn).name, {arg(0), Int(norm(op.dim, rank_of(0)))});
          break;
        case BlockOpKind::kRms:
          val[i] = Op(TermOp::kRmsNorm, {arg(0), Int(norm(op.dim, rank_of(0))), Real(op.eps)});
          break;
        case BlockOpKind::kInvRms: {
          const uint32_t n = Size(ctx_.Import(gctx, op.count));
          val[i] = Op(TermOp::kRsqrt, {Op(TermOp::kAdd, {Op(TermOp::kDiv, {arg(0), n}),
                                                         Real(op.eps)})});
          break;
        }
        case BlockOpKind::kDivCount:
          val[i] = Op(TermOp::kDiv, {arg(0), Size(ctx_.Import(gctx, op.count))});
          break;
        case BlockOpKind::kAccSum:
          val[i] = Reduce(arg(0), loop);
          break;
        case BlockOpKind::kAccSumLast:
          val[i] = Reduce(Op(TermOp::kSum, {arg(0), Int(last(0))}), loop);
          break;
        case BlockOpKind::kAccSumSqLast:
          val[i] = Reduce(Op(TermOp::kSum, {Op(TermOp::kSquare, {arg(0)}), Int(last(0))}), loop);
          break;
        case BlockOpKind::kAccMaxLast:
          val[i] = ReduceMax(Op(TermOp::kMax, {arg(0), Int(last(0))}), loop);
          break;
        case BlockOpKind::kAccOnlineSum:
        case BlockOpKind::kAccOnlineMatMul: {
          const uint32_t m = ReduceMax(Op(TermOp::kMax, {arg(0), Int(last(0))}), loop);
          const uint32_t e = Op(TermOp::kExp, {Op(TermOp::kSub, {arg(0), m})});
          val[i] = op.kind == BlockOpKind::kAccOnlineSum
                       ? Reduce(Op(TermOp::kSum, {e, Int(last(0))}), loop)
                       : Reduce(Op(TermOp::kMatMul, {e, arg(1)}), loop);
          break;
        }
      }
    }
  }

  void LowerLibrary(const LibraryKernel& lib) {
    const OpInfo& info = GetOpInfo(lib.op);
    std::vector<uint32_t> args;
    for (int t : lib.operands) args.push_back(static_cast<uint32_t>(tensor_[t]));
    const int rank = static_cast<int>(graph_.tensors()[lib.operands[0]].shape.size());
    auto dim = [&] {
      absl::StatusOr<int> d = NormalizeDim(lib.dim, rank);
      PRISM_CHECK(d.ok(), "a validated library kernel has an out-of-range dim");
      return Int(*d);
    };
    uint32_t id = 0;
    switch (info.category) {
      case OpCategory::kSource:
        PRISM_CHECK(false, "a library kernel cannot be an input");
        break;
      case OpCategory::kMatMul:
      case OpCategory::kBinary:
        id = Named(info.name, {args[0], args[1]});
        break;
      case OpCategory::kUnary:
        id = lib.op == OpKind::kScale ? Named(info.name, {args[0], Real(lib.scalar)})
                                      : Named(info.name, {args[0]});
        break;
      case OpCategory::kReduce:
        id = Named(info.name, {args[0], dim()});
        break;
      case OpCategory::kNorm:
        id = lib.op == OpKind::kRmsNorm ? Named(info.name, {args[0], dim(), Real(lib.eps)})
                                        : Named(info.name, {args[0], dim()});
        break;
      case OpCategory::kConcat: {
        const uint32_t d = dim();
        id = args[0];
        for (size_t j = 1; j < args.size(); ++j) id = Named(info.name, {id, args[j], d});
        break;
      }
    }
    tensor_[lib.result] = id;
  }

  const SGraph& graph_;
  const SGraphAnalysis& info_;
  ExprContext& ctx_;
  Term term_;
  std::vector<int64_t> tensor_;  // kernel tensor -> node of term_, or -1
};

}  // namespace

absl::StatusOr<LoweredSGraph> LowerSGraph(const SGraph& graph, ExprContext& ctx) {
  PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(graph));
  return Lowerer(graph, info, ctx).Run();
}

ProveOptions SGraphProveOptions() {
  ProveOptions options;
  options.limits.max_nodes = 60'000;
  return options;
}

absl::StatusOr<std::vector<ProveResult>> ProveSGraph(ExprContext& ctx, const SGraph& graph,
                                                     const Program& program, const RuleSet& rules,
                                                     const ProveOptions& options) {
  if (graph.inputs().size() != program.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("the sGraph has ", graph.inputs().size(),
                                                   " inputs but the program ",
                                                   program.inputs().size()));
  }
  if (graph.outputs().size() != program.outputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("the sGraph has ", graph.outputs().size(),
                                                   " outputs but the program ",
                                                   program.outputs().size()));
  }
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const SGraphTensor& t = graph.tensors()[graph.inputs()[i]];
    const Node& n = program.node(program.inputs()[i]);
    std::vector<std::string> dims;
    bool same = t.name == n.name && t.shape.size() == n.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      dims.push_back(graph.ctx().ToString(t.shape[d]));
      same = same && d < n.shape.size() && graph.ctx().is_const(t.shape[d]) &&
             graph.ctx().const_value(t.shape[d]) == n.shape[d];
    }
    if (!same) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " is ", t.name, " [", absl::StrJoin(dims, ", "),
                       "] in the sGraph but ", n.name, " [", absl::StrJoin(n.shape, ", "),
                       "] in the program"));
    }
  }
  PRISM_ASSIGN_OR_RETURN(LoweredSGraph low, LowerSGraph(graph, ctx));
  std::vector<ProveResult> results;
  for (size_t o = 0; o < low.outputs.size(); ++o) {
    PRISM_ASSIGN_OR_RETURN(Term goal, LowerProgramOutput(program, o));
    results.push_back(ProveEquivalent(ctx, low.env, low.outputs[o], goal, rules, options));
  }
  return results;
}

}  // namespace prism::equiv
