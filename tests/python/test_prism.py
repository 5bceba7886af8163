"""Tests of the Python package prism (python/): Program building, parsing and workloads,
optimize without a GPU, results written and loaded back, proofs, and the error paths by exact
message (prism.Error carries prism's message and status code).

    PYTHONPATH=build-release/python /usr/bin/python3 -m unittest discover -s tests/python -v
"""

import ctypes
import json
import os
import shutil
import tempfile
import unittest

import prism


def rmsnorm_linear(m=4, k=128, n=64):
    b = prism.ProgramBuilder()
    x = b.input("X", "f16", [m, k])
    w = b.input("W", "f16", [k, n])
    y = b.matmul(b.rms_norm(x, -1), w)
    b.set_name(y, "Y")
    b.output(y)
    return b.build()


# No wall-clock budget in tests (results must not depend on the load), no GPU.
OPTIONS = dict(gpu="off", search_budget_s=3600.0, label="rmsnorm_linear_small")

_shared = {}


def shared_result():
    if "r" not in _shared:
        _shared["r"] = prism.optimize(rmsnorm_linear(), **OPTIONS)
    return _shared["r"]


class ProgramTest(unittest.TestCase):

    def test_builder_infers_shapes_and_dtypes(self):
        p = rmsnorm_linear()
        self.assertEqual(p.inputs, ["X", "W"])
        self.assertEqual(p.outputs, ["Y"])
        self.assertEqual(p.shape("Y"), [4, 64])
        self.assertEqual(p.dtype("Y"), "f16")
        self.assertEqual(p.num_tensors, 4)

    def test_nodes_describe_the_graph(self):
        nodes = rmsnorm_linear().nodes
        self.assertEqual([n["op"] for n in nodes], ["input", "input", "rms_norm", "matmul"])
        self.assertEqual(nodes[2]["operands"], ["X"])
        self.assertEqual(nodes[2]["dim"], -1)
        self.assertEqual(nodes[2]["eps"], 1e-6)
        self.assertEqual(nodes[3]["name"], "Y")
        self.assertEqual(nodes[3]["operands"], [nodes[2]["name"], "W"])
        self.assertEqual(nodes[3]["shape"], [4, 64])

    def test_ops_by_text_format_name(self):
        # (builder calls, expected output shape) rows.
        cases = [
            (lambda b, x: b.silu(x), [4, 8]),
            (lambda b, x: b.add(x, x), [4, 8]),
            (lambda b, x: b.sum(x, -1), [4, 1]),
            (lambda b, x: b.softmax(x, 1), [4, 8]),
            (lambda b, x: b.scale(x, 0.5), [4, 8]),
            (lambda b, x: b.concat([x, x], 0), [8, 8]),
        ]
        for make, shape in cases:
            b = prism.ProgramBuilder()
            x = b.input("X", "f32", [4, 8])
            y = make(b, x)
            b.set_name(y, "Y")
            b.output(y)
            self.assertEqual(b.build().shape("Y"), shape)

    def test_text_round_trip_and_hash(self):
        p = rmsnorm_linear()
        q = prism.parse_program(p.text, "small.prism")
        self.assertEqual(p, q)
        self.assertEqual(p.structural_hash(), q.structural_hash())
        self.assertNotEqual(p.structural_hash(), rmsnorm_linear(m=8).structural_hash())

    def test_workloads(self):
        self.assertIn("gated_mlp", prism.workload_names())
        p = prism.workload("gated_mlp", batch=8)
        self.assertEqual(p.shape(p.outputs[0])[0], 8)

    def test_data_dir_has_the_theories(self):
        self.assertTrue(os.path.isdir(os.path.join(prism.data_dir(), "smt_theories")))


