// The SMT layer: one Z3 context + solver per worker, used incrementally (push/pop), behind an
// interface that exposes no Z3 type. Every query is named and budgeted, answers a Verdict with
// a reason, names the tracked assertions of its unsat core, returns models as assignments, is
// counted in per-name statistics, and can be dumped as a standalone SMT-LIB2 file that the
// `z3` command re-checks with the same answer.
//
//   smt::Solver s;
//   smt::Term F = *s.Symbol("F", smt::SortKind::kInt);
//   smt::Term smem = *s.Symbol("smem_bytes", smt::SortKind::kInt);
//   s.Push();
//   PRISM_RETURN_IF_ERROR(s.Declare(F));
//   PRISM_RETURN_IF_ERROR(s.Define(smem, s.Mul({s.Int(512), F})));          // define-fun
//   PRISM_RETURN_IF_ERROR(s.Assert(s.And({s.Ge(F, s.Int(1)), s.Le(F, s.Int(1024))})));
//   PRISM_RETURN_IF_ERROR(s.AssertTracked("smem_capacity", s.Le(smem, s.Int(232448))));
//   smt::CheckResult r = s.Check("example", smt::Budget{});
//   // r.verdict == Verdict::kRefuted (satisfiable), r.model == {{"F", ...}}
//   std::string file = s.ToSmtLib2("example", r.verdict);                  // for `z3 FILE`
//   s.Pop();
//
// Semantics of a check: the conjunction of every assertion in scope (tracked ones included,
// with definitions expanded) is tested for satisfiability. kProved = unsatisfiable (the
// property "no assignment satisfies all of these" is proved; `core` lists the labels of a
// subset of tracked assertions that is already unsatisfiable together with the untracked
// ones); kRefuted = satisfiable (`model` is a witness); kUnknown = budget exhausted or the
// solver is incomplete (`reason` is Z3's reason_unknown, or "zero budget").
//
// Terms: a Term is a handle into its Solver. Terms created inside a Push() scope are released
// by the matching Pop() and must not be used afterwards; terms created at depth 0 live as long
// as the Solver. Symbols are named constants; within a scope a symbol is either declared (free,
// `declare-const`) or defined (a macro, `define-fun name () Sort body`). Assertions may mention
// defined symbols; they are expanded before reaching Z3, and the dump keeps them as written.
//
// Thread safety: none. Use one Solver per worker thread.
#ifndef PRISM_SMT_SOLVER_H_
#define PRISM_SMT_SOLVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/smt/compiled_term.h"
#include "prism/smt/verdict.h"

namespace prism::smt {

enum class SortKind : uint8_t { kBool, kInt, kReal };
// "Bool", "Int", "Real" (the SMT-LIB sort names).
absl::string_view SortName(SortKind sort);

class Solver;

// A handle to an uninterpreted function Real^arity -> Real of one Solver (DeclareFunction).
class Function {
 public:
  Function() = default;
  bool valid() const { return id_ != kInvalid; }
  friend bool operator==(Function a, Function b) { return a.id_ == b.id_; }

 private:
  friend class Solver;
  static constexpr uint32_t kInvalid = 0xffffffffu;
  explicit Function(uint32_t id) : id_(id) {}
  uint32_t id_ = kInvalid;
};

// A handle to a term of one Solver (see the file comment for its lifetime).
class Term {
 public:
  Term() = default;
  bool valid() const { return id_ != kInvalid; }
  uint32_t id() const { return id_; }
  friend bool operator==(Term a, Term b) { return a.id_ == b.id_; }
  friend bool operator!=(Term a, Term b) { return a.id_ != b.id_; }

 private:
  friend class Solver;
  static constexpr uint32_t kInvalid = 0xffffffffu;
  explicit Term(uint32_t id) : id_(id) {}
  uint32_t id_ = kInvalid;
};

// One monomial `(num / den) · product` of a polynomial (Solver::Monomials); `product` is
// invalid for the constant monomial.
struct Monomial {
  int64_t num = 0;
  int64_t den = 1;  // > 0
  Term product;
  // The factors of `product` (a power x^k with a literal k >= 1 as k factors x), in order.
  std::vector<Term> factors;
};

// The resources one query may use. Z3's rlimit is deterministic (the same rlimit gives the same
// answer on every run; DEPS.md) and is the primary limit; roughly 1,000 units per millisecond
// on the queries prism makes. timeout_ms adds a wall-clock limit when > 0; the default 5 s is a
// safety net for Z3 code that does not count toward the rlimit (a pruning query of a bias-add
// family ran 250 s under rlimit 2·10⁶ and stopped after the 5 s; the twelve workloads' searches
// take the same time with and without it, docs/performance.md 2026-12-05 fourth session). A
// query stopped by either limit answers kUnknown, which never prunes. A budget whose rlimit is
// <= 0 is the zero budget: Check answers kUnknown("zero budget") without calling Z3.
struct Budget {
  int64_t timeout_ms = 5000;
  int64_t rlimit = 2'000'000;

