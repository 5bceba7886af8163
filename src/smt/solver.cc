// The Z3-backed implementation of smt::Solver (include/prism/smt/solver.h). This file and
// compiled_term.cc / the other files of src/smt/ are the only code in prism that includes z3++.h.
#include "prism/smt/solver.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "sexpr.h"

namespace prism {

absl::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kProved:
      return "proved";
    case Verdict::kRefuted:
      return "refuted";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

namespace smt {
namespace {

bool IsSymbolChar(char c, bool first) {
  if (absl::ascii_isalpha(static_cast<unsigned char>(c))) return true;
  if (!first && absl::ascii_isdigit(static_cast<unsigned char>(c))) return true;
  return absl::string_view("~!@$%^&*_-+=<>.?/").find(c) != absl::string_view::npos;
}

bool IsSimpleSymbol(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsSymbolChar(name[i], i == 0)) return false;
  }
  return true;
}

SortKind KindOf(const z3::sort& s) {
  if (s.is_bool()) return SortKind::kBool;
  if (s.is_real()) return SortKind::kReal;
  return SortKind::kInt;
}

// A model value as text: integers and finite decimals exactly, other rationals with 10
// digits and a trailing '?', Bools as true/false.
std::string ValueText(const z3::expr& v) {
  if (v.is_true()) return "true";
  if (v.is_false()) return "false";
  if (v.is_numeral() || v.is_algebraic()) return v.get_decimal_string(10);
  return v.to_string();
}

}  // namespace

absl::string_view SortName(SortKind sort) {
  switch (sort) {
    case SortKind::kBool:
      return "Bool";
    case SortKind::kInt:
      return "Int";
    case SortKind::kReal:
      return "Real";
  }
  return "Int";
}

std::string CommentField(const std::vector<std::string>& comments, absl::string_view key) {
  return internal::CommentField(comments, key);
}

// ---- statistics -------------------------------------------------------------------------

void SolverStats::Add(const QueryStats& q) {
  for (Entry* e : {&total, &by_name[q.name]}) {
    ++e->queries;
    e->proved += q.verdict == Verdict::kProved;
    e->refuted += q.verdict == Verdict::kRefuted;
    e->unknown += q.verdict == Verdict::kUnknown;
    e->seconds += q.seconds;
    e->rlimit_used += q.rlimit_used;
    e->max_seconds = std::max(e->max_seconds, q.seconds);
  }
}

void SolverStats::Merge(const SolverStats& other) {
  const auto merge = [](Entry& a, const Entry& b) {
    a.queries += b.queries;
    a.proved += b.proved;
    a.refuted += b.refuted;
    a.unknown += b.unknown;
    a.seconds += b.seconds;
    a.rlimit_used += b.rlimit_used;
    a.max_seconds = std::max(a.max_seconds, b.max_seconds);
  };
  merge(total, other.total);
  for (const auto& [name, entry] : other.by_name) merge(by_name[name], entry);
}

std::string SolverStats::ToString() const {
  std::string out;
  const auto line = [&out](absl::string_view name, const Entry& e) {
    absl::StrAppendFormat(&out,
                          "%s: %d queries (%d proved, %d refuted, %d unknown), %.3f ms total, "
                          "%.3f ms max, %d rlimit\n",
                          name, e.queries, e.proved, e.refuted, e.unknown, e.seconds * 1e3,
                          e.max_seconds * 1e3, e.rlimit_used);
  };
  for (const auto& [name, entry] : by_name) line(name, entry);
  line("total", total);
  return out;
}

// ---- implementation state -----------------------------------------------------------------

struct Solver::Impl {
  explicit Impl(const SolverOptions& options)
      // The simple solver is Z3's SMT kernel used incrementally, without the combined
      // solver's tactic front end (whose push is ~30x slower and which we never use: every
      // query runs under push).
      : solver(ctx, z3::solver::simple()) {
    Z3_set_ast_print_mode(ctx, Z3_PRINT_SMTLIB2_COMPLIANT);
    z3::params p(ctx);
    p.set("random_seed", options.random_seed);
    if (options.minimize_cores) p.set("core.minimize", true);
    solver.set(p);
    minimize_cores = options.minimize_cores;
  }

  struct Binding {
    std::string name;
    uint32_t symbol;
    bool defined;
    uint32_t body;  // defined only
    std::string comment;
    std::vector<size_t> deps;          // defined bindings the body mentions (indices)
    std::optional<z3::expr> expanded;  // the body with definitions expanded, computed lazily
    // DefineRelaxable: in relaxed checks the symbol is free within these bounds.
    std::optional<std::pair<int64_t, int64_t>> relax_bounds;
    std::optional<z3::expr> relaxed;   // expansion in relaxed checks, computed lazily
  };
  struct Assertion {
    std::string label;  // empty: untracked (already added to the Z3 solver)
    uint32_t term;
    z3::expr expanded;  // the formula with every definition expanded
    std::vector<size_t> deps;
    std::optional<z3::expr> relaxed;  // expanded with relaxable symbols kept free (lazily)
  };
  struct Scope {
    size_t terms;
    size_t bindings;
    size_t assertions;
  };

  uint32_t Add(z3::expr e) {
    terms.push_back(std::move(e));
    return static_cast<uint32_t>(terms.size() - 1);
  }
  const z3::expr& Get(Term t) const {
    PRISM_CHECK(t.valid() && t.id() < terms.size(), "smt::Term ", t.id(),
                " is invalid or was released by Pop()");
    return terms[t.id()];
  }
  const Binding* FindBinding(absl::string_view name) const {
    auto it = binding_index.find(name);
    return it == binding_index.end() ? nullptr : &bindings[it->second];
  }

  // Scans `e` as written: returns the first symbol that is not bound in scope, or fills
  // `deps` with the indices of the defined bindings it mentions.
  std::optional<std::string> Scan(const z3::expr& e, std::vector<size_t>* deps) const {
    absl::flat_hash_set<unsigned> seen;
    std::vector<z3::expr> stack = {e};
    while (!stack.empty()) {
      z3::expr x = stack.back();
      stack.pop_back();
      if (!x.is_app()) continue;
      if (!seen.insert(x.id()).second) continue;
      const unsigned n = x.num_args();
      if (n == 0) {
        if (x.decl().decl_kind() == Z3_OP_UNINTERPRETED) {
          const std::string name = x.decl().name().str();
          auto it = binding_index.find(name);
          if (it == binding_index.end()) return name;
          if (bindings[it->second].defined) deps->push_back(it->second);
        }
        continue;
      }
      for (unsigned i = 0; i < n; ++i) stack.push_back(x.arg(i));
    }
    std::sort(deps->begin(), deps->end());
    return std::nullopt;
  }

