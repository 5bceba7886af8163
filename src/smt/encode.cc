#include "prism/smt/encode.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/expr/eval.h"

namespace prism::smt {

ExprEncoder::ExprEncoder(Solver& solver, const ExprContext& ctx, EncodeOptions options)
    : solver_(solver), ctx_(ctx), options_(options) {}

const ExprEncoder::VarInfo& ExprEncoder::Info(Expr e) {
  if (auto it = info_.find(e); it != info_.end()) return it->second;
  VarInfo info;
  const ExprKind kind = ctx_.kind(e);
  if (kind == ExprKind::kVar) {
    info.var = e;
  } else {
    for (Expr op : ctx_.operands(e)) {
      const VarInfo& o = Info(op);
      info.symbolic_div = info.symbolic_div || o.symbolic_div;
      if (o.multi) {
        info.multi = true;
      } else if (o.var.valid()) {
        if (info.var.valid() && info.var != o.var) info.multi = true;
        info.var = o.var;
      }
    }
    if ((kind == ExprKind::kFloorDiv || kind == ExprKind::kMod) &&
        !ctx_.is_const(ctx_.operand(e, 1))) {
      info.symbolic_div = true;
    }
  }
  if (info.multi) info.var = Expr();
  return info_[e] = info;
}

bool ExprEncoder::IsPositive(Expr e) {
  if (auto it = positive_.find(e); it != positive_.end()) return it->second;
  bool positive = false;
  switch (ctx_.kind(e)) {
    case ExprKind::kConst:
      positive = ctx_.const_value(e) > 0;
      break;
    case ExprKind::kVar:
      positive = ctx_.var_domain(e).Min() >= 1;
      break;
    case ExprKind::kAdd:
    case ExprKind::kMul:
    case ExprKind::kMin:
    case ExprKind::kMax:
      positive = true;
      for (Expr op : ctx_.operands(e)) positive = positive && IsPositive(op);
      break;
    default:
      positive = false;
  }
  return positive_[e] = positive;
}

absl::StatusOr<Term> ExprEncoder::Encode(Expr e) {
  PRISM_CHECK(ctx_.contains(e), "ExprEncoder::Encode of an invalid handle");
  if (auto it = cache_.find(e); it != cache_.end()) return it->second;
  absl::StatusOr<Term> t;
  const VarInfo& info = Info(e);
  const bool unary = options_.tabulate && info.var.valid() && ctx_.kind(e) != ExprKind::kVar;
  if (unary && ctx_.sort(e) == Sort::kBool &&
      ctx_.var_domain(info.var).Size() <= options_.max_enumerated_domain) {
    t = Tabulate(e, info.var);
  } else if (unary && ctx_.sort(e) == Sort::kInt && info.symbolic_div &&
             ctx_.var_domain(info.var).Size() <= options_.max_table_size) {
    t = Tabulate(e, info.var);
  } else {
    t = EncodeNode(e);
  }
  if (!t.ok()) return t.status();
  cache_[e] = *t;
  return *t;
}

absl::StatusOr<Term> ExprEncoder::Tabulate(Expr e, Expr var) {
  absl::StatusOr<std::vector<int64_t>> values = ctx_.var_domain(var).Enumerate();
  if (!values.ok()) return values.status();
  PRISM_ASSIGN_OR_RETURN(Term v, solver_.Symbol(ctx_.var_name(var), SortKind::kInt));
  Assignment a;
  std::vector<std::pair<int64_t, absl::StatusOr<int64_t>>> table;
  table.reserve(values->size());
  for (int64_t x : *values) {
    a[ctx_.var_name(var)] = x;
    table.emplace_back(x, Evaluate(ctx_, e, a));
  }
  // Values where evaluation fails (a division by zero) are not instances: exclude them.
  for (const auto& [x, r] : table) {
    if (!r.ok()) definedness_.push_back(solver_.Not(solver_.Eq(v, solver_.Int(x))));
  }
  if (ctx_.sort(e) == Sort::kBool) {
    std::vector<Term> yes, no;
    for (const auto& [x, r] : table) {
      if (!r.ok()) continue;
      (*r != 0 ? yes : no).push_back(solver_.Eq(v, solver_.Int(x)));
    }
    if (no.empty()) return solver_.Bool(true);
    if (yes.empty()) return solver_.Bool(false);
    return yes.size() <= no.size() ? solver_.Or(yes) : solver_.Not(solver_.Or(no));
  }
  // Int: an ite chain over the sorted domain, with runs of equal results merged:
  // ite(v <= x_1, c_1, ite(v <= x_2, c_2, ... c_k)).
  std::vector<std::pair<int64_t, int64_t>> runs;  // (last domain value of the run, result)
  for (const auto& [x, r] : table) {
    if (!r.ok()) continue;
    if (!runs.empty() && runs.back().second == *r) {
      runs.back().first = x;
    } else {
      runs.emplace_back(x, *r);
    }
  }
  if (runs.empty()) return solver_.Int(0);  // every value is undefined (excluded above)
  Term result = solver_.Int(runs.back().second);
  for (size_t i = runs.size() - 1; i-- > 0;) {
    result = solver_.Ite(solver_.Le(v, solver_.Int(runs[i].first)), solver_.Int(runs[i].second),
                         result);
  }
  if (!options_.relaxable_tables || runs.size() < 2) return result;
  int64_t lo = runs[0].second, hi = runs[0].second;
  for (const auto& [x, value] : runs) {
    lo = std::min(lo, value);
    hi = std::max(hi, value);
  }
  PRISM_ASSIGN_OR_RETURN(Term sym,
                         solver_.Symbol(absl::StrCat("table!", tables_++), SortKind::kInt));
  PRISM_RETURN_IF_ERROR(solver_.DefineRelaxable(sym, result, lo, hi, ctx_.ToString(e)));
  return sym;
}

absl::StatusOr<Term> ExprEncoder::EncodeNode(Expr e) {
  const ExprKind kind = ctx_.kind(e);
  std::vector<Term> ops;
  if (kind != ExprKind::kVar) {
    for (Expr op : ctx_.operands(e)) {
      PRISM_ASSIGN_OR_RETURN(Term t, Encode(op));
      ops.push_back(t);
    }
  }
  switch (kind) {
    case ExprKind::kConst:
      return solver_.Int(ctx_.const_value(e));
    case ExprKind::kBoolConst:
      return solver_.Bool(ctx_.bool_value(e));
    case ExprKind::kVar:
      return solver_.Symbol(ctx_.var_name(e), SortKind::kInt);
    case ExprKind::kAdd:
      return solver_.Add(ops);
    case ExprKind::kMul:
      return solver_.Mul(ops);
    case ExprKind::kFloorDiv:
    case ExprKind::kMod: {
      const Expr divisor = ctx_.operand(e, 1);
      if (ctx_.is_const(divisor) && ctx_.const_value(divisor) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("division by the constant 0 in '", ctx_.ToString(e), "'"));
      }
      const bool positive = IsPositive(divisor);
      if (!positive && !ctx_.is_const(divisor)) {
        definedness_.push_back(solver_.Not(solver_.Eq(ops[1], solver_.Int(0))));
      }
      return kind == ExprKind::kFloorDiv ? solver_.FloorDiv(ops[0], ops[1], positive)
                                         : solver_.Mod(ops[0], ops[1], positive);
    }
    case ExprKind::kMin:
      return solver_.Min(ops[0], ops[1]);
    case ExprKind::kMax:
      return solver_.Max(ops[0], ops[1]);
    case ExprKind::kEq:
      return solver_.Eq(ops[0], ops[1]);
    case ExprKind::kNe:
      return solver_.Not(solver_.Eq(ops[0], ops[1]));
    case ExprKind::kLt:
      return solver_.Lt(ops[0], ops[1]);
    case ExprKind::kLe:
      return solver_.Le(ops[0], ops[1]);
    case ExprKind::kAnd:
      return solver_.And(ops);
    case ExprKind::kOr:
      return solver_.Or(ops);
    case ExprKind::kNot:
      return solver_.Not(ops[0]);
  }
  PRISM_UNREACHABLE("expression kind ", static_cast<int>(kind));
}

