#!/bin/bash
# On the device (carry [".carry"]): ncu on the partial kernel (k0) of GEMV selections, each in
# .carry/ncu/<row>/<row>__sel/ (kernel.cu, launch.json of a prism optimize output).
#   MODE=sections (default): speed of light, memory, warp state, occupancy, launch and scheduler
#     sections, $OUT/ncu_<row>.txt; ROWS default "lora_b1 lora_b8 rmsnorm_linear_b1 rmsnorm_linear_b8".
#   MODE=stalls: the warp-stall reasons per issued instruction, $OUT/stalls_<row>.txt, the eight
#     largest printed; ROWS default "lora_b1 rmsnorm_linear_b1".
#   MODE=source: per-SASS-instruction source counters (stall samples, L2/DRAM sectors) as CSV,
#     $OUT/source_<row>.csv; ROWS default "rmsnorm_linear_b1 rmsnorm_linear_b8".
# KERNEL: the regex of the kernel to profile (default prism_.*_k0: the tuner names k0 prism_<workload>_b<B>_k0;
#   codegen_emit outputs name it prism_<workload>_partial_kv or prism_<fixture>_k0).
export PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
MODE=${MODE:-sections}
if [ "$MODE" = stalls ]; then
  rows=${ROWS:-"lora_b1 rmsnorm_linear_b1"}
  metrics=""
  for x in long_scoreboard barrier membar short_scoreboard wait math_pipe_throttle mio_throttle \
           lg_throttle not_selected selected dispatch_stall drain imc_miss no_instruction sleeping \
           tex_throttle branch_resolving; do
    metrics="$metrics,smsp__average_warps_issue_stalled_${x}_per_issue_active.ratio"
  done
  args=(--metrics "${metrics#,}")
  prefix=stalls
elif [ "$MODE" = source ]; then
  rows=${ROWS:-"rmsnorm_linear_b1 rmsnorm_linear_b8"}
  args=(--section SourceCounters --page source --print-source sass --csv)
  prefix=source
else
  rows=${ROWS:-"lora_b1 lora_b8 rmsnorm_linear_b1 rmsnorm_linear_b8"}
  args=()
  for sec in SpeedOfLight MemoryWorkloadAnalysis WarpStateStats Occupancy LaunchStats SchedulerStats; do
    args+=(--section "$sec")
  done
  prefix=ncu
fi
ext=txt; [ "$MODE" = source ] && ext=csv
for r in $rows; do
  echo "=== $r"
  timeout 150 $NCU -k regex:${KERNEL:-prism_.*_k0} --launch-skip 3 --launch-count 1 "${args[@]}" \
    python3 bench/gpu/bench_variants.py .carry/ncu/$r > $OUT/${prefix}_$r.$ext 2>&1
  echo "rc=$?"
  if [ "$MODE" = source ]; then
    wc -l $OUT/${prefix}_$r.$ext
  elif [ "$MODE" = stalls ]; then
    grep -E 'stalled' $OUT/${prefix}_$r.txt | awk '{print $1, $NF}' | sort -k2 -rn | head -8
  else
    grep -E 'DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Stall|Warp Cycles Per Issued|Issued Ipc|No Eligible' \
      $OUT/${prefix}_$r.txt | head -14
  fi
done
