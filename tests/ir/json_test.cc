// JSON export/import of Programs: the documented layout, round trips (files, random
// programs, text), and malformed documents with the JSON path in every message.
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/testdata/random_program.h"
#include "nlohmann/json.hpp"
#include "prism/base/paths.h"
#include "prism/ir/json.h"
#include "prism/ir/text_format.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::nlohmann::json;
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;
constexpr auto kJsonInvalid = absl::StatusCode::kInvalidArgument;

TEST(JsonTest, Layout) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram("X = input f16[16, 64]\n"
                                               "W = input f16[64, 32]\n"
                                               "Y = matmul(rms_norm(X, -1), W) # comments are dropped\n"
                                               "Z = scale(Y, 0.5)\n"
                                               "output Z\n"));
  const json expected = json::parse(R"({
    "format": "prism.program", "version": 1,
    "tensors": [
      {"name": "X", "op": "input", "dtype": "f16", "shape": [16, 64]},
      {"name": "W", "op": "input", "dtype": "f16", "shape": [64, 32]},
      {"name": "", "op": "rms_norm", "operands": [0], "dim": -1, "eps": 1e-06,
       "dtype": "f16", "shape": [16, 64]},
      {"name": "Y", "op": "matmul", "operands": [2, 1], "dtype": "f16", "shape": [16, 32]},
      {"name": "Z", "op": "scale", "operands": [3], "scalar": 0.5, "dtype": "f16",
       "shape": [16, 32]}
    ],
    "outputs": ["Z"]})");
  EXPECT_EQ(ProgramToJson(p), expected) << ProgramToJson(p).dump(2);
}

// Round trip without comments: equal programs; with comments: equal structure and JSON.
void ExpectJsonRoundTrip(const Program& p, bool exact, const std::string& what) {
  const json j = ProgramToJson(p);
  absl::StatusOr<Program> q = ProgramFromJson(j);
  ASSERT_TRUE(q.ok()) << what << ": " << q.status() << "\n" << j.dump(2);
  if (exact) {
    EXPECT_TRUE(*q == p) << what;
  }
  EXPECT_EQ(q->StructuralHash(), p.StructuralHash()) << what;
  EXPECT_EQ(ProgramToJson(*q), j) << what;
  absl::StatusOr<Program> r = ProgramFromJsonText(j.dump());
  ASSERT_TRUE(r.ok()) << what << ": " << r.status();
  EXPECT_TRUE(*r == *q) << what;
}

TEST(JsonTest, FilesRoundTrip) {
  std::vector<std::string> files;
  for (const char* dir : {"/tests/ir/testdata", "/examples"}) {
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(absl::StrCat(PRISM_SOURCE_DIR, dir), ec)) {
      if (e.path().extension() == ".prism") files.push_back(e.path().string());
    }
  }
  ASSERT_GE(files.size(), 5u);
  for (const std::string& path : files) {
    absl::StatusOr<std::string> text = ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status();
    absl::StatusOr<Program> p = ParseProgram(*text, path);
    ASSERT_TRUE(p.ok()) << p.status();
    ExpectJsonRoundTrip(*p, /*exact=*/false, path);
  }
}

TEST(JsonTest, RandomProgramsRoundTrip) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    for (bool canonical : {true, false}) {
      const Program p =
          testing::RandomProgram(seed, {.canonical = canonical, .comments = false});
      ExpectJsonRoundTrip(p, /*exact=*/true, absl::StrCat("seed ", seed, " ", canonical));
    }
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(JsonTest, ImportAcceptsForwardReferencesIndicesAndOmittedTypes) {
  ASSERT_OK_AND_ASSIGN(Program p, ProgramFromJsonText(R"({
    "format": "prism.program", "version": 1,
    "tensors": [
      {"op": "add", "operands": [1, 2]},
      {"name": "A", "op": "input", "dtype": "f32", "shape": [2, 3]},
      {"name": "B", "op": "exp", "operands": [1]}
    ],
    "outputs": [0]})"));
  EXPECT_EQ(PrintProgram(p), "A = input f32[2, 3]\nB = exp(A)\nt2 = add(A, B)\noutput t2\n");
}

struct JsonErrorRow {
  std::string what;
  std::string text;
  std::string message;  // exact substring, starting with the JSON path (or LINE:COL)
};

