#include "prism/base/paths.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifndef PRISM_SOURCE_DATA_DIR
#define PRISM_SOURCE_DATA_DIR ""
#endif
// Where an installed prism keeps its data, relative to the installed library's directory and
// to the installed command's directory (e.g. "../share/prism"); set by src/base/CMakeLists.txt.
#ifndef PRISM_INSTALL_DATA_FROM_LIBDIR
#define PRISM_INSTALL_DATA_FROM_LIBDIR ""
#endif
#ifndef PRISM_INSTALL_DATA_FROM_BINDIR
#define PRISM_INSTALL_DATA_FROM_BINDIR ""
#endif

namespace prism {
namespace fs = std::filesystem;

namespace {

// The directory of the file (shared library or executable) that holds this code, or "".
std::string CodeDirectory() {
  Dl_info info{};
  std::string file;
  if (dladdr(reinterpret_cast<void*>(&DataDir), &info) != 0 && info.dli_fname != nullptr) {
    file = info.dli_fname;
  }
  std::error_code ec;
  // The main executable may be reported by its argv[0] (relative, or a bare name).
  if (file.empty() || !fs::path(file).is_absolute()) {
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    file = ec ? std::string() : self.string();
  }
  if (file.empty()) return "";
  fs::path canonical = fs::weakly_canonical(file, ec);
  return ec ? fs::path(file).parent_path().string() : canonical.parent_path().string();
}

}  // namespace

absl::StatusOr<std::string> DataDir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("PRISM_DATA_DIR"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  // An installed prism: <prefix>/share/prism beside <prefix>/lib/libprism.so (or bin/prism),
  // wherever the prefix was moved to (relocatable; docs/api.md).
  if (const std::string code_dir = CodeDirectory(); !code_dir.empty()) {
    for (const char* rel : {PRISM_INSTALL_DATA_FROM_LIBDIR, PRISM_INSTALL_DATA_FROM_BINDIR}) {
      if (*rel != '\0') candidates.push_back((fs::path(code_dir) / rel).lexically_normal().string());
    }
  }
  candidates.emplace_back(PRISM_SOURCE_DATA_DIR);
  std::error_code ec;
  for (const std::string& c : candidates) {
    if (!c.empty() && fs::is_directory(fs::path(c) / "smt_theories", ec)) return c;
  }
  std::vector<std::string> quoted;
  for (const std::string& c : candidates) quoted.push_back(absl::StrCat("'", c, "'"));
  return absl::NotFoundError(absl::StrCat(
      "cannot find prism's data files (smt_theories/): looked in ", absl::StrJoin(quoted, ", "),
      "; set PRISM_DATA_DIR to the prism source directory or to <install prefix>/share/prism"));
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
