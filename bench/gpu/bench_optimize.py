"""Times the kernels `prism optimize` selected on the device, next to the baselines, in one run.

Run on the GPU machine from the repository root after bench/gpu/run_optimize_all.sh wrote
<dir>/<workload>_b<batch>/{kernel.cu,launch.json,family.json} (the prism optimize outputs,
carried back as .carry/po/), with copies of ../shared/baselines/{harness,workloads}.py in
.carry/ (bench/gpu/prepare_optimize_carry.sh):

    PYTHONUNBUFFERED=1 python3 bench/gpu/bench_optimize.py [.carry/po]

Each selected program (one or more kernels, f32 intermediates allocated per input set) is
compiled with NVRTC as prism's runtime compiles it (compile_kernel: sm_90a on an sm_90 device) and
loaded with CuPy (the generated source unchanged), checked on two fresh
random input sets against a float64 reference with every written tensor poisoned by NaN first
(attention rows also with Kt scaled by 16: scores of several hundred, past exp's f32 range),
and handed to harness.run as the "library" implementation, so that it is timed in the same run,
by the same code (CUDA graph over input sets rotated past L2, median of replays), as PyTorch
eager and torch.compile (and max-autotune with MAX_AUTOTUNE=1). Writes $OUT/prism_optimize.json
(harness rows) and $OUT/prism_optimize_check.json (f64 errors, selected instances).
"""
import ctypes, hashlib, json, math, os, sys, tempfile, warnings
warnings.filterwarnings("ignore", category=DeprecationWarning)

import numpy as np
import torch
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
CARRY = os.path.join(HERE, "..", "..", ".carry")
sys.path.insert(0, CARRY)
import harness  # noqa: E402  (../shared/baselines/harness.py, carried)
import workloads  # noqa: E402

# The program's input tensor names in the harness's argument order (examples/*.prism).
INPUTS = {
    "gqa": ["Q", "Kt", "V"],
    "qknorm_gqa": ["Q", "Kt", "V"],
    "rmsnorm_linear": ["X", "W"],
    "gated_mlp": ["X", "A", "B"],
    "lora": ["X", "W", "A", "B"],
    "ntrans": ["X", "H", "Alpha"],
}
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


class _LaunchAttr(ctypes.Structure):  # CUlaunchAttribute
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint),
                ("bx", ctypes.c_uint), ("by", ctypes.c_uint), ("bz", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttr)), ("num_attrs", ctypes.c_uint)]


_CUDA = None
_NVRTC = None
_CUBINS = {}
_MODULES = {}


def compile_kernel(src, function):
    """`function` of the generated source `src`, compiled with NVRTC exactly as prism's runtime
    compiles it (src/codegen/nvrtc.cc: --gpu-architecture=sm_<cc>, sm_90a on compute capability
    9.0, where the attention_wgmma kernels need wgmma; -std=c++17 -default-device), loaded with
    CuPy: a cupy RawKernel. One compilation and one module load per (source, architecture)."""
    global _NVRTC
    if _NVRTC is None:
        for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                     "/usr/local/cuda/lib64/libnvrtc.so"):
            try:
                _NVRTC = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if _NVRTC is None:
            raise RuntimeError("libnvrtc not found")
    cc = cupy.cuda.Device().compute_capability
    arch = f"sm_{cc}" + ("a" if cc == "90" else "")
    key = (src, arch)
    path = _CUBINS.get(key)
    if path is None:
        prog = ctypes.c_void_p()
        rc = _NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None)
        if rc != 0:
            raise RuntimeError(f"nvrtcCreateProgram: {rc}")
        opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"-default-device"]
        rc = _NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        if rc != 0:
            n = ctypes.c_size_t()
            _NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(n.value)
            _NVRTC.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed for {arch}:\n{log.value.decode(errors='replace')}")
        n = ctypes.c_size_t()
        _NVRTC.nvrtcGetCUBINSize(prog, ctypes.byref(n))
        cubin = ctypes.create_string_buffer(n.value)
        _NVRTC.nvrtcGetCUBIN(prog, cubin)
        _NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
        path = os.path.join(tempfile.gettempdir(),
                            f"prism_{hashlib.sha256(src.encode()).hexdigest()[:20]}_{arch}.cubin")
        with open(path, "wb") as f:
            f.write(cubin.raw)
        _CUBINS[key] = path
    # One module load per source: the kernels of a program share its __device__ variables
    # (bench/gpu/prototypes/flag_combine.py's counters), as in prism's runtime.
    mod = _MODULES.get(path)
    if mod is None:
        mod = _MODULES[path] = cupy.RawModule(path=path)
    return mod.get_function(function)


# CUfunction → the largest dynamic shared memory a Program launches it with.
_SMEM_LIMIT = {}


