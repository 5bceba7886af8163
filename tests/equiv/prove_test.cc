// Two-sided proofs over the shipped rules (smt_theories/equiv): egg-style `start => goal`
// tables that must prove, tables that must be refuted with a counterexample, every proof
// checked by the independent checker (proofcheck/) from its proof file (and tampered proof
// files rejected), no analysis diagnostics, and determinism.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/proof_json.h"
#include "prism/equiv/prove.h"
#include "prism/equiv/refute.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "proof_check.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

// "X:16x4096 W:4096x6144" -> leaf shapes.
TensorEnv Env(ExprContext& ctx, absl::string_view leaves) {
  TensorEnv env;
  env.ctx = &ctx;
  for (absl::string_view decl : absl::StrSplit(leaves, ' ', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(decl, ':');
    std::vector<int64_t> dims;
    for (absl::string_view d : absl::StrSplit(parts[1], 'x')) {
      int64_t v = 0;
      EXPECT_TRUE(absl::SimpleAtoi(d, &v)) << decl;
      dims.push_back(v);
    }
    env.SetLeafShape(parts[0], dims);
  }
  return env;
}

struct Row {
  std::string name;
  std::string leaves;
  std::string start;
  std::string goal;
};

// The walkthrough's block-graph term for rmsnorm_linear (WALKTHROUGH.md §5).
constexpr char kRmsnormLinearBlock[] = R"(
  (combine
    (mul (reduce (matmul (partition X 1 @F {F}) (partition (partition W 1 @x {g}) 0 @F {F})) @F)
         (rsqrt (add (div (reduce (sum (square (partition X 1 @F {F})) 1) @F) 4096) 1e-06)))
    1 @x))";

// Flash-decoding with per-chunk maxima and the online-softmax rescale (kernel 2 rescales
// each chunk's partial numerator and denominator by exp(m_z − M)).
std::string FlashDecoding(bool rescale_denominator) {
  const std::string s = "(matmul Q (partition Kt 2 @z {Z}))";
  const std::string m = "(max " + s + " 2)";
  const std::string big_m = "(reduce_max " + m + " @z)";
  const std::string e = "(exp (sub " + s + " " + m + "))";
  const std::string scale = "(exp (sub " + m + " " + big_m + "))";
  const std::string acc = "(matmul " + e + " (partition V 1 @z {Z}))";
  const std::string l = "(sum " + e + " 2)";
  const std::string den = rescale_denominator ? "(reduce (mul " + l + " " + scale + ") @z)"
                                              : "(reduce " + l + " @z)";
  return "(div (reduce (mul " + acc + " " + scale + ") @z) " + den + ")";
}

// Split-KV within one kernel: a forloop over L with the running (global) maximum.
constexpr char kSplitKvForloop[] = R"(
  (div (reduce (matmul (exp (sub (matmul Q (partition Kt 2 @F {F}))
                                 (reduce_max (max (matmul Q (partition Kt 2 @F {F})) 2) @F)))
                       (partition V 1 @F {F})) @F)
       (reduce (sum (exp (sub (matmul Q (partition Kt 2 @F {F}))
                              (reduce_max (max (matmul Q (partition Kt 2 @F {F})) 2) @F))) 2) @F)))";

const char kGqaLeaves[] = "Q:2x8x4 Kt:2x4x16 V:2x16x4";
const char kGqaProgram[] = "(matmul (softmax (matmul Q Kt) 2) V)";

