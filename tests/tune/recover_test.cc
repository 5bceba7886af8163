// tune::Recover: what OptimizeParts and `prism optimize` do with a program that Optimize
// refused (cut, library kernel, or the error), decided from the program and the error alone.

#include "prism/tune/recover.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/ir/text_format.h"
#include "prism/search/search.h"
#include "testing/status_matchers.h"

namespace prism::tune {
namespace {
using ::prism::testing::StatusIs;

using Kind = Recovery::Kind;

const absl::Status kNoFamily = absl::FailedPreconditionError(
    "the search found no family for this program; every structure needs more block ops");
const absl::Status kNoCuda = absl::FailedPreconditionError(
    "no family can be generated as CUDA yet: tile rows must be whole 16-byte chunks");
const absl::Status kNvrtc =
    absl::FailedPreconditionError("NVRTC failed to compile prism_y_k0: error: expected ';'");
const absl::Status kBadOption =
    absl::InvalidArgumentError("OptimizeOptions.top_families must be >= 1, got 0");

// A concat the families do not fuse (a kernel of its own), a matmul that reads a wide matmul
// (a chained cut), one matmul of inputs (a library kernel) and two ops of an input (a fallback
// cut before the output's op).
constexpr char kConcat[] =
    "X = input f16[8, 4096]\nH = input f16[8, 1024]\nW = input f16[5120, 4096]\n"
    "Y = matmul(concat(X, H, -1), W)\noutput Y\n";
constexpr char kChained[] =
    "X = input f16[8, 4096]\nW1 = input f16[4096, 2048]\nW2 = input f16[2048, 4096]\n"
    "Y = matmul(gelu(matmul(X, W1)), W2)\noutput Y\n";
constexpr char kOneOp[] = "A = input f32[7, 6]\nB = input f32[6, 5]\nY = matmul(A, B)\noutput Y\n";
constexpr char kTwoOps[] = "X = input f16[7, 6]\nY = exp(neg(X))\noutput Y\n";

constexpr char kLibraryWhy[] = "a concat runs as a kernel of its own";
constexpr char kWholeWhy[] = "no family of the whole program can be generated";

TEST(RecoverTest, CutsLibraryKernelOrError) {
  const std::string limit(search::LibraryCutLimitError().message());
  const struct {
    const char* name;
    const char* text;
    absl::Status error;
    CutDepth depth;
    bool fallback;
    Kind kind;
    std::vector<std::string> names;  // kCut: the parts' names
    const char* why;                 // kCut
    CutDepth part_depth;             // kCut
    bool made_by_fallback;
    std::string fail;  // kFail: the error's message (its code is checked too)
  } kCases[] = {
      // 1. A concat is cut out on any FailedPrecondition, the fallback on or off.
      {"concat", kConcat, kNoFamily, {0, 0}, true, Kind::kCut, {"C", "Y"}, kLibraryWhy, {0, 1},
       false, ""},
      {"concat, NVRTC", kConcat, kNvrtc, {0, 0}, false, Kind::kCut, {"C", "Y"}, kLibraryWhy,
       {0, 1}, false, ""},
      {"concat, 16 cuts above", kConcat, kNoFamily, {0, 16}, true, Kind::kFail, {}, "", {}, false,
       limit},
      {"concat, bad option", kConcat, kBadOption, {0, 0}, true, Kind::kFail, {}, "", {}, false,
       std::string(kBadOption.message())},
      // 2. A matmul that reads a wide matmul: cut at its A operand, up to 4 deep.
      {"chained", kChained, kNoCuda, {0, 0}, true, Kind::kCut, {"H", "Y"}, kWholeWhy, {1, 0},
       false, ""},
      {"chained, 3 cuts above", kChained, kNvrtc, {3, 2}, false, Kind::kCut, {"H", "Y"},
       kWholeWhy, {4, 2}, false, ""},
      // ... then the fallback's cut (at the output matmul's computed operand), or the error.
      {"chained, 4 cuts above", kChained, kNoCuda, {4, 0}, true, Kind::kCut, {"P", "Y"},
       kWholeWhy, {4, 1}, true, ""},
      {"chained, 4 cuts above, no fallback", kChained, kNoCuda, {4, 0}, false, Kind::kFail, {},
       "", {}, false, std::string(kNoCuda.message())},
      {"chained, 4 cuts above, NVRTC", kChained, kNvrtc, {4, 0}, true, Kind::kFail, {}, "", {},
       false, std::string(kNvrtc.message())},
      // 3. One op of inputs: its library kernel, only for a "no family" error.
      {"one op", kOneOp, kNoFamily, {0, 0}, true, Kind::kLibraryKernel, {}, "", {}, true, ""},
      {"one op, no CUDA", kOneOp, kNoCuda, {2, 16}, true, Kind::kLibraryKernel, {}, "", {}, true,
       ""},
      {"one op, no fallback", kOneOp, kNoFamily, {0, 0}, false, Kind::kFail, {}, "", {}, false,
       std::string(kNoFamily.message())},
      {"one op, NVRTC", kOneOp, kNvrtc, {0, 0}, true, Kind::kFail, {}, "", {}, false,
       std::string(kNvrtc.message())},
      // 4. Larger: cut before the output's op, counted with the library cuts.
      {"two ops", kTwoOps, kNoCuda, {1, 3}, true, Kind::kCut, {"P", "Y"}, kWholeWhy, {1, 4}, true,
       ""},
      {"two ops, 16 cuts above", kTwoOps, kNoCuda, {0, 16}, true, Kind::kFail, {}, "", {}, false,
       limit},
      {"two ops, bad option", kTwoOps, kBadOption, {0, 0}, true, Kind::kFail, {}, "", {}, false,
       std::string(kBadOption.message())},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(c.text));
    ASSERT_OK_AND_ASSIGN(Recovery r, Recover(p, c.error, "lbl", c.depth, c.fallback));
    EXPECT_EQ(r.kind, c.kind);
    EXPECT_EQ(r.fallback, c.made_by_fallback);
    if (c.kind == Kind::kFail) {
      const absl::StatusCode code =
          c.fail == limit ? absl::StatusCode::kFailedPrecondition : c.error.code();
      EXPECT_THAT(r.error, StatusIs(code, c.fail));
      continue;
    }
    EXPECT_OK(r.error);
    if (c.kind != Kind::kCut) continue;
    EXPECT_EQ(std::vector<std::string>(std::begin(r.names), std::end(r.names)), c.names);
    EXPECT_EQ(r.why, c.why);
    EXPECT_EQ(r.depth.chained, c.part_depth.chained);
    EXPECT_EQ(r.depth.library, c.part_depth.library);
    ASSERT_TRUE(r.cut.valid());
    // parts[0] computes the cut tensor, parts[1] the program's output from it.
    for (const Program& part : r.parts) ASSERT_EQ(part.outputs().size(), 1u);
    EXPECT_EQ(r.parts[0].node(r.parts[0].outputs()[0].tensor).shape, p.node(r.cut).shape);
    EXPECT_EQ(r.parts[1].node(r.parts[1].outputs()[0].tensor).shape,
              p.node(p.outputs()[0].tensor).shape);
  }
}

TEST(RecoverTest, TheManifestIsTheSplits) {
  ASSERT_OK_AND_ASSIGN(Program p, ParseProgram(kConcat));
  ASSERT_OK_AND_ASSIGN(Recovery r, Recover(p, kNoFamily, "xh", {}, true));
  ASSERT_OK_AND_ASSIGN(std::optional<search::LibrarySplit> s, search::SplitAtLibraryOp(p));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(r.manifest, search::SplitManifest("xh", p, *s));
}

TEST(RecoverTest, ErrorsByExactMessage) {
  ASSERT_OK_AND_ASSIGN(Program two, ParseProgram("A = input f16[2, 8]\nY = exp(A)\nZ = neg(A)\n"
                                                 "output Y\noutput Z\n"));
  EXPECT_THAT(Recover(two, kNoFamily, "two", {}, true).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Recover: the program must have one output, got 2"));
  // Any other error passes through, whatever the program.
  ASSERT_OK_AND_ASSIGN(Recovery r, Recover(two, kBadOption, "two", {}, true));
  EXPECT_EQ(r.kind, Kind::kFail);
  EXPECT_EQ(r.error, kBadOption);
  // The fallback's library kernel failing: its own error, or both "no family" errors.
  const struct {
    const char* name;
    absl::Status library_error;
    absl::StatusCode code;
    std::string message;
  } kCases[] = {
      {"NVRTC", kNvrtc, absl::StatusCode::kFailedPrecondition, std::string(kNvrtc.message())},
      {"bad option", kBadOption, absl::StatusCode::kInvalidArgument,
       std::string(kBadOption.message())},
      {"no family", kNoCuda, absl::StatusCode::kFailedPrecondition,
       absl::StrCat(kNoFamily.message(), "; nor as a library kernel: ", kNoCuda.message())},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(LibraryKernelError(kNoFamily, c.library_error), StatusIs(c.code, c.message));
  }
}

}  // namespace
}  // namespace prism::tune
