// Encodes expr/ expressions (symbolic integers with domains) as terms of an smt::Solver.
//
//   smt::Solver solver;
//   smt::ExprEncoder enc(solver, ctx);
//   solver.Push();
//   PRISM_RETURN_IF_ERROR(solver.Declare(*solver.Symbol("F", smt::SortKind::kInt)));
//   PRISM_ASSIGN_OR_RETURN(smt::Term dom, enc.DomainConstraint(F));
//   PRISM_ASSIGN_OR_RETURN(smt::Term smem, enc.Encode(smem_expr));
//   ...
//   solver.Pop();   // the encoder's cached terms die with the scope: make a new encoder
//
// Semantics (Int sort, exact over the integers, like the SMT layer):
//   Add, Mul, Min, Max (via ite), comparisons and connectives map one to one.
//   FloorDiv / Mod have floor semantics (expr_kinds.def). When the divisor is provably positive
//   (a positive constant, a variable whose domain lies in [1, ...), or sums, products, min and
//   max of those) the plain SMT-LIB div/mod is used, which equals floor semantics there; family
//   parameters are positive, so this is the common case. Otherwise the sign is case-split
//   (Solver::FloorDiv) and "divisor != 0" is recorded in definedness(): a division by zero is
//   an evaluation error in expr/, so an assignment making a divisor 0 is not an instance, and
//   callers assert definedness() to exclude it. A constant zero divisor is an error.
//
// Encodings that keep Z3 fast (/work/shared/DEPS.md):
//   * Domains: range(lo, hi) as two bounds; every other domain with at most
//     max_enumerated_domain members as bounds plus a disjunction of equalities; larger
//     divisors(n) domains as bounds plus "n mod v = 0".
//   * A Bool subterm over a single variable (e.g. "(4096 floordiv F) mod 16 == 0") becomes
//     "F is one of the values where it holds", computed by evaluating it on the domain.
//   * An Int subterm over a single variable with at most max_table_size domain values that
//     contains a division or modulo by a non-constant becomes a table (an ite chain over the
//     sorted domain), so no symbolic divisor reaches Z3.
//   Tables and filters are exact ON THE DOMAIN: assert DomainConstraint for every variable.
//   Off the domain a table still takes one of its entries, so the bounds that
//   relaxable_tables declares hold for every value.
#ifndef PRISM_SMT_ENCODE_H_
#define PRISM_SMT_ENCODE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "prism/expr/expr.h"
#include "prism/smt/solver.h"

namespace prism::smt {

struct EncodeOptions {
  int64_t max_enumerated_domain = 4096;
  int64_t max_table_size = 64;
  bool tabulate = true;  // false: encode every node literally (for tests and comparisons)
  // Bind each Int table to a symbol "table!<n>" with Solver::DefineRelaxable (bounds: the
  // least and greatest entry), so that relaxed checks can treat it as a bounded variable.
  bool relaxable_tables = true;
};

class ExprEncoder {
 public:
  // `solver` and `ctx` must outlive the encoder; terms it returns live in the solver's current
  // scope.
  ExprEncoder(Solver& solver, const ExprContext& ctx, EncodeOptions options = {});

  // The term for `e` (Int or Bool sort). Variables become Solver::Symbol(name, kInt); the
  // caller binds them (Declare). Errors: InvalidArgument for a division by the constant 0 or a
  // symbol error from the solver.
  absl::StatusOr<Term> Encode(Expr e);

  // Membership of the variable `var` (a Var node) in its domain: DomainBounds(var) and, unless
  // the domain is a range, DomainMembership(var).
  absl::StatusOr<Term> DomainConstraint(Expr var);
  // lo <= var <= hi for the least and greatest member: a cheap, linear relaxation.
  absl::StatusOr<Term> DomainBounds(Expr var);
  // The exact membership beyond the bounds (a disjunction of equalities and ranges, or
  // "n mod var = 0" for a huge divisors(n)); nullopt for a range, whose bounds are exact.
  absl::StatusOr<std::optional<Term>> DomainMembership(Expr var);

  // "divisor != 0" for every division or modulo encoded so far whose divisor is not provably
  // positive (and not tabulated), in encoding order.
  const std::vector<Term>& definedness() const { return definedness_; }

 private:
  // Per node: the single variable it depends on (invalid Expr if none), or multi.
  struct VarInfo {
    Expr var;             // valid iff exactly one variable
    bool multi = false;   // more than one variable
    bool symbolic_div = false;  // contains FloorDiv/Mod with a non-constant divisor
  };
  const VarInfo& Info(Expr e);
  bool IsPositive(Expr e);
  absl::StatusOr<Term> EncodeNode(Expr e);
  absl::StatusOr<Term> Tabulate(Expr e, Expr var);

  Solver& solver_;
  const ExprContext& ctx_;
  EncodeOptions options_;
  absl::flat_hash_map<Expr, Term> cache_;
  absl::flat_hash_map<Expr, VarInfo> info_;
  absl::flat_hash_map<Expr, bool> positive_;
  std::vector<Term> definedness_;
  int tables_ = 0;
};

}  // namespace prism::smt

#endif  // PRISM_SMT_ENCODE_H_
