// search/: Proof, ranking and pruning of the candidates (parallel, deterministic). (searcher.h)
#include "searcher.h"

namespace prism::search::internal {

int Searcher::Workers(size_t jobs) const {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int t = config_.threads > 0 ? config_.threads : cores;
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(t), jobs)));
}

absl::Status Searcher::ProveAll() {
  return ParallelFor(
      "prove", candidates_.size(), NoWorkerState,
      [&](NoState&, size_t i) {
        Candidate& c = candidates_[i];
        if (absl::Now() > deadline_) return;
        // A fresh context per candidate: parameter domains differ between candidates.
        ExprContext pctx;
        absl::StatusOr<equiv::RuleSet> rules = equiv::LoadDefaultRules(pctx);
        if (!rules.ok()) {
          c.status = rules.status();
          return;
        }
        equiv::ProveOptions options = equiv::SGraphProveOptions();
        options.random_test.max_ops = config_.refute_max_ops;
        absl::StatusOr<std::vector<equiv::ProveResult>> proofs =
            equiv::ProveSGraph(pctx, c.graph, program_, *rules, options);
        if (!proofs.ok()) {
          c.status = proofs.status();
        } else {
          c.proof = std::move((*proofs)[0]);
        }
      });
}

absl::Status Searcher::PruneAndRank() {
  std::vector<size_t> proved;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    Candidate& c = candidates_[i];
    PRISM_RETURN_IF_ERROR(c.status);
    if (!c.proof) {
      result_.budget_exhausted = true;
      continue;
    }
    if (c.proof->verdict != equiv::Verdict::kProved) {
      ++result_.funnel.unproved;
      if (c.proof->verdict == equiv::Verdict::kRefuted) ++result_.funnel.refuted;
      continue;
    }
    ++result_.funnel.proved;
    proved.push_back(i);
  }
  PRISM_RETURN_IF_ERROR(ParallelFor("rank", proved.size(), [this] { return MakePruner(); }, [&](prune::Pruner& pruner, size_t k) {
    Candidate& c = candidates_[proved[k]];
    c.status = Rank(pruner, c);
  }));
  for (size_t i : proved) PRISM_RETURN_IF_ERROR(candidates_[i].status);
  // The incumbent: the ranking model's estimate of the best family (RankUs, at least its
  // lower bound). Dominance: a family is pruned only when Z3 proves that no instance's lower
  // bound is below the incumbent, so the family the ranking puts first always survives.
  // Families whose best instance's lower bound is already below it cannot be dominated
  // and are not asked about.
  for (size_t i : proved) {
    const Candidate& c = candidates_[i];
    if (c.cost_us >= 0 && (!incumbent_ || RankUs(c) < *incumbent_)) incumbent_ = RankUs(c);
  }
  result_.incumbent_us = incumbent_;
  std::vector<size_t> dearer;
  if (config_.prune && incumbent_) {
    for (size_t i : proved) {
      const Candidate& c = candidates_[i];
      if (c.cost_us >= *incumbent_) dearer.push_back(i);
    }
  }
  // Every decision runs on a pruner of its own: Z3's answers and cores depend on what its
  // context has seen, and with a pruner per worker the rule credited with a family depended
  // on which families that worker decided before (`--threads 1` and `--threads 3` credited
  // occupancy_floor with 3 and 2 gqa b=8 families). A fresh pruner costs a few milliseconds.
  PRISM_RETURN_IF_ERROR(ParallelFor("prune", dearer.size(), NoWorkerState, [&](NoState&, size_t k) {
    Candidate& c = candidates_[dearer[k]];
    absl::StatusOr<prune::Pruner> pruner = MakePruner();
    if (!pruner.ok()) {
      c.status = pruner.status();
      return;
    }
    absl::StatusOr<prune::Decision> d = pruner->Decide(*c.family, incumbent_);
    if (d.ok()) {
      c.decision = *std::move(d);
      // Past the deadline the decision may be Unknown for want of time: it prunes nothing,
      // and the caller is told the search did not finish.
      if (!c.decision->prunes() && absl::Now() > deadline_) c.cut_short = true;
    } else {
      c.status = d.status();
    }
  }));
  for (size_t i : proved) {
    Candidate& c = candidates_[i];
    PRISM_RETURN_IF_ERROR(c.status);
    if (c.cut_short) result_.budget_exhausted = true;
    if (c.cut_short && c.cost_us < 0) continue;  // not ranked in time: neither kept nor pruned
    if (c.decision && c.decision->prunes()) {
      const std::vector<std::string>& rules_hit =
          std::holds_alternative<prune::Infeasible>(c.decision->result)
              ? std::get<prune::Infeasible>(c.decision->result).rules
              : std::get<prune::Dominated>(c.decision->result).rules;
      for (const std::string& r : rules_hit) ++result_.funnel.pruned_by_rule[r];
      if (config_.record_pruned) {
        PrunedFamily p = PrunedOf(c);
        const bool infeasible = std::holds_alternative<prune::Infeasible>(c.decision->result);
        p.verdict = infeasible ? "infeasible" : "dominated";
        p.rules = rules_hit;
        if (!infeasible) p.incumbent_us = std::get<prune::Dominated>(c.decision->result).incumbent_us;
        p.decision = c.decision->ToString();
        p.smt_query = c.decision->smt_query;
        p.smt2 = c.decision->smt_text;
        result_.pruned.push_back(std::move(p));
      }
      continue;
    }
    if (c.cost_us < 0) {
      ++result_.funnel.pruned_by_rule["no_feasible_instance"];
      if (config_.record_pruned) {
        PrunedFamily p = PrunedOf(c);
        p.verdict = "no_feasible_instance";
        if (c.decision) p.decision = c.decision->ToString();
        result_.pruned.push_back(std::move(p));
      }
      continue;
    }
    FamilyResult fr;
    fr.cost_us = c.cost_us;
    fr.rank_us = RankUs(c);
    fr.best = c.best;
    fr.proof_steps = c.proof->proof->steps.size();
    fr.kernels = static_cast<int>(c.graph.kernels().size());
    fr.graph = std::make_unique<SGraph>(std::move(c.graph));
    result_.families.push_back(std::move(fr));
  }
  return absl::OkStatus();
}

