// `--dump-after STAGE` of `prism search` and `prism optimize` (report/dump.h), in-process
// through RunCli on a small rmsnorm_linear with --no-gpu: one row per stage (its header and a
// line of its contents), and the error paths by exact message.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "cli/run_prism.h"
#include "tools/cli.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace dump_after_test {
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Dir() {
  static const std::string* d = [] {
    auto* s = new std::string(::testing::TempDir() + "/prism_dump_" + std::to_string(getpid()));
    std::filesystem::remove_all(*s);
    std::filesystem::create_directories(*s);
    std::ofstream(*s + "/small.prism") << "X = input f16[4, 512]\nW = input f16[512, 1024]\n"
                                          "Y = matmul(rms_norm(X, -1), W)\noutput Y\n";
    return s;
  }();
  return *d;
}

struct Case {
  std::string command;  // "search" or "optimize"
  std::string stage;
  std::vector<std::string> contains;
};

// Runs each case and checks the dump's header and contents.
void CheckStages(const std::vector<Case>& cases);

TEST(DumpAfterTest, SearchStages) {
  CheckStages({
      {"search", "program", {"X = input f16[4, 512]\n", "structural hash "}},
      {"search", "generate", {"op sequences explored          ", "distinct candidates (mapped)   11\n"}},
      {"search", "prove", {"proved      11\n", "the best family's proof (14 steps):\n", ". split-k forward at [0, 0]: "}},
      {"search", "prune", {"pruned families (4):\n", ": infeasible (smem_capacity)\n", "survivors (7, best first):\n"}},
  });
}

TEST(DumpAfterTest, OptimizeStages) {
  CheckStages({
      {"optimize", "instantiate", {"1. family #1 at gx=64 F=1 T=64 S=1, lower bound 0.5964 µs, estimate "}},
      {"optimize", "codegen", {"kernel k0 (prism_small_k0): grid (64, 1, 1), 64 threads, ", "__global__"}},
      {"optimize", "tune", {"2 (selected). family #1 at gx=64 F=1 T=64 S=1 [programmatic_dependent_launch]: estimate ",
                            "selected by the cost model's estimate (no GPU: --no-gpu)\n"}},
  });
}

void CheckStages(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.command + " --dump-after " + c.stage);
    std::vector<std::string> args = {c.command, Dir() + "/small.prism", "--dump-after", c.stage};
    if (c.command == "optimize") {
      // Few tuning candidates: the dumps do not depend on how many there are.
      args.insert(args.end(), {"--no-gpu", "--out", Dir() + "/out", "--top", "1", "--instances", "4"});
    }
    const Result r = RunPrismUnbudgeted(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, StartsWith("=== after " + c.stage + " ===\n"));
    for (const std::string& s : c.contains) EXPECT_THAT(r.out, HasSubstr(s));
    // The usual summary follows.
    EXPECT_THAT(r.out, HasSubstr("\nprogram  "));
  }
}

TEST(DumpAfterTest, Errors) {
  struct Row {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Row> rows = {
      {{"search", Dir() + "/small.prism", "--dump-after", "codegen"},
       "prism: error: --dump-after expects one of program, generate, prove, prune, found 'codegen'\n"},
      {{"search", Dir() + "/small.prism", "--dump-after", "prune", "--json"},
       "prism: error: give at most one of --dump-after or --json\n"},
      {{"optimize", Dir() + "/small.prism", "--no-gpu", "--out", Dir() + "/out2", "--dump-after", "x"},
       "prism: error: --dump-after expects one of program, generate, prove, prune, instantiate, codegen, tune, "
       "found 'x'\n"},
  };
  for (const Row& row : rows) {
    const Result r = RunPrismUnbudgeted(row.args);
    EXPECT_EQ(r.code, 2) << row.err;
    EXPECT_EQ(r.err, row.err);
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace dump_after_test
}  // namespace prism::cli
