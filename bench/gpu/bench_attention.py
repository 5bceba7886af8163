"""Device-side harness for the prism-generated split-KV attention (gqa, qknorm_gqa; docs/codegen.md).

Run on the GPU machine from the repository root, with .carry/ prepared by
`bench/gpu/prepare_carry.sh BUILD attention` (variants under
.carry/gen/<fixture>_b<bs>_x<gx>_y<gy>_z<gz>_F<F>_T<T>_S<S>/{kernel.cu,launch.json} and copies of
../shared/baselines/{harness,workloads}.py):

    PYTHONUNBUFFERED=1 python3 bench/gpu/bench_attention.py

Each variant (two kernels: partial_kv, then combine) is compiled with NVRTC as prism's runtime
compiles it (bench_optimize.compile_kernel: sm_90a on the H200) and loaded with CuPy (the
generated source unchanged), checked on fresh random inputs against a float64 reference
(output and the f32 partials poisoned with NaN first), and timed exactly like the baselines
(harness.graph_us: one CUDA graph over input sets rotated past L2, median of replays). The
fastest correct variant per row is then handed to harness.run as the "library" implementation,
so that it is timed in the same run, by the same code, as PyTorch eager and torch.compile
(and max-autotune with MAX_AUTOTUNE=1). ONLY_VARIANTS=name,name restricts the variants;
BREAKDOWN=1 also times each kernel of every variant alone (same graph, same input sets);
NO_BASELINES=1 skips harness.run.
Writes $OUT/prism_attention.json (harness rows) and $OUT/prism_attention_variants.json.
"""
import glob, json, os, sys, warnings
warnings.filterwarnings("ignore", category=DeprecationWarning)

import numpy as np
import torch
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
CARRY = os.path.join(HERE, "..", "..", ".carry")
sys.path.insert(0, CARRY)
import harness  # noqa: E402  (../shared/baselines/harness.py, carried)
import workloads  # noqa: E402
sys.path.insert(0, HERE)
from bench_optimize import compile_kernel  # noqa: E402

DT = {"f16": torch.float16, "f32": torch.float32}


class GeneratedProgram:
    """All kernels of one generated program, launched in order on torch's current stream."""

    def __init__(self, folder):
        self.name = os.path.basename(folder)
        with open(os.path.join(folder, "launch.json")) as f:
            self.launch = json.load(f)
        with open(os.path.join(folder, "kernel.cu")) as f:
            src = f.read()
        self.kernels = []
        self.shapes = {}
        for k in self.launch["kernels"]:
            fn = compile_kernel(src, k["function"])
            fn.max_dynamic_shared_size_bytes = k["dynamic_smem_bytes"]
            self.kernels.append((fn, tuple(k["grid"]), tuple(k["block"]), k["dynamic_smem_bytes"],
                                 [a["tensor"] for a in k["args"]]))
            for a in k["args"]:
                self.shapes[a["tensor"]] = (a["shape"], a["dtype"])
        self.attrs = [fn.attributes for fn, *_ in self.kernels]
        self.scratch = {}  # intermediates, shared by every call (calls run in stream order)
        self.outs = {}

    def buffers(self, names):
        for n in names:
            if n not in self.scratch:
                shape, dt = self.shapes[n]
                self.scratch[n] = torch.empty(*shape, dtype=DT[dt], device="cuda")
        return self.scratch

    def __call__(self, q, kt, v):
        key = (q.data_ptr(), kt.data_ptr(), v.data_ptr())
        o = self.outs.get(key)
        if o is None:
            shape, dt = self.shapes["O"]
            o = torch.empty(*shape, dtype=DT[dt], device="cuda")
            self.outs[key] = o
        t = {"Q": q, "Kt": kt, "V": v, "O": o}
        t.update(self.buffers([n for n in self.shapes if n not in t]))
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            for fn, grid, block, smem, args in self.kernels:
                fn(grid, block, tuple(np.uint64(t[a].data_ptr()) for a in args), shared_mem=smem)
        return o


