// The `prism` command line: a registry of subcommands and the entry point that dispatches to
// them. Every command is a function of its parsed arguments that writes to the streams it is
// given (never to std::cout/std::cerr directly), so tests run commands in-process and read
// exactly what a user would see.
//
//   std::ostringstream out, err;
//   int code = RunCli({"check", "--workload", "rmsnorm_linear", "--batch", "8"}, out, err);
//
// Conventions shared by all commands (docs/cli.md):
//   - results go to `out`; errors go to `err` as "prism: error: <message>" and nothing else;
//   - with --json, `out` holds exactly one JSON document (nothing on error);
//   - the exit code is ExitCodeFor(status): 0 ok, 2 user error, 1 internal error.
//
// Adding a command: write `src/tools/<name>.cc` defining a CommandSpec and a CommandFn,
// declare both in commands.h, and add one row to the table in cli.cc.
#ifndef PRISM_TOOLS_CLI_H_
#define PRISM_TOOLS_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "options.h"

namespace prism::cli {

// Where a command writes.
struct Io {
  std::ostream& out;
  std::ostream& err;
  // Whether `err` is an interactive terminal (then long commands draw a progress line there).
  bool err_is_terminal = false;
};

// Runs one command. A non-OK status is printed by the dispatcher (the command prints nothing
// for it) and becomes the exit code.
using CommandFn = absl::Status (*)(const ParsedArgs& args, Io& io);

struct Command {
  const CommandSpec& (*spec)();
  CommandFn run;
};

// All subcommands, in the order `prism --help` lists them.
absl::Span<const Command> Commands();

// The `prism --help` text.
std::string TopLevelHelp();

// Prints a failed `status` to `err` as "prism: error: <message>" (internal errors also say
// they are a bug in prism) and returns its exit code, ExitCodeFor(status).
int ReportError(const absl::Status& status, std::ostream& err);

// Runs `prism ARGS...` (argv without the program name); returns the process exit code.
int RunCli(absl::Span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_CLI_H_