  const z3::expr& Expanded(size_t index, bool relaxed = false) {
    Binding& b = bindings[index];
    if (relaxed && b.relax_bounds) return terms[b.symbol];
    std::optional<z3::expr>& cache = relaxed ? b.relaxed : b.expanded;
    if (!cache) {
      z3::expr body = terms[b.body];
      z3::expr e = Substitute(body, b.deps, relaxed);
      bindings[index].*(relaxed ? &Binding::relaxed : &Binding::expanded) = e;
    }
    return *(relaxed ? bindings[index].relaxed : bindings[index].expanded);
  }

  // `e` with the definitions `deps` (all it mentions) replaced by their expansions; in relaxed
  // mode the relaxable ones stay symbols.
  z3::expr Substitute(z3::expr e, const std::vector<size_t>& deps, bool relaxed = false) {
    if (deps.empty()) return e;
    z3::expr_vector src(ctx), dst(ctx);
    for (size_t d : deps) {
      dst.push_back(Expanded(d, relaxed));
      src.push_back(terms[bindings[d].symbol]);
    }
    return e.substitute(src, dst);
  }

  const z3::expr& Relaxed(Assertion& a) {
    if (!a.relaxed) a.relaxed = Substitute(terms[a.term], a.deps, /*relaxed=*/true);
    return *a.relaxed;
  }

  // `e` with every definition expanded. `e` must only mention bound symbols (PRISM_CHECK).
  z3::expr Expand(const z3::expr& e) {
    std::vector<size_t> deps;
    std::optional<std::string> unbound = Scan(e, &deps);
    PRISM_CHECK(!unbound, "term mentions the unbound symbol '", unbound.value_or(""), "'");
    return Substitute(e, deps);
  }

  // The defined bindings that the assertions in scope need, transitively.
  template <typename Selected>
  std::vector<bool> UsedDefinitions(const Selected& selected) const {
    std::vector<bool> used(bindings.size(), false);
    std::vector<size_t> work;
    for (const Assertion& a : assertions) {
      if (!selected(a)) continue;
      std::vector<size_t> deps;
      if (!Scan(terms[a.term], &deps)) work.insert(work.end(), deps.begin(), deps.end());
    }
    while (!work.empty()) {
      const size_t i = work.back();
      work.pop_back();
      if (used[i]) continue;
      used[i] = true;
      work.insert(work.end(), bindings[i].deps.begin(), bindings[i].deps.end());
    }
    return used;
  }

  void RebuildIndex() {
    binding_index.clear();
    for (size_t i = 0; i < bindings.size(); ++i) binding_index[bindings[i].name] = i;
  }

  z3::context ctx;
  z3::solver solver;
  std::vector<z3::expr> terms;
  absl::flat_hash_map<std::string, SortKind> symbol_sorts;   // every name ever used
  absl::flat_hash_map<std::string, uint32_t> symbol_terms;   // may be stale after Pop
  absl::flat_hash_set<std::string> labels_in_scope;
  std::vector<Binding> bindings;
  absl::flat_hash_map<std::string, size_t> binding_index;
  std::vector<Assertion> assertions;
  std::vector<Scope> scopes;
  std::string function_macros;  // define-funs with arguments, for later ParseDefinitions
  std::vector<z3::func_decl> functions;                    // DeclareFunction, in order
  absl::flat_hash_map<std::string, uint32_t> function_index;
  SolverStats stats;
  uint64_t last_rlimit = 0;
  bool minimize_cores = true;
  int64_t set_timeout_ms = -1;
  int64_t set_rlimit = -1;
};

Solver::Solver(SolverOptions options) : impl_(std::make_unique<Impl>(options)) {}
Solver::~Solver() = default;

// ---- terms --------------------------------------------------------------------------------

Term Solver::Int(int64_t value) { return Term(impl_->Add(impl_->ctx.int_val(value))); }

Term Solver::Real(int64_t num, int64_t den) {
  PRISM_CHECK(den != 0, "Real(", num, ", 0)");
  if (den < 0) {
    num = -num;
    den = -den;
  }
  const std::string text = absl::StrCat(num, "/", den);
  return Term(impl_->Add(impl_->ctx.real_val(text.c_str())));
}

Term Solver::Bool(bool value) { return Term(impl_->Add(impl_->ctx.bool_val(value))); }

Term Solver::RealFromDouble(double v) {
  PRISM_CHECK(std::isfinite(v), "RealFromDouble(", v, ")");
  // v = mantissa · 2^exp exactly, with |mantissa| < 2^53 an integer.
  int exp = 0;
  const double frac = std::frexp(v, &exp);
  int64_t mantissa = static_cast<int64_t>(std::ldexp(frac, 53));
  exp -= 53;
  while (mantissa != 0 && mantissa % 2 == 0) {
    mantissa /= 2;
    ++exp;
  }
  if (mantissa == 0) exp = 0;
  // 2^|exp| as a decimal string (exp is within [-1126, 1024]).
  std::string power = "1";
  for (int i = 0; i < std::abs(exp); ++i) {
    int carry = 0;
    for (auto it = power.rbegin(); it != power.rend(); ++it) {
      const int d = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry) power.insert(power.begin(), static_cast<char>('0' + carry));
  }
  const std::string text = exp >= 0 ? absl::StrCat(mantissa, "/1") : absl::StrCat(mantissa, "/", power);
  z3::expr e = impl_->ctx.real_val(text.c_str());
  if (exp > 0) e = (e * impl_->ctx.real_val(power.c_str())).simplify();
  return Term(impl_->Add(e));
}

absl::StatusOr<Term> Solver::Symbol(absl::string_view name, SortKind sort) {
  if (!IsSimpleSymbol(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not an SMT-LIB simple symbol"));
  }
  const std::string key(name);
  if (impl_->function_index.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is the name of a function"));
  }
  auto [it, inserted] = impl_->symbol_sorts.emplace(key, sort);
  if (!inserted && it->second != sort) {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", name, "' has sort ",
                                                   SortName(it->second), ", not ",
                                                   SortName(sort)));
  }
  if (auto t = impl_->symbol_terms.find(key); t != impl_->symbol_terms.end() &&
                                              t->second < impl_->terms.size()) {
    const z3::expr& e = impl_->terms[t->second];
    if (e.is_const() && e.decl().name().str() == key) return Term(t->second);
  }
  z3::context& c = impl_->ctx;
  z3::expr e = sort == SortKind::kBool  ? c.bool_const(key.c_str())
               : sort == SortKind::kInt ? c.int_const(key.c_str())
                                        : c.real_const(key.c_str());
  const uint32_t id = impl_->Add(e);
  impl_->symbol_terms[key] = id;
  return Term(id);
}

