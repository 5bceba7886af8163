#include "prism/prune/pruner.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"

namespace prism::prune {
namespace {

using smt::SortKind;
using smt::Term;

constexpr absl::string_view kIncumbentNs = "incumbent_ns";
constexpr absl::string_view kIncumbentPs = "prism.incumbent_ps";  // compiled-rule input
constexpr absl::string_view kCostLb = "cost_lb_ns";
constexpr absl::string_view kConstraintPrefix = "constraint.";
constexpr absl::string_view kDomainPrefix = "domain.";

// A core without the domain-membership labels (the family's space, not a rule).
std::vector<std::string> RulesOf(const std::vector<std::string>& core) {
  std::vector<std::string> out;
  for (const std::string& l : core) {
    if (!absl::StartsWith(l, kDomainPrefix)) out.push_back(l);
  }
  return out;
}

// The metric-presence flags the theories may read (resources.smt2): known_<metric> for every
// standard metric, and known_grid (any grid metric set).
std::vector<std::string> FlagNames() {
  std::vector<std::string> names;
  for (const MetricInfo& m : StandardMetrics()) names.push_back(absl::StrCat("known_", m.name));
  names.push_back("known_grid");
  return names;
}

uint32_t FlagMask(const Family& family) {
  uint32_t mask = 0;
  uint32_t bit = 0;
  for (const MetricInfo& m : StandardMetrics()) {
    if (family.HasMetric(m.name)) mask |= 1u << bit;
    ++bit;
  }
  if (family.HasMetric(kGridX) || family.HasMetric(kGridY) || family.HasMetric(kGridZ) ||
      family.HasMetric(kGridBlocks)) {
    mask |= 1u << bit;
  }
  return mask;
}

// incumbent in picoseconds, rounded UP (a larger incumbent prunes less: the sound direction).
int64_t IncumbentPs(std::optional<double> incumbent_us) {
  if (!incumbent_us) return 0;
  return static_cast<int64_t>(std::ceil(*incumbent_us * 1e6));
}

// "1.5" -> 15/10; InvalidArgument otherwise.
absl::StatusOr<std::pair<int64_t, int64_t>> DecimalToFraction(absl::string_view text) {
  const size_t dot = text.find('.');
  std::string digits(text);
  int64_t den = 1;
  if (dot != absl::string_view::npos) {
    digits = absl::StrCat(text.substr(0, dot), text.substr(dot + 1));
    for (size_t i = dot + 1; i < text.size(); ++i) den *= 10;
  }
  int64_t num = 0;
  if (!absl::SimpleAtoi(digits, &num)) {
    return absl::InvalidArgumentError(absl::StrCat("bad decimal literal '", text, "'"));
  }
  return std::make_pair(num, den);
}

std::string SanitizeFileName(absl::string_view name) {
  std::string out;
  for (char c : name) {
    out.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                          c == '_'
                      ? c
                      : '_');
  }
  return out.empty() ? "family" : out;
}

std::string AssignmentText(const Assignment& a) {
  std::vector<std::pair<std::string, int64_t>> sorted(a.begin(), a.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::string Decision::ToString() const {
  if (const auto* x = std::get_if<Infeasible>(&result)) {
    return absl::StrCat("infeasible (", absl::StrJoin(x->rules, ", "), ")");
  }
  if (const auto* x = std::get_if<Dominated>(&result)) {
    return absl::StrFormat("dominated: every lower bound >= %g us, the incumbent %g us (%s)",
                           x->lower_bound_us, x->incumbent_us, absl::StrJoin(x->rules, ", "));
  }
  if (const auto* x = std::get_if<Feasible>(&result)) {
    return absl::StrFormat("feasible: %s (lower bound %g us%s)", AssignmentText(x->witness),
                           x->cost_lower_bound_us, x->from_probe ? ", by probe" : "");
  }
  return absl::StrCat("unknown: ", std::get<Unknown>(result).reason);
}

namespace internal {

// What a concrete check needs of a pruner's theories, without Z3 (Pruner::Impl::Load).
struct CheckData {
  std::vector<RuleInfo> rules;            // rule order
  std::vector<std::string> metric_names;  // StandardMetrics() order
  absl::flat_hash_set<std::string> reserved;  // names a parameter may not take
};

// The rules and the cost bound for one set of metric flags, compiled from their SMT
// definitions: plain data, evaluated without a solver.
struct CompiledRules {
  std::vector<smt::CompiledTerm> rules;  // parallel to CheckData::rules
  smt::CompiledTerm cost_lb;
};

// InvalidArgument if a parameter is named like a theory symbol.
absl::Status CheckNames(const CheckData& d, const Family& family);
// Pruner::CheckInstance's answer, with the rules compiled for the family's flags.
absl::StatusOr<InstanceCheck> Check(const CheckData& d, const CompiledRules& c,
                                    const Family& family, const Assignment& a,
                                    std::optional<double> incumbent_us);
// Check(...)->ok() without the names (no strings or maps per call), for the enumeration's
// leaves: false where that is false, an error where Check errs or where it would fail, which
// the leaves treat alike (neither is an instance). The scratch is reused storage.
struct PassScratch {
  std::vector<int64_t> values;
  std::vector<int64_t> inputs;
  Family::Numbers numbers;
};
absl::StatusOr<bool> Passes(const CheckData& d, const CompiledRules& c, const Family& family,
                            const Assignment& a, std::optional<double> incumbent_us,
                            PassScratch& scratch);

}  // namespace internal

namespace {

// The identity of the theory a pruner would load: the target's constants and the name and
// text of every theory file; nullopt if a file cannot be read (Load then says why).
std::optional<std::string> TheoryKey(const Target& target, const std::string& dir) {
  std::string key = absl::StrCat(dir, "\n", target.name, "\n");
  for (const HardwareConstant& c : target.constants) {
    absl::StrAppend(&key, c.name, " ", c.sort, " ", c.value_text, " ", c.source, "\n");
  }
  std::vector<std::string> paths = {JoinPath(dir, "resources.smt2"), JoinPath(dir, "cost.smt2")};
  std::vector<std::string> rule_paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(JoinPath(dir, "rules"), ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".smt2") {
      rule_paths.push_back(entry.path().string());
    }
  }
  if (ec) return std::nullopt;
  std::sort(rule_paths.begin(), rule_paths.end());
  paths.insert(paths.end(), rule_paths.begin(), rule_paths.end());
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return std::nullopt;
    absl::StrAppend(&key, path, " ", text->size(), "\n", *text);
  }
  return key;
}

}  // namespace

// A theory as Load leaves it, shared by every pruner of the process that loads the same one
// (same target constants, same theory files): what needs no solver, and the rules compiled
// per set of metric flags. A pruner made from it creates its Z3 context only when it first
// asks Z3 something (a decision past the probes, a depth-first enumeration), and then loads
// the theory into it and repeats the compilations it made so far, in order, so that the
// solver sees what an eagerly loaded one would have (its answers depend on its history).
struct LoadedTheory {
  std::vector<RuleInfo> rule_infos;
  std::vector<std::string> metric_names;
  std::vector<std::string> flag_names;
  absl::flat_hash_set<std::string> reserved;
  std::shared_ptr<const internal::CheckData> check_data;

