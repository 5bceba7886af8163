// The independent proof checker (proofcheck/checker.h) on hand-written proofs over a small
// rule file: proofs it must accept, tampered proofs it must reject with an exact reason,
// malformed files, and rule files it must refuse to read. It never sees equiv/ here (the
// prover's own proofs are checked in tests/equiv/prove_test.cc).
#include "prism/proofcheck/checker.h"

#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "testing/status_matchers.h"

namespace prism::proofcheck {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kRules[] = R"(; Small rules for checker tests.
; Elementwise products commute.
(rule mul-comm (mul ?a ?b) => (mul ?b ?a))

; A K-split is a sum of partial products.
(rule split-k (reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x) => (matmul ?a ?b)
  if (dim-is ?a ?i -1) (dim-is ?b ?j -2) (free-of ?a ?x) (free-of ?b ?x))

; A per-row scale commutes into the left factor.
(rule matmul-rowscale (mul (matmul ?a ?b) ?r) <=> (matmul (mul ?a ?r) ?b) if (row-scale ?r ?a))

; mean is sum over the extent.
(rule mean-def (mean ?x ?d) => (div (sum ?x ?d) (dimsize ?x ?d)))

; Concatenating the slices gives the whole.
(rule combine-partition (combine (partition ?t ?d ?x ?n) ?d ?x) => ?t if (free-of ?t ?x))
)";

std::vector<RuleFile> Files() { return {{"mini.rules", kRules}}; }

Json Step(const std::string& rule, const std::string& dir, std::vector<int> pos, const std::string& before,
          const std::string& after, const std::string& kind = "rule") {
  return Json{{"kind", kind}, {"rule", rule}, {"direction", dir}, {"position", pos},
              {"before", before}, {"after", after}};
}

// Split-K, a row scale commuted into the left factor, then a commuted product.
Json SplitKProof() {
  const std::string t0 = "(mul (reduce (matmul (partition A 1 @k {K}) (partition B 0 @k {K})) @k) r)";
  const std::string t1 = "(mul (matmul A B) r)";
  const std::string t2 = "(matmul (mul A r) B)";
  const std::string t3 = "(matmul (mul r A) B)";
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
      {"steps",
       {Step("split-k", "forward", {0}, t0, t1), Step("matmul-rowscale", "forward", {}, t1, t2),
        Step("mul-comm", "forward", {0}, t2, t3)}},
  };
}

// mean-def, then a constant fold of (dimsize X 1), then the reverse half of a <=> rule.
Json FoldProof() {
  const std::string t0 = "(mean X 1)";
  const std::string t1 = "(div (sum X 1) (dimsize X 1))";
  const std::string t2 = "(div (sum X 1) 64)";
  Json j = SplitKProof();
  j["env"] = {{"inputs", {{{"name", "X"}, {"shape", {8, 64}}}}}, {"axes", Json::array()}};
  j["start"] = t0;
  j["goal"] = t2;
  j["steps"] = {Step("mean-def", "forward", {}, t0, t1), Step("const-fold", "forward", {1}, t1, t2, "analysis")};
  return j;
}

// A backward step of a <=> rule and a symbolic degree that cancels.
Json BackwardProof() {
  const std::string t0 = "(matmul (mul A r) (combine (partition B 1 @x {g}) 1 @x))";
  const std::string t1 = "(matmul (mul A r) B)";
  const std::string t2 = "(mul (matmul A B) r)";
  Json j = SplitKProof();
  j["env"]["axes"] = {{{"name", "x"}, {"degree", "g"}}};
  j["start"] = t0;
  j["goal"] = t2;
  // The backward step: the rule's left side is an instance in `after`, its right side in `before`.
  j["steps"] = {Step("combine-partition", "forward", {1}, t0, t1), Step("matmul-rowscale", "backward", {}, t1, t2)};
  return j;
}

