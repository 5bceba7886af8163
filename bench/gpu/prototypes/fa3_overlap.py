"""Hand prototype: the wgmma attention loop with the softmax of chunk j overlapping P·V of
chunk j-1 on the tensor cores (FlashAttention-3's intra-warpgroup overlap).

    python3 fa3_overlap.py SRC DST [tree]

SRC is a codegen_emit output of an attention_wgmma instance with one warpgroup per block
(T = 128), S ≥ 3. Per iteration j: issue S(j) = Q·K_j and P(j-1)·V_(j-1), wait for S(j),
softmax(j) into a second P buffer (P(j-1) is still being read), wait for P·V, then rescale
O by exp(m_(j-1) - m_j). The stage of chunk j-2 is refilled at iteration j (its V was last
read by P·V(j-2), waited in iteration j-1), so the loads run S-2 chunks ahead. `tree` also
takes the row maxima as trees instead of chains.
"""
import json, os, re, sys

src_dir, dst_dir = sys.argv[1], sys.argv[2]
tree = len(sys.argv) > 3 and sys.argv[3] == "tree"
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))

head = "#pragma unroll 1\n  for (int it = 0; it < kF; ++it) {\n"
i = src.index(head)
j = src.index("  CpAsyncWait<0>();\n  // Partials", i)
loop = src[i:j]
stages = int(re.search(r"constexpr int kStages = (\d+)", src).group(1))
assert stages >= 3, "needs S >= 3"
assert "__launch_bounds__(128, 1)" in src

base = re.search(r"    const unsigned char\* base = (smem \+ \d+) \+ \(it % kStages\) \* (\d+);\n", loop)
off, stage_bytes = base.group(1), base.group(2)
# The score wgmma issue: from `float sc` to its commit.
s_issue = loop[loop.index("    float sc[1]"):loop.index("    WgmmaCommit();\n") + len("    WgmmaCommit();\n")]
s_issue = s_issue.replace("    float sc[1][16][4];", "    //") + "    }\n"
# qknorm: rms(V)'s factors between the commit and the wait.
after = loop.index("    WgmmaCommit();\n") + len("    WgmmaCommit();\n")
wait = loop.index("    WgmmaWait<0>();\n    }\n", after)
vinv = loop[after:wait]
rest = loop[wait + len("    WgmmaWait<0>();\n    }\n"):]
fence_sc = rest[:rest.index("    {\n    const f16_t* vs")]
has_sync = "__syncthreads();" in fence_sc
sm_start = rest.index("    u32_t pf[1][16][2];")
pv_start = rest.index("#pragma unroll\n    for (int j = 0; j < 8; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);\n    WgmmaFence();")
softmax = rest[sm_start:pv_start]
pv_end = rest.index("    WgmmaCommit();\n", pv_start)
pv = rest[pv_start:pv_end]
pv = pv[pv.index("#pragma unroll\n    for (int kc"):]
softmax = softmax.replace("    u32_t pf[1][16][2];", "")
softmax = softmax.replace("pf[tp][j][0] =", "pn[tp][j][0] =").replace("pf[tp][j][1] =", "pn[tp][j][1] =")
resc = re.search(r"#pragma unroll\n        for \(int j = 0; j < 8; \+\+j\) \{\n          o\[tp\]\[j\]\[0\] \*= a_lo;.*?\n        \}\n", softmax, re.S)
softmax = softmax[:resc.start()] + "        r_lo = a_lo; r_hi = a_hi;\n" + softmax[resc.end():]
if tree:
    mx = re.search(r"      float mx_lo = [^\n]*\n#pragma unroll\n      for \(int j = 0; j < 16; \+\+j\) \{\n.*?\n      \}\n", softmax, re.S)
    softmax = softmax[:mx.start()] + (
        "      float tl[16], th[16];\n"
        "#pragma unroll\n      for (int j = 0; j < 16; ++j) { tl[j] = fmaxf(sc[tp][j][0], sc[tp][j][1]); th[j] = fmaxf(sc[tp][j][2], sc[tp][j][3]); }\n"
        + "".join(f"#pragma unroll\n      for (int j = 0; j < {w}; ++j) {{ tl[j] = fmaxf(tl[j], tl[j + {w}]); th[j] = fmaxf(th[j], th[j + {w}]); }}\n" for w in (8, 4, 2, 1)) +
        "      const float mx_lo = tl[0], mx_hi = th[0];\n") + softmax[mx.end():]
vs = f"reinterpret_cast<const f16_t*>({off} + ((it + kStages - 1) % kStages) * {stage_bytes} + 16384 + wh * 16384)"
fence_o = "#pragma unroll\n    for (int j = 0; j < 8; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);\n"
fence_pf = "#pragma unroll\n    for (int j = 0; j < 16; ++j) { WgmmaFenceReg(pf[0][j][0]); WgmmaFenceReg(pf[0][j][1]); }\n"
new = (
    "  // fa3_overlap prototype: softmax(it) runs while P·V(it-1) is on the tensor cores\n"
    "  u32_t pf[1][16][2];  // P of the previous chunk (the A fragments of its P·V)\n"
    "  float sc[1][16][4];\n"
    "#pragma unroll 1\n  for (int it = 0; it < kF; ++it) {\n"
    "    CpAsyncWait<kStages - 3>();\n    FenceProxyAsyncShared();\n    __syncthreads();\n"
    "    if (it >= 1 && it + kStages - 2 < kF) load_stage(it + kStages - 2, (it + kStages - 2) % kStages);\n"
    "    CpAsyncCommit();\n"
    f"    const unsigned char* base = {off} + (it % kStages) * {stage_bytes};\n"
    + s_issue +
    "    if (it > 0) {\n"
    f"    const f16_t* vs = {vs};\n"
    + pv + "    WgmmaCommit();\n    }\n"
    + vinv +
    "    if (it > 0) WgmmaWait<1>(); else WgmmaWait<0>();\n"
    + fence_sc.replace("    __syncthreads();\n", "") + ("    __syncthreads();\n" if has_sync else "")
    + "    float r_lo, r_hi;\n    u32_t pn[1][16][2];\n    {\n" + softmax + "    }\n"
    "    WgmmaWait<0>();\n" + fence_o + fence_pf +
    "#pragma unroll\n    for (int j = 0; j < 8; ++j) {\n"
    "      o[0][j][0] *= r_lo; o[0][j][1] *= r_lo;\n      o[0][j][2] *= r_hi; o[0][j][3] *= r_hi;\n    }\n"
    "#pragma unroll\n    for (int j = 0; j < 16; ++j) { pf[0][j][0] = pn[0][j][0]; pf[0][j][1] = pn[0][j][1]; }\n"
    "  }\n"
    "  {  // P·V of the last chunk\n"
    f"    const int it = kF;\n    const f16_t* vs = {vs};\n"
    + fence_o + "    WgmmaFence();\n" + pv + "    WgmmaCommit();\n    WgmmaWait<0>();\n" + fence_o + fence_pf +
    "  }\n")
out = src[:i] + new + src[j:]
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(out)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(dst_dir, "stages", stages, "tree" if tree else "")
