#include "prism/expr/eval.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/status.h"

namespace prism {

int64_t FloorDivInt(int64_t a, int64_t b) {
  PRISM_CHECK(b != 0, "FloorDivInt by zero");
  PRISM_CHECK(!(a == std::numeric_limits<int64_t>::min() && b == -1), "FloorDivInt overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  PRISM_CHECK(b != 0, "FloorModInt by zero");
  if (b == -1) return 0;  // avoids INT64_MIN % -1
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

namespace internal {

// Evaluates bottom-up with memoization (expressions are DAGs). Booleans are 0/1. The memo
// holds successful values only, so it may serve several roots.
class Evaluator {
 public:
  Evaluator(const ExprContext& ctx, const Assignment& assignment)
      : ctx_(ctx), assignment_(assignment) {}

  absl::StatusOr<int64_t> Eval(Expr e) {
    auto it = memo_.find(e);
    if (it != memo_.end()) return it->second;
    absl::StatusOr<int64_t> v = Dispatch(ctx_, e, *this);
    if (v.ok()) memo_.emplace(e, *v);
    return v;
  }

  // ---- one method per kind (Dispatch, expr_kinds.def) -----------------------------------
  absl::StatusOr<int64_t> VisitConst(Expr e) { return ctx_.const_value(e); }
  absl::StatusOr<int64_t> VisitBoolConst(Expr e) { return ctx_.bool_value(e) ? 1 : 0; }
  absl::StatusOr<int64_t> VisitVar(Expr e) {
    auto it = assignment_.find(ctx_.var_name(e));
    if (it == assignment_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unbound variable '", ctx_.var_name(e),
                                                     "' in '", Root(), "'"));
    }
    return it->second;
  }
  absl::StatusOr<int64_t> VisitAdd(Expr e) { return Fold(e, /*mul=*/false); }
  absl::StatusOr<int64_t> VisitMul(Expr e) { return Fold(e, /*mul=*/true); }
  absl::StatusOr<int64_t> VisitFloorDiv(Expr e) { return Divide(e, /*mod=*/false); }
  absl::StatusOr<int64_t> VisitMod(Expr e) { return Divide(e, /*mod=*/true); }
  absl::StatusOr<int64_t> VisitMin(Expr e) {
    PRISM_ASSIGN_OR_RETURN(int64_t a, Eval(ctx_.operand(e, 0)));
    PRISM_ASSIGN_OR_RETURN(int64_t b, Eval(ctx_.operand(e, 1)));
    return std::min(a, b);
  }
  absl::StatusOr<int64_t> VisitMax(Expr e) {
    PRISM_ASSIGN_OR_RETURN(int64_t a, Eval(ctx_.operand(e, 0)));
    PRISM_ASSIGN_OR_RETURN(int64_t b, Eval(ctx_.operand(e, 1)));
    return std::max(a, b);
  }
  absl::StatusOr<int64_t> VisitEq(Expr e) { return Compare(e, [](int64_t a, int64_t b) { return a == b; }); }
  absl::StatusOr<int64_t> VisitNe(Expr e) { return Compare(e, [](int64_t a, int64_t b) { return a != b; }); }
  absl::StatusOr<int64_t> VisitLt(Expr e) { return Compare(e, [](int64_t a, int64_t b) { return a < b; }); }
  absl::StatusOr<int64_t> VisitLe(Expr e) { return Compare(e, [](int64_t a, int64_t b) { return a <= b; }); }
  absl::StatusOr<int64_t> VisitAnd(Expr e) { return Connective(e, /*absorbing=*/0); }
  absl::StatusOr<int64_t> VisitOr(Expr e) { return Connective(e, /*absorbing=*/1); }
  absl::StatusOr<int64_t> VisitNot(Expr e) {
    PRISM_ASSIGN_OR_RETURN(int64_t a, Eval(ctx_.operand(e, 0)));
    return a == 0 ? 1 : 0;
  }

  void set_root(Expr root) { root_ = root; }

 private:
  // The expression being evaluated, for messages; long ones are shortened.
  std::string Root() const {
    std::string text = ctx_.ToString(root_);
    constexpr size_t kMaxChars = 160;
    if (text.size() > kMaxChars) text = absl::StrCat(text.substr(0, kMaxChars - 3), "...");
    return text;
  }

  absl::StatusOr<int64_t> Fold(Expr e, bool mul) {
    int64_t acc = mul ? 1 : 0;
    for (Expr op : ctx_.operands(e)) {
      PRISM_ASSIGN_OR_RETURN(int64_t v, Eval(op));
      int64_t next;
      const bool overflow =
          mul ? __builtin_mul_overflow(acc, v, &next) : __builtin_add_overflow(acc, v, &next);
      if (overflow) {
        return absl::InvalidArgumentError(absl::StrCat("integer overflow in '", ctx_.ToString(e),
                                                       "': ", acc, mul ? " * " : " + ", v));
      }
      acc = next;
    }
    return acc;
  }

  absl::StatusOr<int64_t> Divide(Expr e, bool mod) {
    PRISM_ASSIGN_OR_RETURN(int64_t a, Eval(ctx_.operand(e, 0)));
    PRISM_ASSIGN_OR_RETURN(int64_t b, Eval(ctx_.operand(e, 1)));
    if (b == 0) {
      return absl::InvalidArgumentError(absl::StrCat("division by zero in '", ctx_.ToString(e),
                                                     "': the divisor '",
                                                     ctx_.ToString(ctx_.operand(e, 1)), "' is 0"));
    }
    if (mod) return FloorModInt(a, b);
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      return absl::InvalidArgumentError(absl::StrCat("integer overflow in '", ctx_.ToString(e),
                                                     "': ", a, " floordiv ", b));
    }
    return FloorDivInt(a, b);
  }

  template <typename Op>
  absl::StatusOr<int64_t> Compare(Expr e, Op op) {
    PRISM_ASSIGN_OR_RETURN(int64_t a, Eval(ctx_.operand(e, 0)));
    PRISM_ASSIGN_OR_RETURN(int64_t b, Eval(ctx_.operand(e, 1)));
    return op(a, b) ? 1 : 0;
  }

  // And (absorbing 0) / Or (absorbing 1): an absorbing operand decides even if another
  // operand has an error, so the result does not depend on operand order.
  absl::StatusOr<int64_t> Connective(Expr e, int64_t absorbing) {
    absl::Status first_error;
    for (Expr op : ctx_.operands(e)) {
      absl::StatusOr<int64_t> v = Eval(op);
      if (!v.ok()) {
        if (first_error.ok()) first_error = v.status();
        continue;
      }
      if (*v == absorbing) return absorbing;
    }
    if (!first_error.ok()) return first_error;
    return 1 - absorbing;
  }

  const ExprContext& ctx_;
  const Assignment& assignment_;
  Expr root_;
  absl::flat_hash_map<Expr, int64_t> memo_;
};

}  // namespace internal

