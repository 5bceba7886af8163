#!/bin/bash
# Second half of run_batched.sh (2026-12-01 PM): the gpu tests, `prism optimize` on ROWS, then
# bench_optimize.py over those outputs together with the earlier ones carried in $1 (a po/
# folder of run_batched.sh), the new outputs packed into $OUT/po.tgz.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
.carry/opt/bin/runtime_gpu_test 2>&1 | tail -3
SKIP_TESTS=1 bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
rm -rf /tmp/all && mkdir -p /tmp/all
for d in $1/*_b[18] $OUT/po/*_b[18]; do
  [ -d "$d" ] || continue
  n=$(basename $d); rm -rf /tmp/all/$n; mkdir -p /tmp/all/$n; cp $d/kernel.cu $d/launch.json $d/family.json /tmp/all/$n/
done
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py /tmp/all 2>&1 | grep -v "^{"
(cd $OUT && tar czf po.tgz po && rm -rf po)
