"""Probe: NVRTC compile throughput with T threads of one process against P processes.

Run on the GPU machine from the repository root (sources in .carry/nv/*/kernel.cu, e.g. from
codegen_emit): PYTHONUNBUFFERED=1 python3 bench/gpu/nvrtc_scaling.py
Each configuration compiles every source REPS times (sm_90a, prism's NVRTC options) and prints
compiles per second. ctypes releases the GIL around nvrtcCompileProgram.
"""
import ctypes, glob, multiprocessing as mp, os, sys, threading, time

LIB = next(p for p in ["/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib/libnvrtc.so.13",
                       "/usr/local/cuda/lib64/libnvrtc.so", "libnvrtc.so.13"] if os.path.exists(p) or "/" not in p)
OPTS = [b"--gpu-architecture=sm_90a", b"-std=c++17", b"--ptxas-options=-v", b"-default-device"]


def compile_one(nv, src):
    prog = ctypes.c_void_p()
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None) == 0
    arr = (ctypes.c_char_p * len(OPTS))(*OPTS)
    rc = nv.nvrtcCompileProgram(prog, len(OPTS), arr)
    n = ctypes.c_size_t()
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, n.value


def run_threads(srcs, t):
    nv = ctypes.CDLL(LIB)
    jobs = list(srcs)
    lock = threading.Lock()
    def work():
        while True:
            with lock:
                if not jobs:
                    return
                s = jobs.pop()
            rc, n = compile_one(nv, s)
            assert rc == 0 and n > 0, rc
    ths = [threading.Thread(target=work) for _ in range(t)]
    t0 = time.time()
    for th in ths: th.start()
    for th in ths: th.join()
    return time.time() - t0


def proc_worker(args):
    srcs = args
    nv = ctypes.CDLL(LIB)
    for s in srcs:
        rc, n = compile_one(nv, s)
        assert rc == 0 and n > 0, rc
    return len(srcs)


def run_procs(srcs, p):
    chunks = [srcs[i::p] for i in range(p)]
    t0 = time.time()
    with mp.get_context("fork").Pool(p) as pool:
        pool.map(proc_worker, chunks)
    return time.time() - t0


def main():
    srcs = [open(f, "rb").read() for f in sorted(glob.glob(".carry/nv/*/kernel.cu"))]
    reps = int(os.environ.get("REPS", "4"))
    work = srcs * reps
    print(f"{len(srcs)} sources x {reps}; nproc {os.cpu_count()}; {LIB}")
    run_threads(srcs[:2], 2)  # warm the libraries
    configs = os.environ.get("CONFIGS", "t1 t4 t8 t15 p4 p8 p15").split()
    for kind, n in [("threads" if c[0] == "t" else "processes", int(c[1:])) for c in configs]:
        dt = run_threads(work, n) if kind == "threads" else run_procs(work, n)
        print(f"{kind:9s} {n:2d}: {len(work)} compiles in {dt:6.2f} s = {len(work) / dt:5.1f} per s",
              flush=True)


if __name__ == "__main__":
    main()
