#!/bin/bash
# On the device (carry [".carry"]): ncu's warp-stall reasons (per issued instruction) of the partial
# kernel (k0) of each ROWS selection in .carry/ncu/<row>/<row>__sel/ (kernel.cu, launch.json of a
# prism optimize output). Output in $OUT/stalls_<row>.txt; the eight largest printed.
export PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for r in ${ROWS:-lora_b1 rmsnorm_linear_b1}; do
  echo "=== $r"
  timeout 150 $NCU -k regex:prism_candidate_k0 --launch-skip 3 --launch-count 1 \
    --metrics smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio \
    python3 bench/gpu/bench_variants.py .carry/ncu/$r > $OUT/stalls_$r.txt 2>&1
  echo "rc=$?"; grep -E 'stalled' $OUT/stalls_$r.txt | awk '{print $1, $NF}' | sort -k2 -rn | head -8
done
