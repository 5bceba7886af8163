#!/usr/bin/env bash
# Regenerates examples/<workload>_b1.prism and _b8.prism from the built-in workloads
# (src/ir/workloads.cc) with `prism workload NAME --batch B`. tests/ir/workloads_test.cc fails
# until the files match again.
#
#   tools/regen_examples.sh        # uses $BUILD_DIR/bin/prism (default build-release/)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-release}
prism="$BUILD_DIR/bin/prism"
if [ ! -x "$prism" ]; then
  echo "regen_examples: error: $prism not found; build it first (tools/quickstart.sh)" >&2
  exit 1
fi
for name in $("$prism" workload list | awk '{print $1}'); do
  for b in 1 8; do
    "$prism" workload "$name" --batch "$b" >"examples/${name}_b${b}.prism"
  done
done
echo "regen_examples: wrote $(ls examples/*_b[18].prism | wc -l) files"
