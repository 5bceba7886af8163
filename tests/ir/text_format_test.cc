// The `.prism` text format: parse/print round trips (example files, canonical and
// non-canonical text, random programs), comment attachment, source locations, nesting and size
// limits, FormatNumber. Malformed input is covered by errors_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/testdata/random_program.h"
#include "prism/base/paths.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
constexpr auto kTextInvalid = absl::StatusCode::kInvalidArgument;

// The .prism files of a directory (sorted), or none if it does not exist.
std::vector<std::string> PrismFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".prism") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// ParseProgram(PrintProgram(p)) == p, and printing is a fixpoint.
void ExpectRoundTrip(const Program& p, const std::string& what) {
  const std::string text = PrintProgram(p);
  absl::StatusOr<Program> q = ParseProgram(text);
  ASSERT_TRUE(q.ok()) << what << ": " << q.status() << "\n" << text;
  EXPECT_TRUE(*q == p) << what << ": parse(print(p)) != p\n" << text << "---\n"
                       << PrintProgram(*q);
  EXPECT_EQ(PrintProgram(*q), text) << what;
}

// ---- files -----------------------------------------------------------------------------------
// Every testdata file is in canonical layout: printing gives back the exact text.
TEST(TextFormatTest, TestdataFilesAreCanonical) {
  const std::vector<std::string> files =
      PrismFiles(absl::StrCat(PRISM_SOURCE_DIR, "/tests/ir/testdata"));
  ASSERT_GE(files.size(), 5u);
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<Program> p = ParseProgram(*text, path);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(PrintProgram(*p), *text) << path;
    ExpectRoundTrip(*p, path);
  }
}

// Every example shipped in examples/ parses, is in canonical layout (printing gives back the
// exact file), and round-trips.
TEST(TextFormatTest, ExampleFilesRoundTrip) {
  const std::vector<std::string> files = PrismFiles(absl::StrCat(PRISM_SOURCE_DIR, "/examples"));
  if (files.empty()) GTEST_SKIP() << "no examples/*.prism yet";
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<Program> p = ParseProgram(*text, path);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(PrintProgram(*p), *text)
        << path << " is not in canonical layout; replace it with PrintProgram's output";
    ExpectRoundTrip(*p, path);
  }
}

// ---- canonical and non-canonical text ---------------------------------------------------------
TEST(TextFormatTest, CanonicalTextPrintsBackUnchanged) {
  const std::vector<std::string> rows = {
      "X = input f16[4]\nY = exp(X)\noutput Y\n",
      "X = input bf16[1, 2, 3, 4]\noutput X\n",
      "X = input f32[2147483647]\nY = sum(X, 0)\noutput Y\n",
      "X = input f16[4, 8]\nY = scale(X, 0.1)\nZ = scale(X, -1e-07)\noutput Y\noutput Z\n",
      "X = input f16[4, 8]\nY = rms_norm(X, -1, eps=0)\noutput Y\n",
      "X = input f16[4, 8]\nY = rms_norm(X, 0, eps=0.001)\noutput Y\n",
      "X = input f16[4, 8]\nY = concat(X, X, X, -2)\noutput Y\n",
      "X = input f16[4, 8]\nY = add(X, X)\noutput Y\n",
      "X = input f16[4, 8]\nH = exp(X)\nY = add(H, neg(H))\noutput Y\n",
      "X = input f16[4]\nY = exp(X) # why\n\n\n# last\noutput Y # out\n#\n\n",
      "X = input f16[4]\nY = scale(X, 1e+20)\noutput Y\n",
      "X = input f16[4]\nY = scale(X, -0)\noutput Y\n",
      "X = input f16[4]\nY = scale(X, 5e-324)\noutput Y\n",
      "X = input f16[4]\nY = scale(X, 1.7976931348623157e+308)\noutput Y\n",
      // Tensor names that look like generated ones are kept.
      "t0 = input f16[4]\nt1 = exp(t0)\noutput t1\n",
  };
  for (const std::string& text : rows) {
    absl::StatusOr<Program> p = ParseProgram(text);
    ASSERT_TRUE(p.ok()) << text << p.status();
    EXPECT_EQ(PrintProgram(*p), text);
    ExpectRoundTrip(*p, text);
  }
}

