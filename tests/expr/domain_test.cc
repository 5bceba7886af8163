// Table tests of Domain: construction, membership, enumeration, printing, parsing, JSON.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/expr/domain.h"
#include "testing/status_matchers.h"

namespace prism {
namespace {
using ::prism::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DomainTest, ParsePrintEnumerate) {
  struct Row {
    const char* text;
    const char* printed;
    std::vector<int64_t> values;
    int64_t min, max;
  };
  const std::vector<Row> rows = {
      {"range(1, 4)", "range(1, 4)", {1, 2, 3, 4}, 1, 4},
      {"range(-2,0)", "range(-2, 0)", {-2, -1, 0}, -2, 0},
      {"pow2(64, 512)", "pow2(64, 512)", {64, 128, 256, 512}, 64, 512},
      {"pow2(3, 100)", "pow2(3, 100)", {4, 8, 16, 32, 64}, 4, 64},
      {"pow2(-5, 1)", "pow2(-5, 1)", {1}, 1, 1},
      {"divisors(12)", "divisors(12)", {1, 2, 3, 4, 6, 12}, 1, 12},
      {"divisors(6144, 100, 1000)", "divisors(6144, 100, 1000)", {128, 192, 256, 384, 512, 768}, 128, 768},
      {"divisors(1)", "divisors(1)", {1}, 1, 1},
      {" { 256, 64 ,128, 64 } ", "{64, 128, 256}", {64, 128, 256}, 64, 256},
      {"{-3}", "{-3}", {-3}, -3, -3},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.text);
    ASSERT_OK_AND_ASSIGN(Domain d, Domain::Parse(r.text));
    EXPECT_EQ(d.ToString(), r.printed);
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> values, d.Enumerate());
    EXPECT_EQ(values, r.values);
    EXPECT_EQ(d.Size(), static_cast<int64_t>(r.values.size()));
    EXPECT_EQ(d.Min(), r.min);
    EXPECT_EQ(d.Max(), r.max);
    // Contains agrees with Enumerate on a window around the values.
    for (int64_t v = r.min - 3; v <= r.max + 3; ++v) {
      const bool listed = std::find(values.begin(), values.end(), v) != values.end();
      EXPECT_EQ(d.Contains(v), listed) << v;
    }
    // Printing, parsing and JSON round trip.
    ASSERT_OK_AND_ASSIGN(Domain again, Domain::Parse(d.ToString()));
    EXPECT_TRUE(again == d);
    ASSERT_OK_AND_ASSIGN(Domain from_json, Domain::FromJson(d.ToJson()));
    EXPECT_TRUE(from_json == d);
    EXPECT_EQ(from_json.StableHash(), d.StableHash());
    ASSERT_OK_AND_ASSIGN(Domain from_string, Domain::FromJson(nlohmann::json(r.text)));
    EXPECT_TRUE(from_string == d);
  }
}

TEST(DomainTest, JsonForms) {
  struct Row { const char* json; const char* printed; };
  const std::vector<Row> rows = {
      {R"({"kind": "range", "lo": 1, "hi": 4})", "range(1, 4)"},
      {R"({"kind": "pow2", "lo": 1, "hi": 256})", "pow2(1, 256)"},
      {R"({"kind": "divisors", "of": 4096})", "divisors(4096)"},
      {R"({"kind": "divisors", "of": 4096, "lo": 16, "hi": 256})", "divisors(4096, 16, 256)"},
      {R"({"kind": "set", "values": [512, 64]})", "{64, 512}"},
      {"\"pow2(2, 8)\"", "pow2(2, 8)"},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Domain d, Domain::FromJson(nlohmann::json::parse(r.json)));
    EXPECT_EQ(d.ToString(), r.printed) << r.json;
  }
}

TEST(DomainTest, Errors) {
  struct Row { const char* text; const char* message; };
  const std::vector<Row> rows = {
      {"range(4, 1)", "empty range domain: lo 4 is greater than hi 1"},
      {"pow2(5, 7)", "empty pow2 domain: no power of two in [5, 7]"},
      {"pow2(9, 1)", "empty pow2 domain: lo 9 is greater than hi 1"},
      {"divisors(0)", "divisors domain: n must be at least 1, found 0"},
      {"divisors(12, 5, 5)", "empty divisors domain: no divisor of 12 in [5, 5]"},
      {"divisors(12, 5)", "domain 'divisors(12, 5)': divisors takes 1 or 3 integers, found 2"},
      {"range(1)", "domain 'range(1)': range takes 2 integers, found 1"},
      {"{}", "empty set domain: give at least one value"},
      {"intervals(1, 2)",
       "domain 'intervals(1, 2)': at offset 0: found 'intervals', expected range(lo, hi), "
       "pow2(lo, hi), divisors(n[, lo, hi]) or {v, ...}"},
      {"range(1, x)", "domain 'range(1, x)': at offset 9: found 'x', expected an integer"},
      {"range(1, 2", "domain 'range(1, 2': at offset 10: found end of input, expected ',' or ')'"},
      {"range(1, 2) x", "domain 'range(1, 2) x': at offset 12: found 'x', expected end of input"},
      {"{1, 99999999999999999999}",
       "domain '{1, 99999999999999999999}': at offset 4: integer does not fit in 64 bits"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(Domain::Parse(r.text),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)))
        << r.text;
  }
}

TEST(DomainTest, JsonErrors) {
  struct Row { const char* json; const char* message; };
  const std::vector<Row> rows = {
      {R"(3)", "domain: expected an object such as {\"kind\": \"range\", \"lo\": 1, \"hi\": 4} or "
               "a string such as \"pow2(1, 256)\", found 3"},
      {R"({"lo": 1})", "domain: missing string key \"kind\" (range, pow2, divisors or set)"},
      {R"({"kind": "interval"})", "domain: unknown kind \"interval\", expected range, pow2, divisors or set"},
      {R"({"kind": "range", "lo": 1})", "domain: missing key \"hi\""},
      {R"({"kind": "range", "lo": 1, "hi": "4"})", "domain: key \"hi\" must be an integer, found \"4\""},
      {R"({"kind": "range", "lo": 1, "hi": 4, "step": 2})",
       "domain: unknown key \"step\", expected one of \"kind\", \"lo\", \"hi\""},
      {R"({"kind": "set", "values": 3})", "domain: key \"values\" must be an array of integers"},
      {R"({"kind": "set", "values": [1, 2.5]})", "domain: key \"values\" must hold 64-bit integers, found 2.5"},
      {R"({"kind": "divisors", "of": 12, "lo": 2})", "domain: missing key \"hi\""},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(Domain::FromJson(nlohmann::json::parse(r.json)),
                StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)))
        << r.json;
  }
}

TEST(DomainTest, HugeRangeDoesNotEnumerate) {
  ASSERT_OK_AND_ASSIGN(Domain d, Domain::Range(0, int64_t{1} << 40));
  EXPECT_EQ(d.Size(), (int64_t{1} << 40) + 1);
  EXPECT_THAT(d.Enumerate(1000),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "domain range(0, 1099511627776) has 1099511627777 values, more than the "
                       "limit 1000"));
  ASSERT_OK_AND_ASSIGN(Domain all, Domain::Range(INT64_MIN, INT64_MAX));
  EXPECT_EQ(all.Size(), INT64_MAX);
  EXPECT_TRUE(all.Contains(0));
}

}  // namespace
}  // namespace prism
