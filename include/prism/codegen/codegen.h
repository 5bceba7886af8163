// CUDA code generation: a concrete block program (an instance of a validated
// sGraph, block_instance.h) → self-contained CUDA C++ source, a launch
// description (JSON) and a small C++ host wrapper header (DESIGN.md §6,
// docs/codegen.md).
//
//   PRISM_ASSIGN_OR_RETURN(BlockProgram p, Instantiate(g, {{"g", 192}, {"F",
//   32}, {"T", 128},
//                                                          {"S", 3}}));
//   PRISM_ASSIGN_OR_RETURN(GeneratedCode code, GenerateCuda(p));
//   // code.source → kernel.cu, code.launch_json → launch.json,
//   code.host_header → host.h
//
// What is generated (one __global__ function per block-graph kernel, extern
// "C", named `prism_<program>_<kernel><suffix>`), the "GEMM + epilogue"
// template:
//   - loop inputs (an fmap): rank-2 f16 tiles streamed through shared memory
//   with 16-byte
//     cp.async in an S-stage pipeline (S = the graph's stages), rows padded by
//     16 bytes;
//   - matmul of two loop-input tiles, closed by acc_sum: tensor cores (mma.sync
//   m16n8k16,
//     f16 → f32), M padded to a multiple of 16, warps split the K tile (and,
//     when K is short, the N tile), partial sums combined through shared memory
//     after the loop;
//   - acc_sumsq_last(x) and acc_sum_last(square(x)) where x is a matmul's A
//   tile: fused into the
//     A-fragment loads (f32 squares), reduced by quad shuffles and shared
//     memory;
//   - after the loop: inv_rms, unary (exp silu gelu relu sqrt rsqrt square neg
//   recip scale) and
//     binary (add sub mul div, broadcasting [m,1]/[1,n]) ops, evaluated per
//     output element in f32, then rounded to f16 and stored by `output`.
// Anything else (library kernels, loop-invariant inputs, compute ops inside the
// loop other than the fused square, reductions, rms, online accumulators,
// after-loop matmuls, non-f16 tensors, rank ≠ 2 tiles) → Unimplemented naming
// the kernel, op and what is missing; never wrong code. Output is
// deterministic: the same program and options give byte-identical strings.
#ifndef PRISM_CODEGEN_CODEGEN_H_
#define PRISM_CODEGEN_CODEGEN_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/block/block_instance.h"

namespace prism::codegen {

struct CodegenOptions {
  // Appended to every kernel's name (to put several variants in one module).
  std::string name_suffix;
  // Upper bound on a kernel's dynamic shared memory (default: sm_90's 227 KiB
  // opt-in limit; sm_80: 163 KiB). An instance that needs more →
  // ResourceExhausted naming the kernel.
  int64_t max_dynamic_smem_bytes = 227 * 1024;
};

// How to launch one generated kernel.
struct LaunchConfig {
  std::string kernel;    // the block graph's name ("k0")
  std::string function;  // the extern "C" __global__ name
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t threads = 0;             // blockDim.x (blockDim.y = blockDim.z = 1)
  int64_t dynamic_smem_bytes = 0;  // needs cudaFuncAttributeMaxDynamicSharedMemorySize > 48 KiB
  // Kernel tensor indices (BlockProgram::tensors) passed as the kernel's
  // pointer arguments, in order; `written[i]` says whether argument i is
  // written (else read only).
  std::vector<int> args;
  std::vector<bool> written;
  // The generator's own accounting, for the resource audit (audit.h).
  int64_t stage_bytes = 0;       // one pipeline stage (padded tiles)
  int64_t reduction_bytes = 0;   // after-loop cross-warp reduction buffer (aliases stages)
  int64_t accumulator_regs = 0;  // f32 accumulator registers per thread
};

struct GeneratedCode {
  std::string source;                  // kernel.cu: self-contained CUDA C++ (NVRTC or nvcc), sm_80+
  std::string launch_json;             // launch.json: {"program", "kernels": [{"function",
                                       // "grid", ...}]}
  std::string host_header;             // host.h: launch helpers; include after kernel.cu in
                                       // an nvcc TU
  std::vector<LaunchConfig> launches;  // one per kernel, in program order
};

// Generates code for every kernel of `program`. Unimplemented (see above),
// ResourceExhausted (shared memory over options.max_dynamic_smem_bytes) or
// InvalidArgument (a malformed program).
absl::StatusOr<GeneratedCode> GenerateCuda(const BlockProgram& program,
                                           const CodegenOptions& options = {});

// The text of kernels/prism/device_common.cuh (inlined into every generated
// source).
const std::string& DeviceCommonSource();

}  // namespace prism::codegen

#endif  // PRISM_CODEGEN_CODEGEN_H_
