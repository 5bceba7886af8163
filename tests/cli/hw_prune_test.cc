// `prism hw` and `prism prune` run in-process through RunCli: a table of invocations with the
// expected exit code and exact output substrings.
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tools/cli.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace hw_prune_test {
using ::testing::HasSubstr;

struct Row {
  std::string what;
  std::vector<std::string> args;
  int exit_code;
  std::string out_substr;  // "" = not checked
  std::string err_substr;  // "" = stderr must be empty
};

const std::string kFamilies = std::string(PRISM_SOURCE_DIR) + "/tests/prune/families/";

TEST(HwPruneCliTest, Table) {
  const std::vector<Row> rows = {
      {"hw list", {"hw", "list"}, 0, "h200", ""},
      {"hw show", {"hw", "show", "h200"}, 0, "hw_sms", ""},
      {"hw show unknown", {"hw", "show", "h300"}, 2, "",
       "prism: error: unknown target 'h300'; known targets: a100_80gb, h100_sxm, h200, l40s, "
       "rtx4090"},
      {"hw no sub", {"hw"}, 2, "",
       "prism: error: found no subcommand, expected 'list' or 'show NAME'"},
      {"hw bad sub", {"hw", "lst"}, 2, "", "found 'lst', expected 'list' or 'show NAME'"},
      {"hw show no name", {"hw", "show"}, 2, "", "'prism hw show' needs a target NAME"},
      {"prune feasible", {"prune", kFamilies + "rmsnorm_linear.json", "--target", "h200"}, 0,
       "feasible", ""},
      {"prune missing file", {"prune", "/nonexistent/f.json"}, 2, "",
       "prism: error: cannot open '/nonexistent/f.json': no such file"},
      {"prune bad incumbent", {"prune", kFamilies + "rmsnorm_linear.json", "--incumbent-us", "x"},
       2, "", "--incumbent-us expects a positive number of microseconds, found 'x'"},
      {"prune unknown target",
       {"prune", kFamilies + "rmsnorm_linear.json", "--target", "tpu"}, 2, "",
       "unknown target 'tpu'"},
      {"prune no file", {"prune"}, 2, "", "give exactly one FAMILY.json"},
  };
  for (const Row& r : rows) {
    std::ostringstream out, err;
    const int code = RunCli(r.args, out, err);
    EXPECT_EQ(code, r.exit_code) << r.what << "\nstdout: " << out.str() << "\nstderr: " << err.str();
    if (!r.out_substr.empty()) {
      EXPECT_THAT(out.str(), HasSubstr(r.out_substr)) << r.what;
    }
    if (r.err_substr.empty()) {
      EXPECT_EQ(err.str(), "") << r.what;
    } else {
      EXPECT_THAT(err.str(), HasSubstr(r.err_substr)) << r.what;
    }
  }
}

// A tiny incumbent makes the family dominated: every instance's lower bound (at least the DRAM
// time of W, ~10 us on an H200) exceeds 1 us; --json names the deciding rules.
TEST(HwPruneCliTest, PruneDominatedJson) {
  std::ostringstream out, err;
  const int code = RunCli({"prune", kFamilies + "rmsnorm_linear.json", "--target", "h200",
                           "--incumbent-us", "1", "--json"},
                          out, err);
  ASSERT_EQ(code, 0) << err.str();
  nlohmann::json j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["verdict"], "dominated");
  EXPECT_EQ(j["prunes"], true);
  EXPECT_FALSE(j["rules"].empty());
}

}  // namespace hw_prune_test
}  // namespace prism::cli
