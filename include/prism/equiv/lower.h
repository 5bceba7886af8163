// Lowering Programs (ir/program.h) into terms of the tensor language (language.h).
//
//   PRISM_ASSIGN_OR_RETURN(Term t, LowerProgramOutput(program, 0));
//   t.ToString(&ctx);   // "(matmul (rms_norm X 1 1e-06) W)"
//   TensorEnv env = ProgramEnv(program, &ctx);   // shapes of X and W
//
// Inputs become 0-ary leaves named as in the Program; every op keeps its ops.def name, with
// its attributes as trailing children: dims normalized to [0, rank) (integer literals),
// scale's constant and rms_norm's eps as real literals. A variadic concat becomes a left-nested
// chain of binary concats. Dtypes are dropped: terms denote real-valued tensors.
#ifndef PRISM_EQUIV_LOWER_H_
#define PRISM_EQUIV_LOWER_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"
#include "prism/ir/program.h"

namespace prism::equiv {

// InvalidArgument if `output_index` is out of range.
absl::StatusOr<Term> LowerProgramOutput(const Program& program, size_t output_index);
// The shapes of the program's inputs, by name.
TensorEnv ProgramEnv(const Program& program, const ExprContext* ctx);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_LOWER_H_
