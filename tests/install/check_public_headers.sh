#!/usr/bin/env bash
# Checks that include/prism/prism.h and every header it includes, transitively, name no Z3,
# CUDA or Boost header (prism.h's contract): the compiler lists the dependencies of a TU that
# includes only prism.h, and none may be a z3, cuda, nvrtc or boost header, nor nlohmann_json.
#
#   tests/install/check_public_headers.sh CXX SOURCE_DIR
set -euo pipefail
cxx=$1
src=$(readlink -f "$2")
deps=$(echo '#include "prism/prism.h"' |
  "$cxx" -std=c++20 -I"$src/include" -x c++ -M -MT tu - | tr ' \\' '\n\n' | sed '/^$/d; /^tu:$/d')
count=$(grep -c . <<<"$deps")
bad=$(grep -Ei '(^|/)(z3[^/]*\.h|z3\+\+\.h|cuda[^/]*\.h|nvrtc\.h|cu[a-z]*\.hpp)$|/boost/|/nlohmann/' <<<"$deps" || true)
if [ -n "$bad" ]; then
  echo "check_public_headers: FAIL: prism/prism.h includes, transitively:" >&2
  echo "$bad" >&2
  exit 1
fi
prism_headers=$(grep -c "^$src/include/prism/" <<<"$deps")
# Sanity: the list is real (prism.h and its module headers were seen).
[ "$prism_headers" -ge 5 ] || { echo "check_public_headers: FAIL: only $prism_headers prism headers seen" >&2; exit 1; }
echo "check_public_headers: PASS ($count headers, $prism_headers of them prism's)"