const std::vector<Row>& ProvableRows() {
  static const std::vector<Row>* rows = new std::vector<Row>{
      {"walkthrough rmsnorm_linear (WALKTHROUGH §5)", "X:16x4096 W:4096x6144", kRmsnormLinearBlock,
       "(matmul (rms_norm X 1 1e-06) W)"},
      {"split-K is a sum of partial products", "A:8x64 B:64x32",
       "(reduce (matmul (partition A 1 @k {K}) (partition B 0 @k {K})) @k)", "(matmul A B)"},
      {"split reduction", "X:8x64", "(reduce (sum (partition X 1 @f 4) 1) @f)", "(sum X 1)"},
      {"split max", "X:8x64", "(reduce_max (max (partition X 1 @f {F}) 1) @f)", "(max X 1)"},
      {"division commutes past matmul", "X:8x64 W:64x32",
       "(div (matmul X W) (sqrt (sum (square X) 1)))",
       "(matmul (div X (sqrt (sum (square X) 1))) W)"},
      {"row scale commutes into the left factor", "X:8x64 W:64x32 r:8x1",
       "(mul (matmul X W) r)", "(matmul (mul r X) W)"},
      {"rms fusion", "X:8x64", "(mul X (rsqrt (add (mean (square X) 1) 1e-06)))",
       "(rms_norm X 1 1e-06)"},
      {"rms definition with a scale by 1/K", "X:8x64",
       "(mul X (rsqrt (add (div (sum (square X) 1) 64) 1e-06)))", "(rms_norm X 1 1e-06)"},
      {"lora concat-matmul identity", "X:1x64 W:64x64 A:64x4 B:4x64",
       "(matmul (concat X (matmul X A) 1) (concat W B 0))",
       "(add (matmul X W) (matmul (matmul X A) B))"},
      {"lora from the sum side", "X:1x64 W:64x64 A:64x4 B:4x64",
       "(add (matmul X W) (matmul (matmul X A) B))",
       "(matmul (concat X (matmul X A) 1) (concat W B 0))"},
      {"gated mlp one kernel", "X:2x64 A:64x32 B:64x32",
       "(combine (mul (silu (reduce (matmul (partition X 1 @F {F}) (partition (partition A 1 @x {g}) 0 @F {F})) @F))"
       " (reduce (matmul (partition X 1 @F {F}) (partition (partition B 1 @x {g}) 0 @F {F})) @F)) 1 @x)",
       "(mul (silu (matmul X A)) (matmul X B))"},
      {"replicated operand", "X:8x64 W:64x32",
       "(combine (matmul (replicate X @x {g}) (partition W 1 @x {g})) 1 @x)", "(matmul X W)"},
      {"rows split across blocks (ntrans-style rms)", "X:8x64",
       "(combine (rms_norm (partition X 0 @x 4) 1 1e-06) 0 @x)", "(rms_norm X 1 1e-06)"},
      {"softmax shift invariance", "X:8x64",
       "(div (exp (sub X (max X 1))) (sum (exp (sub X (max X 1))) 1))", "(softmax X 1)"},
      {"split-KV forloop with the running max", kGqaLeaves, kSplitKvForloop, kGqaProgram},
      {"flash-decoding partials with online rescale", kGqaLeaves, FlashDecoding(true), kGqaProgram},
      {"partial sums across kernels", "A:8x64 B:64x32",
       "(reduce (partition (combine (matmul (partition A 1 @z {Z}) (partition B 0 @z {Z})) 1 @z) 1 @f {Z}) @f)",
       "(matmul A B)"},
  };
  return *rows;
}

const std::vector<Row>& UnprovableRows() {
  static const std::vector<Row>* rows = new std::vector<Row>{
      {"reduction over the wrong dim", "X:16x4096 W:4096x6144", kRmsnormLinearBlock,
       "(matmul (rms_norm X 0 1e-06) W)"},
      {"split sum reduced over the wrong dim", "X:8x64", "(reduce (sum (partition X 1 @f 4) 1) @f)",
       "(sum X 0)"},
      {"missing rescale of the denominator", kGqaLeaves, FlashDecoding(false), kGqaProgram},
      {"concat in the wrong order", "X:1x64 W:64x64 A:64x4 B:4x64",
       "(matmul (concat (matmul X A) X 1) (concat W B 0))",
       "(add (matmul X W) (matmul (matmul X A) B))"},
      {"K-split without the partial sum", "A:8x64 B:64x32",
       "(matmul (partition A 1 @k {K}) (partition B 0 @k {K}))", "(matmul A B)"},
      {"K-split with slices from different axes", "A:8x64 B:64x32",
       "(reduce (matmul (partition A 1 @k {K}) (partition B 0 @j {K})) @k)", "(matmul A B)"},
      {"wrong mean divisor", "X:8x64", "(mul X (rsqrt (add (div (sum (square X) 1) 32) 1e-06)))",
       "(rms_norm X 1 1e-06)"},
      {"column scale is not a row scale", "X:8x32 W:32x32 c:1x32", "(mul (matmul X W) c)",
       "(matmul (mul X c) W)"},
  };
  return *rows;
}

class EquivProveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<RuleSet> rules = LoadDefaultRules(ctx_);
    ASSERT_OK(rules);
    rules_ = *std::move(rules);
  }
  ProveResult Prove(const Row& row, RunnerLimits limits = {}) {
    absl::StatusOr<Term> a = ParseTerm(ctx_, row.start);
    absl::StatusOr<Term> b = ParseTerm(ctx_, row.goal);
    EXPECT_TRUE(a.ok() && b.ok()) << row.name << ": " << a.status() << " " << b.status();
    env_ = Env(ctx_, row.leaves);
    ProveOptions options;
    options.limits = limits;
    return ProveEquivalent(ctx_, env_, *a, *b, rules_, options);
  }
  ExprContext ctx_;
  RuleSet rules_;
  TensorEnv env_;
};

TEST_F(EquivProveTest, StartProvesGoal) {
  for (const Row& row : ProvableRows()) {
    ProveResult r = Prove(row);
    ASSERT_EQ(r.verdict, Verdict::kProved)
        << row.name << ": " << r.reason << "\n  start: " << row.start << "\n  goal:  " << row.goal;
    EXPECT_THAT(r.diagnostics, ::testing::IsEmpty()) << row.name;
    ASSERT_TRUE(r.proof.has_value());
    // Every step is a valid instance of its rule: the independent checker replays the file.
    absl::StatusOr<proofcheck::ProofSummary> check =
        testing::CheckWithProofChecker(*r.proof, env_, rules_, &ctx_);
    EXPECT_OK(check) << row.name << "\n" << r.proof->ToString(&ctx_);
    if (check.ok()) {
      EXPECT_EQ(check->steps, r.proof->steps.size()) << row.name;
    }
  }
}

// The negative table is refuted by random testing in f64, each with a counterexample.
TEST_F(EquivProveTest, UnprovableRowsAreRefuted) {
  for (const Row& row : UnprovableRows()) {
    RunnerLimits limits;
    limits.max_iterations = 12;
    ProveResult r = Prove(row, limits);
    EXPECT_EQ(r.verdict, Verdict::kRefuted) << row.name << ": " << r.reason << "\n"
                                            << (r.proof ? r.proof->ToString(&ctx_) : "");
    EXPECT_FALSE(r.proof.has_value()) << row.name;
    ASSERT_TRUE(r.counterexample.has_value()) << row.name << ": " << r.reason;
    EXPECT_THAT(r.reason, ::testing::StartsWith("refuted by random testing at ")) << row.name;
    EXPECT_EQ(r.reason, "refuted by random testing " + r.counterexample->ToString()) << row.name;
    EXPECT_THAT(r.diagnostics, ::testing::IsEmpty()) << row.name;
  }
}

// Counterexamples say where the terms differ: a shape, or one element with both values.
TEST_F(EquivProveTest, CounterexamplesNameTheDifference) {
  RunnerLimits limits;
  limits.max_iterations = 12;
  ProveResult wrong_dim = Prove(UnprovableRows()[1], limits);
  ASSERT_TRUE(wrong_dim.counterexample.has_value()) << wrong_dim.reason;
  EXPECT_EQ(wrong_dim.counterexample->ToString(),
            "at seed 0x5eed: shapes differ: [8, 1] vs [1, 64]");

  ProveResult no_partial_sum = Prove(UnprovableRows()[4], limits);
  ASSERT_TRUE(no_partial_sum.counterexample.has_value()) << no_partial_sum.reason;
  const Counterexample& cx = *no_partial_sum.counterexample;
  EXPECT_EQ(cx.sizes, (std::map<std::string, int64_t>{{"K", 2}}));
  EXPECT_EQ(cx.block, (std::map<std::string, int64_t>{{"k", 0}}));
  EXPECT_EQ(cx.index.size(), 2u);
  EXPECT_THAT(cx.detail, ::testing::StartsWith("element [0, 0] is "));
  EXPECT_NE(cx.first, cx.second);
  EXPECT_EQ(cx.inputs.at("A").shape, (Shape{8, 64}));
  EXPECT_EQ(cx.inputs.at("A").data.size(), 8u * 64u);
}

