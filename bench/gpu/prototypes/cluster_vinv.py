"""Hand prototype: qknorm_gqa's wgmma partial kernel (codegen_emit output, T = 128, one
warpgroup per block) launched as clusters of the gy query-tile blocks of a (head, KV chunk):
each rank computes the rms(V) factors of 128/gy rows of the chunk (4 threads per row),
publishes them in its shared memory (double-buffered by iteration parity), arrives on the
cluster barrier before the score wgmma and waits after its commit, then reads every rank's
factors over distributed shared memory. The factors are computed once per cluster instead of
once per block (gy = 4: a quarter of the work). A cluster barrier before exit keeps every
rank's shared memory alive until the others have read it.

    python3 cluster_vinv.py SRC_DIR DST_DIR"""
import json, os, re, shutil, sys

src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
gy = launch["kernels"][0]["grid"][1]
k0 = src.index("_partial_kv(")
a = src.index("    // Vn (rms): per-row factor", k0)
b = src.index("vinv[r] = 1.0f / sqrtf(", a)
b = src.index("\n    }\n", b) + len("\n    }\n")
old = src[a:b]
rows = int(re.search(r"for \(int r = tid; r < (\d+); r \+= 128\)", old).group(1))
assert rows == 128 and rows % gy == 0, (rows, gy)
per = rows // gy  # rows per rank
lanes = 128 // per  # threads per row
cols = 64 // lanes
new = f"""    // Vn (rms): this rank's {per} rows of the chunk, {lanes} threads per row, published
    {{
      const int r = (int)crank * {per} + tid / {lanes}, part = tid % {lanes};
      float ss = 0.f;
      const unsigned char* row = base + 16384;
#pragma unroll
      for (int c = part * {cols}; c < part * {cols} + {cols}; c += 8) {{
        const uint4 w = *reinterpret_cast<const uint4*>(row + Sw128Offset(128, r, c));
        const u32_t ws4[4] = {{w.x, w.y, w.z, w.w}};
#pragma unroll
        for (int j = 0; j < 4; ++j) {{
          const float a = F16ToF32(ws4[j] & 0xffff), b = F16ToF32(ws4[j] >> 16);
          ss = fmaf(a, a, ss);
          ss = fmaf(b, b, ss);
        }}
      }}
"""
x = 1
while x < lanes:
    new += f"      ss += __shfl_xor_sync(0xffffffffu, ss, {x});\n"
    x *= 2
new += f"""      if (part == 0) vinv[128 + (it & 1) * {per} + tid / {lanes}] = 1.0f / sqrtf(ss / 64.0f + 9.99999997e-07f);
    }}
    asm volatile("barrier.cluster.arrive.release.aligned;\\n" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;\\n" ::: "memory");
    vinv[tid] = LdClusterF32(MapShared(vpub + (u32_t)(((it & 1) * {per} + tid % {per}) * 4), (u32_t)(tid / {per})));
"""
src = src[:a] + new + src[b:]
t = src.index("const int tid = threadIdx.x", k0)
t = src.index("\n", t) + 1
src = src[:t] + ("  const u32_t crank = ClusterRank();  // the query tile within the cluster\n"
                 "  const u32_t vpub = static_cast<u32_t>(__cvta_generic_to_shared(smem + 8192 + 512));\n") + src[t:]
e = src.index("  CpAsyncWait<0>();\n  // Partial sums", k0)
src = src[:e] + "  ClusterSync();  // the other ranks have read this block's factors\n" + src[e:]
launch["kernels"][0]["cluster"] = [1, gy, 1]
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
