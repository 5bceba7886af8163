"""Hand prototype (2026-12-04): qknorm_gqa's rms(V) Σv² on the tensor cores as (V∘V)·1 with
mma.sync, in place of one thread per V row with 64 converts and a 64-long FMA chain. Slower in
both placements (docs/performance.md, 2026-12-04 afternoon run 6).

    python3 bench/gpu/prototypes/mma_sumsq.py SRC_DIR DST_DIR [pre]

SRC_DIR: a `codegen_emit qknorm_gqa B gx=..,T=128,.. DIR "" 0 0 0 0 0 1 1` output (attention_wgmma,
not pipelined, T = 128, one head per block, 128-row chunks). ncu's source counters on b=8's
selection (docs/performance.md, 2026-12-04) put 239 warp instructions per chunk between the score
wgmma's commit and its wait (43 in gqa), and four times gqa's stall samples there. Here each warp
takes 32 rows: per 16 × 16 tile one ldmatrix.x4, four HMUL2 (the squares, f16) and one mma with
B = ones, whose f32 accumulators hold the row sums; about 80 instructions. Not for shipping:
the f16 squares overflow for |v| ≥ 256 and lose values below about 2.4e-4, which a generated
form would have to catch. With `pre` the factors are computed before the score wgmma is issued
rather than while it runs (mma.sync and wgmma share the tensor cores).

The source must come from a build before commit 4785eed, which generates this loop in four
chains with rsqrtf (proto_io.factor_loop_span).
"""
import os, re, sys

from proto_io import factor_loop_span, write_variant

FACTORS = """    {  // Vn (rms) on the tensor cores: Σv² of this warp's 32 V rows as (V∘V)·1 (mma_sumsq.py)
      const unsigned char* vt = %(vtile)s;
      const u32_t ones[2] = {0x3c003c00u, 0x3c003c00u};
      float ssq[2][4] = {};
#pragma unroll
      for (int kc = 0; kc < 4; ++kc) {
#pragma unroll
        for (int rt = 0; rt < 2; ++rt) {
          const int row = warp * 32 + rt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int col = kc * 16 + (lane >> 4) * 8;
          const u32_t addr = static_cast<u32_t>(__cvta_generic_to_shared(vt + Sw128Offset(128, row, col)));
          u32_t a[4];
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%0,%%1,%%2,%%3}, [%%4];\\n"
                       : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(addr));
#pragma unroll
          for (int j = 0; j < 4; ++j) a[j] = MulF16x2(a[j], a[j]);
          MmaM16N8K16(ssq[rt], a, ones);
        }
      }
      if (t4 == 0) {
#pragma unroll
        for (int rt = 0; rt < 2; ++rt) {
          vinv[warp * 32 + rt * 16 + g] = 1.0f / sqrtf(ssq[rt][0] %(eps)s);
          vinv[warp * 32 + rt * 16 + g + 8] = 1.0f / sqrtf(ssq[rt][2] %(eps)s);
        }
      }
    }
"""


def main():
    s, d = sys.argv[1], sys.argv[2]
    pre = len(sys.argv) > 3 and sys.argv[3] == "pre"
    src = open(os.path.join(s, "kernel.cu")).read()
    assert "__launch_bounds__(128, 1)" in src and "kv = warp / 4" in src
    a, b = factor_loop_span(src)
    fac = src[a:b]
    assert "for (int r = tid; r < 128; r += 128)" in fac and "(r / 128) * 16384" in fac
    vtile = re.search(r"reinterpret_cast<const f16_t\*>\((base \+ \d+) \+ \(r / 128\)", fac).group(1)
    eps = re.search(r"1\.0f / sqrtf\(ss (/ [^)]*)\);", fac).group(1)
    new = FACTORS % {"vtile": vtile, "eps": eps}
    if pre:
        src = src[:a] + src[b:]
        w = src.rindex("    WgmmaFence();\n", 0, a)
        src = src[:w] + new + src[w:]
    else:
        src = src[:a] + new + src[b:]
    write_variant(s, d, src)


if __name__ == "__main__":
    main()
