#!/bin/bash
# Device run (issue 7, 2026-12-01 PM): the gpu-labelled tests, `prism optimize --gpu 0` on the
# twelve rows with the batched measurement and the two-tiles-per-warp attention variant
# (outputs into $OUT/po, as run_optimize_all.sh), then the selections next to the baselines
# (bench_optimize.py), the outputs packed into $OUT/po.tgz. Needs .carry/ prepared by
# prepare_optimize_carry.sh. OPT_ARGS, ROW_TIMEOUT and ROWS pass through.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
.carry/opt/bin/runtime_gpu_test 2>&1 | tail -3
.carry/opt/bin/codegen_gpu_test 2>&1 | tee $OUT/codegen_gpu_test.txt | grep -E "PASSED|FAILED|Failure" | head
SKIP_TESTS=1 bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py $OUT/po 2>&1 | grep -v "^{"
(cd $OUT && tar czf po.tgz po && rm -rf po)