// Random testing never refutes a provable row: the evaluator and the rules agree.
TEST_F(EquivProveTest, ProvableRowsAgreeUnderRandomTesting) {
  for (const Row& row : ProvableRows()) {
    absl::StatusOr<Term> a = ParseTerm(ctx_, row.start);
    absl::StatusOr<Term> b = ParseTerm(ctx_, row.goal);
    ASSERT_TRUE(a.ok() && b.ok()) << row.name;
    RandomTestResult t = RandomTest(ctx_, Env(ctx_, row.leaves), *a, *b);
    EXPECT_EQ(t.outcome, RandomTestOutcome::kAgree)
        << row.name << ": " << t.reason << (t.counterexample ? t.counterexample->ToString() : "");
  }
}

TEST_F(EquivProveTest, RefutationCanBeTurnedOff) {
  ProveOptions options;
  options.refute = false;
  options.limits.max_iterations = 4;
  absl::StatusOr<Term> a = ParseTerm(ctx_, "(sum X 0)");
  absl::StatusOr<Term> b = ParseTerm(ctx_, "(sum X 1)");
  ProveResult r = ProveEquivalent(ctx_, Env(ctx_, "X:8x8"), *a, *b, rules_, options);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_FALSE(r.counterexample.has_value());
  EXPECT_EQ(r.reason, "stopped (saturated) without merging the terms");
}

TEST_F(EquivProveTest, WalkthroughProofUsesTheWalkthroughRules) {
  ProveResult r = Prove(ProvableRows()[0]);
  ASSERT_EQ(r.verdict, Verdict::kProved) << r.reason;
  std::vector<std::string> used = r.proof->RulesUsed();
  for (const char* rule : {"split-k", "split-sum", "combine-partition", "matmul-rowscale", "rms-norm-def"}) {
    EXPECT_THAT(used, ::testing::Contains(rule)) << r.proof->ToString(&ctx_);
  }
}

// The checker rejects tampered proof files made by the prover: a step citing the wrong rule,
// a skipped step, a changed term, a changed rule file hash, a flipped direction.
TEST_F(EquivProveTest, CheckerRejectsTamperedProofFiles) {
  ProveResult r = Prove(ProvableRows()[0]);
  ASSERT_TRUE(r.proof.has_value()) << r.reason;
  const Explanation& good = *r.proof;
  ASSERT_GE(good.steps.size(), 3u);
  std::string text;
  ASSERT_OK(testing::CheckWithProofChecker(good, env_, rules_, &ctx_, &text));
  ASSERT_OK_AND_ASSIGN(std::vector<proofcheck::RuleFile> files, testing::ShippedRuleFiles());
  const nlohmann::json proof = nlohmann::json::parse(text);

  // The first forward rule step (its left side is an instance in `before`).
  size_t k = 0;
  while (good.steps[k].kind != Justification::Kind::kRule || good.steps[k].direction != Direction::kForward) ++k;
  const ProofStep& step = good.steps[k];
  const std::string where = absl::StrCat("step ", k + 1, ": rule '");
  const std::string pos = PathToString(step.position);
  auto check = [&](const nlohmann::json& j) { return proofcheck::CheckProof(j.dump(), files); };
  {
    nlohmann::json bad = proof;
    const std::string other = step.rule.name() == "exp-add" ? "add-comm" : "exp-add";
    bad["steps"][k]["rule"] = other;
    EXPECT_THAT(check(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr(absl::StrCat(where, other, "' does not match at position ", pos,
                                                            ": "))));
  }
  {
    nlohmann::json bad = proof;
    bad["steps"].erase(1);
    EXPECT_THAT(check(bad), StatusIs(absl::StatusCode::kInvalidArgument, "step 2: does not start where step 1 ended"));
  }
  {
    nlohmann::json bad = proof;
    absl::StatusOr<Term> w = ParseTerm(ctx_, "W");
    ASSERT_OK(w);
    bad["steps"][k]["after"] = step.after.Replace(step.position, *w).ToString(&ctx_);
    EXPECT_THAT(check(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr(absl::StrCat(where, step.rule.name(), "' at position ", pos,
                                                            ": the right side gives "))));
  }
  {
    nlohmann::json bad = proof;
    const std::string hash = bad["rule_files"][0]["hash"];
    bad["rule_files"][0]["hash"] = "0123456789abcdef";
    EXPECT_THAT(check(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                     absl::StrCat("rule file 'algebra.rules' has hash ", hash,
                                                  ", but the proof was made with hash 0123456789abcdef (the rules "
                                                  "changed since the proof was made)")));
  }
  {
    nlohmann::json bad = proof;
    bad["steps"][k]["direction"] = "backward";
    EXPECT_THAT(check(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr(absl::StrCat(where, step.rule.name(), "' (backward) "))));
  }
}

