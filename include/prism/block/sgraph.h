// sGraph: a sequence of kernels (block graphs and library kernels) over kernel tensors, whose
// parameters — grid sizes, forloop ranges, threads, pipeline stages, and the maps until they
// are resolved — are symbolic variables with domains (DESIGN.md §2.3). An sGraph plus its
// constraints is a family; an assignment of its parameters is an instance (block_instance.h).
//
// The SGraph owns the ExprContext of all its expressions. It is a plain mutable description;
// Validate() checks the well-formedness rules (docs/block_graph.md) and derives, symbolically,
// every tile's shape, phase and split structure, the partial results between kernels and the
// divisibility constraints.
//
//   SGraph g("rmsnorm_linear");
//   Expr n = *g.AddParam("g", ParamRole::kGrid, *Domain::DivisorsOf(6144));
//   Expr f = *g.AddParam("F", ParamRole::kForloop, *Domain::DivisorsOf(4096));
//   int x = g.AddInput("X", DType::kF16, Shape{16, 4096});
//   int w = g.AddInput("W", DType::kF16, Shape{4096, 6144});
//   int y = g.AddOutput("Y", DType::kF16, Shape{16, 6144});
//   BlockGraphBuilder k(g, {n, g.One(), g.One()}, /*threads=*/..., /*forloop=*/f, /*stages=*/...);
//   int xt = k.Input("Xt", x, {kReplicate, kReplicate, kReplicate}, /*fmap=*/1);
//   int wt = k.Input("Wt", w, {1, kReplicate, kReplicate}, /*fmap=*/0);
//   int a = k.Accumulate("A", BlockOpKind::kAccSum, k.MatMul("P", xt, wt));
//   k.Output(a, y, {1, kReplicate, kReplicate});
//   std::move(k).Finish("k0");
//   PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(g));
#ifndef PRISM_BLOCK_SGRAPH_H_
#define PRISM_BLOCK_SGRAPH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/expr/domain.h"
#include "prism/expr/expr.h"
#include "prism/block/block_graph.h"
#include "prism/ir/types.h"

namespace prism {

// ---- parameters and tensors
// ---------------------------------------------------------------------- What a parameter controls
// (the pruner and the instantiator treat roles differently: maps are resolved before instantiation;
// sizes are the shapes of a shape-independent family).
enum class ParamRole : uint8_t { kGrid, kForloop, kThreads, kStages, kMap, kSize };
// "grid", "forloop", "threads", "stages", "map", "size".
absl::string_view ParamRoleName(ParamRole role);
std::optional<ParamRole> ParseParamRole(absl::string_view name);

struct Param {
  std::string name;
  ParamRole role = ParamRole::kGrid;
  Expr var;  // a Var of the graph's context; its domain is ctx().var_domain(var)
};

// A tensor in global memory: an input of the program, an output, or an intermediate between
// kernels. Shapes are Int expressions (constants for a static-shape program).
struct SGraphTensor {
  std::string name;
  DType dtype = DType::kF16;
  std::vector<Expr> shape;
};

// ---- the sGraph -------------------------------------------------------------------------------
class SGraph {
 public:
  explicit SGraph(std::string name = "");
  SGraph(SGraph&&) noexcept;
  SGraph& operator=(SGraph&&) noexcept;
  SGraph(const SGraph&) = delete;
  SGraph& operator=(const SGraph&) = delete;
  ~SGraph();
  // A deep copy (expressions imported into a fresh context).
  SGraph Clone() const;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // The context that owns every expression of this graph. Returned mutable from a const graph:
  // adding nodes to the hash-consed arena (e.g. to simplify) never changes the graph's meaning.
  ExprContext& ctx() const { return *ctx_; }
  Expr Const(int64_t v) const { return ctx_->Const(v); }
  Expr One() const { return ctx_->Const(1); }
  Expr Replicate() const { return ctx_->Const(kReplicate); }

  // Declares a parameter (a variable of ctx()). InvalidArgument for a bad or duplicate name.
  absl::StatusOr<Expr> AddParam(absl::string_view name, ParamRole role, const Domain& domain);
  const std::vector<Param>& params() const { return params_; }
  const Param* FindParam(absl::string_view name) const;

  // Kernel tensors. Names must be unique identifiers (checked by Validate).
  int AddTensor(absl::string_view name, DType dtype, std::vector<Expr> shape);
  int AddTensor(absl::string_view name, DType dtype, const Shape& shape);
  // AddTensor + declare as the next program input / output (in the Program's order).
  int AddInput(absl::string_view name, DType dtype, const Shape& shape);
  int AddOutput(absl::string_view name, DType dtype, const Shape& shape);
  const std::vector<SGraphTensor>& tensors() const { return tensors_; }
  std::vector<SGraphTensor>& mutable_tensors() { return tensors_; }
  std::optional<int> FindTensor(absl::string_view name) const;
  const std::vector<int>& inputs() const { return inputs_; }
  const std::vector<int>& outputs() const { return outputs_; }
  std::vector<int>& mutable_inputs() { return inputs_; }
  std::vector<int>& mutable_outputs() { return outputs_; }

  // Kernels run in order; returns the new kernel's index.
  int AddKernel(Kernel kernel);
  int AddLibraryKernel(absl::string_view name, LibraryKernel kernel);
  const std::vector<Kernel>& kernels() const { return kernels_; }
  std::vector<Kernel>& mutable_kernels() { return kernels_; }

