"""Hand prototype: split-KV attention with a split count that does not divide the chunk count,
so that three one-warpgroup blocks per SM make one wave.

    python3 uneven_split.py SRC DST G [MIN_BLOCKS]

SRC is a codegen_emit output of a gqa or qknorm_gqa attention_wgmma instance (one warpgroup
per block, one head per block, T = 128) with gz splits of kF chunks each. DST splits the
gz·kF chunks into G ranges of ⌊·⌋ / ⌈·⌉ chunks (split z walks chunks [z·n/G, (z+1)·n/G)),
writes G partials, and its combine reads G. `__launch_bounds__(128, MIN_BLOCKS)` (default 3)
makes ptxas keep the registers within 65536 / (128 · MIN_BLOCKS), and the residency pad is
dropped so that MIN_BLOCKS blocks fit in shared memory. gqa b=8 (16 heads × 4 query tiles,
32 chunks of 128): G = 6 gives 384 blocks against 396 slots at three per SM, where the
selection's G = 4 gives 256 blocks at two per SM; the question is whether a third warpgroup
per SM hides more of the loop's latency (ncu: no eligible warp in 62 % of its cycles).
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, dst_dir, G = sys.argv[1], sys.argv[2], int(sys.argv[3])
min_blocks = int(sys.argv[4]) if len(sys.argv) > 4 else 3
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
kp, kc = launch["kernels"]
gz = kp["grid"][2]
kF = int(re.search(r"constexpr int kStages = \d+, kF = (\d+);", src).group(1))
n = gz * kF
assert "__launch_bounds__(128, 1)" in src


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old, src.count(old))
    src = src.replace(old, new)


# Partial kernel: this split's chunk range.
sub(f"constexpr int kStages = ", "constexpr int kStages = ")
m = re.search(r"  constexpr int kStages = (\d+), kF = \d+;\n", src)
src = src.replace(m.group(0),
                  f"  constexpr int kStages = {m.group(1)};\n"
                  f"  const int c0 = (int)(blockIdx.z * {n}u / {G}u), kF = (int)((blockIdx.z + 1) * {n}u / {G}u) - c0;\n")
sub(f"(long long)(blockIdx.z * {kF}LL + it) * 128LL", "(long long)(c0 + it) * 128LL", count=2)
# Partials: G per row instead of gz.
num_row = gz * 64
sub(f"* {num_row}LL + (long long)blockIdx.z * 64LL + c)", f"* {G * 64}LL + (long long)blockIdx.z * 64LL + c)", count=2)
sub(f"* {gz}LL + (long long)blockIdx.z * 1LL + 0)", f"* {G}LL + (long long)blockIdx.z * 1LL + 0)", count=2)
sub("__launch_bounds__(128, 1)", f"__launch_bounds__(128, {min_blocks})")
# Combine: G partials.
rows = kp["args"][0]["shape"][1]  # query rows per head
sub(f"  constexpr int kF = {gz}, kParts", f"  constexpr int kF = {G}, kParts")
sub(f"* {rows * gz}LL + ((long long)by * 64LL + i1) * {gz}LL", f"* {rows * G}LL + ((long long)by * 64LL + i1) * {G}LL")
sub(f"* {rows * num_row}LL + ((long long)by * 64LL + i1) * {num_row}LL",
    f"* {rows * G * 64}LL + ((long long)by * 64LL + i1) * {G * 64}LL")
write_variant(src_dir, dst_dir, src)
launch = json.load(open(os.path.join(dst_dir, "launch.json")))
kp, kc = launch["kernels"]
kp["grid"][2] = G
kp["dynamic_smem_bytes"] -= kp.pop("residency_pad_bytes", 0)
for k in (kp, kc):
    for a in k["args"]:
        if a["tensor"] in ("Num", "Den"):
            a["shape"][2] = a["shape"][2] // gz * G
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(f"{dst_dir}: {n} chunks in {G} splits, {kp['grid']} blocks, smem {kp['dynamic_smem_bytes']}, "
      f"launch bounds (128, {min_blocks})")
