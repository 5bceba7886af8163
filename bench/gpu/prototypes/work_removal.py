"""Probe: what each part of the wgmma attention loop costs, by removing it (wrong output; time
with TIME_WRONG=1).

    python3 work_removal.py SRC DST_PREFIX

SRC is a codegen_emit output of a gqa attention_wgmma instance (T = 128, one warpgroup per
block). Writes DST_PREFIX__<tag> for each tag:
  noload   no K/V loads after the prologue: every chunk computes on the stages the prologue
           filled (the loop's compute alone, its barriers kept)
  noexp    the scores' exp2 replaced by the FFMA's result (MUFU work gone, P still packed)
  nos      no score wgmma (S stays whatever the registers held)
  nopv     no P·V wgmma
  memonly  loads and barriers only: no wgmma, no softmax
"""
import os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_io import write_variant  # noqa: E402

src_dir, prefix = sys.argv[1], sys.argv[2]
src = open(os.path.join(src_dir, "kernel.cu")).read()
assert "__launch_bounds__(128, 1)" in src

load = "    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + kStages - 1) % kStages);\n"
assert src.count(load) == 1
s_issue = re.search(r"    for \(int kc = 0; kc < 4; \+\+kc\) WgmmaM64N128K16SS\(.*?\);\n", src)
assert s_issue
pv_issue = re.search(r"      WgmmaM64N64K16\(o\[0\], a, .*?\);\n", src)
assert pv_issue
head = src.index("    const unsigned char* base = smem + ")
loop_end = src.index("  CpAsyncWait<0>();\n  // Partials")


def variant(tag, text):
    write_variant(src_dir, f"{prefix}__{tag}", text)
    print(f"{prefix}__{tag}")


variant("noload", src.replace(load, ""))
variant("noexp", re.sub(r"Exp2\((fmaf\([^;]*?\))\);", r"\1;", src))
variant("nos", src.replace(s_issue.group(0), ""))
variant("nopv", src.replace(pv_issue.group(0), "      (void)a;\n"))
# memonly: the loop body after the loads is replaced by nothing (o stays 0, l 0: the epilogue
# divides by 0, the output is wrong; TIME_WRONG times it anyway).
body_start = src.index("\n", head) + 1
# the loop's closing brace is the "  }\n" right before loop_end
close = src.rindex("  }\n", 0, loop_end)
variant("memonly", src[:body_start] + "    (void)base;\n" + src[close:])
