"""Hand prototype: turn a generated attention_wgmma kernel into a warp-specialized one
(one producer warp with cp.async + mbarriers, consumer warpgroups without block barriers).
Usage: ws_proto.py SRC_DIR DST_DIR STAGES [CONSUMER_REGS [PRODUCER_REGS]]. With CONSUMER_REGS
(a multiple of 8), the producer is a whole warpgroup that gives registers back
(setmaxnreg.dec to PRODUCER_REGS, default 32) and the consumer warpgroups raise theirs to
CONSUMER_REGS (setmaxnreg.inc), as FA3 does: without it ptxas allocates for the whole block (96
registers a thread at 544 or 640 threads). ptxas compiles each branch within its setmaxnreg
budget (NVRTC/nvcc 13.0, checked 2026-12-02: gqa b=8 T=512+128 spills 84 bytes with 24/120, 20
with 32/120 and none with 40/112, in the producer's code). The block keeps the registers it was
launched with (threads × the per-thread count ptxas reports), and setmaxnreg.inc waits until
the pool has them, so T·CONSUMER + 128·PRODUCER must fit: checked below (at 640 threads and one
block per SM: 640 × 96 = 61440, e.g. 112 / 32)."""
import json, re, sys, os
src_dir, dst_dir, stages = sys.argv[1], sys.argv[2], int(sys.argv[3])
creg = int(sys.argv[4]) if len(sys.argv) > 4 else 0
preg = int(sys.argv[5]) if len(sys.argv) > 5 else 32
PW = 128 if creg else 32  # producer threads
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
k0 = launch["kernels"][0]
T = k0["block"][0]
CW = T // 32
helpers = r'''
namespace prism_dev {
__device__ __forceinline__ void MbarInit(unsigned long long* b, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(static_cast<u32_t>(__cvta_generic_to_shared(b))), "r"(count));
}
__device__ __forceinline__ void MbarArriveCpAsync(unsigned long long* b) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(static_cast<u32_t>(__cvta_generic_to_shared(b))) : "memory");
}
__device__ __forceinline__ void MbarArrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(static_cast<u32_t>(__cvta_generic_to_shared(b))) : "memory");
}
__device__ __forceinline__ void MbarWait(unsigned long long* b, int parity) {
  asm volatile("{\n.reg .pred p;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT;\n}\n" ::"r"(static_cast<u32_t>(__cvta_generic_to_shared(b))), "r"(parity) : "memory");
}
}  // namespace prism_dev
'''
i = src.index('extern "C" __global__ void __launch_bounds__(%d' % T)
src = src[:i] + helpers + src[i:]
src = re.sub(r'__launch_bounds__\(%d(, \d+)?\) (prism_\w+_partial_kv)' % T,
             lambda m: '__launch_bounds__(%d%s) %s' % (T + PW, m.group(1) or '', m.group(2)), src)
src = src.replace('constexpr int kStages = %s' % re.search(r'constexpr int kStages = (\d+)', src).group(1),
                  'constexpr int kStages = %d' % stages, 1)
# barriers
src = src.replace("  const int g = lane >> 2, t4 = lane & 3;\n",
  "  const int g = lane >> 2, t4 = lane & 3;\n  __shared__ unsigned long long full_bar[%d], empty_bar[%d];\n"
  "  if (tid == 0) { for (int s = 0; s < %d; ++s) { MbarInit(&full_bar[s], %d); MbarInit(&empty_bar[s], %d); } }\n" % (stages, stages, stages, PW, CW), 1)
# Q load only by consumers
src = src.replace("  for (int h = 0; h < 1; ++h) {  // Qt (input)\n", "  for (int h = 0; h < (warp < %d ? 1 : 0); ++h) {  // Qt (input)\n" % CW, 1)
# producer loads: 32 threads
src = re.sub(r'LoadTileSw128Async<(\d+), (\d+), %d>\(base(.*?), tid\);' % T,
             lambda m: 'LoadTileSw128Async<%s, %s, %d>(base%s, %s);' % (m.group(1), m.group(2), PW, m.group(3), "tid - %d" % T if creg else "lane"), src)
# prologue
pro = re.search(r'#pragma unroll\n  for \(int st = 0; st < kStages - 1; \+\+st\) \{\n.*?\n  \}\n  CpAsyncWait<kStages - 1>\(\);  // the Q tile\n  __syncthreads\(\);\n', src, re.S)
assert pro, "prologue"
producer = '''  CpAsyncWait<0>();
  FenceProxyAsyncShared();
  __syncthreads();  // Q tile and barrier inits
  if (warp >= %d) {  // producer%s
%s#pragma unroll 1
    for (int it = 0; it < kF; ++it) {
      const int stage = it %% kStages;
      if (it >= kStages) MbarWait(&empty_bar[stage], ((it / kStages) + 1) & 1);
      load_stage(it, stage);
      MbarArriveCpAsync(&full_bar[stage]);
    }
    CpAsyncWait<0>();
    return;
  }
%s''' % (CW, " warpgroup" if creg else " warp",
       "    asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %d;\\n\" ::: \"memory\");\n" % preg if creg else "",
       "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %d;\\n\" ::: \"memory\");\n" % creg if creg else "")
src = src[:pro.start()] + producer + src[pro.end():]
head = re.search(r'    CpAsyncWait<kStages - 2>\(\);\n    FenceProxyAsyncShared\(\);\n    __syncthreads\(\);\n    if \(it \+ kStages - 1 < kF\) load_stage\(it \+ kStages - 1, \(it \+ kStages - 1\) % kStages\);\n    CpAsyncCommit\(\);\n', src)
assert head, "head"
src = src[:head.start()] + '    MbarWait(&full_bar[it % kStages], (it / kStages) & 1);\n    FenceProxyAsyncShared();\n' + src[head.end():]
# qknorm's second barrier: not supported in the prototype
assert src.count("__syncthreads();") == 1, "extra barriers"
# loop end: after the pf fences
tail = "      WgmmaFenceReg(pf[0][j][1]);\n    }\n    }\n  }\n  CpAsyncWait<0>();\n"
assert tail in src, "tail"
src = src.replace(tail, "      WgmmaFenceReg(pf[0][j][1]);\n    }\n    }\n    __syncwarp();\n    if (lane == 0) MbarArrive(&empty_bar[it % kStages]);\n  }\n", 1)
# smem: Q + stages*stage bytes
m = re.search(r'smem \+ (\d+) \+ stage \* (\d+);', src)
qbytes, sbytes = int(m.group(1)), int(m.group(2))
if creg:
    mb = re.search(r'__launch_bounds__\(%d(?:, (\d+))?\)' % (T + PW), src)
    blocks = int(mb.group(1) or 1)
    base = 65536 // ((T + PW) * blocks) // 8 * 8
    assert T * creg + PW * preg <= (T + PW) * base, (
        "setmaxnreg would wait forever: %d x %d + %d x %d > %d x %d" % (T, creg, PW, preg, T + PW, base))
k0["block"][0] = T + PW
k0["dynamic_smem_bytes"] = 1024 + qbytes + stages * sbytes
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(dst_dir, "T", T + PW, "smem", k0["dynamic_smem_bytes"])