absl::StatusOr<int64_t> Evaluate(const ExprContext& ctx, Expr e, const Assignment& assignment) {
  internal::Evaluator ev(ctx, assignment);
  ev.set_root(e);
  return ev.Eval(e);
}

AssignmentEvaluator::AssignmentEvaluator(const ExprContext& ctx, const Assignment& assignment)
    : ctx_(ctx), impl_(std::make_unique<internal::Evaluator>(ctx, assignment)) {}

AssignmentEvaluator::~AssignmentEvaluator() = default;

absl::StatusOr<int64_t> AssignmentEvaluator::Evaluate(Expr e) {
  impl_->set_root(e);
  return impl_->Eval(e);
}

absl::StatusOr<int64_t> AssignmentEvaluator::EvaluateInt(Expr e) {
  PRISM_CHECK(ctx_.sort(e) == Sort::kInt, "EvaluateInt of a boolean: ", ctx_.ToString(e));
  return Evaluate(e);
}

absl::StatusOr<bool> AssignmentEvaluator::EvaluateBool(Expr e) {
  PRISM_CHECK(ctx_.sort(e) == Sort::kBool, "EvaluateBool of an integer: ", ctx_.ToString(e));
  PRISM_ASSIGN_OR_RETURN(int64_t v, Evaluate(e));
  return v != 0;
}

CompiledExprs::CompiledExprs(const ExprContext& ctx, absl::Span<const Expr> roots,
                             absl::Span<const Expr> vars)
    : num_vars_(vars.size()) {
  absl::flat_hash_map<Expr, int64_t> var_index;
  for (size_t i = 0; i < vars.size(); ++i) {
    PRISM_CHECK(ctx.kind(vars[i]) == ExprKind::kVar, "CompiledExprs: vars[", i,
                "] is not a variable: ", ctx.ToString(vars[i]));
    PRISM_CHECK(var_index.emplace(vars[i], static_cast<int64_t>(i)).second,
                "CompiledExprs: variable '", ctx.var_name(vars[i]), "' is listed twice");
  }
  const std::vector<Expr> order = PostOrder(ctx, roots);
  absl::flat_hash_map<Expr, uint32_t> index;
  index.reserve(order.size());
  nodes_.reserve(order.size());
  for (Expr e : order) {
    Node n;
    n.kind = ctx.kind(e);
    switch (n.kind) {
      case ExprKind::kConst: n.payload = ctx.const_value(e); break;
      case ExprKind::kBoolConst: n.payload = ctx.bool_value(e) ? 1 : 0; break;
      case ExprKind::kVar: {
        auto it = var_index.find(e);
        n.payload = it == var_index.end() ? -1 : it->second;
        break;
      }
      default: {
        n.first = static_cast<uint32_t>(operands_.size());
        for (Expr op : ctx.operands(e)) operands_.push_back(index.at(op));
        n.count = static_cast<uint32_t>(operands_.size()) - n.first;
      }
    }
    index.emplace(e, static_cast<uint32_t>(nodes_.size()));
    nodes_.push_back(n);
  }
  roots_.reserve(roots.size());
  for (Expr r : roots) roots_.push_back(index.at(r));
}

