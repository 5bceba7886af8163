"""Prototype (issue 7, 2026-12-03 evening): a split program's combine kernel that starts on each
group as soon as that group's partial tiles have landed, instead of after the whole partial grid.

    python3 bench/gpu/prototypes/flag_combine.py SRC_DIR DST_DIR

SRC_DIR holds a two-kernel program with programmatic dependent launch (`prism optimize` or
codegen_emit output with PDL): a partial kernel k0 and the pointwise combine k1, launched as
(gx, gy, parts) blocks where (blockIdx.x, blockIdx.y) names the group of partial tiles a
combine block reads. The partial grid is either (gx, gy, split) or (gx, split, 1) (then gy = 1).

- k0 waits for the previous grid *before* it lets the combine launch (griddepcontrol.wait, then
  launch_dependents), so a combine never starts while the previous call's combine runs. After
  its stores every thread fences, and thread 0 adds one to its group's arrival counter.
- k1 lets the next kernel launch, then thread 0 polls its group's counter (ld.acquire.gpu,
  __nanosleep between polls) until all `split` partial blocks of the group have arrived; the
  block reads the partials through L2 (__ldcg). No griddepcontrol.wait: the combine of a group
  overlaps the partial blocks of the other groups. The last combine block of a group resets
  the group's counters; the next call's partial blocks add to them only after this combine grid
  has completed (their griddepcontrol.wait).

The counters are zero-initialized `__device__` arrays of the module, so both kernels must come
from one module load (bench_optimize.compile_kernel loads one module per source).
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import matching_brace  # noqa: E402


def kernel_span(code, function):
    """[start, end) of `function`'s definition (from `extern "C"` to its closing brace)."""
    start = code.index('extern "C" __global__', code.index(function) - 200)
    return start, matching_brace(code, code.index(function))


PROLOGUE = "  prism_dev::PdlPrologue();  // programmatic dependent launch: after the previous grid\n"


def main():
    src, dst = sys.argv[1], sys.argv[2]
    code = open(os.path.join(src, "kernel.cu")).read()
    launch = json.load(open(os.path.join(src, "launch.json")))
    k0, k1 = launch["kernels"]
    assert k0.get("programmatic_dependent_launch") and k1.get("programmatic_dependent_launch")
    g0, g1 = k0["grid"], k1["grid"]
    if g0[0] == g1[0] and g0[1] == g1[1]:
        grp0, need = "blockIdx.x * gridDim.y + blockIdx.y", g0[2]
    elif g0[0] == g1[0] and g1[1] == 1 and g0[2] == 1:
        grp0, need = "blockIdx.x", g0[1]
    else:
        raise SystemExit(f"unsupported grids {g0} / {g1}")
    groups = g1[0] * g1[1]
    s1, e1 = kernel_span(code, k1["function"] + "(")
    body1 = code[s1:e1]
    parts = int(re.search(r"kParts = (\d+);", body1).group(1))
    assert parts == g1[2], (parts, g1)
    body1 = body1.replace(PROLOGUE, f"""  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  {{  // flag_combine: wait for this group's {need} partial blocks
    const unsigned int grp = blockIdx.x * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) {{
      unsigned int n;
      while (true) {{
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(n) : "l"(&prism_arrive[grp]) : "memory");
        if (n >= {need}u) break;
        __nanosleep(64);
      }}
    }}
    __syncthreads();
  }}
""")
    for a in k1["args"]:
        if a["access"] == "read":
            body1 = re.sub(rf"(t_{a['tensor']}\[[^;]*?\])(;\s*// )", r"__ldcg(&\1)\2", body1)
    body1 += f"""  __syncthreads();
  if (threadIdx.x == 0) {{  // flag_combine: the group's last combine block resets its counters
    const unsigned int grp = blockIdx.x * gridDim.y + blockIdx.y;
    if (atomicAdd(&prism_done[grp], 1u) == {parts - 1}u) {{
      prism_arrive[grp] = 0u;
      prism_done[grp] = 0u;
    }}
  }}
"""
    code = code[:s1] + body1 + code[e1:]
    s0, e0 = kernel_span(code, k0["function"] + "(")
    body0 = code[s0:e0]
    assert PROLOGUE in body0
    body0 = body0.replace(PROLOGUE, """  asm volatile("griddepcontrol.wait;" ::: "memory");  // flag_combine: wait, then launch
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
""")
    body0 += f"""  __threadfence();  // flag_combine: this block's partial tiles, then its arrival
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&prism_arrive[{grp0}], 1u);
"""
    code = code[:s0] + body0 + code[e0:]
    first = code.index('extern "C" __global__')
    code = (code[:first] + f"__device__ unsigned int prism_arrive[{groups}];\n"
            f"__device__ unsigned int prism_done[{groups}];\n" + code[first:])
    os.makedirs(dst, exist_ok=True)
    open(os.path.join(dst, "kernel.cu"), "w").write(code)
    json.dump(launch, open(os.path.join(dst, "launch.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
