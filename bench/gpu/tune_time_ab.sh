#!/bin/bash
# Runs on the device (prepare_optimize_carry.sh first, plus an older build's prism as
# .carry/opt/bin/prism_old): `prism optimize --gpu 0` per row with each binary, no tuning cache
# and a fresh compile cache each, alternating which runs first; one line per run with the wall
# time, report.json's timings.stages and the selection. ROWS="gqa:1 lora:8" picks the rows.
export LD_LIBRARY_PATH=$PWD/.carry/opt/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
export PRISM_DATA_DIR=$PWD
ROWS=${ROWS:-"gqa:1 qknorm_gqa:1 rmsnorm_linear:1 lora:8"}
n=0
for row in $ROWS; do
  w=${row%:*}; b=${row#*:}
  if (( n % 2 == 0 )); then order="prism_old prism"; else order="prism prism_old"; fi
  n=$((n + 1))
  for bin in $order; do
    d=/tmp/ab/$bin/${w}_b$b; rm -rf $d /tmp/ab_cc; mkdir -p $d
    start=$(date +%s%N)
    timeout 120 .carry/opt/bin/$bin optimize --workload $w --batch $b --gpu 0 --out $d \
      --compile-cache /tmp/ab_cc --json > $d.json 2> $d.err
    rc=$?; wall=$(( ($(date +%s%N) - start) / 1000000 ))
    python3 - "$bin" "$w" "$b" "$rc" "$wall" "$d" <<'PY'
import json, sys
bin_, w, b, rc, wall, d = sys.argv[1:]
try:
    r = json.load(open(d + "/report.json"))
    st = r["timings"]["stages"]
    stages = " ".join(f"{s['stage']}={s['seconds']:.2f}" for s in st) if isinstance(st, list) else \
        " ".join(f"{k}={v:.2f}" for k, v in st.items())
    j = json.load(open(d + ".json"))
    sel = j["selected"]; c = j["candidates"]
    print(f"{bin_:10s} {w} b={b} rc={rc} wall={int(wall)/1000:.1f}s candidates={len(c)} "
          f"measured={sum(1 for x in c if x.get('measured_us'))} sel_us={sel.get('measured_us', 0):.2f} "
          f"confirm={sel.get('confirm_us')} | {stages}")
except Exception as e:
    print(f"{bin_:10s} {w} b={b} rc={rc} wall={int(wall)/1000:.1f}s ({e})")
PY
  done
done
