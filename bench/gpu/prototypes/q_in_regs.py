"""Hand prototype: the score wgmma with Q's A fragments in registers (wgmma RS) instead of read
from shared memory by descriptor (SS), so each chunk's S = Q·K reads only K from shared memory
(16 KB instead of 24 KB per warpgroup and chunk at D = 64; the stage fill and P·V's V reads stay).

    python3 q_in_regs.py SRC DST

SRC is a codegen_emit output of an attention_wgmma instance (T = 128, one 64-row tile, D = 64).
After the Q tile has arrived (and qknorm's rms(Q) factors are taken from it), each warp loads
its 16 rows × 64 columns of Q with four ldmatrix.x4 (the tile is 128-byte swizzled: 16-byte
chunk c of row r sits at chunk c ^ (r % 8)) into qf[4][4], 16 registers, the m16n8k16 A layout
that wgmma's register operand takes per warp.
"""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
assert "__launch_bounds__(128, 1)" in src

d = ", ".join(f'"+f"(d[{i // 4}][{i % 4}])' for i in range(64))
regs = ",".join(f"%{i}" for i in range(64))
helper = (
    "namespace prism_dev {\n"
    "__device__ __forceinline__ void WgmmaM64N128K16RS(float (&d)[16][4], const u32_t (&a)[4], "
    "unsigned long long desc, int accumulate) {\n"
    '  asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %69, 0;\\n'
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" + regs + "}, {%64,%65,%66,%67}, %68, "
    'p, 1, 1, 1;\\n}\\n"\n'
    "    : " + d + '\n    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), '
    '"r"(accumulate));\n}\n'
    "__device__ __forceinline__ void LdMatrixX4(u32_t (&r)[4], const unsigned char* p) {\n"
    "  const u32_t a = static_cast<u32_t>(__cvta_generic_to_shared(p));\n"
    '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n"\n'
    '               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));\n}\n'
    "}  // namespace prism_dev\n")
i = src.index('extern "C" __global__ void __launch_bounds__(128, 1)')
src = src[:i] + helper + src[i:]

q_ready = "  CpAsyncWait<kStages - 1>();  // the Q tile\n  __syncthreads();\n"
assert src.count(q_ready) == 1
load_q = (q_ready +
          "  u32_t qf[4][4];  // Q's A fragments: rows 16·warp + [0, 16), k16 slice kc\n"
          "#pragma unroll\n"
          "  for (int kc = 0; kc < 4; ++kc)\n"
          "    LdMatrixX4(qf[kc], smem + Sw128Offset(64, warp * 16 + (lane & 15), "
          "kc * 16 + (lane >> 4) * 8));\n")
src = src.replace(q_ready, load_q)
s_issue = re.search(r"WgmmaM64N128K16SS\(sc\[0\], WgmmaDescSw128\(qb \+ \(kc >> 2\) \* 8192 \+ "
                    r"\(kc & 3\) \* 32, 16, 1024\), ", src)
assert s_issue, "S issue not found"
src = src.replace(s_issue.group(0), "WgmmaM64N128K16RS(sc[0], qf[kc], ")
write_variant(src_dir, dst_dir, src)
print(dst_dir)
