#!/usr/bin/env python3
"""Issue 6 acceptance benchmark: `prism search --verify --json` on every workload at b=1 and
b=8; prints a Markdown table (time, stage times, structure of the best family, funnel) and
writes the raw JSON per row to OUT_DIR (default: bench/search/results/).

  python3 bench/search/acceptance.py [--prism build-release/bin/prism] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys

WORKLOADS = ["rmsnorm_linear", "gated_mlp", "lora", "ntrans", "gqa", "qknorm_gqa"]
EXPECTED_KERNELS = {"rmsnorm_linear": 1, "gated_mlp": 1, "lora": 1, "ntrans": 1, "gqa": 2,
                    "qknorm_gqa": 2}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prism", default="build-release/bin/prism")
    ap.add_argument("--out", default="bench/search/results")
    ap.add_argument("--target", default="h200")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("| workload | b | search s (generate / prove / prune) | best family | kernels (expected) | "
          "cost µs (ranking) | verified rel. err vs f64 | funnel: generated → pruned_abstract → structures → "
          "mapped → proved → pruned by rule → survivors |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for b in (1, 8):
        for w in WORKLOADS:
            cmd = [args.prism, "search", "--workload", w, "--batch", str(b), "--target",
                   args.target, "--verify", "--json"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"| {w} | {b} | error: {p.stderr.strip()} |||||")
                ok = False
                continue
            j = json.loads(p.stdout)
            with open(os.path.join(args.out, f"{w}_b{b}.json"), "w") as f:
                json.dump({k: v for k, v in j.items() if k != "families"} |
                          {"best": j["families"][0] if j["families"] else None}, f, indent=1)
            f = j["funnel"]
            best = j["families"][0]
            st = j["stages_s"]
            pruned = sum(f["pruned_by_rule"].values())
            kernels = best["kernels"]
            good = kernels == EXPECTED_KERNELS[w]
            ok = ok and good and j["elapsed_s"] <= 30
            a = " ".join(f"{k}={v}" for k, v in best["assignment"].items())
            print(f"| {w} | {b} | {j['elapsed_s']:.2f} ({st['generate']:.2f} / {st['prove']:.2f} / "
                  f"{st['prune']:.2f}) | {a} | {kernels} ({EXPECTED_KERNELS[w]}){'' if good else ' ✗'} | "
                  f"{best['cost_us']:.3f} | {j['verified']['relative_error']:.1e} | "
                  f"{f['generated']:,} → {f['pruned_abstract']:,} → {f['structures']} → "
                  f"{f['mapped']} → {f['proved']} → {pruned} → {f['survivors']} |")
            sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
