// Proof files (docs/proofs.md): a flat proof (explain.h) written as versioned JSON together
// with everything an independent checker needs to replay it — the stable hashes of the rule
// files it was made with, the shapes of the inputs and the degrees of the parallel axes.
// `prism check-proof` (proofcheck/checker.h) reads these files; it does not link equiv/.
//
//   ProveResult r = ProveEquivalent(ctx, env, candidate, program_term, rules);
//   nlohmann::ordered_json j = ProofToJson(*r.proof, env, rules, &ctx);
//   PRISM_RETURN_IF_ERROR(WriteFile("rmsnorm_linear.proof.json", j.dump(2)));
//
// {"format": "prism.proof", "version": 1,
//  "rule_files": [{"name": "algebra.rules", "hash": "3f0c..."}, ...],
//  "env": {"inputs": [{"name": "W", "shape": [4096, 6144]}, ...],
//          "axes": [{"name": "F", "degree": "F"}, {"name": "x", "degree": "g"}]},
//  "start": "(combine ...)", "goal": "(matmul (rms_norm X 1 1e-06) W)",
//  "steps": [{"kind": "rule", "rule": "split-k", "direction": "forward", "position": [0, 0],
//             "before": "...", "after": "..."}, ...]}
#ifndef PRISM_EQUIV_PROOF_JSON_H_
#define PRISM_EQUIV_PROOF_JSON_H_

#include "nlohmann/json.hpp"
#include "prism/equiv/explain.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/tensor_analysis.h"

namespace prism::equiv {

inline constexpr int kProofFormatVersion = 1;

// The proof file of `proof`, made with `rules` (every source of `rules` is cited) under `env`
// (the shapes of the inputs that occur in the start or goal term are written, sorted by name;
// the axes declared by any term of the proof are written with their degrees). `ctx` prints
// symbolic sizes and must be the context the terms were parsed with.
nlohmann::ordered_json ProofToJson(const Explanation& proof, const TensorEnv& env,
                                   const RuleSet& rules, const ExprContext* ctx);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_PROOF_JSON_H_
