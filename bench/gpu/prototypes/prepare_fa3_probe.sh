#!/bin/bash
# Prepares .carry/gen/ for an attention experiment (run on the H200 on 2026-12-02:
# docs/performance.md, "The FA3 register split, measured"): the FA3 structure with registers
# redistributed by setmaxnreg. For gqa b=8's two
# best wgmma shapes, today's kernel next to (WS) a producer warp, (WSR) a producer warpgroup
# with setmaxnreg, (PPR) the same plus FA3's ping-pong with S(i) and P(i-1)·V(i-1) issued
# together (bench/gpu/prototypes/*.py; docs/performance.md, "Six structural experiments").
# Then on the device: NO_BASELINES=1 PYTHONUNBUFFERED=1 python3 bench/gpu/bench_attention.py
# Usage: bash bench/gpu/prototypes/prepare_fa3_probe.sh BUILD_DIR (with tests/codegen/codegen_emit)
set -euo pipefail
cd "$(dirname "$0")/../../.."
E=${1:?usage: prepare_fa3_probe.sh BUILD_DIR}/tests/codegen/codegen_emit
P=bench/gpu/prototypes
rm -rf .carry/gen && mkdir -p .carry/gen /tmp/fa3probe
cp ../shared/baselines/harness.py ../shared/baselines/workloads.py .carry/
# name  assignment  consumer/producer registers (threads x launch registers must cover them)
for v in "a_F8T512 gx=16,gy=1,gz=8,F=8,T=512,S=2 112 32" \
         "c_y2F8T256 gx=16,gy=2,gz=8,F=8,T=256,S=2 104 32"; do
  set -- $v
  base=.carry/gen/gqa_b8_$1
  mkdir -p "$base"
  "$E" gqa 8 "$2" "$base" "" 0 0 0 0 0 1 1 > /dev/null
  for s in 3 4; do
    python3 $P/ws_proto.py "$base" "${base}_WS$s" $s
    python3 $P/ws_proto.py "$base" "/tmp/fa3probe/$1_wsr$s" $s "$3" "$4"
    cp -r "/tmp/fa3probe/$1_wsr$s" "${base}_WSR$s"
    python3 $P/pingpong_proto.py "/tmp/fa3probe/$1_wsr$s" "${base}_PPR$s"
  done
done
for d in .carry/gen/*; do
  printf '%-40s ' "$(basename "$d")"
  /usr/local/cuda/bin/nvcc -arch=sm_90a -cubin -o /tmp/fa3probe/x.cubin "$d/kernel.cu" --resource-usage 2>&1 |
    grep -A2 partial_kv | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores" | tr '\n' ' '
  echo
done
