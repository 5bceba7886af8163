// PRISM_CHECK: internal invariants. A failed check is a bug in prism, never a user error:
// it prints the condition, file:line and an optional message, then aborts. User errors are
// reported with absl::Status instead (base/status.h).
//
//   PRISM_CHECK(id < nodes_.size(), "node id ", id, " out of range");
#ifndef PRISM_BASE_CHECK_H_
#define PRISM_BASE_CHECK_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"

namespace prism::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line,
                              absl::string_view message);
}  // namespace prism::internal

#define PRISM_CHECK(cond, ...)                                                           \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      ::prism::internal::CheckFailed(#cond, __FILE__, __LINE__,                          \
                                     ::absl::StrCat("" __VA_OPT__(, ) __VA_ARGS__));     \
    }                                                                                    \
  } while (false)

// Marks code that must be unreachable if prism is correct.
#define PRISM_UNREACHABLE(...) \
  ::prism::internal::CheckFailed("unreachable", __FILE__, __LINE__, \
                                 ::absl::StrCat("" __VA_OPT__(, ) __VA_ARGS__))

#endif  // PRISM_BASE_CHECK_H_
