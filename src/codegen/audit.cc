// The resource audit (audit.h).
#include "prism/codegen/audit.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/status.h"
#include "prism/block/block_resources.h"

namespace prism::codegen {

int64_t MaxSmemPerBlock(int sm) {
  if (sm >= 90) return 227 * 1024;
  if (sm == 80 || sm == 87) return 163 * 1024;
  if (sm == 86 || sm == 89) return 99 * 1024;
  return 48 * 1024;
}

absl::StatusOr<std::vector<KernelAudit>> AuditResources(const SGraph& graph,
                                                        const Assignment& assignment,
                                                        const GeneratedCode& code,
                                                        const NvrtcResult& compiled) {
  PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(graph));
  PRISM_ASSIGN_OR_RETURN(SGraphResources res, ComputeResources(graph, info));
  std::vector<KernelAudit> out;
  for (const LaunchConfig& l : code.launches) {
    int index = -1;
    for (int i = 0; i < static_cast<int>(graph.kernels().size()); ++i) {
      if (graph.kernels()[i].name == l.kernel) index = i;
    }
    if (index < 0)
      return absl::NotFoundError(absl::StrCat("kernel ", l.kernel, " not in the sGraph"));
    const CompiledKernelInfo* c = nullptr;
    for (const CompiledKernelInfo& k : compiled.kernels) {
      if (k.function == l.function) c = &k;
    }
    if (c == nullptr) {
      return absl::NotFoundError(absl::StrCat(l.function, " is missing from the ptxas report"));
    }
    const KernelResources& r = res.kernels[index];
    KernelAudit a;
    a.function = l.function;
    a.sm = compiled.sm;
    // A library kernel has no block-graph model (block_resources.h leaves smem_bytes and
    // regs_per_thread unset): it is held to the static shared buffer its generator declares
    // (LaunchConfig::reduction_bytes: the fibre kernel's combine buffer; 0 for concat) and no
    // register bound.
    if (r.library) {
      a.model_smem_bytes = l.reduction_bytes;
    } else {
      PRISM_ASSIGN_OR_RETURN(a.model_smem_bytes,
                             EvaluateInt(graph.ctx(), r.smem_bytes, assignment));
      PRISM_ASSIGN_OR_RETURN(a.model_regs_per_thread,
                             EvaluateInt(graph.ctx(), r.regs_per_thread, assignment));
    }
    a.generated_smem_bytes = l.dynamic_smem_bytes - l.residency_pad_bytes + c->static_smem_bytes;
    a.accumulator_regs = l.accumulator_regs;
    a.compiled_regs = c->registers;
    a.stack_frame_bytes = c->stack_frame_bytes;
    a.spill_bytes = c->spill_store_bytes + c->spill_load_bytes;
    if (a.generated_smem_bytes != a.model_smem_bytes) {
      a.mismatches.push_back(absl::StrCat(
          "smem: model ", a.model_smem_bytes, " B, generated ", a.generated_smem_bytes,
          " B (stage ", l.stage_bytes,
          " B as laid out (padded or swizzled rows), reduction buffer ", l.reduction_bytes,
          " B, static ", c->static_smem_bytes, " B)"));
    }
    if (a.compiled_regs < a.model_regs_per_thread) {
      a.mismatches.push_back(absl::StrCat("regs: compiled ", a.compiled_regs,
                                          " below the model's lower bound ",
                                          a.model_regs_per_thread));
    }
    if (a.compiled_regs < a.accumulator_regs) {
      a.mismatches.push_back(absl::StrCat("regs: compiled ", a.compiled_regs,
                                          " below the generator's accumulator registers ",
                                          a.accumulator_regs));
    }
    if (a.stack_frame_bytes > 0 || a.spill_bytes > 0) {
      a.mismatches.push_back(absl::StrCat("spills: stack frame ", a.stack_frame_bytes,
                                          " B, spill traffic ", a.spill_bytes, " B"));
    }
    if (a.compiled_regs * l.threads > 65536) {
      a.mismatches.push_back(absl::StrCat("limits: ", a.compiled_regs, " registers × ", l.threads,
                                          " threads exceeds 65536"));
    }
    if (a.generated_smem_bytes > MaxSmemPerBlock(compiled.sm)) {
      a.mismatches.push_back(absl::StrCat("limits: ", a.generated_smem_bytes,
                                          " B of shared memory exceeds sm_", compiled.sm, "'s ",
                                          MaxSmemPerBlock(compiled.sm), " B"));
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::string FormatAudit(const std::vector<KernelAudit>& audit) {
  std::string s;
  for (const KernelAudit& a : audit) {
    absl::StrAppend(
        &s, a.function, " sm_", a.sm, ": regs ", a.compiled_regs,
        " (model >= ", a.model_regs_per_thread, ", accumulators ", a.accumulator_regs, "), smem ",
        a.generated_smem_bytes, " (model ", a.model_smem_bytes, "), spills ", a.spill_bytes, "; ",
        a.mismatches.empty() ? std::string("no mismatch")
                             : absl::StrCat("mismatches: ", absl::StrJoin(a.mismatches, "; ")),
        "\n");
  }
  return s;
}

}  // namespace prism::codegen
