// The pruner: decides a family (prune/family.h) against one GPU target with Z3, using the
// rules in smt_theories/rules/*.smt2, the resource theory (resources.smt2) and the lower-bound
// cost model (cost.smt2) — all data files a researcher can read and re-run.
//
//   PRISM_ASSIGN_OR_RETURN(Target h200, LoadTarget("h200"));
//   PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(h200));
//   PRISM_ASSIGN_OR_RETURN(prune::Decision d, pruner.Decide(family, /*incumbent_us=*/15.0));
//   if (auto* inf = std::get_if<prune::Infeasible>(&d.result)) { ... inf->rules ... }
//   if (d.prunes()) continue;           // only Infeasible and Dominated prune
//
// A decision, for the family's parameters ranging over their domains:
//   Infeasible{rules}   no assignment satisfies the family's constraints and the hard rules;
//                       `rules` is the unsat core: rule names ("smem_capacity") and family
//                       constraints ("constraint.<name>").
//   Dominated{...}      every assignment that satisfies them has a cost lower bound (cost.smt2)
//                       >= the incumbent, so no instance can beat it; `rules` is the core
//                       (it contains at least one dominance rule).
//   Feasible{witness}   an assignment satisfying every constraint and rule (and, with an
//                       incumbent, whose lower bound is below it), checked concretely.
//   Unknown{reason}     the budget or the deadline (PrunerOptions) ran out, or the solver
//                       could not decide.
// Soundness: Unknown never prunes; a zero budget makes every query Unknown, so nothing is
// pruned (a family can still be shown Feasible by a concrete witness, which prunes nothing).
//
// How (all within one incremental Z3 context, push/pop per family):
//   1. Probes: a deterministic sample of assignments (seeded by the family's stable hash) is
//      evaluated concretely — the family's metrics by expr/, the rules compiled from the
//      theory files. A passing one is a Feasible witness, no solver needed.
//   2. Core-guided rounds: the labels the failed probes violate give a guessed core (a greedy
//      hitting set, hard labels first). Z3 checks the family with only those labels, first
//      relaxed (domain bounds instead of exact members, tables free within their ranges: a
//      superset of the assignments, so unsat still proves) and then exactly. Unsat decides
//      with that core; a model that passes everything is a witness; any other model adds a
//      sample and refines the guess.
//   3. Otherwise one full query with every label, its unsat core minimised by Z3; when that
//      core mixes hard and dominance rules, a second query tells Infeasible from Dominated.
// Every pruning decision is therefore an unsat answer of Z3 on exactly the query that is
// dumped (options.dump_dir): `z3 FILE` answers unsat and prints the same core (plus, for
// exact queries, "domain.<p>" labels, which are the family's space, not rules).
//
// Z3 only when asked: the first Pruner of a process for a theory (target constants and theory
// files, read at Create) loads it into a Z3 context and keeps what needs no solver — the rule
// list, the checks' data, the rules compiled per set of metric flags — for the process. Later
// pruners of that theory start from it without a Z3 context and make theirs only when Z3 is
// asked something (a decision the probes do not settle, a depth-first enumeration). The new
// context loads the theory and repeats the compilations the pruner made before, in order,
// so it has the history an eagerly made one would have had (Z3's answers and cores depend on
// it). A theory changed on disk between Create and that moment is a FailedPrecondition error.
//
// Thread safety: none; one Pruner (one Z3 context) per worker. Pruners on different threads
// share the process's loaded theories safely.
#ifndef PRISM_PRUNE_PRUNER_H_
#define PRISM_PRUNE_PRUNER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prism/expr/eval.h"
#include "prism/prune/family.h"
#include "prism/smt/encode.h"
#include "prism/smt/solver.h"
#include "prism/smt/target.h"

