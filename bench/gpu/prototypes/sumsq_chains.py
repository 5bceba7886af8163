"""Hand prototype (2026-12-04): qknorm_gqa's per-row rms(V) factor loop (one thread per V row,
run while the score wgmma is in flight) rewritten to shorten its dependency chain.

    python3 bench/gpu/prototypes/sumsq_chains.py SRC_DIR DST_DIR FORM

SRC_DIR: a `codegen_emit qknorm_gqa B ... "" 0 0 0 0 0 1 1` output (attention_wgmma, T = 128).
FORM:
  rsq   the factor as rsqrtf(ss · (1/D) + eps) instead of 1 / sqrtf(ss / D + eps) (drops the
        IEEE square root and division sequences, about 20 instructions and two branches)
  ch4   rsq, and four accumulators in place of one (a 16-long FMA chain each)
  ch8   rsq, and eight accumulators
  h2    rsq, and the squares of each 16-byte chunk summed in f16x2 (HMUL2 + 3 HFMA2, then two
        converts and two f32 adds): half the instructions; not shippable as is (f16 squares
        overflow for |v| >= 256)
ncu's source counters (docs/performance.md, 2026-12-04) show this loop running about four times
as long as the wgmma it overlaps. Each form was 1–3 % faster (afternoon run 7); codegen now emits
ch4 (attention_gen.cc, vinv_code) outside the pipelined loop.

The source must come from a build before commit 4785eed, which generates this loop in four
chains with rsqrtf (proto_io.factor_loop_span).
"""
import os, re, sys

from proto_io import factor_loop_span, write_variant

SUM1 = """          const u32_t ws4[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float a = F16ToF32(ws4[j] & 0xffff), b = F16ToF32(ws4[j] >> 16);
            ss = fmaf(a, a, ss);
            ss = fmaf(b, b, ss);
          }
"""


def main():
    s, d, form = sys.argv[1], sys.argv[2], sys.argv[3]
    src = open(os.path.join(s, "kernel.cu")).read()
    a, b = factor_loop_span(src)
    fac = src[a:b]
    assert SUM1 in fac and "      float ss = 0.f;\n" in fac
    m = re.search(r"1\.0f / sqrtf\(ss / ([0-9.]+f) \+ ([0-9.e+-]+f)\)", fac)
    dv, eps = m.group(1), m.group(2)
    n = {"rsq": 1, "ch4": 4, "ch8": 8, "h2": 2}[form]
    if form in ("ch4", "ch8"):
        fac = fac.replace("      float ss = 0.f;\n", f"      float ssv[{n}] = {{}};\n")
        body = ("          const u32_t ws4[4] = {w.x, w.y, w.z, w.w};\n#pragma unroll\n"
                "          for (int j = 0; j < 4; ++j) {\n"
                "            const float a = F16ToF32(ws4[j] & 0xffff), b = F16ToF32(ws4[j] >> 16);\n")
        if n == 4:
            body += ("            ssv[j] = fmaf(a, a, ssv[j]);\n            ssv[j] = fmaf(b, b, ssv[j]);\n")
        else:
            body += ("            ssv[2 * j] = fmaf(a, a, ssv[2 * j]);\n"
                     "            ssv[2 * j + 1] = fmaf(b, b, ssv[2 * j + 1]);\n")
        body += "          }\n"
        fac = fac.replace(SUM1, body)
        total = " + ".join(f"ssv[{i}]" for i in range(n))
        fac = fac.replace(m.group(0), f"rsqrtf(({total}) * (1.0f / {dv}) + {eps})")
    elif form == "h2":
        fac = fac.replace("      float ss = 0.f;\n", "      float ssv[2] = {};\n")
        body = ("          u32_t h = MulF16x2(w.x, w.x);\n"
                "          asm(\"fma.rn.f16x2 %0, %1, %1, %0;\" : \"+r\"(h) : \"r\"(w.y));\n"
                "          asm(\"fma.rn.f16x2 %0, %1, %1, %0;\" : \"+r\"(h) : \"r\"(w.z));\n"
                "          asm(\"fma.rn.f16x2 %0, %1, %1, %0;\" : \"+r\"(h) : \"r\"(w.w));\n"
                "          ssv[0] += F16ToF32(h & 0xffff);\n          ssv[1] += F16ToF32(h >> 16);\n")
        fac = fac.replace(SUM1, body)
        fac = fac.replace(m.group(0), f"rsqrtf((ssv[0] + ssv[1]) * (1.0f / {dv}) + {eps})")
    else:
        fac = fac.replace(m.group(0), f"rsqrtf(ss * (1.0f / {dv}) + {eps})")
    src = src[:a] + fac + src[b:]
    write_variant(s, d, src)


if __name__ == "__main__":
    main()
