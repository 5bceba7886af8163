// Status conventions for prism: every public boundary returns absl::Status or
// absl::StatusOr<T>; no exceptions cross it.
//
// Codes:  kInvalidArgument — the user's input is wrong (bad program, bad flag); message says
//                            what was found, where, and what was expected.
//         kNotFound        — a named thing (file, workload, target) does not exist.
//         kUnavailable     — an optional capability (GPU, CUDA) is absent on this machine.
//         kInternal        — a bug in prism (the CLI maps this to exit code 1).
//
// Usage:
//   absl::StatusOr<Program> LoadProgram(absl::string_view path) {
//     PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     PRISM_RETURN_IF_ERROR(Validate(text));
//     ...
//   }
#ifndef PRISM_BASE_STATUS_H_
#define PRISM_BASE_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PRISM_STATUS_CONCAT_INNER_(a, b) a##b
#define PRISM_STATUS_CONCAT_(a, b) PRISM_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define PRISM_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::absl::Status prism_status_ = (expr);           \
    if (!prism_status_.ok()) return prism_status_;   \
  } while (false)

// `lhs` = value of `rexpr` (an absl::StatusOr<T>), or returns its status from the enclosing
// function. `lhs` may be a declaration: PRISM_ASSIGN_OR_RETURN(auto x, F());
#define PRISM_ASSIGN_OR_RETURN(lhs, rexpr) \
  PRISM_ASSIGN_OR_RETURN_IMPL_(PRISM_STATUS_CONCAT_(prism_statusor_, __LINE__), lhs, rexpr)
#define PRISM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

namespace prism {

// True for the codes that mean "the user's input or environment is wrong" (CLI exit 2), as
// opposed to a bug in prism (exit 1).
bool IsUserError(const absl::Status& status);

// The process exit code for a final status: 0 ok, 2 user error, 1 internal error.
int ExitCodeFor(const absl::Status& status);

}  // namespace prism

#endif  // PRISM_BASE_STATUS_H_
