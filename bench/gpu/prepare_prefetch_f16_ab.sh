#!/bin/bash
# Prepares .carry/var (git-ignored) for one A/B device call (2026-12-07, twenty-second session,
# issue 7; run in the twenty-third, docs/performance.md: pf faster on five of the six GEMV rows,
# now generated as --constant-inputs; h16 slower on all four attention rows, dropped): the
# selections of a device run (`sel`) next to
#   pf  — the six GEMV rows with their weights' prologue stages loaded before
#         griddepcontrol.wait (bench/gpu/prototypes/pdl_prefetch.py);
#   h16 — the four attention rows with the split's N' partial stored in f16
#         (bench/gpu/prototypes/f16_partials.py).
# $1: a device run's po.tgz (default: the twenty-first session's H100 run, the current code's
# kernels). Then, with bash bench/gpu/prepare_optimize_carry.sh done, stripped, and the four
# *_gpu_test binaries moved out of .carry/opt/bin (the tree plus the carry must stay under
# 64 MiB), on the device (carry .carry/opt .carry/var .carry/harness.py .carry/workloads.py):
#   STEPS="var opt" REPEAT=4 ROW_TIMEOUT=60 MAX_AUTOTUNE=1 bash bench/gpu/run_session.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tgz=${1:-bench/gpu/results/h100-2026-12-07-s21-run1/po.tgz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$tgz" -C "$tmp"
rm -rf .carry/var
mkdir -p .carry/var
sel() {  # row
  mkdir -p ".carry/var/$1__sel"
  cp "$tmp/po/$1/kernel.cu" "$tmp/po/$1/launch.json" ".carry/var/$1__sel/"
}
# The weight tiles' labels in the selections' load_stage (// vN (input)): W for rmsnorm_linear;
# A and B for gated_mlp; W and A for lora (lora's B tile is loaded before the prologue already).
for r in rmsnorm_linear_b1:v1 rmsnorm_linear_b8:v1 gated_mlp_b1:v1,v2 gated_mlp_b8:v1,v2 \
         lora_b1:v1,v2 lora_b8:v1,v2; do
  row=${r%%:*}
  sel "$row"
  python3 bench/gpu/prototypes/pdl_prefetch.py ".carry/var/${row}__sel" ".carry/var/${row}__pf" "${r#*:}"
done
for row in gqa_b1 gqa_b8 qknorm_gqa_b1 qknorm_gqa_b8; do
  sel "$row"
  python3 bench/gpu/prototypes/f16_partials.py ".carry/var/${row}__sel" ".carry/var/${row}__h16"
done
ls .carry/var
