// Where prism finds its data files (smt_theories/, kernels/, examples/) at run time.
//
// Order: the PRISM_DATA_DIR environment variable if set; else an installed data directory
// found relative to the library or executable that holds this code (`<prefix>/share/prism`
// beside `<prefix>/lib/libprism.so` or `<prefix>/bin/prism`: relocatable); else the source
// tree the binary was built from (compiled in); the first that contains `smt_theories/` wins.
//
//   PRISM_ASSIGN_OR_RETURN(std::string dir, DataDir());
//   std::string rules = JoinPath(dir, "smt_theories/equiv");
#ifndef PRISM_BASE_PATHS_H_
#define PRISM_BASE_PATHS_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace prism {

// The data root; NotFound with instructions when no candidate has smt_theories/.
absl::StatusOr<std::string> DataDir();

// a + "/" + b, without doubling separators.
std::string JoinPath(absl::string_view a, absl::string_view b);

// Reads a whole file; NotFound / PermissionDenied with the path in the message.
absl::StatusOr<std::string> ReadFile(absl::string_view path);

// Writes a whole file, creating parent directories; the path is in any error message.
absl::Status WriteFile(absl::string_view path, absl::string_view contents);

}  // namespace prism

#endif  // PRISM_BASE_PATHS_H_
