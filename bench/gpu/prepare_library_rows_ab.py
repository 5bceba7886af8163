"""Prepares an in-run A/B of the library matmul's rows past M (2026-12-07, eighteenth session,
issue 7): for each program and form below, three output folders in ROOT (default
.carry/ab/concat: small enough to carry without .carry/opt, which with the tree passed the
device tool's 64 MiB) that library_bench.py times next to PyTorch through ALIASES:

    python3 bench/gpu/prepare_library_rows_ab.py build-u/tests/codegen/codegen_emit [ROOT]
    # on the device (carry .carry/ab, .carry/harness.py, .carry/workloads.py):
    ALIASES="$(cat ROOT/aliases.txt)" python3 bench/gpu/library_bench.py ROOT

- `new`: codegen_emit's source (40ef3be: a's rows past M zeroed once per tile and never
  copied; warps whose 32 rows are all past M skip the tensor-core steps; since 13e6caa only in
  split kernels, so the unsplit forms come out UNCHANGED and their three folders are equal);
- `rows`: the same without the warp skip;
- `old`: neither (the source before 40ef3be; checked against that commit's golden source of
  LibraryOpsTest.MatmulKernelSource by --check OLD_GOLDEN_FILE).
"""
import json, os, re, subprocess, sys

ZERO = re.compile(r"        // a's rows \d+ … 63 \(past M\) zero in every stage, never copied\n"
                  r"        for \(unsigned i = tid; i < \d+u; i \+= 128u\)\n"
                  r"          \*reinterpret_cast<uint4\*>\(&st\[[^\n]*\n")
SKIP = ("          if (static_cast<unsigned>(wm) < kM) {  // else rows wm … wm + 31 are all "
        "past M: nothing to add\n")
CLOSE_NEW = "            }\n          }\n          }\n        }\n        prism_dev::CpAsyncWait<0>();"
CLOSE_OLD = "            }\n          }\n        }\n        prism_dev::CpAsyncWait<0>();"


def without_skip(src):
    if SKIP not in src:
        return src
    assert src.count(CLOSE_NEW) == 1
    return src.replace(SKIP, "").replace(CLOSE_NEW, CLOSE_OLD)


def old_form(src):
    src = without_skip(src)
    src = ZERO.sub("", src)
    src = src.replace(" && live) prism_dev::CpAsync16Fill(&st[", ") prism_dev::CpAsync16Fill(&st[")
    return src.replace("if (live) prism_dev::CpAsync16Fill(&st[", "prism_dev::CpAsync16Fill(&st[")


# name: (program, sizes, dtype, lib split (0, 1, 2), pdl)
FORMS = {
    "fewtile_b1_u": ("fewtile_b1", "x0=1,x1=4096,w0=4096,w1=2001", "f16", 0, 0),
    "fewtile_b1_s2": ("fewtile_b1", "x0=1,x1=4096,w0=4096,w1=2001", "f16", 2, 1),
    "fewtile_f16_u": ("fewtile_f16", "x0=8,x1=8192,w0=8192,w1=1003", "f16", 0, 0),
    "fewtile_f16_s2": ("fewtile_f16", "x0=8,x1=8192,w0=8192,w1=1003", "f16", 2, 1),
    "midtile_f16_s2": ("midtile_f16", "x0=8,x1=4096,w0=4096,w1=6401", "f16", 2, 0),
    "skinny_bf16_s2": ("skinny_bf16", "x0=16,x1=5001,w0=5001,w1=3001", "bf16", 2, 0),
    "lm_head_u": ("lm_head", "x0=8,x1=4096,w0=4096,w1=32001", "f16", 0, 0),
}


def main():
    if sys.argv[1] == "--check":  # --check EMIT OLD_GOLDEN: the old form of the 17 x 6 x 5 case
        emit, golden = sys.argv[2], open(sys.argv[3]).read()
        subprocess.run([emit, "lib_matmul", "1", "x0=17,x1=6,w0=6,w1=5", "/tmp/rows_ab_check"],
                       check=True, stdout=subprocess.DEVNULL)
        src = open("/tmp/rows_ab_check/kernel.cu").read()
        src = old_form(src[src.index("// kernel k0:"):])
        print("old form equals the golden source:", src == golden)
        sys.exit(0 if src == golden else 1)
    emit = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) > 2 else ".carry/ab/concat"
    aliases = []
    for form, (prog, sizes, dtype, split, pdl) in FORMS.items():
        env = dict(os.environ, PRISM_EMIT_LIB_SPLIT=str(split))
        if dtype != "f16":
            env["PRISM_EMIT_DTYPE"] = dtype
        base = os.path.join(root, f"out_{form}_new")
        subprocess.run([emit, "lib_matmul", "1", sizes, base, "", "0", "0", "0", "0", "0",
                        str(pdl)], check=True, env=env, stdout=subprocess.DEVNULL)
        src = open(os.path.join(base, "kernel.cu")).read()
        for v, f in (("rows", without_skip), ("old", old_form)):
            d = os.path.join(root, f"out_{form}_{v}")
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, "kernel.cu"), "w").write(f(src))
            for x in ("launch.json", "host.h"):
                open(os.path.join(d, x), "w").write(open(os.path.join(base, x)).read())
        launch = json.load(open(os.path.join(base, "launch.json")))["kernels"][0]
        print(form, "grid", launch["grid"], "cluster", launch.get("cluster"),
              "changed" if old_form(src) != src else "UNCHANGED")
        # Interleaved: old, rows, new of each form in turn.
        aliases += [f"{form}_{v}={prog}" for v in ("old", "rows", "new")]
    open(os.path.join(root, "aliases.txt"), "w").write(" ".join(aliases) + "\n")


if __name__ == "__main__":
    main()
