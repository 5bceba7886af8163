// `prism rules check` (src/tools/rules_cmd.cc): the shipped rules are all proved (exit 0); the
// deliberately wrong rules of tests/equiv/wrong_rules are refuted (exit 2, stderr names them);
// --rule, --json, a missing directory, an unknown rule and a bad action. Runs the command
// in-process exactly as the dispatcher does.
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/options.h"

namespace prism::cli {
// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace rules_cmd_test {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using Json = nlohmann::json;

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `prism rules ARGS...` through the dispatcher, as a user runs it.
Result RulesCli(std::vector<std::string> args) {
  std::ostringstream out, err;
  args.insert(args.begin(), "rules");
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(RulesCmdTest, IsRegistered) {
  bool found = false;
  for (const Command& c : Commands()) found |= c.spec().path == "rules";
  EXPECT_TRUE(found);
  Result r = RulesCli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("rules check [--rules DIR] [--rule NAME] [--json]"));
}

const std::string kShipped = PRISM_SOURCE_DIR "/smt_theories/equiv";
const std::string kWrong = PRISM_SOURCE_DIR "/tests/equiv/wrong_rules";

TEST(RulesCmdTest, ShippedRulesAreAllProved) {
  Result r = RulesCli({"check", "--rules", kShipped});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, MatchesRegex(".*\nsplit-k +proved +[0-9.]+ s\n.*"));
  EXPECT_THAT(r.out, MatchesRegex(".* rules in " + kShipped +
                                  ": [0-9]+ proved, 0 refuted, 0 unknown \\([0-9.]+ s\\)\n"));
}

TEST(RulesCmdTest, WrongRulesAreRefuted) {
  Result r = RulesCli({"check", "--rules", kWrong});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.out, MatchesRegex("wrong-exp-add +refuted +[0-9.]+ s  instance \\(exp "
                                  "\\(add in_a in_b\\)\\) with .*"));
  EXPECT_THAT(r.out, HasSubstr(" 0 proved, "));
  EXPECT_THAT(r.err, MatchesRegex("prism: error: [0-9]+ of [0-9]+ rules not proved: "
                                  "wrong-exp-add, wrong-online-rescale, .*\n"));
}

TEST(RulesCmdTest, OneRuleAsJson) {
  Result r = RulesCli({"check", "--rules", kShipped, "--rule", "split-k", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["proved"], 1);
  EXPECT_EQ(j["refuted"], 0);
  ASSERT_EQ(j["rules"].size(), 1u);
  EXPECT_EQ(j["rules"][0]["rule"], "split-k");
  EXPECT_EQ(j["rules"][0]["verdict"], "proved");
  EXPECT_GE(j["rules"][0]["instances"].size(), 2u);
  EXPECT_THAT(j["rules"][0]["location"].get<std::string>(), HasSubstr("parallel.rules:"));
}

TEST(RulesCmdTest, Errors) {
  struct Row {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Row> rows = {
      {{"check", "--rules", kShipped, "--rule", "no-such-rule"},
       "prism: error: no rule 'no-such-rule' in " + kShipped + "\n"},
      {{"prove"},
       "prism: error: unknown action 'prove'; usage: prism rules check [--rules DIR] "
       "[--rule NAME] [--json]\n"},
      {{},
       "prism: error: no action given; usage: prism rules check [--rules DIR] [--rule NAME] "
       "[--json]\n"},
  };
  for (const Row& row : rows) {
    Result r = RulesCli(row.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, row.err);
  }
  Result missing = RulesCli({"check", "--rules", "/nonexistent/rules"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("prism: error: "));
}

}  // namespace rules_cmd_test
}  // namespace prism::cli