namespace prism::prune {

struct RuleInfo {
  enum class Kind { kHard, kDominance };
  std::string name;       // file stem, e.g. "smem_capacity"; the label in unsat cores
  Kind kind = Kind::kHard;
  std::string soundness;  // the "; soundness:" argument of the file
  std::string path;       // the rule file
};

struct PrunerOptions {
  // Budget of each Z3 query. Budget::Zero() makes every query Unknown (nothing is pruned).
  smt::Budget budget;
  // When non-empty, each query that decided a family is written to
  // <dump_dir>/<family name>.<query>.smt2 (the directory is created).
  std::string dump_dir;
  // When true, each decision that a query decided keeps that query in memory
  // (Decision::smt_text), with a header free of timings so that the text is deterministic —
  // for reports (report/report.h) that ship every deciding query.
  bool keep_queries = false;
  // Concrete assignments tried for a witness before asking Z3 (0: no probes, no guessed core;
  // the full query decides). The probes are a deterministic sample of the family's space.
  int probe_limit = 16;
  // EnumerateInstances evaluates every assignment of spaces up to this size; larger spaces
  // are walked depth-first with a Z3 query per inner node to cut infeasible subtrees.
  int64_t brute_force_limit = int64_t{1} << 16;
  // Where resources.smt2, cost.smt2 and rules/ are; empty: DataDir()/smt_theories.
  std::string theory_dir;
  smt::EncodeOptions encode;
  // The caller's wall-clock deadline (a search's budget). A Z3 query is not started after
  // it (it answers Unknown, reason "deadline passed", so nothing is pruned for want of
  // time), and a query started before it runs at most until it (Budget::timeout_ms capped
  // by the time left). A depth-first EnumerateInstances walk stops at it with
  // DeadlineExceeded; brute-force walks (spaces up to brute_force_limit, evaluated without
  // Z3) are not cut. Default: none.
  absl::Time deadline = absl::InfiniteFuture();
};

struct Infeasible {
  std::vector<std::string> rules;
};
struct Dominated {
  // Proved: every feasible assignment has cost_lb_ns >= lower_bound_us * 1000. (The bound
  // proved is the incumbent itself.)
  double lower_bound_us = 0;
  double incumbent_us = 0;
  std::vector<std::string> rules;
};
struct Feasible {
  Assignment witness;
  double cost_lower_bound_us = 0;  // cost_lb_ns of the witness, in microseconds
  bool from_probe = false;         // found by a concrete probe, without a Z3 query
};
struct Unknown {
  std::string reason;
};

struct Decision {
  std::variant<Infeasible, Dominated, Feasible, Unknown> result;
  // The Z3 queries this decision made (empty when a probe decided).
  std::vector<smt::QueryStats> queries;
  // The dumped deciding query, when options.dump_dir is set and a query decided.
  std::string smt_file;
  // With options.keep_queries, the deciding query as SMT-LIB2 (Solver::ToSmtLib2 with a
  // header naming the family, target, decision and expected answer, no timings), and its name
  // ("prune.decide", "prune.core", "prune.separate", ...). Empty when no query decided.
  std::string smt_text;
  std::string smt_query;

  bool prunes() const {
    return std::holds_alternative<Infeasible>(result) || std::holds_alternative<Dominated>(result);
  }
  // "infeasible (smem_capacity, constraint.k_tile_mma)", "dominated: every lower bound >=
  // 15 us, the incumbent 15 us (bandwidth_bound)", "feasible: F=32, S=3, T=128, g=192 (lower
  // bound 12.1 us)", "unknown: prune.decide: max. resource limit exceeded".
  std::string ToString() const;
};

// A concrete assignment checked against everything the pruner knows.
struct InstanceCheck {
  std::vector<std::string> domain_violations;  // as Family::Evaluation
  // Violated family constraints ("constraint.<name>"), hard rules and, with an incumbent,
  // dominance rules, in rule order.
  std::vector<std::string> violated;
  std::map<std::string, int64_t> metrics;
  double cost_lower_bound_us = 0;  // cost_lb_ns / 1000 (0 outside the domains)
  bool ok() const { return domain_violations.empty() && violated.empty(); }
};

// Pruner::CheckInstance without the pruner: the rules and the cost bound compiled for one
// family's metric flags (plain data, no solver). Pruner::MakeChecker makes one on the pruner's
// thread; Check is const and may run on any number of threads at once, each with families of
// its own (an ExprContext is not thread-safe), such as the sampling's workers, which then need
// no pruner (a Z3 context and the theories parsed) each.
class InstanceChecker {
 public:
  InstanceChecker() = default;  // unusable until assigned from MakeChecker
  // What Pruner::CheckInstance returns for `family` and `assignment`. `family` must set the
  // same metrics as the family the checker was made for (InvalidArgument naming both if not);
  // copies of that family, or families built from the same graph, do.
  absl::StatusOr<InstanceCheck> Check(const Family& family, const Assignment& assignment,
                                      std::optional<double> incumbent_us) const;

