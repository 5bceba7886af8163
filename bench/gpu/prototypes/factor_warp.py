"""Hand prototype: qknorm_gqa's rms(V) factors computed by a fifth warp of the partial kernel
(2026-12-04), so that the four consumer warps of the wgmma kernel never run them. Neither form
was faster than the generated kernel (docs/performance.md, 2026-12-04 afternoon).

    python3 bench/gpu/prototypes/factor_warp.py SRC_DIR DST_DIR [MIN_BLOCKS]

SRC_DIR: a `codegen_emit qknorm_gqa B gx=..,T=128,.. DIR "" 0 0 0 0 0 1 1` output (attention_wgmma,
not pipelined, T = 128, one thread per V row). The block grows to 160 threads. Warp 4 takes part in
the two block-wide barriers the consumers run (the Q tile's, and each iteration's head barrier,
after which the chunk's stage has landed), computes the chunk's 128 factors (four rows per lane,
four independent FMA chains), writes them to `vinv` and arrives on named barrier 1. The consumers
issue the score wgmma, take the row max and the exps, and wait on barrier 1 only before P is scaled
by the factors and packed. MIN_BLOCKS (default 1) is __launch_bounds__'s minimum blocks per
SM: with 2, ptxas fits b=8's kernel in 166 registers (212 with 1), two blocks of 160 threads per
SM as the 128-thread kernel had. One `vinv` buffer is enough: the factors of chunk it+1 are written after
the head barrier of iteration it+1, which every consumer passes only after it packed chunk it's P.

AHEAD=1 (argv[5]; needs kStages >= 3), the second form: the factor warps (WARPS, argv[4], 1 or 2)
compute chunk it+1's factors during iteration it, into the other half of a double-buffered
`vinv` (1 KiB, the gap before the stages). The consumers' head barrier waits for two landed
stages (CpAsyncWait<kStages - 3>), their Q barrier for the Q tile and stage 0, and the factor
warps compute chunk 0's factors between the two. The head barrier of iteration it + 1 publishes
the factors: no named barrier. Each lane sums 128 / (32 WARPS) rows as interleaved chains.

The source must come from a build before commit 4785eed, which generates this loop in four
chains with rsqrtf (proto_io.factor_loop_span).
"""
import os, re, sys

from proto_io import factor_loop_span, write_variant


def main():
    s, d = sys.argv[1], sys.argv[2]
    min_blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    fwarps = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    ahead = len(sys.argv) > 5 and sys.argv[5] == "1"
    if ahead:
        return main_ahead(s, d, min_blocks, fwarps)
    src = open(os.path.join(s, "kernel.cu")).read()
    threads = 128
    fn = re.search(r"__launch_bounds__\(128, 1\) (prism_\w+_partial_kv)", src)
    assert fn, "no T=128 partial_kv kernel"
    assert "for (int tp = 0; tp < 1; ++tp) {\n      float mx_lo" in src, "one tile per warp only"
    src = src.replace(fn.group(0), f"__launch_bounds__({threads + 32}, {min_blocks}) {fn.group(1)}")
    # The consumers' factor loop, between the score wgmma's commit and its wait.
    a, b = factor_loop_span(src)
    fac = src[a:b]
    src = src[:a] + src[b:]
    assert f"for (int r = tid; r < 128; r += {threads})" in fac
    fac = fac.replace(f"for (int r = tid; r < 128; r += {threads})",
                      "#pragma unroll\n    for (int r = lane; r < 128; r += 32)")
    # The barrier that published the factors: now named barrier 1, just before P is scaled.
    old = ("    for (int e = 0; e < 4; ++e) WgmmaFenceReg(sc[0][j][e]);\n    __syncthreads();\n"
           "    {\n    const f16_t* vs")
    assert old in src
    src = src.replace(old, old.replace("    __syncthreads();\n", ""))
    p = src.index("      const float ml = m_lo[tp], mh = m_hi[tp];\n")
    p = src.index("\n", p) + 1
    src = (src[:p] + "      asm volatile(\"bar.sync 1, %0;\" :: \"n\"(" + str(threads + 32) +
           ") : \"memory\");  // the factors of warp 4\n" + src[p:])
    # Warp 4's program, right after vinv is declared.
    base = re.search(r"    const unsigned char\* base = (smem \+ \d+ \+ \(it % kStages\) \* \d+);\n",
                     src).group(1)
    q = src.index("  float* vinv = ")
    q = src.index("\n", q) + 1
    warp4 = (
        "  if (warp == 4) {  // rms(V)'s factors (bench/gpu/prototypes/factor_warp.py)\n"
        "    __syncthreads();  // the Q tile's barrier\n"
        "#pragma unroll 1\n"
        "    for (int it = 0; it < kF; ++it) {\n"
        "      __syncthreads();  // the iteration's head barrier: stage it has landed\n"
        f"      const unsigned char* base = {base};\n"
        + fac +
        f"      asm volatile(\"bar.arrive 1, %0;\" :: \"n\"({threads + 32}) : \"memory\");\n"
        "    }\n    return;\n  }\n")
    write_variant(s, d, src[:q] + warp4 + src[q:], (fn.group(1), threads + 32))


