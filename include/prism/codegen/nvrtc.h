// NVRTC compilation of generated sources to cubin, with the assembler's
// resource report (registers, static shared memory, stack frame, spills) read
// back per kernel. Works without a GPU (DEPS.md). Without CUDA at build time
// (PRISM_WITH_CUDA off) every call returns Unavailable.
//
//   PRISM_ASSIGN_OR_RETURN(NvrtcResult r, CompileWithNvrtc(code.source,
//   /*sm=*/90)); for (const CompiledKernelInfo& k : r.kernels) ... k.registers
//   ...
#ifndef PRISM_CODEGEN_NVRTC_H_
#define PRISM_CODEGEN_NVRTC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::codegen {

// One kernel's resources as reported by ptxas (-v).
struct CompiledKernelInfo {
  std::string function;
  int64_t registers = -1;
  int64_t static_smem_bytes = 0;
  int64_t stack_frame_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

struct NvrtcResult {
  int sm = 0;
  std::string log;                          // NVRTC's program log (includes the ptxas report)
  std::string cubin;                        // machine code for sm_<sm>
  std::vector<CompiledKernelInfo> kernels;  // in the order ptxas reports them
};

// True when built with NVRTC (the library loads; no GPU is needed).
bool NvrtcAvailable();
// "13.0" or Unavailable.
absl::StatusOr<std::string> NvrtcVersion();

// Compiles `source` for sm_<sm> (e.g. 80, 90; 90 means sm_90a, whose wgmma the
// attention_wgmma kernels need) with -std=c++17 -O3 and --ptxas-options=-v.
// InvalidArgument with the log if compilation fails;
// Unavailable without NVRTC.
absl::StatusOr<NvrtcResult> CompileWithNvrtc(absl::string_view source, int sm);

// Parses ptxas -v output ("Compiling entry function 'f'", "N bytes stack frame,
// N bytes spill stores, N bytes spill loads", "Used N registers, ... N bytes
// smem"). Pure; exposed for tests.
std::vector<CompiledKernelInfo> ParsePtxasReport(absl::string_view log);

}  // namespace prism::codegen

#endif  // PRISM_CODEGEN_NVRTC_H_