  std::shared_ptr<const internal::CompiledRules> Find(uint32_t mask) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = compiled.find(mask);
    return it == compiled.end() ? nullptr : it->second;
  }
  void Publish(uint32_t mask, std::shared_ptr<const internal::CompiledRules> c) {
    std::lock_guard<std::mutex> lock(mu);
    compiled.emplace(mask, std::move(c));
  }

 private:
  std::mutex mu;
  absl::flat_hash_map<uint32_t, std::shared_ptr<const internal::CompiledRules>> compiled;
};

// The loaded theories of this process, by TheoryKey.
std::shared_ptr<LoadedTheory> FindTheory(const std::string& key,
                                         const std::shared_ptr<LoadedTheory>* insert = nullptr) {
  static std::mutex mu;
  static auto* theories = new absl::flat_hash_map<std::string, std::shared_ptr<LoadedTheory>>();
  std::lock_guard<std::mutex> lock(mu);
  if (insert != nullptr) return theories->emplace(key, *insert).first->second;
  auto it = theories->find(key);
  return it == theories->end() ? nullptr : it->second;
}

struct InstanceChecker::State {
  std::shared_ptr<const internal::CheckData> data;
  std::shared_ptr<const internal::CompiledRules> compiled;
  uint32_t mask = 0;
  std::string family;  // the name of the family it was made for, for messages
};

struct Pruner::Impl {
  struct Rule {
    RuleInfo info;
    Term symbol;  // rule_<name>
  };
  using Compiled = internal::CompiledRules;
  // The state of the family scope that Decide / EnumerateInstances open: the family is
  // encoded lazily, only as far as the labels asserted so far need it.
  struct Scope {
    // User-provided: clang rejects std::optional<Scope>::emplace() for a nested class whose
    // default member initializers are used before the enclosing class is complete.
    Scope() {}
    const Family* family = nullptr;
    std::optional<double> incumbent_us;
    uint32_t mask = 0;
    std::unique_ptr<smt::ExprEncoder> encoder;
    std::vector<std::pair<std::string, Term>> members;  // domain.<p> -> membership
    absl::flat_hash_set<std::string> asserted;           // labels
    size_t definedness_asserted = 0;
  };

  Target target;
  PrunerOptions options;
  std::string theory_dir;  // options.theory_dir, or the data directory's smt_theories
  std::shared_ptr<LoadedTheory> theory;
  uint64_t theory_hash = 0;  // of TheoryKey at Create
  // Created by EnsureSolver on first need (LoadedTheory); the Z3 members below are valid only
  // while it exists.
  std::unique_ptr<smt::Solver> solver;
  std::vector<uint32_t> compiled_order;  // GetCompiled's masks, in order (EnsureSolver replays)
  std::vector<Rule> rules;
  std::vector<RuleInfo> rule_infos;
  std::vector<smt::ParsedDefinition> defs;  // resources, cost, rule files, in order
  absl::flat_hash_map<std::string, size_t> def_index;
  std::vector<std::vector<std::string>> def_deps;  // symbols each definition mentions
  std::vector<Term> metric_symbols;                // StandardMetrics() order
  std::vector<std::string> metric_names;
  std::vector<std::string> flag_names;
  std::vector<Term> flag_symbols;
  Term incumbent_symbol;
  Term cost_lb_symbol;
  absl::flat_hash_map<uint32_t, std::shared_ptr<const Compiled>> compiled;  // stable pointers
  // Load's products that a concrete check needs (shared with InstanceCheckers).
  std::shared_ptr<const internal::CheckData> check_data;
  std::optional<Scope> scope;
  // Names a parameter may not take: every theory symbol and rule label.
  absl::flat_hash_set<std::string> reserved;

  // Loads the theory into `solver` (every Z3 member and the names); a fresh load first clears
  // them.
  absl::Status Load();
  // Creates the solver and loads the theory into it if there is none yet, then repeats the
  // compilations of compiled_order on it.
  absl::Status EnsureSolver();
  // The rules compiled for `mask` on `solver` (which must exist), in a scope of its own.
  absl::StatusOr<std::shared_ptr<const Compiled>> CompileOnSolver(uint32_t mask);
  absl::StatusOr<const Compiled*> GetCompiled(uint32_t mask);
  // Pushes a scope for `family`: parameters declared, domain bounds asserted. Nothing else is
  // encoded until Require asks for it. CloseScope pops it (also after errors).
  absl::Status OpenScope(const Family& family, std::optional<double> incumbent_us);
  void CloseScope();
  // Binds `name` in the scope (a metric, flag, the incumbent or a theory definition, with
  // everything it mentions first); no-op if already bound (hardware, parameters).
  absl::Status Bind(const std::string& name);
  // Asserts the labelled formulas `labels` (rules, "constraint.<c>", "domain.<p>").
  absl::Status Require(const std::vector<std::string>& labels);
  // Every label of the scope's family: domains, constraints, hard rules, and the dominance
  // rules when there is an incumbent.
  std::vector<std::string> AllLabels() const;
  std::vector<std::string> DomainLabels() const;
  // InvalidArgument if a parameter is named like a theory symbol.
  absl::Status CheckNames(const Family& family) const {
    return internal::CheckNames(*check_data, family);
  }
  // Concrete check; `violated` gets constraint and rule names.
  absl::StatusOr<InstanceCheck> Check(const Family& family, const Assignment& a,
                                      std::optional<double> incumbent_us) {
    PRISM_ASSIGN_OR_RETURN(const Compiled* c, GetCompiled(FlagMask(family)));
    return internal::Check(*check_data, *c, family, a, incumbent_us);
  }
  std::string kept_text;  // Dump's in-memory query (options.keep_queries)
  absl::StatusOr<std::string> Dump(const Family& family, absl::string_view query,
                                   const smt::CheckResult& r, absl::string_view decision,
                                   const smt::CheckOptions& options);
  // A small set of labels that every sample violates at least one of (greedy hitting set,
  // hard labels only when they suffice, deterministic).
  std::vector<std::string> HittingSet(const Family& family,
                                      const std::vector<std::vector<std::string>>& samples) const;
  // Checks the scope with options.budget, its timeout capped by the time left before
  // options.deadline; past the deadline the query is not run and answers Unknown with
  // reason "deadline passed".
  smt::CheckResult Run(const char* query, const smt::CheckOptions& opts = {}) {
    smt::Budget budget = options.budget;
    if (options.deadline != absl::InfiniteFuture()) {
      const int64_t left_ms = absl::ToInt64Milliseconds(options.deadline - absl::Now());
      if (left_ms <= 0) budget = smt::Budget::Zero();
      else if (budget.timeout_ms <= 0 || left_ms < budget.timeout_ms) budget.timeout_ms = left_ms;
    }
    smt::CheckResult r = solver->Check(query, budget, opts);
    if (budget.is_zero() && !options.budget.is_zero()) r.reason = "deadline passed";
    return r;
  }
  bool PastDeadline() const { return absl::Now() > options.deadline; }
  bool IsDominance(absl::string_view label) const {
    for (const RuleInfo& r : rule_infos) {
      if (r.name == label) return r.kind == RuleInfo::Kind::kDominance;
    }
    return false;
  }
};

