"""Hand prototype: qknorm's rms(V) applied to V in shared memory (each thread scales one 16-byte
chunk of a V row, the row's sum of squares over the 8 lanes of the row) instead of as a column
scale of P in the softmax (docs/performance.md, 2026-12-02)."""
import os, re, shutil, sys
s, d = sys.argv[1], sys.argv[2]
src = open(os.path.join(s, "kernel.cu")).read()
a = src.index("    // Vn (rms): per-row factor")
b = src.index("    float sc[1][", a)
old = src[a:b]
T = int(re.search(r"for \(int \w+ = \w+; \w+ < \d+; \w+ \+= (\d+)\)", old).group(1))
vb = re.search(r"reinterpret_cast<const f16_t\*>\((base \+ \d+) \+", old).group(1)
rows = int(re.search(r"Sw128Offset\((\d+),", old).group(1))
new = f'''    {{  // Vn (rms) in place: each V row of the chunk scaled by 1/rms, 8 threads per row
      for (int q = tid; q < {rows * 8}; q += {T}) {{
        const int r = q / 8, c = q % 8;
        uint4* p = reinterpret_cast<uint4*>(const_cast<unsigned char*>({vb}) + Sw128Offset({rows}, r, c * 8));
        const uint4 w = *p;
        const u32_t ws4[4] = {{w.x, w.y, w.z, w.w}};
        float x[8], ss = 0.f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {{
          x[2 * j] = F16ToF32(ws4[j] & 0xffff); x[2 * j + 1] = F16ToF32(ws4[j] >> 16);
          ss = fmaf(x[2 * j], x[2 * j], ss); ss = fmaf(x[2 * j + 1], x[2 * j + 1], ss);
        }}
        ss += __shfl_xor_sync(0xffffffffu, ss, 1);
        ss += __shfl_xor_sync(0xffffffffu, ss, 2);
        ss += __shfl_xor_sync(0xffffffffu, ss, 4);
        const float inv = 1.0f / sqrtf(ss / 64.0f + 9.99999997e-07f);
        *p = make_uint4(PackF16x2(x[0] * inv, x[1] * inv), PackF16x2(x[2] * inv, x[3] * inv),
                        PackF16x2(x[4] * inv, x[5] * inv), PackF16x2(x[6] * inv, x[7] * inv));
      }}
      FenceProxyAsyncShared();  // the scaled V is read by wgmma (async proxy) after the barrier
    }}
'''
src = src[:a] + new + src[b:]
src = re.sub(r"        const float2 iv = \*reinterpret_cast<const float2\*>\(vinv \+ [^;]*;\n", "", src)
src = src.replace("PackF16x2(p0 * iv.x, p1 * iv.y)", "PackF16x2(p0, p1)").replace("PackF16x2(p2 * iv.x, p3 * iv.y)", "PackF16x2(p2, p3)")
assert "iv." not in src
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "kernel.cu"), "w").write(src)
shutil.copy(os.path.join(s, "launch.json"), d)
