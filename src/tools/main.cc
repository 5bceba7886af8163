// The `prism` executable: a thin shell around prism::cli::RunCli (cli.h), which the tests call
// in-process.
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  const int code = prism::cli::RunCli(args, std::cout, std::cerr);
  std::cout.flush();
  return code;
}
