#!/bin/bash
# Prepares .carry/ (git-ignored) for bench/gpu/bench_codegen.py on the device: generates
# the rmsnorm_linear variants with codegen_emit (build dir $1, default build-cuda) and copies
# the shared baseline harness. Variants: g F T S (W column tile 6144/g, K tile 4096/F).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-cuda}
rm -rf .carry/gen && mkdir -p .carry/gen
cp ../shared/baselines/harness.py ../shared/baselines/workloads.py .carry/
for bs in 1 8; do
  for v in "96 16 512 3" "96 16 256 3" "96 8 512 2" "64 16 512 3" "48 16 512 3" \
           "128 16 256 3" "128 8 512 3"; do
    set -- $v
    name=rms_b${bs}_g$1_F$2_T$3_S$4
    mkdir -p .carry/gen/$name
    "$BUILD"/tests/codegen/codegen_emit rmsnorm_linear $bs g=$1,F=$2,T=$3,S=$4 .carry/gen/$name ||
      { echo "skipped $name"; rmdir .carry/gen/$name; }
  done
done
# gated_mlp: g splits N (4096), h splits the batch rows (1 here), F walks K.
for bs in 1 8; do
  for v in "128 16 256 3" "128 16 512 3" "128 32 256 4" "64 16 512 2" "64 32 256 3" \
           "256 16 256 3" "96 16 256 3"; do
    set -- $v
    name=mlp_b${bs}_g$1_F$2_T$3_S$4
    mkdir -p .carry/gen/$name
    "$BUILD"/tests/codegen/codegen_emit gated_mlp $bs g=$1,h=1,F=$2,T=$3,S=$4 .carry/gen/$name ||
      { echo "skipped $name"; rmdir .carry/gen/$name; }
  done
done
ls .carry/gen | wc -l
