// SGraph storage, parameters and tensors, and BlockGraphBuilder.
#include "prism/block/sgraph.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/block/sgraph_json.h"
#include "sgraph_internal.h"

namespace prism {

// ---- roles
// ---------------------------------------------------------------------------------------
namespace {
constexpr std::pair<ParamRole, absl::string_view> kRoles[] = {
    {ParamRole::kGrid, "grid"},       {ParamRole::kForloop, "forloop"},
    {ParamRole::kThreads, "threads"}, {ParamRole::kStages, "stages"},
    {ParamRole::kMap, "map"},         {ParamRole::kSize, "size"},
};
}  // namespace

absl::string_view ParamRoleName(ParamRole role) {
  for (const auto& [r, name] : kRoles) {
    if (r == role) return name;
  }
  PRISM_UNREACHABLE("bad param role ", static_cast<int>(role));
}

std::optional<ParamRole> ParseParamRole(absl::string_view name) {
  for (const auto& [r, n] : kRoles) {
    if (n == name) return r;
  }
  return std::nullopt;
}

absl::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kInvariant: return "invariant";
    case Phase::kLoop: return "loop";
    case Phase::kAfter: return "after";
  }
  PRISM_UNREACHABLE("bad phase ", static_cast<int>(phase));
}

// ---- SGraph
// ----------------------------------------------------------------------------------------
SGraph::SGraph(std::string name) : name_(std::move(name)), ctx_(std::make_unique<ExprContext>()) {}
SGraph::SGraph(SGraph&&) noexcept = default;
SGraph& SGraph::operator=(SGraph&&) noexcept = default;
SGraph::~SGraph() = default;

SGraph SGraph::Clone() const {
  SGraph copy(name_);
  for (const Param& p : params_) {
    copy.params_.push_back({p.name, p.role, copy.ctx_->Import(*ctx_, p.var)});
  }
  copy.tensors_ = tensors_;
  copy.inputs_ = inputs_;
  copy.outputs_ = outputs_;
  copy.kernels_ = kernels_;
  // The slots repeat a few expressions many times (one Expr per structure): one memo for all.
  absl::flat_hash_map<Expr, Expr> imported;
  internal::ForEachExprSlot(copy, [&](Expr& e) { e = copy.ctx_->Import(*ctx_, e, imported); });
  return copy;
}

