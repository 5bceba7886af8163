// Bind, Instantiate, CheckSignature and SampleAssignments (block_instance.h).
#include "prism/block/block_instance.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"
#include "prism/expr/simplify.h"
#include "sgraph_internal.h"

namespace prism {
namespace {

int64_t ConstOf(const SGraph& g, Expr e, absl::string_view what) {
  const Expr s = Simplify(g.ctx(), e);
  PRISM_CHECK(g.ctx().is_const(s), what, " is not constant after binding: ", g.ctx().ToString(s));
  return g.ctx().const_value(s);
}

std::string AssignmentKey(const Assignment& a) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : a) parts.push_back(absl::StrCat(k, "=", v));
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, ",");
}

}  // namespace

absl::StatusOr<SGraph> Bind(const SGraph& graph, const Assignment& assignment) {
  // One pass into a fresh graph that shares nothing: each parameter's variable becomes its
  // value (a bound one) or the fresh graph's own variable (a kept one), and every expression
  // slot is imported with that substitution and simplified there. The slots repeat a few
  // expressions many times (interned: one Expr per structure), so both steps are memoized
  // across slots; this runs for every instance the tuner examines.
  const ExprContext& from = graph.ctx();
  SGraph out(graph.name());
  ExprContext& to = out.ctx();
  absl::flat_hash_map<Expr, Expr> imported;  // graph's node → out's node, substituted
  for (const Param& p : graph.params()) {
    const Domain& domain = from.var_domain(p.var);
    auto it = assignment.find(p.name);
    if (it == assignment.end()) {
      PRISM_ASSIGN_OR_RETURN(Expr v, out.AddParam(p.name, p.role, domain));
      imported[p.var] = v;
      continue;
    }
    if (!domain.Contains(it->second)) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", p.name, " = ", it->second,
                                                     " is outside its domain ", domain.ToString()));
    }
    imported[p.var] = to.Const(it->second);
  }
  for (const SGraphTensor& t : graph.tensors()) out.AddTensor(t.name, t.dtype, t.shape);
  out.mutable_inputs() = graph.inputs();
  out.mutable_outputs() = graph.outputs();
  for (const Kernel& k : graph.kernels()) out.AddKernel(k);
  absl::flat_hash_map<Expr, Expr> simplified;  // graph's slot expression → out's, simplified
  // The expressions still point into `graph`'s context.
  internal::ForEachExprSlot(out, [&](Expr& e) {
    auto [it, inserted] = simplified.try_emplace(e);
    if (inserted) it->second = Simplify(to, to.Import(from, e, imported));
    e = it->second;
  });
  return out;
}

absl::StatusOr<BlockProgram> Instantiate(const SGraph& graph, const Assignment& assignment) {
  for (const Param& p : graph.params()) {
    if (!assignment.contains(p.name)) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", p.name, "' is not assigned"));
    }
  }
  PRISM_ASSIGN_OR_RETURN(SGraph bound, Bind(graph, assignment));
  PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(bound));
  BlockProgram p;
  p.name = graph.name();
  p.assignment = assignment;
  for (const SGraphTensor& t : bound.tensors()) {
    Shape shape;
    for (Expr d : t.shape) shape.push_back(ConstOf(bound, d, "a tensor dim"));
    p.tensors.push_back({t.name, t.dtype, std::move(shape)});
  }
  p.inputs = bound.inputs();
  p.outputs = bound.outputs();
  for (size_t k = 0; k < bound.kernels().size(); ++k) {
    const Kernel& kernel = bound.kernels()[k];
    if (!kernel.is_block()) {
      p.kernels.push_back({kernel.name, kernel.library()});
      continue;
    }
    const BlockGraph& b = kernel.block();
    ConcreteBlockGraph c;
    for (int a = 0; a < kNumGridAxes; ++a) c.grid[a] = ConstOf(bound, b.grid[a], "a grid size");
    c.threads = ConstOf(bound, b.threads, "threads");
    c.forloop = ConstOf(bound, b.forloop, "the forloop range");
    c.stages = ConstOf(bound, b.stages, "stages");
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const BlockOp& op = b.ops[i];
      const TileInfo& t = info.tiles[k][i];
      ConcreteBlockOp o;
      o.kind = op.kind;
      o.operands = op.operands;
      o.name = op.name;
      o.fn = op.fn;
      o.scalar = op.scalar;
      o.eps = op.eps;
      for (Expr e : t.shape) o.tile.push_back(ConstOf(bound, e, "a tile extent"));
      o.phase = t.phase;
      const int rank = static_cast<int>(o.tile.size());
      if (op.kind == BlockOpKind::kReduce || op.kind == BlockOpKind::kRms) {
        o.dim = static_cast<int>(op.dim < 0 ? op.dim + rank : op.dim);
      }
      if (op.kind == BlockOpKind::kInvRms) o.count = ConstOf(bound, op.count, "an inv_rms count");
      if (op.kind == BlockOpKind::kDivCount) o.count = ConstOf(bound, op.count, "a div_count count");
      if (op.kind == BlockOpKind::kInput || op.kind == BlockOpKind::kOutput) {
        o.tensor = op.tensor;
        for (int a = 0; a < kNumGridAxes; ++a) {
          o.map[a] = static_cast<int>(ConstOf(bound, op.map[a], "a map entry"));
        }
      }
      if (op.kind == BlockOpKind::kInput) {
        o.fmap = static_cast<int>(ConstOf(bound, op.fmap, "an fmap"));
        o.walks_groups = o.fmap != kReplicate && t.loop_partial;
      }
      c.ops.push_back(std::move(o));
    }
    p.kernels.push_back({kernel.name, std::move(c)});
  }
  return p;
}