class ErrorTest(unittest.TestCase):
    """Each row: a callable, the expected status code, the exact message (or its start)."""

    def assertPrismError(self, fn, code, message, exact=True):
        with self.assertRaises(prism.Error) as ctx:
            fn()
        self.assertEqual(ctx.exception.code, code)
        if exact:
            self.assertEqual(str(ctx.exception), message)
        else:
            self.assertTrue(str(ctx.exception).startswith(message), str(ctx.exception))

    def test_bad_shapes_raise_with_prisms_message(self):
        def build():
            b = prism.ProgramBuilder()
            x = b.input("X", "f16", [16, 4096])
            w = b.input("W", "f16", [2048, 6144])
            y = b.matmul(x, w)
            b.set_name(y, "Y")
            b.output(y)
            b.build()
        self.assertPrismError(
            build, "INVALID_ARGUMENT",
            "tensor 'Y': matmul: inner dims differ: found [16, 4096] x [2048, 6144], expected "
            "a[..., K] x b[..., K, N] with equal K (4096 vs 2048)")

    def test_error_table(self):
        built = prism.ProgramBuilder()
        x = built.input("X", "f16", [4, 4])
        built.output(built.silu(x))
        built.build()
        cases = [
            ("unknown dtype", lambda: prism.ProgramBuilder().input("X", "f64", [4]),
             "INVALID_ARGUMENT", "unknown dtype 'f64': expected one of f16, bf16, f32", True),
            ("built twice", lambda: built.build(), "FAILED_PRECONDITION",
             "this ProgramBuilder was already built: make a new prism.ProgramBuilder()", True),
            ("parse error", lambda: prism.parse_program("X = input f16[4]\noutput Z\n", "bad.prism"),
             "INVALID_ARGUMENT", "bad.prism:2:8: found undefined tensor 'Z' in `output`, expected a "
             "tensor defined in this file (did you mean 'X'?)", True),
            ("unknown workload", lambda: prism.workload("nope"), "NOT_FOUND",
             "unknown workload 'nope'", False),
            ("unknown gpu mode", lambda: prism.optimize(rmsnorm_linear(), gpu="maybe"),
             "INVALID_ARGUMENT", "unknown gpu mode 'maybe': expected 'auto', 'require' or 'off'",
             True),
            ("bad budget", lambda: prism.optimize(rmsnorm_linear(), gpu="off", search_budget_s=0),
             "INVALID_ARGUMENT", "OptimizeOptions.search_budget_s must be > 0 seconds, got 0",
             True),
            ("bad refine", lambda: prism.optimize(rmsnorm_linear(), gpu="off", refine_rounds=9),
             "INVALID_ARGUMENT", "OptimizeOptions.refine_rounds must be in [0, 8], got 9", True),
            ("bad tune budget",
             lambda: prism.optimize(rmsnorm_linear(), gpu="off", tune_budget_s=-1.0),
             "INVALID_ARGUMENT",
             "OptimizeOptions.tune_budget_s must be >= 0 seconds (0: no limit), got -1", True),
            ("constant input not an input",
             lambda: prism.optimize(rmsnorm_linear(), gpu="off", constant_inputs=["W", "Z"]),
             "INVALID_ARGUMENT",
             "constant input 'Z' is not an input of the program (inputs: X, W)", True),
            ("unknown target", lambda: prism.optimize(rmsnorm_linear(), gpu="off", target="h9000"),
             "INVALID_ARGUMENT", "unknown target 'h9000'; known targets: ", False),
            ("no tensor", lambda: rmsnorm_linear().shape("Q"), "NOT_FOUND",
             "no tensor named 'Q' in the program", True),
            ("malformed proof", lambda: prism.check_proof("{"), "INVALID_ARGUMENT",
             "malformed proof: ", False),
            ("audit no dir", lambda: prism.audit("/nonexistent/out"), "NOT_FOUND",
             "audit: '/nonexistent/out' is not a directory (give the --out directory of prism "
             "optimize)", True),
            ("no result dir", lambda: prism.load_result("/nonexistent/out"), None,
             "cannot load a result from '/nonexistent/out': no such directory", True),
        ]
        for name, fn, code, message, exact in cases:
            with self.subTest(name):
                if code is None:  # raised by the Python layer: no status code
                    with self.assertRaises(prism.Error) as ctx:
                        fn()
                    self.assertEqual(str(ctx.exception), message)
                else:
                    self.assertPrismError(fn, code, message, exact)

    def test_required_gpu_without_a_driver(self):
        try:
            ctypes.CDLL("libcuda.so.1")
            self.skipTest("libcuda.so.1 exists here")
        except OSError:
            pass
        self.assertPrismError(
            lambda: prism.optimize(rmsnorm_linear(), gpu="require", search_budget_s=3600.0),
            "UNAVAILABLE", '--gpu 0: no CUDA driver: dlopen("libcuda.so.1") failed', exact=False)

    def test_error_is_a_runtime_error(self):
        self.assertTrue(issubclass(prism.Error, RuntimeError))