absl::StatusOr<Expr> SGraph::AddParam(absl::string_view name, ParamRole role,
                                      const Domain& domain) {
  if (FindParam(name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' is declared twice, expected unique names"));
  }
  absl::StatusOr<Expr> var = ctx_->Var(name, domain);
  if (!var.ok()) return var.status();
  params_.push_back({std::string(name), role, *var});
  return *var;
}

const Param* SGraph::FindParam(absl::string_view name) const {
  for (const Param& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int SGraph::AddTensor(absl::string_view name, DType dtype, std::vector<Expr> shape) {
  tensors_.push_back({std::string(name), dtype, std::move(shape)});
  return static_cast<int>(tensors_.size()) - 1;
}

int SGraph::AddTensor(absl::string_view name, DType dtype, const Shape& shape) {
  std::vector<Expr> dims;
  for (int64_t d : shape) dims.push_back(ctx_->Const(d));
  return AddTensor(name, dtype, std::move(dims));
}

int SGraph::AddInput(absl::string_view name, DType dtype, const Shape& shape) {
  const int t = AddTensor(name, dtype, shape);
  inputs_.push_back(t);
  return t;
}

int SGraph::AddOutput(absl::string_view name, DType dtype, const Shape& shape) {
  const int t = AddTensor(name, dtype, shape);
  outputs_.push_back(t);
  return t;
}

std::optional<int> SGraph::FindTensor(absl::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

int SGraph::AddKernel(Kernel kernel) {
  kernels_.push_back(std::move(kernel));
  return static_cast<int>(kernels_.size()) - 1;
}

int SGraph::AddLibraryKernel(absl::string_view name, LibraryKernel kernel) {
  return AddKernel(Kernel{std::string(name), std::move(kernel)});
}

uint64_t SGraph::StructuralHash() const { return StableHashBytes(SGraphToJson(*this).dump()); }

bool operator==(const SGraph& a, const SGraph& b) { return SGraphToJson(a) == SGraphToJson(b); }

std::string KernelDisplayName(const SGraph& graph, int kernel) {
  const std::string& name = graph.kernels()[kernel].name;
  return name.empty() ? absl::StrCat("#", kernel) : name;
}

// ---- BlockGraphBuilder
// ---------------------------------------------------------------------------
BlockGraphBuilder::BlockGraphBuilder(SGraph& graph, std::array<Expr, kNumGridAxes> grid,
                                     Expr threads, Expr forloop, Expr stages)
    : graph_(graph) {
  block_.grid = grid;
  block_.threads = threads;
  block_.forloop = forloop;
  block_.stages = stages;
}

int BlockGraphBuilder::Add(BlockOp op) {
  block_.ops.push_back(std::move(op));
  return static_cast<int>(block_.ops.size()) - 1;
}

int BlockGraphBuilder::Input(absl::string_view name, int tensor,
                             std::array<int64_t, kNumGridAxes> imap, int64_t fmap) {
  std::array<Expr, kNumGridAxes> m;
  for (int p = 0; p < kNumGridAxes; ++p) m[p] = graph_.Const(imap[p]);
  return Input(name, tensor, m, graph_.Const(fmap));
}

int BlockGraphBuilder::Input(absl::string_view name, int tensor,
                             std::array<Expr, kNumGridAxes> imap, Expr fmap) {
  BlockOp op;
  op.kind = BlockOpKind::kInput;
  op.name = std::string(name);
  op.tensor = tensor;
  op.map = imap;
  op.fmap = fmap;
  return Add(std::move(op));
}

int BlockGraphBuilder::MatMul(absl::string_view name, int a, int b) {
  BlockOp op;
  op.kind = BlockOpKind::kMatMul;
  op.name = std::string(name);
  op.operands = {a, b};
  return Add(std::move(op));
}

int BlockGraphBuilder::Unary(absl::string_view name, OpKind fn, int x) {
  BlockOp op;
  op.kind = BlockOpKind::kUnary;
  op.name = std::string(name);
  op.fn = fn;
  op.operands = {x};
  return Add(std::move(op));
}

int BlockGraphBuilder::Scale(absl::string_view name, int x, double c) {
  const int i = Unary(name, OpKind::kScale, x);
  block_.ops[i].scalar = c;
  return i;
}

int BlockGraphBuilder::Binary(absl::string_view name, OpKind fn, int a, int b) {
  BlockOp op;
  op.kind = BlockOpKind::kBinary;
  op.name = std::string(name);
  op.fn = fn;
  op.operands = {a, b};
  return Add(std::move(op));
}

int BlockGraphBuilder::Reduce(absl::string_view name, OpKind fn, int x, int64_t dim) {
  BlockOp op;
  op.kind = BlockOpKind::kReduce;
  op.name = std::string(name);
  op.fn = fn;
  op.dim = dim;
  op.operands = {x};
  return Add(std::move(op));
}

int BlockGraphBuilder::Rms(absl::string_view name, int x, int64_t dim, double eps) {
  BlockOp op;
  op.kind = BlockOpKind::kRms;
  op.name = std::string(name);
  op.dim = dim;
  op.eps = eps;
  op.operands = {x};
  return Add(std::move(op));
}

int BlockGraphBuilder::InvRms(absl::string_view name, int sum_of_squares, Expr count, double eps) {
  BlockOp op;
  op.kind = BlockOpKind::kInvRms;
  op.name = std::string(name);
  op.count = count;
  op.eps = eps;
  op.operands = {sum_of_squares};
  return Add(std::move(op));
}

int BlockGraphBuilder::DivCount(absl::string_view name, int x, Expr count) {
  BlockOp op;
  op.kind = BlockOpKind::kDivCount;
  op.name = std::string(name);
  op.count = count;
  op.operands = {x};
  return Add(std::move(op));
}

int BlockGraphBuilder::Accumulate(absl::string_view name, BlockOpKind kind, int a, int b) {
  BlockOp op;
  op.kind = kind;
  op.name = std::string(name);
  op.operands = {a};
  if (b >= 0) op.operands.push_back(b);
  return Add(std::move(op));
}

void BlockGraphBuilder::Output(int value, int tensor, std::array<int64_t, kNumGridAxes> omap) {
  std::array<Expr, kNumGridAxes> m;
  for (int p = 0; p < kNumGridAxes; ++p) m[p] = graph_.Const(omap[p]);
  Output(value, tensor, m);
}

void BlockGraphBuilder::Output(int value, int tensor, std::array<Expr, kNumGridAxes> omap) {
  BlockOp op;
  op.kind = BlockOpKind::kOutput;
  op.operands = {value};
  op.tensor = tensor;
  op.map = omap;
  Add(std::move(op));
}

int BlockGraphBuilder::Finish(absl::string_view kernel_name) && {
  return graph_.AddKernel(Kernel{std::string(kernel_name), std::move(block_)});
}

}  // namespace prism
