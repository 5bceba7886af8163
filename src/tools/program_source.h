// The program argument shared by commands that read one: `FILE | --workload NAME [--batch B]`.
// FILE is `.prism` text, or a JSON export (ir/json.h) when its name ends in `.json`.
//
//   spec.options = ProgramSourceOptions();   // --workload, --batch
//   PRISM_ASSIGN_OR_RETURN(LoadedProgram p, LoadProgram(args));
//   io.out << p.label;   // "examples/gqa_b1.prism" or "<builtin gqa b=1>"
#ifndef PRISM_TOOLS_PROGRAM_SOURCE_H_
#define PRISM_TOOLS_PROGRAM_SOURCE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli.h"
#include "nlohmann/json.hpp"
#include "options.h"
#include "prism/ir/program.h"

namespace prism::cli {

inline constexpr int kDefaultBatch = 1;

// --workload NAME and --batch B (1..kMaxWorkloadBatch).
OptionSpec WorkloadOption();
OptionSpec BatchOption();
std::vector<OptionSpec> ProgramSourceOptions();

struct LoadedProgram {
  Program program;
  std::string label;  // the file path, or "<builtin NAME b=B>"
};

// Reads the program named by the arguments. InvalidArgument "give exactly one of FILE or
// --workload" (neither or both), "--batch applies only with --workload" (FILE and --batch);
// NotFound "cannot open 'x.prism': no such file" or "unknown workload ..."; the parser's or
// validator's InvalidArgument "FILE:LINE:COL: ..." for a bad file.
absl::StatusOr<LoadedProgram> LoadProgram(const ParsedArgs& args);

// Runs `one(program, label, output, json_sink)` on the loaded program when it has one output
// (output "", json_sink null), else on each output's own program (OutputCone; label
// "<label> output NAME", output NAME): before each, the text line "<header>NAME (i of n)"
// (`header` is "output" padded to the command's column), or with `json` each call fills its
// own object and the whole is printed as {"program", "outputs": [...]}. The first failure ends
// the run as "output NAME: <message>" (same code). Each program passed on has its broadcast
// inputs at their users' rank (ir PadBroadcastInputs, per output: an input two outputs need at
// two ranks is padded for each), after one text line per padded input: "view     b f16[64] as
// f16[1, 64] (the same elements: its users broadcast it at that rank; pass the same buffer)",
// "view" padded like `header`; with `json`, each output's object gets "padded_inputs":
// [{"tensor", "declared", "read_as"}] when there are any.
using OneOutputFn = std::function<absl::Status(const Program& program, const std::string& label,
                                               const std::string& output,
                                               nlohmann::ordered_json* json_sink)>;
absl::Status ForEachOutput(const LoadedProgram& loaded, bool json, const std::string& header,
                           Io& io, const OneOutputFn& one);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_PROGRAM_SOURCE_H_
