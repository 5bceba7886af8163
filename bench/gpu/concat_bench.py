"""The concat copy kernel against torch.cat, timed like the harness (2026-12-06).

Run on the GPU machine from the repository root after `prism optimize FILE --gpu 0 --out
.carry/opt/concat/out_<name>` for kv.prism and big.prism (bench/gpu/concat_check.sh does both):

    PYTHONUNBUFFERED=1 python3 bench/gpu/concat_bench.py .carry/opt/concat

For each: prism's kernel (bench_optimize.Program on the output directory) and torch.cat on the
same rotated input sets (harness.graph_us), the result checked for equality, and the achieved
bandwidth (bytes read + written per call / time).
"""
import os, sys, json
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_optimize as bo  # noqa: E402
import torch  # noqa: E402

harness = bo.harness
F16 = torch.float16
cases = {
    "kv": (lambda: (torch.randn(32, 2047, 128, dtype=F16, device="cuda"),
                    torch.randn(32, 1, 128, dtype=F16, device="cuda")), 1, ["Kc", "Kn"]),
    "big": (lambda: (torch.randn(4096, 4096, dtype=F16, device="cuda"),
                     torch.randn(4096, 1024, dtype=F16, device="cuda")), -1, ["A", "B"]),
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else ".carry/opt/concat"
    res = {}
    for name, (make, dim, inputs) in cases.items():
        folder = os.path.join(root, f"out_{name}")
        if not os.path.exists(os.path.join(folder, "launch.json")):
            print(name, "no prism output", flush=True)
            continue
        p = bo.Program(folder, inputs)
        a = make()
        nbytes = 2 * sum(t.numel() * t.element_size() for t in a)  # read + write
        sets = harness.input_sets(make, nbytes)
        got = p(*sets[0])
        torch.cuda.synchronize()
        same = bool(torch.equal(got, torch.cat(sets[0], dim)))
        tp = harness.graph_us(p, sets)
        tt = harness.graph_us(lambda x, y: torch.cat((x, y), dim), sets)
        res[name] = dict(bytes=nbytes, sets=len(sets), equal=same, prism_us=tp, torch_cat_us=tt,
                         prism_TBps=nbytes / tp / 1e6, torch_TBps=nbytes / tt / 1e6)
        print(name, json.dumps(res[name]), flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "concat_bench.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
