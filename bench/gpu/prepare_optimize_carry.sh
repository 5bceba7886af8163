#!/bin/bash
# Prepares .carry/opt/ (git-ignored) for running `prism optimize` on the device: the prism
# binary and the runtime tests of build dir $1 (default build-opt) with the shared libraries
# the device lacks (Abseil, Z3, GoogleTest), and run_optimize.sh. On the device (run tool,
# carry [".carry/opt"]):  bash .carry/opt/run_optimize.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-opt}
rm -rf .carry/opt && mkdir -p .carry/opt/bin .carry/opt/lib
cp "$BUILD"/bin/prism "$BUILD"/tests/runtime/runtime_gpu_test "$BUILD"/tests/runtime/runtime_test .carry/opt/bin/
ldd .carry/opt/bin/* | awk '/libabsl|libz3|libgtest|libgmock/ {print $3}' | sort -u | xargs -r cp -t .carry/opt/lib/
cp bench/gpu/run_optimize.sh .carry/opt/
du -sh .carry/opt
