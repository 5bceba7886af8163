// The independent proof checker behind `prism check-proof` (DESIGN.md §4): it reads a proof
// file (docs/proofs.md) and the rule files it cites, and replays every step on plain term
// trees. It shares no code with the prover (equiv/): its own s-expression reader, rule reader,
// pattern matcher, shape/constant facts and side-condition predicates, written from
// docs/rule_format.md. It depends on base/ only, and is much smaller than the prover.
//
//   PRISM_ASSIGN_OR_RETURN(std::vector<RuleFile> files, ReadRuleDirectory("smt_theories/equiv"));
//   absl::StatusOr<ProofSummary> s = CheckProof(proof_json_text, files);
//   // OK: every step is a valid rewrite; s->start, s->goal, s->rules_used ...
//   // else InvalidArgument, e.g.
//   //   "step 4: rule 'split-k' does not match at position [0, 1]: (sub X Y) is not an
//   //    instance of (reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x)"
//
// What acceptance means: under the proof's environment (input shapes, axis degrees), `start`
// and `goal` are well-formed and each step rewrites one subterm by an instance of a named rule
// of the cited files (or folds a constant), with the rule's side conditions holding on the
// facts recomputed from the bound subterms; the rule files are byte-identical (by stable hash)
// to those the proof was made with. The rules themselves are trusted here; `prism rules
// check` validates them.
#ifndef PRISM_PROOFCHECK_CHECKER_H_
#define PRISM_PROOFCHECK_CHECKER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace prism::proofcheck {

// One rule file: its base name (as cited by proofs, e.g. "algebra.rules") and its bytes.
struct RuleFile {
  std::string name;
  std::string text;
};

// Every `*.rules` file of `dir`, sorted by name. NotFound if the directory cannot be listed.
absl::StatusOr<std::vector<RuleFile>> ReadRuleDirectory(absl::string_view dir);

// What an accepted proof establishes.
struct ProofSummary {
  int version = 0;
  std::string start;                     // the start term, as written in the proof
  std::string goal;
  std::vector<std::string> inputs;       // "X: [16, 4096]", sorted by name
  std::vector<std::string> axes;         // "F: F", "x: g"
  size_t steps = 0;
  size_t rule_steps = 0;                 // steps citing a rule (the rest fold constants)
  std::vector<std::string> rules_used;   // distinct rule names in first-use order
  std::vector<std::string> rule_files;   // "algebra.rules 0123456789abcdef"
};

// Checks `proof_json` against `rule_files` (the files the proof cites must be among them).
// InvalidArgument with a message starting "malformed proof: " when the file is not a proof
// (not JSON, wrong format or version, missing or mistyped fields — naming the field), else
// with the first reason the proof is rejected (see the file comment), or with the location of
// a syntax error in a cited rule file.
absl::StatusOr<ProofSummary> CheckProof(absl::string_view proof_json,
                                        absl::Span<const RuleFile> rule_files);

}  // namespace prism::proofcheck

#endif  // PRISM_PROOFCHECK_CHECKER_H_
