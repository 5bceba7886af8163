#!/bin/bash
# One device call for the attention rows' combine folded into clusters (issue 7, prepared
# 2026-12-07, seventeenth session; not run yet). Prepare on the build machine:
#   bash bench/gpu/prepare_optimize_carry.sh build-u build-u && rm -f .carry/opt/bin/runtime_test
#   bash bench/gpu/prepare_cluster_b1.sh
# then on the device (carry .carry/opt, .carry/var, .carry/harness.py, .carry/workloads.py):
#   bash bench/gpu/cluster_ab.sh
# Steps (run_session.sh's, each writing under $OUT as it goes): (1) the A/B of bench_variants.py
# on .carry/var (REPEAT=3); (2) `prism optimize --gpu 0` on the four attention rows without and
# then with --attention-clusters (the tuner's cluster twins; under $OUT/plain and
# $OUT/clusters), both selections timed next to the baselines by bench_optimize.py;
# (3) tune_gpu_test (its loop-variant case checks the cluster twins); all in $OUT/all.tgz.
set -u
export ROWS=${ROWS:-"gqa:1 qknorm_gqa:1 gqa:8 qknorm_gqa:8"} ROW_TIMEOUT=${ROW_TIMEOUT:-75}
STEPS=var REPEAT=${REPEAT:-3} bash bench/gpu/run_session.sh
for mode in plain clusters; do
  echo "=== optimize ($mode)"
  mkdir -p "$OUT/$mode"
  args=""; [ $mode = clusters ] && args=--attention-clusters
  OUT=$OUT/$mode STEPS=opt OPT_ARGS=$args bash bench/gpu/run_session.sh
done
echo "=== tune_gpu_test"
LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PRISM_DATA_DIR=$PWD \
  timeout 200 .carry/opt/bin/tune_gpu_test > "$OUT/tune_gpu_test.txt" 2>&1
echo "tune_gpu_test rc=$?"
grep -E "PASSED|FAILED|Failure" "$OUT/tune_gpu_test.txt" | head -10
# At most 8 files come back from $OUT: one archive.
(cd "$OUT" && tar czf all.tgz --remove-files *)