TEST(ProofCheckTest, AcceptsValidProofs) {
  struct Row {
    std::string name;
    Json proof;
    size_t steps;
    std::vector<std::string> rules;
  };
  const std::vector<Row> rows = {
      {"split-k then rowscale then commute", SplitKProof(), 3, {"split-k", "matmul-rowscale", "mul-comm"}},
      {"definition and constant fold", FoldProof(), 2, {"mean-def"}},
      {"backward half of a <=> rule", BackwardProof(), 2, {"combine-partition", "matmul-rowscale"}},
  };
  for (const Row& row : rows) {
    absl::StatusOr<ProofSummary> s = CheckProof(row.proof.dump(), Files());
    ASSERT_OK(s) << row.name;
    EXPECT_EQ(s->steps, row.steps) << row.name;
    EXPECT_EQ(s->rules_used, row.rules) << row.name;
    EXPECT_EQ(s->version, 1);
  }
  absl::StatusOr<ProofSummary> s = CheckProof(SplitKProof().dump(), Files());
  ASSERT_OK(s);
  EXPECT_EQ(s->inputs, (std::vector<std::string>{"A: [8, 64]", "B: [64, 32]", "r: [8, 1]"}));
  EXPECT_EQ(s->axes, (std::vector<std::string>{"k: K"}));
  EXPECT_EQ(s->rule_files, (std::vector<std::string>{"mini.rules " + HashToHex(StableHashBytes(kRules))}));
}

TEST(ProofCheckTest, ZeroStepProofOfEqualTerms) {
  Json j = SplitKProof();
  j["goal"] = j["start"];
  j["steps"] = Json::array();
  EXPECT_OK(CheckProof(j.dump(), Files()));
}

// Tampered proofs, each rejected with its exact reason.
TEST(ProofCheckTest, RejectsTamperedProofs) {
  struct Row {
    std::string name;
    std::function<void(Json&)> tamper;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"a step citing the wrong rule", [](Json& j) { j["steps"][2]["rule"] = "split-k"; },
       "step 3: rule 'split-k' does not match at position [0]: (mul A r) is not an instance of "
       "(reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x)"},
      {"a skipped step", [](Json& j) { j["steps"].erase(1); },
       "step 2: does not start where step 1 ended"},
      {"a changed term after a step",
       [](Json& j) { j["steps"][1]["after"] = "(matmul (mul A r) A)"; },
       "step 2: rule 'matmul-rowscale' at position []: the right side gives (matmul (mul A r) B), "
       "the proof has (matmul (mul A r) A)"},
      {"a change outside the position",
       [](Json& j) {
         j["steps"][2]["after"] = "(matmul (mul r A) A)";
       },
       "step 3: the terms differ outside position [0]"},
      {"a changed rule file hash", [](Json& j) { j["rule_files"][0]["hash"] = "0000000000000000"; },
       "rule file 'mini.rules' has hash " + HashToHex(StableHashBytes(kRules)) +
           ", but the proof was made with hash 0000000000000000 (the rules changed since the proof was made)"},
      {"a flipped direction", [](Json& j) { j["steps"][0]["direction"] = "backward"; },
       "step 1: rule 'split-k' (backward) does not match at position [0]: (matmul A B) is not an instance of "
       "(reduce (matmul (partition ?a ?i ?x ?n) (partition ?b ?j ?x ?n)) ?x)"},
      {"a position outside the term", [](Json& j) { j["steps"][2]["position"] = {0, 5}; },
       "step 3: position [0, 5] is not in the term"},
      {"an unknown rule", [](Json& j) { j["steps"][2]["rule"] = "mul-comm2"; },
       "step 3: unknown rule 'mul-comm2' (not in the cited rule files)"},
      {"a wrong start", [](Json& j) { j["start"] = "(mul (matmul A B) r)"; },
       "step 1: does not start at the start term"},
      {"a wrong goal", [](Json& j) { j["goal"] = "(matmul (mul A r) B)"; },
       "the last step does not end at the goal term"},
      {"a side condition that fails (a column scale used as a row scale)",
       [](Json& j) {
         j["env"]["inputs"] = {{{"name", "A"}, {"shape", {8, 8}}}, {{"name", "B"}, {"shape", {8, 8}}},
                               {{"name", "c"}, {"shape", {1, 8}}}};
         j["start"] = "(mul (matmul A B) c)";
         j["goal"] = "(matmul (mul A c) B)";
         // Json::array: a braced list of one json is a copy under clang, an array under GCC.
         j["steps"] = Json::array({Step("matmul-rowscale", "forward", {}, j["start"], j["goal"])});
       },
       "step 1: rule 'matmul-rowscale' at position []: condition (row-scale ?r ?a) does not hold "
       "(?r = [1, 8]; ?a = [8, 8])"},
      {"a partial sum over an axis the operand depends on",
       [](Json& j) {
         j["start"] = "(reduce (matmul (partition (partition A 0 @k {K}) 1 @k {K}) (partition B 0 @k {K})) @k)";
         j["goal"] = "(matmul (partition A 0 @k {K}) B)";
         j["steps"] = Json::array({Step("split-k", "forward", {}, j["start"], j["goal"])});
       },
       "step 1: rule 'split-k' at position []: condition (free-of ?a ?x) does not hold "
       "(?a = [8/K, 64] deps{k}; ?x = @k)"},
      {"start and goal of different shapes",
       [](Json& j) {
         j["start"] = "(sum A 0)";
         j["goal"] = "(sum A 1)";
       },
       "the start term has shape [1, 64] but the goal term has shape [8, 1]"},
      {"an axis degree that disagrees with the environment",
       [](Json& j) { j["env"]["axes"][0]["degree"] = 4; },
       "the start term is ill-formed: ill-formed node (partition A 1 @k {K}): axis @k has degree K here but 4 "
       "in the proof's environment"},
      {"an undeclared axis", [](Json& j) { j["env"]["axes"] = Json::array(); },
       "the start term is ill-formed: ill-formed node (partition A 1 @k {K}): axis @k is not declared in the "
       "proof's environment"},
      {"an input without a shape", [](Json& j) { j["env"]["inputs"].erase(2); },
       "the start term has an unknown shape (an input missing from env.inputs?)"},
      {"a given step", [](Json& j) { j["steps"][2]["kind"] = "given"; },
       "step 3: 'mul-comm' is an assumption (a given step), which cannot be checked"},
      {"a rule file that is not given", [](Json& j) { j["rule_files"][0]["name"] = "other.rules"; },
       "rule file 'other.rules' cited by the proof is not among the rule files given (mini.rules)"},
      {"no steps between different terms", [](Json& j) { j["steps"] = Json::array(); },
       "the proof has no steps, but start and goal differ"},
  };
  for (const Row& row : rows) {
    Json j = SplitKProof();
    row.tamper(j);
    EXPECT_THAT(CheckProof(j.dump(), Files()), StatusIs(absl::StatusCode::kInvalidArgument, row.message))
        << row.name;
  }
}

