// File helpers the tests share.
#ifndef PRISM_TESTS_TESTING_FILES_H_
#define PRISM_TESTS_TESTING_FILES_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace prism::testing {

// The whole file as bytes ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// <gtest temp dir>/prism_<suite>_<name>_<pid>, removed first so that each run starts empty
// (not created).
inline std::string FreshTempPath(const std::string& suite, const std::string& name) {
  const std::string d = ::testing::TempDir() + "/prism_" + suite + "_" + name + "_" +
                        std::to_string(getpid());
  std::filesystem::remove_all(d);
  return d;
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_TESTING_FILES_H_
