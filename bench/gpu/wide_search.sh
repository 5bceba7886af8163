#!/bin/bash
# Runs on the device (2026-12-07, issue 7): for each row, `prism optimize --gpu 0` with the
# default tuning settings, then with a wider one (WIDE, default: 8 families, 256 instances per
# family, 4 refinement rounds, larger budgets), printing each run's five fastest measured
# candidates (the tuner's own timing). Answers whether the default sample misses faster
# instances. Prepare with bench/gpu/prepare_optimize_carry.sh, copy this file into .carry/opt/
# and carry .carry/opt; ROWS="gqa:1 lora:8" picks the rows (default: the four attention rows).
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
nvidia-smi -L
mkdir -p $OUT/w
for row in ${ROWS:-gqa:1 qknorm_gqa:1 gqa:8 qknorm_gqa:8}; do
  w=${row%:*}; b=${row#*:}
  for cfg in def wide; do
    args=""; [ $cfg = wide ] && args="${WIDE:---top 8 --instances 256 --refine 4 --measure-budget-s 80 --tune-budget-s 100}"
    s=$(date +%s)
    timeout 150 .carry/opt/bin/prism optimize --workload $w --batch $b --gpu 0 --out /tmp/o_${w}_${b}_$cfg --compile-cache /tmp/cc $args --json > $OUT/w/${w}_b${b}_$cfg.json 2>/tmp/err.txt
    echo "$w b=$b $cfg rc=$? $(( $(date +%s) - s )) s"; tail -1 /tmp/err.txt
    python3 - $OUT/w/${w}_b${b}_$cfg.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); c=d['candidates']; m=[x for x in c if x.get('measured_us')]
m.sort(key=lambda x:x['measured_us'])
print(' measured', len(m), 'of', len(c))
for x in m[:5]: print('  %.2f'%x['measured_us'], x.get('family'), x.get('assignment'), x.get('codegen_variant'))
PY
  done
done