absl::Status Pruner::Impl::Load() {
  smt::Solver& s = *solver;
  const std::string& dir = theory_dir;
  rules.clear();
  rule_infos.clear();
  defs.clear();
  def_index.clear();
  def_deps.clear();
  metric_symbols.clear();
  metric_names.clear();
  flag_names.clear();
  flag_symbols.clear();
  reserved.clear();
  // Hardware constants: permanent definitions at depth 0, each with its source.
  for (const HardwareConstant& c : target.constants) {
    const SortKind sort = c.sort == "Real" ? SortKind::kReal : SortKind::kInt;
    PRISM_ASSIGN_OR_RETURN(Term sym, s.Symbol(c.name, sort));
    Term value;
    if (sort == SortKind::kInt) {
      value = s.Int(static_cast<int64_t>(c.value));
    } else {
      PRISM_ASSIGN_OR_RETURN(auto frac, DecimalToFraction(c.value_text));
      value = s.Real(frac.first, frac.second);
    }
    PRISM_RETURN_IF_ERROR(s.Define(sym, value, absl::StrCat("source: ", c.source)));
  }
  for (const MetricInfo& m : StandardMetrics()) {
    PRISM_ASSIGN_OR_RETURN(Term sym, s.Symbol(m.name, SortKind::kInt));
    metric_symbols.push_back(sym);
    metric_names.emplace_back(m.name);
  }
  flag_names = FlagNames();
  for (const std::string& f : flag_names) {
    PRISM_ASSIGN_OR_RETURN(Term sym, s.Symbol(f, SortKind::kBool));
    flag_symbols.push_back(sym);
  }
  PRISM_ASSIGN_OR_RETURN(incumbent_symbol, s.Symbol(kIncumbentNs, SortKind::kReal));

  const auto load_file = [&](const std::string& path) -> absl::StatusOr<std::vector<smt::ParsedDefinition>> {
    PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    return s.ParseDefinitions(std::filesystem::path(path).filename().string(), text);
  };
  for (const char* file : {"resources.smt2", "cost.smt2"}) {
    PRISM_ASSIGN_OR_RETURN(std::vector<smt::ParsedDefinition> d, load_file(JoinPath(dir, file)));
    for (smt::ParsedDefinition& def : d) defs.push_back(std::move(def));
  }
  bool have_cost = false;
  for (const smt::ParsedDefinition& d : defs) {
    if (d.name == kCostLb && d.sort == SortKind::kReal) {
      cost_lb_symbol = d.symbol;
      have_cost = true;
    }
  }
  if (!have_cost) {
    return absl::InvalidArgumentError("cost.smt2: missing (define-fun cost_lb_ns () Real ...)");
  }

  // Rules: one file per rule, in name order.
  const std::string rule_dir = JoinPath(dir, "rules");
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(rule_dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".smt2") {
      paths.push_back(entry.path().string());
    }
  }
  if (ec) {
    return absl::NotFoundError(absl::StrCat("cannot list rule files in '", rule_dir, "': ",
                                            ec.message()));
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    const std::string stem = std::filesystem::path(path).stem().string();
    const std::string file = std::filesystem::path(path).filename().string();
    PRISM_ASSIGN_OR_RETURN(std::vector<smt::ParsedDefinition> d, load_file(path));
    const std::string rule_name = absl::StrCat("rule_", stem);
    int found = 0;
    for (smt::ParsedDefinition& def : d) {
      if (def.name == rule_name) {
        ++found;
        if (def.sort != SortKind::kBool) {
          return absl::InvalidArgumentError(
              absl::StrCat(file, ":", def.line, ": ", rule_name, " must have sort Bool"));
        }
        Rule r;
        r.symbol = def.symbol;
        r.info.name = stem;
        r.info.path = path;
        const std::string kind = smt::CommentField(def.comments, "kind:");
        if (kind == "hard") {
          r.info.kind = RuleInfo::Kind::kHard;
        } else if (kind == "dominance") {
          r.info.kind = RuleInfo::Kind::kDominance;
        } else {
          return absl::InvalidArgumentError(absl::StrCat(
              file, ":", def.line, ": ", rule_name,
              " needs a '; kind: hard' or '; kind: dominance' comment above it, found '", kind,
              "'"));
        }
        r.info.soundness = smt::CommentField(def.comments, "soundness:");
        if (r.info.soundness.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(file, ":", def.line, ": ", rule_name,
                           " needs a '; soundness:' argument in the comment above it"));
        }
        const std::string declared = smt::CommentField(def.comments, "rule:");
        if (!declared.empty() && declared != stem) {
          return absl::InvalidArgumentError(absl::StrCat(file, ":", def.line, ": '; rule: ",
                                                         declared, "' does not match the file name"));
        }
        // The name labels the rule in unsat cores: it must not be a theory symbol.
        if (!s.Symbol(stem, SortKind::kBool).ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              file, ": the rule name '", stem, "' is already the name of a theory symbol"));
        }
        rules.push_back(r);
        rule_infos.push_back(r.info);
      }
      defs.push_back(std::move(def));
    }
    if (found != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": must define (define-fun ", rule_name, " () Bool ...)"));
    }
  }
  if (rules.empty()) {
    return absl::NotFoundError(absl::StrCat("no rule files in '", rule_dir, "'"));
  }
  for (size_t i = 0; i < defs.size(); ++i) {
    def_index[defs[i].name] = i;
    def_deps.push_back(s.SymbolsOf(defs[i].body));
    reserved.insert(defs[i].name);
  }
  for (const HardwareConstant& c : target.constants) reserved.insert(c.name);
  for (const std::string& n : metric_names) reserved.insert(n);
  for (const std::string& n : flag_names) reserved.insert(n);
  for (const Rule& r : rules) reserved.insert(r.info.name);
  reserved.insert(std::string(kIncumbentNs));
  check_data = std::make_shared<const internal::CheckData>(
      internal::CheckData{rule_infos, metric_names, reserved});
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Pruner::Impl::Compiled>> Pruner::Impl::CompileOnSolver(
    uint32_t mask) {
  PRISM_CHECK(solver->depth() == 0, "rules must be compiled outside of a family scope");
  smt::Solver& s = *solver;
  s.Push();
  const auto body = [&]() -> absl::StatusOr<Compiled> {
    std::vector<std::string> inputs = metric_names;
    inputs.emplace_back(kIncumbentPs);
    for (Term m : metric_symbols) PRISM_RETURN_IF_ERROR(s.Declare(m));
    PRISM_ASSIGN_OR_RETURN(Term ps, s.Symbol(kIncumbentPs, SortKind::kInt));
    PRISM_RETURN_IF_ERROR(s.Declare(ps));
    for (size_t i = 0; i < flag_symbols.size(); ++i) {
      PRISM_RETURN_IF_ERROR(s.Define(flag_symbols[i], s.Bool((mask >> i) & 1u)));
    }
    PRISM_RETURN_IF_ERROR(
        s.Define(incumbent_symbol, s.RealDiv(s.ToReal(ps), s.Real(1000))));
    for (const smt::ParsedDefinition& d : defs) PRISM_RETURN_IF_ERROR(s.Define(d.symbol, d.body));
    Compiled c;
    for (const Rule& r : rules) {
      PRISM_ASSIGN_OR_RETURN(smt::CompiledTerm t, s.Compile(r.symbol, inputs));
      c.rules.push_back(std::move(t));
    }
    PRISM_ASSIGN_OR_RETURN(c.cost_lb, s.Compile(cost_lb_symbol, inputs));
    return c;
  };
  absl::StatusOr<Compiled> c = body();
  s.Pop();
  if (!c.ok()) return c.status();
  return std::make_shared<const Compiled>(*std::move(c));
}

