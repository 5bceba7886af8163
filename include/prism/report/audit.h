// Audits a proof report (report/report.h; issue 8 deliverable 2; docs/report.md §audit): an
// independent re-check of everything the report claims. `prism audit DIR` is a thin CLI over
// Audit().
//
//   report::AuditOptions options;                 // options.solver = "cvc5" for a second solver
//   PRISM_ASSIGN_OR_RETURN(report::AuditResult a, report::Audit("prism-out/gqa", options));
//   if (!a.ok()) for (const std::string& d : a.disagreements) std::cerr << d << "\n";
//
// Checks, in order (each failure is one entry of `disagreements`, in this order):
//   1. theory files: every file report.json lists has the same stable hash now;
//   2. the proof: proof.json has the hash the report recorded, and the independent checker
//      (proofcheck/) accepts it against the rule files of the theory directory with the
//      report's start and goal terms;
//   3. the pruned families: each verdict is a pruning verdict ("infeasible", "dominated",
//      "no_feasible_instance") consistent with the kinds of its rules (infeasible: hard rules and
//      constraints only; dominated: at least one dominance rule), the funnel's per-rule counts
//      are the counts of the listed families, and each deciding SMT file exists, has the
//      recorded hash, names the family's verdict in its "; decision:" header, names every
//      deciding rule as a tracked assertion, and gets the recorded answer from the solver
//      (z3, or Debian's cvc5 with solver = "cvc5"); a solver that answers unknown or times
//      out confirms nothing and is counted in `smt_unknown`, not as a disagreement;
//   4. a seeded sample of pruned families: each is rebuilt from its sGraph (its family name must
//      be the report's), members drawn from its parameter domains are checked concretely
//      against the resource model and the rule files (prune::Pruner::CheckInstance) — every
//      member must violate at least one of the family's deciding rules — and members that
//      instantiate and are small enough are emulated (block emulator vs the f64 reference
//      interpreter; a family is proved equivalent for all parameter values, so a member that
//      differs is a disagreement).
#ifndef PRISM_REPORT_AUDIT_H_
#define PRISM_REPORT_AUDIT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace prism::report {

struct AuditOptions {
  std::string solver = "z3";    // "z3" or "cvc5"
  std::string solver_binary;    // empty: `solver` looked up on PATH
  int solver_timeout_s = 60;    // per SMT file
  uint64_t seed = 1;            // the sample of pruned families and members
  int sample_families = 8;      // pruned families whose members are checked (0: none)
  int members_per_family = 4;   // members drawn per sampled family
  double emulate_max_flops = 5e7;  // members with more work (family metric flops) are not emulated
  std::string theory_dir;       // empty: DataDir()/smt_theories
};

// Counts per deciding rule (rule names and "constraint.<name>" labels).
struct RuleAudit {
  int64_t families = 0;           // pruned families whose deciding rules include it
  int64_t smt_agree = 0;          // their SMT files the solver answered as recorded
  int64_t smt_disagree = 0;       // ... answered otherwise (or missing, or edited)
  int64_t smt_unknown = 0;        // ... unknown or timed out
  int64_t members = 0;            // sampled members of those families
  int64_t members_violating = 0;  // of those, members that violate this rule
};

struct AuditResult {
  std::string dir;
  std::string solver;             // "z3" or "cvc5"
  size_t proof_steps = 0;         // steps of the accepted proof (0 if rejected)
  int64_t smt_files = 0;          // SMT files listed
  int64_t smt_agree = 0;
  int64_t smt_unknown = 0;
  int64_t families_sampled = 0;
  int64_t members_checked = 0;
  int64_t members_emulated = 0;
  std::map<std::string, RuleAudit> per_rule;
  std::vector<std::string> disagreements;  // empty: the report is confirmed
  std::vector<std::string> notes;          // undecided queries, members not emulated, ...
  bool ok() const { return disagreements.empty(); }
};

// Audits the report in `dir` (the checks above). Errors — the report cannot be audited at all:
//   NotFound "audit: 'DIR' is not a directory (give the --out directory of prism optimize)",
//   NotFound "audit: 'DIR/report.json' is missing (...)",
//   InvalidArgument "DIR/report.json: not valid JSON: ...",
//   InvalidArgument "DIR/report.json: format is '...', expected 'prism.report'",
//   InvalidArgument "DIR/report.json: schema version N is not supported (this prism reads
//     version 1); regenerate the report with this prism's 'prism optimize'",
//   InvalidArgument "DIR/report.json: <field>: ..." for a missing or mistyped field,
//   InvalidArgument "unknown solver 'x'; expected z3 or cvc5",
//   NotFound "solver 'cvc5' not found: ..." when the binary cannot be run.
// Disagreements are not errors: they are listed in the result (ok() is false).
absl::StatusOr<AuditResult> Audit(const std::string& dir, const AuditOptions& options);

}  // namespace prism::report

#endif  // PRISM_REPORT_AUDIT_H_