 private:
  friend class Pruner;
  struct State;
  std::shared_ptr<const State> state_;
};

class Pruner {
 public:
  // Loads the theories for `target`. Errors: NotFound for missing theory files,
  // InvalidArgument "<file>:<line>: ..." for malformed ones (a rule file must define exactly
  // one Bool `rule_<stem>` and carry "; kind: hard|dominance" and "; soundness:").
  static absl::StatusOr<Pruner> Create(Target target, PrunerOptions options = {});

  Pruner(Pruner&&) noexcept;
  Pruner& operator=(Pruner&&) noexcept;
  ~Pruner();

  // Decides `family` (see the file comment). `incumbent_us`: the time of the best instance
  // known so far (an upper bound on the optimum); without it nothing is Dominated. Errors:
  // InvalidArgument if the family cannot be encoded (e.g. a parameter named like a theory
  // symbol, a division by the constant 0) or dumping fails.
  absl::StatusOr<Decision> Decide(const Family& family, std::optional<double> incumbent_us);

  // Calls `visit` on every assignment that satisfies the family's domains, constraints and
  // the hard rules (and, with an incumbent, whose cost lower bound is below it), in
  // lexicographic order of the parameter values (first parameter slowest, the order of
  // Family::ForEachAssignment); stops when `visit` returns false. Deterministic: leaves are
  // decided by concrete evaluation, Z3 only cuts subtrees it proves empty (an Unknown answer
  // descends), so the output does not depend on the budget. Past PrunerOptions::deadline a
  // depth-first walk stops with DeadlineExceeded (the assignments visited before it were
  // visited); a brute-force walk always completes.
  absl::Status EnumerateInstances(const Family& family, std::optional<double> incumbent_us,
                                  const std::function<bool(const Assignment&)>& visit);
  // The first `max_count` of those; DeadlineExceeded as above (nothing returned).
  absl::StatusOr<std::vector<Assignment>> EnumerateInstances(const Family& family,
                                                             std::optional<double> incumbent_us,
                                                             int64_t max_count);

  // A checker of `family`'s instances that needs no pruner (InstanceChecker). Errors: as
  // CheckInstance's for the family itself (a parameter named like a theory symbol).
  absl::StatusOr<InstanceChecker> MakeChecker(const Family& family);

  // Evaluates one assignment (every parameter assigned) against constraints and rules.
  absl::StatusOr<InstanceCheck> CheckInstance(const Family& family, const Assignment& assignment,
                                              std::optional<double> incumbent_us);

  const Target& target() const;
  const std::vector<RuleInfo>& rules() const;
  // Statistics of every Z3 query this pruner made, by query name ("prune.decide",
  // "prune.separate", "prune.enumerate").
  const smt::SolverStats& stats() const;

 private:
  struct Impl;
  explicit Pruner(std::unique_ptr<Impl> impl);
  absl::Status DecideWithZ3(const Family& family, std::optional<double> incumbent_us,
                            std::vector<std::vector<std::string>> samples,
                            const std::vector<std::vector<int64_t>>* values, Decision* out);
  std::unique_ptr<Impl> impl_;
};

}  // namespace prism::prune

#endif  // PRISM_PRUNE_PRUNER_H_
