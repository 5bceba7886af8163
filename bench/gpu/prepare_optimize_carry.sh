#!/bin/bash
# Prepares .carry/opt/ (git-ignored) for running `prism optimize` on the device: the prism
# binary, the runtime tests, tune_gpu_test and pipeline_gpu_test of build dir $1 (default build-opt), codegen_gpu_test of build
# dir $2 (default build-cg) when it exists, with the shared libraries the device lacks (Abseil,
# Z3, GoogleTest), run_optimize.sh / run_optimize_all.sh, and copies of the shared baseline
# harness in .carry/ (for bench_optimize.py). On the device (run tool, carry [".carry"]):
#   bash .carry/opt/run_optimize_all.sh      # tests + prism optimize on the twelve rows
#   python3 bench/gpu/bench_optimize.py DIR  # the selected kernels next to the baselines
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-opt}
CG=${2:-build-cg}
rm -rf .carry/opt && mkdir -p .carry/opt/bin .carry/opt/lib
cp "$BUILD"/bin/prism "$BUILD"/tests/runtime/runtime_gpu_test "$BUILD"/tests/runtime/runtime_test .carry/opt/bin/
[ -x "$BUILD"/tests/tune/tune_gpu_test ] && cp "$BUILD"/tests/tune/tune_gpu_test .carry/opt/bin/
[ -x "$BUILD"/tests/pipeline/pipeline_gpu_test ] && cp "$BUILD"/tests/pipeline/pipeline_gpu_test .carry/opt/bin/
[ -x "$CG"/tests/codegen/codegen_gpu_test ] && cp "$CG"/tests/codegen/codegen_gpu_test .carry/opt/bin/
ldd .carry/opt/bin/* | awk '/libabsl|libz3|libgtest|libgmock/ {print $3}' | sort -u | xargs -r cp -t .carry/opt/lib/
cp bench/gpu/run_optimize.sh bench/gpu/run_optimize_all.sh .carry/opt/
cp ../shared/baselines/harness.py ../shared/baselines/workloads.py .carry/
du -sh .carry/opt
