// Static op info of block_ops.def and small BlockGraph helpers.
#include "prism/block/block_graph.h"

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"

namespace prism {
namespace {

constexpr BlockOpInfo kBlockOps[] = {
#define PRISM_BLOCK_OP(e, name, cat, arity) {BlockOpKind::e, name, BlockOpCategory::cat, arity},
#include "prism/block/block_ops.def"
#undef PRISM_BLOCK_OP
};

}  // namespace

const BlockOpInfo& GetBlockOpInfo(BlockOpKind kind) {
  const auto i = static_cast<size_t>(kind);
  PRISM_CHECK(i < std::size(kBlockOps), "bad block op kind ", i);
  return kBlockOps[i];
}

absl::Span<const BlockOpInfo> AllBlockOps() { return kBlockOps; }

bool IsAccumulator(BlockOpKind kind) {
  return GetBlockOpInfo(kind).category == BlockOpCategory::kAccumulator;
}

absl::string_view GridAxisName(int axis) {
  PRISM_CHECK(axis >= 0 && axis < kNumGridAxes, "bad grid axis ", axis);
  static constexpr absl::string_view kNames[] = {"x", "y", "z"};
  return kNames[axis];
}

std::string BlockOp::DisplayName(int index) const {
  return name.empty() ? absl::StrCat("op #", index) : name;
}

std::optional<int> BlockGraph::FindOp(absl::string_view op_name) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!op_name.empty() && ops[i].name == op_name) return static_cast<int>(i);
  }
  return std::nullopt;
}

}  // namespace prism
