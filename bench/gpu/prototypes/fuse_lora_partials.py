"""Hand prototype: lora's split-K program (codegen_emit lora_splitk, gemm_defer_chained) with
one partial tensor instead of two. The partial kernel adds (X·A)·B's accumulators to X·W's
before the (cross-warp reduction and) store, and stores no P1; the combine sums P0 alone
(Y = Σ_s (P0_s + P1_s) = Σ_s P0_s + Σ_s P1_s). Halves the partial bytes stored and read.

    python3 fuse_lora_partials.py SRC_DIR DST_DIR"""
import os, re, shutil, sys

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()


def drop_block(s, marker, at=0):
    """Removes the brace block whose opening line contains the first `marker` from `at` on."""
    i = s.index(marker, at)
    start = s.rindex("\n", 0, i) + 1
    depth, j = 0, s.index("{", start)
    while True:
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    end = s.index("\n", j) + 1
    return s[:start] + s[end:]


dims = re.search(r"float acc2\[(\d+)\]\[(\d+)\]\[4\]", src)
mts, nts = dims.group(1), dims.group(2)
add = (f"  for (int mt = 0; mt < {mts}; ++mt)\n  for (int nt = 0; nt < {nts}; ++nt)\n"
       "  for (int e = 0; e < 4; ++e) acc2[mt][nt][e] += acc7[mt][nt][e];  // one partial\n")
k = src.index("// XAB (matmul) after the loop")
w = src.index("  CpAsyncWait<0>();\n", k) + len("  CpAsyncWait<0>();\n")
src = src[:w] + add + src[w:]
src = drop_block(src, "// #10 (output) → P1")
if "make_float2(acc7[mt][nt][0]" in src:  # the cross-warp reduction's buffer of acc7
    m = src.index("make_float2(acc7[mt][nt][0]")
    src = drop_block(src, "{  // rows of", src.rindex("{  // rows of", 0, m))
src = re.sub(r"\n *const float v2 = t_P1\[[^\n]*", "", src)
src = src.replace("      v3 += v2;\n", "")
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
for f in os.listdir(src_dir):
    if f != "kernel.cu":
        shutil.copy(os.path.join(src_dir, f), dst_dir)