TEST(ProofCheckTest, RejectsWrongFolds) {
  Json j = FoldProof();
  j["steps"][1]["after"] = "(div (sum X 1) 63)";
  j["goal"] = "(div (sum X 1) 63)";
  EXPECT_THAT(CheckProof(j.dump(), Files()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "step 2: const-fold at position [1]: (dimsize X 1) does not fold to 63"));
  j = FoldProof();
  j["steps"][1]["rule"] = "magic";
  EXPECT_THAT(CheckProof(j.dump(), Files()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "step 2: unknown step kind 'analysis' with 'magic' (expected a rule, or the analysis const-fold)"));
}

TEST(ProofCheckTest, RejectsMalformedFiles) {
  struct Row {
    std::string name;
    std::function<void(Json&)> tamper;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"wrong format", [](Json& j) { j["format"] = "prism.program"; },
       "malformed proof: \"format\" must be \"prism.proof\""},
      {"future version", [](Json& j) { j["version"] = 2; },
       "malformed proof: version 2 is not supported (this checker reads version 1)"},
      {"position not integers", [](Json& j) { j["steps"][1]["position"] = {"a"}; },
       "malformed proof: steps[1].position: expected an array of integers"},
      {"missing term", [](Json& j) { j["steps"][0].erase("after"); },
       "malformed proof: steps[0].after: expected a string"},
      {"bad term syntax", [](Json& j) { j["goal"] = "(matmul (mul r A) B"; },
       "malformed proof: goal: 1:20: found end of input, expected ')'"},
      {"pattern variable in a term", [](Json& j) { j["start"] = "(mul ?a r)"; },
       "malformed proof: start: 1:6: found pattern variable '?a', expected a term"},
      {"bad direction", [](Json& j) { j["steps"][0]["direction"] = "sideways"; },
       "malformed proof: steps[0].direction: expected \"forward\" or \"backward\""},
      {"bad shape", [](Json& j) { j["env"]["inputs"][0]["shape"] = {8, true}; },
       "malformed proof: env.inputs[0].shape[1]: expected an integer or a size such as \"4096/g\""},
      {"duplicate input", [](Json& j) { j["env"]["inputs"][1]["name"] = "A"; },
       "malformed proof: env.inputs[1].name: 'A' given twice"},
  };
  for (const Row& row : rows) {
    Json j = SplitKProof();
    row.tamper(j);
    EXPECT_THAT(CheckProof(j.dump(), Files()), StatusIs(absl::StatusCode::kInvalidArgument, row.message))
        << row.name;
  }
  EXPECT_THAT(CheckProof("{\"format\": ", Files()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed proof: not JSON: ")));
}

// Rule files the checker refuses (it reads them itself, independently of equiv's loader).
TEST(ProofCheckTest, RejectsBadRuleFiles) {
  struct Row {
    std::string rules;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"(rule bad (mul ?a ?b) => (mul ?a ?c))",
       "rule 'bad' (mini.rules:1:1): right side uses ?c, which the left side does not bind"},
      {"(rule bad (mul ?a ?b) <=> (neg ?a))",
       "rule 'bad' (mini.rules:1:1): left side uses ?b, which the right side does not bind"},
      {"(rule bad ?a => (neg ?a))", "rule 'bad' (mini.rules:1:1): a side that rewrites is a bare variable"},
      {"(rule bad (mull ?a ?b) => ?a)", "mini.rules:1:11: unknown operator 'mull'"},
      {"(rule bad (mul ?a) => ?a)", "mini.rules:1:11: operator 'mul' takes 2 operands, found 1"},
      {"(rule bad (mul ?a ?b) => ?a if (row-scale ?a))",
       "mini.rules:1:32: predicate 'row-scale' takes 2 arguments, found 1"},
      {"(rule bad (mul ?a ?b) => ?a if (row-scale ?a ?z))",
       "rule 'bad' (mini.rules:1:1): condition argument '?z' is not a variable of the left side"},
      {"(rule bad (mul ?a ?b) => ?a if (sunny ?a))", "mini.rules:1:32: found '(sunny ?a)', expected a condition"},
      {"(rule a (neg ?x) => ?x)\n(rule a (neg ?y) => ?y)",
       "rule 'a' (mini.rules:2:1): duplicate name (first defined at mini.rules:1:1)"},
      {"(rule bad (neg ?x) -> ?x)",
       "mini.rules:1:1: found '(rule bad (neg ?x) -> ?x)', expected (rule NAME LHS => RHS [if CONDITION...])"},
      {"(rule bad (neg ?x) => ?x", "mini.rules:1:25: found end of input, expected ')'"},
  };
  for (const Row& row : rows) {
    Json j = SplitKProof();
    j["rule_files"][0]["hash"] = HashToHex(StableHashBytes(row.rules));
    std::vector<RuleFile> files = {{"mini.rules", row.rules}};
    EXPECT_THAT(CheckProof(j.dump(), files), StatusIs(absl::StatusCode::kInvalidArgument, row.message))
        << row.rules;
  }
}

TEST(ProofCheckTest, ReadsTheShippedRuleDirectory) {
  absl::StatusOr<std::vector<RuleFile>> files = ReadRuleDirectory(PRISM_SOURCE_DIR "/smt_theories/equiv");
  ASSERT_OK(files);
  ASSERT_GE(files->size(), 5u);
  EXPECT_EQ(files->front().name, "algebra.rules");
  EXPECT_THAT(ReadRuleDirectory("/nonexistent/dir"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot list rule directory /nonexistent/dir")));
}

}  // namespace
}  // namespace prism::proofcheck
