// `prism check-proof`: replays a proof file (docs/proofs.md) with the independent checker
// (proofcheck/checker.h) against the rule files it cites, and says what it establishes.
//
//   prism check-proof rmsnorm_linear.proof.json
//   prism check-proof p.json --rules my_rules/ --json
//
// Exit codes: 0 accepted; 2 rejected (the reason names the step and the rule) or malformed or
// unreadable (a missing file, a rule directory that cannot be listed).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "nlohmann/json.hpp"
#include "options.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/proofcheck/checker.h"

namespace prism::cli {

const CommandSpec& CheckProofSpec() {
  static const auto* spec = new CommandSpec{
      .path = "check-proof",
      .usage = "FILE [--rules DIR] [--json]",
      .summary = "Check a proof file against the rule files it cites (independent checker).",
      .description =
          "FILE is a proof written by prism (docs/proofs.md): a start term, a goal term and\n"
          "rewrite steps. Every step is replayed on plain terms by a checker that shares no code\n"
          "with the prover: the cited rule must match at the step's position, produce the next\n"
          "term, and its side conditions must hold on the shapes recomputed from the terms; the\n"
          "rule files must have the hashes recorded in the proof. Prints what the proof\n"
          "establishes (exit 0), or the first reason it is rejected (exit 2).",
      .positional = "FILE",
      .max_positional = 1,
      .options = {StringOption("--rules", "DIR", "the rule directory",
                               "smt_theories/equiv of the data directory"),
                  FlagOption("--json", "print one JSON object instead")}};
  return *spec;
}

absl::Status RunCheckProof(const ParsedArgs& args, Io& io) {
  if (args.positionals().empty()) {
    return absl::InvalidArgumentError("give a proof file: prism check-proof FILE [--rules DIR]");
  }
  const std::string& path = args.positionals().front();
  std::string dir;
  if (std::optional<std::string> d = args.String("--rules")) {
    dir = *d;
  } else {
    PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
    dir = JoinPath(root, "smt_theories/equiv");
  }
  PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  PRISM_ASSIGN_OR_RETURN(std::vector<proofcheck::RuleFile> files, proofcheck::ReadRuleDirectory(dir));
  absl::StatusOr<proofcheck::ProofSummary> s = proofcheck::CheckProof(text, files);
  if (!s.ok()) {
    const bool malformed = absl::StartsWith(s.status().message(), "malformed proof: ");
    return absl::Status(s.status().code(), absl::StrCat(path, ": ", malformed ? "" : "proof rejected: ",
                                                        s.status().message()));
  }
  const size_t folds = s->steps - s->rule_steps;
  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["proof"] = path;
    j["accepted"] = true;
    j["version"] = s->version;
    j["start"] = s->start;
    j["goal"] = s->goal;
    j["inputs"] = s->inputs;
    j["axes"] = s->axes;
    j["rule_files"] = s->rule_files;
    j["steps"] = s->steps;
    j["rule_steps"] = s->rule_steps;
    j["const_folds"] = folds;
    j["rules_used"] = s->rules_used;
    io.out << j.dump(2) << "\n";
    return absl::OkStatus();
  }
  auto or_none = [](const std::vector<std::string>& v) { return v.empty() ? std::string("none") : absl::StrJoin(v, ", "); };
  io.out << "proof     " << path << " (prism.proof v" << s->version << ")\n"
         << "claim     " << s->start << "\n"
         << "        = " << s->goal << "\n"
         << "inputs    " << or_none(s->inputs) << "\n"
         << "axes      " << or_none(s->axes) << "\n"
         << "rules     " << or_none(s->rule_files) << " (in " << dir << ")\n"
         << "accepted: " << s->steps << " step" << (s->steps == 1 ? "" : "s") << " (" << s->rule_steps
         << " rewrite" << (s->rule_steps == 1 ? "" : "s") << ", " << folds << " constant fold"
         << (folds == 1 ? "" : "s") << ") using " << s->rules_used.size() << " rule"
         << (s->rules_used.size() == 1 ? "" : "s") << (s->rules_used.empty() ? "" : ": ")
         << absl::StrJoin(s->rules_used, ", ") << "\n";
  return absl::OkStatus();
}

}  // namespace prism::cli
