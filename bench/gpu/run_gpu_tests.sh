#!/bin/bash
# On the device: runs the `gpu`-labelled test binary built here and shipped in .carry/
# (bench/gpu/prepare_carry.sh copies BUILD/tests/codegen/codegen_gpu_test to .carry/bin/ and
# its Abseil libraries, from `ldd`, to .carry/lib/). NVRTC comes from the device's toolkit.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
ldd .carry/bin/codegen_gpu_test | grep "not found" && { find / -name 'libnvrtc.so*' 2>/dev/null | head; }
.carry/bin/codegen_gpu_test 2>&1 | tee "${OUT:-/tmp}/gpu_test.txt"
