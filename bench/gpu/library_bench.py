"""Library kernels against PyTorch, timed like the harness (2026-12-06, issue 7).

Run on the GPU machine from the repository root after `prism optimize FILE --gpu 0 --out
<root>/out_<name>` for each program below (bench/gpu/concat_check.sh does that for every
.prism file in the folder; the files are the `PROGRAMS` texts, written by `--write DIR` here):

    PYTHONUNBUFFERED=1 python3 bench/gpu/library_bench.py .carry/opt/concat

For each program that prism ran as one library kernel (a reduction or norm over another dim
than the last, or the fallback's matmul / elementwise kernel for shapes the templates refuse):
prism's kernel (bench_optimize.Program on the output directory) and the PyTorch expression on
the same rotated input sets (harness.graph_us), the results compared (relative error of the
L2 norm, as the harness), and the bytes per call over the time.
"""
import os, sys, json

PROGRAMS = {
    "colsum": "X = input f16[64, 4096]\nY = sum(X, 0)\noutput Y\n",
    "bigsum": "X = input f16[4096, 4096]\nY = sum(X, 0)\noutput Y\n",
    "softmax0": "X = input f16[4096, 1024]\nY = softmax(X, 0)\noutput Y\n",
    "rms1": "X = input bf16[8, 1000, 40]\nY = rms_norm(X, 1, eps=1e-05)\noutput Y\n",
    "mm_odd": "A = input f16[1024, 1000]\nB = input f16[1000, 1003]\nY = matmul(A, B)\noutput Y\n",
    "mm_oddk": "A = input f16[1024, 1001]\nB = input f16[1001, 1024]\nY = matmul(A, B)\noutput Y\n",
    "mm_big": "A = input bf16[2048, 1000]\nB = input bf16[1000, 2001]\nY = matmul(A, B)\noutput Y\n",
    "add_odd": "X = input f32[4096, 1001]\nb = input f32[1, 1001]\nY = add(X, b)\noutput Y\n",
    # An LM head over a vocabulary whose size is not a multiple of 8 (the fallback's matmul;
    # since the fifteenth session its rows staged by cp.async from their aligned 16-byte
    # chunks), and the same with 32000 columns (a block-graph family: on the H200 of 2026-12-06
    # one GEMM kernel with warps along N) to compare; at batch 1, GPT-2's (50257 columns, K 768),
    # and a bf16 matmul of 16 rows with odd K and N.
    "lm_head": "X = input f16[8, 4096]\nW = input f16[4096, 32001]\nY = matmul(X, W)\noutput Y\n",
    "lm_head_aligned": "X = input f16[8, 4096]\nW = input f16[4096, 32000]\nY = matmul(X, W)\noutput Y\n",
    "lm_head_b1": "X = input f16[1, 4096]\nW = input f16[4096, 32001]\nY = matmul(X, W)\noutput Y\n",
    "lm_head_gpt2": "X = input f16[8, 768]\nW = input f16[768, 50257]\nY = matmul(X, W)\noutput Y\n",
    "skinny_bf16": "X = input bf16[16, 5001]\nW = input bf16[5001, 3001]\nY = matmul(X, W)\noutput Y\n",
    # Few 64 x 64 tiles over a long K (the sixteenth session's library_matmul_cluster_split):
    # 16 tiles (clusters of 8), 32 tiles at one row (clusters of 4); and 101 tiles, which only
    # the split with two blocks per SM splits (library_matmul_split_blocks_per_sm, clusters of 2).
    "fewtile_f16": "X = input f16[8, 8192]\nW = input f16[8192, 1003]\nY = matmul(X, W)\noutput Y\n",
    "fewtile_b1": "X = input f16[1, 4096]\nW = input f16[4096, 2001]\nY = matmul(X, W)\noutput Y\n",
    "midtile_f16": "X = input f16[8, 4096]\nW = input f16[4096, 6401]\nY = matmul(X, W)\noutput Y\n",
}

if len(sys.argv) > 2 and sys.argv[1] == "--write":
    os.makedirs(sys.argv[2], exist_ok=True)
    for n, t in PROGRAMS.items():
        with open(os.path.join(sys.argv[2], n + ".prism"), "w") as f:
            f.write(t)
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_optimize as bo  # noqa: E402
import torch  # noqa: E402

