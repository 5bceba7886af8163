// The CPU block emulator: executes a concrete block program exactly as the GPU would, so that
// the meaning of every mapping is tested where there is no GPU (DESIGN.md §6).
//
// For each kernel in order: a library kernel runs its Program op through the reference
// interpreter (device mode) and rounds to the result tensor's dtype. A block graph runs, for
// every block (bx, by, bz) of the grid (x slowest):
//   1. loop-invariant ops once (input tiles without an fmap and what depends only on them);
//   2. accumulators initialized (sums 0, maxima −inf);
//   3. for i in 0..F-1: loads the tiles of fmapped inputs for iteration i, runs the loop ops
//      in op order, updates every accumulator;
//   4. the after-loop ops, then every output: the tile rounded to the tensor's dtype is stored
//      at its omap position.
// All block arithmetic is IEEE f32 (`float`), in a fixed order (matmul: k ascending; row
// reductions: ascending). Tile positions: along tensor dim d, the block coordinates of the
// grid axes mapped to d are linearized in x, y, z order (x most significant) into c, the
// forloop index is appended when the fmap is d (c·F + i), and the tile starts at c × extent.
// Outputs are laid out the same way. Every output element must be written exactly once
// (Internal error otherwise: the validator should have prevented it).
//
//   std::vector<Tensor> in = RandomInputs(program, /*seed=*/1);
//   PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> out, Emulate(instance, in));
//   PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> ref, Evaluate(program, in, EvalMode::kDevice));
#ifndef PRISM_BLOCK_EMULATOR_H_
#define PRISM_BLOCK_EMULATOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "prism/block/block_instance.h"
#include "prism/ir/tensor.h"

namespace prism {

// Runs `program` on `inputs` (one per instance input, in order, matching dtype and shape;
// values are rounded to the dtype as in the interpreter's device mode). Returns the outputs in
// order. InvalidArgument for mismatched inputs.
absl::StatusOr<std::vector<Tensor>> Emulate(const BlockProgram& program,
                                            absl::Span<const Tensor> inputs);

// Like Emulate, but returns every kernel tensor (indexed like BlockProgram::tensors).
absl::StatusOr<std::vector<Tensor>> EmulateAll(const BlockProgram& program,
                                               absl::Span<const Tensor> inputs);

}  // namespace prism

#endif  // PRISM_BLOCK_EMULATOR_H_
