"""Shared by the hand prototypes: write an edited program next to its source's files."""
import json, os, shutil


def write_variant(src_dir, dst_dir, source, block=None):
    """DST_DIR gets `source` as kernel.cu and SRC_DIR's launch.json and host.h (if any); with
    block = (function, threads), that kernel's block size in launch.json is set to threads."""
    os.makedirs(dst_dir, exist_ok=True)
    open(os.path.join(dst_dir, "kernel.cu"), "w").write(source)
    launch = json.load(open(os.path.join(src_dir, "launch.json")))
    if block is not None:
        next(k for k in launch["kernels"] if k["function"] == block[0])["block"][0] = block[1]
    json.dump(launch, open(os.path.join(dst_dir, "launch.json"), "w"), indent=1)
    if os.path.exists(os.path.join(src_dir, "host.h")):
        shutil.copy(os.path.join(src_dir, "host.h"), dst_dir)


def factor_loop_span(src):
    """(start, end) in `src` of qknorm_gqa's rms(V) factor loop as the attention_wgmma kernel
    ran it before commit 4785eed (one thread per V row, one FMA chain, 1 / sqrtf), between the
    score wgmma's commit and its wait. The hand prototypes that edit it take codegen_emit
    output of a build before that commit."""
    a = src.index("    // Vn (rms): per-row factor, one thread per V row\n")
    return a, src.index("    WgmmaWait<0>();\n", a)


def matching_brace(code, open_idx):
    """The index of the "}" that closes the "{" at or after open_idx (ValueError if none)."""
    depth = 0
    for k in range(code.index("{", open_idx), len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced braces")
