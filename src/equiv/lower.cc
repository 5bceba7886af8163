#include "prism/equiv/lower.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/equiv/language.h"

namespace prism::equiv {
namespace {

uint32_t IntLeaf(Term& t, int64_t v) {
  return t.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(v));
}
uint32_t RealLeaf(Term& t, double v) {
  return t.Add(LeafOpFor(Payload::Kind::kReal), {}, Payload::Real(v));
}

int64_t NormDim(int64_t dim, size_t rank) {
  absl::StatusOr<int> d = NormalizeDim(dim, static_cast<int>(rank));
  PRISM_CHECK(d.ok(), "a validated Program has an out-of-range dim: ", d.status().message());
  return *d;
}

}  // namespace

absl::StatusOr<Term> LowerProgramOutput(const Program& program, size_t output_index) {
  if (output_index >= program.outputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("output index ", output_index,
                                                   " is out of range: the program has ",
                                                   program.outputs().size(), " outputs"));
  }
  Term t;
  std::vector<int64_t> index(program.num_tensors(), -1);
  const TensorId out = program.outputs()[output_index].tensor;
  // Nodes are in topological order; lower those the output depends on.
  std::vector<bool> needed(program.num_tensors(), false);
  needed[out.value()] = true;
  for (size_t i = program.num_tensors(); i-- > 0;) {
    if (!needed[i]) continue;
    for (TensorId o : program.nodes()[i].operands) needed[o.value()] = true;
  }
  for (size_t i = 0; i < program.num_tensors(); ++i) {
    if (!needed[i]) continue;
    const Node& n = program.nodes()[i];
    const OpInfo& info = GetOpInfo(n.op);
    auto operand = [&](size_t k) { return static_cast<uint32_t>(index[n.operands[k].value()]); };
    uint32_t id = 0;
    switch (info.category) {
      case OpCategory::kSource:
        id = t.Add(Symbol(n.name));
        break;
      case OpCategory::kMatMul:
      case OpCategory::kBinary:
        id = t.Add(Symbol(info.name), {operand(0), operand(1)});
        break;
      case OpCategory::kUnary:
        if (n.op == OpKind::kScale) {
          uint32_t c = RealLeaf(t, n.scalar);
          id = t.Add(Symbol(info.name), {operand(0), c});
        } else {
          id = t.Add(Symbol(info.name), {operand(0)});
        }
        break;
      case OpCategory::kReduce:
      case OpCategory::kNorm: {
        const size_t rank = program.node(n.operands[0]).shape.size();
        uint32_t d = IntLeaf(t, NormDim(n.dim, rank));
        if (n.op == OpKind::kRmsNorm) {
          uint32_t eps = RealLeaf(t, n.eps);
          id = t.Add(Symbol(info.name), {operand(0), d, eps});
        } else {
          id = t.Add(Symbol(info.name), {operand(0), d});
        }
        break;
      }
      case OpCategory::kConcat: {
        const size_t rank = program.node(n.operands[0]).shape.size();
        uint32_t d = IntLeaf(t, NormDim(n.dim, rank));
        id = operand(0);
        for (size_t k = 1; k < n.operands.size(); ++k) {
          id = t.Add(Symbol(info.name), {id, operand(k), d});
        }
        break;
      }
    }
    index[i] = id;
  }
  // Make the output the root (Add order already ends with it unless it is an input).
  const uint32_t root = static_cast<uint32_t>(index[out.value()]);
  if (root != t.root()) return t.Subterm(root);
  return t;
}

TensorEnv ProgramEnv(const Program& program, const ExprContext* ctx) {
  TensorEnv env;
  env.ctx = ctx;
  for (TensorId in : program.inputs()) {
    const Node& n = program.node(in);
    env.SetLeafShape(n.name, n.shape);
  }
  return env;
}

}  // namespace prism::equiv
