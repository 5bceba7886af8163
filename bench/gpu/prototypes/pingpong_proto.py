"""Hand prototype on top of ws_proto.py's output (gqa, attention_wgmma, one 64-row tile per
warp, 64-column chunks, Dv 64): FA3's inter-warpgroup ping-pong. Warpgroups 2p and 2p+1 take
turns on the tensor cores through two named barriers: a warpgroup issues S(i) = Q·K(i) and
P(i-1)·V(i-1) together, lets its partner issue, and runs softmax(i) while the partner's GEMMs
run. P(i-1)·V(i-1) completes before P(i) overwrites the P registers, so no register doubles.
Usage: pingpong_proto.py WS_DIR OUT_DIR."""
import os, re, shutil, sys
s, d = sys.argv[1], sys.argv[2]
src = open(os.path.join(s, "kernel.cu")).read()
a = src.index("#pragma unroll 1\n  for (int it = 0; it < kF; ++it) {\n    MbarWait(&full_bar")
b = src.index("  // Partial sums × exp(m), stored from the fragments")
loop = src[a:b]
assert "float sc[1][8][4]" in loop and "vinv" not in loop, "gqa, 64-column chunks only"
m = re.search(r"smem \+ (\d+) \+ \(it % kStages\) \* (\d+)", loop)
qoff, stage = m.group(1), m.group(2)
qline = re.search(r"\n(\s*const unsigned char\* qb = [^\n]*)\n", loop).group(1).strip()
sline = re.search(r"\n\s*(for \(int kc = 0; kc < 4; \+\+kc\) WgmmaM64N64K16SS\(sc\[0\][^\n]*)\n", loop).group(1).replace("sc[0]", "sc")
new = r'''  // FA3 ping-pong between warpgroups 2p and 2p+1 (named barriers 1 + warpgroup, 256 threads).
  const int wg = warp / 4;
  const int me_bar = 1 + wg, other_bar = 1 + (wg ^ 1);
  if (wg & 1) asm volatile("bar.arrive %0, 256;\n" ::"r"(other_bar) : "memory");
  u32_t pf[8][2];
  float sc[8][4];
  QLINE
#pragma unroll 1
  for (int it = 0; it <= kF; ++it) {
    const bool has_s = it < kF;
    if (has_s) {
      MbarWait(&full_bar[it % kStages], (it / kStages) & 1);
      FenceProxyAsyncShared();
    }
    asm volatile("bar.sync %0, 256;\n" ::"r"(me_bar) : "memory");
    WgmmaFence();
    if (has_s) {
      const unsigned char* kb = smem + QOFF + (it % kStages) * STAGE + wh * 8192 + (col0 / 64) * 8192;
#pragma unroll
      SLINE
      WgmmaCommit();
    }
    if (it > 0) {
      const unsigned char* vs = smem + QOFF + ((it - 1) % kStages) * STAGE + 8192 + wh * 8192;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);
#pragma unroll
      for (int kc = 0; kc < 4; ++kc) {
        const u32_t av[4] = {pf[2 * kc][0], pf[2 * kc][1], pf[2 * kc + 1][0], pf[2 * kc + 1][1]};
        WgmmaM64N64K16(o[0], av, WgmmaDescSw128(vs + (col0 + kc * 16) * 128, 8192, 1024), 1);
      }
      WgmmaCommit();
    }
    if (!(it == kF && (wg & 1))) asm volatile("bar.arrive %0, 256;\n" ::"r"(other_bar) : "memory");
    if (has_s) {
      if (it > 0) WgmmaWait<1>(); else WgmmaWait<0>();
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) WgmmaFenceReg(sc[j][e]);
      float mx_lo = -__int_as_float(0x7f800000), mx_hi = mx_lo;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        mx_lo = fmaxf(mx_lo, fmaxf(sc[j][0], sc[j][1]));
        mx_hi = fmaxf(mx_hi, fmaxf(sc[j][2], sc[j][3]));
      }
      const float cm_lo = QuadMax(mx_lo) * qsc_lo[0], cm_hi = QuadMax(mx_hi) * qsc_hi[0];
      const float mn_lo = fmaxf(m_lo[0], cm_lo), mn_hi = fmaxf(m_hi[0], cm_hi);
      const float a_lo = Exp2(m_lo[0] - mn_lo), a_hi = Exp2(m_hi[0] - mn_hi);
      m_lo[0] = mn_lo;
      m_hi[0] = mn_hi;
      WgmmaWait<0>();  // P(i-1)·V(i-1): o final for this step, pf and V(i-1) free
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);
#pragma unroll
      for (int j = 0; j < 8; ++j) { WgmmaFenceReg(pf[j][0]); WgmmaFenceReg(pf[j][1]); }
      if (it > 0) {
        __syncwarp();
        if (lane == 0) MbarArrive(&empty_bar[(it - 1) % kStages]);
      }
      l_lo[0] *= a_lo;
      l_hi[0] *= a_hi;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        o[0][j][0] *= a_lo; o[0][j][1] *= a_lo;
        o[0][j][2] *= a_hi; o[0][j][3] *= a_hi;
      }
      const float ml = mn_lo, mh = mn_hi;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float p0 = Exp2(fmaf(sc[j][0], qsc_lo[0], -ml));
        const float p1 = Exp2(fmaf(sc[j][1], qsc_lo[0], -ml));
        const float p2 = Exp2(fmaf(sc[j][2], qsc_hi[0], -mh));
        const float p3 = Exp2(fmaf(sc[j][3], qsc_hi[0], -mh));
        l_lo[0] += p0 + p1;
        l_hi[0] += p2 + p3;
        pf[j][0] = PackF16x2(p0, p1);
        pf[j][1] = PackF16x2(p2, p3);
      }
    } else {
      WgmmaWait<0>();
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);
#pragma unroll
      for (int j = 0; j < 8; ++j) { WgmmaFenceReg(pf[j][0]); WgmmaFenceReg(pf[j][1]); }
    }
  }
'''.replace("STAGE", stage).replace("QOFF", qoff).replace("QLINE", qline).replace("SLINE", sline)
src = src[:a] + new + src[b:]
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "kernel.cu"), "w").write(src)
shutil.copy(os.path.join(s, "launch.json"), d)
print(d)
