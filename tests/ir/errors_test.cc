// Malformed `.prism` input: one row per mistake a user can make, each asserting the status code
// and the exact message (or an exact substring of it) including LINE:COL. Syntax errors come
// from the parser ("found ..., expected ..."); type and graph errors from ProgramBuilder.
// Every message here is part of the user interface: change one only on purpose.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/ir/text_format.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

struct ErrorRow {
  std::string what;
  std::string text;
  std::string message;  // exact substring of the message, starting with its LINE:COL
};

// Two f16 inputs, X [4, 8] and W [8, 2], on lines 1-2; rows append lines 3+.
const std::string kXW = "X = input f16[4, 8]\nW = input f16[8, 2]\n";
const std::string kOps =
    "matmul, exp, silu, gelu, relu, sqrt, rsqrt, square, neg, recip, scale, add, sub, mul, "
    "div, sum, max, mean, rms_norm, softmax, concat";

std::string Nested(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "neg(";
  s += "X" + std::string(depth, ')');
  return absl::StrCat("X = input f16[4]\nY = ", s, "\noutput Y\n");
}

const std::vector<ErrorRow>& Rows() {
  static const auto* rows = new std::vector<ErrorRow>{
      // ---- whole-file problems ----
      {"empty file", "",
       "1:1: the program has no statements; expected at least one `NAME = input ...` and an "
       "`output NAME`"},
      {"only comments", "# nothing here\n\n",
       "3:1: the program has no statements; expected at least one `NAME = input ...` and an "
       "`output NAME`"},
      {"no output", "X = input f16[4]\nY = exp(X)\n",
       "3:1: found end of input, expected an `output NAME` statement (a program needs at least "
       "one output)"},
      // ---- bytes and characters ----
      {"invalid byte 0xff", "X = input f16[4] # \xff\noutput X\n",
       "1:20: found byte 0xff (not valid UTF-8), expected UTF-8 text"},
      {"truncated UTF-8 sequence", "X = input f16[4]\n# caf\xc3\noutput X\n",
       "2:6: found byte 0xc3 (not valid UTF-8), expected UTF-8 text"},
      {"overlong UTF-8 encoding", "X = input f16[4]\noutput X # \xc0\xaf\n",
       "2:12: found byte 0xc0 (not valid UTF-8), expected UTF-8 text"},
      {"UTF-16 surrogate", "# \xed\xa0\x80\n", "1:3: found byte 0xed (not valid UTF-8)"},
      {"NUL byte", std::string("X = input f16[4]\0\noutput X\n", 27),
       "1:17: found a NUL byte (0x00), expected UTF-8 text"},
      {"lone carriage return", "X = input f16[4]\rY = exp(X)\n",
       "1:17: found a carriage return (U+000D) not followed by a line feed, expected '\\n' or "
       "'\\r\\n' line endings"},
      {"bad character", "X = input f16[4] $\noutput X\n",
       "1:18: found character '$', expected a name, a number, one of ( ) [ ] , = or a # "
       "comment"},
      {"control character", "X = input f16[4]\x01\noutput X\n",
       "1:17: found control character U+0001, expected a name"},
      {"non-ASCII outside a comment", "X = input f16[4]\nY = exp(X)\xc3\xa9\noutput Y\n",
       "2:11: found character '\xc3\xa9' (U+00E9), expected a name, a number"},
      {"column counts characters in comments", "# \xc3\xa9\xc3\xa9\nX = input f16[4] # \xc3\xa9\xc3\xa9",
       "2:22: found end of input, expected an `output NAME` statement"},
      {"malformed number", kXW + "Y = scale(X, 1e)\noutput Y\n",
       "3:14: found malformed number '1e', expected a number such as 4096, -1, 0.5 or 1e-06"},
      {"number glued to a name", "X = input f16[4x4]\noutput X\n",
       "1:15: found malformed number '4x4', expected a number such as 4096"},
      // ---- statement structure ----
      {"statement starts with a number", "4 = input f16[4]\n",
       "1:1: found number 4, expected a statement (`NAME = input DTYPE[DIMS]`, `NAME = op(...)` "
       "or `output NAME`)"},
      {"missing '='", "X input f16[4]\n",
       "1:3: found keyword 'input', expected '=' after 'X' (`NAME = ...`)"},
      {"two statements on a line", "X = input f16[4] Y = exp(X)\n",
       "1:18: found 'Y', expected the end of the line (one statement per line)"},
      {"statement only renames", kXW + "Y = X\noutput Y\n",
       "3:5: found 'X' alone, expected an op application such as exp(X) or `input DTYPE[DIMS]` "
       "(a statement cannot just rename a tensor)"},
      {"empty right-hand side", kXW + "Y =\noutput Y\n",
       "3:4: found end of line, expected `input DTYPE[DIMS]` or an op application such as exp(X)"},
      {"output without a name", kXW + "output\n",
       "3:7: found end of line, expected a tensor name after `output`"},
      {"output of an expression", kXW + "output exp(X)\n",
       "3:8: found op name 'exp', expected a tensor name after `output`"},
      // ---- names ----
      {"op name as tensor name", "exp = input f16[4]\noutput exp\n",
       "1:1: found op name 'exp' as a tensor name, expected a name that is not an op name, "
       "dtype, `input`, `output` or `eps`"},
      {"dtype as tensor name", "bf16 = input f16[4]\n",
       "1:1: found dtype 'bf16' as a tensor name, expected a name that is not an op name"},
      {"keyword input as tensor name", "input = input f16[4]\n",
       "1:1: found keyword 'input' as a tensor name"},
      {"keyword output as tensor name", "X = input f16[4]\noutput = exp(X)\n",
       "2:1: found keyword 'output' as a tensor name"},
      {"keyword eps as tensor name", "eps = input f16[4]\n",
       "1:1: found keyword 'eps' as a tensor name"},
      {"redefinition", kXW + "X = exp(W)\noutput X\n",
       "3:1: found a second definition of 'X', expected a new name: tensor 'X' is already "
       "defined at 1:1"},
      {"undefined name", kXW + "Y = add(exp(Z), X)\noutput Y\n",
       "3:13: found undefined tensor 'Z', expected a tensor defined in this file"},
      {"undefined name, suggestion", kXW + "Y = matmul(X, w)\noutput Y\n",
       "3:15: found undefined tensor 'w', expected a tensor defined in this file (did you mean "
       "'W'?)"},
      {"undefined name, first in text wins", kXW + "Y = add(Q, exp(R))\noutput Y\n",
       "3:9: found undefined tensor 'Q'"},
      {"output of an unknown name", kXW + "Y = matmul(X, W)\noutput Q\n",
       "4:8: found undefined tensor 'Q' in `output`, expected a tensor defined in this file"},
      {"duplicate output", kXW + "Y = matmul(X, W)\noutput Y\noutput Y\n",
       "5:8: found 'Y' output again, expected each tensor output once (first `output Y` at "
       "4:8)"},
      {"keyword used as operand", kXW + "Y = exp(input f16[4])\noutput Y\n",
       "3:9: found keyword 'input', expected a tensor name, an op application or a number"},
      {"dtype used as operand", kXW + "Y = exp(f16)\noutput Y\n",
       "3:9: found dtype 'f16', expected a tensor name, an op application or a number"},
      // ---- ops, arity, attributes ----
      {"unknown op with suggestion", kXW + "Y = expp(X)\noutput Y\n",
       "3:5: found unknown op 'expp', expected one of " + kOps + " (did you mean 'exp'?)"},
      {"unknown op, other suggestion", kXW + "Y = neg(softmx(X, -1))\noutput Y\n",
       "3:9: found unknown op 'softmx', expected one of " + kOps + " (did you mean 'softmax'?)"},
      {"unknown op without suggestion", kXW + "Y = frobnicate(X)\noutput Y\n",
       "3:5: found unknown op 'frobnicate', expected one of " + kOps},
      {"input used as an op", kXW + "Y = input(X)\noutput Y\n",
       "3:10: found '(', expected a dtype: one of f16, bf16, f32"},
      {"nested input( call", kXW + "Y = exp(input(X))\noutput Y\n",
       "3:9: found 'input(', expected `input` only as a whole statement: `NAME = input "
       "DTYPE[DIMS]`"},
      {"too few operands", kXW + "Y = add(X)\noutput Y\n",
       "3:10: found ')', expected tensor operand 2 of add (usage: add(a, b))"},
      {"no operands", kXW + "Y = exp()\noutput Y\n",
       "3:9: found ')', expected tensor operand 1 of exp (usage: exp(x))"},
      {"too many operands", kXW + "Y = exp(X, W)\noutput Y\n",
       "3:12: found 'W', expected ')' (usage: exp(x))"},
      {"number instead of a tensor", kXW + "Y = add(X, 2)\noutput Y\n",
       "3:12: found number 2, expected tensor operand 2 of add (usage: add(a, b))"},
      {"concat of one tensor", kXW + "Y = concat(X, 0)\noutput Y\n",
       "3:15: found number 0, expected tensor operand 2 of concat (usage: concat(a, b, ..., "
       "dim))"},
      {"missing '(' after op", kXW + "Y = exp X\noutput Y\n",
       "3:9: found 'X', expected '(' after op 'exp' (usage: exp(x))"},
      {"op used as a value", kXW + "Y = add(X, exp)\noutput Y\n",
       "3:15: found ')', expected '(' after op 'exp' (usage: exp(x))"},
      {"missing ')'", kXW + "Y = exp(X\noutput Y\n",
       "3:10: found end of line, expected ',' or ')' (usage: exp(x))"},
      {"extra ')'", kXW + "Y = exp(X))\noutput Y\n",
       "3:11: found ')', expected the end of the line (one statement per line)"},
      {"comment inside parentheses", kXW + "Y = exp(X # c\noutput Y\n",
       "3:11: found a comment, expected ',' or ')' (usage: exp(x))"},
      {"missing dim", kXW + "Y = softmax(X)\noutput Y\n",
       "3:14: found ')', expected the dim of softmax (usage: softmax(x, dim))"},
      {"fractional dim", kXW + "Y = sum(X, 1.5)\noutput Y\n",
       "3:12: found 1.5, expected an integer dim (usage: sum(x, dim))"},
      {"tensor as dim", kXW + "Y = sum(X, W)\noutput Y\n",
       "3:12: found 'W', expected the dim of sum (usage: sum(x, dim))"},
      {"dim out of the int64 range", kXW + "Y = sum(X, -99999999999999999999)\noutput Y\n",
       "3:12: found -99999999999999999999 (out of the 64-bit integer range), expected a dim "
       "(usage: sum(x, dim))"},
      {"tensor as scale constant", kXW + "Y = scale(X, W)\noutput Y\n",
       "3:14: found 'W', expected the constant of scale (usage: scale(x, c))"},
      {"scale constant overflows", kXW + "Y = scale(X, 1e999)\noutput Y\n",
       "3:14: found 1e999 (out of the range of a double), expected a finite number"},
      {"eps on an op without eps", kXW + "Y = softmax(X, -1, eps=1e-5)\noutput Y\n",
       "3:20: found eps=1e-5, expected ')' (usage: softmax(x, dim))"},
      {"positional eps", kXW + "Y = rms_norm(X, -1, 1e-5)\noutput Y\n",
       "3:21: found number 1e-5, expected ')' (usage: rms_norm(x, dim) or rms_norm(x, dim, "
       "eps=E))"},
      {"eps without a number", kXW + "Y = rms_norm(X, -1, eps=X)\noutput Y\n",
       "3:25: found 'X', expected a number after 'eps='"},
      {"eps twice", kXW + "Y = rms_norm(X, -1, eps=1, eps=2)\noutput Y\n",
       "3:28: found eps=2, expected ')'"},
      // ---- shapes and dtypes of inputs ----
      {"unknown dtype", "X = input f64[4]\noutput X\n",
       "1:11: found 'f64', expected one of f16, bf16, f32"},
      {"columns after a byte-order mark", "\xEF\xBB\xBFX = input f64[4]\noutput X\n",
       "1:11: found 'f64', expected one of f16, bf16, f32"},
      {"missing dtype", "X = input [4]\noutput X\n",
       "1:11: found '[', expected a dtype: one of f16, bf16, f32"},
      {"missing shape", "X = input f16\noutput X\n",
       "1:14: found end of line, expected '[' and the shape, e.g. f16[16, 4096]"},
      {"parenthesized shape", "X = input f16(4)\noutput X\n",
       "1:14: found '(', expected '[' and the shape, e.g. f16[16, 4096]"},
      {"empty shape", "X = input f16[]\noutput X\n",
       "1:15: found ']', expected a dimension in 1..2147483647"},
      {"missing comma in shape", "X = input f16[4 8]\noutput X\n",
       "1:17: found number 8, expected ',' or ']' in the shape"},
      {"unterminated shape", "X = input f16[4, 8\noutput X\n",
       "1:19: found end of line, expected ',' or ']' in the shape"},
      {"trailing comma in shape", "X = input f16[4,]\noutput X\n",
       "1:17: found ']', expected a dimension in 1..2147483647"},
      {"rank 5", "X = input f16[1, 2, 3, 4, 5]\noutput X\n",
       "1:27: found a dimension at position 4, expected at most 4 dimensions (rank at most 4)"},
      {"zero dim", "X = input f16[4, 0]\noutput X\n",
       "1:18: found 0, expected a dimension in 1..2147483647"},
      {"negative dim", "X = input f16[-4]\noutput X\n",
       "1:15: found -4, expected a dimension in 1..2147483647"},
      {"dim over 2^31-1", "X = input f16[2147483648]\noutput X\n",
       "1:15: found 2147483648, expected a dimension in 1..2147483647"},
      {"dim literal overflows int64", "X = input f16[99999999999999999999999]\noutput X\n",
       "1:15: found 99999999999999999999999, expected a dimension in 1..2147483647"},
      {"fractional shape dim", "X = input f16[1.5]\noutput X\n",
       "1:15: found 1.5, expected a dimension in 1..2147483647"},
      {"name as shape dim", "X = input f16[N]\noutput X\n",
       "1:15: found 'N', expected a dimension in 1..2147483647"},
      // ---- nesting ----
      {"nesting deeper than 256", Nested(257),
       "2:1029: found op applications nested more than 256 deep, expected at most 256 levels "
       "(name intermediate tensors instead)"},
      // ---- validation by ProgramBuilder (types, graph) ----
      {"matmul inner dims", kXW + "Y = matmul(W, X)\noutput Y\n",
       "3:5: tensor 'Y': matmul: inner dims differ: found [8, 2] x [4, 8], expected a[..., K] x "
       "b[..., K, N] with equal K (2 vs 4)"},
      {"nested matmul inner dims", kXW + "Y = exp(matmul(X, X))\noutput Y\n",
       "3:9: matmul: inner dims differ: found [4, 8] x [4, 8]"},
      {"matmul of rank 1", "X = input f16[8]\nW = input f16[8, 2]\nY = matmul(X, W)\noutput Y\n",
       "3:5: tensor 'Y': matmul: found operand shapes [8] x [8, 2], expected both of rank at "
       "least 2 (a[..., M, K] x b[..., K, N])"},
      {"matmul batch dims", "A = input f32[2, 4, 8]\nB = input f32[3, 8, 4]\nY = matmul(A, B)\n"
       "output Y\n",
       "3:5: tensor 'Y': matmul: batch dims: cannot broadcast [2] with [3]"},
      {"broadcast failure", kXW + "Y = add(X, W)\noutput Y\n",
       "3:5: tensor 'Y': add: cannot broadcast [4, 8] with [8, 2]: found dims 8 and 2 at "
       "position -1, expected equal dims or one of them 1"},
      {"broadcast failure, leading dim", "A = input f32[3, 4]\nB = input f32[2, 2, 4]\n"
       "Y = mul(B, A)\noutput Y\n",
       "3:5: tensor 'Y': mul: cannot broadcast [2, 2, 4] with [3, 4]: found dims 2 and 3 at "
       "position -2"},
      {"two-tensor cycle", "A = exp(B)\nB = exp(A)\noutput A\n",
       "1:5: found a cycle: A -> B -> A; expected an acyclic program (a tensor cannot depend on "
       "itself)"},
      {"self cycle", "X = input f16[4]\nA = add(A, X)\noutput A\n", "2:5: found a cycle: A -> A"},
      {"cycle through a nested op", kXW + "A = neg(C)\nB = exp(neg(A))\nC = relu(B)\noutput C\n",
       "3:5: found a cycle: A -> neg@4:9 -> B -> C -> A"},
      {"dim out of range", kXW + "Y = sum(X, 2)\noutput Y\n",
       "3:5: tensor 'Y': sum: dim 2 is out of range for rank 2: expected -2..1"},
      {"negative dim out of range", kXW + "Y = softmax(X, -3)\noutput Y\n",
       "3:5: tensor 'Y': softmax: dim -3 is out of range for rank 2: expected -2..1"},
      {"concat shape mismatch", kXW + "Y = concat(X, W, 1)\noutput Y\n",
       "3:5: tensor 'Y': concat: found operand shapes [4, 8] and [8, 2] (operand 1), expected "
       "equal ranks and equal dims except dim 1"},
      {"concat rank mismatch", "A = input f32[2, 3]\nB = input f32[3]\nY = concat(A, B, 0)\n"
       "output Y\n",
       "3:5: tensor 'Y': concat: found operand shapes [2, 3] and [3] (operand 1), expected equal "
       "ranks"},
      {"concat result too large", "A = input f32[2147483647]\nY = concat(A, A, 0)\noutput Y\n",
       "2:5: tensor 'Y': concat: result dim 0 is 4294967294, expected at most 2147483647"},
      {"dtype mismatch", "A = input f16[4]\nB = input f32[4]\nY = mul(A, B)\noutput Y\n",
       "3:5: mul: found operands of dtypes f16 and f32, expected all operands of one dtype"},
      {"dtype mismatch in matmul", "A = input bf16[4, 4]\nB = input f16[4, 4]\n"
       "Y = matmul(A, B)\noutput Y\n",
       "3:5: matmul: found operands of dtypes bf16 and f16, expected all operands of one dtype"},
      {"negative eps", kXW + "Y = rms_norm(X, -1, eps=-1)\noutput Y\n",
       "3:5: tensor 'Y': rms_norm: found eps=-1, expected a finite number >= 0"},
      {"unused tensor", kXW + "Y = exp(X)\noutput Y\n",
       "2:5: tensor 'W' is defined but never used; use it or declare it with `output W`"},
  };
  return *rows;
}

