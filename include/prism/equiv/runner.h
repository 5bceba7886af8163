// The equality-saturation loop (egg: run.rs). Each iteration searches every rewrite in the
// clean graph (read-only), applies the matches, and rebuilds; the loop stops when nothing
// changes (saturated), or on a limit, or when the goal pairs become equivalent.
//
//   Runner runner(&g, RunnerLimits{.max_iterations = 20, .max_nodes = 50'000});
//   runner.StopWhenEquivalent(a, b);
//   StopReason why = runner.Run(rules.rewrites());
//   // why == StopReason::kGoalReached, or the limit that stopped it
//
// Determinism: with the same graph, rewrites and limits (except the time limit), Run performs
// the same operations in the same order and produces the same ids.
//
// Scheduling (egg's BackoffScheduler): a rewrite whose matches in one iteration exceed
// match_limit × 2^(times banned) is skipped for ban_length × 2^(times banned) iterations; the
// graph is never declared saturated while a rewrite is banned. match_limit 0 disables it.
#ifndef PRISM_EQUIV_RUNNER_H_
#define PRISM_EQUIV_RUNNER_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/rewrite.h"

namespace prism::equiv {

enum class StopReason : uint8_t {
  kSaturated,       // an iteration changed nothing
  kIterationLimit,  // max_iterations iterations ran
  kNodeLimit,       // the graph grew past max_nodes
  kTimeLimit,       // time_limit elapsed
  kGoalReached,     // every StopWhenEquivalent pair is equivalent (egg's hook-based stop)
};
absl::string_view StopReasonName(StopReason r);  // "saturated", "iteration limit", ...

struct RunnerLimits {
  int max_iterations = 30;
  size_t max_nodes = 20'000;
  absl::Duration time_limit = absl::Seconds(10);
  size_t match_limit = 2'000;
  int ban_length = 3;
};

struct IterationReport {
  size_t nodes = 0;     // after the iteration's rebuild
  size_t classes = 0;
  size_t matches = 0;   // substitutions found
  size_t applied = 0;   // unions that changed the graph (including rebuild's congruences)
  size_t banned = 0;    // rewrites skipped by the scheduler
  absl::Duration search_time, apply_time, rebuild_time;
};

class Runner {
 public:
  explicit Runner(EGraph* g, RunnerLimits limits = {});
  // Stop as soon as the classes of `a` and `b` are equal (may be called several times).
  Runner& StopWhenEquivalent(EClassId a, EClassId b);
  // Runs to a stop; the graph is clean afterwards.
  StopReason Run(absl::Span<const Rewrite> rewrites);

  const std::vector<IterationReport>& iterations() const { return iterations_; }
  absl::Duration elapsed() const { return elapsed_; }

 private:
  bool GoalReached() const;
  EGraph* g_;
  RunnerLimits limits_;
  std::vector<std::pair<EClassId, EClassId>> goals_;
  std::vector<IterationReport> iterations_;
  absl::Duration elapsed_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_RUNNER_H_
