"""Probe: when each block of a program's first kernel starts and ends, inside the harness graph.

Run on the GPU machine from the repository root (carry [".carry"], like bench_variants.py):

    PYTHONUNBUFFERED=1 python3 bench/gpu/prototypes/block_timeline.py [.carry/var]

For every folder <workload>_b<batch>__<tag>/ (kernel.cu, launch.json) under the root, the first
kernel is instrumented: thread 0 of each block records %globaltimer and clock64 after the
programmatic-dependent-launch wait (or at entry) and again when the block leaves the kernel (a
destructor, so every return path records), with %smid, into a __device__ array; in a kernel
with a main loop also when the first stage has arrived (after iteration 0's barrier) and when
the loop ends (at the CpAsyncWait<0> after it). The program is
checked against float64, timed with harness.graph_us (whole and first kernel alone, as
node_probe does), and then the harness's graph is replayed once more and the last call's
records read back. Printed per program, as [min p10 p50 p90 max] over the blocks: start
(from the first block's), the first stage's arrival (from the block's start), the loop's end,
the time after the loop, the end, and the duration (clock64 at SM_GHZ, default 1.98): whether
the kernel ends with its bytes or with a tail of late blocks. Writes $OUT/block_timeline.json (the raw records too).

The instrumentation adds four timer reads and seven stores per block: the timings printed are of
the instrumented kernel, which the "whole" column lets one compare with the plain variant.
"""
import json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench_optimize as bo  # noqa: E402
from node_probe import Subset  # noqa: E402
from bench_variants import variant_groups  # noqa: E402
import cupy  # noqa: E402
import torch  # noqa: E402

harness = bo.harness
MAX_BLOCKS = 8192
FIELDS = 7  # t0, t1 (globaltimer ns), c0, c1 (clock64), smid, tf, te (globaltimer ns; 0 if unmarked)

PRELUDE = r"""
__device__ unsigned long long prism_tl[%d];
__device__ __forceinline__ unsigned long long PrismTlNow() {
  unsigned long long t;
  asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t));
  return t;
}
struct PrismTl {
  unsigned long long t0, c0, tf = 0, te = 0;
  __device__ PrismTl() {
    asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t0));
    c0 = clock64();
  }
  __device__ ~PrismTl() {
    if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;
    unsigned long long t1;
    asm volatile("mov.u64 %%0, %%%%globaltimer;" : "=l"(t1));
    const unsigned long long c1 = clock64();
    unsigned s;
    asm volatile("mov.u32 %%0, %%%%smid;" : "=r"(s));
    const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (b < %d) {
      unsigned long long* r = prism_tl + %d * b;
      r[0] = t0; r[1] = t1; r[2] = c0; r[3] = c1; r[4] = s; r[5] = tf; r[6] = te;
    }
  }
};
""" % (MAX_BLOCKS * FIELDS, MAX_BLOCKS, FIELDS)


def instrument(src, function):
    """src with PRELUDE before `function`'s definition and a PrismTl guard at its start (after
    the PDL wait when the kernel has one). In a kernel with a main loop
    (`for (int it = 0; it < kF; ++it) {`), also marks tf after the loop's first barrier in
    iteration 0 (the first stage has arrived) and te at the `CpAsyncWait<0>();` after the loop."""
    m = re.search(r'extern "C" __global__[^\n]*\b' + re.escape(function) + r'\(', src)
    if not m:
        raise RuntimeError(f"kernel {function} not found")
    body = src.index("{", m.end())
    nl = src.index("\n", body) + 1
    end = src.find('\nextern "C" __global__', nl)
    end = len(src) if end < 0 else end
    k = src[nl:end]
    pdl = re.match(r'(\s*(?:using namespace prism_dev;\s*)?prism_dev::PdlPrologue\(\);[^\n]*\n)', k)
    at = pdl.end() if pdl else 0
    k = k[:at] + "  PrismTl prism_tl_guard;\n" + k[at:]
    loop = k.find("for (int it = 0; it < kF; ++it) {")
    if loop >= 0:
        sync = k.find("__syncthreads();", loop)
        if sync >= 0:
            sync += len("__syncthreads();")
            k = k[:sync] + " if (it == 0) prism_tl_guard.tf = PrismTlNow();" + k[sync:]
        wait0 = k.find("CpAsyncWait<0>();", loop)
        if wait0 >= 0:
            k = k[:wait0] + "prism_tl_guard.te = PrismTlNow(); " + k[wait0:]
    return src[:m.start()] + PRELUDE + src[m.start():nl] + k + src[end:]


