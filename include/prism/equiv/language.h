// The term language of prism's equivalence module: the operators of term_ops.def, plus
// leaves — inputs (0-ary operators named like the Program's inputs), integer and real
// literals, symbolic sizes {expr} and axes @name (term.h). docs/rule_format.md gives the
// semantics of every operator.
//
//   const TermOpInfo* info = FindTermOp(Symbol("partition"));   // arity 4, kPartition
//   Symbol mm = TermOpSymbol(TermOp::kMatMul);                   // Symbol("matmul")
#ifndef PRISM_EQUIV_LANGUAGE_H_
#define PRISM_EQUIV_LANGUAGE_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/equiv/symbol.h"

namespace prism::equiv {

enum class TermOp : uint8_t {
#define PRISM_TERM_OP(e, name, arity, cat, operands) e,
#include "prism/equiv/term_ops.def"
#undef PRISM_TERM_OP
};

enum class TermOpCategory : uint8_t {
  kMatMul, kUnary, kScale, kBinary, kReduce, kNorm, kConcat,
  kPartition, kReplicate, kCombine, kAxisReduce, kAux
};

struct TermOpInfo {
  TermOp op;
  absl::string_view name;
  int arity;
  TermOpCategory category;
  absl::string_view operands;  // e.g. "t d ax n"
  Symbol symbol;
};

const TermOpInfo& GetTermOpInfo(TermOp op);
absl::Span<const TermOpInfo> AllTermOps();
// The operator spelled `op`, or nullptr (leaves, inputs and unknown names).
const TermOpInfo* FindTermOp(Symbol op);
inline Symbol TermOpSymbol(TermOp op) { return GetTermOpInfo(op).symbol; }

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_LANGUAGE_H_