absl::Status Pruner::Impl::EnsureSolver() {
  if (solver != nullptr) return absl::OkStatus();
  // The files must still be those the process's loaded theory was read from: its rule list
  // and compiled rules are this pruner's.
  const std::optional<std::string> key = TheoryKey(target, theory_dir);
  if (!key || StableHasher().Add(absl::string_view(*key)).Finish() != theory_hash) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the theory in '", theory_dir,
        "' changed while a pruner was using it: make a new pruner (prune::Pruner::Create)"));
  }
  solver = std::make_unique<smt::Solver>();
  absl::Status loaded = Load();
  for (size_t i = 0; loaded.ok() && i < compiled_order.size(); ++i) {
    loaded = CompileOnSolver(compiled_order[i]).status();
  }
  if (!loaded.ok()) {
    solver.reset();
    return loaded;
  }
  return absl::OkStatus();
}

absl::StatusOr<const Pruner::Impl::Compiled*> Pruner::Impl::GetCompiled(uint32_t mask) {
  if (auto it = compiled.find(mask); it != compiled.end()) return it->second.get();
  // Without a solver, another pruner's compilation of the same theory serves; a solver (made
  // now if none has compiled it yet) compiles it itself, as an eagerly loaded one did.
  std::shared_ptr<const Compiled> c = solver == nullptr ? theory->Find(mask) : nullptr;
  if (c == nullptr) {
    PRISM_RETURN_IF_ERROR(EnsureSolver());
    PRISM_ASSIGN_OR_RETURN(c, CompileOnSolver(mask));
    theory->Publish(mask, c);
  }
  compiled_order.push_back(mask);
  return (compiled[mask] = std::move(c)).get();
}

absl::Status Pruner::Impl::OpenScope(const Family& family,
                                     std::optional<double> incumbent_us) {
  PRISM_CHECK(!scope, "a family scope is already open");
  PRISM_RETURN_IF_ERROR(EnsureSolver());
  smt::Solver& s = *solver;
  s.Push();
  scope.emplace();
  scope->family = &family;
  scope->incumbent_us = incumbent_us;
  scope->mask = FlagMask(family);
  scope->encoder = std::make_unique<smt::ExprEncoder>(s, family.ctx(), options.encode);
  for (const Parameter& p : family.parameters()) {
    absl::StatusOr<Term> sym = s.Symbol(p.name, SortKind::kInt);
    if (reserved.contains(p.name) || !sym.ok() || !s.Declare(*sym).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "family ", family.name(), ": parameter '", p.name,
          "' cannot be declared in the SMT theory (its name is taken by a theory symbol)"));
    }
  }
  // Bounds are asserted; exact membership is tracked ("domain.<param>") so that a check may
  // leave it out: a query without it is a relaxation (more assignments), so its unsat answer
  // still proves the decision, and it is much cheaper for Z3.
  for (const Parameter& p : family.parameters()) {
    PRISM_ASSIGN_OR_RETURN(Term b, scope->encoder->DomainBounds(p.var));
    PRISM_RETURN_IF_ERROR(s.Assert(b));
    PRISM_ASSIGN_OR_RETURN(std::optional<Term> member, scope->encoder->DomainMembership(p.var));
    if (member) scope->members.emplace_back(absl::StrCat(kDomainPrefix, p.name), *member);
  }
  return absl::OkStatus();
}

void Pruner::Impl::CloseScope() {
  if (!scope) return;
  scope.reset();  // the encoder's terms die with the solver scope
  solver->Pop();
}

absl::Status Pruner::Impl::Bind(const std::string& name) {
  smt::Solver& s = *solver;
  if (s.IsBound(name)) return absl::OkStatus();
  const Family& family = *scope->family;
  for (size_t i = 0; i < metric_names.size(); ++i) {
    if (metric_names[i] != name) continue;
    absl::StatusOr<Term> t = scope->encoder->Encode(family.MetricOrDefault(name));
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("family ", family.name(), ": metric ", name, ": ", t.status().message()));
    }
    const MetricInfo& info = StandardMetrics()[i];
    return s.Define(metric_symbols[i], *t,
                    family.HasMetric(name)
                        ? ""
                        : absl::StrCat("absent from the family: default ", info.default_value));
  }
  for (size_t f = 0; f < flag_names.size(); ++f) {
    if (flag_names[f] == name) return s.Define(flag_symbols[f], s.Bool((scope->mask >> f) & 1u));
  }
  if (name == kIncumbentNs) {
    const std::optional<double>& inc = scope->incumbent_us;
    return s.Define(incumbent_symbol, inc ? s.Real(IncumbentPs(inc), 1000) : s.Real(0),
                    inc ? absl::StrFormat("incumbent %g us, rounded up to 1 ps", *inc)
                        : "no incumbent: the dominance rules are not asserted");
  }
  auto it = def_index.find(name);
  if (it == def_index.end()) {
    return absl::InternalError(absl::StrCat("theory symbol '", name, "' has no definition"));
  }
  for (const std::string& dep : def_deps[it->second]) PRISM_RETURN_IF_ERROR(Bind(dep));
  return s.Define(defs[it->second].symbol, defs[it->second].body);
}

