// Proof reports (issue 8; DESIGN.md §1 step 10; docs/report.md is the schema): everything a
// `prism optimize` run decided, as files an engineer ships with the kernel and a researcher
// re-checks with `prism audit` (report/audit.h).
//
//   PRISM_ASSIGN_OR_RETURN(tune::TuneResult r, tune::Optimize(program, target, options));
//   PRISM_ASSIGN_OR_RETURN(report::Report rep, report::BuildReport(program, label, target, r));
//   PRISM_RETURN_IF_ERROR(report::WriteReport(rep, "prism-out/rmsnorm_linear"));
//
// The files (WriteReport):
//   report.json  the versioned machine-readable report (format "prism.report", kReportVersion):
//                program, selection, kernels and launch configurations, the equivalence proof as
//                a rewrite chain, the funnel, every pruned family with its deciding rules, its
//                sGraph and its SMT file, candidates (cost model vs measurement), tool and
//                theory-file versions (stable hashes), environment, timings.
//   report.md    the same for people (without timings).
//   report.html  self-contained (inline CSS and SVG, no script, nothing fetched): the funnel
//                chart and the stage timeline drawn as SVG.
//   proof.json   the chosen family's equivalence proof (equiv/proof_json.h), which
//                `prism check-proof` replays.
//   smt/*.smt2   each deciding SMT query of a pruned family; `z3 FILE` answers unsat.
// Determinism: every byte depends only on the Program, the target, the options and the
// machine's toolchain, except report.json's "timings" object and the HTML timeline (wall
// times). "environment" (NVRTC version, sm, device) depends on the machine.
#ifndef PRISM_REPORT_REPORT_H_
#define PRISM_REPORT_REPORT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "prism/ir/program.h"
#include "prism/smt/target.h"
#include "prism/tune/tune.h"

namespace prism::report {

inline constexpr const char* kReportFormat = "prism.report";
inline constexpr int kReportVersion = 1;

struct Report {
  std::string json;        // report.json text
  std::string markdown;    // report.md
  std::string html;        // report.html
  std::string proof_json;  // proof.json (prism check-proof format)
  std::vector<std::pair<std::string, std::string>> smt_files;  // (file name under smt/, SMT-LIB2 text)
};

struct ReportOptions {
  // Wall time of the whole run (search and tuning), for the timeline; < 0: unknown (the
  // tuning stage is then left out of the timeline).
  double total_s = -1;
  // Where the theories are (equiv/, rules/, resources.smt2, cost.smt2, hardware/); empty:
  // DataDir()/smt_theories. Their stable hashes go into the report.
  std::string theory_dir;
};

// Builds the report of `result` (tune::Optimize's answer for `program` on `target`;
// `program_label` names the program as the CLI does). Proves the chosen family again
// (equiv::ProveSGraph, deterministic) to obtain the proof file. Pruned families are listed
// only when the search recorded them (search::SearchConfig::record_pruned, the default).
// Errors: FailedPrecondition when result has no selected candidate, Internal when the chosen
// family does not prove again (a bug), theory-file read errors as they are.
absl::StatusOr<Report> BuildReport(const Program& program, const std::string& program_label,
                                   const Target& target, const tune::TuneResult& result,
                                   const ReportOptions& options = {});

// Writes DIR/report.json, report.md, report.html, proof.json and DIR/smt/<file> for every
// SMT file (creating DIR and DIR/smt; stale *.smt2 files in DIR/smt are removed first so the
// directory holds exactly this report's queries). FailedPrecondition "cannot create the
// output directory '<dir>': <why>" or "cannot write '<path>': <why>".
absl::Status WriteReport(const Report& report, const std::string& dir);

}  // namespace prism::report

#endif  // PRISM_REPORT_REPORT_H_
