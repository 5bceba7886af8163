// The reference interpreter: the executable meaning of a Program and the oracle every other
// stage (emulator, codegen, tuning) is tested against. Semantics: docs/ir_semantics.md.
//
// Modes:
//   kF64    — every op in double precision; inputs used as given (no rounding).
//   kDevice — what a GPU kernel computes: inputs rounded to their dtype; each op computed in
//             f32 (elementwise ops on f32 values; matmul, sum, mean, max, rms_norm and softmax
//             accumulate in f32 in a fixed order) and each op's output rounded to its tensor's
//             dtype.
//
//   PRISM_ASSIGN_OR_RETURN(Program p, ParseProgram(text));
//   std::vector<Tensor> in = RandomInputs(p, /*seed=*/1);
//   PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> out, Evaluate(p, in, EvalMode::kDevice));
#ifndef PRISM_IR_INTERPRETER_H_
#define PRISM_IR_INTERPRETER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/ir/program.h"
#include "prism/ir/tensor.h"

namespace prism {

enum class EvalMode { kF64, kDevice };
absl::string_view EvalModeName(EvalMode mode);  // "f64", "device"

// Seeded standard-normal inputs, one per program input in order, rounded to each input's
// dtype; each input draws from its own stream (forked from `seed` by input index), so adding
// an input does not change the others. Deterministic for a given (program, seed) on every
// platform. An input over the interpreter's size limit gets empty data (Evaluate then reports
// ResourceExhausted).
std::vector<Tensor> RandomInputs(const Program& program, uint64_t seed);

// Evaluates `program` on `inputs` (one per program input, in order, with matching dtype and
// shape — InvalidArgument naming the input otherwise). Returns one tensor per output
// declaration, in order. ResourceExhausted (suggesting a smaller batch) for a tensor of more
// than 2^28 elements or more than 2^30 elements alive at once.
absl::StatusOr<std::vector<Tensor>> Evaluate(const Program& program,
                                             absl::Span<const Tensor> inputs, EvalMode mode);

// Like Evaluate but returns every tensor of the program, indexed by TensorId.
absl::StatusOr<std::vector<Tensor>> EvaluateAll(const Program& program,
                                                absl::Span<const Tensor> inputs, EvalMode mode);

}  // namespace prism

#endif  // PRISM_IR_INTERPRETER_H_