  // Stable structural hash of the serialized form (sgraph_json.h); equal graphs hash equally
  // whatever context handles their expressions use.
  uint64_t StructuralHash() const;
  // Equal iff the serialized forms are equal (same names, params, tensors, kernels, maps).
  friend bool operator==(const SGraph& a, const SGraph& b);

 private:
  std::string name_;
  std::unique_ptr<ExprContext> ctx_;
  std::vector<Param> params_;
  std::vector<SGraphTensor> tensors_;
  std::vector<int> inputs_;
  std::vector<int> outputs_;
  std::vector<Kernel> kernels_;
};

// ---- building block graphs ---------------------------------------------------------------------
// Appends ops to a new block graph; Finish() adds it to the graph. Methods return the new op's
// index. Nothing is checked until Validate().
class BlockGraphBuilder {
 public:
  BlockGraphBuilder(SGraph& graph, std::array<Expr, kNumGridAxes> grid, Expr threads, Expr forloop,
                    Expr stages);

  // Map entries as constants (tensor dims or kReplicate) or as expressions.
  int Input(absl::string_view name, int tensor, std::array<int64_t, kNumGridAxes> imap,
            int64_t fmap);
  int Input(absl::string_view name, int tensor, std::array<Expr, kNumGridAxes> imap, Expr fmap);
  int MatMul(absl::string_view name, int a, int b);
  int Unary(absl::string_view name, OpKind fn, int x);
  int Scale(absl::string_view name, int x, double c);
  int Binary(absl::string_view name, OpKind fn, int a, int b);
  int Reduce(absl::string_view name, OpKind fn, int x, int64_t dim);
  int Rms(absl::string_view name, int x, int64_t dim, double eps = kDefaultRmsEps);
  int InvRms(absl::string_view name, int sum_of_squares, Expr count, double eps = kDefaultRmsEps);
  // x / count elementwise (a mean: the sum over a dim divided by its extent).
  int DivCount(absl::string_view name, int x, Expr count);
  // kAcc*; `b` is the second operand of kAccOnlineMatMul.
  int Accumulate(absl::string_view name, BlockOpKind kind, int a, int b = -1);
  void Output(int value, int tensor, std::array<int64_t, kNumGridAxes> omap);
  void Output(int value, int tensor, std::array<Expr, kNumGridAxes> omap);

  BlockGraph& block() { return block_; }
  // Adds the block graph as the graph's next kernel; returns its index.
  int Finish(absl::string_view kernel_name) &&;

 private:
  int Add(BlockOp op);
  SGraph& graph_;
  BlockGraph block_;
};

// ---- validation and derived structure --------------------------------------------------------
// When a tile is live: computed before the loop from loop-invariant tiles only, inside the
// loop, or after it (from accumulators).
enum class Phase : uint8_t { kInvariant, kLoop, kAfter };
absl::string_view PhaseName(Phase phase);  // "invariant", "loop", "after"

// Derived facts about one block op's result tile (for kOutput: about the stored tile).
struct TileInfo {
  std::vector<Expr> shape;  // simplified tile extents
  Phase phase = Phase::kInvariant;
  std::vector<uint8_t> grid_split;  // per dim: bit p set if grid axis p splits it
  std::vector<bool> loop_split;     // per dim: the forloop walks it
  // Per dim: valid (the extent of one group) if the dim still holds the unreduced partial
  // results of an earlier kernel, laid side by side.
  std::vector<Expr> group_extent;
  uint8_t partial_axes = 0;   // bit p: the tile is one block's partial result along grid axis p
  bool loop_partial = false;  // one iteration's partial result: an accumulator must close it
};

// A kernel tensor that holds per-block partial results: along `dim`, `groups` groups of
// `group_extent` each (one per block along grid axis `axis` of kernel `kernel`), to be reduced
// by a following kernel.
struct PartialLayout {
  int dim = 0;
  Expr groups;
  Expr group_extent;
  int kernel = 0;
  int axis = 0;
};

// A condition every instance must satisfy (Bool expression), with the reason it exists.
struct Constraint {
  Expr condition;
  std::string reason;  // "tensor W dim 1 is split by g (kernel k0, op Wt)"
};

struct SGraphAnalysis {
  // [kernel][op]: one TileInfo per block op (empty for library kernels).
  std::vector<std::vector<TileInfo>> tiles;
  // Per tensor: its partial layouts (empty for ordinary tensors).
  std::vector<std::vector<PartialLayout>> partials;
  // Per tensor: the kernel that writes it, or -1 (program inputs).
  std::vector<int> producer;
  // Divisibility constraints (D mod (Π g · F) == 0 for every split dim), in kernel/op order.
  std::vector<Constraint> constraints;
};

// Checks every well-formedness rule and derives the structure above. Errors are
// InvalidArgument "kernel k0, op Wt: <what was found>, expected <what>"; the rules and their
// exact messages are listed in docs/block_graph.md. Maps must be resolved (constants).
absl::StatusOr<SGraphAnalysis> Validate(const SGraph& graph);

// "k0" or "#0" for an unnamed kernel.
std::string KernelDisplayName(const SGraph& graph, int kernel);

}  // namespace prism

#endif  // PRISM_BLOCK_SGRAPH_H_
