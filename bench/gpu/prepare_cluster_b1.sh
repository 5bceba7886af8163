#!/bin/bash
# Prepares .carry/var (git-ignored) for one A/B device call on the b=1 attention rows
# (2026-12-07, issue 7; measured in the eighteenth session, run 1: clusters slower on every row,
# docs/performance.md; the first try, run 1 of the seventeenth session, stopped at
# a bench_optimize bug since fixed): does the whole program in one kernel — the combine inside
# thread block clusters of 16 along the split axis (bench/gpu/prototypes/cluster_lse_combine.py)
# — beat the two kernels once the clusters can be scheduled? The sixth session's clusters of 16
# were 1.8x slower, but its blocks took 136 KB of shared memory (S4, one block per SM), so a
# cluster needed 16 SMs of one GPC. At S2 without the residency pad a block takes 73 KB and
# three fit per SM. Variants (gqa b=1 and qknorm_gqa b=1, T128 gx2 gy4, the selections' loop
# options): sel (the selection: gz16 F2 S4, padded), s2 / s2nb (S2 with and without the pad),
# cl16s2 / cl16s4 (clusters of 16 at S2 / S4, unpadded), cl8s2 (gz8 F4 S2, clusters of 8), and
# codegen's own cluster form: cg16s2 / cg8s2 (b=1), cg4 (b=8, next to its selection `sel`).
# Build dir $1 (default build-u). Then on the device (carry .carry/opt, .carry/var,
# .carry/harness.py, .carry/workloads.py; bash bench/gpu/prepare_optimize_carry.sh first):
#   STEPS=var REPEAT=3 bash bench/gpu/run_session.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
E=${1:-build-u}/tests/codegen/codegen_emit
P=bench/gpu/prototypes/cluster_lse_combine.py
tmp=$(mktemp -d)
emit() {  # fixture tag assignment loop-options pad(1/0) [batch [cluster_combine(1/0)]]
  local b=${6:-1} c=${7:-0}
  if [ "$5" = 1 ]; then
    PRISM_EMIT_BALANCE=132,233472,1024 PRISM_EMIT_WGMMA_LOOP=$4 $E "$1" $b "$3" "$tmp/$1_b${b}__$2" "" 0 0 0 0 $c 1 1 >/dev/null
  else
    PRISM_EMIT_WGMMA_LOOP=$4 $E "$1" $b "$3" "$tmp/$1_b${b}__$2" "" 0 0 0 0 $c 1 1 >/dev/null
  fi
}
emit gqa sel gx=2,gy=4,gz=16,F=2,T=128,S=4 late_loads,split_pv 1
emit gqa s2 gx=2,gy=4,gz=16,F=2,T=128,S=2 late_loads,split_pv 1
emit gqa s2nb gx=2,gy=4,gz=16,F=2,T=128,S=2 late_loads,split_pv 0
emit gqa s4nb gx=2,gy=4,gz=16,F=2,T=128,S=4 late_loads,split_pv 0
emit gqa z8s2nb gx=2,gy=4,gz=8,F=4,T=128,S=2 late_loads,split_pv 0
emit qknorm_gqa sel gx=2,gy=4,gz=16,F=2,T=128,S=4 split_pv 1
emit qknorm_gqa s2nb gx=2,gy=4,gz=16,F=2,T=128,S=2 split_pv 0
# codegen's own cluster_combine form (2026-12-07: attention_wgmma with cluster_combine): the
# generic combine tail (scalar ld.shared::cluster), b=1 at clusters of 16 and 8, b=8 at the
# selections' shapes (clusters of 4) next to the selections.
emit gqa cg16s2 gx=2,gy=4,gz=16,F=2,T=128,S=2 late_loads,split_pv 0 1 1
emit gqa cg8s2 gx=2,gy=4,gz=8,F=4,T=128,S=2 late_loads,split_pv 0 1 1
emit qknorm_gqa cg16s2 gx=2,gy=4,gz=16,F=2,T=128,S=2 split_pv 0 1 1
emit gqa sel gx=16,gy=4,gz=4,F=8,T=128,S=2 split_pv 1 8 0
emit gqa cg4 gx=16,gy=4,gz=4,F=8,T=128,S=2 split_pv 1 8 1
emit qknorm_gqa sel gx=16,gy=2,gz=4,F=4,T=256,S=3 late_loads,split_pv 1 8 0
emit qknorm_gqa cg4 gx=16,gy=2,gz=4,F=4,T=256,S=3 late_loads,split_pv 1 8 1
rm -rf .carry/var && mkdir -p .carry/var
for t in gqa_b1__sel gqa_b1__s2 gqa_b1__s2nb qknorm_gqa_b1__sel gqa_b1__cg16s2 gqa_b1__cg8s2 \
         qknorm_gqa_b1__cg16s2 gqa_b8__sel gqa_b8__cg4 qknorm_gqa_b8__sel qknorm_gqa_b8__cg4; do
  rm -f "$tmp/$t/host.h"; cp -r "$tmp/$t" .carry/var/
done
python3 $P "$tmp/gqa_b1__s2nb" .carry/var/gqa_b1__cl16s2
python3 $P "$tmp/gqa_b1__s4nb" .carry/var/gqa_b1__cl16s4
python3 $P "$tmp/gqa_b1__z8s2nb" .carry/var/gqa_b1__cl8s2
python3 $P "$tmp/qknorm_gqa_b1__s2nb" .carry/var/qknorm_gqa_b1__cl16s2
rm -rf "$tmp"
ls .carry/var
