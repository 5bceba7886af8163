#!/bin/bash
# On the device (carry [".carry"]): ncu on the partial kernel (k0) of four GEMV selections (speed of
# light, memory, warp state, occupancy), each in .carry/ncu/<row>/<row>__sel/ (kernel.cu, launch.json
# of a prism optimize output). Output in $OUT/ncu_<row>.txt.
export PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for r in lora_b1 lora_b8 rmsnorm_linear_b1 rmsnorm_linear_b8; do
  echo "=== $r"
  timeout 120 $NCU -k regex:prism_candidate_k0 --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section Occupancy --section LaunchStats --section SchedulerStats \
    python3 bench/gpu/bench_variants.py .carry/ncu/$r > $OUT/ncu_$r.txt 2>&1
  echo "rc=$?"; grep -E 'DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Stall|Warp Cycles Per Issued|Issued Ipc|No Eligible' $OUT/ncu_$r.txt | head -14
done
