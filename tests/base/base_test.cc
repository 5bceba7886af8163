// Table-driven tests of base/: status exit codes, stable hashing, the RNG, f16/bf16 rounding,
// file helpers.
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prism/base/check.h"
#include "prism/base/float16.h"
#include "prism/base/hash.h"
#include "prism/base/id.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

TEST(StatusTest, ExitCodes) {
  struct Row { absl::Status status; int exit_code; };
  const std::vector<Row> rows = {
      {absl::OkStatus(), 0},
      {absl::InvalidArgumentError("x"), 2},
      {absl::NotFoundError("x"), 2},
      {absl::UnavailableError("x"), 2},
      {absl::InternalError("x"), 1},
      {absl::UnknownError("x"), 1},
  };
  for (const Row& r : rows) EXPECT_EQ(ExitCodeFor(r.status), r.exit_code) << r.status;
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}
absl::StatusOr<int> Quarter(int x) {
  PRISM_ASSIGN_OR_RETURN(int h, Half(x));
  PRISM_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}
TEST(StatusTest, Macros) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
}

TEST(HashTest, StableGoldenValues) {
  // These values are part of the cache-key format: changing them invalidates caches and
  // golden reports, so a change here must be deliberate.
  EXPECT_EQ(HashToHex(StableHashBytes("")), HashToHex(Mix64(0xcbf29ce484222325ULL)));
  EXPECT_EQ(HashToHex(0x0123456789abcdefULL), "0123456789abcdef");
  const uint64_t a = StableHasher().Add("matmul").Add(int64_t{4096}).Finish();
  const uint64_t b = StableHasher().Add("matmul").Add(int64_t{4096}).Finish();
  EXPECT_EQ(a, b);
  EXPECT_EQ(HashToHex(a).size(), 16u);
}

TEST(HashTest, DistinguishesBoundariesAndOrder) {
  EXPECT_NE(StableHasher().Add("ab").Add("c").Finish(), StableHasher().Add("a").Add("bc").Finish());
  EXPECT_NE(StableHasher().Add(1).Add(2).Finish(), StableHasher().Add(2).Add(1).Finish());
  EXPECT_NE(StableHasher().Add(0.0).Finish(), StableHasher().Add(-0.0).Finish());
}

TEST(RngTest, DeterministicAndIndependent) {
  Rng a(42), b(42), c(43);
  std::vector<uint64_t> va, vb, vc;
  for (int i = 0; i < 8; ++i) { va.push_back(a.Next()); vb.push_back(b.Next()); vc.push_back(c.Next()); }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
}

TEST(RngTest, RangesAndMoments) {
  Rng rng(7);
  std::set<int64_t> seen;
  double sum = 0, sum2 = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int64_t k = rng.UniformInt(-3, 3);
    ASSERT_GE(k, -3);
    ASSERT_LE(k, 3);
    seen.insert(k);
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const double z = rng.Normal();
    sum += z;
    sum2 += z * z;
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sum2 / n, 1.0, 0.05);
}

TEST(Float16Test, RoundingTable) {
  struct Row { double in; uint16_t f16; uint16_t bf16; };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Row> rows = {
      {0.0, 0x0000, 0x0000},
      {-0.0, 0x8000, 0x8000},
      {1.0, 0x3c00, 0x3f80},
      {-2.0, 0xc000, 0xc000},
      {0.1, 0x2e66, 0x3dcd},
      {65504.0, 0x7bff, 0x4780},
      {65520.0, 0x7c00, 0x4780},       // f16: ties-to-even overflows to inf
      {1e6, 0x7c00, 0x4974},
      {inf, 0x7c00, 0x7f80},
      {-inf, 0xfc00, 0xff80},
      {5.960464477539063e-08, 0x0001, 0x3380},  // smallest f16 subnormal
      {2.9802322387695312e-08, 0x0000, 0x3300}, // half of it: ties to even → 0
      {1.0 + 1.0 / 2048, 0x3c00, 0x3f80},       // tie between 1 and next: even (1)
      {1.0 + 3.0 / 2048, 0x3c02, 0x3f80},       // tie: rounds up to even mantissa 2
  };
  for (const Row& r : rows) {
    EXPECT_EQ(F16Bits(r.in), r.f16) << "f16 of " << r.in;
    EXPECT_EQ(BF16Bits(r.in), r.bf16) << "bf16 of " << r.in;
  }
  EXPECT_TRUE(std::isnan(RoundToF16(std::nan(""))));
  EXPECT_TRUE(std::isnan(RoundToBF16(std::nan(""))));
}

TEST(Float16Test, RoundTripAllF16Patterns) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double v = F16Value(static_cast<uint16_t>(bits));
    if (std::isnan(v)) continue;
    ASSERT_EQ(F16Bits(v), bits) << std::hex << bits;
  }
}

TEST(IdTest, TypedIds) {
  struct Tag {};
  using TId = Id<Tag>;
  EXPECT_FALSE(TId().valid());
  EXPECT_TRUE(TId(0).valid());
  EXPECT_LT(TId(1), TId(2));
  EXPECT_EQ(TId(5).value(), 5u);
}

TEST(PathsTest, JoinPathTable) {
  struct Row { const char* a; const char* b; const char* out; };
  const std::vector<Row> rows = {{"a", "b", "a/b"}, {"a/", "b", "a/b"}, {"a", "/b", "a/b"},
                                 {"a/", "/b", "a/b"}, {"", "b", "b"}, {"a", "", "a"}};
  for (const Row& r : rows) EXPECT_EQ(JoinPath(r.a, r.b), r.out);
}

TEST(PathsTest, ReadWriteErrors) {
  EXPECT_THAT(ReadFile("/nonexistent/prism/file.txt"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/prism/file.txt")));
  EXPECT_THAT(ReadFile("/"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("directory")));
  const std::string path = std::string(PRISM_BINARY_DIR) + "/tmp_base_test/x.txt";
  ASSERT_TRUE(WriteFile(path, "hello\n").ok());
  EXPECT_EQ(*ReadFile(path), "hello\n");
  EXPECT_TRUE(DataDir().ok());
}

TEST(CheckDeathTest, AbortsWithMessage) {
  EXPECT_DEATH(PRISM_CHECK(1 + 1 == 3, "arith ", 42), "check failed: 1 \\+ 1 == 3.*arith 42");
}

}  // namespace
}  // namespace prism