def launch_ex(fn, grid, block, smem, cluster, programmatic, ptrs, stream):
    """cuLaunchKernelEx with launch.json's "cluster" (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) and
    "programmatic_dependent_launch" (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)."""
    global _CUDA
    if _CUDA is None:
        _CUDA = ctypes.CDLL("libcuda.so.1")
        _CUDA.cuLaunchKernelEx.argtypes = [ctypes.POINTER(_LaunchConfig), ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        _CUDA.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    if cluster[0] * cluster[1] * cluster[2] > 8:  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
        rc = _CUDA.cuFuncSetAttribute(ctypes.c_void_p(fn.kernel.ptr), 14, 1)
        if rc != 0:
            raise RuntimeError(f"cuFuncSetAttribute(non-portable cluster size): CUresult {rc}")
    attrs = (_LaunchAttr * 2)()
    n = 0
    # The value field is a c_char array: reading it gives a copy, so write through its address.
    if tuple(cluster) != (1, 1, 1):
        attrs[n].id = 4
        ctypes.memmove(ctypes.addressof(attrs[n]) + _LaunchAttr.value.offset,
                       (ctypes.c_uint * 3)(*cluster), 12)
        n += 1
    if programmatic:
        attrs[n].id = 6
        ctypes.memmove(ctypes.addressof(attrs[n]) + _LaunchAttr.value.offset, ctypes.byref(ctypes.c_int(1)), 4)
        n += 1
    vals = [ctypes.c_uint64(p) for p in ptrs]
    params = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
    cfg = _LaunchConfig(*grid, *block, smem, ctypes.c_void_p(stream),
                        ctypes.cast(attrs, ctypes.POINTER(_LaunchAttr)), n)
    rc = _CUDA.cuLaunchKernelEx(ctypes.byref(cfg), ctypes.c_void_p(fn.kernel.ptr), params, None)
    if rc != 0:
        raise RuntimeError(f"cuLaunchKernelEx (cluster {cluster}, programmatic {programmatic}): CUresult {rc}")


class Program:
    """The kernels of one launch.json, run in order; the output is the tensor written and never read."""

    def __init__(self, folder, inputs):
        with open(os.path.join(folder, "launch.json")) as f:
            self.launch = json.load(f)
        with open(os.path.join(folder, "kernel.cu")) as f:
            src = f.read()
        self.inputs = inputs
        self.kernels = []
        # launch.json's "cluster" ((1, 1, 1) when absent) and "programmatic_dependent_launch"
        self.clusters = []
        shapes, written, read = {}, set(), set()
        for k in self.launch["kernels"]:
            fn = compile_kernel(src, k["function"])
            # Programs with the same source share the function (compile_kernel's cache): its
            # limit is the largest any of them launches with. Regression: setting each
            # program's own value left gqa b=1's padded variant above the limit its unpadded
            # twin (same source) set, and its launch failed with CUresult 1 (2026-12-07, H100).
            key = fn.kernel.ptr  # the CUfunction
            _SMEM_LIMIT[key] = max(_SMEM_LIMIT.get(key, 0), k["dynamic_smem_bytes"])
            fn.max_dynamic_shared_size_bytes = _SMEM_LIMIT[key]
            names = [a["tensor"] for a in k["args"]]
            for a in k["args"]:
                shapes[a["tensor"]] = (a["shape"], a["dtype"])
                (written if a["access"] == "write" else read).add(a["tensor"])
            self.kernels.append((fn, tuple(k["grid"]), tuple(k["block"]), k["dynamic_smem_bytes"], names,
                                 fn.attributes["num_regs"]))
            self.clusters.append((tuple(k.get("cluster", (1, 1, 1))),
                                  bool(k.get("programmatic_dependent_launch", False))))
        outs = sorted(written - read)
        # launch.json may name the output (a prototype whose kernel also writes scratch tensors
        # it reads itself, bench/gpu/prototypes/last_block_combine.py).
        assert "output" in self.launch or len(outs) == 1, outs
        self.output = self.launch.get("output") or outs[0]
        self.shapes = shapes
        self.written = written
        self.bufs = {}

    def buffers(self, key):
        b = self.bufs.get(key)
        if b is None:
            b = {n: torch.empty(*self.shapes[n][0], dtype=DT[self.shapes[n][1]], device="cuda")
                 for n in self.written}
            self.bufs[key] = b
        return b

    def poison(self, *ins):
        for t in self.buffers(tuple(t.data_ptr() for t in ins)).values():
            t.fill_(float("nan"))

    def __call__(self, *ins):
        b = self.buffers(tuple(t.data_ptr() for t in ins))
        tensors = dict(zip(self.inputs, ins))
        tensors.update(b)
        stream = torch.cuda.current_stream().cuda_stream
        with cupy.cuda.ExternalStream(stream):
            for (fn, grid, block, smem, names, _), (cl, pdl) in zip(self.kernels, self.clusters):
                if cl != (1, 1, 1) or pdl:
                    launch_ex(fn, grid, block, smem, cl, pdl, [tensors[n].data_ptr() for n in names],
                              stream)
                else:
                    fn(grid, block, tuple(np.uint64(tensors[n].data_ptr()) for n in names),
                       shared_mem=smem)
        return b[self.output]


def rms64(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def attn64(q, kt, v):
    return torch.softmax(q @ kt, -1) @ v


REF64 = {
    "gqa": attn64,
    "qknorm_gqa": lambda q, kt, v: attn64(rms64(q), kt, rms64(v)),
    "rmsnorm_linear": lambda x, w: rms64(x) @ w,
    "gated_mlp": lambda x, a, b: torch.nn.functional.silu(x @ a) * (x @ b),
    "lora": lambda x, w, a, b: x @ w + (x @ a) @ b,
    "ntrans": lambda x, h, al: rms64(x + al * (rms64(h) - x)),
}


def check(p, w, trials=2):
    worst = 0.0
    for t in range(trials):
        torch.manual_seed(100 + t)
        ins = w["make"]()
        p.poison(*ins)
        y = p(*ins)
        torch.cuda.synchronize()
        if torch.isnan(y).any():
            return float("nan")
        r = REF64[w["name"]](*[i.double() for i in ins])
        worst = max(worst, ((y.double() - r).norm() / r.norm()).item())
        p.bufs.clear()
    return worst


def check_large_scores(p, w, scale=16.0):
    """Attention rows only: the f64 relative error with Kt scaled by `scale` (a power of two), so
    that scores reach several hundred, past exp's f32 range (88.7). Split-KV partials stored as
    plain exp sums overflow there (inf / inf = NaN); the log-sum-exp form does not
    (docs/codegen.md). None for the other rows."""
    if w["name"] not in ("gqa", "qknorm_gqa"):
        return None
    torch.manual_seed(200)
    ins = list(w["make"]())
    ins[1] = ins[1] * scale
    p.poison(*ins)
    y = p(*ins)
    torch.cuda.synchronize()
    r = REF64[w["name"]](*[i.double() for i in ins])
    p.bufs.clear()
    if not torch.isfinite(y).all():
        return float("nan")
    return ((y.double() - r).norm() / r.norm()).item()


def main():
    po = sys.argv[1] if len(sys.argv) > 1 else os.path.join(CARRY, "po")
    suite = [w for w in workloads.suite()
             if os.path.exists(os.path.join(po, f"{w['name']}_b{w['bs']}", "launch.json"))]
    checks = []
    for w in suite:
        folder = os.path.join(po, f"{w['name']}_b{w['bs']}")
        with open(os.path.join(folder, "family.json")) as f:
            fam = json.load(f)
        try:
            p = Program(folder, INPUTS[w["name"]])
        except Exception as e:  # recorded, not fatal
            checks.append(dict(workload=w["name"], bs=w["bs"], error=str(e)[:500]))
            print(json.dumps(checks[-1]), flush=True)
            continue
        err = check(p, w)
        row = dict(workload=w["name"], bs=w["bs"], relerr_f64=err,
                   relerr_f64_large_scores=check_large_scores(p, w), family=fam["family"],
                   codegen_variant=fam.get("codegen_variant", ""),
                   assignment=fam["assignment"], selection=fam["selection"],
                   optimize_measured_us=fam.get("measured_us"),
                   kernels=[dict(function=k[0].name if hasattr(k[0], "name") else None, grid=k[1],
                                 block=k[2], smem=k[3], regs=k[5]) for k in p.kernels])
        checks.append(row)
        print(json.dumps(row), flush=True)
        if err == err and err < 5e-3:
            w["lib"] = p
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "prism_optimize_check.json"), "w") as f:
        json.dump(checks, f, indent=1)
    rows = harness.run(suite, "prism_optimize.json")
    ratios = []
    for w, r in zip(suite, rows):
        if "library_us" not in r:
            print(f"{w['name']} b={w['bs']}: no prism kernel")
            continue
        base = min(v for k, v in r.items() if k.endswith("_us") and k not in
                   ("library_us", "best_us", "floor_us") and not k.endswith("_hot_us"))
        ratios.append(r["library_us"] / base)
        print(f"{w['name']} b={w['bs']}: prism {r['library_us']:.2f} us, best baseline {base:.2f} us, "
              f"prism/best {r['library_us'] / base:.3f}, prism/floor {r['library_us'] / r['floor_us']:.2f} "
              f"(floor {r['floor_us']:.2f})")
    if ratios:
        print(f"geomean speedup over the best baseline (rows with prism): "
              f"{math.exp(-sum(map(math.log, ratios)) / len(ratios)):.3f} over {len(ratios)} rows")


if __name__ == "__main__":
    main()
