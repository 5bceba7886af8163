"""A/B timing of generated programs of any workload, without the baselines.

Run on the GPU machine from the repository root, with folders
.carry/var/<workload>_b<batch>__<tag>/{kernel.cu,launch.json} (codegen_emit outputs; the split
fixtures' tensors carry the workloads' input names) and copies of
../shared/baselines/{harness,workloads}.py in .carry/:

    PYTHONUNBUFFERED=1 python3 bench/gpu/bench_variants.py [.carry/var]

Each program is compiled and launched exactly as bench_optimize.py does (NVRTC, sm_90a; clusters
and programmatic dependent launch from launch.json), checked against the float64 reference, and
timed with harness.graph_us (one CUDA graph over input sets rotated past L2, median of
replays), then checked again (attention rows also with large scores: check_large_scores). REPEAT=n (default 1) times every variant of a row n times, round-robin (the spread
between runs on the H200 is a few per cent, larger than the differences an A/B looks for), and
prints the median and the minimum. TIME_WRONG=1 also times programs whose output is wrong (hand
edits that remove work to see what it costs). BREAKDOWN=1 also times each kernel of a variant alone (node_probe.Subset: same
buffers and input sets, each kernel's launch attributes as they are), as "kernel_us". Writes
$OUT/prism_variants.json.
"""
import glob, json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_optimize import (CARRY, INPUTS, Program, check, check_large_scores, harness,  # noqa: E402
                            workloads)
from node_probe import Subset  # noqa: E402
import torch  # noqa: E402

TIME_WRONG = bool(os.environ.get("TIME_WRONG"))


def variant_groups(root):
    """Per workload row with folders <workload>_b<batch>__<tag> under root: (w, the harness's
    input sets for it (seed 0), [(tag, folder)]), rows in workloads.suite() order."""
    for w in workloads.suite():
        folders = sorted(glob.glob(os.path.join(root, f"{w['name']}_b{w['bs']}__*")))
        if not folders:
            continue
        torch.manual_seed(0)
        sets = harness.input_sets(w["make"], w["bytes"])
        yield w, sets, [(os.path.basename(f).split("__", 1)[1], f) for f in folders]
        del sets  # (the caller frees its reference and empties the cache before the next row)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(CARRY, "var")
    repeat = max(1, int(os.environ.get("REPEAT", "1")))
    rows = []
    for w, sets, folders in variant_groups(root):
        progs = []
        for tag, folder in folders:
            try:
                p = Program(folder, INPUTS[w["name"]])
            except Exception as e:  # recorded, not fatal
                rows.append(dict(workload=w["name"], bs=w["bs"], variant=tag, error=str(e)[:400]))
                print(json.dumps(rows[-1]), flush=True)
                continue
            err = check(p, w)
            progs.append((tag, p, err, []))
        for _ in range(repeat):
            for tag, p, err, times in progs:
                ok = err == err and err < 5e-3
                times.append(harness.graph_us(p, sets) if ok or TIME_WRONG else float("nan"))
                p.bufs.clear()
        for tag, p, err, times in progs:
            us = statistics.median(times)
            # Checked again after the timing's graph replays: state a kernel keeps between
            # launches (grid_combine's barrier counters) must still give the right output.
            after = check(p, w)
            large = check_large_scores(p, w)
            rows.append(dict(workload=w["name"], bs=w["bs"], variant=tag, relerr_f64=err,
                             relerr_f64_after=after, relerr_f64_large_scores=large, us=us,
                             us_all=times,
                             regs=[k[5] for k in p.kernels], smem=[k[3] for k in p.kernels]))
            if os.environ.get("BREAKDOWN") and us == us and len(p.kernels) > 1:
                parts = [harness.graph_us(Subset(p, {i}), sets) for i in range(len(p.kernels))]
                p.bufs.clear()
                rows[-1]["kernel_us"] = parts
                print(f"{'':15s}   kernels alone: " + " + ".join(f"{x:.2f}" for x in parts) + " us",
                      flush=True)
            print(f"{w['name']:15s} b={w['bs']} {tag:40s} {us:8.2f} us (min {min(times):.2f}, "
                  f"{len(times)} runs)  relerr {err:.2e} / after {after:.2e}"
                  + (f" / large scores {large:.2e}" if large is not None else "") + "  "
                  f"regs {rows[-1]['regs']}", flush=True)
        del sets, progs
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "prism_variants.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
