#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. tools/setup.sh (installs what is missing);
#   2. Release build (warnings counted; errors with PRISM_WERROR=ON), then every ctest test
#      except those labelled gpu;
#   3. an AddressSanitizer + UndefinedBehaviorSanitizer build with clang (build-asan/, which also
#      holds the libFuzzer targets) and the same tests but those labelled slow;
#   4. the parser fuzzer (build-asan/tests/fuzz/) for 30 s via tests/fuzz/run_fuzz.sh, if present
#      (from the seed corpus tests/fuzz/corpus/; FUZZ_SECONDS=300 for a longer run).
# Stops at the first failure with a non-zero exit code.
#
#   tools/test.sh                  # everything
#   tools/test.sh --no-asan        # skip step 3's tests (and --no-fuzz: skip step 4) for a quick
#                                  # loop; the fuzzers are still built, in build-asan/
# Environment: PRISM_JOBS (default: nproc), PRISM_WERROR (default ON), FUZZ_SECONDS (30).
set -euo pipefail
script=$(readlink -f "$0")
cd "$(dirname "$script")/.."

asan=1
fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-asan) asan=0 ;;
    --no-fuzz) fuzz=0 ;;
    -h|--help) sed -n '2,15p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: error: unknown argument '$arg' (expected --no-asan, --no-fuzz)" >&2; exit 2 ;;
  esac
done

JOBS=${PRISM_JOBS:-$(nproc)}
WERROR=${PRISM_WERROR:-ON}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
start=$SECONDS
step() { echo; echo "=== test.sh [$((SECONDS - start)) s] $*"; }

# configure DIR ARGS...: configures quietly (the log is printed on failure).
configure() {
  local dir=$1
  shift
  mkdir -p "$dir"
  cmake -S . -B "$dir" -G Ninja -DPRISM_BUILD_BENCH=OFF "$@" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; echo "test.sh: error: configuring $dir failed" >&2; exit 1; }
}

# run_tests DIR EXCLUDED_LABELS COSTS: every test but those with a label matching the regex; fails
# when no test ran. COSTS (tools/ctest-costs/*.txt: each test's seconds in a CI run) seeds
# ctest's cost data when DIR has none (a clean clone), so that ctest starts the longest tests
# first instead of in declaration order: with two lanes, a 24 s test started last ends the
# pass alone. A stale entry only schedules less well; ctest replaces the data after each run.
run_tests() {
  local costs="$1/Testing/Temporary/CTestCostData.txt"
  if [ ! -f "$costs" ] && [ -f "$3" ]; then
    mkdir -p "$(dirname "$costs")"
    cp "$3" "$costs"
  fi
  ctest --test-dir "$1" --no-tests=error -LE "$2" --output-on-failure -j "$JOBS"
}

