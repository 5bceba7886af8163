// SGraphToString (format in sgraph_printer.h).
#include "prism/block/sgraph_printer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "symbolic.h"

namespace prism {
namespace {

constexpr size_t kCommentColumn = 48;

std::string MapString(const ExprContext& ctx, const std::array<Expr, kNumGridAxes>& map) {
  std::vector<std::string> parts;
  for (Expr e : map) {
    if (!e.valid()) {
      parts.push_back("?");
    } else if (ctx.is_const(e) && ctx.const_value(e) == kReplicate) {
      parts.push_back("-");
    } else {
      parts.push_back(ctx.ToString(e));
    }
  }
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

std::string ExprString(const ExprContext& ctx, Expr e) { return e.valid() ? ctx.ToString(e) : "?"; }

std::string TensorName(const SGraph& g, int t) {
  return t >= 0 && t < static_cast<int>(g.tensors().size()) ? g.tensors()[t].name
                                                            : absl::StrCat("tensor#", t);
}

std::string OpLine(const SGraph& g, const BlockGraph& b, int i) {
  const ExprContext& ctx = g.ctx();
  const BlockOp& op = b.ops[i];
  std::vector<std::string> args;
  for (int a : op.operands) {
    args.push_back(a >= 0 && a < static_cast<int>(b.ops.size()) ? b.ops[a].DisplayName(a)
                                                                : absl::StrCat("op #", a));
  }
  const std::string lhs = op.DisplayName(i);
  switch (op.kind) {
    case BlockOpKind::kInput:
      return absl::StrCat(
          lhs, " = input ", TensorName(g, op.tensor), " imap ", MapString(ctx, op.map), " fmap ",
          op.fmap.valid() && ctx.is_const(op.fmap) && ctx.const_value(op.fmap) == kReplicate
              ? "-"
              : ExprString(ctx, op.fmap));
    case BlockOpKind::kOutput:
      return absl::StrCat("output ", TensorName(g, op.tensor), " = ", absl::StrJoin(args, ", "),
                          " omap ", MapString(ctx, op.map));
    case BlockOpKind::kUnary:
      if (op.fn == OpKind::kScale) {
        return absl::StrCat(lhs, " = scale(", absl::StrJoin(args, ", "), ", ", op.scalar, ")");
      }
      return absl::StrCat(lhs, " = ", GetOpInfo(op.fn).name, "(", absl::StrJoin(args, ", "), ")");
    case BlockOpKind::kBinary:
      return absl::StrCat(lhs, " = ", GetOpInfo(op.fn).name, "(", absl::StrJoin(args, ", "), ")");
    case BlockOpKind::kReduce:
      return absl::StrCat(lhs, " = ", GetOpInfo(op.fn).name, "(", absl::StrJoin(args, ", "),
                          ", dim=", op.dim, ")");
    case BlockOpKind::kRms:
      return absl::StrCat(lhs, " = rms(", absl::StrJoin(args, ", "), ", dim=", op.dim,
                          ", eps=", op.eps, ")");
    case BlockOpKind::kInvRms:
      return absl::StrCat(lhs, " = inv_rms(", absl::StrJoin(args, ", "),
                          ", n=", ExprString(ctx, op.count), ", eps=", op.eps, ")");
    case BlockOpKind::kDivCount:
      return absl::StrCat(lhs, " = div_count(", absl::StrJoin(args, ", "),
                          ", n=", ExprString(ctx, op.count), ")");
    default:
      return absl::StrCat(lhs, " = ", GetBlockOpInfo(op.kind).name, "(", absl::StrJoin(args, ", "),
                          ")");
  }
}

}  // namespace

std::string SGraphToString(const SGraph& g) {
  const ExprContext& ctx = g.ctx();
  absl::StatusOr<SGraphAnalysis> info = Validate(g);
  std::string s = absl::StrCat("sgraph ", g.name().empty() ? "(unnamed)" : g.name(), "\n");
  for (const Param& p : g.params()) {
    absl::StrAppend(&s, "  param ", p.name, ": ", ParamRoleName(p.role), " in ",
                    ctx.var_domain(p.var).ToString(), "\n");
  }
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    const SGraphTensor& tensor = g.tensors()[t];
    const int ti = static_cast<int>(t);
    const bool in = std::find(g.inputs().begin(), g.inputs().end(), ti) != g.inputs().end();
    const bool out = std::find(g.outputs().begin(), g.outputs().end(), ti) != g.outputs().end();
    absl::StrAppend(&s, "  tensor ", tensor.name, ": ", DTypeName(tensor.dtype),
                    internal::ShapeString(ctx, tensor.shape),
                    in ? " input" : (out ? " output" : ""));
    if (info.ok()) {
      for (const PartialLayout& l : info->partials[t]) {
        absl::StrAppend(&s, "  # ", ctx.ToString(l.groups), " partials along dim ", l.dim,
                        " (grid ", GridAxisName(l.axis), " of kernel ",
                        KernelDisplayName(g, l.kernel), ")");
      }
    }
    absl::StrAppend(&s, "\n");
  }
  for (size_t k = 0; k < g.kernels().size(); ++k) {
    const Kernel& kernel = g.kernels()[k];
    const std::string kname = KernelDisplayName(g, static_cast<int>(k));
    if (!kernel.is_block()) {
      const LibraryKernel& lk = kernel.library();
      std::vector<std::string> args;
      for (int t : lk.operands) args.push_back(TensorName(g, t));
      const OpAttr attr = GetOpInfo(lk.op).attr;
      if (attr == OpAttr::kDim || attr == OpAttr::kDimEps)
        args.push_back(absl::StrCat("dim=", lk.dim));
      if (attr == OpAttr::kDimEps) args.push_back(absl::StrCat("eps=", lk.eps));
      if (attr == OpAttr::kScalar) args.push_back(absl::StrCat(lk.scalar));
      absl::StrAppend(&s, "  kernel ", kname, ": library ", TensorName(g, lk.result), " = ",
                      GetOpInfo(lk.op).name, "(", absl::StrJoin(args, ", "), ")\n");
      continue;
    }
    const BlockGraph& b = kernel.block();
    std::vector<std::string> grid;
    for (Expr e : b.grid) grid.push_back(ExprString(ctx, e));
    absl::StrAppend(&s, "  kernel ", kname, ": block grid (", absl::StrJoin(grid, ", "),
                    ") threads ", ExprString(ctx, b.threads), " forloop ",
                    ExprString(ctx, b.forloop), " stages ", ExprString(ctx, b.stages), "\n");
    for (size_t i = 0; i < b.ops.size(); ++i) {
      std::string line = absl::StrCat("    ", OpLine(g, b, static_cast<int>(i)));
      if (info.ok() && i < info->tiles[k].size()) {
        const TileInfo& t = info->tiles[k][i];
        if (line.size() < kCommentColumn) line.resize(kCommentColumn, ' ');
        absl::StrAppend(&line, "  # ", internal::ShapeString(ctx, t.shape), " ",
                        PhaseName(t.phase));
      }
      absl::StrAppend(&s, line, "\n");
    }
  }
  if (!info.ok()) absl::StrAppend(&s, "  # invalid: ", info.status().message(), "\n");
  return s;
}

std::string AssignmentText(const SGraph& graph, const Assignment& a) {
  std::vector<std::string> parts;
  for (const Param& p : graph.params()) {
    auto it = a.find(p.name);
    if (it != a.end()) parts.push_back(absl::StrCat(p.name, "=", it->second));
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace prism
