#!/bin/bash
# One device call for the library matmul's skinny form (2026-12-06, issue 7): the gpu tests
# (STEPS=tests of run_session.sh), `prism optimize --gpu 0` on the programs in
# .carry/opt/concat (concat_check.sh), then library_bench.py on them against PyTorch, with any
# extra output folders named as aliases of a program: ALIASES="lm_head_old=lm_head ..." times
# .carry/opt/concat/out_lm_head_old (a kernel prepared on this machine) on lm_head's inputs.
# Prepare: bash bench/gpu/prepare_optimize_carry.sh build-u build-u; python3
# bench/gpu/library_bench.py --write .carry/opt/concat (then remove the programs not wanted).
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [ "${TESTS:-1}" = 1 ]; then
  STEPS=tests bash bench/gpu/run_session.sh 2>&1 | tail -5
  grep -E "rc=|FAILED|PASSED" $OUT/gpu_tests.txt | head -40
fi
bash bench/gpu/concat_check.sh 2>&1 | grep -v "^{" | tail -40
python3 - <<'PY' 2>&1 | tail -20
import os, sys
sys.argv = ["library_bench.py", ".carry/opt/concat"]
sys.path.insert(0, "bench/gpu")
import library_bench as lb
for pair in os.environ.get("ALIASES", "").split():
    alias, name = pair.split("=")
    lb.CASES[alias] = lb.CASES[name]
lb.main()
PY
