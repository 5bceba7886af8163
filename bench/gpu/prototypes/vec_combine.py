"""Hand prototype: the gqa combine kernel with float4 partial loads, all kF in flight."""
import json, re, sys, os, shutil
src_dir, dst_dir = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
launch = json.load(open(os.path.join(src_dir, "launch.json")))
i = src.rfind('extern "C"', 0, src.index("_combine("))
body = src[i:]
name = re.search(r'(prism_\w+_combine)', body).group(1)
T = int(re.search(r'__launch_bounds__\((\d+)\)', body).group(1))
kF = int(re.search(r'constexpr int kF = (\d+)', body).group(1))
m = re.search(r't_Num\[\(\(long long\)bx \* 1LL \+ i0\) \* (\d+)LL \+ \(\(long long\)by \* (\d+)LL \+ i1\) \* (\d+)LL', body)
num_h, rows, num_r = map(int, m.groups())
m = re.search(r't_Den\[\(\(long long\)bx \* 1LL \+ i0\) \* (\d+)LL \+ \(\(long long\)by \* \d+LL \+ i1\) \* (\d+)LL', body)
den_h, den_r = map(int, m.groups())
m = re.search(r't_O\[\(\(long long\)bx \* 1LL \+ i0\) \* (\d+)LL \+ \(\(long long\)by \* \d+LL \+ i1\) \* (\d+)LL', body)
o_h, o_r = map(int, m.groups())
D = 64
n4 = rows * D // 4
new = f'''extern "C" __global__ void __launch_bounds__({T}) {name}(prism_dev::f16_t* __restrict__ t_O, const float* __restrict__ t_Num, const float* __restrict__ t_Den) {{
  prism_dev::PdlPrologue();
  using namespace prism_dev;
  constexpr int kF = {kF};
  const long long bx = blockIdx.x, by = blockIdx.y;
  const int e = blockIdx.z * {T} + threadIdx.x;
  if (e >= {n4}) return;
  const int i1 = e / {D // 4}, i2 = (e % {D // 4}) * 4;
  const float* num = t_Num + bx * {num_h}LL + (by * {rows}LL + i1) * {num_r}LL + i2;
  const float* den = t_Den + bx * {den_h}LL + (by * {rows}LL + i1) * {den_r}LL;
  float4 v[kF];
  float dv[kF];
#pragma unroll
  for (int it = 0; it < kF; ++it) {{ v[it] = *reinterpret_cast<const float4*>(num + it * 64); dv[it] = den[it]; }}
  float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f, d = 0.f;
#pragma unroll
  for (int it = 0; it < kF; ++it) {{ a0 += v[it].x; a1 += v[it].y; a2 += v[it].z; a3 += v[it].w; d += dv[it]; }}
  uint2 o;
  o.x = Pack2(F32ToF16(a0 / d), F32ToF16(a1 / d));
  o.y = Pack2(F32ToF16(a2 / d), F32ToF16(a3 / d));
  *reinterpret_cast<uint2*>(t_O + bx * {o_h}LL + (by * {rows}LL + i1) * {o_r}LL + i2) = o;
}}
'''
src = src[:i] + new
k1 = launch["kernels"][1]
k1["grid"][2] = (n4 + T - 1) // T
os.makedirs(dst_dir, exist_ok=True)
open(os.path.join(dst_dir, "kernel.cu"), "w").write(src)
json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
print(dst_dir, "grid", k1["grid"], "kF", kF)