TEST(ErrorsTest, MalformedProgramTable) {
  ASSERT_GE(Rows().size(), 40u);
  for (const ErrorRow& r : Rows()) {
    // Every row's expected text starts with the position, "LINE:COL: ".
    ASSERT_THAT(r.message, ::testing::ContainsRegex("^[0-9]+:[0-9]+: ")) << r.what;
    EXPECT_THAT(ParseProgram(r.text), StatusIs(kInvalid, HasSubstr(r.message)))
        << "row: " << r.what << "\ninput:\n" << r.text;
  }
}

// The filename, when given, prefixes every message.
TEST(ErrorsTest, FilenamePrefix) {
  for (const ErrorRow& r : Rows()) {
    absl::StatusOr<Program> p = ParseProgram(r.text, "in.prism");
    ASSERT_FALSE(p.ok()) << r.what;
    EXPECT_THAT(std::string(p.status().message()), ::testing::StartsWith("in.prism:"))
        << r.what;
  }
}

// Messages never depend on anything but the input: parsing twice gives the same message.
TEST(ErrorsTest, Deterministic) {
  for (const ErrorRow& r : Rows()) {
    EXPECT_EQ(ParseProgram(r.text).status(), ParseProgram(r.text).status()) << r.what;
  }
}

}  // namespace
}  // namespace prism
