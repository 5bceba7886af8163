"""Hand prototype: Σ P on the tensor cores of the wgmma attention loop, as a ninth n8 column
block of the P·V wgmma (N = 72) whose B operand is a constant tile of ones.

    python3 ones_column.py SRC DST

SRC is a codegen_emit output of a gqa attention_wgmma instance with one warpgroup per block
(T = 128; not qknorm_gqa, whose P carries the rms(V) factors). Per chunk and thread the loop
loses the 64 FADDs of l += p0 + p1 and the rescale of l; the P·V wgmma grows from N = 64 to
N = 72, its second 64-column panel read through the descriptor's leading byte offset from a
16 KB tile of f16 ones after the stages. Every column of that panel is Σ_k P[r, k], so the
epilogue reads the row sum from accumulator block 8 instead of a quad sum.
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
assert "__launch_bounds__(128, 1)" in src and "qsc_lo" in src
stages = int(re.search(r"constexpr int kStages = (\d+)", src).group(1))
m = re.search(r"unsigned char\* base = smem \+ (\d+) \+ stage \* (\d+);", src)
off, stage_bytes = int(m.group(1)), int(m.group(2))
ones = off + stages * stage_bytes  # the ones tile, 1024-aligned like the stages


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old, src.count(old))
    src = src.replace(old, new)


# The N = 72 helper (register A, B MN-major), after the N = 64 one.
regs = ", ".join(f'"+f"(d[{j}][{e}])' for j in range(9) for e in range(4))
outs = ",".join(f"%{i}" for i in range(36))
helper = (
    "namespace prism_dev {\n"
    "__device__ __forceinline__ void WgmmaM64N72K16(float (&d)[9][4], const u32_t (&a)[4], "
    "unsigned long long desc, int accumulate) {\n"
    '  asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %41, 0;\\nwgmma.mma_async.sync.aligned.'
    f'm64n72k16.f32.f16.f16 {{{outs}}}, {{%36,%37,%38,%39}}, %40, p, 1, 1, 1;\\n}}\\n"\n'
    f"    : {regs}\n"
    '    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));\n'
    "}\n}  // namespace prism_dev\n")
i = src.index("extern \"C\" __global__ void __launch_bounds__(128, 1)")
src = src[:i] + helper + src[i:]

sub("  float o[1][8][4] = {};  // Σ P·V (scaled by exp(-m))",
    "  float o[1][9][4] = {};  // Σ P·V (scaled by exp(-m)); block 8: Σ P")
# The ones tile, written before the first barrier (the loop's proxy fence orders it for wgmma).
sub("  CpAsyncWait<kStages - 1>();  // the Q tile\n",
    f"  for (int i = tid; i < 1024; i += 128) reinterpret_cast<uint4*>(smem + {ones})[i] = "
    "make_uint4(0x3C003C00u, 0x3C003C00u, 0x3C003C00u, 0x3C003C00u);\n"
    "  CpAsyncWait<kStages - 1>();  // the Q tile\n")
sub("        l_lo[tp] *= a_lo;\n        l_hi[tp] *= a_hi;\n", "")
sub("        for (int j = 0; j < 8; ++j) {\n          o[tp][j][0] *= a_lo;",
    "        for (int j = 0; j < 9; ++j) {\n          o[tp][j][0] *= a_lo;")
sub("        l_lo[tp] += p0 + p1;\n        l_hi[tp] += p2 + p3;\n", "")
sub("    for (int j = 0; j < 8; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);",
    "    for (int j = 0; j < 9; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);",
    count=2)
pv = re.search(r"WgmmaM64N64K16\(o\[0\], a, WgmmaDescSw128\(reinterpret_cast<const unsigned char\*>\(vs\) "
               r"\+ \(col0 \+ kc \* 16\) \* 128, (\d+), 1024\), 1\);", src)
assert pv, "P·V wgmma not found"
# vs = smem + off + stage·stage_bytes + K bytes (+ wh·…, one head here); lbo reaches the ones.
kbytes = int(re.search(r"const f16_t\* vs = reinterpret_cast<const f16_t\*>\(base \+ (\d+) \+ wh", src).group(1))
lbo = f"(u32_t)({ones - off - kbytes} - (it % kStages) * {stage_bytes})"
src = src.replace(pv.group(0),
                  "WgmmaM64N72K16(o[0], a, WgmmaDescSw128(reinterpret_cast<const unsigned char*>(vs) "
                  f"+ (col0 + kc * 16) * 128, {lbo}, 1024), 1);")
sub("const float ls_lo = QuadSum(l_lo[tp]), ls_hi = QuadSum(l_hi[tp]);",
    "const float ls_lo = o[tp][8][0], ls_hi = o[tp][8][2];")
write_variant(src_dir, dst_dir, src)
launch = json.load(open(os.path.join(dst_dir, "launch.json")))
k = launch["kernels"][0]
k["dynamic_smem_bytes"] += 16384
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(f"{dst_dir}: ones tile at +{ones}, dynamic smem {k['dynamic_smem_bytes']}")
