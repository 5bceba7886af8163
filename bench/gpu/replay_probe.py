"""Probe: the harness's fixed cost per graph replay, and what it adds to each call.

Run on the GPU machine from the repository root (copies of ../shared/baselines/harness.py in
.carry/, as for bench_optimize.py):

    PYTHONUNBUFFERED=1 python3 bench/gpu/replay_probe.py

harness.graph_us captures one CUDA graph with one call per input set and divides the time
between two events around g.replay() by the number of sets. The event before the replay is
processed by an idle GPU at once, the graph's first kernel only when the launch arrives, so the
per-call figure carries (launch latency of one replay) / sets. The harness gives a workload
max(2, 2·L2 / bytes + 1) sets: 2–4 for the GEMV rows, 61 for gqa b=1. This times a graph of n
trivial kernels (the harness's own `t.add_(1)`) for several n, several times, and fits
us_per_call(n) = a + X / n: a is one node, X the per-replay latency.
"""
import os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_optimize import harness  # noqa: E402
import torch  # noqa: E402


def main():
    z = torch.zeros(1, device="cuda")
    ns = [1, 2, 3, 4, 8, 20, 61]
    per = {n: [] for n in ns}
    for _ in range(5):
        for n in ns:
            per[n].append(harness.graph_us(lambda t: t.add_(1), [(z,)] * n))
    med = {n: statistics.median(v) for n, v in per.items()}
    for n in ns:
        print(f"n={n:3d}  us per call {med[n]:6.2f}  (runs {', '.join(f'{x:.2f}' for x in per[n])})")
    # Least squares of med[n] = a + X / n.
    xs = [1.0 / n for n in ns]
    ys = [med[n] for n in ns]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    x_lat = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - x_lat * mx
    print(f"fit: {a:.2f} us per node + {x_lat:.2f} us per replay / n")
    for n in (2, 3, 4):
        print(f"  with {n} input sets a call carries {x_lat / n:.2f} us of replay latency")


if __name__ == "__main__":
    main()