TEST(JsonTest, ErrorTable) {
  // A valid document with one placeholder replaced per row.
  auto doc = [](const std::string& tensors, const std::string& outputs = R"(["Y"])") {
    return absl::StrCat(R"({"format": "prism.program", "version": 1, "tensors": [)", tensors,
                        R"(], "outputs": )", outputs, "}");
  };
  const std::string x = R"({"name": "X", "op": "input", "dtype": "f16", "shape": [4, 8]})";
  const std::vector<JsonErrorRow> rows = {
      {"not JSON", "{\"format\": \n  prism}",
       "2:3: found malformed JSON, expected a JSON document (syntax error while parsing value "
       "- invalid literal; last read: '\"format\": <U+000A>  p')"},
      {"truncated", "{\"format\": ", "1:12: found malformed JSON"},
      {"invalid UTF-8", "\"\xff\"", "1:2: found malformed JSON"},
      {"not an object", "[1, 2]",
       "(root): found an array of 2 elements, expected an object with keys \"format\", "
       "\"version\", \"tensors\", \"outputs\""},
      {"unknown top-level key", R"({"format": "prism.program", "version": 1, "tensor": []})",
       "tensor: found an unknown key, expected one of format, version, tensors, outputs"},
      {"wrong format", R"({"format": "onnx", "version": 1, "tensors": [], "outputs": []})",
       "format: found \"onnx\", expected \"prism.program\""},
      {"missing version", R"({"format": "prism.program", "tensors": [], "outputs": []})",
       "version: found nothing, expected 1"},
      {"future version", R"({"format": "prism.program", "version": 2, "tensors": [], "outputs": []})",
       "version: found 2, expected 1"},
      {"tensors not an array", R"({"format": "prism.program", "version": 1, "tensors": {}, "outputs": []})",
       "tensors: found an object, expected an array of tensors"},
      {"missing outputs", R"({"format": "prism.program", "version": 1, "tensors": []})",
       "outputs: found nothing, expected an array of output names or tensor indices"},
      {"tensor not an object", doc(x + ", 7"), "tensors[1]: found 7, expected an object"},
      {"unknown op", doc(x + R"(, {"name": "Y", "op": "expp", "operands": [0]})"),
       "tensors[1].op: found \"expp\", expected one of input, matmul, exp, silu"},
      {"missing op", doc(R"({"name": "Y"})"), "tensors[0].op: found nothing, expected one of"},
      {"op not a string", doc(R"({"op": 3})"), "tensors[0].op: found 3, expected one of input"},
      {"unknown tensor key", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0], "axis": 1})"),
       "tensors[1].axis: found an unknown key, expected one of name, op, operands, dim, scalar, "
       "eps, dtype, shape"},
      {"name not a string", doc(R"({"name": 5, "op": "input", "dtype": "f16", "shape": [4]})"),
       "tensors[0].name: found 5, expected a string (\"\" = anonymous)"},
      {"bad dtype", doc(R"({"name": "X", "op": "input", "dtype": "f64", "shape": [4]})"),
       "tensors[0].dtype: found \"f64\", expected one of \"f16\", \"bf16\", \"f32\""},
      {"input without shape", doc(R"({"name": "X", "op": "input", "dtype": "f16"})"),
       "tensors[0].shape: found nothing, expected the shape of the input"},
      {"shape of rank 5", doc(R"({"name": "X", "op": "input", "dtype": "f16", "shape": [1, 2, 3, 4, 5]})"),
       "tensors[0].shape: found 5 dimensions, expected 1 to 4 dimensions"},
      {"zero dim", doc(R"({"name": "X", "op": "input", "dtype": "f16", "shape": [4, 0]})"),
       "tensors[0].shape[1]: found 0, expected a dimension in 1..2147483647"},
      {"fractional dim", doc(R"({"name": "X", "op": "input", "dtype": "f16", "shape": [4.5]})"),
       "tensors[0].shape[0]: found 4.5, expected a dimension in 1..2147483647"},
      {"huge dim", doc(R"({"name": "X", "op": "input", "dtype": "f16", "shape": [18446744073709551615]})"),
       "tensors[0].shape[0]: found 18446744073709551615, expected a dimension in 1..2147483647"},
      {"input with operands", doc(R"({"name": "X", "op": "input", "dtype": "f16", "shape": [4], "operands": [0]})"),
       "tensors[0].operands: found an array of 1 element, expected no operands (input has none)"},
      {"missing operands", doc(x + R"(, {"name": "Y", "op": "exp"})"),
       "tensors[1].operands: found nothing, expected an array of 1 tensor indices"},
      {"wrong arity", doc(x + R"(, {"name": "Y", "op": "add", "operands": [0]})"),
       "tensors[1].operands: found 1 operand, expected 2 for add"},
      {"concat arity", doc(x + R"(, {"name": "Y", "op": "concat", "operands": [0], "dim": 0})"),
       "tensors[1].operands: found 1 operand, expected at least 2 for concat"},
      {"operand out of range", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [2]})"),
       "tensors[1].operands[0]: found 2, expected a tensor index in 0..1"},
      {"operand not an integer", doc(x + R"(, {"name": "Y", "op": "exp", "operands": ["X"]})"),
       "tensors[1].operands[0]: found \"X\", expected a tensor index in 0..1"},
      {"missing dim", doc(x + R"(, {"name": "Y", "op": "sum", "operands": [0]})"),
       "tensors[1].dim: found nothing, expected the dim of sum"},
      {"fractional dim attribute", doc(x + R"(, {"name": "Y", "op": "sum", "operands": [0], "dim": 1.5})"),
       "tensors[1].dim: found 1.5, expected an integer dim"},
      {"dim on exp", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0], "dim": 1})"),
       "tensors[1].dim: found 1, expected no \"dim\" (exp takes no dim)"},
      {"missing scalar", doc(x + R"(, {"name": "Y", "op": "scale", "operands": [0]})"),
       "tensors[1].scalar: found nothing, expected the constant of scale"},
      {"scalar not a number", doc(x + R"(, {"name": "Y", "op": "scale", "operands": [0], "scalar": "2"})"),
       "tensors[1].scalar: found \"2\", expected a number"},
      {"eps on softmax", doc(x + R"(, {"name": "Y", "op": "softmax", "operands": [0], "dim": 0, "eps": 0.1})"),
       "tensors[1].eps: found 0.1, expected no \"eps\" (softmax takes no eps)"},
      {"output unknown name", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0]})", R"(["Q"])"),
       "outputs[0]: found \"Q\", expected the name of a tensor (a tensor name or an index in "
       "0..1)"},
      {"output index out of range", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0]})", "[5]"),
       "outputs[0]: found 5, expected a tensor name or an index in 0..1"},
      {"output of the wrong type", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0]})", "[null]"),
       "outputs[0]: found null, expected a tensor name or an index in 0..1"},
      {"declared shape disagrees", doc(x + R"(, {"name": "Y", "op": "sum", "operands": [0], "dim": 1, "shape": [4, 8]})"),
       "tensors[1].shape: found [4, 8], expected [4, 1] (the inferred shape)"},
      {"declared dtype disagrees", doc(x + R"(, {"name": "Y", "op": "exp", "operands": [0], "dtype": "f32"})"),
       "tensors[1].dtype: found \"f32\", expected \"f16\" (the inferred dtype)"},
      // Validation by the builder.
      {"builder: dim out of range", doc(x + R"(, {"name": "Y", "op": "sum", "operands": [0], "dim": 2})"),
       "tensor 'Y': sum: dim 2 is out of range for rank 2: expected -2..1"},
      {"builder: cycle", doc(x + R"(, {"name": "Y", "op": "add", "operands": [0, 2]}, {"name": "Z", "op": "neg", "operands": [1]})"),
       "found a cycle: Y -> Z -> Y"},
      {"builder: invalid name", doc(R"({"name": "1X", "op": "input", "dtype": "f16", "shape": [4]})", "[0]"),
       "found tensor name '1X', expected an identifier"},
      {"builder: no outputs", doc(x, "[]"), "the program has no output"},
  };
  for (const JsonErrorRow& r : rows) {
    EXPECT_THAT(ProgramFromJsonText(r.text), StatusIs(kJsonInvalid, HasSubstr(r.message)))
        << "row: " << r.what << "\ninput: " << r.text;
  }
}

// Deeply nested JSON is rejected cleanly (no recursion over the document).
TEST(JsonTest, DeepNesting) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_THAT(ProgramFromJsonText(deep),
              StatusIs(kJsonInvalid, HasSubstr("(root): found an array of 1 element, expected an "
                                           "object")));
  const std::string deep_op = absl::StrCat(
      R"({"format": "prism.program", "version": 1, "tensors": [{"op": )",
      std::string(100000, '['), std::string(100000, ']'), R"(}], "outputs": []})");
  EXPECT_THAT(ProgramFromJsonText(deep_op),
              StatusIs(kJsonInvalid, HasSubstr("tensors[0].op: found an array of 1 element")));
}

}  // namespace
}  // namespace prism