  static Budget Zero() { return Budget{0, 0}; }
  bool is_zero() const { return rlimit <= 0; }
};

struct QueryStats {
  std::string name;
  Verdict verdict = Verdict::kUnknown;
  double seconds = 0;
  int64_t rlimit_used = 0;  // Z3 resource units consumed by this check
};

struct CheckResult {
  Verdict verdict = Verdict::kUnknown;
  std::string reason;
  // kProved: labels of the tracked assertions in the unsat core, sorted.
  std::vector<std::string> core;
  // kRefuted: the value of every declared Int symbol in scope, by name.
  std::map<std::string, int64_t> model;
  // kRefuted: the value of every declared Real symbol in scope, by name, as a decimal
  // ("0.5", "-1.25", "0.3333333333?" when not a finite decimal: 10 digits then '?').
  std::map<std::string, std::string> real_model;
  // kRefuted: the value in the model of each term of CheckOptions::evaluate, in order, in the
  // same decimal form (Bool as "true"/"false").
  std::vector<std::string> evaluated;
  QueryStats stats;
};

// Aggregated statistics of many queries (mergeable across workers; reaches the report).
struct SolverStats {
  struct Entry {
    int64_t queries = 0;
    int64_t proved = 0;
    int64_t refuted = 0;
    int64_t unknown = 0;
    double seconds = 0;
    int64_t rlimit_used = 0;
    double max_seconds = 0;
  };
  Entry total;
  std::map<std::string, Entry> by_name;  // query name -> aggregate

  void Add(const QueryStats& q);
  void Merge(const SolverStats& other);
  // One line per query name: "name: 12 queries (3 proved, 9 refuted, 0 unknown), 4.1 ms, ..."
  std::string ToString() const;
};

// A 0-ary `define-fun` read from a theory file by ParseDefinitions.
struct ParsedDefinition {
  std::string name;
  SortKind sort = SortKind::kInt;
  Term symbol;                        // the symbol the definition defines
  Term body;                          // as written (other 0-ary definitions stay symbols)
  std::vector<std::string> comments;  // the comment block directly above the definition
  std::string verbatim;               // the define-fun's text
  int line = 0;
};

// The value of a metadata field in a theory file's comment block (ParsedDefinition::comments):
// the text after `key` (e.g. "soundness:") up to the next "word:" line, joined with spaces;
// empty if absent.
std::string CommentField(const std::vector<std::string>& comments, absl::string_view key);

struct CheckOptions {
  // Extra Bool terms assumed for this check only (never part of a core).
  std::vector<Term> assumptions;
  // Compute a core on unsat (a second pass; see Solver::Check).
  bool want_core = true;
  // When set, only the tracked assertions with these labels take part in this check (and
  // in the matching dump); the others are ignored. Unknown labels are ignored.
  std::optional<std::vector<std::string>> labels;
  // Relaxed check: symbols bound with DefineRelaxable are free within their bounds. Only an
  // unsat answer is meaningful for the unrelaxed assertions (a model may not be one).
  bool relax = false;
  // On a satisfiable answer, the model's value of each of these terms is returned in
  // CheckResult::evaluated (model completion: unconstrained parts take a default value).
  std::vector<Term> evaluate;
};

struct SolverOptions {
  // Z3's random seed; fixed so that answers and models are reproducible.
  uint32_t random_seed = 0;
  // Minimise unsat cores (Z3's smt.core.minimize): each label in a core is then needed, so
  // the rules a pruning decision reports are the ones that decided it. Costs extra work on
  // unsat answers only. Dumps carry the same option.
  bool minimize_cores = true;
};

class Solver {
 public:
  explicit Solver(SolverOptions options = {});
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // ---- terms ------------------------------------------------------------------------------
  Term Int(int64_t value);
  // num / den as a Real; den != 0 (PRISM_CHECK).
  Term Real(int64_t num, int64_t den = 1);
  Term Bool(bool value);
  // The exact value of the finite double `v` as a Real (PRISM_CHECK finite): 0.1 is
  // 3602879701896397/36028797018963968, not 1/10.
  Term RealFromDouble(double v);
  // The named constant `name` of sort `sort` (the same handle while it is alive). Errors:
  // InvalidArgument if `name` is not an SMT-LIB simple symbol ([A-Za-z~!@$%^&*_+=<>.?/-]
  // followed by those or digits), or if it was used before with a different sort.
  absl::StatusOr<Term> Symbol(absl::string_view name, SortKind sort);
  SortKind sort(Term t) const;
  // The term in SMT-LIB2 syntax, as written (definitions not expanded).
  std::string ToString(Term t) const;
  // The names of the symbols `t` mentions as written (definitions not expanded), sorted.
  std::vector<std::string> SymbolsOf(Term t) const;
  // The value of a numeral term (after constant folding), if it is an Int numeral.
  std::optional<int64_t> IntValue(Term t) const;