# check_slow_labels DIR: every SLOW name of tests/*/CMakeLists.txt names a test of DIR. ctest
# ignores a name that matches none, so a renamed test would silently run under the sanitizers
# again (it did: 2026-12-01, +70 s of the ASan pass).
check_slow_labels() {
  local listed labelled missing
  listed=$(sed -n 's/.*\[==\[\(.*\)\]==\].*/\1/p' "$1"/tests/*/*_slow_labels.cmake | sort)
  labelled=$(ctest --test-dir "$1" -N -L slow | sed -n 's/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p' | sort)
  missing=$(comm -23 <(echo "$listed") <(echo "$labelled"))
  if [ -n "$missing" ]; then
    echo "test.sh: error: SLOW test names in tests/*/CMakeLists.txt that match no test (renamed?):" >&2
    echo "$missing" | sed 's/^/  /' >&2
    exit 1
  fi
}

step "setup"
bash tools/setup.sh

step "Release build (build-release/, -DPRISM_WERROR=$WERROR)"
# -Wno-restrict: GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string at
# -O3 (GCC bug 105329), which -Werror would turn into failures of correct code.
# PRISM_UNITY_BUILD: one translation unit per library module (and per opted-in test binary):
# the build is mostly header and inline-template time, paid once per module instead of once
# per file (docs/development.md, "CI time" in performance.md).
configure build-release -DCMAKE_BUILD_TYPE=Release -DPRISM_WERROR="$WERROR" \
  -DCMAKE_CXX_FLAGS="-Wno-restrict" -DPRISM_UNITY_BUILD=ON
cmake --build build-release -j "$JOBS" 2>&1 | tee build-release/build.log
warnings=$(grep -c 'warning:' build-release/build.log || true)
echo "test.sh: $warnings compiler warning(s) in this build (build-release/build.log)"
step "tests (Release)"
check_slow_labels build-release
run_tests build-release gpu tools/ctest-costs/release.txt

have_fuzz=0
if [ "$fuzz" = 1 ] && [ -f tests/fuzz/run_fuzz.sh ]; then
  have_fuzz=1
fi

if [ "$asan" = 1 ] || [ "$have_fuzz" = 1 ]; then
  step "ASan + UBSan build (build-asan/, clang, with the fuzzers)"
  # clang, not GCC: the same sanitizers (one compiler-rt runtime), about a fifth less compile
  # CPU time (22% on base..search + search_test; 37% on prism_equiv alone), and libFuzzer, so
  # the fuzz targets are built here too instead of in a configuration of their own (which
  # rebuilt prism_base and prism_ir once more).
  # -O1 -g1 (line tables, no variable info): what the sanitizers' documentation recommends;
  # reports keep file:line, and the build is far lighter than -O2 with full debug info on a
  # 2-core CI machine.
  # PRISM_PCH: absl, nlohmann/json, gtest/gmock and the standard headers are parsed once into two
  # precompiled headers that every library and test binary reuses (cmake/PrismPch.cmake; about
  # 12% of this build's CPU time). Not in the GCC Release build: GCC 12 does not silence
  # libstdc++'s false -Warray-bounds positives when the headers come from a PCH, and -Werror
  # turns them into errors.
  fuzz_option=()
  if [ -f tests/fuzz/run_fuzz.sh ]; then
    fuzz_option=(-DPRISM_FUZZ=ON)
  fi
  configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRISM_SANITIZE=ON \
    -DPRISM_UNITY_BUILD=ON -DPRISM_PCH=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${fuzz_option[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  if [ "$have_fuzz" = 1 ]; then
    # The target list is read whole first: `ninja ... | grep -q` fails under pipefail when grep
    # exits at its first match while ninja is still writing (SIGPIPE).
    fuzz_targets=$(ninja -C build-asan -t targets all)
    if ! grep -q '^parse_fuzzer:' <<<"$fuzz_targets"; then
      echo "test.sh: error: no parse_fuzzer target with -DPRISM_FUZZ=ON; CMakeLists.txt needs" \
           "'if(PRISM_FUZZ) add_subdirectory(tests/fuzz) endif()'" >&2
      exit 1
    fi
  fi
  if [ "$asan" = 1 ]; then
    cmake --build build-asan -j "$JOBS"
  else
    cmake --build build-asan -j "$JOBS" --target parse_fuzzer roundtrip_fuzzer
  fi
fi

if [ "$asan" = 1 ]; then
  step "tests (ASan + UBSan; not those labelled slow, which the Release pass ran)"
  # malloc_context_size=8 (default 30): the allocation stack ASan records for every malloc.
  # Recording it (StackDepot::Put, the unwinding) was a fifth of the sanitized searches' time
  # (perf on pipeline_test, 2026-12-06); 8 frames still name the caller in a report.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:malloc_context_size=8} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    run_tests build-asan 'gpu|slow' tools/ctest-costs/asan.txt
fi

if [ "$fuzz" = 1 ]; then
  if [ "$have_fuzz" = 1 ]; then
    step "parser fuzzer (${FUZZ_SECONDS} s)"
    bash tests/fuzz/run_fuzz.sh build-asan "$FUZZ_SECONDS"
  else
    step "parser fuzzer: tests/fuzz/run_fuzz.sh not present, skipped"
  fi
fi

step "all passed"