int64_t CompiledExprs::value(const Scratch& scratch, size_t root) const {
  PRISM_CHECK(ok(scratch, root), "CompiledExprs::value of root ", root, ", which failed");
  return scratch.value[roots_[root]];
}

void CompiledExprs::Run(absl::Span<const int64_t> values, Scratch& scratch) const {
  PRISM_CHECK(values.size() == num_vars_, "CompiledExprs::Run with ", values.size(),
              " values for ", num_vars_, " variables");
  scratch.value.resize(nodes_.size());
  scratch.ok.resize(nodes_.size());
  int64_t* const val = scratch.value.data();
  uint8_t* const ok = scratch.ok.data();
  const uint32_t* const ops = operands_.data();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    const uint32_t* o = ops + n.first;
    int64_t v = 0;
    bool good = true;
    // The semantics of Evaluator's Visit* above: strict everywhere but And/Or, whose
    // absorbing operand decides even when another operand failed.
    switch (n.kind) {
      case ExprKind::kConst:
      case ExprKind::kBoolConst:
        v = n.payload;
        break;
      case ExprKind::kVar:
        good = n.payload >= 0;
        if (good) v = values[static_cast<size_t>(n.payload)];
        break;
      case ExprKind::kAdd:
      case ExprKind::kMul: {
        const bool mul = n.kind == ExprKind::kMul;
        v = mul ? 1 : 0;
        for (uint32_t k = 0; k < n.count && good; ++k) {
          good = ok[o[k]] != 0 && !(mul ? __builtin_mul_overflow(v, val[o[k]], &v)
                                        : __builtin_add_overflow(v, val[o[k]], &v));
        }
        break;
      }
      case ExprKind::kFloorDiv:
      case ExprKind::kMod: {
        const int64_t a = val[o[0]], b = val[o[1]];
        good = ok[o[0]] != 0 && ok[o[1]] != 0 && b != 0;
        if (!good) break;
        if (n.kind == ExprKind::kMod) {
          v = FloorModInt(a, b);
        } else {
          good = !(a == std::numeric_limits<int64_t>::min() && b == -1);
          if (good) v = FloorDivInt(a, b);
        }
        break;
      }
      case ExprKind::kMin:
      case ExprKind::kMax:
      case ExprKind::kEq:
      case ExprKind::kNe:
      case ExprKind::kLt:
      case ExprKind::kLe: {
        const int64_t a = val[o[0]], b = val[o[1]];
        good = ok[o[0]] != 0 && ok[o[1]] != 0;
        switch (n.kind) {
          case ExprKind::kMin: v = std::min(a, b); break;
          case ExprKind::kMax: v = std::max(a, b); break;
          case ExprKind::kEq: v = a == b; break;
          case ExprKind::kNe: v = a != b; break;
          case ExprKind::kLt: v = a < b; break;
          default: v = a <= b; break;
        }
        break;
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        const int64_t absorbing = n.kind == ExprKind::kAnd ? 0 : 1;
        bool decided = false, failed = false;
        for (uint32_t k = 0; k < n.count; ++k) {
          if (ok[o[k]] == 0) {
            failed = true;
          } else if (val[o[k]] == absorbing) {
            decided = true;
            break;
          }
        }
        v = decided ? absorbing : 1 - absorbing;
        good = decided || !failed;
        break;
      }
      case ExprKind::kNot:
        good = ok[o[0]] != 0;
        v = val[o[0]] == 0 ? 1 : 0;
        break;
    }
    val[i] = good ? v : 0;
    ok[i] = good ? 1 : 0;
  }
}

absl::StatusOr<int64_t> EvaluateInt(const ExprContext& ctx, Expr e, const Assignment& assignment) {
  PRISM_CHECK(ctx.sort(e) == Sort::kInt, "EvaluateInt of a boolean: ", ctx.ToString(e));
  return Evaluate(ctx, e, assignment);
}

absl::StatusOr<bool> EvaluateBool(const ExprContext& ctx, Expr e, const Assignment& assignment) {
  PRISM_CHECK(ctx.sort(e) == Sort::kBool, "EvaluateBool of an integer: ", ctx.ToString(e));
  PRISM_ASSIGN_OR_RETURN(int64_t v, Evaluate(ctx, e, assignment));
  return v != 0;
}

}  // namespace prism
