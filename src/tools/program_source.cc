#include "program_source.h"

#include <algorithm>
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

namespace {

// `program` with its broadcast inputs at their users' rank (ir PadBroadcastInputs), after one
// line per padded input in text mode: "<view>b f16[64] as f16[1, 64] (...)".
absl::StatusOr<BroadcastView> Viewed(const Program& program, bool json, const std::string& view,
                                     Io& io) {
  PRISM_ASSIGN_OR_RETURN(BroadcastView v, PadBroadcastInputs(program));
  if (json) return v;
  for (const auto& [name, declared] : v.padded) {
    const Node& n = v.program.node(*v.program.Find(name));
    io.out << view << name << " " << DTypeName(n.dtype) << ShapeToString(declared) << " as "
           << DTypeName(n.dtype) << ShapeToString(n.shape)
           << " (the same elements: its users broadcast it at that rank; pass the same buffer)\n";
  }
  return v;
}

// The JSON of the padded inputs: [{"tensor", "declared", "read_as"}].
nlohmann::ordered_json PaddedJson(const BroadcastView& v) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [name, declared] : v.padded) {
    out.push_back({{"tensor", name},
                   {"declared", declared},
                   {"read_as", v.program.node(*v.program.Find(name)).shape}});
  }
  return out;
}

}  // namespace

absl::Status ForEachOutput(const LoadedProgram& loaded, bool json, const std::string& header,
                           Io& io, const OneOutputFn& one) {
  std::string view = "view";
  view.resize(std::max(header.size(), view.size() + 1), ' ');
  const absl::Span<const OutputDecl> outputs = loaded.program.outputs();
  if (outputs.size() == 1) {
    PRISM_ASSIGN_OR_RETURN(BroadcastView v, Viewed(loaded.program, json, view, io));
    if (!json) return one(v.program, loaded.label, "", nullptr);
    nlohmann::ordered_json j;
    PRISM_RETURN_IF_ERROR(one(v.program, loaded.label, "", &j));
    if (!v.padded.empty()) j["padded_inputs"] = PaddedJson(v);
    io.out << j.dump(2) << "\n";
    return absl::OkStatus();
  }
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = loaded.program.node(outputs[i].tensor).name;
    PRISM_ASSIGN_OR_RETURN(Program cone, OutputCone(loaded.program, i));
    if (!json) {
      io.out << (i == 0 ? "" : "\n") << header << name << " (" << i + 1 << " of "
             << outputs.size() << ")\n";
    }
    PRISM_ASSIGN_OR_RETURN(BroadcastView v, Viewed(cone, json, view, io));
    nlohmann::ordered_json j;
    const absl::Status st =
        one(v.program, absl::StrCat(loaded.label, " output ", name), name, json ? &j : nullptr);
    if (!st.ok()) return absl::Status(st.code(), absl::StrCat("output ", name, ": ", st.message()));
    if (!json) continue;
    if (!v.padded.empty()) j["padded_inputs"] = PaddedJson(v);
    all.push_back(std::move(j));
  }
  if (json) {
    nlohmann::ordered_json j;
    j["program"] = loaded.label;
    j["outputs"] = std::move(all);
    io.out << j.dump(2) << "\n";
  }
  return absl::OkStatus();
}

}  // namespace prism::cli