SortKind Solver::sort(Term t) const { return KindOf(impl_->Get(t).get_sort()); }

std::string Solver::ToString(Term t) const { return impl_->Get(t).to_string(); }

std::vector<std::string> Solver::SymbolsOf(Term t) const {
  std::vector<std::string> names;
  absl::flat_hash_set<unsigned> seen;
  std::vector<z3::expr> stack = {impl_->Get(t)};
  while (!stack.empty()) {
    z3::expr x = stack.back();
    stack.pop_back();
    if (!x.is_app() || !seen.insert(x.id()).second) continue;
    const unsigned n = x.num_args();
    if (n == 0 && x.decl().decl_kind() == Z3_OP_UNINTERPRETED) names.push_back(x.decl().name().str());
    for (unsigned i = 0; i < n; ++i) stack.push_back(x.arg(i));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::optional<int64_t> Solver::IntValue(Term t) const {
  z3::expr e = impl_->Get(t).simplify();
  int64_t v = 0;
  if (e.is_numeral() && e.is_int() && e.is_numeral_i64(v)) return v;
  return std::nullopt;
}

namespace {
void CheckSort(const z3::expr& e, SortKind want, absl::string_view op) {
  PRISM_CHECK(KindOf(e.get_sort()) == want, "smt::Solver::", op, ": operand ", e.to_string(),
              " has sort ", SortName(KindOf(e.get_sort())), ", expected ", SortName(want));
}
void CheckNumeric(const z3::expr& e, absl::string_view op) {
  PRISM_CHECK(e.is_int() || e.is_real(), "smt::Solver::", op, ": operand ", e.to_string(),
              " is not numeric");
}
void CheckSameSort(const z3::expr& a, const z3::expr& b, absl::string_view op) {
  PRISM_CHECK(KindOf(a.get_sort()) == KindOf(b.get_sort()), "smt::Solver::", op,
              ": operands have different sorts: ", a.to_string(), " and ", b.to_string());
}
}  // namespace

Term Solver::Add(absl::Span<const Term> operands) {
  PRISM_CHECK(!operands.empty(), "Add of no operands");
  if (operands.size() == 1) return operands[0];
  z3::expr_vector v(impl_->ctx);
  for (Term t : operands) {
    CheckNumeric(impl_->Get(t), "Add");
    CheckSameSort(impl_->Get(operands[0]), impl_->Get(t), "Add");
    v.push_back(impl_->Get(t));
  }
  return Term(impl_->Add(z3::sum(v)));
}

Term Solver::Mul(absl::Span<const Term> operands) {
  PRISM_CHECK(!operands.empty(), "Mul of no operands");
  if (operands.size() == 1) return operands[0];
  z3::expr r = impl_->Get(operands[0]);
  CheckNumeric(r, "Mul");
  for (size_t i = 1; i < operands.size(); ++i) {
    CheckSameSort(r, impl_->Get(operands[i]), "Mul");
    r = r * impl_->Get(operands[i]);
  }
  return Term(impl_->Add(r));
}

Term Solver::Sub(Term a, Term b) {
  CheckNumeric(impl_->Get(a), "Sub");
  CheckSameSort(impl_->Get(a), impl_->Get(b), "Sub");
  return Term(impl_->Add(impl_->Get(a) - impl_->Get(b)));
}

Term Solver::Neg(Term a) {
  CheckNumeric(impl_->Get(a), "Neg");
  return Term(impl_->Add(-impl_->Get(a)));
}

Term Solver::FloorDiv(Term a, Term b, bool divisor_positive) {
  const z3::expr& x = impl_->Get(a);
  const z3::expr& y = impl_->Get(b);
  CheckSort(x, SortKind::kInt, "FloorDiv");
  CheckSort(y, SortKind::kInt, "FloorDiv");
  // SMT-LIB div is Euclidean: equal to floor division when y > 0. For y < 0,
  // floor(x / y) = floor(-x / -y) with -y > 0.
  z3::expr r = divisor_positive ? z3::expr(x / y) : z3::ite(y >= 0, x / y, (-x) / (-y));
  return Term(impl_->Add(r));
}

Term Solver::Mod(Term a, Term b, bool divisor_positive) {
  const z3::expr& x = impl_->Get(a);
  const z3::expr& y = impl_->Get(b);
  CheckSort(x, SortKind::kInt, "Mod");
  CheckSort(y, SortKind::kInt, "Mod");
  // Floor modulo: x - y * floor(x / y); for y > 0 it is SMT-LIB's mod (in [0, y)).
  z3::expr r = divisor_positive ? z3::mod(x, y) : z3::ite(y >= 0, z3::mod(x, y), x - y * ((-x) / (-y)));
  return Term(impl_->Add(r));
}

Term Solver::Min(Term a, Term b) {
  const z3::expr& x = impl_->Get(a);
  const z3::expr& y = impl_->Get(b);
  CheckNumeric(x, "Min");
  CheckSameSort(x, y, "Min");
  return Term(impl_->Add(z3::ite(x <= y, x, y)));
}

Term Solver::Max(Term a, Term b) {
  const z3::expr& x = impl_->Get(a);
  const z3::expr& y = impl_->Get(b);
  CheckNumeric(x, "Max");
  CheckSameSort(x, y, "Max");
  return Term(impl_->Add(z3::ite(x >= y, x, y)));
}

Term Solver::ToReal(Term a) {
  CheckSort(impl_->Get(a), SortKind::kInt, "ToReal");
  return Term(impl_->Add(z3::to_real(impl_->Get(a))));
}

Term Solver::RealDiv(Term a, Term b) {
  CheckSort(impl_->Get(a), SortKind::kReal, "RealDiv");
  CheckSort(impl_->Get(b), SortKind::kReal, "RealDiv");
  return Term(impl_->Add(impl_->Get(a) / impl_->Get(b)));
}

Term Solver::Ite(Term cond, Term then_term, Term else_term) {
  CheckSort(impl_->Get(cond), SortKind::kBool, "Ite");
  CheckSameSort(impl_->Get(then_term), impl_->Get(else_term), "Ite");
  return Term(
      impl_->Add(z3::ite(impl_->Get(cond), impl_->Get(then_term), impl_->Get(else_term))));
}

Term Solver::Eq(Term a, Term b) {
  CheckSameSort(impl_->Get(a), impl_->Get(b), "Eq");
  return Term(impl_->Add(impl_->Get(a) == impl_->Get(b)));
}

Term Solver::Le(Term a, Term b) {
  CheckNumeric(impl_->Get(a), "Le");
  CheckSameSort(impl_->Get(a), impl_->Get(b), "Le");
  return Term(impl_->Add(impl_->Get(a) <= impl_->Get(b)));
}

Term Solver::Lt(Term a, Term b) {
  CheckNumeric(impl_->Get(a), "Lt");
  CheckSameSort(impl_->Get(a), impl_->Get(b), "Lt");
  return Term(impl_->Add(impl_->Get(a) < impl_->Get(b)));
}

Term Solver::And(absl::Span<const Term> operands) {
  if (operands.empty()) return Bool(true);
  if (operands.size() == 1) return operands[0];
  z3::expr_vector v(impl_->ctx);
  for (Term t : operands) {
    CheckSort(impl_->Get(t), SortKind::kBool, "And");
    v.push_back(impl_->Get(t));
  }
  return Term(impl_->Add(z3::mk_and(v)));
}

Term Solver::Or(absl::Span<const Term> operands) {
  if (operands.empty()) return Bool(false);
  if (operands.size() == 1) return operands[0];
  z3::expr_vector v(impl_->ctx);
  for (Term t : operands) {
    CheckSort(impl_->Get(t), SortKind::kBool, "Or");
    v.push_back(impl_->Get(t));
  }
  return Term(impl_->Add(z3::mk_or(v)));
}

Term Solver::Not(Term a) {
  CheckSort(impl_->Get(a), SortKind::kBool, "Not");
  return Term(impl_->Add(!impl_->Get(a)));
}

Term Solver::Implies(Term a, Term b) {
  CheckSort(impl_->Get(a), SortKind::kBool, "Implies");
  CheckSort(impl_->Get(b), SortKind::kBool, "Implies");
  return Term(impl_->Add(z3::implies(impl_->Get(a), impl_->Get(b))));
}

// ---- uninterpreted functions --------------------------------------------------------------

absl::StatusOr<Function> Solver::DeclareFunction(absl::string_view name, int arity) {
  if (!IsSimpleSymbol(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not an SMT-LIB simple symbol"));
  }
  if (arity < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("function '", name, "' must take at least one argument, not ", arity));
  }
  const std::string key(name);
  if (impl_->symbol_sorts.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is the name of a symbol"));
  }
  if (impl_->function_index.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat("function '", name, "' is already declared"));
  }
  z3::sort_vector domain(impl_->ctx);
  for (int i = 0; i < arity; ++i) domain.push_back(impl_->ctx.real_sort());
  impl_->functions.push_back(impl_->ctx.function(key.c_str(), domain, impl_->ctx.real_sort()));
  const uint32_t id = static_cast<uint32_t>(impl_->functions.size() - 1);
  impl_->function_index[key] = id;
  return Function(id);
}

Term Solver::Apply(Function f, absl::Span<const Term> args) {
  PRISM_CHECK(f.valid() && f.id_ < impl_->functions.size(), "invalid smt::Function");
  const z3::func_decl& decl = impl_->functions[f.id_];
  PRISM_CHECK(args.size() == decl.arity(), "function '", decl.name().str(), "' takes ",
              decl.arity(), " arguments, not ", args.size());
  z3::expr_vector v(impl_->ctx);
  for (Term t : args) {
    CheckSort(impl_->Get(t), SortKind::kReal, "Apply");
    v.push_back(impl_->Get(t));
  }
  return Term(impl_->Add(decl(v)));
}

// ---- normal forms -------------------------------------------------------------------------

std::vector<Monomial> Solver::Monomials(Term t) {
  const z3::expr& e = impl_->Get(t);
  CheckNumeric(e, "Monomials");
  z3::params p(impl_->ctx);
  p.set("som", true);
  p.set("arith_lhs", false);
  const z3::expr n = e.simplify(p);
  std::vector<z3::expr> summands;
  if (n.is_app() && n.decl().decl_kind() == Z3_OP_ADD) {
    for (unsigned i = 0; i < n.num_args(); ++i) summands.push_back(n.arg(i));
  } else {
    summands.push_back(n);
  }
  const auto whole = [&]() { Monomial m;
    m.product = t;
    m.factors = {t};
    return std::vector<Monomial>{m};
  };
  std::vector<Monomial> out;
  for (const z3::expr& m : summands) {
    // A numeral, or numeral * factors, or factors.
    std::optional<z3::expr> coefficient;
    z3::expr_vector factors(impl_->ctx);
    if (m.is_numeral()) {
      coefficient = m;
    } else if (m.is_app() && m.decl().decl_kind() == Z3_OP_MUL) {
      // Nested products are flattened: 2·x·y may read (* 2 (* x y)).
      std::vector<z3::expr> stack = {m};
      while (!stack.empty()) {
        const z3::expr f = stack.back();
        stack.pop_back();
        if (f.is_app() && f.decl().decl_kind() == Z3_OP_MUL) {
          for (unsigned i = f.num_args(); i-- > 0;) stack.push_back(f.arg(i));
        } else if (!coefficient && f.is_numeral()) {
          coefficient = f;
        } else {
          factors.push_back(f);
        }
      }
    } else {
      factors.push_back(m);
    }
    Monomial mono;
    if (coefficient) {
      int64_t num = 0, den = 1;
      if (!coefficient->numerator().is_numeral_i64(num) ||
          !coefficient->denominator().is_numeral_i64(den)) {
        return whole();
      }
      mono.num = num;
      mono.den = den;
    } else {
      mono.num = 1;
    }
    if (mono.num == 0) continue;
    for (unsigned i = 0; i < factors.size(); ++i) {
      const z3::expr& f = factors[i];
      int64_t k = 0;
      if (f.is_app() && f.decl().decl_kind() == Z3_OP_POWER && f.arg(1).is_numeral_i64(k) &&
          k >= 1 && k <= 64) {
        for (int64_t j = 0; j < k; ++j) mono.factors.push_back(Term(impl_->Add(f.arg(0))));
      } else {
        mono.factors.push_back(Term(impl_->Add(f)));
      }
    }
    if (factors.size() == 1) {
      mono.product = Term(impl_->Add(factors[0]));
    } else if (factors.size() > 1) {
      z3::expr prod = factors[0];
      for (unsigned i = 1; i < factors.size(); ++i) prod = prod * factors[i];
      mono.product = Term(impl_->Add(prod));
    }
    out.push_back(mono);
  }
  return out;
}

// ---- theory files -------------------------------------------------------------------------

absl::StatusOr<std::vector<ParsedDefinition>> Solver::ParseDefinitions(absl::string_view origin,
                                                                       absl::string_view smtlib) {
  using internal::SExpr;
  absl::StatusOr<internal::ReadResult> read = internal::ReadForms(smtlib, origin);
  if (!read.ok()) return read.status();
  std::vector<ParsedDefinition> out;
  const auto sort_of = [](const SExpr& s) -> std::optional<SortKind> {
    if (s.is_atom("Int")) return SortKind::kInt;
    if (s.is_atom("Real")) return SortKind::kReal;
    if (s.is_atom("Bool")) return SortKind::kBool;
    return std::nullopt;
  };
  for (const internal::TopLevelForm& f : read->forms) {
    const SExpr& e = f.form;
    const std::string where = absl::StrCat(origin, ":", f.line, ": ");
    const bool is_define = e.is_list() && e.items.size() == 5 && e.items[0].is_atom("define-fun");
    const bool is_declare =
        e.is_list() && ((e.items.size() == 3 && e.items[0].is_atom("declare-const")) ||
                        (e.items.size() == 4 && e.items[0].is_atom("declare-fun") &&
                         e.items[2].is_list() && e.items[2].items.empty()));
    if (!is_define && !is_declare) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "only declare-const and define-fun are allowed in a theory file, found '",
          f.verbatim.substr(0, 40), "'"));
    }
    if (e.items[1].kind != SExpr::Kind::kAtom) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected a symbol name"));
    }
    const std::string name = e.items[1].text;
    if (is_declare) {
      const std::optional<SortKind> sort = sort_of(e.items.back());
      if (!sort) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "'", name, "' must have sort Int, Real or Bool"));
      }
      absl::StatusOr<Term> sym = Symbol(name, *sort);
      if (!sym.ok()) return absl::InvalidArgumentError(absl::StrCat(where, sym.status().message()));
      continue;
    }
    if (!e.items[2].is_list()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "malformed define-fun '", name, "'"));
    }
    if (!e.items[2].items.empty()) {
      // A function with arguments: a macro that the parser expands wherever it is used. Check
      // it parses now, so that errors point here.
      std::string text = impl_->function_macros;
      for (const auto& [sym, sort] : impl_->symbol_sorts) {
        absl::StrAppend(&text, "(declare-const ", sym, " ", SortName(sort), ")\n");
      }
      absl::StrAppend(&text, f.verbatim, "\n");
      try {
        impl_->ctx.parse_string(text.c_str());
      } catch (const z3::exception& ex) {
        return absl::InvalidArgumentError(absl::StrCat(where, "in '", name, "': ", ex.msg()));
      }
      absl::StrAppend(&impl_->function_macros, f.verbatim, "\n");
      continue;
    }
    const std::optional<SortKind> sort = sort_of(e.items[3]);
    if (!sort) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "'", name, "' must have sort Int, Real or Bool"));
    }
    // Parse the body with every known symbol declared, as `(= name body)`.
    std::string text = impl_->function_macros;
    for (const auto& [sym, s] : impl_->symbol_sorts) {
      if (sym != name) absl::StrAppend(&text, "(declare-const ", sym, " ", SortName(s), ")\n");
    }
    // The body's text: everything after the sort, without the closing parenthesis.
    const size_t sort_pos = f.verbatim.find(e.items[3].text, f.verbatim.find("()") + 2);
    std::string body_text = f.verbatim.substr(sort_pos + e.items[3].text.size());
    body_text = body_text.substr(0, body_text.rfind(')'));
    absl::StrAppend(&text, "(declare-const ", name, " ", SortName(*sort), ")\n(assert (= ", name,
                    " ", body_text, "))\n");
    z3::expr_vector parsed(impl_->ctx);
    try {
      parsed = impl_->ctx.parse_string(text.c_str());
    } catch (const z3::exception& ex) {
      return absl::InvalidArgumentError(absl::StrCat(where, "in '", name, "': ", ex.msg()));
    }
    PRISM_CHECK(parsed.size() == 1);
    z3::expr eq = parsed[0];
    if (!eq.is_eq() || KindOf(eq.arg(1).get_sort()) != *sort) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the body of '", name,
                                                     "' does not have sort ", SortName(*sort)));
    }
    absl::StatusOr<Term> sym = Symbol(name, *sort);
    if (!sym.ok()) return absl::InvalidArgumentError(absl::StrCat(where, sym.status().message()));
    ParsedDefinition d;
    d.name = name;
    d.sort = *sort;
    d.symbol = *sym;
    d.body = Term(impl_->Add(eq.arg(1)));
    d.comments = f.comments;
    d.verbatim = f.verbatim;
    d.line = f.line;
    out.push_back(std::move(d));
  }
  return out;
}

