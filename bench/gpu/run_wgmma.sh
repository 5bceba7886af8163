#!/bin/bash
# Device run (attention_wgmma, 2026-12-02): the gpu-labelled tests (codegen_gpu_test with the
# wgmma cases, runtime_gpu_test, tune_gpu_test; GPU_TESTS="codegen" runs the first only),
# `prism optimize --gpu 0` on ROWS (default: the twelve rows; the tuner tries attention_wgmma
# on sm_90), then every selected program next to the baselines in one harness run
# (bench_optimize.py). REUSE=DIR (earlier outputs, DIR/<workload>_b<batch>/) fills in the rows
# not re-optimized. Prepare with `bash bench/gpu/prepare_optimize_carry.sh BUILD BUILD`.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
tests=${GPU_TESTS:-"codegen runtime tune"}
: > $OUT/gpu_tests.txt
for t in $tests; do
  timeout 200 .carry/opt/bin/${t}_gpu_test >> $OUT/gpu_tests.txt 2>&1
done
grep -E "wgmma|PASSED|FAILED|Failure" $OUT/gpu_tests.txt | tail -16
SKIP_TESTS=1 ROW_TIMEOUT=${ROW_TIMEOUT:-70} bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
(cd $OUT && tar czf po.tgz po)
rm -rf /tmp/all && mkdir -p /tmp/all
if [ -n "${REUSE:-}" ]; then cp -r "$REUSE"/*_b[18] /tmp/all/; fi
for d in $OUT/po/*_b[18]; do n=$(basename $d); rm -rf /tmp/all/$n; mkdir -p /tmp/all/$n; cp $d/kernel.cu $d/launch.json $d/family.json /tmp/all/$n/; done
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py /tmp/all 2>&1 | grep -v "^{"
rm -rf $OUT/po
