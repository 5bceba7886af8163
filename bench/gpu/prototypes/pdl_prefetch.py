"""Prototype: the split-K GEMM partial kernel issues the prologue stages' loads of its weight
inputs before griddepcontrol.wait (programmatic dependent launch), so that the weights of call
i+1 stream in while call i's combine kernel runs. Only the named inputs (never written by an
earlier kernel in the stream) move before the wait; the activations are loaded after it.

python3 pdl_prefetch.py SRC DST WEIGHT_TILE_NAMES (comma-separated tile labels, e.g. v1,v2)

The weights' prologue stages are committed one group per stage before the wait and the
activations' after it, kStages - 1 groups each: iteration it's CpAsyncWait<kStages - 2> then
completes the activations' group it and everything before it. A one-kernel program (gated_mlp's
selection) has its only kernel transformed.
"""
import os, re, shutil, sys

src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
path = os.path.join(dst, "kernel.cu")
s = open(path).read()
# The first kernel (the partial one) only.
k0 = s.index('extern "C" __global__')
k1 = s.find('extern "C" __global__', k0 + 10)
if k1 < 0:  # a one-kernel program: its only kernel
    k1 = len(s)
body = s[k0:k1]
body = body.replace("prism_dev::PdlPrologue();",
                    'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");', 1)
m = re.search(r"  auto load_stage = \[&\]\(int it, int stage\) \{\n(.*?)\n  \};\n", body, re.S)
lines = m.group(1).split("\n")
base = lines[0]
w = [l for l in lines[1:] if any(f"// {n} (input)" in l for n in names)]
x = [l for l in lines[1:] if l not in w]
assert w and x, (w, x)
lam = ("  auto load_w = [&](int it, int stage) {\n" + "\n".join([base] + w) + "\n  };\n"
       "  auto load_x = [&](int it, int stage) {\n" + "\n".join([base] + x) + "\n  };\n")
body = body[:m.end()] + lam + body[m.end():]
pro = re.search(r"#pragma unroll\n  for \(int st = 0; st < kStages - 1; \+\+st\) \{\n"
                r"    if \(st < kF\) load_stage\(st, st\);\n    CpAsyncCommit\(\);\n  \}\n", body)
assert pro, "prologue not found"
new = ("#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n"
       "    if (st < kF) load_w(st, st);  // weights: before the wait\n"
       "    CpAsyncCommit();  // one group per stage (iteration it then waits for X's group it)\n  }\n"
       '  asm volatile("griddepcontrol.wait;" ::: "memory");\n'
       "#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n"
       "    if (st < kF) load_x(st, st);\n    CpAsyncCommit();\n  }\n")
body = body[:pro.start()] + new + body[pro.end():]
s = s[:k0] + body + s[k1:]
open(path, "w").write(s)
