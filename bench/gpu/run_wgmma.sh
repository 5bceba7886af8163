#!/bin/bash
# Device run (attention_wgmma, 2026-12-02): the gpu-labelled tests (codegen_gpu_test with the
# wgmma cases, runtime_gpu_test, tune_gpu_test), `prism optimize --gpu 0` on the twelve rows
# (the tuner now tries attention_wgmma on sm_90), the attention rows' selections, then every
# selected program next to the baselines in one harness run (bench_optimize.py).
# Prepare with `bash bench/gpu/prepare_optimize_carry.sh BUILD BUILD`.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
if [ -z "${SKIP_GPU_TESTS:-}" ]; then
  timeout 150 .carry/opt/bin/codegen_gpu_test > $OUT/gpu_tests.txt 2>&1
  timeout 120 .carry/opt/bin/runtime_gpu_test >> $OUT/gpu_tests.txt 2>&1
  timeout 200 .carry/opt/bin/tune_gpu_test >> $OUT/gpu_tests.txt 2>&1
  grep -E "wgmma|PASSED|FAILED|Failure" $OUT/gpu_tests.txt | tail -14
fi
SKIP_TESTS=1 ROW_TIMEOUT=${ROW_TIMEOUT:-70} bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
(cd $OUT && tar czf po.tgz po)
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py $OUT/po 2>&1 | grep -v "^{"
rm -rf $OUT/po
