#!/usr/bin/env bash
# Installs what prism needs to build and test on Debian 12, and nothing that is already there.
# Idempotent: a second run only checks (no apt-get at all when nothing is missing). Quiet: apt's
# output goes to a log that is printed only if something fails.
#
#   tools/setup.sh            # as root, or as a user with sudo
#
# The package list is ../shared/DEPS.md's, plus cmake and a C++ compiler, plus clang and its
# runtime libraries (libFuzzer, sanitizers) for the parser fuzzer, plus what the tests use:
# chromium and libpng (the headless report.html test and its screenshot check), cvc5
# (`prism audit --solver cvc5`), pybind11 with Debian's python3 (the Python module) and
# pytest/numpy (its tests).
set -euo pipefail

PACKAGES=(
  cmake g++ ninja-build pkg-config
  libz3-dev z3 libboost-graph-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  clang libclang-rt-14-dev
  chromium cvc5 libpng-dev
  pybind11-dev python3-dev python3-pytest python3-numpy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "setup: error: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
log=$(mktemp /tmp/prism-setup.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
if ! { "${SUDO[@]}" apt-get update -q &&
       "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "setup: error: apt-get failed; its output:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
rm -f "$log"
echo "setup: done"
