// Work and traffic accounting of a Program (ir/analysis.h); the counting convention is the table
// in docs/ir_semantics.md §5.
#include "prism/ir/analysis.h"

#include <algorithm>

#include "prism/base/check.h"

namespace prism {
namespace {

double ElementsOf(const Shape& shape) {
  const std::optional<int64_t> n = NumElements(shape);
  PRISM_CHECK(n.has_value(), "shape ", ShapeToString(shape), " overflows");
  return static_cast<double>(*n);
}

// Adds one op's work (§5) to `stats`. `in` is the shape of the first operand.
void CountOp(const Node& node, const Shape& in, ProgramStats& stats) {
  const double out_elems = ElementsOf(node.shape);
  switch (node.op) {
    case OpKind::kInput:
    case OpKind::kConcat: return;
    case OpKind::kMatMul: {
      // [..., M, N] = [..., M, K] x [..., K, N]: 2·K flops per result element, batch included.
      stats.matmul_flops += 2.0 * out_elems * static_cast<double>(in.back());
      return;
    }
    case OpKind::kNeg:
    case OpKind::kRelu:
    case OpKind::kSquare:
    case OpKind::kScale:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv: stats.elementwise_flops += out_elems; return;
    case OpKind::kExp:
    case OpKind::kSilu:
    case OpKind::kGelu:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kRecip:
      stats.elementwise_flops += out_elems;
      stats.transcendentals += out_elems;
      return;
    case OpKind::kSum:
    case OpKind::kMax: stats.elementwise_flops += ElementsOf(in); return;
    case OpKind::kMean: stats.elementwise_flops += ElementsOf(in) + out_elems; return;
    case OpKind::kRmsNorm: {
      const absl::StatusOr<int> d = NormalizeDim(node.dim, static_cast<int>(in.size()));
      PRISM_CHECK(d.ok(), "rms_norm dim of a validated program");
      const double fibres = out_elems / static_cast<double>(in[*d]);
      stats.elementwise_flops += 3.0 * out_elems + 3.0 * fibres;
      stats.transcendentals += fibres;
      return;
    }
    case OpKind::kSoftmax:
      stats.elementwise_flops += 5.0 * out_elems;
      stats.transcendentals += out_elems;
      return;
  }
  PRISM_UNREACHABLE("bad op ", static_cast<int>(node.op));
}

}  // namespace

ProgramStats AnalyzeProgram(const Program& program) {
  ProgramStats stats;
  for (const Node& node : program.nodes()) {
    const Shape& in = node.operands.empty() ? node.shape : program.node(node.operands[0]).shape;
    CountOp(node, in, stats);
  }
  for (TensorId id : program.inputs()) {
    const Node& node = program.node(id);
    stats.min_bytes += ElementsOf(node.shape) * DTypeBytes(node.dtype);
  }
  for (const OutputDecl& out : program.outputs()) {
    const Node& node = program.node(out.tensor);
    stats.min_bytes += ElementsOf(node.shape) * DTypeBytes(node.dtype);
  }
  return stats;
}

double RooflineFloorUs(const ProgramStats& stats, double dram_Bps, double matmul_flops_per_s) {
  PRISM_CHECK(dram_Bps > 0 && matmul_flops_per_s > 0,
              "RooflineFloorUs: rates must be positive, "
              "found ",
              dram_Bps, " B/s and ", matmul_flops_per_s, " flop/s");
  return 1e6 * std::max(stats.min_bytes / dram_Bps, stats.matmul_flops / matmul_flops_per_s);
}

}  // namespace prism
