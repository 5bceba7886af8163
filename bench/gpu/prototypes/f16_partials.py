"""Prototype: an attention split's N' partial (Σ P·V / Σ P, log-sum-exp form) stored as f16
instead of f32, halving what the partial kernel writes and the combine reads. N' is a convex
combination of V's rows, so it is within V's range; its f16 rounding (2^-11 relative) is of the
order of the output's own. The buffer keeps launch.json's f32 size (the f16 values use its first
half); the kernels reinterpret the pointer.

python3 f16_partials.py SRC DST     (SRC: a codegen_emit / prism optimize output of gqa or
                                     qknorm_gqa with its partials stored from the fragments)
"""
import os, re, shutil, sys

src, dst = sys.argv[1], sys.argv[2]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
path = os.path.join(dst, "kernel.cu")
s = open(path).read()
# The partial N' is the tensor stored with make_float2 from the fragments.
m = re.search(r"\*reinterpret_cast<float2\*>\((t_P\d+) \+ ", s)
assert m, "no float2 partial store found"
name = m.group(1)
s, n_store = re.subn(
    r"\*reinterpret_cast<float2\*>\(" + name + r" \+ (.*?)\) = make_float2\((.*?), (.*?)\);",
    lambda mo: (f"*reinterpret_cast<prism_dev::u32_t*>(reinterpret_cast<prism_dev::f16_t*>({name}) + "
                f"{mo.group(1)}) = prism_dev::PackF16x2({mo.group(2)}, {mo.group(3)});"),
    s)
assert n_store >= 2, n_store
s, n_load = re.subn(r"= " + name + r"\[(.*?)\];",
                    lambda mo: f"= prism_dev::F16ToF32(reinterpret_cast<const prism_dev::f16_t*>({name})[{mo.group(1)}]);",
                    s)
assert n_load >= 1, n_load
open(path, "w").write(s)
print(f"{dst}: {name} in f16 ({n_store} stores, {n_load} loads)")