def module_of(fn, name):
    """The loaded module (bench_optimize's cache) whose function `name` is `fn` (a cupy
    RawKernel: its CUfunction is fn.kernel.ptr, as bench_optimize.launch_ex uses it)."""
    for m in bo._MODULES.values():
        try:
            if m.get_function(name).kernel.ptr == fn.kernel.ptr:
                return m
        except Exception:  # a module without that function
            continue
    raise RuntimeError(f"no loaded module holds {name}")


def records(mod, nblocks):
    ptr = mod.get_global("prism_tl")
    a = cupy.ndarray((MAX_BLOCKS * FIELDS,), dtype=cupy.uint64, memptr=ptr).get()
    return [[int(v) for v in a[FIELDS * b:FIELDS * b + FIELDS]] for b in range(nblocks)]


def summary(rec, clock_ghz):
    t0 = min(r[0] for r in rec)
    q = lambda xs, f: round(sorted(xs)[min(len(xs) - 1, int(f * len(xs)))], 3)
    five = lambda xs: [q(xs, 0), q(xs, 0.1), q(xs, 0.5), q(xs, 0.9), q(xs, 1)]
    starts = [(r[0] - t0) / 1e3 for r in rec]
    ends = [(r[1] - t0) / 1e3 for r in rec]
    durs = [(r[3] - r[2]) / clock_ghz / 1e3 for r in rec]
    sms = {}
    for r in rec:
        sms[r[4]] = sms.get(r[4], 0) + 1
    s = dict(blocks=len(rec), sms=len(sms), max_blocks_per_sm=max(sms.values()),
             start_us=five(starts), end_us=five(ends), dur_us=five(durs))
    if all(r[5] for r in rec):  # the first stage's arrival, after the block's start
        s["first_data_us"] = five([(r[5] - r[0]) / 1e3 for r in rec])
    if all(r[6] for r in rec):  # the loop's end, and from there to the block's end
        s["loop_end_us"] = five([(r[6] - t0) / 1e3 for r in rec])
        s["after_loop_us"] = five([(r[1] - r[6]) / 1e3 for r in rec])
    return s


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(bo.CARRY, "var")
    clock_ghz = float(os.environ.get("SM_GHZ", "1.98"))
    out = []
    for w, sets, folders in variant_groups(root):
        for tag, folder in folders:
            try:
                with open(os.path.join(folder, "kernel.cu")) as f:
                    src = f.read()
                with open(os.path.join(folder, "launch.json")) as f:
                    first = json.load(f)["kernels"][0]
                inst = os.path.join("/tmp", "tl_" + os.path.basename(folder))
                os.makedirs(inst, exist_ok=True)
                with open(os.path.join(inst, "kernel.cu"), "w") as f:
                    f.write(instrument(src, first["function"]))
                with open(os.path.join(inst, "launch.json"), "w") as f:
                    with open(os.path.join(folder, "launch.json")) as g:
                        f.write(g.read())
                plain = bo.Program(folder, bo.INPUTS[w["name"]])
                p = bo.Program(inst, bo.INPUTS[w["name"]])
                err = bo.check(p, w)
                t_plain = harness.graph_us(plain, sets)
                t_whole = harness.graph_us(p, sets)
                t_first = harness.graph_us(Subset(p, {0}), sets)
                mod = module_of(p.kernels[0][0], first["function"])
                nblocks = first["grid"][0] * first["grid"][1] * first["grid"][2]
                # The whole program once more in the harness's graph; the records are those of
                # the last call (the last input set).
                harness.graph_us(p, sets)
                torch.cuda.synchronize()
                rec = records(mod, nblocks)
                s = summary(rec, clock_ghz)
                row = dict(workload=w["name"], bs=w["bs"], variant=tag, relerr=err,
                           plain_us=round(t_plain, 2), instrumented_us=round(t_whole, 2),
                           first_alone_us=round(t_first, 2), **s, records=rec)
                print(f"{w['name']:15s} b={w['bs']} {tag:28s} plain {t_plain:6.2f} instr {t_whole:6.2f} "
                      f"k0 alone {t_first:6.2f} us  err {err:.1e}  blocks {s['blocks']} on {s['sms']} SMs "
                      f"(<= {s['max_blocks_per_sm']}/SM)", flush=True)
                for key in ("start_us", "first_data_us", "loop_end_us", "after_loop_us", "end_us", "dur_us"):
                    if key in s:
                        print(f"    {key:14s} [min p10 p50 p90 max] {s[key]}", flush=True)
            except Exception as e:  # recorded, not fatal
                row = dict(workload=w["name"], bs=w["bs"], variant=tag, error=str(e)[:400])
                print(json.dumps(row), flush=True)
            out.append(row)
        del sets
        torch.cuda.empty_cache()
    path = os.path.join(os.environ.get("OUT", "."), "block_timeline.json")
    with open(path, "w") as f:
        json.dump(out, f)
    print("wrote", path)


if __name__ == "__main__":
    main()