absl::Status Pruner::Impl::Require(const std::vector<std::string>& labels) {
  smt::Solver& s = *solver;
  const Family& family = *scope->family;
  for (const std::string& label : labels) {
    if (scope->asserted.contains(label)) continue;
    if (absl::StartsWith(label, kDomainPrefix)) {
      for (const auto& [l, member] : scope->members) {
        if (l == label) PRISM_RETURN_IF_ERROR(s.AssertTracked(label, member));
      }
    } else if (absl::StartsWith(label, kConstraintPrefix)) {
      const absl::string_view name = absl::string_view(label).substr(kConstraintPrefix.size());
      for (const NamedConstraint& c : family.constraints()) {
        if (c.name != name) continue;
        absl::StatusOr<Term> t = scope->encoder->Encode(c.condition);
        if (!t.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("family ", family.name(), ": constraint ",
                                                         c.name, ": ", t.status().message()));
        }
        PRISM_RETURN_IF_ERROR(s.AssertTracked(label, *t));
      }
    } else {
      for (const Rule& r : rules) {
        if (r.info.name != label) continue;
        PRISM_RETURN_IF_ERROR(Bind(absl::StrCat("rule_", label)));
        PRISM_RETURN_IF_ERROR(s.AssertTracked(label, r.symbol));
      }
    }
    scope->asserted.insert(label);
  }
  // Divisions encoded so far whose divisor may be 0 exclude those assignments.
  const std::vector<Term>& definedness = scope->encoder->definedness();
  for (; scope->definedness_asserted < definedness.size(); ++scope->definedness_asserted) {
    PRISM_RETURN_IF_ERROR(s.Assert(definedness[scope->definedness_asserted]));
  }
  return absl::OkStatus();
}

std::vector<std::string> Pruner::Impl::DomainLabels() const {
  std::vector<std::string> out;
  for (const auto& [label, member] : scope->members) out.push_back(label);
  return out;
}

std::vector<std::string> Pruner::Impl::AllLabels() const {
  std::vector<std::string> out = DomainLabels();
  for (const NamedConstraint& c : scope->family->constraints()) {
    out.push_back(absl::StrCat(kConstraintPrefix, c.name));
  }
  for (const Rule& r : rules) {
    if (r.info.kind == RuleInfo::Kind::kHard || scope->incumbent_us) out.push_back(r.info.name);
  }
  return out;
}

