#!/bin/sh
# codegen_emit's output paths (ctest codegen_emit.OutputDirectory): a missing OUTDIR is created
# with its parents and gets the three files; the option arguments take effect (WARPS_ALONG_N,
# CLUSTER, DEFER_CHAINED, CHAINED_B_SMEM); an OUTDIR it
# cannot write is exit 1 with
# "codegen_emit: cannot write '<path>'"; PRISM_EMIT_BALANCE pads, and a malformed value is exit 2
# with "codegen_emit: PRISM_EMIT_BALANCE must be SMS,SMEM_PER_SM,RESERVED"; PRISM_EMIT_DTYPE
# bf16 / f32 reach the bf16 mma and the f32 path, another value is exit 2 with its message;
# PRISM_EMIT_LIB_SPLIT 1 / 2 reach the library matmul's split, another value is exit 2.  Usage: codegen_emit_test.sh CODEGEN_EMIT TMPDIR
set -u
emit=$1
tmp=$2/codegen_emit_test
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
fail() { echo "codegen_emit_test: $*" >&2; exit 1; }
"$emit" rmsnorm_linear_split 8 g=32,s=4,F=16,T=128,S=4 "$tmp/new/dir" || fail "emit to a missing OUTDIR failed"
for f in kernel.cu launch.json host.h; do
  [ -s "$tmp/new/dir/$f" ] || fail "$tmp/new/dir/$f was not written"
done
grep -q "^// kernel k1: " "$tmp/new/dir/kernel.cu" || fail "kernel.cu is not the two-kernel split program"
grep -q "warps 4 along K x 1 along N" "$tmp/new/dir/kernel.cu" || fail "default warp split changed"
# The option arguments reach CodegenOptions: WARPS_ALONG_N (the 13th) and CLUSTER (the 10th).
"$emit" rmsnorm_linear_split 8 g=32,s=4,F=16,T=128,S=4 "$tmp/n" "" 0 0 0 0 1 0 0 1 || fail "emit with options failed"
grep -q "warps 1 along K x 4 along N" "$tmp/n/kernel.cu" || fail "WARPS_ALONG_N did not split the warps along N"
grep -q "launched as clusters of (1, 4, 1) blocks; kernel k1 folded in" "$tmp/n/kernel.cu" ||
  fail "CLUSTER did not fold the combine kernel"
# DEFER_CHAINED (the 14th) reaches gemm_defer_chained: lora's ·B after the loop.
"$emit" lora_splitk 1 g=16,s=8,F=8,T=128,S=3 "$tmp/d" "" 0 0 0 0 0 1 0 1 1 || fail "emit with DEFER_CHAINED failed"
grep -q "summed over the loop (gemm_defer_chained)" "$tmp/d/kernel.cu" ||
  fail "DEFER_CHAINED did not defer the chained matmul"
"$emit" lora_splitk 1 g=16,s=8,F=8,T=128,S=3 "$tmp/nd" "" 0 0 0 0 0 1 0 1 || fail "emit without DEFER_CHAINED failed"
grep -q "gemm_defer_chained" "$tmp/nd/kernel.cu" && fail "gemm_defer_chained without DEFER_CHAINED"
# CHAINED_B_SMEM (the 15th) reaches gemm_chained_b_smem: B's tile by cp.async; without
# DEFER_CHAINED it is codegen's error, exit 1.
"$emit" lora_splitk 1 g=16,s=8,F=8,T=128,S=3 "$tmp/bs" "" 0 0 0 0 0 1 0 1 1 1 || fail "emit with CHAINED_B_SMEM failed"
grep -q "(gemm_chained_b_smem)" "$tmp/bs/kernel.cu" || fail "CHAINED_B_SMEM did not move B's tile to shared memory"
grep -q "(gemm_chained_b_smem)" "$tmp/d/kernel.cu" && fail "gemm_chained_b_smem without CHAINED_B_SMEM"
"$emit" lora_splitk 1 g=16,s=8,F=8,T=128,S=3 "$tmp/bsx" "" 0 0 0 0 0 1 0 1 0 1 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "CHAINED_B_SMEM without DEFER_CHAINED: exit $rc, expected 1"
grep -q "gemm_chained_b_smem needs gemm_defer_chained" "$tmp/err" || fail "message: $(cat "$tmp/err")"
# PRISM_EMIT_BALANCE sets balance_residency: gqa b=8's 256 blocks padded to two per H200 SM.
PRISM_EMIT_BALANCE=132,233472,1024 "$emit" gqa 8 gx=16,gy=4,gz=4,F=8,T=128,S=2 "$tmp/bal" "" 0 0 0 0 0 1 1 ||
  fail "emit with PRISM_EMIT_BALANCE failed"
