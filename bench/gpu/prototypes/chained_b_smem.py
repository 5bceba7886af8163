"""Prototype: lora's ·B fragments (gemm_defer_chained) without a DRAM wait before the loop.

    python3 bench/gpu/prototypes/chained_b_smem.py SRC_DIR DST_DIR MODE

SRC_DIR is a codegen_emit output of lora_splitk with DEFER_CHAINED=1 (kernel.cu, launch.json).
The generated k0 loads B's fragments (16 x 256 f16, rotated with the inputs, so from DRAM) with
scalar global loads after the pipeline prologue and packs them at once, so every thread waits
for them before its first iteration: behind the prologue's 5 stages of every block in the DRAM
queues, while the stages after the prologue are only requested from inside the loop. MODE:
  smem   B's tile by cp.async into shared memory after the stages, in the first commit group;
         the fragments read from there after the loop (dynamic shared memory + 16 x 264 f16)
  after  the same scalar global loads, moved after the loop
"""
import json, os, re, shutil, sys


def main():
    src_dir, dst_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(os.path.join(src_dir, "kernel.cu")) as f:
        src = f.read()
    with open(os.path.join(src_dir, "launch.json")) as f:
        launch = json.load(f)
    block = re.search(r"  u32_t bf7\[8\]\[2\];  // Bt \(input\)\n  \{\n(?:.*\n)*?  \}\n", src)
    assert block, "no B fragment block"
    frag = block.group(0)
    src = src.replace(frag, "  u32_t bf7[8][2];  // Bt (input)\n", 1)
    after = "#pragma unroll\n  for (int mt = 0; mt < 1; ++mt) {  // XAB (matmul) after the loop\n"
    assert after in src
    body = frag.split("\n", 1)[1]  # the braces and loads, without the declaration
    if mode == "after":
        src = src.replace(after, body + after, 1)
    elif mode == "smem":
        stage = int(re.search(r"unsigned char\* base = smem \+ stage \* (\d+);", src).group(1))
        stages = int(re.search(r"constexpr int kStages = (\d+), kF = \d+;", src).group(1))
        threads = launch["kernels"][0]["block"][0]
        boff = (stages * stage + 127) // 128 * 128
        pitch = 264
        prologue = "#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n"
        assert prologue in src
        issue = (f"  LoadTileAsync<16, 256, {threads}>(reinterpret_cast<f16_t*>(smem + {boff}), {pitch}, "
                 "t_B + (long long)blockIdx.x * 256LL, 4096LL, tid);  // Bt into shared memory "
                 "(first commit group)\n")
        src = src.replace(prologue, issue + prologue, 1)
        m = re.search(r"const f16_t\* bp = t_B \+ [^;]*;", body)
        body = body.replace(m.group(0), f"const f16_t* bp = reinterpret_cast<const f16_t*>(smem + {boff});")
        body = body.replace("(2 * t) * 4096LL", f"(2 * t) * {pitch}").replace("q[4096LL]", f"q[{pitch}]")
        body = body.replace("q[8 * 4096LL]", f"q[{8 * pitch}]").replace("q[9 * 4096LL]", f"q[{9 * pitch}]")
        assert "4096" not in body, body
        src = src.replace(after, body + after, 1)
        k = launch["kernels"][0]
        k["dynamic_smem_bytes"] = max(k["dynamic_smem_bytes"], boff + 16 * pitch * 2)
    else:
        raise SystemExit(f"unknown MODE {mode}")
    os.makedirs(dst_dir, exist_ok=True)
    with open(os.path.join(dst_dir, "kernel.cu"), "w") as f:
        f.write(src)
    with open(os.path.join(dst_dir, "launch.json"), "w") as f:
        json.dump(launch, f, indent=1)
    if os.path.exists(os.path.join(src_dir, "host.h")):
        shutil.copy(os.path.join(src_dir, "host.h"), os.path.join(dst_dir, "host.h"))


if __name__ == "__main__":
    main()
