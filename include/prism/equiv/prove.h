// Two-sided equivalence proofs: both terms go into one e-graph, which is saturated under the
// rules (so rewriting happens from either side, unlike a one-sided check), and a proof is the
// explanation of their equality.
//
//   ProveResult r = ProveEquivalent(ctx, env, candidate, program_term, rules);
//   if (r.verdict == Verdict::kProved) std::cout << r.proof->ToString(&ctx);
//
// This version answers kProved or kUnknown (with the runner's stop reason); refutation by
// random testing is not implemented yet and kRefuted is never returned.
#ifndef PRISM_EQUIV_PROVE_H_
#define PRISM_EQUIV_PROVE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "prism/equiv/explain.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"

namespace prism::equiv {

enum class Verdict : uint8_t { kProved, kRefuted, kUnknown };
absl::string_view VerdictName(Verdict v);  // "proved", "refuted", "unknown"

struct ProveOptions {
  RunnerLimits limits;
};

struct ProveResult {
  Verdict verdict = Verdict::kUnknown;
  std::string reason;                    // e.g. "saturated without merging the terms"
  std::optional<Explanation> proof;      // when proved
  StopReason stop = StopReason::kSaturated;
  size_t iterations = 0;
  size_t nodes = 0;
  size_t classes = 0;
  absl::Duration time;
  std::vector<std::string> diagnostics;  // TensorAnalysis::diagnostics() of the run
};

ProveResult ProveEquivalent(ExprContext& ctx, const TensorEnv& env, const Term& a, const Term& b,
                            const RuleSet& rules, const ProveOptions& options = {});

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_PROVE_H_
