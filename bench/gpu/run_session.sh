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
if [[ " $STEPS " == *" tests "* ]]; then
  stamp tests
  .carry/opt/bin/codegen_gpu_test > $OUT/codegen_gpu_test.txt 2>&1; echo "codegen_gpu_test rc=$?"
  grep -E "PASSED|FAILED|Failure" $OUT/codegen_gpu_test.txt | head -20
  .carry/opt/bin/runtime_gpu_test > $OUT/runtime_gpu_test.txt 2>&1; echo "runtime_gpu_test rc=$?"
  tail -3 $OUT/runtime_gpu_test.txt
  .carry/opt/bin/tune_gpu_test > $OUT/tune_gpu_test.txt 2>&1; echo "tune_gpu_test rc=$?"
  tail -3 $OUT/tune_gpu_test.txt
fi
if [[ " $STEPS " == *" opt "* ]]; then
  stamp optimize
  SKIP_TESTS=1 ROW_TIMEOUT=${ROW_TIMEOUT:-60} bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected" | tee $OUT/optimize.txt
  stamp harness
  python3 bench/gpu/bench_optimize.py $OUT/po 2>&1 | grep -v '^{' | tee $OUT/harness.txt
  (cd $OUT && tar czf po.tgz po && rm -rf po)
fi
stamp done