  // Arithmetic. Int and Real operands may be mixed only through ToReal. Sorts are PRISM_CHECKed
  // (a mismatch is a bug in the caller).
  Term Add(absl::Span<const Term> operands);
  Term Mul(absl::Span<const Term> operands);
  Term Sub(Term a, Term b);
  Term Neg(Term a);
  // floor(a / b) and a - b * floor(a / b) on Int (the sign of the result follows b, like
  // expr/'s FloorDiv and Mod). With divisor_positive the caller promises b > 0 and the plain
  // SMT-LIB div/mod is used (equal to floor semantics for b > 0, and cheaper); otherwise the
  // encoding case-splits on the sign of b. b = 0 leaves the value unspecified (SMT-LIB).
  Term FloorDiv(Term a, Term b, bool divisor_positive = false);
  Term Mod(Term a, Term b, bool divisor_positive = false);
  Term Min(Term a, Term b);
  Term Max(Term a, Term b);
  Term ToReal(Term a);
  // Real division a / b.
  Term RealDiv(Term a, Term b);
  Term Ite(Term cond, Term then_term, Term else_term);
  Term Eq(Term a, Term b);
  Term Le(Term a, Term b);
  Term Lt(Term a, Term b);
  Term Ge(Term a, Term b) { return Le(b, a); }
  Term Gt(Term a, Term b) { return Lt(b, a); }
  Term And(absl::Span<const Term> operands);
  Term Or(absl::Span<const Term> operands);
  Term Not(Term a);
  Term Implies(Term a, Term b);

  // ---- uninterpreted functions ------------------------------------------------------------
  // Declares the uninterpreted function `name`: Real^arity -> Real (arity >= 1). Functions
  // live as long as the Solver (Pop does not release them) and every dump declares them all
  // (`declare-fun`), so a dump stays a standalone script. The solver knows nothing about a
  // function but congruence (equal arguments give equal values): callers assert the axioms
  // they need as ground facts about the applications they make (e.g. exp(x) > 0).
  // InvalidArgument if `name` is not a simple symbol, is already a symbol or a function, or
  // arity < 1.
  absl::StatusOr<Function> DeclareFunction(absl::string_view name, int arity);
  // f(args); PRISM_CHECK that the arity matches and every argument is Real.
  Term Apply(Function f, absl::Span<const Term> args);

  // ---- normal forms -------------------------------------------------------------------------
  // `t` (Int or Real) as a sum of monomials with rational coefficients, by Z3's simplifier
  // with products of sums expanded: (x - m) + 2·(m + y) gives {1·x, 1·m, 2·y} in some fixed
  // order, a constant as a monomial with an invalid product. Non-polynomial subterms
  // (divisions, function applications, ite) are opaque factors. A coefficient that does not
  // fit int64 makes the whole term one monomial 1·t. Defined symbols are not expanded.
  std::vector<Monomial> Monomials(Term t);

  // ---- theory files -------------------------------------------------------------------------
  // Reads SMT-LIB2 theory text made of `declare-const` (symbols the text expects; created with
  // Symbol), function `define-fun`s with arguments (kept as macros for this and later parses,
  // expanded wherever used), and 0-ary `define-fun`s, returned in order as definitions whose
  // bodies refer to other 0-ary definitions and to symbols by name (bind them with Define /
  // Declare before asserting). Every other command is rejected. Errors: InvalidArgument
  // "<origin>:<line>: ..." with Z3's message for ill-sorted or unknown names.
  absl::StatusOr<std::vector<ParsedDefinition>> ParseDefinitions(absl::string_view origin,
                                                                 absl::string_view smtlib);