absl::Status CheckSignature(const BlockProgram& instance, const Program& program) {
  auto check = [&](absl::string_view what, const std::vector<int>& ours,
                   const std::vector<TensorId>& theirs) -> absl::Status {
    if (ours.size() != theirs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the instance has ", ours.size(), " ", what,
                                                     "s but the program has ", theirs.size()));
    }
    for (size_t i = 0; i < ours.size(); ++i) {
      const ConcreteTensor& t = instance.tensors[ours[i]];
      const Node& n = program.node(theirs[i]);
      if (t.dtype != n.dtype || t.shape != n.shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " ", i, ": the instance has ", t.name, " ", DTypeName(t.dtype),
            ShapeToString(t.shape), " but the program has ", program.DisplayName(theirs[i]), " ",
            DTypeName(n.dtype), ShapeToString(n.shape)));
      }
    }
    return absl::OkStatus();
  };
  const std::vector<TensorId> inputs(program.inputs().begin(), program.inputs().end());
  PRISM_RETURN_IF_ERROR(check("input", instance.inputs, inputs));
  return check("output", instance.outputs, program.output_tensors());
}

absl::StatusOr<std::vector<Assignment>> SampleAssignments(const SGraph& graph, uint64_t seed,
                                                          int count) {
  PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(graph));
  std::vector<std::vector<int64_t>> values;
  for (const Param& p : graph.params()) {
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                           graph.ctx().var_domain(p.var).Enumerate(int64_t{1} << 20));
    values.push_back(std::move(v));
  }
  Rng rng(seed);
  std::vector<Assignment> out;
  absl::flat_hash_set<std::string> seen;
  const int64_t max_draws = int64_t{200} * std::max(count, 1);
  for (int64_t draw = 0; draw < max_draws && static_cast<int>(out.size()) < count; ++draw) {
    Assignment a;
    for (size_t i = 0; i < values.size(); ++i) {
      const std::vector<int64_t>& v = values[i];
      a[graph.params()[i].name] =
          v[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(v.size()) - 1))];
    }
    if (seen.contains(AssignmentKey(a))) continue;
    seen.insert(AssignmentKey(a));
    bool ok = true;
    for (const Constraint& c : info.constraints) {
      absl::StatusOr<bool> holds = EvaluateBool(graph.ctx(), c.condition, a);
      if (!holds.ok() || !*holds) {
        ok = false;
        break;
      }
    }
    if (!ok || !Instantiate(graph, a).ok()) continue;
    out.push_back(std::move(a));
  }
  if (out.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no valid assignment of sGraph ", graph.name(), " found in ", max_draws, " draws"));
  }
  return out;
}

}  // namespace prism
