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
import ctypes, os, shutil, sys, tempfile

import numpy as np
import torch

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


class LaunchAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint),
                ("bx", ctypes.c_uint), ("by", ctypes.c_uint), ("bz", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttr)), ("num_attrs", ctypes.c_uint)]


CUDA = ctypes.CDLL("libcuda.so.1")
CUDA.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), ctypes.c_void_p,
                                  ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
ATTR_PDL = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


class PdlProgram(bo.Program):
    def __call__(self, *ins):
        b = self.buffers(tuple(t.data_ptr() for t in ins))
        tensors = dict(zip(self.inputs, ins))
        tensors.update(b)
        stream = torch.cuda.current_stream().cuda_stream
        attr = LaunchAttr()
        attr.id = ATTR_PDL
        # attr.value is a c_char array: reading the field gives a copy, so write through its
        # address (the first version wrote into a copy: its run 11 of 2026-12-01 had no PDL).
        ctypes.memmove(ctypes.addressof(attr) + LaunchAttr.value.offset, ctypes.byref(ctypes.c_int(1)), 4)
        for fn, grid, block, smem, names, _ in self.kernels:
            vals = [ctypes.c_uint64(tensors[n].data_ptr()) for n in names]
            params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
            cfg = LaunchConfig(*grid, *block, smem, ctypes.c_void_p(stream), ctypes.pointer(attr), 1)
            rc = CUDA.cuLaunchKernelEx(ctypes.byref(cfg), ctypes.c_void_p(fn.kernel.ptr), params, None)
            if rc != 0:
                raise RuntimeError(f"cuLaunchKernelEx: CUresult {rc}")
        return b[self.output]


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