  // ---- scopes and bindings ------------------------------------------------------------------
  void Push();
  // Undoes everything since the matching Push (bindings, assertions, terms).
  // PRISM_CHECK that a scope is open.
  void Pop();
  int depth() const;

  // Binds `symbol` (a Symbol term) in the current scope as a free constant. InvalidArgument if
  // it is already bound in scope.
  absl::Status Declare(Term symbol);
  // Binds `symbol` to `body` (same sort) in the current scope: `(define-fun name () Sort body)`.
  // `comment` is printed above it in dumps. InvalidArgument if already bound, on a sort
  // mismatch, or if `body` mentions a symbol that is not bound in scope (the message names it).
  absl::Status Define(Term symbol, Term body, absl::string_view comment = "");
  // Like Define, and additionally lo <= symbol <= hi, which the caller guarantees for EVERY
  // value of the symbols `body` mentions (not only on a domain). A relaxed check (see
  // CheckOptions::relax) treats the symbol as free within [lo, hi]: a superset of the models,
  // so an unsat answer there is still a proof, and products of such symbols are far easier for
  // Z3 than products of the case splits in `body`.
  absl::Status DefineRelaxable(Term symbol, Term body, int64_t lo, int64_t hi,
                               absl::string_view comment = "");
  bool IsBound(absl::string_view name) const;

  // Asserts a Bool term in the current scope. InvalidArgument if it mentions an unbound symbol.
  absl::Status Assert(Term formula);
  // Asserts a Bool term under `label` (an SMT-LIB simple symbol not otherwise used): an unsat
  // core names the labels of the tracked assertions it needs. InvalidArgument on a bad or
  // duplicate label or an unbound symbol.
  absl::Status AssertTracked(absl::string_view label, Term formula);

  // ---- queries ------------------------------------------------------------------------------
  // Checks the assertions in scope under `budget`; counted in stats() under `query_name`.
  //
  // How a check runs: pass 1 asserts the (selected) tracked assertions plainly and decides —
  // Z3 preprocesses top-level assertions but not assumption-guarded ones, so this is much
  // faster than a tracked check. Only when pass 1 answers unsat and a core is wanted, pass 2
  // re-checks with each tracked assertion behind an indicator literal to extract the core; if
  // pass 2 runs out of budget, every selected label is reported (a sound superset). The budget
  // applies to each pass.
  CheckResult Check(absl::string_view query_name, const Budget& budget,
                    const CheckOptions& options);
  CheckResult Check(absl::string_view query_name, const Budget& budget) {
    return Check(query_name, budget, CheckOptions{});
  }

  // The current scope stack as a standalone SMT-LIB2 script of the check that `options`
  // describe: options (:produce-unsat-cores true), declarations and the definitions the
  // assertions need, in binding order (relaxable ones as bounded declare-consts when
  // options.relax), assertions (tracked ones as `(! F :named label)`, only those in
  // options.labels when given), `(check-sat)`, then `(get-unsat-core)` if `expected` is kProved,
  // `(get-model)` if kRefuted. `header` lines are written first as comments. Assumptions are
  // not written.
  std::string ToSmtLib2(absl::string_view query_name, std::optional<Verdict> expected,
                        absl::Span<const std::string> header = {},
                        const CheckOptions& options = CheckOptions()) const;

  // ---- concrete evaluation ------------------------------------------------------------------
  // Compiles `t` with every definition in scope expanded; the symbols left must all be among
  // `inputs` (InvalidArgument naming the first that is not). Sorts of inputs must be Int.
  absl::StatusOr<CompiledTerm> Compile(Term t, absl::Span<const std::string> inputs) const;
  // Evaluates `t` by Z3's simplifier after expanding definitions in scope and replacing the
  // symbols in `values` by numerals: an independent (slow) oracle for tests and reports.
  // Returns the value as a double (Bool as 0/1). InvalidArgument if symbols remain.
  absl::StatusOr<double> EvaluateWithZ3(Term t,
                                        const absl::flat_hash_map<std::string, int64_t>& values) const;

  const SolverStats& stats() const;
  void ResetStats();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prism::smt

#endif  // PRISM_SMT_SOLVER_H_
