#include "cli.h"

#include <algorithm>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "options.h"
#include "prism/base/status.h"

#ifndef PRISM_VERSION
#define PRISM_VERSION "unknown"
#endif

namespace prism::cli {
namespace {

// The registry: one row per subcommand, in help order.
const Command kCommands[] = {
    {&CheckSpec, &RunCheck},
    {&EvalSpec, &RunEval},
    {&WorkloadSpec, &RunWorkload},
    {&HwSpec, &RunHw},
    {&PruneSpec, &RunPrune},
    {&CheckProofSpec, &RunCheckProof},
    {&RulesSpec, &RunRules},
    {&SearchSpec, &RunSearch},
    {&OptimizeSpec, &RunOptimize},
    {&AuditSpec, &RunAudit},
};

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : kCommands) {
    if (c.spec().path == name) return &c;
  }
  return nullptr;
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const Command& c : kCommands) names.push_back(c.spec().path);
  return names;
}

absl::Status UnknownCommand(absl::string_view name) {
  std::vector<std::string> names = CommandNames();
  names.push_back("help");
  const std::string guess = ClosestMatch(name, names);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command '", name, "'; ",
                   guess.empty() ? absl::StrCat("known commands: ", absl::StrJoin(names, ", "))
                                 : absl::StrCat("did you mean '", guess, "'?")));
}

}  // namespace

absl::Span<const Command> Commands() { return kCommands; }

int ReportError(const absl::Status& status, std::ostream& err) {
  err << "prism: error: " << status.message();
  if (!IsUserError(status)) {
    err << " (internal error " << absl::StatusCodeToString(status.code())
        << ": a bug in prism, please report it)";
  }
  err << "\n";
  return ExitCodeFor(status);
}

std::string TopLevelHelp() {
  std::string text =
      "usage: prism <command> [options]\n"
      "\n"
      "prism superoptimizes small tensor programs (the fused operators of LLM inference) for\n"
      "NVIDIA GPUs: it searches families of GPU implementations, proves them equivalent to\n"
      "the program, prunes them with Z3 against a hardware model, and generates CUDA.\n"
      "\n"
      "commands:\n";
  std::vector<std::vector<std::string>> rows;
  for (const Command& c : kCommands) rows.push_back({c.spec().path, c.spec().summary});
  rows.push_back({"help", "Show the help of a command: prism help COMMAND."});
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r[0].size());
  for (const auto& r : rows) {
    absl::StrAppend(&text, "  ", r[0], std::string(width - r[0].size() + 2, ' '), r[1], "\n");
  }
  absl::StrAppend(&text,
                  "\n"
                  "options:\n"
                  "  --help, -h  show this help and exit\n"
                  "  --version   print the version and exit\n"
                  "\n"
                  "Run 'prism <command> --help' for a command's options. Most commands take\n"
                  "--json for machine-readable output on stdout.\n"
                  "Exit codes: 0 ok, 2 user error (bad program, option, file or name),\n"
                  "1 internal error (a bug in prism). Errors go to stderr as\n"
                  "'prism: error: <message>'.\n");
  return text;
}

int RunCli(absl::Span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    return ReportError(
        absl::InvalidArgumentError("no command given; run 'prism --help' for the list of commands"),
        err);
  }
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") {
    out << TopLevelHelp();
    return 0;
  }
  if (first == "--version") {
    out << "prism " << PRISM_VERSION << "\n";
    return 0;
  }
  if (first == "help") {
    if (args.size() == 1) {
      out << TopLevelHelp();
      return 0;
    }
    if (args.size() > 2) {
      return ReportError(
          absl::InvalidArgumentError(absl::StrCat("unexpected argument '", args[2],
                                                  "' for 'prism help': expected COMMAND")),
          err);
    }
    const Command* c = FindCommand(args[1]);
    if (c == nullptr) return ReportError(UnknownCommand(args[1]), err);
    out << HelpText(c->spec());
    return 0;
  }
  if (first.size() > 1 && first[0] == '-') {
    const std::string guess = ClosestMatch(first, {"--help", "--version"});
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
                           "unknown option '", first, "' for 'prism'; ",
                           guess.empty() ? "run 'prism --help'; options go after the command"
                                         : absl::StrCat("did you mean '", guess, "'?"))),
                       err);
  }
  const Command* command = FindCommand(first);
  if (command == nullptr) return ReportError(UnknownCommand(first), err);
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(command->spec(), args.subspan(1));
  if (!parsed.ok()) return ReportError(parsed.status(), err);
  if (parsed->help()) {
    out << HelpText(command->spec());
    return 0;
  }
  Io io{out, err, &err == &std::cerr && ::isatty(STDERR_FILENO) == 1};
  const absl::Status status = command->run(*parsed, io);
  if (!status.ok()) return ReportError(status, err);
  return 0;
}

}  // namespace prism::cli
