// The in-process runner that the tests of tests/cli share: RunCli (tools/cli.h) with its
// streams captured. (cli_e2e_test runs the built binary instead.)
#ifndef PRISM_TESTS_CLI_RUN_PRISM_H_
#define PRISM_TESTS_CLI_RUN_PRISM_H_

#include <sstream>
#include <string>
#include <vector>

#include "tools/cli.h"

namespace prism::cli {

struct Result {
  int code;         // the exit code
  std::string out;  // what the command wrote to stdout
  std::string err;  // ... and to stderr
};

// Runs `prism args...` in-process.
inline Result RunPrism(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

// The same with the search's wall-clock budget lifted (`--budget-s 3600`, the most `search`
// takes, appended when a command is given with arguments): results must not depend on the
// machine's load.
inline Result RunPrismUnbudgeted(std::vector<std::string> args) {
  if (args.size() > 1) {
    args.push_back("--budget-s");
    args.push_back("3600");
  }
  return RunPrism(args);
}

}  // namespace prism::cli

#endif  // PRISM_TESTS_CLI_RUN_PRISM_H_
