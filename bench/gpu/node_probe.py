"""Probe: what each kernel of a multi-kernel program costs inside the harness's CUDA graph.

Run on the GPU machine from the repository root, like bench_optimize.py:

    PYTHONUNBUFFERED=1 python3 bench/gpu/node_probe.py WORKLOAD BATCH DIR [DIR ...]

For each DIR (kernel.cu, launch.json of one program of WORKLOAD at BATCH: codegen_emit or
prism optimize output) it checks the whole program against float64, then times with
harness.graph_us over the same rotated input sets, in one run: the whole program, and each
kernel alone (the others' outputs left as they were). whole − first kernel alone bounds what
folding the later kernels into the first one could save.
"""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_optimize as bo  # noqa: E402
harness, workloads = bo.harness, bo.workloads


class Subset(bo.Program):
    """The same program and buffers, running only the kernels whose indices are in `keep`."""

    def __init__(self, base, keep):
        self.__dict__.update(base.__dict__)
        self.kernels = [k for i, k in enumerate(base.kernels) if i in keep]
        self.clusters = [c for i, c in enumerate(base.clusters) if i in keep]


def main():
    name, bs = sys.argv[1], int(sys.argv[2])
    w = next(w for w in workloads.suite() if w["name"] == name and w["bs"] == bs)
    sets = harness.input_sets(w["make"], w["bytes"])
    for folder in sys.argv[3:]:
        p = bo.Program(folder, bo.INPUTS[name])
        err = bo.check(p, w)
        whole = harness.graph_us(p, sets)
        alone = [harness.graph_us(Subset(p, {i}), sets) for i in range(len(p.kernels))]
        again = harness.graph_us(p, sets)
        print(f"{os.path.basename(folder.rstrip('/'))}: err {err:.1e}; whole {whole:.2f} / {again:.2f} us; "
              + "; ".join(f"kernel {i} alone {t:.2f} us (grid {p.kernels[i][1]}, block {p.kernels[i][2][0]})"
                          for i, t in enumerate(alone)), flush=True)


if __name__ == "__main__":
    main()
