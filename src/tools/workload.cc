// `prism workload`: list the built-in workloads (ir/workloads.h), or print one as `.prism` text
// — the way examples/*.prism are regenerated (tools/regen_examples.sh).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "format.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/ir/json.h"
#include "prism/ir/workloads.h"
#include "program_source.h"

namespace prism::cli {

const CommandSpec& WorkloadSpec() {
  static const auto* spec = [] {
    auto* s = new CommandSpec{
        .path = "workload",
        .usage = "list | NAME [--batch B] [--json]",
        .summary = "List the built-in workloads, or print one as .prism text.",
        .description = absl::StrCat(
            "The six operators of WORKLOADS.md at any batch size:\n  ",
            absl::StrJoin(WorkloadNames(), ", "),
            ".\n`prism workload NAME --batch B` prints the text that examples/NAME_bB.prism "
            "holds;\nwith --json it prints the program's JSON export instead."),
        .positional = "list | NAME",
        .max_positional = 1,
        .options = {BatchOption()}};
    s->options.push_back(
        FlagOption("--json", "print JSON (the list, or the program's JSON export)"));
    return s;
  }();
  return *spec;
}

absl::Status RunWorkload(const ParsedArgs& args, Io& io) {
  if (args.positionals().empty()) {
    return absl::InvalidArgumentError(
        "give 'list' or a workload name: prism workload list | NAME [--batch B]");
  }
  const std::string& name = args.positionals().front();
  const bool json = args.Flag("--json");
  if (name == "list") {
    if (args.Has("--batch")) {
      return absl::InvalidArgumentError("--batch applies only with a workload NAME, not 'list'");
    }
    if (json) {
      nlohmann::ordered_json j = nlohmann::ordered_json::array();
      for (const std::string& n : WorkloadNames()) {
        j.push_back({{"name", n}, {"description", WorkloadDescription(n)}});
      }
      io.out << j.dump(2) << "\n";
      return absl::OkStatus();
    }
    std::vector<std::vector<std::string>> rows;
    for (const std::string& n : WorkloadNames()) rows.push_back({n, WorkloadDescription(n)});
    io.out << AlignedTable(rows, 0);
    return absl::OkStatus();
  }
  const int batch = static_cast<int>(args.Int("--batch").value_or(kDefaultBatch));
  if (json) {
    PRISM_ASSIGN_OR_RETURN(Program program, BuiltinWorkload(name, batch));
    io.out << ProgramToJson(program).dump(2) << "\n";
    return absl::OkStatus();
  }
  PRISM_ASSIGN_OR_RETURN(std::string text, WorkloadText(name, batch));
  io.out << text;
  return absl::OkStatus();
}

}  // namespace prism::cli
