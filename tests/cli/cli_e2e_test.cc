// End-to-end tests of the real `prism` executable (PRISM_CLI_BINARY, set by CMake): what a
// user's shell sees — exit status, stdout, stderr — for a table of invocations, including
// the done-when checks.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace cli_e2e_test {
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out;
  std::string err;
};

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

// A scratch directory, unique per test binary run, removed at exit.
struct ScratchDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("prism_cli_e2e_" + std::to_string(::getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string Scratch(const std::string& name) {
  static const ScratchDir dir;
  return (dir.path / name).string();
}

// Runs the binary with `args` (stdin from /dev/null), capturing stdout, stderr and the exit
// status.
Result RunPrism(const std::vector<std::string>& args) {
  const std::string err_path = Scratch("stderr.txt");
  std::string cmd = ShellQuote(PRISM_CLI_BINARY);
  for (const std::string& a : args) cmd += " " + ShellQuote(a);
  cmd += " </dev/null 2>" + ShellQuote(err_path);
  Result r{-1, "", ""};
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err_in(err_path, std::ios::binary);
  std::stringstream ss;
  ss << err_in.rdbuf();
  r.err = ss.str();
  return r;
}

struct Row {
  std::vector<std::string> args;
  int code;
  std::vector<std::string> out_has;
  std::string err_has;  // substring of stderr; "" = stderr must be empty
};

TEST(CliE2eTest, Table) {
  const std::string malformed = Scratch("malformed.prism");
  std::ofstream(malformed) << "X = input f16[4, 4]\nY = matmull(X, X)\noutput Y\n";
  const std::vector<Row> rows = {
      // The done-when: the output shape and a floor near 12 µs on an H200.
      {{"check", "--workload", "rmsnorm_linear", "--batch", "8", "--target", "h200"},
       0,
       {"[16, 6144]", "floor    12.09 µs"},
       ""},
      {{"check", malformed}, 2, {}, "prism: error: " + malformed + ":2:5: "},
      {{"check", "--workload", "rmsnorm_linear", "--bacth", "8"},
       2,
       {},
       "prism: error: unknown option '--bacth' for 'prism check'; did you mean '--batch'?\n"},
      {{"check", "x.prism"}, 2, {}, "prism: error: cannot open 'x.prism': no such file\n"},
      {{"eval", "--workload", "ntrans", "--batch", "8", "--mode", "device"},
       0,
       {"output Y  f16 [8, 4096]", "checksum"},
       ""},
      {{"workload", "list"}, 0, {"rmsnorm_linear", "gated_mlp"}, ""},
      {{"--help"}, 0, {"usage: prism <command>"}, ""},
      {{}, 2, {}, "prism: error: no command given"},
  };
  for (const Row& row : rows) {
    std::string line = "prism";
    for (const std::string& a : row.args) line += " " + a;
    SCOPED_TRACE(line);
    const Result r = RunPrism(row.args);
    EXPECT_EQ(r.code, row.code) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
    for (const std::string& s : row.out_has) EXPECT_THAT(r.out, HasSubstr(s));
    if (row.err_has.empty()) {
      EXPECT_EQ(r.err, "");
    } else {
      EXPECT_THAT(r.err, StartsWith(row.err_has));
    }
    if (row.code != 0) {
      EXPECT_EQ(r.out, "");
    }
  }
}

// --json: stdout is exactly one JSON document.
TEST(CliE2eTest, JsonOnStdout) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"check", "--workload", "gated_mlp", "--batch", "8", "--json"},
           {"eval", "--workload", "ntrans", "--json"},
           {"workload", "list", "--json"},
           {"workload", "lora", "--json"}}) {
    const Result r = RunPrism(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
  }
}

// `prism workload NAME --batch B` regenerates examples/NAME_bB.prism byte for byte.
TEST(CliE2eTest, WorkloadReproducesExampleFile) {
  const Result r = RunPrism({"workload", "qknorm_gqa", "--batch", "8"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(std::string(PRISM_SOURCE_DIR) + "/examples/qknorm_gqa_b8.prism",
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(r.out, ss.str());
}

}  // namespace cli_e2e_test