harness = bo.harness
F16, BF16, F32 = torch.float16, torch.bfloat16, torch.float32


def r(*shape, dtype=F16):
    return lambda: torch.randn(*shape, dtype=dtype, device="cuda")


def rms(x, dim, eps):
    xf = x.float()
    return (xf * torch.rsqrt((xf * xf).mean(dim, keepdim=True) + eps)).to(x.dtype)


CASES = {  # name: (makers, torch fn, input names)
    "colsum": ([r(64, 4096)], lambda x: torch.sum(x, 0, keepdim=True), ["X"]),
    "bigsum": ([r(4096, 4096)], lambda x: torch.sum(x, 0, keepdim=True), ["X"]),
    "softmax0": ([r(4096, 1024)], lambda x: torch.softmax(x, 0), ["X"]),
    "rms1": ([r(8, 1000, 40, dtype=BF16)], lambda x: rms(x, 1, 1e-5), ["X"]),
    "mm_odd": ([r(1024, 1000), r(1000, 1003)], lambda a, b: a @ b, ["A", "B"]),
    "mm_oddk": ([r(1024, 1001), r(1001, 1024)], lambda a, b: a @ b, ["A", "B"]),
    "mm_big": ([r(2048, 1000, dtype=BF16), r(1000, 2001, dtype=BF16)], lambda a, b: a @ b,
               ["A", "B"]),
    "add_odd": ([r(4096, 1001, dtype=F32), r(1, 1001, dtype=F32)], lambda x, b: x + b, ["X", "b"]),
    "lm_head": ([r(8, 4096), r(4096, 32001)], lambda a, b: a @ b, ["X", "W"]),
    "lm_head_aligned": ([r(8, 4096), r(4096, 32000)], lambda a, b: a @ b, ["X", "W"]),
    "lm_head_b1": ([r(1, 4096), r(4096, 32001)], lambda a, b: a @ b, ["X", "W"]),
    "lm_head_gpt2": ([r(8, 768), r(768, 50257)], lambda a, b: a @ b, ["X", "W"]),
    "skinny_bf16": ([r(16, 5001, dtype=BF16), r(5001, 3001, dtype=BF16)], lambda a, b: a @ b,
                    ["X", "W"]),
    "fewtile_f16": ([r(8, 8192), r(8192, 1003)], lambda a, b: a @ b, ["X", "W"]),
    "fewtile_b1": ([r(1, 4096), r(4096, 2001)], lambda a, b: a @ b, ["X", "W"]),
    "midtile_f16": ([r(8, 4096), r(4096, 6401)], lambda a, b: a @ b, ["X", "W"]),
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else ".carry/opt/concat"
    # ALIASES="lm_head_old=lm_head ...": also time <root>/out_lm_head_old (a kernel prepared
    # elsewhere, e.g. by an earlier build) on lm_head's inputs and PyTorch expression.
    for pair in os.environ.get("ALIASES", "").split():
        alias, name = pair.split("=")
        CASES[alias] = CASES[name]
    res = {}
    for name, (makers, fn, inputs) in CASES.items():
        folder = os.path.join(root, f"out_{name}")
        if not os.path.exists(os.path.join(folder, "launch.json")):
            print(name, "no single-kernel prism output", flush=True)
            continue
        p = bo.Program(folder, inputs)
        make = lambda: tuple(m() for m in makers)
        a = make()
        out = fn(*a)
        nbytes = sum(t.numel() * t.element_size() for t in a) + out.numel() * out.element_size()
        sets = harness.input_sets(make, nbytes)
        got = p(*sets[0]).float()
        want = fn(*sets[0]).float()
        err = ((got - want).norm() / want.norm()).item()
        tp = harness.graph_us(p, sets)
        tt = harness.graph_us(fn, sets)
        res[name] = dict(bytes=nbytes, sets=len(sets), relerr=err, prism_us=tp, torch_us=tt,
                         prism_over_torch=tp / tt, prism_TBps=nbytes / tp / 1e6)
        print(name, json.dumps(res[name]), flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "library_bench.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
