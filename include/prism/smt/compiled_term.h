// A term of the SMT layer compiled into a small straight-line program that evaluates it at
// concrete inputs without the solver — exactly (rational arithmetic in 128 bits, SMT-LIB
// semantics for div/mod), thousands of times faster than asking Z3. The pruner uses it to test
// candidate witnesses and to compute the cost lower bound of an instance.
//
//   PRISM_ASSIGN_OR_RETURN(CompiledTerm rule, solver.Compile(term, {"smem_bytes", "regs"}));
//   PRISM_ASSIGN_OR_RETURN(bool ok, rule.EvaluateBool({49152, 96}));
#ifndef PRISM_SMT_COMPILED_TERM_H_
#define PRISM_SMT_COMPILED_TERM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace prism::smt {

class CompiledTerm {
 public:
  // The instruction set (one per supported Z3 operator).
  enum class Op : uint8_t {
    kConst, kInput, kAdd, kSub, kNeg, kMul, kIntDiv, kIntMod, kRealDiv, kToReal, kToInt,
    kIte, kEq, kLe, kLt, kGe, kGt, kAnd, kOr, kNot, kImplies, kXor, kDistinct
  };
  struct Instr {
    Op op;
    uint32_t first;     // kInput: input index; kConst: index into constants; else first operand
    uint32_t count;     // number of operands (consecutive entries of operand_list_)
  };

  CompiledTerm() = default;

  // Number of inputs the program expects, and their names in order.
  const std::vector<std::string>& inputs() const { return inputs_; }
  size_t size() const { return code_.size(); }

  // Evaluates a Bool-sorted term. InvalidArgument if `inputs` has the wrong length, if the
  // term is not Bool, on division by zero, or on 128-bit overflow (the message says which).
  absl::StatusOr<bool> EvaluateBool(absl::Span<const int64_t> inputs) const;
  // Evaluates an Int- or Real-sorted term; a Real result is rounded to the nearest double.
  absl::StatusOr<double> EvaluateNumber(absl::Span<const int64_t> inputs) const;
  // Evaluates an Int-sorted term exactly. InvalidArgument also when it does not fit int64.
  absl::StatusOr<int64_t> EvaluateInt(absl::Span<const int64_t> inputs) const;

 private:
  friend class Solver;
  struct Rational {
    __int128 num;
    __int128 den;  // > 0, gcd(num, den) == 1
  };
  absl::StatusOr<Rational> Run(absl::Span<const int64_t> inputs) const;

  std::vector<std::string> inputs_;
  std::vector<Instr> code_;  // post-order; the result is the last instruction
  std::vector<uint32_t> operand_list_;
  std::vector<Rational> constants_;
  bool is_bool_ = false;
  bool is_real_ = false;
};

}  // namespace prism::smt

#endif  // PRISM_SMT_COMPILED_TERM_H_
