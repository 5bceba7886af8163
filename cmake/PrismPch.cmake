# PRISM_PCH: precompiled headers of the heavy third-party and standard headers (absl,
# nlohmann/json, gtest/gmock, the standard library), built once and reused by every target
# (tools/test.sh turns it on in the clang sanitizer build; see below why not in the GCC one).
#
# With PRISM_UNITY_BUILD each module and most test binaries are a single translation unit, so a
# per-target PCH would save nothing: the headers are parsed once per target either way. Two
# shared PCHs (REUSE_FROM) instead:
#   prism_pch_lib   the libraries (position-independent, like them);
#   prism_pch_test  the test binaries (as executables are compiled; adds gtest and gmock).
# A PCH is valid only for targets compiled with the same flags (sanitizers, -O, -std, PIC): the
# project-wide flags are set before this file is included, so all these targets share them.
# z3++.h is left out: only src/smt includes it (one translation unit).
# tools/test.sh uses it in the clang sanitizer build only: with GCC 12, warnings located in
# libstdc++ headers read from a PCH are not treated as system-header warnings, so false
# positives such as -Warray-bounds inside std::string (term_eval.cc's substr + "...") appear and
# -DPRISM_WERROR=ON fails the build. The fuzz-instrumented prism_base and prism_ir opt out
# (tests/fuzz/CMakeLists.txt: clang rejects a PCH built without their coverage flags).
#
# prism_use_pch(TARGET lib|test) attaches one of them (no-op when PRISM_PCH is OFF).
set(PRISM_PCH_HEADERS
  <algorithm> <cstdint> <functional> <map> <memory> <optional> <set> <sstream> <string>
  <string_view> <unordered_map> <utility> <variant> <vector>
  [["absl/container/flat_hash_map.h"]] [["absl/container/flat_hash_set.h"]]
  [["absl/status/status.h"]] [["absl/status/statusor.h"]] [["absl/strings/str_cat.h"]]
  [["absl/strings/str_format.h"]] [["absl/strings/str_join.h"]] [["absl/types/span.h"]]
  [["nlohmann/json.hpp"]])

if(PRISM_PCH)
  set(_prism_pch_src "${PROJECT_BINARY_DIR}/prism_pch.cc")
  if(NOT EXISTS "${_prism_pch_src}")
    file(WRITE "${_prism_pch_src}" "// The translation unit that builds the shared precompiled headers.\n")
  endif()
  set(_prism_pch_deps absl::flat_hash_map absl::flat_hash_set absl::status absl::statusor
                      absl::strings absl::str_format absl::span nlohmann_json::nlohmann_json)

  add_library(prism_pch_lib OBJECT "${_prism_pch_src}")
  target_link_libraries(prism_pch_lib PRIVATE ${_prism_pch_deps})
  set_target_properties(prism_pch_lib PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_precompile_headers(prism_pch_lib PRIVATE ${PRISM_PCH_HEADERS})

  if(PRISM_BUILD_TESTS)
    add_library(prism_pch_test OBJECT "${_prism_pch_src}")
    target_link_libraries(prism_pch_test PRIVATE ${_prism_pch_deps} GTest::gmock GTest::gtest)
    target_precompile_headers(prism_pch_test PRIVATE ${PRISM_PCH_HEADERS}
                              [["gmock/gmock.h"]] [["gtest/gtest.h"]])
  endif()
endif()

function(prism_use_pch target kind)
  if(PRISM_PCH)
    target_precompile_headers(${target} REUSE_FROM prism_pch_${kind})
  endif()
endfunction()
