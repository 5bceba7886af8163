#include "prism/base/paths.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

#ifndef PRISM_SOURCE_DATA_DIR
#define PRISM_SOURCE_DATA_DIR ""
#endif

namespace prism {
namespace fs = std::filesystem;

absl::StatusOr<std::string> DataDir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("PRISM_DATA_DIR"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  candidates.emplace_back(PRISM_SOURCE_DATA_DIR);
  std::error_code ec;
  for (const std::string& c : candidates) {
    if (!c.empty() && fs::is_directory(fs::path(c) / "smt_theories", ec)) return c;
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot find prism's data files (smt_theories/): looked in ",
      candidates.size() > 1 ? absl::StrCat("$PRISM_DATA_DIR='", candidates[0], "' and ") : "",
      "'", candidates.back(), "'; set PRISM_DATA_DIR to the prism source or install directory"));
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  const bool a_slash = a.back() == '/';
  const bool b_slash = b.front() == '/';
  if (a_slash && b_slash) return absl::StrCat(a, b.substr(1));
  if (a_slash || b_slash) return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

absl::StatusOr<std::string> ReadFile(absl::string_view path) {
  std::error_code ec;
  const fs::path p{std::string(path)};
  if (!fs::exists(p, ec)) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "': no such file"));
  }
  if (fs::is_directory(p, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read '", path, "': it is a directory, expected a file"));
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(absl::StrCat("cannot open '", path, "' for reading"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteFile(absl::string_view path, absl::string_view contents) {
  const fs::path p{std::string(path)};
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create directory '",
                                                    p.parent_path().string(), "': ", ec.message()));
  }
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot open '", path, "' for writing"));
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  if (!out) return absl::DataLossError(absl::StrCat("short write to '", path, "'"));
  return absl::OkStatus();
}

}  // namespace prism
