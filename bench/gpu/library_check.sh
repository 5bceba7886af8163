#!/bin/bash
# One device call for the library kernels (2026-12-06): codegen_gpu_test (its lib_<op> cases
# against the emulator, the template cases too), then `prism optimize --gpu 0` on the programs
# in .carry/opt/concat (concat_check.sh: every measured candidate against the f64 reference),
# then library_bench.py (prism's kernel next to PyTorch with the harness's timing). Prepare
# with bench/gpu/prepare_optimize_carry.sh and `library_bench.py --write .carry/opt/concat`
# (remove the programs not wanted); carry .carry/opt, .carry/harness.py, .carry/workloads.py.
# ALIASES="name_old=name ..." also times prepared output folders (library_bench.py); TESTS=all
# runs the other three gpu test binaries too, after the benchmark.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
.carry/opt/bin/codegen_gpu_test > $OUT/codegen_gpu_test.txt 2>&1
echo "codegen_gpu_test rc=$?"
grep -E "PASSED|FAILED|Failure" $OUT/codegen_gpu_test.txt | head -20
bash bench/gpu/concat_check.sh 2>&1 | grep -v "concat_bench\|No such\|Traceback\|File \"" | tail -30
python3 bench/gpu/library_bench.py .carry/opt/concat 2>&1 | grep -v '^{' | tee $OUT/library_bench.txt
if [ "${TESTS:-}" = all ]; then
  for t in runtime_gpu_test tune_gpu_test pipeline_gpu_test; do
    .carry/opt/bin/$t > /tmp/$t.txt 2>&1; echo "$t rc=$?"; grep -E "PASSED|FAILED" /tmp/$t.txt | head -3
  done
fi
