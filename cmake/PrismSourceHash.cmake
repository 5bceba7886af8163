# Writes OUT: `constexpr char kGeneratorSourceHash[] = "<16 hex digits>";`, the SHA-256 (first
# 16 hex digits) of the files in FILES (a ';'-separated list, hashed in sorted order, each
# file's path relative to ROOT and its contents). Run at build time by src/tune/CMakeLists.txt
# whenever one of those files changes: the tuning cache keys on it, so that an entry measured
# on code that the generator no longer produces is never reused (docs/optimize.md).
#   cmake -DROOT=<source dir> -DFILES=<a;b;c> -DOUT=<file> -P PrismSourceHash.cmake
list(SORT FILES)
set(_all "")
foreach(_f IN LISTS FILES)
  file(RELATIVE_PATH _rel "${ROOT}" "${_f}")
  file(SHA256 "${_f}" _h)
  string(APPEND _all "${_rel} ${_h}\n")
endforeach()
string(SHA256 _sum "${_all}")
string(SUBSTRING "${_sum}" 0 16 _short)
file(WRITE "${OUT}.tmp" "constexpr char kGeneratorSourceHash[] = \"${_short}\";\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