// The proof file cites every shipped rule file with the stable hash of its bytes, the input
// shapes and the axis degrees.
TEST_F(EquivProveTest, ProofFileRecordsRuleHashesAndEnvironment) {
  ProveResult r = Prove(ProvableRows()[0]);
  ASSERT_TRUE(r.proof.has_value()) << r.reason;
  nlohmann::ordered_json j = ProofToJson(*r.proof, env_, rules_, &ctx_);
  EXPECT_EQ(j["format"], "prism.proof");
  EXPECT_EQ(j["version"], 1);
  ASSERT_OK_AND_ASSIGN(std::vector<proofcheck::RuleFile> files, testing::ShippedRuleFiles());
  ASSERT_EQ(j["rule_files"].size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(j["rule_files"][i]["name"], files[i].name);
    EXPECT_EQ(j["rule_files"][i]["hash"], HashToHex(StableHashBytes(files[i].text)));
  }
  EXPECT_EQ(j["env"].dump(),
            R"({"inputs":[{"name":"W","shape":[4096,6144]},{"name":"X","shape":[16,4096]}],)"
            R"("axes":[{"name":"F","degree":"F"},{"name":"x","degree":"g"}]})");
  EXPECT_EQ(j["start"], r.proof->start.ToString(&ctx_));
  EXPECT_EQ(j["goal"], "(matmul (rms_norm X 1 1e-06) W)");
  ASSERT_EQ(j["steps"].size(), r.proof->steps.size());
  EXPECT_EQ(j["steps"][0]["before"], j["start"]);
  EXPECT_EQ(j["steps"].back()["after"], j["goal"]);
}

// The same input gives the same e-graph, ids and proof.
TEST_F(EquivProveTest, Deterministic) {
  auto run = [&]() {
    env_ = Env(ctx_, ProvableRows()[0].leaves);
    EGraph g(&ctx_, std::make_unique<TensorAnalysis>(env_));
    EClassId a = g.AddTerm(*ParseTerm(ctx_, ProvableRows()[0].start));
    EClassId b = g.AddTerm(*ParseTerm(ctx_, ProvableRows()[0].goal));
    RunnerLimits limits;
    limits.max_iterations = 6;
    Runner(&g, limits).Run(rules_.rewrites());
    std::string proof = g.Equivalent(a, b) ? g.Explain(a, b)->ToString(&ctx_) : "";
    return std::make_tuple(g.Dump(), g.num_ids(), proof);
  };
  auto first = run();
  auto second = run();
  EXPECT_EQ(std::get<1>(first), std::get<1>(second));
  EXPECT_EQ(std::get<0>(first), std::get<0>(second));
  EXPECT_EQ(std::get<2>(first), std::get<2>(second));
  EXPECT_FALSE(std::get<2>(first).empty());
}

TEST_F(EquivProveTest, IllFormedTermIsReported) {
  ProveResult r = Prove(Row{"ill-formed", "X:8x64", "(matmul X X)", "X"});
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("the first term is ill-formed: ill-formed node (matmul [8, 64] [8, 64]): "
                                  "matmul: inner dims differ: [8, 64] x [8, 64]"));
}

}  // namespace
}  // namespace prism::equiv
