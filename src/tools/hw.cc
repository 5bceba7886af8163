// `prism hw list` and `prism hw show NAME`: the GPU targets of smt_theories/hardware/, with
// every constant and its source, for auditors checking what the pruning rules assume.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/smt/target.h"

namespace prism::cli {

const CommandSpec& HwSpec() {
  static const auto* spec = new CommandSpec{
      .path = "hw",
      .usage = "list | show NAME [--json]",
      .summary = "List the GPU targets, or show one target's constants and their sources.",
      .description =
          "Targets are data: smt_theories/hardware/<name>.smt2, one define-fun per constant\n"
          "with a '; source:' comment. The pruning rules and the cost model read them.",
      .positional = "list | show NAME",
      .max_positional = 2,
      .options = {FlagOption("--json", "print JSON")}};
  return *spec;
}

absl::Status RunHw(const ParsedArgs& args, Io& io) {
  const std::vector<std::string>& pos = args.positionals();
  const bool json = args.Flag("--json");
  if (pos.empty() || (pos[0] != "list" && pos[0] != "show")) {
    return absl::InvalidArgumentError(absl::StrCat(
        pos.empty() ? "found no subcommand" : absl::StrCat("found '", pos[0], "'"),
        ", expected 'list' or 'show NAME': prism hw list | show NAME"));
  }
  if (pos[0] == "list") {
    if (pos.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", pos[1], "' for 'prism hw list'"));
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListTargets());
    std::vector<Target> targets;
    for (const std::string& n : names) {
      PRISM_ASSIGN_OR_RETURN(Target t, LoadTarget(n));
      targets.push_back(std::move(t));
    }
    if (json) {
      io.out << TargetListToJson(targets).dump(2) << "\n";
    } else {
      io.out << TargetListText(targets);
    }
    return absl::OkStatus();
  }
  if (pos.size() != 2) {
    return absl::InvalidArgumentError("'prism hw show' needs a target NAME (see prism hw list)");
  }
  PRISM_ASSIGN_OR_RETURN(Target t, LoadTarget(pos[1]));
  if (json) {
    io.out << TargetToJson(t).dump(2) << "\n";
  } else {
    io.out << TargetText(t);
  }
  return absl::OkStatus();
}

}  // namespace prism::cli
