"""Hand prototype: the qknorm wgmma kernel with the rms(V) factors computed after the score
wgmma is issued (while the tensor cores work) instead of before it. Measured slower (docs/performance.md,
2026-12-02)."""
import sys, os, shutil, re
s, d = sys.argv[1], sys.argv[2]
src = open(os.path.join(s, "kernel.cu")).read()
a = src.index("    // Vn (rms): per-row factor")
b = src.index("    float sc[", a)  # any tile shape (T128: sc[1][16][4])
block = src[a:b]
src = src[:a] + src[b:]
c = src.index("    WgmmaCommit();\n    WgmmaWait<0>();\n", a)
src = src[:c] + "    WgmmaCommit();\n" + block + "    WgmmaWait<0>();\n" + src[c + len("    WgmmaCommit();\n    WgmmaWait<0>();\n"):]
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "kernel.cu"), "w").write(src)
shutil.copy(os.path.join(s, "launch.json"), d)