TEST(TextFormatTest, NonCanonicalTextPrintsCanonically) {
  struct Row { std::string text, canonical; };
  const std::vector<Row> rows = {
      {"X=input f16[4]\nY=exp( X )\noutput Y", "X = input f16[4]\nY = exp(X)\noutput Y\n"},
      {"\tX = input\tf16 [ 4 , 8 ]\t# c  \t\n output Y\nY = exp(X)\n",
       "X = input f16[4, 8] # c\nY = exp(X)\noutput Y\n"},
      {"X = input f16[4]\r\nY = exp(X)\r\noutput Y\r\n", "X = input f16[4]\nY = exp(X)\noutput Y\n"},
      {"X = input f16[4]\r\n# c\r\n\r\noutput X", "X = input f16[4]\n# c\n\noutput X\n"},
      // Forward references: statements are put in dependency order, stably; comments move with
      // their statement.
      {"# y\nY = add(exp(X), W)\noutput Y\n# x\nX = input f16[8]\nW = input f16[8]\n",
       "# x\nX = input f16[8]\nW = input f16[8]\n# y\nY = add(exp(X), W)\noutput Y\n"},
      {"C = neg(B)\nB = neg(A)\nA = input f32[2]\noutput C\n",
       "A = input f32[2]\nB = neg(A)\nC = neg(B)\noutput C\n"},
      // Numbers: shortest round-trip form; the default eps is left out.
      {"X = input f16[+4]\nY = scale(X, .50)\noutput Y\n",
       "X = input f16[4]\nY = scale(X, 0.5)\noutput Y\n"},
      {"X = input f16[4]\nY = scale(X, 1E-6)\noutput Y\n",
       "X = input f16[4]\nY = scale(X, 1e-06)\noutput Y\n"},
      {"X = input f16[4]\nY = scale(X, 2)\noutput Y\n",
       "X = input f16[4]\nY = scale(X, 2)\noutput Y\n"},
      {"X = input f16[4]\nY = scale(X, 0.30000000000000004441)\noutput Y\n",
       "X = input f16[4]\nY = scale(X, 0.30000000000000004)\noutput Y\n"},
      {"X = input f16[4]\nY = rms_norm(X, +0, eps=1e-6)\noutput Y\n",
       "X = input f16[4]\nY = rms_norm(X, 0)\noutput Y\n"},
      {"X = input f16[4]\nY = sum(X, -0)\noutput Y\n", "X = input f16[4]\nY = sum(X, 0)\noutput Y\n"},
      // A UTF-8 byte-order mark is dropped.
      {"\xEF\xBB\xBFX = input f16[4]\noutput X\n", "X = input f16[4]\noutput X\n"},
      // Regression (fuzzer): trailing \f and \v in comments are trimmed like spaces.
      {"X = input f16[4] # c \f\n# d\f\v\noutput X\n", "X = input f16[4] # c\n# d\noutput X\n"},
      // Whitespace-only lines are blank lines; comments lose trailing blanks.
      {"X = input f16[4]   \n  \t \n  # c \t\noutput X\n", "X = input f16[4]\n\n# c\noutput X\n"},
      // A tensor may be named like a (non-reserved) identifier containing op names.
      {"exp_ = input f16[4]\nsum2 = exp(exp_)\noutput sum2\n",
       "exp_ = input f16[4]\nsum2 = exp(exp_)\noutput sum2\n"},
  };
  for (const Row& r : rows) {
    absl::StatusOr<Program> p = ParseProgram(r.text);
    ASSERT_TRUE(p.ok()) << r.text << "\n" << p.status();
    EXPECT_EQ(PrintProgram(*p), r.canonical) << "input:\n" << r.text;
    ExpectRoundTrip(*p, r.text);
  }
}

// ---- comments and locations ------------------------------------------------------------------
TEST(TextFormatTest, CommentsAttachToTheNextStatement) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("# a\n\nX = input f16[4] # x\n#b\noutput X # o\n"
                                               "\n# end\n"));
  const Node& x = p.node(*p.Find("X"));
  EXPECT_EQ(x.leading_lines, (std::vector<std::string>{"# a", ""}));
  EXPECT_EQ(x.trailing_comment, "# x");
  ASSERT_EQ(p.outputs().size(), 1u);
  EXPECT_EQ(p.outputs()[0].leading_lines, (std::vector<std::string>{"#b"}));
  EXPECT_EQ(p.outputs()[0].trailing_comment, "# o");
  EXPECT_EQ(std::vector<std::string>(p.trailing_lines().begin(), p.trailing_lines().end()),
            (std::vector<std::string>{"", "# end"}));
}

