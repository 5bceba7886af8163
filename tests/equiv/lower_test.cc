// Lowering Programs to terms, and proving a lowered Program against a block-graph term.
#include "prism/equiv/lower.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/equiv/prove.h"
#include "prism/equiv/rules.h"
#include "proof_check.h"
#include "testing/programs.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

using ::prism::testing::RmsnormLinear;

TEST(EquivLowerTest, LoweringTable) {
  struct Row {
    std::string what;
    std::function<TensorId(ProgramBuilder&, TensorId, TensorId)> build;
    std::string term;
  };
  const std::vector<Row> rows = {
      {"matmul", [](auto& b, auto x, auto y) { return b.MatMul(x, y); }, "(matmul A B)"},
      {"rms_norm -1", [](auto& b, auto x, auto) { return b.RmsNorm(x, -1); }, "(rms_norm A 1 1e-06)"},
      {"mean -2", [](auto& b, auto x, auto) { return b.Reduce(OpKind::kMean, x, -2); }, "(mean A 0)"},
      {"scale", [](auto& b, auto x, auto) { return b.Scale(x, 0.125); }, "(scale A 0.125)"},
      {"softmax", [](auto& b, auto x, auto) { return b.Softmax(x, 1); }, "(softmax A 1)"},
      {"three-way concat", [](auto& b, auto x, auto y) { return b.Concat({x, y, x}, -1); },
       "(concat (concat A B 1) A 1)"},
      {"silu of a sum", [](auto& b, auto x, auto y) { return b.Silu(b.Add(x, y)); }, "(silu (add A B))"},
  };
  for (const Row& r : rows) {
    ProgramBuilder b;
    TensorId x = b.Input("A", DType::kF16, {8, 8});
    TensorId y = b.Input("B", DType::kF16, {8, 8});
    TensorId out = r.build(b, x, y);
    b.Output(out);
    if (r.term.find('B') == std::string::npos) b.Output(y);
    absl::StatusOr<Program> p = std::move(b).Build();
    ASSERT_OK(p) << r.what;
    absl::StatusOr<Term> t = LowerProgramOutput(*p, 0);
    ASSERT_OK(t) << r.what;
    EXPECT_EQ(t->ToString(), r.term) << r.what;
  }
}

TEST(EquivLowerTest, OutputIndexOutOfRange) {
  EXPECT_THAT(LowerProgramOutput(RmsnormLinear(16, 64, 32), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("output index 1 is out of range: the program has 1 outputs")));
}

// The rmsnorm_linear Program at the walkthrough's shapes is proved equal to the walkthrough's
// block-graph term.
TEST(EquivLowerTest, ProgramProvedAgainstWalkthroughBlockTerm) {
  ExprContext ctx;
  Program p = RmsnormLinear(16, 4096, 6144);
  absl::StatusOr<Term> program_term = LowerProgramOutput(p, 0);
  ASSERT_OK(program_term);
  EXPECT_EQ(program_term->ToString(&ctx), "(matmul (rms_norm X 1 1e-06) W)");
  TensorEnv env = ProgramEnv(p, &ctx);
  absl::StatusOr<Term> block = ParseTerm(ctx, R"(
    (combine
      (mul (reduce (matmul (partition X 1 @F {F}) (partition (partition W 1 @x {g}) 0 @F {F})) @F)
           (rsqrt (add (div (reduce (sum (square (partition X 1 @F {F})) 1) @F) 4096) 1e-06)))
      1 @x))");
  ASSERT_OK(block);
  absl::StatusOr<RuleSet> rules = LoadDefaultRules(ctx);
  ASSERT_OK(rules);
  ProveResult r = ProveEquivalent(ctx, env, *block, *program_term, *rules);
  ASSERT_EQ(r.verdict, Verdict::kProved) << r.reason;
  EXPECT_THAT(r.diagnostics, ::testing::IsEmpty());
  EXPECT_OK(testing::CheckWithProofChecker(*r.proof, env, *rules, &ctx));
}

}  // namespace
}  // namespace prism::equiv
