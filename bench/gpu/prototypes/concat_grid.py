"""Probe: the concat copy kernel's grid (2026-12-06). The kernel is grid-stride (4 units in
flight per thread and step), so any grid is correct; codegen caps it at 528 blocks (4 per SM on
132 SMs). Times the kv and big copies of bench/gpu/concat_bench.py at several grids, with
torch.cat beside them:

    PYTHONUNBUFFERED=1 python3 bench/gpu/prototypes/concat_grid.py .carry/opt/concat
"""
import os, sys, json
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench_optimize as bo  # noqa: E402
import concat_bench as cb  # noqa: E402  (its cases; it runs its own timing on import)
import torch  # noqa: E402

harness = bo.harness
root = sys.argv[1] if len(sys.argv) > 1 else ".carry/opt/concat"
res = {}
for name, (make, dim, inputs) in cb.cases.items():
    p = bo.Program(os.path.join(root, f"out_{name}"), inputs)
    a = make()
    nbytes = 2 * sum(t.numel() * t.element_size() for t in a)
    units = nbytes // 2 // 16
    sets = harness.input_sets(make, nbytes)
    fn, grid, block, smem, names, regs = p.kernels[0]
    t = {"units": units, "torch_cat": harness.graph_us(lambda x, y: torch.cat((x, y), dim), sets)}
    for g in (528, 1056, 2112, (units + 1023) // 1024, (units + 255) // 256):
        p.kernels[0] = (fn, (g, 1, 1), block, smem, names, regs)
        got = p(*sets[0])
        torch.cuda.synchronize()
        assert torch.equal(got, torch.cat(sets[0], dim)), (name, g)
        t[f"grid {g}"] = harness.graph_us(p, sets)
    res[name] = t
    print(name, json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in t.items()}), flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "concat_grid.json"), "w") as f:
    json.dump(res, f, indent=1)
