// Validation of rewrite rules with Z3 (DESIGN.md §4, issue 5 item 4): a rule is instantiated
// at small concrete shapes that satisfy its side conditions, both sides are evaluated
// elementwise into real-valued SMT terms (tensors as arrays of Real symbols), and Z3 is asked
// whether some element differs. Unsat at every instantiation = kProved; sat at one =
// kRefuted with the differing element and the model; otherwise kUnknown.
//
//   ExprContext ctx;
//   PRISM_ASSIGN_OR_RETURN(RuleSet rules, LoadDefaultRules(ctx));
//   for (const RuleCheckResult& r : ValidateRules(rules, ctx)) {
//     std::cout << r.rule << ": " << VerdictName(r.verdict) << " " << r.reason << "\n";
//   }
//
// Instantiation. Every variable gets a kind from the operand positions it occupies on the
// left side (term_ops.def: t tensor, d/k dim, c/eps real, ax axis, n degree). A seeded random
// search draws candidates — tensor variables as input leaves of rank 0–3 with sizes 1, 2, 3
// (or, when the rule mentions axes, as a partition of a larger leaf over one of them, so that
// the value differs per block), dims in [0, 3), degrees 2 and 3, reals 0.5 and -1.5, a
// distinct axis per axis variable — and keeps those whose left side is well-formed and whose
// conditions hold, computed exactly as the prover computes them (ComputeTermData,
// EvaluateCondition). The right side must then be well-formed with the left side's shape, or
// the rule is refuted as under-guarded. Candidates are ranked (sizes other than 1, distinct
// sizes, per-block dependence) and the best `instantiations` that differ are checked.
//
// Encoding (docs/rule_format.md §6). Elements are Real terms; matmul, sums, means, concat,
// partition/combine/reduce/replicate are exact; max and reduce_max are `ite` chains; relu is
// ite(x > 0, x, 0); silu and gelu are uninterpreted functions; sqrt is an uninterpreted
// function with the ground axioms sqrt(u)·sqrt(u) = u and sqrt(u) ≥ 0 for each application
// (whose argument is assumed ≥ 0: sqrt is defined there only); rsqrt(u) = 1/sqrt(u); exp is
// canonicalized with exp(Σ cᵢ·mᵢ) = Π exp(mᵢ)^cᵢ over the monomials of its argument (small
// integer cᵢ; other coefficients stay inside the atom) with every atom asserted > 0 — the
// laws exp(a + b) = exp(a)·exp(b) and exp(−a) = 1/exp(a) applied exhaustively. Every divisor
// is assumed non-zero: a rule claims equality where both sides are defined.
//
// Thread safety: none (each call makes its own Solver).
#ifndef PRISM_EQUIV_RULE_CHECK_H_
#define PRISM_EQUIV_RULE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "prism/equiv/rewrite.h"
#include "prism/equiv/rules.h"
#include "prism/expr/expr.h"
#include "prism/smt/verdict.h"

namespace prism::equiv {

struct RuleCheckOptions {
  // Distinct instantiations checked per rule (fewer if the search finds fewer).
  int instantiations = 2;
  // Random candidates drawn per rule.
  int max_tries = 4000;
  uint64_t seed = 0x5eed;
  // Z3 budget of each query (deterministic rlimit; a wall-clock cap as a safety net).
  int64_t rlimit = 20'000'000;
  int64_t timeout_ms = 20'000;
  // Keep the SMT-LIB2 script of each query in RuleCheckResult::instances.
  bool keep_smtlib = false;
};

struct RuleInstanceCheck {
  std::string lhs;      // the instantiated left side, e.g. "(sum (partition in_t 1 @x 2) 1)"
  std::string rhs;      // the instantiated right side
  std::string shapes;   // "in_t: [2, 6]; ..." the leaf shapes
  prism::Verdict verdict = prism::Verdict::kUnknown;
  std::string reason;
  double seconds = 0;
  std::string smtlib;   // when RuleCheckOptions::keep_smtlib
};

struct RuleCheckResult {
  std::string rule;
  std::string location;  // "file:line:col"
  prism::Verdict verdict = prism::Verdict::kUnknown;
  // kProved: "N instantiations: ..."; kRefuted: the counterexample (instance, element, both
  // values, leaf values); kUnknown: why.
  std::string reason;
  double seconds = 0;
  std::vector<RuleInstanceCheck> instances;
};

// Validates one rule (its forward half; a `<=>` rule states one equality).
RuleCheckResult ValidateRule(const Rewrite& rule, ExprContext& ctx,
                             const RuleCheckOptions& options = {});
// Every rule of `rules` once, in file order.
std::vector<RuleCheckResult> ValidateRules(const RuleSet& rules, ExprContext& ctx,
                                           const RuleCheckOptions& options = {});

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_RULE_CHECK_H_
