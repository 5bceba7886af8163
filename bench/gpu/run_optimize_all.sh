#!/bin/bash
# Runs on the device (see prepare_optimize_carry.sh): the gpu-labelled tests (codegen, runtime, tune),
# then `prism optimize --gpu 0` on all twelve WORKLOADS.md rows (outputs and --json into
# $OUT/po/<workload>_b<batch>), then the first row again to show the tuning-cache hit.
# ROWS="gqa:1 lora:8" limits the rows.
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
nvidia-smi -L
[ -n "${SKIP_TESTS:-}" ] || {
  .carry/opt/bin/codegen_gpu_test 2>&1 | tee $OUT/codegen_gpu_test.txt | tail -30
  .carry/opt/bin/runtime_gpu_test 2>&1 | tail -6
  [ -x .carry/opt/bin/tune_gpu_test ] && .carry/opt/bin/tune_gpu_test 2>&1 | tail -6
}
mkdir -p $OUT/po
ROWS=${ROWS:-"gqa:1 gqa:8 qknorm_gqa:1 qknorm_gqa:8 rmsnorm_linear:1 rmsnorm_linear:8 gated_mlp:1 gated_mlp:8 lora:1 lora:8 ntrans:1 ntrans:8"}
# The GEMV rows' weights are declared constant (no kernel before the program writes them:
# --constant-inputs, docs/codegen.md); CONSTANT=0 leaves them undeclared.
constant_of() {
  [ "${CONSTANT:-1}" = 1 ] || return 0
  case $1 in
    rmsnorm_linear) echo "--constant-inputs W" ;;
    gated_mlp) echo "--constant-inputs A,B" ;;
    lora) echo "--constant-inputs W,A,B" ;;
  esac
}
for row in $ROWS; do
  w=${row%:*}; b=${row#*:}
  echo "=== prism optimize --workload $w --batch $b --gpu 0 $(constant_of $w)"
  start=$(date +%s%N)
  timeout ${ROW_TIMEOUT:-90} .carry/opt/bin/prism optimize --workload $w --batch $b --gpu 0 --out $OUT/po/${w}_b$b \
    --compile-cache /tmp/cc --tune-cache /tmp/tc $(constant_of $w) ${OPT_ARGS:-} --json > $OUT/po/${w}_b$b.json 2> $OUT/po/${w}_b$b.err
  echo "rc=$? wall $(( ($(date +%s%N) - start) / 1000000 )) ms"; tail -2 $OUT/po/${w}_b$b.err
  python3 -c "import json,sys; d=json.load(open('$OUT/po/${w}_b$b.json')); s=d['selected']; c=d['candidates']; print('selected', s, 'candidates', len(c), 'measured', sum(1 for x in c if x.get('measured_us')))" 2>&1 | tail -1
done
first=${ROWS%% *}; w=${first%:*}; b=${first#*:}
echo "=== again (tuning cache): $w b=$b"
start=$(date +%s%N)
.carry/opt/bin/prism optimize --workload $w --batch $b --gpu 0 --out /tmp/again \
  --compile-cache /tmp/cc --tune-cache /tmp/tc $(constant_of $w) ${OPT_ARGS:-} --json > $OUT/po/again_${w}_b$b.json
echo "rc=$? wall $(( ($(date +%s%N) - start) / 1000000 )) ms"
ls /tmp/tc | wc -l