// ---- scopes and bindings ------------------------------------------------------------------

void Solver::Push() {
  impl_->scopes.push_back(
      Impl::Scope{impl_->terms.size(), impl_->bindings.size(), impl_->assertions.size()});
  impl_->solver.push();
}

void Solver::Pop() {
  PRISM_CHECK(!impl_->scopes.empty(), "Solver::Pop without a matching Push");
  const Impl::Scope s = impl_->scopes.back();
  impl_->scopes.pop_back();
  impl_->solver.pop();
  for (size_t i = s.assertions; i < impl_->assertions.size(); ++i) {
    if (!impl_->assertions[i].label.empty()) {
      impl_->labels_in_scope.erase(impl_->assertions[i].label);
    }
  }
  impl_->assertions.erase(impl_->assertions.begin() + s.assertions, impl_->assertions.end());
  const bool bindings_changed = impl_->bindings.size() != s.bindings;
  impl_->bindings.erase(impl_->bindings.begin() + s.bindings, impl_->bindings.end());
  if (bindings_changed) impl_->RebuildIndex();
  impl_->terms.erase(impl_->terms.begin() + s.terms, impl_->terms.end());
}

int Solver::depth() const { return static_cast<int>(impl_->scopes.size()); }

absl::Status Solver::Declare(Term symbol) {
  const z3::expr& e = impl_->Get(symbol);
  PRISM_CHECK(e.is_const() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED,
              "Declare of a non-symbol ", e.to_string());
  const std::string name = e.decl().name().str();
  if (impl_->FindBinding(name) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", name, "' is already bound"));
  }
  impl_->bindings.push_back(
      Impl::Binding{name, symbol.id(), false, 0, "", {}, std::nullopt, std::nullopt, std::nullopt});
  impl_->binding_index[name] = impl_->bindings.size() - 1;
  return absl::OkStatus();
}

