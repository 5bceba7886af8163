"""Hand prototypes: two reorderings of the wgmma attention loop (T = 128, one 64-row tile,
KV chunk 128, Dv 64), each keeping every instruction of the loop.

    python3 loop_order.py SRC DST_PREFIX

Writes DST_PREFIX__<tag>:
  lateload  the next stage's cp.async loads are issued after the score wgmma is committed
            (before its wait), not before it: the score wgmma starts right after the chunk's
            barrier and the load instructions issue while it runs. Safe: the stage they fill was
            last read by the previous iteration's wgmmas, which that iteration waited for.
  splitpv   P·V in two halves: the exp2 of the chunk's first 64 columns, then their four P·V
            wgmmas issued (not waited for), then the exp2 of the last 64 columns while the
            tensor cores run the first half, then the second half's four wgmmas.
  both      the two together.
"""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import matching_brace, write_variant  # noqa: E402

src_dir, prefix = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
assert "__launch_bounds__(128, 1)" in src


def lateload(s):
    load = ("    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + kStages - 1) % kStages);\n"
            "    CpAsyncCommit();\n")
    assert s.count(load) == 1
    s = s.replace(load, "")
    commit = "    WgmmaCommit();\n"
    i = s.index(commit, s.index("WgmmaM64N128K16SS(sc[0]")) + len(commit)  # the score wgmma's
    return s[:i] + load + s[i:]


def splitpv(s):
    head = "      for (int j = 0; j < 16; ++j) {\n        const float p0 = Exp2("
    a = s.index(head)
    b = matching_brace(s, a + len("      for (int j = 0; j < 16; ++j) "))
    loop = s[a:b + 2]  # through "}\n"
    first = loop.replace("for (int j = 0; j < 16; ++j)", "for (int j = 0; j < 8; ++j)", 1)
    second = loop.replace("for (int j = 0; j < 16; ++j)", "for (int j = 8; j < 16; ++j)", 1)
    pv = re.search(r"#pragma unroll\n    for \(int j = 0; j < 8; \+\+j\)\n#pragma unroll\n    for "
                   r"\(int e = 0; e < 4; \+\+e\) WgmmaFenceReg\(o\[0\]\[j\]\[e\]\);\n    WgmmaFence\(\);\n"
                   r"#pragma unroll\n    for \(int kc = 0; kc < 8; \+\+kc\) \{  // EV \(matmul\)\n"
                   r"(.*?)\n    \}\n", s[b:], re.S)
    assert pv, "P·V block not found"
    body = pv.group(1)
    fence_o = ("#pragma unroll\n    for (int j = 0; j < 8; ++j)\n#pragma unroll\n"
               "    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);\n")
    half1 = (fence_o + "    WgmmaFence();\n#pragma unroll\n    for (int kc = 0; kc < 4; ++kc) {\n"
             + body + "\n    }\n")
    half2 = ("    WgmmaFence();\n#pragma unroll\n    for (int kc = 4; kc < 8; ++kc) {\n"
             + body + "\n    }\n")
    s2 = s[:a] + first + half1 + second + s[b + 2:]
    # the original P·V issue becomes the second half
    return s2.replace(pv.group(0), half2, 1)


for tag, text in (("lateload", lateload(src)), ("splitpv", splitpv(src)),
                  ("both", splitpv(lateload(src)))):
    write_variant(src_dir, f"{prefix}__{tag}", text)
    print(f"{prefix}__{tag}")