class OptimizeTest(unittest.TestCase):

    def test_defaults_are_the_cpp_defaults(self):
        # prism::OptimizeOptions's (docs/api.md); the Python binding read 3 families after the
        # C++ default became 4 (2026-12-03).
        for text in ("search_budget_s: float = 30.0", "search_threads: int = 0",
                     "top_families: int = 4", "instances_per_family: int = 96",
                     "tune_cache_dir: str = ''", "measure_budget_s: float = 45.0",
                     "tune_budget_s: float = 55.0", "refine_rounds: int = 2"):
            self.assertIn(text, prism.optimize.__doc__)

    def test_constant_inputs_are_loaded_before_the_wait(self):
        # W's first tiles before griddepcontrol.wait, X's after (docs/codegen.md).
        r = prism.optimize(rmsnorm_linear(), gpu="off", search_budget_s=3600.0,
                           build_report=False, constant_inputs=["W"])
        src = r.cuda_source
        wait = src.find("  prism_dev::PdlWait();")
        self.assertGreater(wait, 0)
        early = src.find("  auto load_early = ")
        late = src.find("  auto load_late = ")
        self.assertIn("t_W + ", src[early:late])
        self.assertNotIn("t_X + ", src[early:late])
        self.assertLess(src.find("if (st < kF) load_early(st, st);"), wait)

    def test_result_selected_by_the_cost_model(self):
        r = shared_result()
        self.assertEqual(r.selection, "cost model")
        self.assertEqual(r.no_gpu_reason, "--no-gpu")
        self.assertIsNone(r.measured_us)
        self.assertGreater(r.cost_us, 0)
        self.assertFalse(r.tune_cache_hit)  # no GPU: no tuning cache
        self.assertEqual(r.tune_cache_note, "")
        self.assertEqual(len(r.kernels), 1)
        k = r.kernels[0]
        self.assertIn(k.function, r.cuda_source)
        self.assertEqual([(a.tensor, a.written) for a in k.args],
                         [("X", False), ("W", False), ("Y", True)])
        self.assertEqual(k.args[2].shape, [4, 64])
        launch = json.loads(r.launch_json)["kernels"][0]
        self.assertEqual(list(k.grid), launch["grid"])
        self.assertEqual(list(k.block), launch["block"])
        self.assertEqual(k.dynamic_smem_bytes, launch["dynamic_smem_bytes"])
        family = json.loads(r.family_json)
        self.assertEqual(family["program"], "rmsnorm_linear_small")
        self.assertEqual(r.assignment, family["assignment"])
        self.assertEqual(list(r.assignment), list(family["assignment"]))  # parameter order
        # What the tuner generated: the selected candidate is the files' selection.
        chosen = [c for c in r.candidates if c.selected]
        self.assertEqual(len(chosen), 1)
        self.assertEqual(chosen[0].family, r.family)
        self.assertEqual(chosen[0].assignment, r.assignment)
        self.assertEqual(chosen[0].cost_us, r.cost_us)
        self.assertEqual(chosen[0].estimate_us, r.estimate_us)
        # Without a GPU the selection is the estimate's first candidate.
        self.assertEqual(min(c.estimate_us for c in r.candidates), r.estimate_us)
        # Each estimate's terms start with its first kernel's launch and the rest.
        self.assertTrue(all(c.estimate_terms.startswith("k0: ") for c in r.candidates))
        self.assertTrue(all(c.measured_us is None for c in r.candidates))  # no GPU
        self.assertTrue(all(k.family >= 1 and k.message for k in r.codegen_skips))

    def test_report_and_proof(self):
        r = shared_result()
        report = json.loads(r.report.json)
        self.assertEqual(report["format"], "prism.report")
        summary = prism.check_proof(r.report.proof_json)
        self.assertGreater(summary.steps, 0)
        self.assertTrue(summary.rules_used)

    def test_write_and_load_result(self):
        r = shared_result()
        d = tempfile.mkdtemp(prefix="prism_py_")
        try:
            out = os.path.join(d, "out")
            r.write(out)
            saved = prism.load_result(out)
            self.assertEqual(saved.cuda_source, r.cuda_source)
            self.assertEqual(saved.host_header, r.host_header)
            self.assertEqual(saved.launch, json.loads(r.launch_json))
            self.assertEqual(saved.family, json.loads(r.family_json))
            self.assertEqual(saved.report, json.loads(r.report.json))
            os.remove(os.path.join(out, "family.json"))
            with self.assertRaises(prism.Error) as ctx:
                prism.load_result(out)
            self.assertEqual(
                str(ctx.exception),
                "cannot load a result from '%s': it has no family.json (write one with "
                "Result.write(dir) or `prism optimize --out DIR`)" % out)
            with open(os.path.join(out, "family.json"), "w") as f:
                f.write("{")
            with self.assertRaises(prism.Error) as ctx:
                prism.load_result(out)
            self.assertTrue(str(ctx.exception).startswith(
                "cannot load a result from '%s': family.json is not JSON: " % out))
        finally:
            shutil.rmtree(d)

    def test_audit_confirms_the_report_and_catches_an_edited_proof(self):
        r = shared_result()
        d = tempfile.mkdtemp(prefix="prism_py_audit_")
        try:
            r.write(d)
            a = prism.audit(d)
            self.assertTrue(a.ok, a.disagreements)
            self.assertEqual(a.solver, "z3")
            self.assertGreater(a.proof_steps, 0)
            path = os.path.join(d, "proof.json")
            with open(path) as f:
                proof = json.load(f)
            proof["goal"] = "(add X X)"
            with open(path, "w") as f:
                json.dump(proof, f)
            a = prism.audit(d)
            self.assertFalse(a.ok)
            self.assertTrue(any(m.startswith("proof.json: proof rejected: ")
                                for m in a.disagreements), a.disagreements)
        finally:
            shutil.rmtree(d)

    def test_progress_callback_sees_the_stages(self):
        stages = []

        def progress(stage, elapsed_s, done, total):
            if not stages or stages[-1] != stage:
                stages.append(stage)

        prism.optimize(rmsnorm_linear(), build_report=False, progress=progress, **OPTIONS)
        self.assertTrue(stages[0].startswith("search:"), stages)
        self.assertEqual(stages[-2:], ["tune", "done"])

    def test_progress_callback_exception_is_raised(self):
        def progress(stage, elapsed_s, done, total):
            raise KeyError("stop")

        with self.assertRaises(KeyError):
            prism.optimize(rmsnorm_linear(), build_report=False, progress=progress, **OPTIONS)

    def test_optimize_parts_cuts_an_mlp(self):
        mlp = prism.parse_program(
            "X = input f16[4, 128]\nW1 = input f16[128, 256]\nW2 = input f16[256, 64]\n"
            "Y = matmul(gelu(matmul(X, W1)), W2)\noutput Y\n")
        options = dict(OPTIONS, label="mlp_small", build_report=False)
        with self.assertRaises(prism.Error) as ctx:
            prism.optimize(mlp, **options)
        self.assertEqual(ctx.exception.code, "FAILED_PRECONDITION")
        plan = prism.optimize_parts(mlp, **options)
        self.assertIsNone(plan.result)
        self.assertEqual([p.name for p in plan.parts], ["H", "Y"])
        self.assertEqual([sorted(n["name"] for n in p.program.nodes if n["op"] == "input")
                          for p in plan.parts], [["W1", "X"], ["H", "W2"]])
        self.assertTrue(plan.parts[1].result.kernels[0].function.startswith("prism_mlp_small_Y_"))
        self.assertEqual(json.loads(plan.split_json)["cut"]["tensor"], "H")
        self.assertEqual(plan.parts[0].result.padded_inputs, [])
        whole = prism.optimize_parts(rmsnorm_linear(), **OPTIONS)
        self.assertEqual(whole.parts, [])
        self.assertEqual(whole.result.cuda_source, shared_result().cuda_source)
        d = tempfile.mkdtemp(prefix="prism_py_plan_")
        try:
            plan.write(d)
            self.assertEqual(prism.load_result(os.path.join(d, "Y")).cuda_source,
                             plan.parts[1].result.cuda_source)
            with open(os.path.join(d, "split.json")) as f:
                self.assertEqual(f.read(), plan.split_json)
        finally:
            shutil.rmtree(d)
        self.assertEqual([plan.fallback, whole.fallback], ["", ""])

    def test_optimize_parts_falls_back_to_a_library_kernel(self):
        # A matmul of 12 columns (rows of 24 bytes): no template generates it.
        narrow = prism.parse_program(
            "A = input f16[4, 64]\nW = input f16[64, 12]\nY = matmul(A, W)\noutput Y\n")
        options = dict(OPTIONS, label="narrow", build_report=False)
        plan = prism.optimize_parts(narrow, **options)
        self.assertTrue(plan.fallback.startswith("no family can be generated as CUDA yet: "),
                        plan.fallback)
        self.assertEqual(len(plan.result.kernels), 1)
        with self.assertRaises(prism.Error) as ctx:
            prism.optimize_parts(narrow, fallback=False, **options)
        self.assertEqual(ctx.exception.code, "FAILED_PRECONDITION")
        self.assertEqual(str(ctx.exception), plan.fallback)

if __name__ == "__main__":
    unittest.main()