absl::Status Solver::Define(Term symbol, Term body, absl::string_view comment) {
  const z3::expr& e = impl_->Get(symbol);
  PRISM_CHECK(e.is_const() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED,
              "Define of a non-symbol ", e.to_string());
  const std::string name = e.decl().name().str();
  if (impl_->FindBinding(name) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("symbol '", name, "' is already bound"));
  }
  const z3::expr& b = impl_->Get(body);
  if (KindOf(b.get_sort()) != KindOf(e.get_sort())) {
    return absl::InvalidArgumentError(absl::StrCat("definition of '", name, "' has sort ",
                                                   SortName(KindOf(b.get_sort())), ", expected ",
                                                   SortName(KindOf(e.get_sort()))));
  }
  std::vector<size_t> deps;
  if (std::optional<std::string> unbound = impl_->Scan(b, &deps)) {
    return absl::InvalidArgumentError(absl::StrCat("definition of '", name, "' uses '", *unbound,
                                                   "', which is not bound in scope"));
  }
  impl_->bindings.push_back(Impl::Binding{name, symbol.id(), true, body.id(),
                                          std::string(comment), std::move(deps), std::nullopt,
                                          std::nullopt, std::nullopt});
  impl_->binding_index[name] = impl_->bindings.size() - 1;
  return absl::OkStatus();
}

