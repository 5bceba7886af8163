// `prism prune FAMILY.json --target NAME [--incumbent-us X] [--explain] [--dump-smt DIR]`:
// decides one family with the Z3 pruner and prints the verdict, the rules that decided, and
// (with --dump-smt) the SMT-LIB2 files that `z3 FILE` re-checks.
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/expr/expr.h"
#include "prism/prune/family.h"
#include "prism/prune/pruner.h"
#include "prism/smt/target.h"

namespace prism::cli {

const CommandSpec& PruneSpec() {
  static const auto* spec = new CommandSpec{
      .path = "prune",
      .usage = "FAMILY.json --target NAME [--incumbent-us X] [--explain] [--dump-smt DIR] "
               "[--json]",
      .summary = "Decide one family with Z3: infeasible, dominated, feasible or unknown.",
      .description =
          "Only a Z3 'unsat' prunes: 'infeasible' names the rules in the unsat core, "
          "'dominated'\nmeans every instance's cost lower bound is at least the incumbent. "
          "'unknown' never prunes.\nFAMILY.json is a prune::Family (docs: "
          "include/prism/prune/family.h; examples: tests/prune/families/).",
      .positional = "FAMILY.json",
      .max_positional = 1,
      .options = {StringOption("--target", "NAME", "GPU target (prism hw list)", "h200"),
                  StringOption("--incumbent-us", "X",
                               "time of the best known instance, in microseconds"),
                  FlagOption("--explain", "print each rule's soundness argument for the core"),
                  StringOption("--dump-smt", "DIR", "write the deciding SMT-LIB2 query here"),
                  FlagOption("--json", "print JSON")}};
  return *spec;
}

absl::Status RunPrune(const ParsedArgs& args, Io& io) {
  if (args.positionals().size() != 1) {
    return absl::InvalidArgumentError("give exactly one FAMILY.json: prism prune FAMILY.json "
                                      "--target NAME");
  }
  const std::string path = args.positionals()[0];
  std::optional<double> incumbent;
  if (std::optional<std::string> s = args.String("--incumbent-us")) {
    char* end = nullptr;
    const double v = std::strtod(s->c_str(), &end);
    if (s->empty() || end != s->c_str() + s->size() || !(v > 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--incumbent-us expects a positive number of microseconds, found '", *s,
                       "'"));
    }
    incumbent = v;
  }
  PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": found malformed JSON, expected a "
                                                         "family object"));
  }
  ExprContext ctx;
  absl::StatusOr<prune::Family> family = prune::Family::FromJson(j, ctx);
  if (!family.ok()) {
    return absl::Status(family.status().code(),
                        absl::StrCat(path, ": ", family.status().message()));
  }
  PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget(args.String("--target").value_or("h200")));
  prune::PrunerOptions options;
  if (std::optional<std::string> dir = args.String("--dump-smt")) options.dump_dir = *dir;
  PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target, options));
  PRISM_ASSIGN_OR_RETURN(prune::Decision d, pruner.Decide(*family, incumbent));

  std::string verdict;
  std::vector<std::string> rules;
  if (const auto* x = std::get_if<prune::Infeasible>(&d.result)) {
    verdict = "infeasible";
    rules = x->rules;
  } else if (const auto* x = std::get_if<prune::Dominated>(&d.result)) {
    verdict = "dominated";
    rules = x->rules;
  } else if (std::holds_alternative<prune::Feasible>(d.result)) {
    verdict = "feasible";
  } else {
    verdict = "unknown";
  }
  if (args.Flag("--json")) {
    nlohmann::ordered_json out;
    out["family"] = family->name();
    out["target"] = target.name;
    out["verdict"] = verdict;
    out["prunes"] = d.prunes();
    out["rules"] = rules;
    out["summary"] = d.ToString();
    if (incumbent) out["incumbent_us"] = *incumbent;
    if (!d.smt_file.empty()) out["smt_file"] = d.smt_file;
    out["queries"] = d.queries.size();
    io.out << out.dump(2) << "\n";
    return absl::OkStatus();
  }
  io.out << family->name() << " on " << target.name << ": " << d.ToString() << "\n";
  if (args.Flag("--explain") && !rules.empty()) {
    io.out << "deciding rules:\n";
    for (const std::string& r : rules) {
      std::string why = "(a constraint of the family itself)";
      for (const prune::RuleInfo& info : pruner.rules()) {
        if (info.name == r) why = info.soundness;
      }
      io.out << "  " << r << ": " << why << "\n";
    }
  }
  if (!d.smt_file.empty()) io.out << "SMT-LIB2 query: " << d.smt_file << " (re-check: z3 "
                                  << d.smt_file << ")\n";
  return absl::OkStatus();
}

}  // namespace prism::cli
