"""Hand prototype: a wgmma split-KV attention program in one kernel, the combine done inside
thread block clusters along the split axis with vector loads of distributed shared memory.

    python3 cluster_lse_combine.py SRC DST

SRC is a codegen_emit output of an attention_wgmma instance with one 64-row warpgroup tile per
block (T = 128) and log-sum-exp partials. After the loop each block writes its normalized
partial O (64 × 64 f32, row pitch 68) and its rows' log2 Σ exp into shared memory (aliasing the
stages), the cluster (1, 1, gz) meets at a barrier, and rank r combines rows
[r·64/gz, (r+1)·64/gz) of the tile from every rank's shared memory (ld.shared::cluster.v2/.v4,
all of a thread's loads in flight), writes O in f16 and meets the cluster again before exiting.
The combine kernel is dropped from launch.json.
"""
import json, os, re, sys

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
k0, k1 = launch["kernels"][0], launch["kernels"][1]
gx, gy, gz = k0["grid"]
assert k0["block"][0] == 128 and "__launch_bounds__(128, 1)" in src
out_arg = [a for a in k1["args"] if a["access"] == "write"][0]
H, MQ, DV = out_arg["shape"]
assert DV == 64 and 64 % gz == 0 and MQ == gy * 64, (H, MQ, DV, gz)
rows = 64 // gz
per_thread = rows * 64 // 128
vw = 4 if per_thread >= 4 else per_thread
npt = per_thread // vw
stage_off = int(re.search(r"unsigned char\* base = smem \+ (\d+) \+ stage \*", src).group(1))

start = src.index("  CpAsyncWait<0>();\n  // Partials in log-sum-exp form")
end = src.index("\n}\n", start)
ld = {2: ("float2", "ld.shared::cluster.v2.f32 {%0,%1}, [%2];", '"=f"(v.x), "=f"(v.y)'),
      4: ("float4", "ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];",
          '"=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)')}[vw]
comps = ["x", "y", "z", "w"][:vw]
acc = "; ".join(f"a{c} = fmaf(w, v.{c}, a{c})" for c in comps)
pack = ("const uint2 pk = make_uint2(PackF16x2(ax * inv, ay * inv), PackF16x2(az * inv, aw * inv));\n"
        "        *reinterpret_cast<uint2*>(dst) = pk;" if vw == 4 else
        "*reinterpret_cast<u32_t*>(dst) = PackF16x2(ax * inv, ay * inv);")
epi = f"""  CpAsyncWait<0>();
  __syncthreads();  // every warp is done with the stages: the exchange tiles alias them
  // cluster_lse_combine prototype: partial tiles in shared memory, combined across the cluster
  float* ot = reinterpret_cast<float*>(smem + {stage_off});  // [64][68] Σ P·V / Σ P
  float* lsx = ot + 64 * 68;  // [64] m + log2 Σ P
  {{
    const int r_lo = (tile0 % 4) * 16 + g, r_hi = r_lo + 8;
    const float ls_lo = QuadSum(l_lo[0]), ls_hi = QuadSum(l_hi[0]);
    const float e_lo = __fdividef(1.0f, ls_lo), e_hi = __fdividef(1.0f, ls_hi);
#pragma unroll
    for (int j = 0; j < 8; ++j) {{
      const int c = j * 8 + 2 * t4;
      *reinterpret_cast<float2*>(ot + r_lo * 68 + c) = make_float2(o[0][j][0] * e_lo, o[0][j][1] * e_lo);
      *reinterpret_cast<float2*>(ot + r_hi * 68 + c) = make_float2(o[0][j][2] * e_hi, o[0][j][3] * e_hi);
    }}
    if (t4 == 0) {{ lsx[r_lo] = m_lo[0] + __log2f(ls_lo); lsx[r_hi] = m_hi[0] + __log2f(ls_hi); }}
  }}
  ClusterSync();
  {{
    const u32_t rank = ClusterRank();
    const u32_t ot_s = static_cast<u32_t>(__cvta_generic_to_shared(ot));
    const u32_t ls_s = static_cast<u32_t>(__cvta_generic_to_shared(lsx));
#pragma unroll
    for (int q = 0; q < {npt}; ++q) {{
      const int e = (q * 128 + tid) * {vw};
      const int row = rank * {rows} + e / 64, col = e % 64;
      float d[{gz}];
      float mx = -__int_as_float(0x7f800000);
#pragma unroll
      for (int s = 0; s < {gz}; ++s) {{
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(d[s]) : "r"(MapShared(ls_s + row * 4, s)));
        mx = fmaxf(mx, d[s]);
      }}
      {ld[0]} vs[{gz}];
#pragma unroll
      for (int s = 0; s < {gz}; ++s) {{
        {ld[0]} v;
        asm volatile("{ld[1]}" : {ld[2]} : "r"(MapShared(ot_s + (row * 68 + col) * 4, s)));
        vs[s] = v;
      }}
      float {", ".join(f"a{c} = 0.f" for c in comps)}, den = 0.f;
#pragma unroll
      for (int s = 0; s < {gz}; ++s) {{
        const float w = Exp2(d[s] - mx);
        den += w;
        const {ld[0]} v = vs[s];
        {acc};
      }}
      const float inv = __fdividef(1.0f, den);
      f16_t* dst = t_O + (((long long)blockIdx.x) * {MQ}LL + (long long)blockIdx.y * 64LL + row) * 64LL + col;
      {pack}
    }}
  }}
  ClusterSync();  // no block leaves while another reads its shared memory"""
src = src[:start] + epi + src[end:]
# The kernel also takes O (appended to its parameters).
sig = re.search(r"(extern \"C\" __global__ void __launch_bounds__\(128, 1\) \w+\([^)]*)\)", src)
src = src[:sig.end(1)] + ", prism_dev::f16_t* __restrict__ t_O)" + src[sig.end():]
k0["args"].append(dict(out_arg))
k0["cluster"] = [1, 1, gz]
launch["kernels"] = [k0]
launch["output"] = out_arg["tensor"]
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(dst_dir, "cluster", gz, "rows/rank", rows, "vec", vw, "x", npt)