absl::Status Solver::DefineRelaxable(Term symbol, Term body, int64_t lo, int64_t hi,
                                     absl::string_view comment) {
  if (lo > hi) {
    return absl::InvalidArgumentError(absl::StrCat("relaxation bounds [", lo, ", ", hi,
                                                   "] are empty"));
  }
  if (impl_->Get(symbol).is_int() == false) {
    return absl::InvalidArgumentError("only Int definitions can be relaxed to bounds");
  }
  PRISM_RETURN_IF_ERROR(Define(symbol, body, comment));
  impl_->bindings.back().relax_bounds = std::make_pair(lo, hi);
  return absl::OkStatus();
}

bool Solver::IsBound(absl::string_view name) const { return impl_->FindBinding(name) != nullptr; }

absl::Status Solver::Assert(Term formula) {
  const z3::expr& f = impl_->Get(formula);
  if (!f.is_bool()) {
    return absl::InvalidArgumentError(absl::StrCat("assertion '", f.to_string(),
                                                   "' is not Bool"));
  }
  std::vector<size_t> deps;
  if (std::optional<std::string> unbound = impl_->Scan(f, &deps)) {
    return absl::InvalidArgumentError(absl::StrCat("assertion uses '", *unbound,
                                                   "', which is not bound in scope"));
  }
  z3::expr expanded = impl_->Substitute(f, deps);
  impl_->solver.add(expanded);
  impl_->assertions.push_back(Impl::Assertion{"", formula.id(), expanded, {}, std::nullopt});
  return absl::OkStatus();
}

absl::Status Solver::AssertTracked(absl::string_view label, Term formula) {
  if (!IsSimpleSymbol(label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label '", label, "' is not an SMT-LIB simple symbol"));
  }
  const std::string key(label);
  if (impl_->labels_in_scope.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat("label '", label, "' is already in use"));
  }
  if (auto it = impl_->symbol_sorts.find(key);
      it != impl_->symbol_sorts.end() && it->second != SortKind::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("label '", label, "' is already the name of a symbol"));
  }
  const z3::expr& f = impl_->Get(formula);
  if (!f.is_bool()) {
    return absl::InvalidArgumentError(absl::StrCat("assertion '", label, "' is not Bool"));
  }
  std::vector<size_t> deps;
  if (std::optional<std::string> unbound = impl_->Scan(f, &deps)) {
    return absl::InvalidArgumentError(absl::StrCat("assertion '", label, "' uses '", *unbound,
                                                   "', which is not bound in scope"));
  }
  impl_->symbol_sorts.emplace(key, SortKind::kBool);
  // Tracked assertions reach Z3 only at check time (see Check).
  z3::expr expanded = impl_->Substitute(f, deps);
  impl_->assertions.push_back(
      Impl::Assertion{key, formula.id(), expanded, std::move(deps), std::nullopt});
  impl_->labels_in_scope.insert(key);
  return absl::OkStatus();
}

// ---- queries ------------------------------------------------------------------------------

