"""Probe: the per-replay cost of the harness's graphs, prism against the baselines (2026-12-06).

Run on the GPU machine from the repository root after extracting a po.tgz into .carry/po:

    PYTHONUNBUFFERED=1 python3 bench/gpu/prototypes/replay_cost.py [.carry/po] [rows]

harness.graph_us times one graph of n calls (n = the harness's rotation count, 2-4 on the GEMV
rows) and divides by n, so each replay's own cost (graph launch, the first kernel's start, the
drain to the end event) is spread over n calls: t(n) = c + O/n. For each row this times prism's
selection, torch.compile (default mode) and eager at the harness's n and at 8 and 16 sets,
and derives O and c; also an empty kernel's graph (the floor of O), and prism with programmatic
dependent launch off on every kernel (whether PDL changes O).
"""
import os, sys, json
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench_optimize as bo  # noqa: E402
import torch  # noqa: E402

harness = bo.harness
po = sys.argv[1] if len(sys.argv) > 1 else ".carry/po"
suite = {f"{w['name']}_b{w['bs']}": w for w in bo.workloads.suite()}
rows = (sys.argv[2].split(",") if len(sys.argv) > 2 else
        ["gated_mlp_b1", "lora_b1", "rmsnorm_linear_b1", "rmsnorm_linear_b8", "lora_b8", "gated_mlp_b8"])


def fit(t_small, n_small, t_big, n_big):
    o = (t_small - t_big) / (1.0 / n_small - 1.0 / n_big)
    return o, t_big - o / n_big


res = {}
z = torch.zeros(1, device="cuda")
empty = {}
for n in (2, 8):
    empty[n] = harness.graph_us(lambda t: t.add_(1), [(z,)] * n)
res["empty_kernel"] = {"t2": empty[2], "t8": empty[8], "O_c": fit(empty[2], 2, empty[8], 8)}
print("empty kernel", res["empty_kernel"], flush=True)
for r in rows:
    w = suite[r]
    p = bo.Program(os.path.join(po, r), bo.INPUTS[w["name"]])
    torch.manual_seed(0)
    sets = harness.input_sets(w["make"], w["bytes"])
    n = len(sets)
    s8 = sets + [w["make"]() for _ in range(8 - n)]
    s16 = s8 + [w["make"]() for _ in range(8)]
    comp = torch.compile(w["ref"])
    comp(*sets[0])
    t = {"n": n}
    impls = {"prism": p, "compile": comp, "eager": w["ref"]}
    for name, f in impls.items():
        a = harness.graph_us(f, sets)
        b = harness.graph_us(f, s8)
        c = harness.graph_us(f, s16)
        o, base = fit(a, n, c, 16)
        t[name] = {"tn": round(a, 2), "t8": round(b, 2), "t16": round(c, 2), "O": round(o, 2), "c": round(base, 2)}
    pdl = [cl[1] for cl in p.clusters]
    p.clusters = [(cl[0], False) for cl in p.clusters]
    a = harness.graph_us(p, sets)
    c = harness.graph_us(p, s16)
    o, base = fit(a, n, c, 16)
    t["prism_no_pdl"] = {"tn": round(a, 2), "t16": round(c, 2), "O": round(o, 2), "c": round(base, 2), "had_pdl": pdl}
    res[r] = t
    print(r, json.dumps(t), flush=True)
    del sets, s8, s16
with open(os.path.join(os.environ.get("OUT", "/tmp"), "replay_cost.json"), "w") as f:
    json.dump(res, f, indent=1)
