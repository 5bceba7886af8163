#!/bin/bash
# One device call for the attention rows' combine folded into clusters (issue 7, prepared
# 2026-12-07, seventeenth session; not run yet). Prepare on the build machine:
#   bash bench/gpu/prepare_optimize_carry.sh build-u build-u && rm -f .carry/opt/bin/runtime_test
#   bash bench/gpu/prepare_cluster_b1.sh
# then on the device (carry .carry/opt, .carry/var, .carry/harness.py, .carry/workloads.py):
#   bash bench/gpu/cluster_ab.sh
# Steps, each writing under $OUT as it goes: (1) the A/B of bench_variants.py on .carry/var
# (REPEAT=3); (2) `prism optimize --gpu 0` on the four attention rows without and then with
# --attention-clusters (the tuner's cluster twins), both selections timed next to the baselines
# by bench_optimize.py; (3) tune_gpu_test (its loop-variant case checks the cluster twins).
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD PYTHONUNBUFFERED=1
ROWS=${ROWS:-"gqa:1 qknorm_gqa:1 gqa:8 qknorm_gqa:8"}
t0=$(date +%s)
stamp() { echo "--- $1 at +$(( $(date +%s) - t0 )) s"; }
stamp variants
REPEAT=${REPEAT:-3} python3 bench/gpu/bench_variants.py .carry/var 2>&1 | grep -v '^{' | tee $OUT/variants.txt
for mode in plain clusters; do
  stamp "optimize ($mode)"
  args=""; [ $mode = clusters ] && args=--attention-clusters
  OUT_SAVE=$OUT; mkdir -p $OUT/$mode
  OUT=$OUT/$mode OPT_ARGS=$args SKIP_TESTS=1 ROWS="$ROWS" ROW_TIMEOUT=75 \
    bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected" | tee $OUT_SAVE/optimize_$mode.txt
  OUT=$OUT_SAVE
  python3 bench/gpu/bench_optimize.py $OUT/$mode/po 2>&1 | grep -v '^{' | tee $OUT/harness_$mode.txt
  (cd $OUT && tar czf po_$mode.tgz $mode && rm -rf $mode)
done
stamp tune_gpu_test
timeout 200 .carry/opt/bin/tune_gpu_test > $OUT/tune_gpu_test.txt 2>&1; echo "tune_gpu_test rc=$?"
grep -E "PASSED|FAILED|Failure" $OUT/tune_gpu_test.txt | head -10
stamp done
