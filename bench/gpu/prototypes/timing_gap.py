"""Probe: why the tuner's measurement of a selection is lower than the harness's (2026-12-05).

Run on the GPU machine from the repository root after extracting a po.tgz into .carry/po:

    PYTHONUNBUFFERED=1 python3 bench/gpu/prototypes/timing_gap.py [.carry/po] [rows]

For each selected program, times the same kernels with harness.graph_us under variations:
  std       harness.input_sets (random, independent sets), as bench_optimize does
  again     the same call once more (run-to-run spread on one machine)
  same      every set a copy of set 0's contents (as the tuner's runtime does)
  sets8     eight independent sets instead of the harness's count
  eager_first  after running the workload's eager reference on the same sets (as harness.run)
"""
import os, sys, json
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench_optimize as bo  # noqa: E402
import torch  # noqa: E402

harness = bo.harness
po = sys.argv[1] if len(sys.argv) > 1 else ".carry/po"
rows = (sys.argv[2].split(",") if len(sys.argv) > 2 else
        ["lora_b1", "lora_b8", "rmsnorm_linear_b1", "rmsnorm_linear_b8", "gated_mlp_b1", "gated_mlp_b8"])
suite = {f"{w['name']}_b{w['bs']}": w for w in bo.workloads.suite()}
res = {}
for r in rows:
    w = suite[r]
    p = bo.Program(os.path.join(po, r), bo.INPUTS[w["name"]])
    torch.manual_seed(0)
    sets = harness.input_sets(w["make"], w["bytes"])
    t = {"n_sets": len(sets)}
    t["std"] = harness.graph_us(p, sets)
    t["again"] = harness.graph_us(p, sets)
    same = [tuple(x.clone() for x in sets[0]) for _ in sets]
    t["same"] = harness.graph_us(p, same)
    del same
    s8 = [w["make"]() for _ in range(8)]
    t["sets8"] = harness.graph_us(p, s8)
    del s8
    harness.graph_us(w["ref"], sets)
    t["eager_first"] = harness.graph_us(p, sets)
    t["std3"] = harness.graph_us(p, sets)
    res[r] = t
    print(r, " ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()), flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "timing_gap.json"), "w") as f:
    json.dump(res, f, indent=1)
