"""Hand prototype: the query-tile blocks of one head share their K and V chunks through
distributed shared memory, so each chunk crosses from L2 once per cluster instead of once per
block.

    python3 cluster_kv_share.py SRC DST [C]

SRC is a codegen_emit output of a gqa or qknorm_gqa attention_wgmma instance with one
warpgroup per block (T = 128), one head per block and gy a multiple of C (default 4). The
blocks (x, y..y+C-1, z) form a cluster of C along y: they read the same K and V chunks. Per
chunk each block loads 1/C of the rows of K and of V from global memory into registers
(16-byte loads) and stores every 16 bytes into the same swizzled place in all C blocks' stage
(`st.shared::cluster`), then the cluster meets at one barrier (release / acquire) per chunk.
Chunk it+1 is loaded while chunk it is computed and stored after it, so two stages suffice;
the stores of chunk it+1 go to the stage every block finished reading at the last barrier.
L2→SM traffic for K and V drops by C (gqa b=8: 67 MB to 17 MB per call); the SM-to-SM traffic
is what replaces it.
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, dst_dir = sys.argv[1], sys.argv[2]
C = int(sys.argv[3]) if len(sys.argv) > 3 else 4
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
k0 = launch["kernels"][0]
assert "__launch_bounds__(128, 1)" in src and k0["grid"][1] % C == 0

m = re.search(r"      LoadTileSw128Async<(\d+), (\d+), 128>\(base \+ h \* (\d+), t_Kt \+ (.*?), 4096LL, tid\);  // Ktt \(input\)\n", src)
kr, kc, kbytes, kaddr = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
m2 = re.search(r"      LoadTileSw128Async<(\d+), (\d+), 128>\(base \+ (\d+) \+ h \* \d+, t_V \+ (.*?), 64LL, tid\);  // Vt \(input\)\n", src)
vr, vc, voff, vaddr = int(m2.group(1)), int(m2.group(2)), int(m2.group(3)), m2.group(4)
assert (kr, kc, vr, vc) == (64, 128, 128, 64), (kr, kc, vr, vc)
stage_m = re.search(r"unsigned char\* base = smem \+ (\d+) \+ stage \* (\d+);", src)
off, stage_bytes = int(stage_m.group(1)), int(stage_m.group(2))
kF = int(re.search(r"constexpr int kStages = \d+, kF = (\d+);", src).group(1))

# Per block and chunk: K rows [rank·64/C, …) of its two panels and V rows [rank·128/C, …).
k_rows, v_rows = kr // C, vr // C
k_chunks, v_chunks = k_rows * (kc // 8), v_rows * (vc // 8)
assert k_chunks % 128 == 0 and v_chunks % 128 == 0
nk, nv = k_chunks // 128, v_chunks // 128
n = nk + nv

loader = f"""  u32_t peer[{C}];  // this block's shared base in each block of the cluster
  {{
    const u32_t s = static_cast<u32_t>(__cvta_generic_to_shared(smem));
#pragma unroll
    for (int q = 0; q < {C}; ++q) asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer[q]) : "r"(s), "r"(q));
  }}
  u32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  uint4 kvr[{n}];  // this thread's 16-byte pieces of the next chunk
  u32_t kvo[{n}];  // their offsets in a stage
