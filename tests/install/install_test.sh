#!/usr/bin/env bash
# Installs prism to a temporary prefix, moves the prefix (relocatability), then builds and runs
# examples/consumer against it (shared and static), checks the package version file, and
# imports the installed Python package (docs/api.md). Run by ctest as install.consumer.
#
#   tests/install/install_test.sh BUILD_DIR SOURCE_DIR [PYTHON]
# PYTHON: the interpreter the module was built for; empty: the Python check is skipped.
set -euo pipefail
build=$(readlink -f "$1")
src=$(readlink -f "$2")
python=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/prism_install_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

echo "== cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" --component prism >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
# Relocatable: everything below must work from where the prefix was moved to.
mv "$work/prefix" "$work/moved"
prefix="$work/moved"
libdir=$(dirname "$(find "$prefix" -name 'libprism.so' | head -1)")
[ -n "$libdir" ] || fail "no libprism.so under $prefix"
for f in include/prism/prism.h share/prism/smt_theories/cost.smt2 share/prism/kernels bin/prism; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f is not installed"
done
for f in libprism.a cmake/prism/prismConfig.cmake cmake/prism/prismConfigVersion.cmake \
         cmake/prism/prismTargets.cmake cmake/prism/prismStaticTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "$libdir/$f is not installed"
done
if grep -rq "$work/prefix\|$build" "$libdir/cmake/prism"; then
  fail "the package config names the build tree or the original prefix (not relocatable)"
fi

echo "== consumer: configure, build"
env -u PRISM_DATA_DIR cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "configuring the consumer failed"; }
grep -q "prism 0.1.0: data in $prefix/share/prism" "$work/consumer.log" ||
  { cat "$work/consumer.log"; fail "prism_DATA_DIR is not $prefix/share/prism"; }
cmake --build "$work/consumer" -j 2 >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "building the consumer failed"; }
[ -x "$work/consumer/consumer_static" ] ||
  { cat "$work/consumer.log"; fail "consumer_static was not built (prism::prism_static missing)"; }

echo "== consumer (libprism.so)"
out=$(env -u PRISM_DATA_DIR "$work/consumer/consumer") || fail "the consumer failed: $out"
echo "$out"
# The installed library finds its data beside itself, not in the source tree.
grep -qF "(data: $prefix/share/prism)" <<<"$out" || fail "libprism.so did not find $prefix/share/prism"
grep -qE '^gated_mlp b=1: family #[0-9]+, 1 kernel\(s\), cost model' <<<"$out" || fail "unexpected summary"
grep -qE '^launch prism_[a-z0-9_]+ grid=\([0-9]+,[0-9]+,[0-9]+\) block=\([0-9]+,1,1\) dynamic_smem=[0-9]+ args=X:r,A:r,B:r,Y:w$' <<<"$out" ||
  fail "unexpected launch line"
echo "== consumer_static (libprism.a)"
out_static=$(env -u PRISM_DATA_DIR PRISM_DATA_DIR="$prefix/share/prism" "$work/consumer/consumer_static") ||
  fail "the static consumer failed: $out_static"
[ "$(grep '^launch' <<<"$out_static")" = "$(grep '^launch' <<<"$out")" ] ||
  fail "static and shared consumers disagree: $out_static"

echo "== package version: 0.1 accepted above; 0.2 and 1.0 must be refused"
for v in 0.2 1.0; do
  mkdir -p "$work/v$v"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(v CXX)\nfind_package(prism %s CONFIG REQUIRED)\n' "$v" \
    >"$work/v$v/CMakeLists.txt"
  if cmake -S "$work/v$v" -B "$work/v$v/b" -DCMAKE_PREFIX_PATH="$prefix" >"$work/v$v.log" 2>&1; then
    fail "find_package(prism $v) accepted version 0.1.0"
  fi
  grep -q "with requested version \"$v\"" "$work/v$v.log" || { cat "$work/v$v.log"; fail "no version mismatch reported for $v"; }
done

if [ -n "$python" ]; then
  echo "== import prism from the install prefix"
  pydir=$(dirname "$(find "$prefix" -name '__init__.py' -path '*/prism/*' | head -1)")
  pyout=$(cd "$work" && env -u PRISM_DATA_DIR PYTHONPATH="$(dirname "$pydir")" "$python" -c \
    'import prism; print(prism.__file__); print(prism.data_dir()); print(prism.__version__)') ||
    fail "import prism from $pydir failed: $pyout"
  echo "$pyout"
  [ "$pyout" = "$pydir/__init__.py
$prefix/share/prism
0.1.0" ] || fail "the installed Python package is not the one in $pydir or does not find its data"
fi
echo "install_test: PASS"
