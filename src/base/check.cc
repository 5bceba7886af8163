#include "prism/base/check.h"

#include <cstdio>
#include <cstdlib>

namespace prism::internal {

void CheckFailed(const char* condition, const char* file, int line, absl::string_view message) {
  std::fprintf(stderr, "prism internal error: check failed: %s at %s:%d%s%.*s\n", condition,
               file, line, message.empty() ? "" : ": ", static_cast<int>(message.size()),
               message.data());
  std::fprintf(stderr, "This is a bug in prism; please report it with the input that caused it.\n");
  std::fflush(stderr);
  std::abort();
}

}  // namespace prism::internal
