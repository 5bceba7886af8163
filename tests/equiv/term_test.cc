// Terms: parsing and printing (round trip), literals, paths, replacement, errors.
#include "prism/equiv/term.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace prism::equiv {
namespace {

using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

TEST(EquivTermTest, RoundTripTable) {
  const std::vector<std::string> rows = {
      "X",
      "(matmul X W)",
      "(matmul (rms_norm X 1 1e-06) W)",
      "(partition W 1 @x {g})",
      "(combine (partition W 1 @x {g * F}) 1 @x)",
      "(scale X 0.5)",
      "(scale X -0.25)",
      "(sum X -1)",
      "(f (g a b) c)",
      "(mul X 4096)",
      "(add X 0.1)",
      "(mul X 1.0)",
  };
  for (const std::string& text : rows) {
    ExprContext ctx;
    absl::StatusOr<Term> t = ParseTerm(ctx, text);
    ASSERT_OK(t) << text;
    EXPECT_EQ(t->ToString(&ctx), text);
    absl::StatusOr<Term> again = ParseTerm(ctx, t->ToString(&ctx));
    ASSERT_OK(again);
    EXPECT_TRUE(*again == *t) << text;
  }
}

TEST(EquivTermTest, LiteralsAndPayloads) {
  ExprContext ctx;
  Term t = *ParseTerm(ctx, "(f 3 2.5 {F} @x)");
  const TermNode& root = t.node(t.root());
  ASSERT_EQ(root.children.size(), 4u);
  EXPECT_EQ(t.node(root.children[0]).payload, Payload::Int(3));
  EXPECT_EQ(t.node(root.children[1]).payload, Payload::Real(2.5));
  EXPECT_EQ(t.node(root.children[2]).payload.kind(), Payload::Kind::kSym);
  EXPECT_EQ(ctx.var_name(t.node(root.children[2]).payload.sym()), "F");
  EXPECT_EQ(t.node(root.children[3]).payload, Payload::Axis(Symbol("x")));
  EXPECT_NE(Payload::Real(0.0), Payload::Real(-0.0));  // bitwise
  EXPECT_EQ(FormatReal(1e-6), "1e-06");
  EXPECT_EQ(FormatReal(0.1), "0.1");
  EXPECT_EQ(FormatReal(2.0), "2.0");
  EXPECT_EQ(FormatReal(1.0 / 3), "0.3333333333333333");
}

TEST(EquivTermTest, PathsAndReplace) {
  ExprContext ctx;
  Term t = *ParseTerm(ctx, "(f (g a b) c)");
  EXPECT_EQ(t.ToString(*t.At({0, 1}), &ctx), "b");
  EXPECT_FALSE(t.At({0, 2}).has_value());
  EXPECT_FALSE(t.At({3}).has_value());
  Term r = t.Replace({0, 1}, *ParseTerm(ctx, "(h d)"));
  EXPECT_EQ(r.ToString(&ctx), "(f (g a (h d)) c)");
  EXPECT_EQ(t.Replace({}, *ParseTerm(ctx, "z")).ToString(&ctx), "z");
  EXPECT_EQ(t.Subterm(*t.At({0})).ToString(&ctx), "(g a b)");
  EXPECT_EQ(t.TreeSize(), 5u);
  EXPECT_EQ(PathToString({0, 1}), "[0, 1]");
}

TEST(EquivTermTest, ParseErrors) {
  struct Row {
    std::string text;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"", "1:1: found end of input, expected a term"},
      {"(f a", "1:5: found end of input, expected ')' to close the '(' at 1:1"},
      {"(f a))", "1:6: found ')', expected a term or '('"},
      {"()", "1:1: found '()', expected an operator application"},
      {"((f) a)", "1:2: found '(f)', expected an operator name"},
      {"(f ?x)", "1:4: found pattern variable '?x', expected a term (variables occur only in rules)"},
      {"(f 1x)", "1:4: found '1x', expected an operator name, a number, {size} or @axis"},
      {"(f 99999999999999999999)", "1:4: integer literal 99999999999999999999 does not fit in 64 bits"},
      {"(f 1e999)", "1:4: real literal 1e999 is not finite"},
      {"a b", "1:3: found 'b' after the term, expected end of input"},
      {"(f {F +})", "1:4: in symbolic size '{F +}'"},
  };
  for (const Row& r : rows) {
    ExprContext ctx;
    EXPECT_THAT(ParseTerm(ctx, r.text), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(r.message)))
        << r.text;
  }
}

}  // namespace
}  // namespace prism::equiv
