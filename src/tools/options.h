// Command-line option parsing for the `prism` subcommands: each command declares its options
// once (a CommandSpec); the parser checks every argument against it and produces exact,
// testable error messages (no exceptions, no global state). The same spec renders `--help`.
//
//   CommandSpec spec;  spec.path = "check";  spec.positional = "FILE";  spec.max_positional = 1;
//   spec.options = {IntOption("--batch", "B", "batch size", 1, 1024), FlagOption("--json", "")};
//   PRISM_ASSIGN_OR_RETURN(ParsedArgs args, ParseArgs(spec, {"x.prism", "--batch", "8"}));
//   args.Int("--batch");   // 8
//
// Accepted forms: `--name VALUE`, `--name=VALUE`, `--flag`, positionals anywhere, and `--`
// to end options. Errors (all InvalidArgument, CLI exit code 2):
//   unknown option '--bacth' for 'prism check'; did you mean '--batch'?
//   --batch expects an integer in 1..1024, found 'x'
//   --mode expects one of f64, device, found 'f32'
//   --batch given twice
//   --json takes no value, found '--json=1'
//   unexpected argument 'b.prism' for 'prism check': expected at most 1 FILE
#ifndef PRISM_TOOLS_OPTIONS_H_
#define PRISM_TOOLS_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace prism::cli {

enum class OptionKind { kFlag, kInt, kString, kChoice };

struct OptionSpec {
  std::string name;  // with dashes: "--batch"
  OptionKind kind = OptionKind::kFlag;
  std::string value_name;  // "B" in "--batch B" (not for flags)
  std::string help;        // one line, ends without a period
  int64_t min = 0;         // kInt: inclusive range
  int64_t max = 0;
  std::vector<std::string> choices;  // kChoice: the allowed values, in help order
  std::string default_value;         // shown in the help; "" = no default shown
};

// Factories (designated initializers would leave fields out and trip
// -Wmissing-field-initializers).
OptionSpec FlagOption(std::string name, std::string help);
OptionSpec IntOption(std::string name, std::string value_name, std::string help, int64_t min,
                     int64_t max, std::string default_value = "");
OptionSpec StringOption(std::string name, std::string value_name, std::string help,
                        std::string default_value = "");
OptionSpec ChoiceOption(std::string name, std::string value_name, std::string help,
                        std::vector<std::string> choices, std::string default_value = "");

struct CommandSpec {
  std::string path;         // "check", "workload list": `prism <path>`
  std::string usage;        // after "prism <path> ", e.g. "FILE | --workload NAME [--batch B]"
  std::string summary;      // one line for `prism --help`
  std::string description;  // paragraphs for `prism <path> --help`
  std::string positional;   // name of the positional arguments ("FILE"); "" if none allowed
  int max_positional = 0;
  std::vector<OptionSpec> options;  // `--help` is implicit and must not be listed
};

class ParsedArgs {
 public:
  bool help() const { return help_; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  // Whether the option was given (for flags: whether it is set).
  bool Has(absl::string_view name) const { return values_.count(std::string(name)) > 0; }
  bool Flag(absl::string_view name) const { return Has(name); }
  // The value of a kInt option, if given (range already checked).
  std::optional<int64_t> Int(absl::string_view name) const;
  // The value of a kString or kChoice option, if given.
  std::optional<std::string> String(absl::string_view name) const;

 private:
  friend absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                              absl::Span<const std::string> args);
  bool help_ = false;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> values_;  // flags map to ""
};

// Parses `args` (the arguments after `prism <path>`) against `spec`. `--help` / `-h` anywhere
// (before `--`) sets help() and skips all other checks.
absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec, absl::Span<const std::string> args);

// The `--help` text of a command: usage, summary, description, and one line per option
// ("--batch B  the workload's batch size (1..1024, default 1)"), wrapped at 100 columns.
std::string HelpText(const CommandSpec& spec);

// The candidate closest to `word` by edit distance (transpositions count 1) if it is close
// enough to be a plausible typo (distance ≤ 2 and less than half of `word`'s length), else "".
std::string ClosestMatch(absl::string_view word, absl::Span<const std::string> candidates);

// Optimal-string-alignment edit distance (insert, delete, substitute, swap adjacent).
int EditDistance(absl::string_view a, absl::string_view b);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_OPTIONS_H_
