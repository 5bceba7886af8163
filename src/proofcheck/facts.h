// Private to the proof checker: what side conditions need to know about a term, recomputed on
// the plain tree alone — its per-block shape, its value if it is a scalar constant, the
// parallel axes it may depend on, and its axis if it is one — and the predicates of
// docs/rule_format.md over those facts. An independent reading of the term language of
// docs/rule_format.md §2 and §5 (equiv/ has its own, in tensor_analysis.cc and condition.cc).
//
//   Env env;  env.inputs["X"] = {Size::Const(8), Size::Const(64)};
//   Facts f = ComputeFacts(*ReadTerm("(sum X 1)"), env);   // f.shape = [8, 1]
#ifndef PRISM_SRC_PROOFCHECK_FACTS_H_
#define PRISM_SRC_PROOFCHECK_FACTS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tree.h"

namespace prism::proofcheck::internal {

// The operators of the term language and how many children they take.
enum class Cat : uint8_t {
  kMatMul, kUnary, kScale, kBinary, kReduce, kNorm, kConcat,
  kPartition, kReplicate, kCombine, kAxisReduce, kDimSize, kDimOf
};
struct OpInfo {
  const char* name;
  int arity;
  Cat cat;
};
// nullptr for input names and unknown operators.
const OpInfo* FindOp(absl::string_view name);

// The environment of a proof: input shapes and axis degrees (docs/proofs.md).
struct Env {
  std::map<std::string, std::vector<Size>> inputs;
  std::map<std::string, Size> axes;
};

// A scalar constant: an integer (possibly symbolic) or a real.
struct Value {
  bool is_int = true;
  Size integer;
  double real = 0.0;
};

struct Facts {
  std::string error;                       // non-empty: the term is ill-formed (why)
  std::optional<std::vector<Size>> shape;  // nullopt: unknown
  std::optional<Value> value;
  std::vector<std::string> deps;           // sorted, unique
  std::optional<std::string> axis;
};

// The facts of `t` (bottom-up over the whole tree).
Facts ComputeFacts(const Tree& t, const Env& env);

// A side condition `(PRED ARG...)` or `(not (PRED ARG...))`; an argument is a variable name or
// an integer literal.
struct Condition {
  std::string predicate;
  bool negated = false;
  struct Arg {
    std::string var;  // empty: the literal
    int64_t literal = 0;
  };
  std::vector<Arg> args;
  int line = 0, col = 0;
};
std::string ConditionString(const Condition& c);

// The number of arguments of predicate `name`, and for each whether it must be a variable
// (true) or may also be an integer literal (false); nullopt if the predicate is unknown.
std::optional<std::vector<bool>> PredicateSignature(absl::string_view name);

// Whether `c` holds with variable `v` bound to facts facts_of(v) (nullptr = unbound). A
// predicate that cannot decide makes the condition fail, negated or not.
bool Holds(const Condition& c, const std::map<std::string, Facts>& facts, const Env& env);

}  // namespace prism::proofcheck::internal

#endif  // PRISM_SRC_PROOFCHECK_FACTS_H_
