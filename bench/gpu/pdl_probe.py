"""Probe: programmatic dependent launch (PDL) for the kernels `prism optimize` selected.

Run on the GPU machine from the repository root, like bench_optimize.py:

    PYTHONUNBUFFERED=1 python3 bench/gpu/pdl_probe.py DIR [ROW ...]

For each DIR/<workload>_b<batch> (kernel.cu, launch.json) it builds two launchers of the same
program: the generated source launched by CuPy (as bench_optimize.py does), and the source with
`griddepcontrol.launch_dependents; griddepcontrol.wait;` at the start of every kernel (sm_90),
launched by cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, so that
in the harness's CUDA graph each kernel may be scheduled while the one before it drains (it
still waits for that grid's completion and memory before touching any). Both are checked
against float64 and timed with harness.graph_us over the same rotated input sets, in one run.
"""
import os, shutil, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_optimize as bo  # noqa: E402
harness, workloads = bo.harness, bo.workloads

PDL_PROLOGUE = """
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
"""


class PdlProgram(bo.Program):
    """The program with every kernel launched with programmatic stream serialization
    (bench_optimize.launch_ex). The first version of this probe built the attribute itself and
    wrote its value into a ctypes copy: its run 11 of 2026-12-01 had no PDL."""

    def __init__(self, folder, inputs):
        super().__init__(folder, inputs)
        self.clusters = [(cluster, True) for cluster, _ in self.clusters]


def pdl_folder(folder):
    tmp = tempfile.mkdtemp()
    shutil.copy(os.path.join(folder, "launch.json"), tmp)
    out = []
    for line in open(os.path.join(folder, "kernel.cu")):
        out.append(line)
        if line.startswith('extern "C" __global__') and line.rstrip().endswith("{"):
            out.append(PDL_PROLOGUE)
    with open(os.path.join(tmp, "kernel.cu"), "w") as f:
        f.writelines(out)
    return tmp


def main():
    po = sys.argv[1]
    rows = sys.argv[2:]
    suite = [w for w in workloads.suite() if f"{w['name']}_b{w['bs']}" in rows or not rows]
    suite = [w for w in suite if os.path.exists(os.path.join(po, f"{w['name']}_b{w['bs']}"))]
    for w in suite:
        folder = os.path.join(po, f"{w['name']}_b{w['bs']}")
        plain = bo.Program(folder, bo.INPUTS[w["name"]])
        pdl = PdlProgram(pdl_folder(folder), bo.INPUTS[w["name"]])
        e0, e1 = bo.check(plain, w), bo.check(pdl, w)
        sets = harness.input_sets(w["make"], w["bytes"])
        t0 = harness.graph_us(plain, sets)
        t1 = harness.graph_us(pdl, sets)
        t0b = harness.graph_us(plain, sets)
        print(f"{w['name']} b={w['bs']}: {len(plain.kernels)} kernel(s); plain {t0:.2f} / {t0b:.2f} us "
              f"(err {e0:.1e}), PDL {t1:.2f} us (err {e1:.1e}), saved {min(t0, t0b) - t1:.2f} us",
              flush=True)


if __name__ == "__main__":
    main()
