// The checker's own term reader and exact symbolic sizes (src/proofcheck/tree.h): tables of
// texts with what they must read as, and the errors for bad input.
#include "tree.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace prism::proofcheck::internal {
namespace {

using ::prism::testing::StatusIs;

TEST(ProofCheckTreeTest, TermsPrintAsRead) {
  for (const char* text : {"X", "(matmul X W)", "(partition W 1 @x {g * F})", "(scale X 0.5)", "(add X -3)",
                           "(rms_norm X 1 1e-06)", "(f)"}) {
    absl::StatusOr<Tree> t = ReadTerm(text);
    ASSERT_OK(t) << text;
    EXPECT_EQ(Print(*t), std::string(text) == "(f)" ? "f" : text);
  }
}

TEST(ProofCheckTreeTest, LiteralsAreTyped) {
  ASSERT_OK_AND_ASSIGN(Tree a, ReadTerm("(mul X 2)"));
  ASSERT_OK_AND_ASSIGN(Tree b, ReadTerm("(mul X 2.0)"));
  EXPECT_NE(a, b);  // an integer is not a real
  EXPECT_EQ(a.kids[1].kind, Tree::Kind::kInt);
  EXPECT_EQ(b.kids[1].kind, Tree::Kind::kReal);
  ASSERT_OK_AND_ASSIGN(Tree c, ReadTerm("(mul X 2e0)"));
  EXPECT_EQ(b, c);  // reals compare by value bits
}

TEST(ProofCheckTreeTest, BadTerms) {
  struct Row {
    std::string text, message;
  };
  for (const Row& r : std::vector<Row>{
           {"(matmul X", "1:10: found end of input, expected ')'"},
           {"(matmul X ?w)", "1:11: found pattern variable '?w', expected a term"},
           {"(matmul X =>)", "1:11: found '=>', expected an operator name, a number, {size} or @axis"},
           {"((f) X)", "1:2: found '(', expected an operator name"},
           {"(f {})", "1:4: found '{}', expected a symbolic size"},
           {"(f 99999999999999999999)", "1:4: integer literal 99999999999999999999 does not fit in 64 bits"},
           {"X Y", "found 2 terms, expected one"},
       }) {
    EXPECT_THAT(ReadTerm(r.text), StatusIs(absl::StatusCode::kInvalidArgument, r.message)) << r.text;
  }
}

TEST(ProofCheckTreeTest, SizesAreExactMonomials) {
  struct Row {
    std::string text, printed;
  };
  for (const Row& r : std::vector<Row>{
           {"4096", "4096"},
           {"g", "g"},
           {"g * F", "F*g"},
           {"F*g", "F*g"},
           {"4096/g", "4096/g"},
           {"(g * F) * 2", "2*F*g"},
           {"-F", "-1*F"},
           {"F^2/F", "F"},
           {"6/4", "3/2"},
           {"4096 floordiv F", "(4096 floordiv F)"},
           {"(a + b) * 2", "2*(a + b)"},
           {"max(a, b)", "(max(a, b))"},
       }) {
    std::optional<Size> s = ParseSize(r.text);
    ASSERT_TRUE(s.has_value()) << r.text;
    EXPECT_EQ(s->ToString(), r.printed) << r.text;
  }
  EXPECT_FALSE(ParseSize(" ").has_value());
  // 6144/g · g = 6144 without any divisibility reasoning.
  EXPECT_EQ(*Times(*ParseSize("6144/g"), *ParseSize("g")), Size::Const(6144));
  EXPECT_EQ(*Plus(*ParseSize("g"), *ParseSize("2*g")), *ParseSize("3*g"));
  EXPECT_FALSE(Plus(*ParseSize("g"), *ParseSize("F")).has_value());
  EXPECT_FALSE(Times(Size::Const(int64_t{1} << 62), Size::Const(8)).has_value());
  EXPECT_FALSE(Over(Size::Const(1), Size::Const(0)).has_value());
}

TEST(ProofCheckTreeTest, PathsAndReplacement) {
  ASSERT_OK_AND_ASSIGN(Tree t, ReadTerm("(mul (matmul A B) r)"));
  ASSERT_OK_AND_ASSIGN(Tree x, ReadTerm("X"));
  EXPECT_EQ(Print(*At(t, {0, 1})), "B");
  EXPECT_EQ(At(t, {0, 2}), nullptr);
  EXPECT_EQ(Print(Replace(t, {0, 1}, 0, x)), "(mul (matmul A X) r)");
  EXPECT_EQ(PathString({0, 1}), "[0, 1]");
  EXPECT_EQ(PathString({}), "[]");
}

}  // namespace
}  // namespace prism::proofcheck::internal
