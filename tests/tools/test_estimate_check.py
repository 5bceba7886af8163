"""tools/estimate_check.py: its table on hand-made reports, packed and unpacked, its errors,
and --prism's recomputation on a real `prism optimize --no-gpu` output."""
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "estimate_check.py")


def run_tool(*args):
    p = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def candidate(family, x, cost, estimate, measured=None):
    c = {"family": family, "assignment": {"x": x}, "cost_us": cost, "estimate_us": estimate}
    if measured is not None:
        c["measured_us"] = measured
    return c


# Two rows of hand-made candidates (family, x, cost lower bound, estimate, measured µs), and the
# line the tool prints for each: the estimate's first over the fastest, the bound's first over
# the fastest, the fastest's rank in the estimate's order, the best of the first 64.
ROWS = [
    ("a_b1",
     [candidate(1, 1, 1.0, 5.0, 12.0), candidate(1, 2, 2.0, 4.0, 10.0),
      candidate(2, 1, 3.0, 6.0, 8.0)],
     # estimate: x=2 (10 / 8); bound: family 1 x=1 (12 / 8); the fastest is third by estimate.
     "a_b1                        3     8.00     1.250   1.500     3  1.000  f1 x=2"),
    ("b_b8",
     [candidate(1, 1, 1.0, 2.0, 5.0), candidate(1, 2, 0.5, 2.0, 4.0),
      candidate(1, 3, 0.1, 1.0)],  # not measured: left out
     # the estimates tie; the tie goes to the lower bound (x=2), as in the selection
     "b_b8                        2     4.00     1.000   1.000     1  1.000  f1 x=2"),
]
GEOMEAN = (f"geomean                                    {math.sqrt(1.25):.3f}   "
           f"{math.sqrt(1.5):.3f}")


def write_rows(folder):
    for name, candidates, _ in ROWS:
        os.makedirs(os.path.join(folder, name))
        with open(os.path.join(folder, name, "report.json"), "w") as f:
            json.dump({"candidates": candidates}, f)


class EstimateCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def expect_table(self, run):
        rc, out, err = run_tool(run)
        self.assertEqual((rc, err), (0, ""))
        lines = out.splitlines()
        self.assertEqual(lines[0], f"== {run}")
        self.assertEqual(lines[2:], [line for _, _, line in ROWS] + [GEOMEAN])

    def test_table_from_a_folder_of_outputs(self):
        write_rows(os.path.join(self.dir, "po"))
        self.expect_table(os.path.join(self.dir, "po"))

    def test_table_from_a_run_folder_with_po_tgz(self):
        write_rows(os.path.join(self.dir, "po"))
        run = os.path.join(self.dir, "run")
        os.makedirs(run)
        with tarfile.open(os.path.join(run, "po.tgz"), "w:gz") as tar:
            tar.add(os.path.join(self.dir, "po"), arcname="po")
        self.expect_table(run)

    def test_errors(self):
        os.makedirs(os.path.join(self.dir, "empty"))
        with open(os.path.join(self.dir, "notes.txt"), "w") as f:
            f.write("not a run\n")
        write_rows(os.path.join(self.dir, "po"))
        cases = [
            ([os.path.join(self.dir, "missing")],
             f"'{self.dir}/missing' does not exist (expected a device run's folder, a po.tgz or "
             "a folder of prism optimize outputs)"),
            ([os.path.join(self.dir, "empty")],
             f"no report.json under '{self.dir}/empty' (expected ROW/report.json, as prism "
             "optimize --out ROW writes)"),
            ([os.path.join(self.dir, "notes.txt")],
             f"'{self.dir}/notes.txt' is neither a folder nor a readable tar archive of reports"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = run_tool(*args)
                self.assertEqual(rc, 2)
                self.assertEqual(err, f"estimate_check: error: {message}\n")

    @unittest.skipUnless(os.environ.get("PRISM_BIN"), "PRISM_BIN (the prism binary) not set")
    def test_prism_recomputes_the_estimates(self):
        prism = os.environ["PRISM_BIN"]
        out = os.path.join(self.dir, "po", "ntrans_b1")
        p = subprocess.run([prism, "optimize", "--workload", "ntrans", "--batch", "1", "--no-gpu",
                            "--out", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(out, "report.json")
        with open(path) as f:
            report = json.load(f)
        # Measured times in the reverse of the estimate's order: its first is the slowest. The
        # report's own estimates are replaced by the opposite order, which --prism must not read.
        cands = sorted(report["candidates"], key=lambda c: (c["estimate_us"], c["cost_us"]))
        self.assertGreaterEqual(len(cands), 4)
        for i, c in enumerate(cands):
            c["measured_us"] = 10.0 - i
            c["estimate_us"] = 100.0 - i
        with open(path, "w") as f:
            json.dump(report, f)
        rc, text, err = run_tool(os.path.join(self.dir, "po"), "--prism", prism)
        self.assertEqual((rc, err), (0, ""))
        row = text.splitlines()[2].split()
        n = len(cands)
        self.assertEqual(row[:6], ["ntrans_b1", str(n), f"{10.0 - (n - 1):.2f}",
                                   f"{10.0 / (10.0 - (n - 1)):.3f}", row[4], str(n)])
        # Without --prism the report's (replaced) estimates rank: their first is the fastest.
        rc, text, err = run_tool(os.path.join(self.dir, "po"))
        self.assertEqual(text.splitlines()[2].split()[3:6], ["1.000", row[4], "1"])
        # A run that measured few of today's candidates: the sampler changed.
        report["candidates"] = cands[:1]
        with open(path, "w") as f:
            json.dump(report, f)
        rc, text, err = run_tool(os.path.join(self.dir, "po"), "--prism", prism)
        self.assertIn(f"ntrans_b1            only 1 of the {n} candidates sampled now were "
                      "measured: the sampler changed since the run", text)
        # A --prism that does not run.
        rc, text, err = run_tool(os.path.join(self.dir, "po"), "--prism", self.dir + "/nope")
        self.assertEqual((rc, err), (2, f"estimate_check: error: cannot run --prism "
                                        f"'{self.dir}/nope': No such file or directory\n"))


if __name__ == "__main__":
    unittest.main()
