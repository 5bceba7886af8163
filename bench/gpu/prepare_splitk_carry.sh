#!/bin/bash
# Prepares .carry/opt/ (git-ignored) for the split-K device run (run_splitk.sh): prism and
# codegen_gpu_test of build dir $1 (default build-cg), the shared libraries the device lacks
# (Abseil, Z3, GoogleTest), run_optimize_all.sh, and copies of the shared baseline harness in
# .carry/ (for bench_optimize.py). On the device (run tool, carry [".carry"]):
#   bash bench/gpu/run_splitk.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-cg}
rm -rf .carry/opt && mkdir -p .carry/opt/bin .carry/opt/lib
cp "$BUILD"/bin/prism "$BUILD"/tests/codegen/codegen_gpu_test .carry/opt/bin/
ldd .carry/opt/bin/* | awk '/libabsl|libz3|libgtest|libgmock/ {print $3}' | sort -u | xargs -r cp -t .carry/opt/lib/
cp bench/gpu/run_optimize.sh bench/gpu/run_optimize_all.sh .carry/opt/
cp ../shared/baselines/harness.py ../shared/baselines/workloads.py .carry/
du -sh .carry/opt