#pragma unroll
  for (int i = 0; i < {nk}; ++i) {{
    const int c = tid + i * 128, r = rank * {k_rows} + c / {kc // 8}, cc = c % {kc // 8};
    kvo[i] = (cc >> 3) * {kr * 128} + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
  }}
#pragma unroll
  for (int i = 0; i < {nv}; ++i) {{
    const int c = tid + i * 128, r = rank * {v_rows} + c / {vc // 8}, cc = c % {vc // 8};
    kvo[{nk} + i] = {voff} + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
  }}
  auto load_regs = [&](int it) {{
    const int h = 0;
    const f16_t* kg = t_Kt + {kaddr};
    const f16_t* vg = t_V + {vaddr};
#pragma unroll
    for (int i = 0; i < {nk}; ++i) {{
      const int c = tid + i * 128, r = rank * {k_rows} + c / {kc // 8}, cc = c % {kc // 8};
      kvr[i] = __ldg(reinterpret_cast<const uint4*>(kg + r * 4096LL + cc * 8));
    }}
#pragma unroll
    for (int i = 0; i < {nv}; ++i) {{
      const int c = tid + i * 128, r = rank * {v_rows} + c / {vc // 8}, cc = c % {vc // 8};
      kvr[{nk} + i] = __ldg(reinterpret_cast<const uint4*>(vg + r * 64LL + cc * 8));
    }}
  }};
  auto store_regs = [&](int stage) {{
#pragma unroll
    for (int q = 0; q < {C}; ++q)
#pragma unroll
      for (int i = 0; i < {n}; ++i)
        asm volatile("st.shared::cluster.v4.b32 [%0], {{%1, %2, %3, %4}};" ::"r"(peer[q] + {off} + stage * {stage_bytes} + kvo[i]),
                     "r"(kvr[i].x), "r"(kvr[i].y), "r"(kvr[i].z), "r"(kvr[i].w) : "memory");
    asm volatile("fence.proxy.async.shared::cluster;" ::: "memory");
  }};
  auto cluster_sync = [&]() {{
    asm volatile("barrier.cluster.arrive.release.aligned;\\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  }};
"""

# Replace the cp.async stage loader and the prologue's stage loads.
i = src.index("  auto load_stage = [&](int it, int stage) {\n")
j = src.index("  };\n", i) + len("  };\n")
src = src[:i] + loader + src[j:]
pro = re.search(r"#pragma unroll\n  for \(int st = 0; st < kStages - 1; \+\+st\) \{\n    if \(st < kF\) load_stage\(st, st\);\n    CpAsyncCommit\(\);\n  \}\n  CpAsyncWait<kStages - 1>\(\);  // the Q tile\n  __syncthreads\(\);\n", src)
assert pro, "prologue not found"
src = src.replace(pro.group(0),
                  "  cluster_sync();  // every block of the cluster runs before any stores into it\n"
                  "  load_regs(0);\n  store_regs(0);\n  CpAsyncWait<0>();  // the Q tile\n"
                  "  FenceProxyAsyncShared();\n  cluster_sync();\n")
head = re.search(r"  for \(int it = 0; it < kF; \+\+it\) \{\n    CpAsyncWait<kStages - 2>\(\);\n    FenceProxyAsyncShared\(\);\n    __syncthreads\(\);\n    if \(it \+ kStages - 1 < kF\) load_stage\(it \+ kStages - 1, \(it \+ kStages - 1\) % kStages\);\n    CpAsyncCommit\(\);\n    const unsigned char\* base = smem \+ (\d+) \+ \(it % kStages\) \* (\d+);\n", src)
assert head, "loop head not found"
src = src.replace(head.group(0),
                  "  for (int it = 0; it < kF; ++it) {\n"
                  "    if (it + 1 < kF) load_regs(it + 1);\n"
                  f"    const unsigned char* base = smem + {head.group(1)} + (it % 2) * {head.group(2)};\n")
# The loop's end: the next chunk into every block's other stage, then the cluster barrier.
tail = "  }\n  CpAsyncWait<0>();\n  // Partials"
assert src.count(tail) == 1
src = src.replace(tail, "    if (it + 1 < kF) {\n      store_regs((it + 1) % 2);\n      cluster_sync();\n      FenceProxyAsyncShared();\n    }\n" + tail)
src = src.replace("constexpr int kStages = ", "constexpr int kStagesUnused = ")
assert "load_stage" not in src and "kStages" not in src.replace("kStagesUnused", ""), "leftover stage code"
write_variant(src_dir, dst_dir, src)
launch = json.load(open(os.path.join(dst_dir, "launch.json")))
k = launch["kernels"][0]
k["cluster"] = [1, C, 1]
print(f"{dst_dir}: cluster (1, {C}, 1), {nk}+{nv} 16-byte pieces per thread and chunk, kF {kF}")
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
