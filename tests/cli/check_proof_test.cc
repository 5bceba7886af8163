// `prism check-proof` (src/tools/check_proof.cc): a proof the prover wrote is accepted; tampered
// proof files — a step citing the wrong rule, a skipped step, a changed term, a changed rule
// file — are rejected with exit code 2 and the exact reason on stderr; malformed and missing
// files too. Runs the command in-process exactly as the dispatcher does.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/equiv/proof_json.h"
#include "prism/equiv/prove.h"
#include "prism/equiv/rules.h"
#include "testing/status_matchers.h"
#include "tools/cli.h"
#include "tools/options.h"

namespace prism::cli {

// Declared in commands.h once the command is registered there.
const CommandSpec& CheckProofSpec();
absl::Status RunCheckProof(const ParsedArgs& args, Io& io);

// Named, not anonymous: with PRISM_UNITY_BUILD the nine files share one translation unit.
namespace check_proof_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `prism check-proof ARGS...`: through the registry when the command is registered, else the
// same steps as RunCli (parse, --help, run, report).
Result CheckProofCli(std::vector<std::string> args) {
  std::ostringstream out, err;
  for (const Command& c : Commands()) {
    if (c.spec().path == "check-proof") {
      args.insert(args.begin(), "check-proof");
      const int code = RunCli(args, out, err);
      return {code, out.str(), err.str()};
    }
  }
  absl::StatusOr<ParsedArgs> parsed = ParseArgs(CheckProofSpec(), args);
  int code = 0;
  if (!parsed.ok()) {
    code = ReportError(parsed.status(), err);
  } else if (parsed->help()) {
    out << HelpText(CheckProofSpec());
  } else {
    Io io{out, err};
    const absl::Status s = RunCheckProof(*parsed, io);
    if (!s.ok()) code = ReportError(s, err);
  }
  return {code, out.str(), err.str()};
}

std::string Scratch(const std::string& name) {
  static const std::string dir = [] {
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("prism_check_proof_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir + "/" + name;
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = Scratch(name);
  EXPECT_OK(WriteFile(path, text));
  return path;
}

constexpr char kRules[] =
    "; Elementwise products commute.\n"
    "(rule mul-comm (mul ?a ?b) => (mul ?b ?a))\n"
    "; A K-split is a sum of partial products.\n"
    "(rule split-k (reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x) => (matmul ?a ?b)\n"
    "  if (dim-is ?a ?i -1) (dim-is ?b ?j -2) (free-of ?a ?x) (free-of ?b ?x))\n"
    "; A per-row scale commutes into the left factor.\n"
    "(rule matmul-rowscale (mul (matmul ?a ?b) ?r) <=> (matmul (mul ?a ?r) ?b) if (row-scale ?r ?a))\n";

Json Step(const std::string& rule, std::vector<int> pos, const std::string& before, const std::string& after) {
  return Json{{"kind", "rule"}, {"rule", rule}, {"direction", "forward"}, {"position", pos},
              {"before", before}, {"after", after}};
}

Json MiniProof() {
  const std::string t0 = "(mul (reduce (matmul (partition A 1 @k {K}) (partition B 0 @k {K})) @k) r)";
  const std::string t1 = "(mul (matmul A B) r)", t2 = "(matmul (mul A r) B)", t3 = "(matmul (mul r A) B)";
  return Json{
      {"format", "prism.proof"},
      {"version", 1},
      {"rule_files", {{{"name", "mini.rules"}, {"hash", HashToHex(StableHashBytes(kRules))}}}},
      {"env",
       {{"inputs",
         {{{"name", "A"}, {"shape", {8, 64}}}, {{"name", "B"}, {"shape", {64, 32}}}, {{"name", "r"}, {"shape", {8, 1}}}}},
        {"axes", {{{"name", "k"}, {"degree", "K"}}}}}},
      {"start", t0},
      {"goal", t3},
      {"steps", {Step("split-k", {0}, t0, t1), Step("matmul-rowscale", {}, t1, t2), Step("mul-comm", {0}, t2, t3)}},
  };
}

class CheckProofCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rules_dir_ = Scratch("rules");
    std::filesystem::create_directories(rules_dir_);
    Write("rules/mini.rules", kRules);
  }
  std::string rules_dir_;
};

TEST_F(CheckProofCliTest, AcceptsAValidProof) {
  const std::string path = Write("mini.proof.json", MiniProof().dump(2));
  Result r = CheckProofCli({path, "--rules", rules_dir_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "proof     " + path + " (prism.proof v1)\n"
            "claim     (mul (reduce (matmul (partition A 1 @k {K}) (partition B 0 @k {K})) @k) r)\n"
            "        = (matmul (mul r A) B)\n"
            "inputs    A: [8, 64], B: [64, 32], r: [8, 1]\n"
            "axes      k: K\n"
            "rules     mini.rules " + HashToHex(StableHashBytes(kRules)) + " (in " + rules_dir_ + ")\n"
            "accepted: 3 steps (3 rewrites, 0 constant folds) using 3 rules: split-k, matmul-rowscale, mul-comm\n");

  Result j = CheckProofCli({path, "--rules", rules_dir_, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  Json out = Json::parse(j.out);
  EXPECT_EQ(out["accepted"], true);
  EXPECT_EQ(out["steps"], 3);
  EXPECT_EQ(out["rules_used"], Json({"split-k", "matmul-rowscale", "mul-comm"}));
  EXPECT_EQ(out["goal"], "(matmul (mul r A) B)");
}

// The prover's own proof of the walkthrough, checked against the shipped rules (default --rules).
TEST_F(CheckProofCliTest, AcceptsTheProversWalkthroughProof) {
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(equiv::RuleSet rules, equiv::LoadDefaultRules(ctx));
  equiv::TensorEnv env;
  env.ctx = &ctx;
  env.SetLeafShape("X", {16, 4096});
  env.SetLeafShape("W", {4096, 6144});
  ASSERT_OK_AND_ASSIGN(equiv::Term block, equiv::ParseTerm(ctx, R"(
    (combine
      (mul (reduce (matmul (partition X 1 @F {F}) (partition (partition W 1 @x {g}) 0 @F {F})) @F)
           (rsqrt (add (div (reduce (sum (square (partition X 1 @F {F})) 1) @F) 4096) 1e-06)))
      1 @x))"));
  ASSERT_OK_AND_ASSIGN(equiv::Term program, equiv::ParseTerm(ctx, "(matmul (rms_norm X 1 1e-06) W)"));
  equiv::ProveResult proved = equiv::ProveEquivalent(ctx, env, block, program, rules);
  ASSERT_EQ(proved.verdict, equiv::Verdict::kProved) << proved.reason;
  const Json proof = Json::parse(equiv::ProofToJson(*proved.proof, env, rules, &ctx).dump());
  const std::string path = Write("walkthrough.proof.json", proof.dump(2));

  Result r = CheckProofCli({path});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("        = (matmul (rms_norm X 1 1e-06) W)\n"));
  EXPECT_THAT(r.out, HasSubstr("inputs    W: [4096, 6144], X: [16, 4096]\naxes      F: F, x: g\n"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("accepted: ", proved.proof->steps.size(), " steps")));
  EXPECT_THAT(r.out, HasSubstr("split-k"));

  // The same proof with one step dropped is rejected.
  Json skipped = proof;
  skipped["steps"].erase(1);
  Result bad = CheckProofCli({Write("walkthrough_skipped.proof.json", skipped.dump())});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "prism: error: " + Scratch("walkthrough_skipped.proof.json") +
                         ": proof rejected: step 2: does not start where step 1 ended\n");
  EXPECT_EQ(bad.out, "");
}

TEST_F(CheckProofCliTest, RejectsTamperedProofs) {
  struct Row {
    std::string name;
    std::function<void(Json&)> tamper;
    std::string reason;  // after "prism: error: FILE: "
  };
  const std::vector<Row> rows = {
      {"a step citing the wrong rule", [](Json& j) { j["steps"][2]["rule"] = "split-k"; },
       "proof rejected: step 3: rule 'split-k' does not match at position [0]: (mul A r) is not an instance of "
       "(reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x)"},
      {"a skipped step", [](Json& j) { j["steps"].erase(1); },
       "proof rejected: step 2: does not start where step 1 ended"},
      {"a changed term",
       [](Json& j) { j["steps"][2]["after"] = "(matmul (mul A r) B)"; },
       "proof rejected: step 3: rule 'mul-comm' at position [0]: the right side gives (mul r A), the proof has "
       "(mul A r)"},
      {"a changed rule file hash", [](Json& j) { j["rule_files"][0]["hash"] = "ffffffffffffffff"; },
       "proof rejected: rule file 'mini.rules' has hash " + HashToHex(StableHashBytes(kRules)) +
           ", but the proof was made with hash ffffffffffffffff (the rules changed since the proof was made)"},
      {"a malformed step", [](Json& j) { j["steps"][0]["position"] = "root"; },
       "malformed proof: steps[0].position: expected an array of integers"},
  };
  for (const Row& row : rows) {
    Json j = MiniProof();
    row.tamper(j);
    const std::string path = Write("tampered.proof.json", j.dump());
    Result r = CheckProofCli({path, "--rules", rules_dir_});
    EXPECT_EQ(r.code, 2) << row.name;
    EXPECT_EQ(r.out, "") << row.name;
    EXPECT_EQ(r.err, "prism: error: " + path + ": " + row.reason + "\n") << row.name;
  }
}

// Editing a rule file after the proof was made invalidates the proof (its hash changes).
TEST_F(CheckProofCliTest, RejectsAProofWhenItsRuleFileChanged) {
  const std::string path = Write("mini.proof.json", MiniProof().dump());
  const std::string edited = std::string(kRules) + "; an added comment\n";
  const std::string dir = Scratch("edited_rules");
  std::filesystem::create_directories(dir);
  Write("edited_rules/mini.rules", edited);
  Result r = CheckProofCli({path, "--rules", dir});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "prism: error: " + path + ": proof rejected: rule file 'mini.rules' has hash " +
                       HashToHex(StableHashBytes(edited)) + ", but the proof was made with hash " +
                       HashToHex(StableHashBytes(kRules)) + " (the rules changed since the proof was made)\n");
}

TEST_F(CheckProofCliTest, UserErrors) {
  struct Row {
    std::vector<std::string> args;
    std::string err;
  };
  const std::string proof = Write("mini.proof.json", MiniProof().dump());
  const std::vector<Row> rows = {
      {{}, "prism: error: give a proof file: prism check-proof FILE [--rules DIR]\n"},
      {{Scratch("nope.json"), "--rules", rules_dir_},
       "prism: error: cannot open '" + Scratch("nope.json") + "': no such file\n"},
      {{proof, "--rules", "/nonexistent/rules"},
       "prism: error: cannot list rule directory /nonexistent/rules: No such file or directory\n"},
      {{Write("not.json", "proof?"), "--rules", rules_dir_},
       "prism: error: " + Scratch("not.json") + ": malformed proof: not JSON: "},
      {{proof, "--rulez", "x"}, "prism: error: unknown option '--rulez' for 'prism check-proof'; did you mean '--rules'?\n"},
  };
  for (const Row& row : rows) {
    Result r = CheckProofCli(row.args);
    EXPECT_EQ(r.code, 2) << row.err;
    EXPECT_THAT(r.err, StartsWith(row.err));
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(CheckProofCliTest, Help) {
  Result r = CheckProofCli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("check-proof FILE [--rules DIR] [--json]"));
  EXPECT_THAT(r.out, HasSubstr("--rules DIR"));
}

}  // namespace check_proof_test
}  // namespace prism::cli
