#!/bin/sh
# codegen_emit's output paths (ctest codegen_emit.OutputDirectory): a missing OUTDIR is created
# with its parents and gets the three files; an OUTDIR it cannot write is exit 1 with
# "codegen_emit: cannot write '<path>'".  Usage: codegen_emit_test.sh CODEGEN_EMIT TMPDIR
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
echo x > "$tmp/file"
"$emit" rmsnorm_linear_split 8 g=32,s=4,F=16,T=128,S=4 "$tmp/file/out" 2> "$tmp/err" && fail "emit into a regular file succeeded"
[ "$(cat "$tmp/err")" = "codegen_emit: cannot write '$tmp/file/out/kernel.cu'" ] || fail "message: $(cat "$tmp/err")"
rm -rf "$tmp"
