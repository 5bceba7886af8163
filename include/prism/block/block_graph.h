// Block graphs: one CUDA kernel described at thread-block level (DESIGN.md §2.2), and the
// kernels of an sGraph (block graphs, or library kernels that run one Program op).
//
// A block graph runs a grid of thread blocks (gx, gy, gz); every block runs a forloop of F
// iterations. Its ops (block_ops.def) form a DAG in op order: each operand is an earlier op.
//   - `input` loads, per block and iteration, a tile of a kernel tensor: the imap says, for each
//     grid axis, which tensor dim it splits (or kReplicate); the fmap says which dim the forloop
//     walks (or kReplicate). Tile extent of dim d: D_d / Π(g_p : imap_p = d) / (F if fmap = d).
//   - compute ops work on f32 tiles; accumulators close the loop; `output` stores a tile per
//     its omap (grid axis → tensor dim), rounding to the tensor's dtype.
// Everything symbolic (grid, F, threads, stages, maps, shapes) is an Expr of the owning
// SGraph's ExprContext (sgraph.h); the rules and derived tile shapes are in sgraph.h.
//
//   const BlockGraph& k = graph.kernels()[0].block();   // built with BlockGraphBuilder
//   for (const BlockOp& op : k.ops) {
//     if (IsAccumulator(op.kind)) ...;                 // GetBlockOpInfo(op.kind).name
//   }
#ifndef PRISM_BLOCK_BLOCK_GRAPH_H_
#define PRISM_BLOCK_BLOCK_GRAPH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/expr/expr.h"
#include "prism/ir/program.h"

namespace prism {

// ---- the block op vocabulary (block_ops.def) ---------------------------------------------------
enum class BlockOpKind : uint8_t {
#define PRISM_BLOCK_OP(e, name, cat, arity) e,
#include "prism/block/block_ops.def"
#undef PRISM_BLOCK_OP
};
enum class BlockOpCategory : uint8_t { kIO, kCompute, kAccumulator };

struct BlockOpInfo {
  BlockOpKind kind;
  absl::string_view name;  // "acc_sum"; generic ("unary") for ops spelled by their function
  BlockOpCategory category;
  int arity;
};
const BlockOpInfo& GetBlockOpInfo(BlockOpKind kind);
absl::Span<const BlockOpInfo> AllBlockOps();
bool IsAccumulator(BlockOpKind kind);

// Grid axes x, y, z.
inline constexpr int kNumGridAxes = 3;
// "x", "y", "z".
absl::string_view GridAxisName(int axis);

// A map entry that splits no dim: a grid axis that replicates the tensor, or no fmap.
inline constexpr int64_t kReplicate = -1;

// ---- ops ---------------------------------------------------------------------------------------
// One block op. Attributes are meaningful per kind (others keep their defaults).
struct BlockOp {
  BlockOpKind kind = BlockOpKind::kInput;
  // Indices of earlier ops of the same block graph.
  std::vector<int> operands;
  // Unique within the block graph, or "" (then messages say "op #i").
  std::string name;
  // kUnary: exp silu gelu relu sqrt rsqrt square neg recip scale; kBinary: add sub mul div;
  // kReduce: sum max.
  OpKind fn = OpKind::kInput;
  double scalar = 0.0;          // kUnary scale: the constant c of c·x
  int64_t dim = -1;             // kReduce, kRms: tile dim (negative counts from the end)
  double eps = kDefaultRmsEps;  // kRms, kInvRms
  Expr count;                   // kInvRms: n in rsqrt(s / n + eps); kDivCount: n in x / n
                                // (the reduced extent)
  // kInput / kOutput: the kernel tensor (index into SGraph tensors) and its map: for each grid
  // axis x, y, z the tensor dim it splits (imap) or the tensor dim the blocks along it are laid
  // out on (omap), or kReplicate. Entries are Int expressions: a constant once resolved, a
  // parameter of role kMap until then.
  int tensor = -1;
  std::array<Expr, kNumGridAxes> map;
  Expr fmap;  // kInput only: the dim the forloop walks, or kReplicate

  // "Xt" or "op #3".
  std::string DisplayName(int index) const;
};

// One kernel at block level.
struct BlockGraph {
  std::array<Expr, kNumGridAxes> grid;  // gx, gy, gz (≥ 1)
  Expr threads;                         // threads per block
  Expr forloop;                         // F, forloop iterations per block (≥ 1)
  Expr stages;                          // software pipeline stages of the forloop's loads
  std::vector<BlockOp> ops;

  // Index of the op named `name`, if any.
  std::optional<int> FindOp(absl::string_view name) const;
};

// A kernel that runs one Program op (not input) on whole kernel tensors: e.g. a sum that
// reduces partial results, or an op the generator does not fuse. Semantics: the reference
// interpreter's (docs/ir_semantics.md), in device mode, rounded to the result tensor's dtype.
struct LibraryKernel {
  OpKind op = OpKind::kSum;
  std::vector<int> operands;  // kernel tensor indices
  int result = -1;            // kernel tensor index
  int64_t dim = 0;            // kDim / kDimEps ops
  double scalar = 0.0;        // scale
  double eps = kDefaultRmsEps;
};

struct Kernel {
  std::string name;
  std::variant<BlockGraph, LibraryKernel> body;

  bool is_block() const { return std::holds_alternative<BlockGraph>(body); }
  const BlockGraph& block() const { return std::get<BlockGraph>(body); }
  BlockGraph& block() { return std::get<BlockGraph>(body); }
  const LibraryKernel& library() const { return std::get<LibraryKernel>(body); }
  LibraryKernel& library() { return std::get<LibraryKernel>(body); }
};

}  // namespace prism

#endif  // PRISM_BLOCK_BLOCK_GRAPH_H_