def factor_code(vtile, dst, fwarps, eps_expr):
    """Σv² of the chunk's 128 V rows (swizzled tile at `vtile`) by the factor warps, rows
    fl + rr·32·fwarps of lane fl, interleaved chains; the factors to dst[r]."""
    n = 32 * fwarps
    rows = 128 // n
    return (
        f"      const int fl = tid - 128;\n      float ss[{rows}] = {{}};\n"
        "#pragma unroll\n      for (int c = 0; c < 64; c += 8) {\n"
        f"#pragma unroll\n        for (int rr = 0; rr < {rows}; ++rr) {{\n"
        f"          const uint4 w = *reinterpret_cast<const uint4*>({vtile} + Sw128Offset(128, fl + rr * {n}, c));\n"
        "          const u32_t ws4[4] = {w.x, w.y, w.z, w.w};\n"
        "#pragma unroll\n          for (int j = 0; j < 4; ++j) {\n"
        "            const float a = F16ToF32(ws4[j] & 0xffff), b = F16ToF32(ws4[j] >> 16);\n"
        "            ss[rr] = fmaf(a, a, ss[rr]);\n            ss[rr] = fmaf(b, b, ss[rr]);\n"
        "          }\n        }\n      }\n"
        f"#pragma unroll\n      for (int rr = 0; rr < {rows}; ++rr) {dst}[fl + rr * {n}] = "
        f"1.0f / sqrtf(ss[rr] {eps_expr});\n")


def main_ahead(s, d, min_blocks, fwarps):
    src = open(os.path.join(s, "kernel.cu")).read()
    threads = 128
    total = threads + 32 * fwarps
    fn = re.search(r"__launch_bounds__\(128, 1\) (prism_\w+_partial_kv)", src)
    assert fn, "no T=128 partial_kv kernel"
    stages = int(re.search(r"constexpr int kStages = (\d+), kF = (\d+);", src).group(1))
    assert stages >= 3, "AHEAD needs kStages >= 3"
    src = src.replace(fn.group(0), f"__launch_bounds__({total}, {min_blocks}) {fn.group(1)}")
    a, b = factor_loop_span(src)
    fac = src[a:b]
    src = src[:a] + src[b:]
    assert "for (int r = tid; r < 128; r += 128)" in fac and "(r / 128) * 16384" in fac
    vtile = re.search(r"reinterpret_cast<const f16_t\*>\((base \+ \d+) \+ \(r / 128\)", fac).group(1)
    eps_expr = re.search(r"1\.0f / sqrtf\(ss (/ [^)]*)\);", fac).group(1)
    old = ("    for (int e = 0; e < 4; ++e) WgmmaFenceReg(sc[0][j][e]);\n    __syncthreads();\n"
           "    {\n    const f16_t* vs")
    assert old in src
    src = src.replace(old, old.replace("    __syncthreads();\n", ""))
    # The consumers read this iteration's half of vinv.
    n_iv = src.count("reinterpret_cast<const float2*>(vinv + ")
    assert n_iv == 1
    src = src.replace("reinterpret_cast<const float2*>(vinv + ",
                      "reinterpret_cast<const float2*>(vinv + (it & 1) * 128 + ")
    # Two landed stages at the head (chunk it+1's for the factor warps), Q and stage 0 at the
    # Q barrier.
    old_q = "  CpAsyncWait<kStages - 1>();  // the Q tile\n"
    assert old_q in src
    src = src.replace(old_q, "  CpAsyncWait<kStages - 2>();  // the Q tile and stage 0\n")
    old_h = "    CpAsyncWait<kStages - 2>();\n    FenceProxyAsyncShared();\n"
    assert src.count(old_h) == 1
    src = src.replace(old_h, "    CpAsyncWait<kStages - 3>();  // stages it and it+1\n    FenceProxyAsyncShared();\n")
    base = re.search(r"    const unsigned char\* base = smem \+ (\d+) \+ \(it % kStages\) \* (\d+);\n",
                     src)
    off, stride = base.group(1), base.group(2)
    v_rel = vtile.replace("base + ", "")
    q = src.index("  float* vinv = ")
    q = src.index("\n", q) + 1
    warp4 = (
        f"  if (warp >= 4) {{  // rms(V)'s factors, a chunk ahead (bench/gpu/prototypes/factor_warp.py)\n"
        "    __syncthreads();  // the Q barrier: stage 0 has landed\n    {\n"
        f"      const unsigned char* vt = smem + {off} + {v_rel};\n"
        + factor_code("vt", "vinv", fwarps, eps_expr) +
        "    }\n#pragma unroll 1\n    for (int it = 0; it < kF; ++it) {\n"
        "      __syncthreads();  // the head barrier: publishes chunk it's factors; it+1 has landed\n"
        "      if (it + 1 >= kF) continue;\n"
        f"      const unsigned char* vt = smem + {off} + ((it + 1) % kStages) * {stride} + {v_rel};\n"
        + factor_code("vt", "(vinv + ((it + 1) & 1) * 128)", fwarps, eps_expr) +
        "    }\n    return;\n  }\n")
    write_variant(s, d, src[:q] + warp4 + src[q:], (fn.group(1), total))


if __name__ == "__main__":
    main()
