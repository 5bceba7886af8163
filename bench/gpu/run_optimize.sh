#!/bin/bash
# Runs on the device (see prepare_optimize_carry.sh): the runtime GPU tests, then
# `prism optimize --gpu 0` on gqa b=1 and rmsnorm_linear b=8 (text, then --json with the compile
# cache warm into $OUT).
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
nvidia-smi -L
.carry/opt/bin/runtime_gpu_test 2>&1 | tail -12
.carry/opt/bin/runtime_test 2>&1 | tail -3
for w in "gqa 1" "rmsnorm_linear 8"; do
  set -- $w
  echo "=== prism optimize --workload $1 --batch $2 --gpu 0"
  ( time .carry/opt/bin/prism optimize --workload $1 --batch $2 --gpu 0 --out /tmp/po/$1_b$2 --compile-cache /tmp/cc ) 2>&1
  echo "=== (json, compile cache warm)"
  ( time .carry/opt/bin/prism optimize --workload $1 --batch $2 --gpu 0 --out /tmp/po/$1_b$2 --compile-cache /tmp/cc --json > $OUT/$1_b$2.json ) 2>&1
  cp /tmp/po/$1_b$2/family.json $OUT/$1_b$2.family.json
done
