"""Hand prototype: a split-K GEMM partial kernel (codegen_emit output) with more cp.async stages
than the search's S <= 4, to test whether more bytes in flight per SM speed the GEMV rows.

    python3 deep_stages.py SRC_DIR DST_DIR STAGES

Rewrites `constexpr int kStages = S` of the first kernel, moves the shared-memory regions
placed after the stages (`smem + N`, N >= S x stride: the cluster_combine partial tiles) by
the added stages, and raises the first kernel's launch.json dynamic_smem_bytes by as much
(capped at 227 KB). The stride is read from `smem + stage * STRIDE`."""
import json, os, re, shutil, sys

src_dir, dst_dir, stages = sys.argv[1], sys.argv[2], int(sys.argv[3])
src = open(os.path.join(src_dir, "kernel.cu")).read()
stride = int(re.search(r"smem \+ stage \* (\d+)", src).group(1))
old = int(re.search(r"constexpr int kStages = (\d+)", src).group(1))
src = re.sub(r"constexpr int kStages = \d+", f"constexpr int kStages = {stages}", src, count=1)
delta = (stages - old) * stride
after = [0]


def shift(m):
    n = int(m.group(1))
    if n < old * stride:
        return m.group(0)
    after.append(n + delta)
    return f"smem + {n + delta})"


src = re.sub(r"smem \+ (\d+)\)", shift, src)
launch = json.load(open(os.path.join(src_dir, "launch.json")))
k0 = launch["kernels"][0]
dyn = min(232448, k0["dynamic_smem_bytes"] + max(0, delta))
if dyn < max(stages * stride, max(after) + 256):
    sys.exit(f"deep_stages: {stages} stages do not fit in 227 KB of shared memory")
k0["dynamic_smem_bytes"] = dyn
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
for f in os.listdir(src_dir):
    if f not in ("kernel.cu", "launch.json"):
        shutil.copy(os.path.join(src_dir, f), dst_dir)
