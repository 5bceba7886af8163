#include "prism/equiv/runner.h"

#include "prism/base/check.h"

namespace prism::equiv {

absl::string_view StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kSaturated: return "saturated";
    case StopReason::kIterationLimit: return "iteration limit";
    case StopReason::kNodeLimit: return "node limit";
    case StopReason::kTimeLimit: return "time limit";
    case StopReason::kGoalReached: return "goal reached";
  }
  return "?";
}

Runner::Runner(EGraph* g, RunnerLimits limits) : g_(g), limits_(limits) {
  PRISM_CHECK(g_ != nullptr);
}

Runner& Runner::StopWhenEquivalent(EClassId a, EClassId b) {
  goals_.push_back({a, b});
  return *this;
}

bool Runner::GoalReached() const {
  if (goals_.empty()) return false;
  for (const auto& [a, b] : goals_) {
    if (!g_->Equivalent(a, b)) return false;
  }
  return true;
}

StopReason Runner::Run(absl::Span<const Rewrite> rewrites) {
  const absl::Time start = absl::Now();
  auto out_of_time = [&] { return absl::Now() - start > limits_.time_limit; };
  auto finish = [&](StopReason r) {
    if (!g_->clean()) g_->Rebuild();
    elapsed_ = absl::Now() - start;
    return r;
  };
  g_->Rebuild();
  if (GoalReached()) return finish(StopReason::kGoalReached);
  std::vector<int> banned_until(rewrites.size(), 0);
  std::vector<int> times_banned(rewrites.size(), 0);
  for (int iter = 0;; ++iter) {
    if (iter >= limits_.max_iterations) return finish(StopReason::kIterationLimit);
    IterationReport rep;
    const size_t classes_before = g_->num_classes();
    const size_t nodes_before = g_->num_nodes();

    absl::Time t = absl::Now();
    std::vector<std::vector<SearchMatch>> matches(rewrites.size());
    for (size_t r = 0; r < rewrites.size(); ++r) {
      if (banned_until[r] > iter) {
        ++rep.banned;
        continue;
      }
      matches[r] = rewrites[r].Search(*g_);
      size_t n = 0;
      for (const SearchMatch& m : matches[r]) n += m.substs.size();
      if (limits_.match_limit > 0 && n > (limits_.match_limit << times_banned[r])) {
        banned_until[r] = iter + (limits_.ban_length << times_banned[r]);
        ++times_banned[r];
        matches[r].clear();
        ++rep.banned;
        continue;
      }
      rep.matches += n;
      if (out_of_time()) {
        iterations_.push_back(rep);
        return finish(StopReason::kTimeLimit);
      }
    }
    rep.search_time = absl::Now() - t;

    t = absl::Now();
    bool node_limit = false, time_limit = false;
    for (size_t r = 0; r < rewrites.size(); ++r) {
      if (matches[r].empty()) continue;
      rep.applied += rewrites[r].Apply(*g_, matches[r]);
      if (g_->num_nodes() > limits_.max_nodes) {
        node_limit = true;
        break;
      }
      if (out_of_time()) {
        time_limit = true;
        break;
      }
    }
    rep.apply_time = absl::Now() - t;

    t = absl::Now();
    rep.applied += g_->Rebuild();
    rep.rebuild_time = absl::Now() - t;
    rep.nodes = g_->num_nodes();
    rep.classes = g_->num_classes();
    iterations_.push_back(rep);

    if (GoalReached()) return finish(StopReason::kGoalReached);
    if (node_limit || g_->num_nodes() > limits_.max_nodes) return finish(StopReason::kNodeLimit);
    if (time_limit || out_of_time()) return finish(StopReason::kTimeLimit);
    const bool changed = rep.applied > 0 || g_->num_classes() != classes_before ||
                         g_->num_nodes() != nodes_before;
    if (!changed && rep.banned == 0) return finish(StopReason::kSaturated);
  }
}

}  // namespace prism::equiv
