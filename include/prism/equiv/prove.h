// Two-sided equivalence proofs: both terms go into one e-graph, which is saturated under the
// rules (so rewriting happens from either side, unlike a one-sided check), and a proof is the
// explanation of their equality.
//
//   ProveResult r = ProveEquivalent(ctx, env, candidate, program_term, rules);
//   if (r.verdict == Verdict::kProved) std::cout << r.proof->ToString(&ctx);
//   if (r.verdict == Verdict::kRefuted) std::cout << r.counterexample->ToString();
//
// Answers: kProved with a flat proof (replayable by proofcheck/, writable with
// proof_json.h); kRefuted when the saturation did not merge the terms and random testing in
// f64 (refute.h) found inputs on which they differ — a counterexample, so no proof exists;
// kUnknown otherwise (the reason names the runner's stop reason and what random testing
// saw). Random testing runs only after saturation failed, so proved pairs pay nothing for it.
#ifndef PRISM_EQUIV_PROVE_H_
#define PRISM_EQUIV_PROVE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "prism/equiv/explain.h"
#include "prism/equiv/refute.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"

namespace prism::equiv {

enum class Verdict : uint8_t { kProved, kRefuted, kUnknown };
absl::string_view VerdictName(Verdict v);  // "proved", "refuted", "unknown"

struct ProveOptions {
  RunnerLimits limits;
  bool refute = true;  // run random testing when saturation does not prove the pair
  RandomTestOptions random_test;
};

struct ProveResult {
  Verdict verdict = Verdict::kUnknown;
  std::string reason;                    // e.g. "saturated without merging the terms"
  std::optional<Explanation> proof;      // when proved
  std::optional<Counterexample> counterexample;  // when refuted
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
