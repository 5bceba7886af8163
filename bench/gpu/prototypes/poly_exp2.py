"""Hand prototype: part of the softmax's exp2 on the FMA pipe instead of MUFU (the software
exp2 of FlashAttention-4), to relieve the MUFU pipe of the wgmma attention loop.

    python3 poly_exp2.py SRC DST WHICH

SRC is a codegen_emit output of an attention_wgmma instance. WHICH names the scores of each
n8 block that take the polynomial: "1" (p1: a quarter of the scores) or "13" (p1 and p3: half).
The polynomial: x clamped at -125, rounded to an integer n by the 1.5·2^23 trick (FADDs, no
conversion instruction), f = x - n in [-0.5, 0.5], 2^f by a degree-4 polynomial (Taylor,
relative error below 5e-5, under P's f16 rounding), and 2^n added to the exponent bits.
"""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, dst_dir, which = sys.argv[1], sys.argv[2], sys.argv[3]
src = open(os.path.join(src_dir, "kernel.cu")).read()

helper = r"""namespace prism_dev {
// 2^x on the FMA pipe: for x <= 0 as in the softmax (clamped at -125, where 2^x is 0 in f16).
__device__ __forceinline__ float Exp2Poly(float x) {
  x = fmaxf(x, -125.0f);
  const float t = x + 12582912.0f;  // 1.5 * 2^23: round(x) in the low mantissa bits
  const float f = x - (t - 12582912.0f);  // in [-0.5, 0.5]
  float p = fmaf(0.0096181291f, f, 0.0555041087f);
  p = fmaf(p, f, 0.2402265070f);
  p = fmaf(p, f, 0.6931471806f);
  p = fmaf(p, f, 1.0f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}
}  // namespace prism_dev
"""
i = src.index('extern "C" __global__ void __launch_bounds__(128')
src = src[:i] + helper + src[i:]
n = 0
for k in which:
    pat = f"const float p{k} = Exp2(fmaf("
    n += src.count(pat)
    src = src.replace(pat, f"const float p{k} = Exp2Poly(fmaf(")
assert n >= 1, "no score exp2 found"
write_variant(src_dir, dst_dir, src)
print(f"{dst_dir}: {n} exp2 call sites on the FMA pipe")