def rms64(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def attn64(q, kt, v):
    return torch.softmax(q @ kt, dim=-1) @ v


REF64 = {  # float64 references on upcast inputs
    "gqa": attn64,
    "qknorm_gqa": lambda q, kt, v: attn64(rms64(q), kt, rms64(v)),
}


def check(k, w, trials=2):
    worst = 0.0
    for t in range(trials):
        torch.manual_seed(100 + t)
        ins = w["make"]()  # fresh random inputs each trial
        y = k(*ins)
        y.fill_(float("nan"))  # poison: every element must be written
        for b in k.scratch.values():
            b.fill_(float("nan"))
        y = k(*ins)
        torch.cuda.synchronize()
        if torch.isnan(y).any():
            return float("nan")
        r = REF64[w["name"]](*[i.double() for i in ins])
        worst = max(worst, ((y.double() - r).norm() / r.norm()).item())
        k.outs.clear()
    return worst


def main():
    only = os.environ.get("ONLY_VARIANTS")
    only = set(only.split(",")) if only else None
    suite = [w for w in workloads.suite() if w["name"] in REF64]
    results = []
    keep = []
    for w in suite:
        bs = w["bs"]
        folders = sorted(glob.glob(os.path.join(CARRY, "gen", f"{w['name']}_b{bs}_*")))
        if only:
            folders = [f for f in folders if os.path.basename(f) in only]
        if not folders:
            continue
        torch.manual_seed(0)
        sets = harness.input_sets(w["make"], w["bytes"])
        best = None
        for folder in folders:
            try:
                k = GeneratedProgram(folder)
            except Exception as e:  # a variant that fails to compile or load is recorded, not fatal
                print(json.dumps(dict(variant=os.path.basename(folder), bs=bs, error=str(e)[:500])))
                continue
            err = check(k, w)
            us = harness.graph_us(k, sets) if err == err and err < 2e-3 else float("nan")
            k.outs.clear()
            if os.environ.get("BREAKDOWN") and us == us:
                full = k.kernels
                parts = []
                for i in range(len(full)):
                    k.kernels = [full[i]]
                    parts.append(harness.graph_us(k, sets))
                k.kernels = full
                print(json.dumps(dict(variant=k.name, bs=bs, kernel_us=parts)), flush=True)
            row = dict(variant=k.name, bs=bs, relerr_f64=err, us=us,
                       regs=[a["num_regs"] for a in k.attrs],
                       smem=[s for _, _, _, s, _ in k.kernels],
                       grid=[g for _, g, _, _, _ in k.kernels])
            results.append(row)
            print(json.dumps(row), flush=True)
            if us == us and (best is None or us < best[0]):
                best = (us, k)
        del sets
        torch.cuda.empty_cache()
        if best is not None:
            best[1].outs.clear()
            w["lib"] = best[1]
            w["prism_variant"] = best[1].name
            w["prism_select_us"] = best[0]
            keep.append(w)
        else:
            w.pop("lib", None)
    if os.environ.get("NO_BASELINES"):
        keep = []
    rows = harness.run(keep, "prism_attention.json") if keep else []
    print(f"{'variant':40s} {'bs':>3s} {'us':>8s} {'relerr':>9s} {'regs':>9s}")
    for r in results:
        print(f"{r['variant']:40s} {r['bs']:3d} {r['us']:8.2f} {r['relerr_f64']:9.2e} {str(r['regs']):>9s}")
    for w, r in zip(keep, rows):
        base = min(r[k] for k in ("eager_us", "compile_us", "compile_max_us") if k in r)
        print(f"{w['name']} b={w['bs']}: prism {w['prism_variant']} {r['library_us']:.2f} us "
              f"(selection {w['prism_select_us']:.2f}; relerr vs fp16 ref {r['library_relerr']:.2e}); "
              f"eager {r['eager_us']:.2f}, compile {r['compile_us']:.2f}"
              + (f", max-autotune {r['compile_max_us']:.2f}" if "compile_max_us" in r else "")
              + f"; prism/best-baseline {r['library_us'] / base:.3f}, "
              f"prism/floor {r['library_us'] / r['floor_us']:.3f} (floor {r['floor_us']:.2f})")
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "prism_attention_variants.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
