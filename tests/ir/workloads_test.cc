// Tests of the built-in workloads (ir/workloads.h): the examples/ files are byte-identical to
// WorkloadText, every workload has the shapes of ../shared/WORKLOADS.md at b = 1 and b = 8, its
// text is in canonical layout (prints back identically), and its roofline floor matches the
// floor column of the measured table.
#include "prism/ir/workloads.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/paths.h"
#include "prism/ir/analysis.h"
#include "prism/ir/program.h"
#include "prism/ir/text_format.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ExamplePath(const std::string& name, int batch) {
  return JoinPath(PRISM_SOURCE_DIR, "examples/" + name + "_b" + std::to_string(batch) + ".prism");
}

TEST(WorkloadsTest, NamesInWorkloadsMdOrder) {
  EXPECT_THAT(WorkloadNames(),
              ElementsAre("gqa", "qknorm_gqa", "rmsnorm_linear", "gated_mlp", "lora", "ntrans"));
  EXPECT_EQ(kDefaultWorkload, "rmsnorm_linear");
  for (const std::string& name : WorkloadNames()) {
    EXPECT_FALSE(WorkloadDescription(name).empty()) << name;
  }
  EXPECT_EQ(WorkloadDescription("nope"), "");
}

// The files under examples/ are exactly WorkloadText at b = 1 and b = 8. When this fails after
// a deliberate change to src/ir/workloads.cc, regenerate them: tools/regen_examples.sh.
TEST(WorkloadsTest, ExampleFilesAreByteIdenticalToBuiltins) {
  for (const std::string& name : WorkloadNames()) {
    for (int batch : {1, 8}) {
      const std::string path = ExamplePath(name, batch);
      ASSERT_OK_AND_ASSIGN(std::string expected, WorkloadText(name, batch));
      absl::StatusOr<std::string> actual = ReadFile(path);
      ASSERT_OK(actual) << "missing example; run tools/regen_examples.sh";
      EXPECT_EQ(*actual, expected) << path << " differs from WorkloadText(\"" << name << "\", "
                                   << batch << "); run tools/regen_examples.sh";
    }
  }
}

// Shapes from the table in WORKLOADS.md (b = batch).
struct ShapeRow {
  const char* name;
  std::vector<std::pair<const char*, Shape>> inputs_at_b1;  // dims scaled by b below
  std::vector<int> batch_scaled_dim0;                       // 1 if dim 0 is (multiple of) b
  Shape output_at_b1;
};

Shape Scale(Shape s, bool scaled, int batch) {
  if (scaled) s[0] *= batch;
  return s;
}

TEST(WorkloadsTest, ShapesMatchWorkloadsMd) {
  const std::vector<ShapeRow> rows = {
      {"gqa",
       {{"Q", {2, 256, 64}}, {"Kt", {2, 64, 4096}}, {"V", {2, 4096, 64}}},
       {1, 1, 1},
       {2, 256, 64}},
      {"qknorm_gqa",
       {{"Q", {2, 256, 64}}, {"Kt", {2, 64, 4096}}, {"V", {2, 4096, 64}}},
       {1, 1, 1},
       {2, 256, 64}},
      {"rmsnorm_linear", {{"X", {2, 4096}}, {"W", {4096, 6144}}}, {1, 0}, {2, 6144}},
      {"gated_mlp",
       {{"X", {1, 4096}}, {"A", {4096, 4096}}, {"B", {4096, 4096}}},
       {1, 0, 0},
       {1, 4096}},
      {"lora",
       {{"X", {1, 4096}}, {"W", {4096, 4096}}, {"A", {4096, 16}}, {"B", {16, 4096}}},
       {1, 0, 0, 0},
       {1, 4096}},
      {"ntrans", {{"X", {1, 4096}}, {"H", {1, 4096}}, {"Alpha", {1, 4096}}}, {1, 1, 1}, {1, 4096}},
  };
  ASSERT_EQ(rows.size(), WorkloadNames().size());
  for (const ShapeRow& row : rows) {
    for (int batch : {1, 8, 1024}) {
      SCOPED_TRACE(std::string(row.name) + " b=" + std::to_string(batch));
      ASSERT_OK_AND_ASSIGN(Program p, BuiltinWorkload(row.name, batch));
      ASSERT_EQ(p.inputs().size(), row.inputs_at_b1.size());
      for (size_t i = 0; i < row.inputs_at_b1.size(); ++i) {
        const Node& in = p.node(p.inputs()[i]);
        EXPECT_EQ(in.name, row.inputs_at_b1[i].first);
        EXPECT_EQ(in.dtype, DType::kF16);
        EXPECT_EQ(in.shape,
                  Scale(row.inputs_at_b1[i].second, row.batch_scaled_dim0[i] != 0, batch));
      }
      ASSERT_EQ(p.outputs().size(), 1u);
      const Node& out = p.node(p.outputs()[0].tensor);
      EXPECT_EQ(out.dtype, DType::kF16);
      EXPECT_EQ(out.shape, Scale(row.output_at_b1, true, batch));
    }
  }
}

