#!/bin/bash
# Device run (issue 7, 2026-12-01): gpu tests, re-optimize ROWS, then every row of .carry/po
# (earlier outputs) with the re-optimized ones replacing theirs, timed next to the baselines.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
.carry/opt/bin/codegen_gpu_test 2>&1 | tee $OUT/codegen_gpu_test.txt | grep -E "ntrans|lora|PASSED|FAILED|Failure"
SKIP_TESTS=1 OPT_ARGS="--instances 32 --measure-budget-s 20" ROW_TIMEOUT=75 bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
rm -rf /tmp/all && mkdir -p /tmp/all && cp -r .carry/po/*_b[18] /tmp/all/
for d in $OUT/po/*_b[18]; do n=$(basename $d); rm -rf /tmp/all/$n; mkdir -p /tmp/all/$n; cp $d/kernel.cu $d/launch.json $d/family.json /tmp/all/$n/; done
(cd $OUT && tar czf po.tgz po && rm -rf po)
(cd /tmp && tar czf $OUT/all.tgz all)
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py /tmp/all 2>&1 | grep -v "^{"
