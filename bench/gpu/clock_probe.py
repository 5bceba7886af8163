"""SM clock, power and throttle reasons while generated programs run in the harness's graph.

Run on the GPU machine from the repository root, with .carry/var/<workload>_b<batch>__<tag>/
folders as for bench_variants.py:

    PYTHONUNBUFFERED=1 python3 bench/gpu/clock_probe.py [.carry/var]

For each variant, replays harness.graph_us back to back for about SECONDS_PER seconds (default 2) while
`nvidia-smi -lms 20` samples the SM clock, power draw and active throttle reasons, and prints the
median µs per call next to the mean clock and power of the samples inside that window. With
ZERO_ROWS=r, the rows r.. of the first input (X of the GEMV rows) are zeroed as well, in a second
window: the same kernel on the same shapes with less tensor-core data toggling, to tell a
power- or clock-bound kernel from a latency-bound one. Writes $OUT/clock_probe.json.
"""
import json, os, statistics, subprocess, sys, time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_optimize import CARRY, INPUTS, Program, check, harness  # noqa: E402
from bench_variants import variant_groups  # noqa: E402
import torch  # noqa: E402

QUERY = "timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active"


def sampler(path):
    f = open(path, "w")
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                             "-lms", "20"], stdout=f, stderr=subprocess.DEVNULL), f


def samples(path, t0, t1):
    out = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            try:
                ts = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                out.append((ts, float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
            except ValueError:
                continue
    return [s for s in out if t0 <= s[0] <= t1]


def window(p, sets, seconds):
    times = []
    t0 = time.time()
    while time.time() - t0 < seconds:
        times.append(harness.graph_us(p, sets))
    return t0, time.time(), statistics.median(times)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(CARRY, "var")
    seconds = float(os.environ.get("SECONDS_PER", "2"))
    zero = os.environ.get("ZERO_ROWS")
    log = os.path.join(os.environ.get("OUT", "/tmp"), "smi.csv")
    proc, fh = sampler(log)
    time.sleep(0.5)
    windows = []
    try:
        for w, sets, folders in variant_groups(root):
            variants = [("random", sets)]
            if zero is not None:
                zsets = [tuple(t.clone() for t in s) for s in sets]
                for s in zsets:
                    s[0][int(zero):].zero_()
                variants.append((f"rows {zero}.. zero", zsets))
            for tag, folder in folders:
                p = Program(folder, INPUTS[w["name"]])
                err = check(p, w)
                for data, s in variants:
                    harness.graph_us(p, s)  # warm
                    t0, t1, us = window(p, s, seconds)
                    windows.append(dict(workload=w["name"], bs=w["bs"], variant=tag, data=data,
                                        t0=t0, t1=t1, us=us, relerr_f64=err))
                p.bufs.clear()
            del sets, variants
            torch.cuda.empty_cache()
    finally:
        time.sleep(0.3)
        proc.terminate()
        fh.close()
    for r in windows:
        s = samples(log, r["t0"], r["t1"])
        r["n_samples"] = len(s)
        if s:
            r["sm_mhz"] = statistics.mean(x[1] for x in s)
            r["mem_mhz"] = statistics.mean(x[2] for x in s)
            r["power_w"] = statistics.mean(x[3] for x in s)
            r["throttle"] = sorted(set(x[4] for x in s))
        print(f"{r['workload']:15s} b={r['bs']} {r['variant']:34s} {r['data']:14s} {r['us']:8.2f} us  "
              f"sm {r.get('sm_mhz', 0):6.0f} MHz  {r.get('power_w', 0):5.0f} W  "
              f"throttle {r.get('throttle')}  ({r['n_samples']} samples)", flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "clock_probe.json"), "w") as f:
        json.dump(windows, f, indent=1)


if __name__ == "__main__":
    main()