absl::StatusOr<Term> ExprEncoder::DomainBounds(Expr var) {
  PRISM_CHECK(ctx_.kind(var) == ExprKind::kVar, "DomainBounds of a non-variable");
  const Domain& d = ctx_.var_domain(var);
  PRISM_ASSIGN_OR_RETURN(Term v, solver_.Symbol(ctx_.var_name(var), SortKind::kInt));
  return solver_.And({solver_.Le(solver_.Int(d.Min()), v), solver_.Le(v, solver_.Int(d.Max()))});
}

absl::StatusOr<std::optional<Term>> ExprEncoder::DomainMembership(Expr var) {
  PRISM_CHECK(ctx_.kind(var) == ExprKind::kVar, "DomainMembership of a non-variable");
  const Domain& d = ctx_.var_domain(var);
  if (d.kind() == Domain::Kind::kRange) return std::nullopt;
  PRISM_ASSIGN_OR_RETURN(Term v, solver_.Symbol(ctx_.var_name(var), SortKind::kInt));
  if (d.Size() <= options_.max_enumerated_domain || d.kind() != Domain::Kind::kDivisorsOf) {
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> values, d.Enumerate());
    if (values.size() == static_cast<size_t>(d.Max() - d.Min() + 1)) return std::nullopt;
    // Contiguous runs become ranges; the rest equalities.
    std::vector<Term> members;
    for (size_t i = 0; i < values.size();) {
      size_t j = i;
      while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
      if (j - i >= 2) {
        members.push_back(solver_.And(
            {solver_.Le(solver_.Int(values[i]), v), solver_.Le(v, solver_.Int(values[j]))}));
        i = j + 1;
      } else {
        members.push_back(solver_.Eq(v, solver_.Int(values[i])));
        ++i;
      }
    }
    return solver_.Or(members);
  }
  // A huge divisors(n) domain: n mod v = 0 (v >= 1 by the bounds).
  return solver_.Eq(solver_.Mod(solver_.Int(d.divisor_of()), v, /*divisor_positive=*/true),
                    solver_.Int(0));
}

absl::StatusOr<Term> ExprEncoder::DomainConstraint(Expr var) {
  PRISM_ASSIGN_OR_RETURN(Term bounds, DomainBounds(var));
  PRISM_ASSIGN_OR_RETURN(std::optional<Term> member, DomainMembership(var));
  return member ? solver_.And({bounds, *member}) : bounds;
}

}  // namespace prism::smt
