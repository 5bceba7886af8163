#!/usr/bin/env bash
# Runs the text-format fuzzers for SECONDS in total and exits non-zero on a crash, a failed
# invariant, a leak, a hang (an input taking over 5 s) or an input using over 2 GiB:
#   parse_fuzzer     (3/4 of the time) arbitrary bytes into ParseProgram and ProgramFromJsonText;
#   roundtrip_fuzzer (1/4 of the time) valid random programs through print/parse/JSON.
#
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS [extra libFuzzer flags...]
#
# The seed corpus tests/fuzz/corpus/ is read, never written: new inputs go to
# BUILD_DIR/fuzz/<fuzzer>/corpus, crash reproducers to BUILD_DIR/fuzz/<fuzzer>/artifacts/
# (replay one with `BUILD_DIR/tests/fuzz/<fuzzer> FILE`). Every reproducer should become a
# permanent regression: a row in tests/ir/errors_test.cc or a file in tests/fuzz/corpus/.
set -euo pipefail

if [[ $# -lt 2 || ! $2 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
build_dir=$1
seconds=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# run FUZZER SECONDS SEED_DIR...
run() {
  local name=$1 secs=$2
  shift 2
  local fuzzer=$build_dir/tests/fuzz/$name
  if [[ ! -x $fuzzer ]]; then
    echo "error: $fuzzer not found; build it with -DPRISM_FUZZ=ON (clang) first" >&2
    exit 2
  fi
  local work=$build_dir/fuzz/$name
  mkdir -p "$work/corpus" "$work/artifacts"
  echo "== $name for ${secs}s"
  local status=0
  "$fuzzer" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -max_len=65536 \
    -dict="$here/prism.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
    "${extra[@]}" "$work/corpus" "$@" || status=$?
  if [[ $status -ne 0 ]]; then
    echo "FUZZ FAILURE in $name (exit $status); reproducers:" >&2
    ls -l "$work/artifacts" >&2 || true
    exit 1
  fi
}

extra=("$@")
parse_seconds=$(( seconds * 3 / 4 > 0 ? seconds * 3 / 4 : 1 ))
roundtrip_seconds=$(( seconds - parse_seconds > 0 ? seconds - parse_seconds : 1 ))
run parse_fuzzer "$parse_seconds" "$here/corpus"
run roundtrip_fuzzer "$roundtrip_seconds"
echo "fuzzing finished cleanly after ${seconds}s"