// The text is in canonical layout: the printer reproduces it byte for byte (comments too).
TEST(WorkloadsTest, TextIsCanonical) {
  for (const std::string& name : WorkloadNames()) {
    for (int batch : {1, 8}) {
      ASSERT_OK_AND_ASSIGN(std::string text, WorkloadText(name, batch));
      ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(text));
      EXPECT_EQ(PrintProgram(p), text) << name << " b=" << batch;
    }
  }
}

TEST(WorkloadsTest, TextOfRmsnormLinear) {
  ASSERT_OK_AND_ASSIGN(std::string text, WorkloadText("rmsnorm_linear", 8));
  EXPECT_THAT(text, HasSubstr("X = input f16[16, 4096]\n"
                              "W = input f16[4096, 6144]\n"
                              "Y = matmul(rms_norm(X, -1), W)\n"
                              "output Y\n"));
  EXPECT_EQ(text.rfind("# rmsnorm_linear at batch 8", 0), 0u) << text;
}

// Structure differs between workloads, and batch changes only shapes.
TEST(WorkloadsTest, HashesSeparateWorkloadsAndBatches) {
  std::vector<uint64_t> shape_free;
  for (const std::string& name : WorkloadNames()) {
    ASSERT_OK_AND_ASSIGN(Program b1, BuiltinWorkload(name, 1));
    ASSERT_OK_AND_ASSIGN(Program b8, BuiltinWorkload(name, 8));
    EXPECT_NE(b1.StructuralHash(), b8.StructuralHash()) << name;
    EXPECT_EQ(b1.ShapeFreeHash(), b8.ShapeFreeHash()) << name;
    shape_free.push_back(b1.ShapeFreeHash());
  }
  for (size_t i = 0; i < shape_free.size(); ++i) {
    for (size_t j = i + 1; j < shape_free.size(); ++j) {
      EXPECT_NE(shape_free[i], shape_free[j]) << WorkloadNames()[i] << " vs " << WorkloadNames()[j];
    }
  }
}

TEST(WorkloadsTest, Errors) {
  EXPECT_THAT(WorkloadText("gqaa", 1),
              StatusIs(absl::StatusCode::kNotFound,
                       ::testing::Eq("unknown workload 'gqaa'; known workloads: gqa, qknorm_gqa, "
                                     "rmsnorm_linear, gated_mlp, lora, ntrans")));
  EXPECT_THAT(BuiltinWorkload("", 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown workload ''")));
  EXPECT_THAT(WorkloadText("gqa", 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::Eq("workload batch must be in 1..1024, found 0")));
  EXPECT_THAT(WorkloadText("gqa", kMaxWorkloadBatch + 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("found 1025")));
  EXPECT_THAT(BuiltinWorkload("lora", -3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("found -3")));
}

// The "floor" column of the measured table in WORKLOADS.md (µs on an H200 at 4.19 TB/s and
// 750 TFLOP/s), given there to two significant digits.
TEST(WorkloadsTest, RooflineFloorsMatchWorkloadsMd) {
  struct Row {
    const char* name;
    int batch;
    double floor_us;
  };
  const std::vector<Row> rows = {
      {"gqa", 1, 0.72},       {"qknorm_gqa", 1, 0.72}, {"rmsnorm_linear", 1, 12.0},
      {"gated_mlp", 1, 16.0}, {"lora", 1, 8.0},        {"ntrans", 1, 0.01},
      {"gqa", 8, 5.7},        {"qknorm_gqa", 8, 5.7},  {"rmsnorm_linear", 8, 12.1},
      {"gated_mlp", 8, 16.1}, {"lora", 8, 8.1},        {"ntrans", 8, 0.06},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Program p, BuiltinWorkload(r.name, r.batch));
    const double floor_us = RooflineFloorUs(AnalyzeProgram(p), 4.19e12, 750e12);
    EXPECT_NEAR(floor_us, r.floor_us, 0.03 * r.floor_us + 0.005) << r.name << " b=" << r.batch;
  }
}

}  // namespace
}  // namespace prism
