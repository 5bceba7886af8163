// Concrete evaluation of terms in f64: the meaning of every operator of docs/rule_format.md §2
// on real tensors, with the reference interpreter's f64 formulas and accumulation orders
// (docs/ir_semantics.md §2, §3.1, §3.3), and the parallel operators evaluated per block
// index: `partition` takes the slice of the current block, `combine` concatenates the blocks'
// values, `reduce` / `reduce_max` sum / maximize them, `replicate` is the identity.
// Used to refute equivalences by random testing (refute.h).
//
//   TermEvaluator ev(&ctx, {{"F", 2}, {"g", 4}});     // values of the symbolic sizes
//   ev.SetInput("X", x);  ev.SetInput("W", w);          // prism::Tensor, f64 values
//   PRISM_ASSIGN_OR_RETURN(TermPlan plan, ev.Plan(term));   // shapes, axes, work
//   PRISM_ASSIGN_OR_RETURN(Tensor y, ev.Evaluate(term, plan, /*block=*/{}));
//
// A term is evaluated at a block index that gives every axis the term depends on (its free
// axes: those of a partition not enclosed by a combine/reduce of the same axis) an index in
// [0, degree). Degrees come from the term's partition/replicate nodes at the bound sizes.
// Subterms are memoized per (node, indices of the axes it depends on), so a subterm that does
// not depend on an axis is computed once however many blocks use it.
#ifndef PRISM_EQUIV_TERM_EVAL_H_
#define PRISM_EQUIV_TERM_EVAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/equiv/term.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"
#include "prism/ir/tensor.h"

namespace prism::equiv {

// Axis name -> block index.
using BlockIndex = std::map<std::string, int64_t>;

// What evaluating a term at given sizes needs and costs.
struct TermPlan {
  std::vector<Shape> shapes;                     // per node (per-block shape; {} for scalars)
  std::vector<std::vector<std::string>> axes;    // per node: the axes it depends on, sorted
  std::map<std::string, int64_t> degrees;        // every axis of the term
  double ops = 0;  // estimated scalar operations of one evaluation (all blocks)
};

class TermEvaluator {
 public:
  // `ctx` (outlives the evaluator) holds the expressions of symbolic sizes; `sizes` binds
  // their variables.
  TermEvaluator(const ExprContext* ctx, Assignment sizes);

  // Binds input leaf `name`.
  void SetInput(absl::string_view name, Tensor value);
  // Shapes, axes and cost of `t` (whose inputs must be bound). InvalidArgument naming the
  // node when `t` is ill-formed at these sizes, e.g. "(partition X 1 @x 3): dim 1 of size 64
  // is not divisible by 3", or when an input or a variable is not bound.
  absl::StatusOr<TermPlan> Plan(const Term& t) const;
  // The value of `t` at `block` (which must give an index to every axis of plan.axes of the
  // root). `plan` must be Plan(t).
  absl::StatusOr<Tensor> Evaluate(const Term& t, const TermPlan& plan, const BlockIndex& block) const;

 private:
  const ExprContext* ctx_;
  Assignment sizes_;
  std::map<std::string, Tensor> inputs_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_TERM_EVAL_H_
