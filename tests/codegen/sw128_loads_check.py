"""Host check of LoadTileSw128Async's address arithmetic (kernels/prism/device_common.cuh).

The function's text is taken from the header as it is, its cp.async replaced by a recorder and
the shared-window conversion by the pointer's own address, and compiled for the host. For each
tile shape of the table and every thread, the recorded (shared byte offset, global element
offset) pairs, over all threads, must be exactly the reference layout of the header's comment —
panel p of 64 columns at byte p·rows·128, row r at r·128, 16-byte chunk q of the panel at
(q ^ (r mod 8))·16; global element r·ld + 8·q — each chunk copied once.

    python3 sw128_loads_check.py HEADER CXX
"""
import os, re, subprocess, sys, tempfile

header, cxx = sys.argv[1], sys.argv[2]
src = open(header).read()
start = src.index("template <int kRows, int kCols, int kThreads>\n"
                  "__device__ __forceinline__ void LoadTileSw128Async")
end = src.index("\n}\n", start) + 3
fn = src[start:end]
fn = fn.replace("__device__ __forceinline__", "inline")
fn = fn.replace("static_cast<u32_t>(__cvta_generic_to_shared(smem))",
                "static_cast<u32_t>(reinterpret_cast<unsigned long long>(smem))")
fn, n = re.subn(r'asm volatile\("cp\.async\.cg\.shared\.global \[%0\], \[%1\], 16;\\n"\s*::\s*"r"\((.*?)\),\s*"l"\((.*?)\)\);',
                r"Record(\1, \2);", fn, flags=re.S)
if n == 0 or "asm" in fn:
    sys.exit("sw128_loads_check: the cp.async statements of LoadTileSw128Async were not found; "
             "update the pattern in tests/codegen/sw128_loads_check.py")

# (rows, cols, threads, ld): the K, V and Q tiles of the wgmma attention kernels (one to four
# warpgroups; 64- to 256-column chunks), and shapes on each side of the one-base-address path.
CASES = [(64, 64, 128, 64), (64, 128, 128, 4096), (128, 64, 128, 64), (64, 256, 128, 4096),
         (256, 64, 128, 64), (64, 64, 256, 64), (64, 128, 256, 4096), (128, 64, 256, 64),
         (256, 64, 256, 64), (64, 256, 512, 4096), (256, 64, 512, 64), (64, 128, 512, 4096),
         (128, 64, 512, 64), (64, 64, 512, 64), (192, 64, 128, 64), (64, 192, 128, 4096),
         (32, 64, 128, 64), (64, 64, 64, 64), (16, 64, 128, 64), (8, 64, 128, 64)]
prog = r'''
#include <cstdio>
#include <set>
#include <utility>
typedef unsigned short f16_t;
typedef unsigned int u32_t;
static std::set<std::pair<long long, long long>> g_rec;
static long long g_copies = 0;
static const f16_t* g_base;
static unsigned long long g_smem;
inline void Record(u32_t s, const f16_t* g) {
  g_rec.insert({(long long)s - (long long)(u32_t)g_smem, (long long)(g - g_base)});
  ++g_copies;
}
''' + fn + r'''
template <int R, int C, int T> bool Check(long long ld) {
  alignas(1024) static unsigned char smem[16];
  static f16_t gm[1];
  g_base = gm;
  g_smem = reinterpret_cast<unsigned long long>(smem);
  g_rec.clear();
  g_copies = 0;
  for (int tid = 0; tid < T; ++tid) LoadTileSw128Async<R, C, T>(smem, gm, ld, tid);
  std::set<std::pair<long long, long long>> want;
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < C / 8; ++q)
      want.insert({(q >> 3) * (R * 128LL) + r * 128LL + (((q & 7) ^ (r & 7)) << 4), r * ld + 8LL * q});
  const bool ok = g_rec == want && g_copies == (long long)want.size();
  std::printf("%s rows %d cols %d threads %d ld %lld: %lld copies, %zu distinct, %zu expected\n",
              ok ? "ok  " : "FAIL", R, C, T, ld, g_copies, g_rec.size(), want.size());
  return ok;
}
int main() {
  bool ok = true;
''' + "".join(f"  ok &= Check<{r}, {c}, {t}>({ld});\n" for r, c, t, ld in CASES) + r'''
  return ok ? 0 : 1;
}
'''
with tempfile.TemporaryDirectory() as d:
    cc, exe = os.path.join(d, "check.cc"), os.path.join(d, "check")
    open(cc, "w").write(prog)
    subprocess.run([cxx, "-std=c++20", "-O1", "-o", exe, cc], check=True)
    sys.exit(subprocess.run([exe]).returncode)
