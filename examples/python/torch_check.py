#!/usr/bin/env python3
"""Loads the kernels prism emits into PyTorch and checks them against a PyTorch reference.

    PYTHONPATH=build-release/python python3 examples/python/torch_check.py
    PYTHONPATH=build-release/python python3 examples/python/torch_check.py --workload gqa --batch 1

    # two stages, when the GPU machine cannot import prism (other python, no Z3/Abseil there):
    PYTHONPATH=build-release/python /usr/bin/python3 examples/python/torch_check.py --prepare DIR
    python3 examples/python/torch_check.py --from DIR          # on the GPU machine: torch only

For each workload (default: rmsnorm_linear b=8, gated_mlp b=1, gqa b=1): prism.optimize
(gpu="off" by default: the cost model selects, nothing is measured; --gpu auto measures);
kernel.cu + host.h compiled with nvcc through torch.utils.cpp_extension.load_inline; inputs
drawn at random on the GPU; the kernels launched in launch.json order through host.h's
Launch_<kernel> helpers (outputs and intermediate buffers, e.g. split-KV partials, allocated
from launch.json and poisoned with NaN); every program output compared with the program
evaluated by PyTorch in float32 from Program.nodes (docs/ir_semantics.md), the inputs being
the kernel's own f16 values. Prints one line per output and a final "torch_check: PASS" or
"torch_check: FAIL (...)"; the exit code is 0 only on PASS. Needs a CUDA GPU, PyTorch with
CUDA and nvcc (except --prepare, which needs only prism).
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile

DEFAULT_WORKLOADS = [("rmsnorm_linear", 8), ("gated_mlp", 1), ("gqa", 1)]
TOLERANCE = 2e-2  # max |kernel - reference| / max |reference|


def make_case(prism, name, batch, gpu, budget_s):
    """Optimizes one workload; returns the dict that --prepare writes and check() reads."""
    program = prism.workload(name, batch)
    r = prism.optimize(program, gpu=gpu, search_budget_s=budget_s,
                       label="%s_b%d" % (name, batch), build_report=False)
    return {"name": name, "batch": batch, "cuda_source": r.cuda_source,
            "host_header": r.host_header, "launch": json.loads(r.launch_json),
            "selection": r.selection, "nodes": program.nodes, "inputs": program.inputs,
            "outputs": program.outputs}


def write_case(case, directory):
    d = os.path.join(directory, "%s_b%d" % (case["name"], case["batch"]))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.cu"), "w") as f:
        f.write(case["cuda_source"])
    with open(os.path.join(d, "host.h"), "w") as f:
        f.write(case["host_header"])
    with open(os.path.join(d, "launch.json"), "w") as f:
        json.dump(case["launch"], f, indent=1)
    with open(os.path.join(d, "program.json"), "w") as f:
        json.dump({k: case[k] for k in ("name", "batch", "selection", "nodes", "inputs",
                                        "outputs")}, f, indent=1)
    return d


def read_case(d):
    with open(os.path.join(d, "program.json")) as f:
        case = json.load(f)
    with open(os.path.join(d, "kernel.cu")) as f:
        case["cuda_source"] = f.read()
    with open(os.path.join(d, "host.h")) as f:
        case["host_header"] = f.read()
    with open(os.path.join(d, "launch.json")) as f:
        case["launch"] = json.load(f)
    return case


def torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]


def reference(torch, nodes, inputs):
    """Evaluates the program (Program.nodes) in float32 with PyTorch; returns {name: tensor}."""
    v = {}
    unary = {
        "exp": torch.exp, "silu": torch.nn.functional.silu, "relu": torch.relu,
        "gelu": lambda x: torch.nn.functional.gelu(x, approximate="none"),
        "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "square": torch.square, "neg": torch.neg,
        "recip": torch.reciprocal,
    }
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    for n in nodes:
        op, args = n["op"], [v[o] for o in n["operands"]]
        if op == "input":
            y = inputs[n["name"]].float()
        elif op == "matmul":
            y = torch.matmul(args[0], args[1])
        elif op in unary:
            y = unary[op](args[0])
        elif op == "scale":
            y = args[0] * n["scalar"]
        elif op in binary:
            y = binary[op](args[0], args[1])
        elif op == "sum":
            y = args[0].sum(dim=n["dim"], keepdim=True)
        elif op == "mean":
            y = args[0].mean(dim=n["dim"], keepdim=True)
        elif op == "max":
            y = args[0].amax(dim=n["dim"], keepdim=True)
        elif op == "rms_norm":
            x = args[0]
            y = x * torch.rsqrt(x.square().mean(dim=n["dim"], keepdim=True) + n["eps"])
        elif op == "softmax":
            y = torch.softmax(args[0], dim=n["dim"])
        elif op == "concat":
            y = torch.cat(args, dim=n["dim"])
        else:
            raise ValueError("torch_check: no PyTorch reference for op '%s'" % op)
        v[n["name"]] = y
    return v


def launcher_source(launch):
    """(tensor names, C++ source of prism_run(tensors)) calling host.h's Launch_<kernel>."""
    ns = "prism_generated::%s" % launch["program"]
    names = []
    for k in launch["kernels"]:
        for a in k["args"]:
            if a["tensor"] not in names:
                names.append(a["tensor"])
    lines = ["void prism_run(std::vector<torch::Tensor> t) {",
             "  cudaStream_t stream = at::cuda::getCurrentCUDAStream();",
             "  cudaError_t e = cudaSuccess;"]
    for k in launch["kernels"]:
        ptrs = ", ".join("t[%d].data_ptr()" % names.index(a["tensor"]) for a in k["args"])
        lines.append("  e = %s::Launch_%s(%s, stream);" % (ns, k["kernel"], ptrs))
        lines.append('  TORCH_CHECK(e == cudaSuccess, "%s: ", cudaGetErrorString(e));' %
                     k["function"])
    lines.append("}")
    return names, "\n".join(lines) + "\n"


