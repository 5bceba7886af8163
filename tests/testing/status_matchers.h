// gMock matchers for absl::Status / absl::StatusOr (abseil's own are not in Debian's 2022
// package):
//
//   EXPECT_THAT(Parse("x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1:1")));
//   EXPECT_THAT(Parse(good), IsOk());
//   ASSERT_OK_AND_ASSIGN(Program p, Parse(good));
#ifndef PRISM_TESTS_TESTING_STATUS_MATCHERS_H_
#define PRISM_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace prism::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) { return s.status(); }

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) + " and a matching message") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s;
  if (s.code() != code) return false;
  return ::testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                       result_listener);
}

}  // namespace prism::testing

// Readable failure output for StatusOr values in gMock matchers (instead of raw bytes).
namespace absl {
template <typename T>
void PrintTo(const StatusOr<T>& s, std::ostream* os) {
  if (s.ok()) {
    *os << "OK StatusOr";
  } else {
    *os << s.status();
  }
}
}  // namespace absl

#define PRISM_TESTING_CONCAT_INNER_(a, b) a##b
#define PRISM_TESTING_CONCAT_(a, b) PRISM_TESTING_CONCAT_INNER_(a, b)
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::prism::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::prism::testing::IsOk())
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(PRISM_TESTING_CONCAT_(statusor_, __LINE__), lhs, rexpr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, rexpr)     \
  auto tmp = (rexpr);                                   \
  ASSERT_TRUE(tmp.ok()) << "status: " << tmp.status();  \
  lhs = std::move(tmp).value()

#endif  // PRISM_TESTS_TESTING_STATUS_MATCHERS_H_