grep -q '"dynamic_smem_bytes": 76801' "$tmp/bal/launch.json" || fail "PRISM_EMIT_BALANCE did not pad"
grep -q '"residency_pad_bytes"' "$tmp/bal/launch.json" || fail "no residency_pad_bytes"
for bad in "132,233472" "132,x,1024" ""; do
  PRISM_EMIT_BALANCE=$bad "$emit" gqa 8 gx=16,gy=4,gz=4,F=8,T=128,S=2 "$tmp/bad" 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "PRISM_EMIT_BALANCE='$bad': exit $rc, expected 2"
  [ "$(cat "$tmp/err")" = "codegen_emit: PRISM_EMIT_BALANCE must be SMS,SMEM_PER_SM,RESERVED" ] ||
    fail "PRISM_EMIT_BALANCE='$bad' message: $(cat "$tmp/err")"
done
# PRISM_EMIT_DTYPE makes the fixture's f16 tensors bf16 or f32; another value is exit 2.
PRISM_EMIT_DTYPE=bf16 "$emit" rmsnorm_linear 1 g=64,F=4,T=64,S=1 "$tmp/bf" || fail "emit in bf16 failed"
grep -q "MmaM16N8K16BF16(acc" "$tmp/bf/kernel.cu" || fail "PRISM_EMIT_DTYPE=bf16 did not use the bf16 mma"
PRISM_EMIT_DTYPE=f32 "$emit" rmsnorm_linear 1 g=64,F=16,T=64,S=1 "$tmp/f32" || fail "emit in f32 failed"
grep -q "FmaTilesF32(acc" "$tmp/f32/kernel.cu" || fail "PRISM_EMIT_DTYPE=f32 did not use the f32 path"
PRISM_EMIT_DTYPE=f64 "$emit" rmsnorm_linear 1 g=64,F=4,T=64,S=1 "$tmp/f64" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "PRISM_EMIT_DTYPE=f64: exit $rc, expected 2"
[ "$(cat "$tmp/err")" = "codegen_emit: PRISM_EMIT_DTYPE must be f16, bf16 or f32" ] ||
  fail "PRISM_EMIT_DTYPE=f64 message: $(cat "$tmp/err")"
# PRISM_EMIT_LIB_SPLIT: 1 splits the library matmul over clusters (16 tiles: clusters of 8), 2
# sizes the split for two blocks per SM (clusters of 16), another value is exit 2.
PRISM_EMIT_LIB_SPLIT=1 "$emit" lib_matmul 1 x0=8,x1=4096,w0=4096,w1=1000 "$tmp/ls1" || fail "emit with PRISM_EMIT_LIB_SPLIT=1 failed"
grep -q "k split over clusters of (1, 1, 8) blocks" "$tmp/ls1/kernel.cu" || fail "PRISM_EMIT_LIB_SPLIT=1 did not split by 8"
PRISM_EMIT_LIB_SPLIT=2 "$emit" lib_matmul 1 x0=8,x1=4096,w0=4096,w1=1000 "$tmp/ls2" || fail "emit with PRISM_EMIT_LIB_SPLIT=2 failed"
grep -q "k split over clusters of (1, 1, 16) blocks" "$tmp/ls2/kernel.cu" || fail "PRISM_EMIT_LIB_SPLIT=2 did not split by 16"
for bad in 3 x ""; do
  PRISM_EMIT_LIB_SPLIT=$bad "$emit" lib_matmul 1 x0=8,x1=4096,w0=4096,w1=1000 "$tmp/lsx" 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "PRISM_EMIT_LIB_SPLIT='$bad': exit $rc, expected 2"
  [ "$(cat "$tmp/err")" = "codegen_emit: PRISM_EMIT_LIB_SPLIT must be 0, 1 or 2" ] ||
    fail "PRISM_EMIT_LIB_SPLIT='$bad' message: $(cat "$tmp/err")"
done
# A fixture that needs sizes the workloads do not give (M, K, N): exit 1 with the reason, not
# an uncaught std::out_of_range (2026-12-05).
"$emit" prologue_silu 1 g=16,F=8,T=128,S=3 "$tmp/ps" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "prologue_silu: exit $rc, expected 1"
[ "$(cat "$tmp/err")" = "INVALID_ARGUMENT: prologue_silu needs the sizes M, K and N" ] ||
  fail "prologue_silu message: $(cat "$tmp/err")"
echo x > "$tmp/file"
"$emit" rmsnorm_linear_split 8 g=32,s=4,F=16,T=128,S=4 "$tmp/file/out" 2> "$tmp/err" && fail "emit into a regular file succeeded"
[ "$(cat "$tmp/err")" = "codegen_emit: cannot write '$tmp/file/out/kernel.cu'" ] || fail "message: $(cat "$tmp/err")"
rm -rf "$tmp"
