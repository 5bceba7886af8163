// The program argument shared by commands that read one: `FILE | --workload NAME [--batch B]`.
// FILE is `.prism` text, or a JSON export (ir/json.h) when its name ends in `.json`.
//
//   spec.options = ProgramSourceOptions();   // --workload, --batch
//   PRISM_ASSIGN_OR_RETURN(LoadedProgram p, LoadProgram(args));
//   io.out << p.label;   // "examples/gqa_b1.prism" or "<builtin gqa b=1>"
#ifndef PRISM_TOOLS_PROGRAM_SOURCE_H_
#define PRISM_TOOLS_PROGRAM_SOURCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

}  // namespace prism::cli

#endif  // PRISM_TOOLS_PROGRAM_SOURCE_H_
