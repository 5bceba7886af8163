#!/bin/bash
# One device call for the concat path (2026-12-06): `prism optimize --gpu 0` on the programs in
# .carry/opt/concat (each ends correct or with its error), then concat_bench.py. Prepare with
# bench/gpu/prepare_optimize_carry.sh and copy the .prism files into .carry/opt/concat.
set -u
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD PYTHONUNBUFFERED=1
for f in .carry/opt/concat/*.prism; do
  n=$(basename "$f" .prism)
  echo "=== $n"
  s=$(date +%s.%N)
  .carry/opt/bin/prism optimize "$f" --gpu 0 --out .carry/opt/concat/out_$n --json > $OUT/concat_$n.json 2> /tmp/err_$n.txt
  echo "rc=$? wall $(python3 -c "import time; print(round(time.time() - $s, 1))") s"; tail -2 /tmp/err_$n.txt
  python3 - "$OUT/concat_$n.json" <<'PY'
import json, sys
def walk(j, path=""):
    if "parts" in j:
        for p in j["parts"]: walk(p, path + "/" + p.get("out", "?").split("/")[-1])
        return
    s = j.get("selected", {})
    m = [c for c in j.get("candidates", []) if "measured_us" in c]
    bad = [c for c in m if not c.get("matches", True)]
    print(f"  {path or '/'}: {s.get('kernels')} kernel(s), {s.get('codegen_variant', '')} measured {s.get('measured_us')}, {len(m)} measured, {len(bad)} not matching")
    for c in m:  # each measured candidate: its variant, time and relative error
        print(f"    [{c.get('codegen_variant', '')}] {c['measured_us']:.2f} us, rel. err {c.get('relative_error')}")
try:
    walk(json.load(open(sys.argv[1])))
except Exception as e:
    print("  (no json)", e)
PY
done
python3 bench/gpu/concat_bench.py .carry/opt/concat 2>&1 | grep -v "^{"
