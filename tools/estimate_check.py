#!/usr/bin/env python3
"""How well the no-GPU selection ranks: the estimate's and the lower bound's first candidate
against the fastest measured one, per row of a device run (docs/optimize.md, "The estimate").

    tools/estimate_check.py RUN [RUN ...] [--prism BIN] [--target NAME]

RUN is a device run's folder holding po.tgz (bench/gpu/run_session.sh), a po.tgz, or a folder of
`prism optimize --gpu 0 --out DIR` outputs (each with report.json). For every row it prints the
measured time of the estimate's first candidate and of the lower bound's first candidate, each
divided by the fastest measured candidate, and their geometric means over the rows; then the
fastest candidate's rank in the estimate's order, and the best of the estimate's first 64 over
the fastest (what measuring only those would have lost).

With --prism, the estimates are not read from the reports but recomputed by that binary
(`prism optimize --workload W --batch B --no-gpu --json`): the way to check a changed model
against earlier runs, including runs whose reports predate `estimate_us`. Only candidates that
both the run measured and the binary samples are ranked (the tuner's loop-variant round
measures variants that the no-GPU path does not generate); a row where fewer than 80 % of the
candidates sampled now were measured is reported: the sampler changed since the run.

Exit status: 0, or 2 for a bad argument (a RUN that does not exist or holds no report, a
--prism that cannot run) with a message on stderr.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile


class Error(Exception):
    """A bad argument or input file: the message says what and where."""


def load_reports(run):
    """{row name: report dict} of one run."""
    path = run
    if os.path.isdir(run) and os.path.isfile(os.path.join(run, "po.tgz")):
        path = os.path.join(run, "po.tgz")
    reports = {}
    try:
        if os.path.isfile(path):
            with tarfile.open(path) as tar:
                for m in tar.getmembers():
                    if m.name.endswith("/report.json"):
                        row = os.path.basename(os.path.dirname(m.name))
                        reports[row] = json.load(tar.extractfile(m))
        elif os.path.isdir(path):
            for row in sorted(os.listdir(path)):
                f = os.path.join(path, row, "report.json")
                if os.path.isfile(f):
                    with open(f) as fh:
                        reports[row] = json.load(fh)
        else:
            raise Error(f"'{run}' does not exist (expected a device run's folder, a po.tgz or a "
                        "folder of prism optimize outputs)")
    except tarfile.TarError:
        raise Error(f"'{path}' is neither a folder nor a readable tar archive of reports")
    except json.JSONDecodeError as e:
        raise Error(f"a report.json under '{run}' is not JSON: {e}")
    if not reports:
        raise Error(f"no report.json under '{run}' (expected ROW/report.json, as prism optimize "
                    "--out ROW writes)")
    return reports


def key(c):
    return (c["family"], tuple(sorted(c["assignment"].items())), c.get("codegen_variant", ""))


def workload_of(report):
    """(workload, batch) of a built-in row's report, or None."""
    m = re.match(r"<builtin (\w+) b=(\d+)>", report["program"]["label"])
    return (m.group(1), int(m.group(2))) if m else None


def recompute(prism, report, target):
    wb = workload_of(report)
    if wb is None:
        return None
    with tempfile.TemporaryDirectory() as out:
        cmd = [prism, "optimize", "--workload", wb[0], "--batch", str(wb[1]), "--no-gpu", "--json",
               "--target", target or report["target"]["name"], "--out", out]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise Error(f"cannot run --prism '{prism}': {e.strerror}")
        if p.returncode != 0:
            raise Error(f"'{' '.join(cmd[:6])} …' failed (exit {p.returncode}): {p.stderr.strip()}")
        return {key(c): c for c in json.loads(p.stdout)["candidates"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--prism", help="recompute the estimates with this prism binary")
    ap.add_argument("--target", help="with --prism: the target (default: each report's)")
    args = ap.parse_args()
    try:
        for run in args.runs:
            check_run(run, args)
    except Error as e:
        print(f"estimate_check: error: {e}", file=sys.stderr)
        return 2
    return 0


def check_run(run, args):
    """Prints one run's table (see the module comment)."""
    reports = load_reports(run)
    print(f"== {run}")
    print(f"{'row':<20} {'measured':>8} {'fastest':>8} {'estimate':>9} {'bound':>7} {'rank':>5} "
          f"{'top 64':>6}  estimate's pick")
    logs_e, logs_b = [], []
    for row, r in sorted(reports.items()):
        measured = {key(c): c for c in r["candidates"] if c.get("measured_us")}
        if not measured:
            continue
        if args.prism:
            now = recompute(args.prism, r, args.target)
            if now is None:
                continue
            pool = [(measured[k]["measured_us"], now[k]["estimate_us"], now[k]["cost_us"], k)
                    for k in measured if k in now]
            if len(pool) < 0.8 * len(now):
                print(f"{row:<20} only {len(pool)} of the {len(now)} candidates sampled now "
                      "were measured: the sampler changed since the run")
        else:
            pool = [(c["measured_us"], c.get("estimate_us"), c["cost_us"], k)
                    for k, c in measured.items() if c.get("estimate_us") is not None]
        if not pool:
            print(f"{row:<20} no estimates (run with --prism)")
            continue
        fastest = min(p[0] for p in pool)
        by_e = min(pool, key=lambda p: (p[1], p[2]))  # the selection's order (tune.cc)
        # Ties of the bound go to the earlier candidate, as the selection by the bound did.
        by_b = min(pool, key=lambda p: p[2])
        # Where the fastest sits in the estimate's order, and the best of its first 64.
        order = sorted(pool, key=lambda p: (p[1], p[2]))
        rank = 1 + next(i for i, p in enumerate(order) if p[0] == fastest)
        top64 = min(p[0] for p in order[:64]) / fastest
        logs_e.append(math.log(by_e[0] / fastest))
        logs_b.append(math.log(by_b[0] / fastest))
        pick = " ".join(f"{n}={v}" for n, v in by_e[3][1])
        print(f"{row:<20} {len(pool):>8} {fastest:>8.2f} {by_e[0] / fastest:>9.3f} "
              f"{by_b[0] / fastest:>7.3f} {rank:>5} {top64:>6.3f}  f{by_e[3][0]} {pick}")
    if logs_e:
        print(f"{'geomean':<20} {'':>8} {'':>8} {math.exp(sum(logs_e) / len(logs_e)):>9.3f} "
              f"{math.exp(sum(logs_b) / len(logs_b)):>7.3f}")


if __name__ == "__main__":
    sys.exit(main())