TEST(TextFormatTest, SourceLocations) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("X = input f16[4, 4]\n\n"
                                               "Y = add(exp(X),  neg(X))\n"
                                               "output Y\n"));
  EXPECT_EQ(p.node(*p.Find("X")).loc, (SourceLoc{1, 5}));
  EXPECT_EQ(p.node(*p.Find("Y")).loc, (SourceLoc{3, 5}));
  // Nested applications: exp at 3:9, neg at 3:18 (ids 1 and 2 in post-order).
  EXPECT_EQ(p.node(TensorId(1)).op, OpKind::kExp);
  EXPECT_EQ(p.node(TensorId(1)).loc, (SourceLoc{3, 9}));
  EXPECT_EQ(p.node(TensorId(2)).loc, (SourceLoc{3, 18}));
  EXPECT_EQ(p.outputs()[0].loc, (SourceLoc{4, 8}));
}

TEST(TextFormatTest, AttributesAndTypes) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("X = input bf16[2, 3]\n"
                                               "A = rms_norm(X, -1, eps=0.25)\n"
                                               "B = scale(A, -3.5)\n"
                                               "C = concat(B, X, 0)\n"
                                               "output C\n"));
  const Node& a = p.node(*p.Find("A"));
  EXPECT_EQ(a.dim, -1);
  EXPECT_EQ(a.eps, 0.25);
  EXPECT_EQ(p.node(*p.Find("B")).scalar, -3.5);
  const Node& c = p.node(*p.Find("C"));
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.shape, (Shape{4, 3}));
}

TEST(TextFormatTest, FilenamePrefixesErrors) {
  EXPECT_THAT(ParseProgram("X = input f64[4]\n", "model.prism"),
              StatusIs(kTextInvalid,
                       "model.prism:1:11: found 'f64', expected one of f16, bf16, f32"));
  // Builder errors carry the position of the node.
  EXPECT_THAT(ParseProgram("X = input f16[4]\nY = sum(X, 3)\noutput Y\n", "m.prism"),
              StatusIs(kTextInvalid,
                       HasSubstr("m.prism:2:5: tensor 'Y': sum: dim 3 is out of range")));
}

// ---- printer ---------------------------------------------------------------------------------
TEST(TextFormatTest, PrinterNamesSharedAndOutputAnonymousTensors) {
  ProgramBuilder b;
  TensorId x = b.Input("X", DType::kF16, {4});
  TensorId t1 = b.Input("t1", DType::kF16, {4});  // clashes with the generated name for id 1
  TensorId e = b.Exp(x);                          // used twice → named
  TensorId y = b.Add(e, b.Unary(OpKind::kNeg, e));                // anonymous output → named
  b.Output(y);
  b.Output(t1);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::string text = PrintProgram(p);
  EXPECT_EQ(text,
            "X = input f16[4]\n"
            "t1 = input f16[4]\n"
            "t2 = exp(X)\n"
            "t4 = add(t2, neg(t2))\n"
            "output t4\n"
            "output t1\n");
  ASSERT_OK_AND_ASSIGN(Program q, ParseProgram(text));
  EXPECT_EQ(q.StructuralHash(), p.StructuralHash());
}

TEST(TextFormatTest, PrinterAvoidsNameClashes) {
  ProgramBuilder b;
  TensorId x = b.Input("t1", DType::kF16, {4});
  TensorId e = b.Exp(x);
  TensorId n = b.Unary(OpKind::kNeg, e);
  b.SetName(n, "t1_1");
  b.Output(b.Add(e, e));
  b.Output(n);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::string text = PrintProgram(p);
  EXPECT_EQ(text,
            "t1 = input f16[4]\n"
            "t1_2 = exp(t1)\n"
            "t1_1 = neg(t1_2)\n"
            "t3 = add(t1_2, t1_2)\n"
            "output t3\n"
            "output t1_1\n");
  ASSERT_OK_AND_ASSIGN(Program q, ParseProgram(text));
  EXPECT_EQ(q.StructuralHash(), p.StructuralHash());
}

TEST(TextFormatTest, PrinterSanitizesBuilderComments) {
  ProgramBuilder b;
  TensorId x = b.Input("X", DType::kF16, {4});
  b.mutable_node(x).leading_lines = {"no hash", "  ", "two\nlines"};
  b.mutable_node(x).trailing_comment = "plain";
  b.Output(x);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  EXPECT_EQ(PrintProgram(p), "# no hash\n\n# two lines\nX = input f16[4] # plain\noutput X\n");
  EXPECT_OK(ParseProgram(PrintProgram(p)));
}