namespace internal {

absl::Status CheckNames(const CheckData& d, const Family& family) {
  for (const Parameter& p : family.parameters()) {
    if (d.reserved.contains(p.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "family ", family.name(), ": parameter '", p.name,
          "' cannot be declared in the SMT theory (its name is taken by a theory symbol)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<InstanceCheck> Check(const CheckData& d, const CompiledRules& c,
                                    const Family& family, const Assignment& a,
                                    std::optional<double> incumbent_us) {
  InstanceCheck out;
  PRISM_RETURN_IF_ERROR(CheckNames(d, family));
  // Family::Evaluate's answer from its numbers (EvaluateNumbers): Evaluate itself only for
  // what they do not carry (names, domain violations, errors).
  thread_local std::vector<int64_t> values;
  thread_local Family::Numbers numbers;
  std::optional<bool> in_domains;
  if (family.ValuesOf(a, values)) {
    PRISM_ASSIGN_OR_RETURN(in_domains, family.EvaluateNumbers(values, numbers));
  }
  if (!in_domains.value_or(false)) {
    PRISM_ASSIGN_OR_RETURN(Family::Evaluation ev, family.Evaluate(a));
    out.domain_violations = std::move(ev.domain_violations);
    PRISM_CHECK(!out.domain_violations.empty(), "family ", family.name(),
                ": EvaluateNumbers and Evaluate disagree on the domains");
    return out;
  }
  for (size_t i = 0; i < family.constraints().size(); ++i) {
    if (numbers.holds[i] == 0) {
      out.violated.push_back(absl::StrCat(kConstraintPrefix, family.constraints()[i].name));
    }
  }
  std::vector<int64_t> inputs;
  inputs.reserve(d.metric_names.size() + 1);
  inputs.assign(numbers.metrics.begin(), numbers.metrics.end());  // metric_names' order
  inputs.push_back(IncumbentPs(incumbent_us));
  for (size_t j = 0; j < d.metric_names.size(); ++j) {
    out.metrics.emplace(d.metric_names[j], inputs[j]);
  }
  for (size_t i = 0; i < d.rules.size(); ++i) {
    if (d.rules[i].kind == RuleInfo::Kind::kDominance && !incumbent_us) continue;
    absl::StatusOr<bool> holds = c.rules[i].EvaluateBool(inputs);
    if (!holds.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("family ", family.name(), ": rule ",
                                                     d.rules[i].name, " at ",
                                                     AssignmentText(a), ": ",
                                                     holds.status().message()));
    }
    if (!*holds) out.violated.push_back(d.rules[i].name);
  }
  // The bound is undefined only where a rule already fails (e.g. a grid of 0 blocks).
  absl::StatusOr<double> lb_ns = c.cost_lb.EvaluateNumber(inputs);
  out.cost_lower_bound_us = lb_ns.ok() ? *lb_ns / 1000.0 : 0.0;
  return out;
}

absl::StatusOr<bool> Passes(const CheckData& d, const CompiledRules& c, const Family& family,
                            const Assignment& a, std::optional<double> incumbent_us,
                            PassScratch& scratch) {
  std::vector<int64_t>& values = scratch.values;
  if (!family.ValuesOf(a, values)) return family.Evaluate(a).status();  // its naming error
  PRISM_ASSIGN_OR_RETURN(bool in_domains, family.EvaluateNumbers(values, scratch.numbers));
  if (!in_domains) return false;
  for (int64_t holds : scratch.numbers.holds) {
    if (holds == 0) return false;
  }
  std::vector<int64_t>& inputs = scratch.inputs;
  inputs.assign(scratch.numbers.metrics.begin(), scratch.numbers.metrics.end());  // metric_names
  inputs.push_back(IncumbentPs(incumbent_us));
  for (size_t i = 0; i < d.rules.size(); ++i) {
    if (d.rules[i].kind == RuleInfo::Kind::kDominance && !incumbent_us) continue;
    PRISM_ASSIGN_OR_RETURN(bool holds, c.rules[i].EvaluateBool(inputs));
    if (!holds) return false;
  }
  return true;
}

}  // namespace internal

absl::StatusOr<std::string> Pruner::Impl::Dump(const Family& family, absl::string_view query,
                                               const smt::CheckResult& r,
                                               absl::string_view decision,
                                               const smt::CheckOptions& check) {
  if (options.keep_queries) {
    // Deterministic header (no solver times or resource counts): reports compare it byte
    // for byte across runs.
    const std::vector<std::string> stable = {
        absl::StrCat("family: ", family.name()),
        absl::StrCat("target: ", target.name, " (", target.display_name, ")"),
        absl::StrCat("decision: ", decision),
        absl::StrCat("expected answer: ", r.verdict == Verdict::kProved ? "unsat" : "sat"),
        "re-check: z3 THIS_FILE",
    };
    kept_text = solver->ToSmtLib2(query, r.verdict, stable, check);
  }
  if (options.dump_dir.empty()) return std::string();
  const std::vector<std::string> header = {
      absl::StrCat("family: ", family.name()),
      absl::StrCat("target: ", target.name, " (", target.display_name, ")"),
      absl::StrCat("decision: ", decision),
      absl::StrFormat("z3 answer: %s (%s) in %.3f ms, rlimit %d", VerdictName(r.verdict), r.reason,
                      r.stats.seconds * 1e3, r.stats.rlimit_used),
      "re-check: z3 THIS_FILE",
  };
  const std::string path = JoinPath(
      options.dump_dir, absl::StrCat(SanitizeFileName(family.name()), ".", query, ".smt2"));
  PRISM_RETURN_IF_ERROR(WriteFile(path, solver->ToSmtLib2(query, r.verdict, header, check)));
  return path;
}

std::vector<std::string> Pruner::Impl::HittingSet(
    const Family& family, const std::vector<std::vector<std::string>>& samples) const {
  // Candidate labels in a fixed order: constraints, hard rules, dominance rules.
  std::vector<std::string> order;
  std::vector<bool> hard;
  for (const NamedConstraint& c : family.constraints()) {
    order.push_back(absl::StrCat(kConstraintPrefix, c.name));
    hard.push_back(true);
  }
  for (const Rule& r : rules) {
    order.push_back(r.info.name);
    hard.push_back(r.info.kind == RuleInfo::Kind::kHard);
  }
  const auto index_of = [&](const std::string& label) -> size_t {
    return static_cast<size_t>(std::find(order.begin(), order.end(), label) - order.begin());
  };
  // Hard labels alone when every sample violates one: the family is then shown infeasible
  // rather than dominated.
  bool hard_suffices = true;
  for (const auto& sample : samples) {
    bool any = false;
    for (const std::string& l : sample) {
      const size_t i = index_of(l);
      any = any || (i < order.size() && hard[i]);
    }
    hard_suffices = hard_suffices && any;
  }
  std::vector<bool> hit(samples.size(), false);
  std::vector<std::string> chosen;
  while (true) {
    std::vector<int> count(order.size(), 0);
    bool open = false;
    for (size_t k = 0; k < samples.size(); ++k) {
      if (hit[k]) continue;
      open = true;
      for (const std::string& l : samples[k]) {
        const size_t i = index_of(l);
        if (i < order.size() && (hard[i] || !hard_suffices)) ++count[i];
      }
    }
    if (!open) break;
    const size_t best =
        static_cast<size_t>(std::max_element(count.begin(), count.end()) - count.begin());
    if (count[best] == 0) break;  // a sample with no known label (cannot happen)
    chosen.push_back(order[best]);
    for (size_t k = 0; k < samples.size(); ++k) {
      if (std::find(samples[k].begin(), samples[k].end(), order[best]) != samples[k].end()) {
        hit[k] = true;
      }
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

Pruner::Pruner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pruner::Pruner(Pruner&&) noexcept = default;
Pruner& Pruner::operator=(Pruner&&) noexcept = default;
Pruner::~Pruner() = default;

absl::StatusOr<Pruner> Pruner::Create(Target target, PrunerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->target = std::move(target);
  impl->options = std::move(options);
  impl->theory_dir = impl->options.theory_dir;
  if (impl->theory_dir.empty()) {
    PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
    impl->theory_dir = JoinPath(root, "smt_theories");
  }
  const std::optional<std::string> key = TheoryKey(impl->target, impl->theory_dir);
  if (key) {
    impl->theory = FindTheory(*key);
    impl->theory_hash = StableHasher().Add(absl::string_view(*key)).Finish();
  }
  if (impl->theory != nullptr) {
    // Loaded before in this process: the names now, Z3 when first needed.
    const LoadedTheory& t = *impl->theory;
    impl->rule_infos = t.rule_infos;
    impl->metric_names = t.metric_names;
    impl->flag_names = t.flag_names;
    impl->reserved = t.reserved;
    impl->check_data = t.check_data;
    return Pruner(std::move(impl));
  }
  impl->solver = std::make_unique<smt::Solver>();
  PRISM_RETURN_IF_ERROR(impl->Load());
  auto loaded = std::make_shared<LoadedTheory>();
  loaded->rule_infos = impl->rule_infos;
  loaded->metric_names = impl->metric_names;
  loaded->flag_names = impl->flag_names;
  loaded->reserved = impl->reserved;
  loaded->check_data = impl->check_data;
  impl->theory = key ? FindTheory(*key, &loaded) : loaded;
  return Pruner(std::move(impl));
}

const Target& Pruner::target() const { return impl_->target; }
const std::vector<RuleInfo>& Pruner::rules() const { return impl_->rule_infos; }
const smt::SolverStats& Pruner::stats() const {
  static const smt::SolverStats kNone;  // no solver yet: nothing was asked of Z3
  return impl_->solver != nullptr ? impl_->solver->stats() : kNone;
}

absl::StatusOr<InstanceCheck> Pruner::CheckInstance(const Family& family,
                                                    const Assignment& assignment,
                                                    std::optional<double> incumbent_us) {
  return impl_->Check(family, assignment, incumbent_us);
}

absl::StatusOr<InstanceChecker> Pruner::MakeChecker(const Family& family) {
  Impl& m = *impl_;
  PRISM_RETURN_IF_ERROR(m.CheckNames(family));
  const uint32_t mask = FlagMask(family);
  PRISM_RETURN_IF_ERROR(m.GetCompiled(mask).status());
  auto state = std::make_shared<InstanceChecker::State>();
  state->data = m.check_data;
  state->compiled = m.compiled.at(mask);
  state->mask = mask;
  state->family = family.name();
  InstanceChecker checker;
  checker.state_ = std::move(state);
  return checker;
}

absl::StatusOr<InstanceCheck> InstanceChecker::Check(const Family& family,
                                                     const Assignment& assignment,
                                                     std::optional<double> incumbent_us) const {
  PRISM_CHECK(state_ != nullptr, "InstanceChecker::Check on a checker no pruner made");
  if (FlagMask(family) != state_->mask) {
    return absl::InvalidArgumentError(absl::StrCat(
        "family ", family.name(), " sets other metrics than family ", state_->family,
        ", for which this instance checker was made: make one for it (Pruner::MakeChecker)"));
  }
  return internal::Check(*state_->data, *state_->compiled, family, assignment, incumbent_us);
}

absl::StatusOr<Decision> Pruner::Decide(const Family& family, std::optional<double> incumbent_us) {
  Impl& m = *impl_;
  Decision d;
  PRISM_RETURN_IF_ERROR(m.CheckNames(family));
  // Compile the rules for this family's metric flags now: compiling needs a scope of its own.
  PRISM_RETURN_IF_ERROR(m.GetCompiled(FlagMask(family)).status());

  // 1. Concrete probes: a deterministic sample of the space. A passing one is a witness; the
  //    labels the others violate guide the search for a core below.
  std::vector<std::vector<std::string>> samples;
  // The members of each domain (empty when a domain is too large to list).
  std::vector<std::vector<int64_t>> values;
  bool enumerable = true;
  for (const Parameter& p : family.parameters()) {
    absl::StatusOr<std::vector<int64_t>> v = p.domain.Enumerate(int64_t{1} << 16);
    enumerable = enumerable && v.ok();
    values.push_back(v.ok() ? *std::move(v) : std::vector<int64_t>());
  }
  if (m.options.probe_limit > 0) {
    Rng rng(family.StableHash());
    for (int probe = 0; enumerable && probe < m.options.probe_limit; ++probe) {
      Assignment a;
      for (size_t i = 0; i < values.size(); ++i) {
        const auto& v = values[i];
        a[family.parameters()[i].name] =
            v[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(v.size()) - 1))];
      }
      absl::StatusOr<InstanceCheck> c = m.Check(family, a, incumbent_us);
      if (!c.ok()) continue;  // not evaluable (e.g. a division by zero): not an instance
      if (c->ok()) {
        d.result = Feasible{std::move(a), c->cost_lower_bound_us, /*from_probe=*/true};
        return d;
      }
      samples.push_back(std::move(c->violated));
    }
  }

  // 2. Z3, in the family's scope.
  absl::Status status = m.OpenScope(family, incumbent_us);
  if (status.ok()) {
    status = DecideWithZ3(family, incumbent_us, std::move(samples), enumerable ? &values : nullptr,
                          &d);
  }
  m.CloseScope();
  if (!status.ok()) return status;
  return d;
}

absl::Status Pruner::DecideWithZ3(const Family& family, std::optional<double> incumbent_us,
                                  std::vector<std::vector<std::string>> samples,
                                  const std::vector<std::vector<int64_t>>* values,
                                  Decision* out) {
  Impl& m = *impl_;
  Decision& d = *out;
  absl::Status status = absl::OkStatus();
  const auto dump = [&](absl::string_view query, const smt::CheckResult& r,
                        const smt::CheckOptions& options) {
    m.kept_text.clear();
    absl::StatusOr<std::string> f = m.Dump(family, query, r, d.ToString(), options);
    d.smt_text = std::move(m.kept_text);
    d.smt_query = std::string(query);
    if (f.ok()) {
      d.smt_file = *f;
    } else {
      status = f.status();
    }
  };
  const auto classify = [&](const std::vector<std::string>& core) {
    for (const std::string& label : core) {
      if (m.IsDominance(label)) {
        const double inc = incumbent_us.value_or(0);
        d.result = Dominated{inc, inc, core};
        return;
      }
    }
    d.result = Infeasible{core};
  };
  // A model of Z3 as an assignment, checked concretely.
  const auto witness_from = [&](const smt::CheckResult& r, Assignment* w) {
    for (const Parameter& p : family.parameters()) {
      auto it = r.model.find(p.name);
      (*w)[p.name] = it == r.model.end() ? p.domain.Min() : it->second;
    }
    return m.Check(family, *w, incumbent_us);
  };

  // 2a. Core-guided rounds: guess a core from the labels the samples violate (a hitting set)
  //     and ask Z3 whether the family's definitions and just those labels are unsatisfiable —
  //     first with domain bounds only (a relaxation, cheap), then with exact domains. Unsat
  //     proves the decision with that core; a model either is a witness or violates a label
  //     outside the guess, which refines the next guess.
  constexpr int kMaxRounds = 6;
  for (int round = 0; round < kMaxRounds && !samples.empty(); ++round) {
    const std::vector<std::string> guess = m.HittingSet(family, samples);
    PRISM_RETURN_IF_ERROR(m.Require(guess));
    smt::CheckOptions opts;
    opts.want_core = false;
    opts.labels = guess;
    opts.relax = true;  // domain bounds only, and tables free within their ranges
    smt::CheckResult r = m.Run("prune.core_relaxed", opts);
    d.queries.push_back(r.stats);
    const char* query = "prune.core_relaxed";
    if (r.verdict == Verdict::kRefuted && values != nullptr) {
      // The relaxed model, snapped to the nearest domain members, is a cheap candidate.
      Assignment w;
      for (size_t i = 0; i < family.parameters().size(); ++i) {
        const Parameter& p = family.parameters()[i];
        const std::vector<int64_t>& members = (*values)[i];
        const int64_t x = r.model.count(p.name) ? r.model.at(p.name) : p.domain.Min();
        auto it = std::lower_bound(members.begin(), members.end(), x);
        if (it == members.end() || (it != members.begin() && x - *(it - 1) < *it - x)) --it;
        w[p.name] = *it;
      }
      absl::StatusOr<InstanceCheck> c = m.Check(family, w, incumbent_us);
      if (c.ok() && c->ok()) {
        d.result = Feasible{std::move(w), c->cost_lower_bound_us, false};
        return status;
      }
      if (c.ok() && c->domain_violations.empty()) samples.push_back(c->violated);
    }
    if (r.verdict != Verdict::kProved) {
      opts.relax = false;
      const std::vector<std::string> domains = m.DomainLabels();
      PRISM_RETURN_IF_ERROR(m.Require(domains));
      opts.labels->insert(opts.labels->end(), domains.begin(), domains.end());
      r = m.Run("prune.core", opts);
      d.queries.push_back(r.stats);
      query = "prune.core";
    }
    if (r.verdict == Verdict::kProved) {
      classify(guess);
      dump(query, r, opts);
      return status;
    }
    if (r.verdict == Verdict::kUnknown) {
      d.result = Unknown{absl::StrCat(query, ": ", r.reason)};
      return status;
    }
    Assignment w;
    absl::StatusOr<InstanceCheck> c = witness_from(r, &w);
    bool disagrees = !c.ok() || !c->domain_violations.empty();
    if (c.ok()) {
      for (const std::string& l : c->violated) {
        disagrees = disagrees || std::find(guess.begin(), guess.end(), l) != guess.end();
      }
    }
    if (disagrees) {
      // The encoding and the concrete semantics disagree: never act on it.
      d.result = Unknown{absl::StrCat(
          "internal: the Z3 model ", AssignmentText(w), " disagrees with the concrete check: ",
          c.ok() ? absl::StrJoin(c->violated, ", ") + absl::StrJoin(c->domain_violations, ", ")
                 : std::string(c.status().message()))};
      return status;
    }
    if (c->ok()) {
      d.result = Feasible{std::move(w), c->cost_lower_bound_us, false};
      return status;
    }
    samples.push_back(std::move(c->violated));
  }

  // 2b. The full query: every label, core by Z3.
  PRISM_RETURN_IF_ERROR(m.Require(m.AllLabels()));
  const smt::CheckResult r = m.Run("prune.decide");
  d.queries.push_back(r.stats);
  switch (r.verdict) {
    case Verdict::kUnknown:
      d.result = Unknown{absl::StrCat("prune.decide: ", r.reason)};
      break;
    case Verdict::kRefuted: {
      Assignment w;
      absl::StatusOr<InstanceCheck> c = witness_from(r, &w);
      if (!c.ok() || !c->ok()) {
        d.result = Unknown{absl::StrCat(
            "internal: the Z3 witness ", AssignmentText(w), " fails the concrete check: ",
            c.ok() ? absl::StrJoin(c->violated, ", ") + absl::StrJoin(c->domain_violations, ", ")
                   : std::string(c.status().message()))};
      } else {
        d.result = Feasible{std::move(w), c->cost_lower_bound_us, false};
      }
      break;
    }
    case Verdict::kProved: {
      const std::vector<std::string> core = RulesOf(r.core);
      classify(core);
      bool mixed = false;
      for (const std::string& l : core) mixed = mixed || !m.IsDominance(l);
      if (std::holds_alternative<Dominated>(d.result) && mixed) {
        // Is the family infeasible even without the incumbent?
        std::vector<std::string> hard_labels = m.DomainLabels();
        for (const NamedConstraint& c : family.constraints()) {
          hard_labels.push_back(absl::StrCat(kConstraintPrefix, c.name));
        }
        for (const Impl::Rule& rule : m.rules) {
          if (rule.info.kind == RuleInfo::Kind::kHard) hard_labels.push_back(rule.info.name);
        }
        smt::CheckOptions opts;
        opts.labels = hard_labels;
        const smt::CheckResult r2 = m.Run("prune.separate", opts);
        d.queries.push_back(r2.stats);
        if (r2.verdict == Verdict::kProved) {
          d.result = Infeasible{RulesOf(r2.core)};
          dump("prune.separate", r2, opts);
          break;
        }
      }
      dump("prune.decide", r, smt::CheckOptions());
      break;
    }
  }
  return status;
}

absl::Status Pruner::EnumerateInstances(const Family& family, std::optional<double> incumbent_us,
                                        const std::function<bool(const Assignment&)>& visit) {
  Impl& m = *impl_;
  PRISM_RETURN_IF_ERROR(m.CheckNames(family));
  PRISM_ASSIGN_OR_RETURN(const Impl::Compiled* compiled, m.GetCompiled(FlagMask(family)));
  internal::PassScratch scratch;
  const auto leaf = [&](const Assignment& a) -> bool {
    // An assignment whose metrics cannot be evaluated (overflow, division by zero) is not
    // an instance.
    absl::StatusOr<bool> passes =
        internal::Passes(*m.check_data, *compiled, family, a, incumbent_us, scratch);
    return !passes.ok() || !*passes || visit(a);
  };
  if (family.SpaceSize() <= m.options.brute_force_limit) {
    return family.ForEachAssignment(leaf);
  }
  // Depth-first over the parameters in order; Z3 cuts the subtrees it proves empty.
  std::vector<std::vector<int64_t>> values;
  for (const Parameter& p : family.parameters()) {
    absl::StatusOr<std::vector<int64_t>> v = p.domain.Enumerate();
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("family ", family.name(), ": parameter '",
                                                     p.name, "': ", v.status().message()));
    }
    values.push_back(*std::move(v));
  }
  absl::Status built = m.OpenScope(family, incumbent_us);  // makes the solver if need be
  if (built.ok()) built = m.Require(m.AllLabels());
  if (!built.ok()) {
    m.CloseScope();
    return built;
  }
  smt::Solver& s = *m.solver;
  const size_t n = family.parameters().size();
  std::vector<Term> prefix;
  Assignment a;
  bool stop = false, cut = false;
  int64_t leaves = 0;
  std::function<void(size_t)> dfs = [&](size_t depth) {
    if (stop) return;
    if (depth == n) {
      ++leaves;
      stop = !leaf(a);
      return;
    }
    if (m.PastDeadline()) {
      stop = cut = true;
      return;
    }
    const Parameter& p = family.parameters()[depth];
    absl::StatusOr<Term> sym = s.Symbol(p.name, SortKind::kInt);
    PRISM_CHECK(sym.ok());
    for (int64_t v : values[depth]) {
      if (stop) return;
      a[p.name] = v;
      if (depth + 1 < n) {
        s.Push();
        prefix.push_back(s.Eq(*sym, s.Int(v)));
        smt::CheckOptions opts;
        opts.assumptions = prefix;
        opts.want_core = false;
        const smt::CheckResult r = m.Run("prune.enumerate", opts);
        const bool empty = r.verdict == Verdict::kProved;
        if (!empty) dfs(depth + 1);
        prefix.pop_back();
        s.Pop();
      } else {
        dfs(depth + 1);
      }
    }
    a.erase(p.name);
  };
  dfs(0);
  m.CloseScope();
  if (cut) {
    return absl::DeadlineExceededError(absl::StrCat(
        "family ", family.name(), ": the deadline passed while its instances were enumerated (",
        leaves, " assignments of ", family.SpaceSize(),
        " evaluated); give the search a larger budget"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Assignment>> Pruner::EnumerateInstances(
    const Family& family, std::optional<double> incumbent_us, int64_t max_count) {
  std::vector<Assignment> out;
  if (max_count <= 0) return out;
  PRISM_RETURN_IF_ERROR(EnumerateInstances(family, incumbent_us, [&](const Assignment& a) {
    out.push_back(a);
    return static_cast<int64_t>(out.size()) < max_count;
  }));
  return out;
}

}  // namespace prism::prune
