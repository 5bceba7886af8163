#include "program_source.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/ir/json.h"
#include "prism/ir/text_format.h"
#include "prism/ir/workloads.h"

namespace prism::cli {

OptionSpec WorkloadOption() {
  return StringOption(
      "--workload", "NAME",
      absl::StrCat("a built-in workload instead of FILE: ", absl::StrJoin(WorkloadNames(), ", ")));
}

OptionSpec BatchOption() {
  return IntOption("--batch", "B", "the workload's batch size", 1, kMaxWorkloadBatch,
                   absl::StrCat(kDefaultBatch));
}

std::vector<OptionSpec> ProgramSourceOptions() { return {WorkloadOption(), BatchOption()}; }

absl::StatusOr<LoadedProgram> LoadProgram(const ParsedArgs& args) {
  const bool has_file = !args.positionals().empty();
  const std::optional<std::string> workload = args.String("--workload");
  if (has_file == workload.has_value()) {
    return absl::InvalidArgumentError("give exactly one of FILE or --workload");
  }
  if (workload.has_value()) {
    const int batch = static_cast<int>(args.Int("--batch").value_or(kDefaultBatch));
    PRISM_ASSIGN_OR_RETURN(Program program, BuiltinWorkload(*workload, batch));
    return LoadedProgram{std::move(program),
                         absl::StrCat("<builtin ", *workload, " b=", batch, ">")};
  }
  if (args.Has("--batch")) {
    return absl::InvalidArgumentError(
        "--batch applies only with --workload (a FILE has its own shapes)");
  }
  const std::string& path = args.positionals().front();
  PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (absl::EndsWith(path, ".json")) {
    absl::StatusOr<Program> program = ProgramFromJsonText(text);
    if (!program.ok()) {
      return absl::Status(program.status().code(),
                          absl::StrCat(path, ": ", program.status().message()));
    }
    return LoadedProgram{*std::move(program), path};
  }
  PRISM_ASSIGN_OR_RETURN(Program program, ParseProgram(text, path));
  return LoadedProgram{std::move(program), path};
}

}  // namespace prism::cli
