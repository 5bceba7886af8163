#!/bin/bash
# Device run (split-K GEMM families, 2026-12-01): codegen_gpu_test (split-K cases included),
# `prism optimize --gpu 0` on the six GEMV rows (rmsnorm_linear, gated_mlp, lora at b = 1, 8),
# a per-family summary of what was measured, then the selected programs next to the baselines
# in one harness run (bench_optimize.py). Prepare with bench/gpu/prepare_splitk_carry.sh.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
[ -n "${SKIP_GPU_TEST:-}" ] || timeout 120 .carry/opt/bin/codegen_gpu_test 2>&1 | tee $OUT/codegen_gpu_test.txt | grep -E "splitk|PASSED|FAILED|Failure|Expected|Which" | head -40
ROWS=${ROWS:-"rmsnorm_linear:1 rmsnorm_linear:8 gated_mlp:1 gated_mlp:8 lora:1 lora:8"} SKIP_TESTS=1 \
  OPT_ARGS=${OPT_ARGS:-"--instances 24 --measure-budget-s 20"} ROW_TIMEOUT=${ROW_TIMEOUT:-70} \
  bash .carry/opt/run_optimize_all.sh 2>&1 | grep -E "===|rc=|selected"
python3 - <<'PY'
import json, glob, os
for f in sorted(glob.glob(os.environ["OUT"] + "/po/*_b[18].json")):
    try: d = json.load(open(f))
    except Exception as e: print(f, e); continue
    fam = {}
    for c in d["candidates"]:
        k = c["family"]; m = c.get("measured_us")
        b = fam.setdefault(k, [c.get("kernels"), 0, None])
        if m: b[1] += 1; b[2] = m if b[2] is None else min(b[2], m)
    print(os.path.basename(f), "selected", d["selected"].get("family"), d["selected"].get("kernels"),
          d["selected"].get("assignment"), d["selected"].get("measured_us"))
    for k, (nk, n, best) in sorted(fam.items()): print("   family", k, "kernels", nk, "measured", n, "best_us", best)
    for s in d.get("codegen_skips", []): print("   skip", s["family"], s["message"][:120])
PY
rm -rf /tmp/all && mkdir -p /tmp/all
for d in $OUT/po/*_b[18]; do n=$(basename $d); mkdir -p /tmp/all/$n; cp $d/kernel.cu $d/launch.json $d/family.json /tmp/all/$n/; done
(cd $OUT && tar czf po.tgz po && rm -rf po)
PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py /tmp/all 2>&1 | grep -v "^{"
