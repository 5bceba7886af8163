// Evaluation of expressions at a concrete assignment of their variables, with int64
// arithmetic that reports overflow instead of wrapping.
//
//   Assignment a = {{"F", 32}, {"g", 192}};
//   PRISM_ASSIGN_OR_RETURN(int64_t smem, EvaluateInt(ctx, smem_expr, a));
//   PRISM_ASSIGN_OR_RETURN(bool ok, EvaluateBool(ctx, constraint, a));
//
// Errors (InvalidArgument), each quoting the offending subexpression in printed syntax:
//   "unbound variable 'F' in 'K floordiv F'"
//   "division by zero in 'K floordiv F': the divisor 'F' is 0"
//   "integer overflow in 'x * y': 4611686018427387904 * 2"
// And/Or are order-independent: And is false if any operand is false even when another
// operand has an error (Or likewise with true); otherwise the first error in operand order is
// returned. Everything else is strict. Domains are not checked here (prune/family.h does).
#ifndef PRISM_EXPR_EVAL_H_
#define PRISM_EXPR_EVAL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "prism/expr/expr.h"

namespace prism {

// Values of variables by name. Extra entries are ignored.
using Assignment = absl::flat_hash_map<std::string, int64_t>;

// Value of an Int-sorted expression (PRISM_CHECK on sort).
absl::StatusOr<int64_t> EvaluateInt(const ExprContext& ctx, Expr e, const Assignment& assignment);
// Value of a Bool-sorted expression (PRISM_CHECK on sort).
absl::StatusOr<bool> EvaluateBool(const ExprContext& ctx, Expr e, const Assignment& assignment);
// Either sort; a boolean is returned as 0 or 1.
absl::StatusOr<int64_t> Evaluate(const ExprContext& ctx, Expr e, const Assignment& assignment);

namespace internal {
class Evaluator;
}  // namespace internal

// Evaluates many expressions of one context at one assignment, computing each common
// subexpression once: for a family's constraints and metrics (prune/family.h), cheaper than
// one Evaluate call each. Every call returns what the free function of the same name returns
// (values, errors and their messages). `ctx` and `assignment` must outlive the evaluator and
// stay unchanged while it is used.
class AssignmentEvaluator {
 public:
  AssignmentEvaluator(const ExprContext& ctx, const Assignment& assignment);
  AssignmentEvaluator(const ExprContext& ctx, Assignment&& assignment) = delete;  // would dangle
  ~AssignmentEvaluator();
  AssignmentEvaluator(const AssignmentEvaluator&) = delete;
  AssignmentEvaluator& operator=(const AssignmentEvaluator&) = delete;

  absl::StatusOr<int64_t> EvaluateInt(Expr e);  // PRISM_CHECK on sort, as EvaluateInt
  absl::StatusOr<bool> EvaluateBool(Expr e);    // PRISM_CHECK on sort, as EvaluateBool
  absl::StatusOr<int64_t> Evaluate(Expr e);

 private:
  const ExprContext& ctx_;
  std::unique_ptr<internal::Evaluator> impl_;
};

// Floor division / modulo helpers with the semantics of FloorDiv/Mod (b != 0; the only
// overflowing case, INT64_MIN floordiv -1, is PRISM_CHECKed by FloorDivInt: callers test it).
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

}  // namespace prism

#endif  // PRISM_EXPR_EVAL_H_
