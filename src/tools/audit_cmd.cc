// `prism audit DIR`: re-checks a proof report that `prism optimize` wrote (report/audit.h;
// docs/report.md): the proof with the independent checker, every deciding SMT query with z3
// (or cvc5), and a seeded sample of pruned families member by member.
//
//   prism audit prism-out/rmsnorm_linear
//   prism audit prism-out/gqa --solver cvc5 --sample 16 --json
//
// Exit codes: 0 every check agrees; 2 a disagreement (each printed), or a report that cannot be
// audited (missing directory or report.json, wrong schema version, a solver that cannot run).
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "options.h"
#include "prism/base/status.h"
#include "prism/report/audit.h"

namespace prism::cli {

const CommandSpec& AuditSpec() {
  static const auto* spec = new CommandSpec{
      .path = "audit",
      .usage = "DIR [--solver z3|cvc5] [--seed S] [--sample N] [--members M] [--json]",
      .summary = "Re-check a report of prism optimize: proof, SMT verdicts, pruned members.",
      .description =
          "DIR is the output directory of prism optimize (report.json, proof.json, smt/).\n"
          "Checks that the theory files still have the recorded hashes; replays proof.json with\n"
          "the independent proof checker; runs every deciding SMT file through the solver (z3,\n"
          "or with --solver cvc5 a second, independent solver) and compares its answer with the\n"
          "recorded one; and for a seeded sample of pruned families draws members, checks with\n"
          "the resource model and the rule files that each violates one of its deciding rules,\n"
          "and emulates the small ones against the reference interpreter. Prints per-rule\n"
          "counts; exits 2 on any disagreement. docs/report.md.",
      .positional = "DIR",
      .max_positional = 1,
      .options = {ChoiceOption("--solver", "NAME", "SMT solver for the queries", {"z3", "cvc5"}, "z3"),
                  IntOption("--seed", "S", "seed of the sample of pruned families", 0, INT64_MAX, "1"),
                  IntOption("--sample", "N", "pruned families whose members are checked", 0, 100000, "8"),
                  IntOption("--members", "M", "members drawn per sampled family", 1, 1000, "4"),
                  FlagOption("--json", "print one JSON object instead")}};
  return *spec;
}

absl::Status RunAudit(const ParsedArgs& args, Io& io) {
  if (args.positionals().empty()) {
    return absl::InvalidArgumentError("give the report directory: prism audit DIR");
  }
  report::AuditOptions options;
  options.solver = args.String("--solver").value_or("z3");
  options.seed = static_cast<uint64_t>(args.Int("--seed").value_or(1));
  options.sample_families = static_cast<int>(args.Int("--sample").value_or(8));
  options.members_per_family = static_cast<int>(args.Int("--members").value_or(4));
  PRISM_ASSIGN_OR_RETURN(report::AuditResult r, report::Audit(args.positionals().front(), options));
  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["dir"] = r.dir;
    j["solver"] = r.solver;
    j["ok"] = r.ok();
    j["proof_steps"] = r.proof_steps;
    j["smt"] = {{"files", r.smt_files}, {"agree", r.smt_agree}, {"unknown", r.smt_unknown}};
    j["members"] = {{"families_sampled", r.families_sampled},
                    {"checked", r.members_checked},
                    {"emulated", r.members_emulated}};
    j["per_rule"] = nlohmann::ordered_json::object();
    for (const auto& [rule, c] : r.per_rule) {
      j["per_rule"][rule] = {{"families", c.families},     {"smt_agree", c.smt_agree},
                             {"smt_disagree", c.smt_disagree}, {"smt_unknown", c.smt_unknown},
                             {"members", c.members},       {"members_violating", c.members_violating}};
    }
    j["disagreements"] = r.disagreements;
    j["notes"] = r.notes;
    io.out << j.dump(2) << "\n";
  } else {
    std::string text = absl::StrCat("report   ", r.dir, "\n");
    absl::StrAppend(&text, "proof    ",
                    r.proof_steps > 0 ? absl::StrCat("accepted by the checker (", r.proof_steps, " steps)")
                                      : std::string("NOT accepted"),
                    "\n");
    absl::StrAppend(&text, "smt      ", r.smt_files, " files, ", r.smt_agree, " agree with ", r.solver,
                    r.smt_unknown > 0 ? absl::StrCat(", ", r.smt_unknown, " undecided") : "", "\n");
    absl::StrAppend(&text, "members  ", r.members_checked, " members of ", r.families_sampled,
                    " sampled pruned families checked, ", r.members_emulated, " emulated\n");
    if (!r.per_rule.empty()) {
      absl::StrAppend(&text, "\nper rule:\n");
      std::vector<std::vector<std::string>> rows = {
          {"rule", "families", "smt agree", "smt disagree", "undecided", "members", "violating"}};
      for (const auto& [rule, c] : r.per_rule) {
        rows.push_back({rule, absl::StrCat(c.families), absl::StrCat(c.smt_agree),
                        absl::StrCat(c.smt_disagree), absl::StrCat(c.smt_unknown),
                        absl::StrCat(c.members), absl::StrCat(c.members_violating)});
      }
      std::vector<size_t> width(rows[0].size(), 0);
      for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
      for (const auto& row : rows) {
        std::string line = "  ";
        for (size_t i = 0; i < row.size(); ++i) {
          absl::StrAppend(&line, row[i], i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
        }
        absl::StrAppend(&text, line, "\n");
      }
    }
    for (const std::string& n : r.notes) absl::StrAppend(&text, "note: ", n, "\n");
    for (const std::string& d : r.disagreements) absl::StrAppend(&text, "DISAGREES: ", d, "\n");
    absl::StrAppend(&text, r.ok() ? "audit: the report is confirmed\n" : "");
    io.out << text;
  }
  if (!r.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "audit of ", r.dir, " found ", r.disagreements.size(), " disagreement",
        r.disagreements.size() == 1 ? "" : "s", "; the first: ", r.disagreements.front()));
  }
  return absl::OkStatus();
}

}  // namespace prism::cli
