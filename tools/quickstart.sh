#!/usr/bin/env bash
# Quick start: installs what is missing, builds prism (Release, ninja) and runs it on the
# built-in default workload, rmsnorm_linear at batch 8: `prism check` (shapes, work, roofline
# floor on an H200) and `prism optimize` (search, proofs, Z3 pruning, CUDA generation; on a
# machine with an NVIDIA GPU it measures the candidates, elsewhere it selects by the cost model
# and says so), writing kernel.cu, launch.json, host.h and family.json to
# $BUILD_DIR/quickstart-out/.
#
#   tools/quickstart.sh            # build dir: build-release/ (override with BUILD_DIR=...)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-release}
JOBS=${PRISM_JOBS:-$(nproc)}

bash tools/setup.sh
echo "quickstart: configuring and building ${BUILD_DIR}/bin/prism"
mkdir -p "$BUILD_DIR"
# The configuration of tools/test.sh's Release build (unity translation units, as CI builds
# them), -Werror aside: with PRISM_WERROR=ON the second quick-start command reuses this build.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRISM_BUILD_BENCH=OFF \
  -DPRISM_WERROR="${PRISM_WERROR:-OFF}" -DCMAKE_CXX_FLAGS="-Wno-restrict" -DPRISM_UNITY_BUILD=ON \
  >"$BUILD_DIR/configure.log" 2>&1 || { cat "$BUILD_DIR/configure.log" >&2; exit 1; }
cmake --build "$BUILD_DIR" -j "$JOBS" --target prism

prism="$BUILD_DIR/bin/prism"
set -x
"$prism" check --workload rmsnorm_linear --batch 8 --target h200
"$prism" optimize --workload rmsnorm_linear --batch 8 --target h200 --out "$BUILD_DIR/quickstart-out"
