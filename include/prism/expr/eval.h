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
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
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

// A fixed set of expressions of one context compiled for evaluation at many assignments of a
// fixed list of variables: the shared subexpressions in one operands-first array, no hashing,
// name lookups or allocations per run (a family's constraints and metrics at every enumerated
// instance, prune/family.h). Agrees with Evaluate: where Evaluate returns a value, Run gives
// that value (booleans as 0 or 1); where Evaluate returns an error (overflow, division by zero,
// an unbound variable), Run marks the root failed and the caller asks Evaluate for the message.
//
//   CompiledExprs program(ctx, {smem, fits}, {F, T});  // F, T: the Var expressions
//   CompiledExprs::Scratch scratch;                      // reuse it across runs
//   program.Run({32, 128}, scratch);
//   if (program.ok(scratch, 0)) use(program.value(scratch, 0));
//
// The program keeps no reference to `ctx`. Run is const and thread-compatible: concurrent runs
// need a scratch each.
class CompiledExprs {
 public:
  // Per-run storage, one entry per node.
  struct Scratch {
    std::vector<int64_t> value;
    std::vector<uint8_t> ok;
  };

  CompiledExprs() = default;
  // `vars`: Var expressions of `ctx`, in the order Run takes their values (PRISM_CHECK: Var
  // kind, no duplicates). A variable of the roots that is not in `vars` is unbound: every root
  // that needs it fails, as Evaluate fails without it in the assignment.
  CompiledExprs(const ExprContext& ctx, absl::Span<const Expr> roots, absl::Span<const Expr> vars);

  size_t num_roots() const { return roots_.size(); }
  size_t num_vars() const { return num_vars_; }

  // Evaluates every root with values[i] for vars[i] (PRISM_CHECK: values.size() == num_vars()).
  void Run(absl::Span<const int64_t> values, Scratch& scratch) const;
  // After Run with `scratch`: whether root i has a value, and the value (0/1 for booleans;
  // PRISM_CHECK: ok).
  bool ok(const Scratch& scratch, size_t root) const { return scratch.ok[roots_[root]] != 0; }
  int64_t value(const Scratch& scratch, size_t root) const;

 private:
  struct Node {
    ExprKind kind;
    uint32_t first = 0;  // operands_[first, first + count): node indices
    uint32_t count = 0;
    int64_t payload = 0;  // Const/BoolConst: the value; Var: its index in `vars`, -1 if unbound
  };
  std::vector<Node> nodes_;  // operands before users
  std::vector<uint32_t> operands_;
  std::vector<uint32_t> roots_;  // node index of each root
  size_t num_vars_ = 0;
};

// Floor division / modulo helpers with the semantics of FloorDiv/Mod (b != 0; the only
// overflowing case, INT64_MIN floordiv -1, is PRISM_CHECKed by FloorDivInt: callers test it).
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);

}  // namespace prism

#endif  // PRISM_EXPR_EVAL_H_
