// Instances: an assignment of an sGraph's parameters turns it into a concrete block program
// (every grid size, forloop range, map, tile shape and tensor shape a number), the input of
// the CPU block emulator (emulator.h) and of codegen.
//
//   PRISM_ASSIGN_OR_RETURN(BlockProgram p, Instantiate(g, {{"g", 192}, {"F", 32}, {"T", 128},
//                                                          {"S", 3}}));
//   PRISM_RETURN_IF_ERROR(CheckSignature(p, program));   // same inputs/outputs as the Program
//   PRISM_ASSIGN_OR_RETURN(std::vector<Assignment> some, SampleAssignments(g, /*seed=*/1, 20));
#ifndef PRISM_BLOCK_BLOCK_INSTANCE_H_
#define PRISM_BLOCK_BLOCK_INSTANCE_H_

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/expr/eval.h"
#include "prism/block/block_graph.h"
#include "prism/ir/program.h"
#include "prism/block/sgraph.h"

namespace prism {

struct ConcreteTensor {
  std::string name;
  DType dtype = DType::kF16;
  Shape shape;
};

// A BlockOp with every expression evaluated and the derived tile shape attached.
struct ConcreteBlockOp {
  BlockOpKind kind = BlockOpKind::kInput;
  std::vector<int> operands;
  std::string name;
  OpKind fn = OpKind::kInput;
  double scalar = 0.0;
  int dim = -1;  // normalized to 0..rank-1 (kReduce, kRms)
  double eps = kDefaultRmsEps;
  int64_t count = 0;  // kInvRms, kDivCount
  int tensor = -1;
  std::array<int, kNumGridAxes> map = {kReplicate, kReplicate, kReplicate};
  int fmap = kReplicate;
  Shape tile;  // the op's result tile (for kOutput: the stored tile)
  Phase phase = Phase::kInvariant;
  // kInput only: the forloop walks partial-result groups of the tensor (one per iteration).
  bool walks_groups = false;
};

struct ConcreteBlockGraph {
  std::array<int64_t, kNumGridAxes> grid = {1, 1, 1};
  int64_t threads = 1;
  int64_t forloop = 1;
  int64_t stages = 1;
  std::vector<ConcreteBlockOp> ops;
};

struct ConcreteKernel {
  std::string name;
  std::variant<ConcreteBlockGraph, LibraryKernel> body;
  bool is_block() const { return std::holds_alternative<ConcreteBlockGraph>(body); }
  const ConcreteBlockGraph& block() const { return std::get<ConcreteBlockGraph>(body); }
  const LibraryKernel& library() const { return std::get<LibraryKernel>(body); }
};

struct BlockProgram {
  std::string name;
  Assignment assignment;
  std::vector<ConcreteTensor> tensors;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<ConcreteKernel> kernels;
};

// Binds every parameter, validates the bound graph and evaluates everything. Errors
// (InvalidArgument): "parameter 'F' is not assigned", "parameter F = 3 is outside its domain
// divisors(4096)", or Validate()'s message for the bound graph (e.g. a dim that the assigned
// grid and forloop do not divide).
absl::StatusOr<BlockProgram> Instantiate(const SGraph& graph, const Assignment& assignment);

// The graph with every assigned parameter replaced by its value (parameters not in
// `assignment` stay symbolic; their declarations are kept, assigned ones dropped). Use it to
// resolve map parameters before Validate.
absl::StatusOr<SGraph> Bind(const SGraph& graph, const Assignment& assignment);

// OK if the program's inputs and outputs have the same count, dtypes and shapes as the
// instance's (in order); InvalidArgument naming the first difference otherwise.
absl::Status CheckSignature(const BlockProgram& instance, const Program& program);

// Up to `count` distinct assignments drawn uniformly (seeded) from the parameter domains that
// satisfy every constraint of Validate(graph) and instantiate; stops after 200 × count draws.
// FailedPrecondition if none is found; InvalidArgument if the graph does not validate.
absl::StatusOr<std::vector<Assignment>> SampleAssignments(const SGraph& graph, uint64_t seed,
                                                          int count);

}  // namespace prism

#endif  // PRISM_BLOCK_BLOCK_INSTANCE_H_
