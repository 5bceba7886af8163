"""Prototype (issue 7, 2026-12-02 evening): fold a split-KV attention program's combine kernel
into its partial kernel, done by the last block of each group to arrive. No waiting.

    python3 bench/gpu/prototypes/last_block_combine.py SRC_DIR DST_DIR

Also for the GEMM template's split-K forms (2026-12-04): k0 over (g, s, 1), the combine over
(g, 1, parts); the group is a column tile (blockIdx.x), its s blocks along y, and the last
block's element loop is fully unrolled over the parts so that all its partial loads are in
flight.

SRC_DIR holds a two-kernel program (kernel.cu, launch.json: `prism optimize` or codegen_emit
output) whose second kernel is the pointwise combine over a grid (gx, gy, parts), with one
element per thread. The partial kernel k0 runs over (gx, gy, gz). After its partial stores
it makes them visible (__threadfence), and thread 0 takes a ticket from an arrival counter for
its group (gx, gy); the counters are a zero-initialized __device__ array in the module. The
block that draws the last ticket runs the combine's element loop for the whole group, reading
the partials through L2 (__ldcg), and resets the counter for the next launch. The other blocks
exit. The new launch.json keeps k0 alone, with the combine's output added to its arguments,
and names the program output ("output", read by bench_optimize.Program).
"""
import json, os, re, sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    code = open(os.path.join(src, "kernel.cu")).read()
    launch = json.load(open(os.path.join(src, "launch.json")))
    k0, k1 = launch["kernels"]
    i1 = code.index(f"// kernel {k1['kernel']}:")
    head, tail = code[:i1], code[i1:]
    # The combine's parameters and body.
    sig = re.search(re.escape(k1["function"]) + r"\((.*?)\) \{\n", tail)
    params = sig.group(1)
    body = tail[sig.end():tail.rindex("}")]
    body = body.replace("  prism_dev::PdlPrologue();  // programmatic dependent launch: after the previous grid\n", "")
    parts = int(re.search(r"kParts = (\d+);", body).group(1))
    threads = k1["block"][0]
    # Split along y (the GEMM template's split-K forms: k0 (g, s, 1), k1 (g, 1, parts)) or z
    # (split-KV attention: k0 (gx, gy, gz), k1 (gx, gy, parts)).
    split_y = k1["grid"][1] == 1 and k0["grid"][1] > 1
    body = body.replace("bz = blockIdx.z / kParts;", "bz = 0;")
    if split_y:
        body = body.replace("by = blockIdx.y,", "by = 0,")
    body = re.sub(r"  const int first = \(blockIdx\.z % kParts\) \* (\d+) \+ threadIdx\.x;\n",
                  "", body)
    # Element loop of every part, loads of the partials through L2.
    m = re.search(r"  // #\d+ \(output\)", body)
    body = (body[:m.start()] + ("#pragma unroll\n" if split_y else "#pragma unroll 8\n") +
            f"  for (int part = 0; part < kParts; ++part) {{\n"
            f"  const int first = part * {threads} + threadIdx.x;\n" + body[m.start():] + "  }\n")
    for a in k1["args"]:
        if a["access"] == "read":
            body = re.sub(rf"(t_{a['tensor']}\[[^;]*?\])(;\s*// )", r"__ldcg(&\1)\2", body)
    out_arg = next(a for a in k1["args"] if a["access"] == "write")
    out_param = next(p for p in params.split(", ") if p.endswith("t_" + out_arg["tensor"]))
    groups = k0["grid"][0] * (1 if split_y else k0["grid"][1])
    grp = "blockIdx.x" if split_y else "blockIdx.x * gridDim.y + blockIdx.y"
    splits = "gridDim.y" if split_y else "gridDim.z"
    # k0: the output parameter, then the ticket and the combine before its closing brace.
    i0 = head.rindex("}")
    fold = f"""  // Last block of the group: the combine (bench/gpu/prototypes/last_block_combine.py).
  {{
    __shared__ unsigned int prism_last;
    __threadfence();
    __syncthreads();
    const unsigned int grp = {grp};
    if (threadIdx.x == 0) prism_last = atomicAdd(&prism_arrivals[grp], 1u) == {splits} - 1;
    __syncthreads();
    if (!prism_last) return;
    __threadfence();
  }}
  {{
{body}  }}
  if (threadIdx.x == 0) prism_arrivals[{grp}] = 0u;
"""
    head = head[:i0] + fold + head[i0:]
    head = head.replace("extern \"C\" __global__ void __launch_bounds__(",
                        f"__device__ unsigned int prism_arrivals[{groups}];\n"
                        "extern \"C\" __global__ void __launch_bounds__(", 1)
    head = re.sub("(" + re.escape(k0["function"]) + r"\()", r"\1" + out_param + ", ", head, count=1)
    k0 = dict(k0)
    k0["args"] = [out_arg] + k0["args"]
    launch["kernels"] = [k0]
    launch["output"] = out_arg["tensor"]
    os.makedirs(dst, exist_ok=True)
    open(os.path.join(dst, "kernel.cu"), "w").write(head)
    json.dump(launch, open(os.path.join(dst, "launch.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
