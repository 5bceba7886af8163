// Test helper: every proof the equiv tests produce is written as a proof file (proof_json.h)
// and checked by the independent checker (proofcheck/checker.h) against the shipped rule
// files — the checker shares no code with the prover (egg re-checks its explanations the same
// way).
//
//   EXPECT_OK(CheckWithProofChecker(*r.proof, env, rules, &ctx));
#ifndef PRISM_TESTS_EQUIV_PROOF_CHECK_H_
#define PRISM_TESTS_EQUIV_PROOF_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/equiv/proof_json.h"
#include "prism/proofcheck/checker.h"

namespace prism::equiv::testing {

// The shipped rule files (smt_theories/equiv under DataDir()).
inline absl::StatusOr<std::vector<proofcheck::RuleFile>> ShippedRuleFiles() {
  PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
  return proofcheck::ReadRuleDirectory(JoinPath(root, "smt_theories/equiv"));
}

// Writes `proof` as a proof file and checks it; `json` (if given) receives the file's text.
inline absl::StatusOr<proofcheck::ProofSummary> CheckWithProofChecker(
    const Explanation& proof, const TensorEnv& env, const RuleSet& rules, const ExprContext* ctx,
    std::string* json = nullptr) {
  const std::string text = ProofToJson(proof, env, rules, ctx).dump(2);
  if (json != nullptr) *json = text;
  PRISM_ASSIGN_OR_RETURN(std::vector<proofcheck::RuleFile> files, ShippedRuleFiles());
  return proofcheck::CheckProof(text, files);
}

}  // namespace prism::equiv::testing

#endif  // PRISM_TESTS_EQUIV_PROOF_CHECK_H_