def check(torch, load_inline, case, args):
    name, batch, launch = case["name"], case["batch"], case["launch"]
    names, launcher = launcher_source(launch)
    major, minor = torch.cuda.get_device_capability()
    build_dir = os.path.join(args.build_dir, "%s_b%d" % (name, batch))
    os.makedirs(build_dir, exist_ok=True)
    module = load_inline(
        name=re.sub(r"[^0-9A-Za-z_]", "_", "prism_%s_b%d" % (name, batch)),
        cpp_sources="#include <torch/extension.h>\nvoid prism_run(std::vector<torch::Tensor> t);\n",
        cuda_sources=("#include <ATen/cuda/CUDAContext.h>\n" + case["cuda_source"] + "\n" +
                      case["host_header"].replace("#pragma once", "") + "\n" + launcher),
        functions=["prism_run"],
        extra_cuda_cflags=["-O3", "-std=c++17", "-arch=sm_%d%d" % (major, minor)],
        build_directory=build_dir, verbose=False)

    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    shapes = {}
    for k in launch["kernels"]:
        for a in k["args"]:
            shapes[a["tensor"]] = (a["shape"], a["dtype"])
    tensors = {}
    for t in names:
        shape, dtype = shapes[t]
        if t in case["inputs"]:
            x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
            tensors[t] = x.to(torch_dtype(torch, dtype))
        else:  # outputs and intermediates, poisoned with NaN
            tensors[t] = torch.full(shape, float("nan"), device="cuda",
                                    dtype=torch_dtype(torch, dtype))
    module.prism_run([tensors[t] for t in names])
    torch.cuda.synchronize()

    ref = reference(torch, case["nodes"], {t: tensors[t] for t in case["inputs"]})
    k0 = launch["kernels"][0]
    ok = True
    for out in case["outputs"]:
        got, want = tensors[out].float(), ref[out]
        err = (got - want).abs().max().item() / max(want.abs().max().item(), 1e-30)
        good = math.isfinite(err) and err <= TOLERANCE
        ok = ok and good
        print("%-16s b=%-2d %-4s %d kernel(s), k0 grid=%s block=%s smem=%d (%s): rel. error %.2e"
              " %s" % (name, batch, out, len(launch["kernels"]), tuple(k0["grid"]),
                       tuple(k0["block"]), k0["dynamic_smem_bytes"], case["selection"], err,
                       "ok" if good else "MISMATCH (tolerance %.0e)" % TOLERANCE))
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", help="one built-in workload (default: %s)" %
                        ", ".join("%s b=%d" % w for w in DEFAULT_WORKLOADS))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--gpu", default="off", choices=["off", "auto", "require"],
                        help="prism.optimize's gpu mode (default off: select by the cost model)")
    parser.add_argument("--budget-s", type=float, default=30.0, dest="budget_s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--prepare", metavar="DIR",
                        help="only optimize and write the cases to DIR (needs prism, no GPU)")
    parser.add_argument("--from", metavar="DIR", dest="from_dir",
                        help="check the cases --prepare wrote to DIR (needs torch, not prism)")
    parser.add_argument("--build-dir", default=None,
                        help="where load_inline builds (default: a temporary directory)")
    args = parser.parse_args()
    workloads = [(args.workload, args.batch)] if args.workload else DEFAULT_WORKLOADS

    cases, failed = [], []
    if args.from_dir:
        if not os.path.isdir(args.from_dir):
            print("torch_check: FAIL (no directory %s: run --prepare DIR first)" % args.from_dir)
            return 1
        for d in sorted(os.listdir(args.from_dir)):
            if os.path.isfile(os.path.join(args.from_dir, d, "program.json")):
                cases.append(read_case(os.path.join(args.from_dir, d)))
        if not cases:
            print("torch_check: FAIL (no case under %s: run --prepare first)" % args.from_dir)
            return 1
    else:
        import prism
        for name, batch in workloads:
            try:
                cases.append(make_case(prism, name, batch, args.gpu, args.budget_s))
            except prism.Error as e:
                print("%-16s b=%-2d prism error: %s" % (name, batch, e))
                failed.append("%s b=%d" % (name, batch))
        if args.prepare:
            for case in cases:
                print("wrote %s" % write_case(case, args.prepare))
            return 1 if failed else 0

    try:
        import torch
        from torch.utils.cpp_extension import load_inline
    except ImportError as e:
        print("torch_check: FAIL (PyTorch is not importable: %s)" % e)
        return 1
    if not torch.cuda.is_available():
        print("torch_check: FAIL (no CUDA device visible to PyTorch)")
        return 1
    if args.build_dir is None:
        args.build_dir = tempfile.mkdtemp(prefix="prism_torch_check_")
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    for case in cases:
        try:
            if not check(torch, load_inline, case, args):
                failed.append("%s b=%d" % (case["name"], case["batch"]))
        except (RuntimeError, OSError, ValueError) as e:  # nvcc, CUDA or launch errors
            print("%-16s b=%-2d error: %s" % (case["name"], case["batch"], e))
            failed.append("%s b=%d" % (case["name"], case["batch"]))
    if failed:
        print("torch_check: FAIL (%s)" % ", ".join(failed))
        return 1
    print("torch_check: PASS (%d workload%s)" % (len(cases), "" if len(cases) == 1 else "s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
