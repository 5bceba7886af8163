// Resource audit: the compiled kernels' registers and shared memory (NVRTC's
// ptxas report, nvrtc.h) against the resource model of block_resources.h
// evaluated at the instance's assignment, and against the generator's own
// accounting (codegen.h LaunchConfig).
//
//   PRISM_ASSIGN_OR_RETURN(std::vector<KernelAudit> audit,
//                          AuditResources(graph, assignment, code,
//                          nvrtc_result));
//   for (const KernelAudit& k : audit) for (const std::string& m :
//   k.mismatches) ...;
//
// A library kernel (the concat kernel) has no model: its model smem_bytes and
// regs_per_thread are 0, so any shared memory it uses is a mismatch.
//
// Each finding is a mismatch line; none is fatal (the audit reports, it does
// not judge):
//   smem      the model's smem_bytes (stages × unpadded loop tiles + invariant
//   tiles) differs
//             from the launch's dynamic + the kernel's static shared memory
//             (the generator pads every shared row by 16 bytes and may need a
//             larger after-loop reduction buffer);
//   regs      the compiled register count is below the model's lower bound
//   regs_per_thread
//             (the model would be unsound), or below the generator's
//             accumulator registers;
//   spills    a non-zero stack frame or spill;
//   limits    registers × threads over 65536, or shared memory over the
//   architecture's
//             per-block limit (sm_80: 163 KiB, sm_90: 227 KiB).
#ifndef PRISM_CODEGEN_AUDIT_H_
#define PRISM_CODEGEN_AUDIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/block/sgraph.h"
#include "prism/codegen/codegen.h"
#include "prism/codegen/nvrtc.h"
#include "prism/expr/eval.h"

namespace prism::codegen {

struct KernelAudit {
  std::string function;
  int sm = 0;
  int64_t model_smem_bytes = 0;       // block_resources.h smem_bytes
  int64_t generated_smem_bytes = 0;   // dynamic (launch, less its residency padding) + static (ptxas)
  int64_t model_regs_per_thread = 0;  // block_resources.h regs_per_thread (a lower bound)
  int64_t accumulator_regs = 0;       // the generator's f32 accumulator registers per thread
  int64_t compiled_regs = 0;          // ptxas
  int64_t stack_frame_bytes = 0;
  int64_t spill_bytes = 0;  // stores + loads
  std::vector<std::string> mismatches;
};

// Per-block shared memory limit of sm_<sm> in bytes (opt-in maximum).
int64_t MaxSmemPerBlock(int sm);

// `graph` is the sGraph the code was instantiated from, `assignment` the
// instance's; `compiled` NVRTC's result for `code.source`. NotFound if a
// generated kernel is missing from the ptxas report; errors of
// Validate/ComputeResources/EvaluateInt are passed through.
absl::StatusOr<std::vector<KernelAudit>> AuditResources(const SGraph& graph,
                                                        const Assignment& assignment,
                                                        const GeneratedCode& code,
                                                        const NvrtcResult& compiled);

// One line per kernel: "prism_x_k0 sm_90: regs 40 (model ≥ 16, accumulators
// 16), smem 36864 (model 33792), spills 0; mismatches: ...".
std::string FormatAudit(const std::vector<KernelAudit>& audit);

}  // namespace prism::codegen

#endif  // PRISM_CODEGEN_AUDIT_H_
