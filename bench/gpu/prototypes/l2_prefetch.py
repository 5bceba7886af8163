"""Hand prototype: a split-K GEMM partial kernel (codegen_emit output, programmatic dependent
launch) that asks L2 for its first S-1 stages' tiles (cp.async.bulk.prefetch.L2, one per tile
row) after griddepcontrol.launch_dependents and before griddepcontrol.wait. Unlike loading
them (bench/gpu/prototypes/pdl_prefetch.py) this is valid whatever the previous grid writes:
a prefetch only warms L2, the point of coherence, and every read still follows the wait.

    python3 l2_prefetch.py SRC_DIR DST_DIR"""
import os, re, shutil, sys

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
k0 = src.index("_k0(")
head = src.index("prism_dev::PdlPrologue();", k0)
src = src[:head] + 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");' + \
    src[head + len("prism_dev::PdlPrologue();"):]
st = re.search(r"constexpr int kStages = (\d+), kF = (\d+);", src[k0:])
stages, kf = int(st.group(1)), int(st.group(2))
lam = src.index("auto load_stage", k0)
lam_end = src.index("  };\n", lam)
loads = re.findall(r"LoadTileAsync<(\d+), (\d+), (\d+)>\(reinterpret_cast<f16_t\*>\(base \+ \d+\), \d+, "
                   r"(t_\w+ \+ .*?), (\d+)LL, tid\);", src[lam:lam_end])
code = [f"  for (int it = 0; it < {min(stages - 1, kf)}; ++it) {{  // L2 prefetch of the first stages"]
for rows, cols, _, expr, ld in loads:
    code.append(f"    for (int r = threadIdx.x; r < {rows}; r += blockDim.x) {{")
    code.append(f"      const void* g = {expr} + (long long)r * {ld}LL;")
    code.append(f'      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(g), "r"({int(cols) * 2}) : "memory");')
    code.append("    }")
code.append("  }")
code.append('  asm volatile("griddepcontrol.wait;" ::: "memory");\n')
pro = src.index("#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st)", k0)
src = src[:pro] + "\n".join(code) + src[pro:]
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
for f in os.listdir(src_dir):
    if f != "kernel.cu" and os.path.isfile(os.path.join(src_dir, f)):
        shutil.copy(os.path.join(src_dir, f), dst_dir)