PrunedFamily Searcher::PrunedOf(Candidate& c) {
  PrunedFamily p;
  p.name = c.family->name();
  p.kernels = static_cast<int>(c.graph.kernels().size());
  p.cost_us = c.cost_us;
  p.graph = std::make_unique<SGraph>(std::move(c.graph));
  return p;
}

absl::StatusOr<prune::Pruner> Searcher::MakePruner() const {
  prune::PrunerOptions options;
  options.brute_force_limit = config_.brute_force_limit;
  options.budget = config_.query_budget;
  options.keep_queries = config_.record_pruned;
  options.deadline = deadline_;  // no query outlives the search's budget
  return prune::Pruner::Create(target_, options);
}

double Searcher::RankUs(const Candidate& c) const {
  const double extra_ns = static_cast<double>(target_.launch_overhead_ns - target_.launch_floor_ns);
  return c.cost_us + static_cast<double>(c.graph.kernels().size()) * std::max(0.0, extra_ns) / 1000.0;
}

absl::Status Searcher::Rank(prune::Pruner& pruner, Candidate& c) const {
  c.fctx = std::make_unique<ExprContext>();
  PRISM_ASSIGN_OR_RETURN(prune::Family family, BuildFamily(c.graph, *c.fctx));
  c.family = std::move(family);
  absl::StatusOr<std::vector<Assignment>> enumerated =
      pruner.EnumerateInstances(*c.family, std::nullopt, config_.instances_per_family);
  if (absl::IsDeadlineExceeded(enumerated.status())) {
    c.cut_short = true;  // the search's budget ran out before this family's instances
    return absl::OkStatus();
  }
  PRISM_RETURN_IF_ERROR(enumerated.status());
  const std::vector<Assignment>& instances = *enumerated;
  for (const Assignment& a : instances) {
    PRISM_ASSIGN_OR_RETURN(prune::InstanceCheck check, pruner.CheckInstance(*c.family, a, std::nullopt));
    if (!check.ok()) continue;
    if (c.cost_us < 0 || check.cost_lower_bound_us < c.cost_us) {
      c.cost_us = check.cost_lower_bound_us;
      c.best = a;
    }
  }
  if (c.cost_us < 0 && config_.prune) {
    // On a pruner of its own, like the dominance decisions (PruneAndRank).
    PRISM_ASSIGN_OR_RETURN(prune::Pruner fresh, MakePruner());
    PRISM_ASSIGN_OR_RETURN(prune::Decision d, fresh.Decide(*c.family, std::nullopt));
    c.decision = std::move(d);
    if (!c.decision->prunes() && absl::Now() > deadline_) c.cut_short = true;
  }
  return absl::OkStatus();
}

}  // namespace prism::search::internal