CheckResult Solver::Check(absl::string_view query_name, const Budget& budget,
                          const CheckOptions& options) {
  const bool want_core = options.want_core;
  CheckResult result;
  result.stats.name = std::string(query_name);
  if (budget.is_zero()) {
    result.reason = "zero budget";
    impl_->stats.Add(result.stats);
    return result;
  }
  Impl& m = *impl_;
  if (budget.timeout_ms != m.set_timeout_ms || budget.rlimit != m.set_rlimit) {
    z3::params p(m.ctx);
    p.set("timeout", budget.timeout_ms > 0
                         ? static_cast<unsigned>(std::min<int64_t>(budget.timeout_ms, UINT_MAX))
                         : UINT_MAX);
    p.set("rlimit", static_cast<unsigned>(std::min<int64_t>(budget.rlimit, UINT_MAX)));
    m.solver.set(p);
    m.set_timeout_ms = budget.timeout_ms;
    m.set_rlimit = budget.rlimit;
  }
  z3::expr_vector extra(m.ctx);
  for (Term t : options.assumptions) {
    std::vector<size_t> deps;
    std::optional<std::string> unbound = m.Scan(m.Get(t), &deps);
    PRISM_CHECK(!unbound, "assumption mentions the unbound symbol '", unbound.value_or(""), "'");
    extra.push_back(m.Substitute(m.Get(t), deps, options.relax));
  }
  std::vector<Impl::Assertion*> tracked;
  for (Impl::Assertion& a : m.assertions) {
    if (a.label.empty()) continue;
    if (options.labels && std::find(options.labels->begin(), options.labels->end(), a.label) ==
                              options.labels->end()) {
      continue;
    }
    tracked.push_back(&a);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto run = [&](const z3::expr_vector& assumed) -> z3::check_result {
    try {
      return m.solver.check(assumed);
    } catch (const z3::exception& ex) {
      result.reason = absl::StrCat("z3 error: ", ex.msg());
      return z3::unknown;
    }
  };
  const auto unknown_reason = [&]() -> std::string {
    if (!result.reason.empty()) return result.reason;
    try {
      return m.solver.reason_unknown();
    } catch (const z3::exception& ex) {
      return ex.msg();
    }
  };
  // Pass 1: the tracked assertions asserted plainly. Z3 preprocesses top-level assertions
  // (bounds, constant propagation) but not the bodies of assumption-guarded implications, so
  // this pass decides sat/unsat much faster than a tracked one.
  // In a relaxed check the relaxable symbols are free within their bounds.
  const auto add_relaxation_bounds = [&] {
    if (!options.relax) return;
    for (const Impl::Binding& b : m.bindings) {
      if (!b.relax_bounds) continue;
      const z3::expr& sym = m.terms[b.symbol];
      m.solver.add(m.ctx.int_val(b.relax_bounds->first) <= sym &&
                   sym <= m.ctx.int_val(b.relax_bounds->second));
    }
  };
  const auto formula = [&](Impl::Assertion* a) -> z3::expr {
    return options.relax ? m.Relaxed(*a) : a->expanded;
  };
  m.solver.push();
  add_relaxation_bounds();
  for (Impl::Assertion* a : tracked) m.solver.add(formula(a));
  const z3::check_result r = run(extra);
  if (r == z3::sat) {
    result.verdict = Verdict::kRefuted;
    result.reason = "sat";
    z3::model model = m.solver.get_model();
    for (const Impl::Binding& b : m.bindings) {
      if (b.defined) continue;
      const z3::expr& sym = m.terms[b.symbol];
      if (!sym.is_int() && !sym.is_real()) continue;
      z3::expr v = model.eval(sym, /*model_completion=*/true);
      int64_t value = 0;
      if (sym.is_int()) {
        if (v.is_numeral_i64(value)) result.model[b.name] = value;
      } else if (sym.is_real()) {
        result.real_model[b.name] = ValueText(v);
      }
    }
    for (Term t : options.evaluate) {
      std::vector<size_t> deps;
      std::optional<std::string> unbound = m.Scan(m.Get(t), &deps);
      PRISM_CHECK(!unbound, "evaluated term mentions the unbound symbol '",
                  unbound.value_or(""), "'");
      result.evaluated.push_back(
          ValueText(model.eval(m.Substitute(m.Get(t), deps), /*model_completion=*/true)));
    }
  } else if (r == z3::unknown) {
    result.reason = unknown_reason();
  }
  m.solver.pop();
  if (r == z3::unsat) {
    result.verdict = Verdict::kProved;
    if (want_core && !tracked.empty()) {
      // Pass 2, only for a core: each tracked assertion behind an indicator literal.
      m.solver.push();
      add_relaxation_bounds();
      z3::expr_vector assumed(m.ctx);
      for (Impl::Assertion* a : tracked) {
        z3::expr indicator = m.ctx.bool_const(a->label.c_str());
        m.solver.add(z3::implies(indicator, formula(a)));
        assumed.push_back(indicator);
      }
      for (unsigned i = 0; i < extra.size(); ++i) assumed.push_back(extra[i]);
      const z3::check_result r2 = run(assumed);
      if (r2 == z3::unsat) {
        z3::expr_vector core = m.solver.unsat_core();
        for (unsigned i = 0; i < core.size(); ++i) {
          const std::string name = core[i].decl().name().str();
          if (m.labels_in_scope.contains(name)) result.core.push_back(name);
        }
        std::sort(result.core.begin(), result.core.end());
        result.reason = result.core.empty()
                            ? "unsat"
                            : absl::StrCat("unsat; core: ", absl::StrJoin(result.core, ", "));
      } else {
        // Unsat is proved by pass 1; without a core every label counts (a sound superset).
        for (const Impl::Assertion* a : tracked) result.core.push_back(a->label);
        std::sort(result.core.begin(), result.core.end());
        result.reason = absl::StrCat("unsat; core not computed (",
                                     r2 == z3::unknown ? unknown_reason() : "sat", "): all of ",
                                     absl::StrJoin(result.core, ", "));
      }
      m.solver.pop();
    } else {
      result.reason = "unsat";
    }
  }
  result.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  try {
    z3::stats st = m.solver.statistics();
    for (unsigned i = 0; i < st.size(); ++i) {
      if (st.key(i) == "rlimit count" && st.is_uint(i)) {
        const uint64_t now = st.uint_value(i);
        result.stats.rlimit_used =
            static_cast<int64_t>(now >= m.last_rlimit ? now - m.last_rlimit : now);
        m.last_rlimit = now;
      }
    }
  } catch (const z3::exception&) {
  }
  result.stats.verdict = result.verdict;
  m.stats.Add(result.stats);
  return result;
}

std::string Solver::ToSmtLib2(absl::string_view query_name, std::optional<Verdict> expected,
                              absl::Span<const std::string> header,
                              const CheckOptions& options) const {
  const Impl& m = *impl_;
  const std::optional<std::vector<std::string>>& labels = options.labels;
  const auto selected = [&](const Impl::Assertion& a) {
    return a.label.empty() || !labels ||
           std::find(labels->begin(), labels->end(), a.label) != labels->end();
  };
  std::string out;
  for (const std::string& line : header) {
    for (absl::string_view part : absl::StrSplit(line, '\n')) absl::StrAppend(&out, "; ", part, "\n");
  }
  absl::StrAppend(&out, "; prism SMT query '", query_name, "'");
  if (expected) {
    absl::StrAppend(&out, ", expected answer: ",
                    *expected == Verdict::kProved    ? "unsat"
                    : *expected == Verdict::kRefuted ? "sat"
                                                     : "unknown");
  }
  absl::StrAppend(&out, "\n(set-option :produce-unsat-cores true)\n(set-option :produce-models true)\n");
  if (m.minimize_cores) absl::StrAppend(&out, "(set-option :smt.core.minimize true)\n");
  for (const z3::func_decl& f : m.functions) {
    absl::StrAppend(&out, "(declare-fun ", f.name().str(), " (");
    for (unsigned i = 0; i < f.arity(); ++i) absl::StrAppend(&out, i ? " " : "", "Real");
    absl::StrAppend(&out, ") Real)\n");
  }
  const std::vector<bool> used = m.UsedDefinitions(selected);
  for (size_t i = 0; i < m.bindings.size(); ++i) {
    const Impl::Binding& b = m.bindings[i];
    if (b.defined && !used[i]) continue;  // definitions no assertion needs are left out
    const z3::expr& sym = m.terms[b.symbol];
    const absl::string_view sort = SortName(KindOf(sym.get_sort()));
    if (!b.comment.empty()) {
      for (absl::string_view part : absl::StrSplit(b.comment, '\n')) {
        absl::StrAppend(&out, "; ", part, "\n");
      }
    }
    if (b.defined && b.relax_bounds && options.relax) {
      // Relaxed: free within the range of its definition (a superset of the models).
      absl::StrAppend(&out, "; relaxed to the range of its definition\n(declare-const ",
                      sym.to_string(), " ", sort, ")\n(assert (and (<= ", b.relax_bounds->first,
                      " ", sym.to_string(), ") (<= ", sym.to_string(), " ",
                      b.relax_bounds->second, ")))\n");
    } else if (b.defined) {
      absl::StrAppend(&out, "(define-fun ", sym.to_string(), " () ", sort, " ",
                      m.terms[b.body].to_string(), ")\n");
    } else {
      absl::StrAppend(&out, "(declare-const ", sym.to_string(), " ", sort, ")\n");
    }
  }
  bool tracked = false;
  for (const Impl::Assertion& a : m.assertions) {
    if (!selected(a)) continue;
    if (a.label.empty()) {
      absl::StrAppend(&out, "(assert ", m.terms[a.term].to_string(), ")\n");
    } else {
      tracked = true;
      absl::StrAppend(&out, "(assert (! ", m.terms[a.term].to_string(), " :named ", a.label,
                      "))\n");
    }
  }
  absl::StrAppend(&out, "(check-sat)\n");
  if (expected == Verdict::kProved && tracked) absl::StrAppend(&out, "(get-unsat-core)\n");
  if (expected == Verdict::kRefuted) absl::StrAppend(&out, "(get-model)\n");
  return out;
}

// ---- concrete evaluation ------------------------------------------------------------------

absl::StatusOr<double> Solver::EvaluateWithZ3(
    Term t, const absl::flat_hash_map<std::string, int64_t>& values) const {
  Impl& m = *impl_;
  z3::expr e = m.Expand(m.Get(t));
  z3::expr_vector src(m.ctx), dst(m.ctx);
  for (const auto& [name, value] : values) {
    auto it = m.symbol_sorts.find(name);
    if (it == m.symbol_sorts.end() || it->second != SortKind::kInt) continue;
    src.push_back(m.ctx.int_const(name.c_str()));
    dst.push_back(m.ctx.int_val(value));
  }
  z3::expr r = e.substitute(src, dst).simplify();
  if (r.is_true()) return 1.0;
  if (r.is_false()) return 0.0;
  if (r.is_numeral()) {
    const std::string decimal = r.get_decimal_string(20);
    return std::strtod(decimal.c_str(), nullptr);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("term does not evaluate to a constant: ", r.to_string().substr(0, 200)));
}

absl::StatusOr<CompiledTerm> Solver::Compile(Term t, absl::Span<const std::string> inputs) const {
  Impl& m = *impl_;
  CompiledTerm out;
  out.inputs_.assign(inputs.begin(), inputs.end());
  absl::flat_hash_map<std::string, uint32_t> input_index;
  for (size_t i = 0; i < inputs.size(); ++i) input_index[inputs[i]] = static_cast<uint32_t>(i);
  z3::expr root = m.Expand(m.Get(t));
  out.is_bool_ = root.is_bool();
  out.is_real_ = root.is_real();
  absl::flat_hash_map<unsigned, uint32_t> done;  // ast id -> instruction index
  using Op = CompiledTerm::Op;
  // Iterative post-order: (expr, expanded?) pairs.
  std::vector<std::pair<z3::expr, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    if (done.contains(e.id())) continue;
    if (!e.is_app()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot compile ", e.to_string()));
    }
    const unsigned n = e.num_args();
    if (!expanded && n > 0) {
      stack.push_back({e, true});
      for (unsigned i = n; i-- > 0;) {
        if (!done.contains(e.arg(i).id())) stack.push_back({e.arg(i), false});
      }
      continue;
    }
    CompiledTerm::Instr instr{Op::kConst, 0, 0};
    const Z3_decl_kind kind = e.decl().decl_kind();
    if (n == 0) {
      if (e.is_numeral()) {
        int64_t num = 0, den = 1;
        z3::expr nu = e.numerator(), de = e.denominator();
        if (!nu.is_numeral_i64(num) || !de.is_numeral_i64(den)) {
          return absl::InvalidArgumentError(
              absl::StrCat("numeral ", e.to_string(), " does not fit 64 bits"));
        }
        instr = {Op::kConst, static_cast<uint32_t>(out.constants_.size()), 0};
        out.constants_.push_back(CompiledTerm::Rational{num, den});
      } else if (kind == Z3_OP_TRUE || kind == Z3_OP_FALSE) {
        instr = {Op::kConst, static_cast<uint32_t>(out.constants_.size()), 0};
        out.constants_.push_back(CompiledTerm::Rational{kind == Z3_OP_TRUE ? 1 : 0, 1});
      } else if (kind == Z3_OP_UNINTERPRETED) {
        const std::string name = e.decl().name().str();
        auto it = input_index.find(name);
        if (it == input_index.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("cannot compile: symbol '", name, "' is not an input"));
        }
        if (!e.is_int()) {
          return absl::InvalidArgumentError(
              absl::StrCat("cannot compile: input '", name, "' is not Int"));
        }
        instr = {Op::kInput, it->second, 0};
      } else {
        return absl::InvalidArgumentError(absl::StrCat("cannot compile ", e.to_string()));
      }
    } else {
      Op op;
      switch (kind) {
        case Z3_OP_ADD: op = Op::kAdd; break;
        case Z3_OP_SUB: op = Op::kSub; break;
        case Z3_OP_UMINUS: op = Op::kNeg; break;
        case Z3_OP_MUL: op = Op::kMul; break;
        case Z3_OP_IDIV: op = Op::kIntDiv; break;
        case Z3_OP_MOD: op = Op::kIntMod; break;
        case Z3_OP_DIV: op = Op::kRealDiv; break;
        case Z3_OP_TO_REAL: op = Op::kToReal; break;
        case Z3_OP_TO_INT: op = Op::kToInt; break;
        case Z3_OP_ITE: op = Op::kIte; break;
        case Z3_OP_EQ: op = Op::kEq; break;
        case Z3_OP_LE: op = Op::kLe; break;
        case Z3_OP_LT: op = Op::kLt; break;
        case Z3_OP_GE: op = Op::kGe; break;
        case Z3_OP_GT: op = Op::kGt; break;
        case Z3_OP_AND: op = Op::kAnd; break;
        case Z3_OP_OR: op = Op::kOr; break;
        case Z3_OP_NOT: op = Op::kNot; break;
        case Z3_OP_IMPLIES: op = Op::kImplies; break;
        case Z3_OP_XOR: op = Op::kXor; break;
        case Z3_OP_DISTINCT: op = Op::kDistinct; break;
        default:
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot compile operator '", e.decl().name().str(), "' in ", e.to_string()));
      }
      instr = {op, static_cast<uint32_t>(out.operand_list_.size()), n};
      for (unsigned i = 0; i < n; ++i) out.operand_list_.push_back(done.at(e.arg(i).id()));
    }
    done[e.id()] = static_cast<uint32_t>(out.code_.size());
    out.code_.push_back(instr);
  }
  return out;
}

const SolverStats& Solver::stats() const { return impl_->stats; }
void Solver::ResetStats() { impl_->stats = SolverStats(); }

}  // namespace smt
}  // namespace prism
