#!/bin/bash
# One device call (bench/gpu/prepare_optimize_carry.sh first; carry [".carry"]): A/B variants
# in .carry/var (bench_variants.py, REPEAT=${REPEAT:-3}), the gpu-labelled tests, then
# `prism optimize --gpu 0` on the twelve rows and their selections timed next to the baselines
# (bench_optimize.py). Every step writes under $OUT as it goes, so a run stopped by the time
# limit still returns what it finished. STEPS="var tests opt" picks steps.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD PYTHONUNBUFFERED=1
STEPS=${STEPS:-"var tests opt"}
t0=$(date +%s)
stamp() { echo "--- $1 at +$(( $(date +%s) - t0 )) s"; }
if [[ " $STEPS " == *" var "* ]] && [ -d .carry/var ]; then
  stamp variants
  REPEAT=${REPEAT:-3} python3 bench/gpu/bench_variants.py .carry/var 2>&1 | grep -v '^{' | tee $OUT/variants.txt
fi
# The gpu tests' output goes into one file: the device tool returns at most 8 files from
# $OUT, and a run with every step wrote 10 (2026-12-04: two came back missing).
if [[ " $STEPS " == *" tests "* ]]; then
  stamp tests
  for t in codegen_gpu_test runtime_gpu_test tune_gpu_test pipeline_gpu_test; do
    echo "===== $t" >> $OUT/gpu_tests.txt
    .carry/opt/bin/$t > /tmp/$t.txt 2>&1; rc=$?; echo "$t rc=$rc"
    cat /tmp/$t.txt >> $OUT/gpu_tests.txt; echo "===== $t rc=$rc" >> $OUT/gpu_tests.txt
    grep -E "PASSED|FAILED|Failure" /tmp/$t.txt | head -20
  done
fi
if [[ " $STEPS " == *" opt "* ]]; then
  stamp optimize
  SKIP_TESTS=1 ROW_TIMEOUT=${ROW_TIMEOUT:-60} bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected" | tee $OUT/optimize.txt
  stamp harness
  python3 bench/gpu/bench_optimize.py $OUT/po 2>&1 | grep -v '^{' | tee $OUT/harness.txt
  (cd $OUT && tar czf po.tgz po && rm -rf po)
fi
stamp done