TEST(TextFormatTest, FormatNumber) {
  struct Row { double value; std::string text; };
  const std::vector<Row> rows = {
      {0.5, "0.5"},        {1e-6, "1e-06"},     {2, "2"},          {-0.0, "-0"},
      {0.1, "0.1"},        {1.0 / 3, "0.3333333333333333"},        {100, "100"},
      {1e20, "1e+20"},     {-1.25e-300, "-1.25e-300"},             {5e-324, "5e-324"},
      {std::numeric_limits<double>::max(), "1.7976931348623157e+308"},
      {std::numeric_limits<double>::infinity(), "inf"},            {std::nan(""), "nan"},
  };
  for (const Row& r : rows) EXPECT_EQ(FormatNumber(r.value), r.text);
  // Every finite double reads back exactly.
  Rng rng(11);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng.Next();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    const std::string s = FormatNumber(v);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
  }
}

// ---- random programs -------------------------------------------------------------------------
TEST(TextFormatTest, RandomCanonicalProgramsRoundTripExactly) {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Program p = testing::RandomProgram(seed, {.canonical = true});
    ExpectRoundTrip(p, absl::StrCat("seed ", seed));
    if (::testing::Test::HasFailure()) break;
  }
}

// Programs built in any order, with anonymous shared tensors and anonymous outputs: the printer
// invents names, so only the structure and the printed text are preserved.
TEST(TextFormatTest, RandomProgramsKeepTheirStructure) {
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const Program p = testing::RandomProgram(seed, {.canonical = false, .comments = false});
    const std::string text = PrintProgram(p);
    absl::StatusOr<Program> q = ParseProgram(text);
    ASSERT_TRUE(q.ok()) << "seed " << seed << ": " << q.status() << "\n" << text;
    EXPECT_EQ(q->StructuralHash(), p.StructuralHash()) << "seed " << seed << "\n" << text;
    EXPECT_EQ(PrintProgram(*q), text) << "seed " << seed;
    ExpectRoundTrip(*q, absl::StrCat("seed ", seed, " reparsed"));
    if (::testing::Test::HasFailure()) break;
  }
}

// ---- limits ----------------------------------------------------------------------------------
std::string NestedText(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "exp(";
  s += "X" + std::string(depth, ')');
  return absl::StrCat("X = input f16[4]\nY = ", s, "\noutput Y\n");
}

TEST(TextFormatTest, NestingLimit) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(NestedText(256)));
  EXPECT_EQ(PrintProgram(p), NestedText(256));
  EXPECT_THAT(ParseProgram(NestedText(257)),
              StatusIs(kTextInvalid, "2:1029: found op applications nested more than 256 deep, "
                                 "expected at most 256 levels (name intermediate tensors "
                                 "instead)"));
  // Far deeper input fails the same way, without deep recursion.
  EXPECT_THAT(ParseProgram(NestedText(100000)),
              StatusIs(kTextInvalid, HasSubstr("found op applications nested more than 256 deep")));
}

TEST(TextFormatTest, PrinterNeverNestsDeeperThanTheParserAccepts) {
  ProgramBuilder b;
  TensorId t = b.Input("X", DType::kF32, {2});
  for (int i = 0; i < 2000; ++i) t = b.Exp(t);
  b.SetName(t, "Y");
  b.Output(t);
  ASSERT_OK_AND_ASSIGN(Program p, std::move(b).Build());
  const std::string text = PrintProgram(p);
  ASSERT_OK_AND_ASSIGN(Program q, ParseProgram(text));
  EXPECT_EQ(q.StructuralHash(), p.StructuralHash());
  EXPECT_EQ(PrintProgram(q), text);
}

TEST(TextFormatTest, LongInputs) {
  // 20000 chained statements, and one concat with 20000 operands on one line.
  std::string chain = "T0 = input f32[2]\n";
  for (int i = 1; i <= 20000; ++i) absl::StrAppend(&chain, "T", i, " = neg(T", i - 1, ")\n");
  absl::StrAppend(&chain, "output T20000\n");
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(chain));
  EXPECT_EQ(p.num_tensors(), 20001u);
  EXPECT_EQ(PrintProgram(p), chain);

  std::string wide = "X = input f32[1]\nY = concat(X";
  for (int i = 0; i < 20000; ++i) wide += ", X";
  wide += ", 0)\noutput Y\n";
  ASSERT_OK_AND_ASSIGN(Program w, ParseProgram(wide));
  EXPECT_EQ(w.node(*w.Find("Y")).shape, (Shape{20001}));
  EXPECT_EQ(PrintProgram(w), wide);
}

}  // namespace
}  // namespace prism
