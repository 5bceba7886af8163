// `prism rules check`: validates every rewrite rule of a rule directory with Z3
// (equiv/rule_check.h) and prints per rule proved / refuted / unknown with its time.
//
//   prism rules check                               the shipped rules (smt_theories/equiv)
//   prism rules check --rules tests/equiv/wrong_rules --json
//   prism rules check --rule split-k
//
// Exit codes: 0 when every checked rule is proved; 2 when one is refuted or unknown (after
// printing every result; stderr names them), or on a missing directory, an unloadable rule
// file, or an unknown --rule name.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli.h"
#include "nlohmann/json.hpp"
#include "options.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/equiv/rule_check.h"
#include "prism/equiv/rules.h"
#include "prism/expr/expr.h"
#include "prism/smt/verdict.h"

namespace prism::cli {

const CommandSpec& RulesSpec() {
  static const auto* spec = new CommandSpec{
      .path = "rules",
      .usage = "check [--rules DIR] [--rule NAME] [--json]",
      .summary = "Validate the rewrite rules with Z3 (proved / refuted / unknown per rule).",
      .description =
          "Every rule of DIR (*.rules, docs/rule_format.md) is instantiated at small concrete\n"
          "shapes that satisfy its side conditions, both sides are evaluated elementwise into\n"
          "real-valued SMT terms (exp, sqrt, silu, gelu as uninterpreted functions with their\n"
          "axioms), and Z3 is asked whether some element can differ: unsat at every\n"
          "instantiation proves the rule, a model refutes it (the counterexample is printed).\n"
          "Exits 0 only when every checked rule is proved, 2 otherwise.",
      .positional = "check",
      .max_positional = 1,
      .options = {StringOption("--rules", "DIR", "the rule directory",
                               "smt_theories/equiv of the data directory"),
                  StringOption("--rule", "NAME", "check only the rule called NAME"),
                  FlagOption("--json", "print one JSON object instead")}};
  return *spec;
}

absl::Status RunRules(const ParsedArgs& args, Io& io) {
  if (args.positionals().empty() || args.positionals().front() != "check") {
    const std::string what =
        args.positionals().empty()
            ? std::string("no action given")
            : absl::StrCat("unknown action '", args.positionals().front(), "'");
    return absl::InvalidArgumentError(absl::StrCat(
        what, "; usage: prism rules check [--rules DIR] [--rule NAME] [--json]"));
  }
  std::string dir;
  if (std::optional<std::string> d = args.String("--rules")) {
    dir = *d;
  } else {
    PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
    dir = JoinPath(root, "smt_theories/equiv");
  }
  ExprContext ctx;
  PRISM_ASSIGN_OR_RETURN(equiv::RuleSet rules, equiv::LoadRuleDirectory(ctx, dir));
  std::vector<equiv::RuleCheckResult> results;
  if (std::optional<std::string> name = args.String("--rule")) {
    const equiv::Rewrite* r = rules.Find(*name);
    if (r == nullptr) {
      return absl::NotFoundError(absl::StrCat("no rule '", *name, "' in ", dir));
    }
    results.push_back(equiv::ValidateRule(*r, ctx));
  } else {
    results = equiv::ValidateRules(rules, ctx);
  }
  int proved = 0, refuted = 0, unknown = 0;
  double seconds = 0;
  std::vector<std::string> failed;
  for (const equiv::RuleCheckResult& r : results) {
    proved += r.verdict == Verdict::kProved;
    refuted += r.verdict == Verdict::kRefuted;
    unknown += r.verdict == Verdict::kUnknown;
    seconds += r.seconds;
    if (r.verdict != Verdict::kProved) failed.push_back(r.rule);
  }
  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["rules_dir"] = dir;
    j["proved"] = proved;
    j["refuted"] = refuted;
    j["unknown"] = unknown;
    j["seconds"] = seconds;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const equiv::RuleCheckResult& r : results) {
      nlohmann::ordered_json e;
      e["rule"] = r.rule;
      e["location"] = r.location;
      e["verdict"] = std::string(VerdictName(r.verdict));
      e["seconds"] = r.seconds;
      e["reason"] = r.reason;
      nlohmann::ordered_json inst = nlohmann::ordered_json::array();
      for (const equiv::RuleInstanceCheck& i : r.instances) {
        inst.push_back({{"lhs", i.lhs},
                        {"rhs", i.rhs},
                        {"shapes", i.shapes},
                        {"verdict", std::string(VerdictName(i.verdict))},
                        {"seconds", i.seconds}});
      }
      e["instances"] = inst;
      list.push_back(e);
    }
    j["rules"] = list;
    io.out << j.dump(2) << "\n";
  } else {
    size_t width = 0;
    for (const equiv::RuleCheckResult& r : results) width = std::max(width, r.rule.size());
    for (const equiv::RuleCheckResult& r : results) {
      io.out << absl::StrFormat("%-*s  %-7s %8.3f s", static_cast<int>(width), r.rule,
                                VerdictName(r.verdict), r.seconds);
      if (r.verdict != Verdict::kProved) io.out << "  " << r.reason;
      io.out << "\n";
    }
    io.out << absl::StrFormat("%d rules in %s: %d proved, %d refuted, %d unknown (%.2f s)\n",
                              results.size(), dir, proved, refuted, unknown, seconds);
  }
  if (!failed.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(failed.size(), " of ", results.size(), " rules not proved: ",
                     absl::StrJoin(failed, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace prism::cli
