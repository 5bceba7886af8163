// tune/: the ranking estimate of a generated instance (estimate.h).
#include "prism/tune/estimate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "prism/ir/types.h"

namespace prism::tune {

std::string Estimate::ToString() const {
  std::string out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelEstimate& k = kernels[i];
    absl::StrAppend(&out, i > 0 ? " | " : "", "k", i, ": ",
                    absl::StrFormat("%.2f + %.2f µs", k.launch_us, k.us - k.launch_us));
    if (k.compute_us > k.memory_us) {
      absl::StrAppend(&out, absl::StrFormat(" (compute: %.2f µs)", k.compute_us));
    } else {
      absl::StrAppend(&out, absl::StrFormat(" (memory: %.2f MB at %.2f TB/s", k.bytes / 1e6,
                                            k.bytes_per_us / 1e6),
                      k.serial_us > 0 ? absl::StrFormat(", serial %.2f µs", k.serial_us) : "", ")");
    }
  }
  return out;
}

Estimate EstimateInstance(const Target& target, const BlockProgram& program,
                          const codegen::GeneratedCode& code, const InstanceWork& work,
                          const EstimateModel& model) {
  const double sms = static_cast<double>(std::max<int64_t>(1, target.sms));
  const double dram = static_cast<double>(target.dram_bytes_per_ns) * 1e3;  // bytes per µs
  const double sm_share = dram / sms;
  bool pdl = false;
  for (const codegen::LaunchConfig& l : code.launches) pdl = pdl || l.programmatic;
  Estimate e;
  for (size_t i = 0; i < code.launches.size(); ++i) {
    const codegen::LaunchConfig& l = code.launches[i];
    KernelEstimate k;
    double blocks = 1;
    for (int64_t d : l.grid) blocks *= static_cast<double>(std::max<int64_t>(1, d));
    const int64_t threads = std::max<int64_t>(1, l.threads);
    int64_t forloop = 1, stages = 1;
    if (i < program.kernels.size() && program.kernels[i].is_block()) {
      forloop = std::max<int64_t>(1, program.kernels[i].block().forloop);
      stages = std::max<int64_t>(1, program.kernels[i].block().stages);
    }
    // Resident blocks per SM by threads, dynamic shared memory and the hardware's block limit.
    int64_t resident = std::max<int64_t>(1, target.blocks_per_sm);
    resident = std::min(resident, std::max<int64_t>(1, target.threads_per_sm / threads));
    resident = std::min(resident, std::max<int64_t>(1, target.smem_per_sm /
                                                           (l.dynamic_smem_bytes +
                                                            target.smem_reserved_per_block)));
    const double concurrent = std::min(blocks, sms * static_cast<double>(resident));
    const double active_sms = std::min(blocks, sms);
    double arg_bytes = 0, arg_elements = 0;
    for (int t : l.args) {
      if (t < 0 || static_cast<size_t>(t) >= program.tensors.size()) continue;
      const ConcreteTensor& tensor = program.tensors[t];
      const double n = static_cast<double>(NumElements(tensor.shape).value_or(0));
      arg_elements += n;
      arg_bytes += n * DTypeBytes(tensor.dtype);
    }
    const double stage = static_cast<double>(l.stage_bytes);
    double bandwidth = std::min(model.dram_efficiency * dram, active_sms * sm_share);
    if (stage > 0) {
      k.bytes = std::max(stage * static_cast<double>(forloop) * blocks, arg_bytes);
      const double ahead =
          stages > 1 ? static_cast<double>(stages - 1) : model.single_stage_inflight;
      bandwidth = std::min(bandwidth, concurrent * ahead * stage / model.loaded_latency_us);
    } else {
      k.bytes = arg_bytes;
    }
    bandwidth = std::max(bandwidth, 1.0);  // a target or model without bandwidth: 1 B/µs
    k.bytes_per_us = bandwidth;
    k.memory_us = model.kernel_latency_us + k.bytes / bandwidth;
    if (stage <= 0) {
      k.serial_us = arg_elements / (blocks * static_cast<double>(threads)) * model.serial_element_us;
      k.memory_us += k.serial_us;
    }
    if (i == 0) {
      const double share = active_sms / sms;
      auto term = [&](int64_t work_total, int64_t rate_per_ns, double efficiency) {
        if (work_total <= 0 || rate_per_ns <= 0 || efficiency <= 0) return 0.0;
        return static_cast<double>(work_total) /
               (static_cast<double>(rate_per_ns) * 1e3 * efficiency * share);
      };
      // The warps of a block meet at one barrier per stage: the more warpgroups a block has,
      // the less one's stall is covered by another's work.
      const double lockstep =
          1.0 + model.block_lockstep * std::max(0.0, static_cast<double>(threads) / 128.0 - 1.0);
      k.compute_us = (term(work.flops, target.tensor_flops_per_ns, model.tensor_efficiency) +
                      term(work.sfu_ops, target.sfu_ops_per_ns, model.sfu_efficiency)) *
                         lockstep +
                     model.kernel_latency_us;
      k.launch_us = static_cast<double>(target.launch_overhead_ns) / 1e3 -
                    (pdl ? model.first_launch_pdl_saving_us : 0.0);
    } else {
      k.launch_us = pdl ? model.dependent_launch_pdl_us : model.dependent_launch_us;
    }
    // A pipelined loop of F iterations hides all of the shorter of its loads and compute but
    // one iteration's (the pipeline's fill and drain); a kernel without a stage ring (one
    // stage, or none: loads straight from global memory) hides none of it.
    const double exposed = stage > 0 && stages > 1
                               ? std::max(model.overlap_loss, 1.0 / static_cast<double>(forloop))
                               : 1.0;
    k.us = k.launch_us + std::max(k.memory_us, k.compute_us) +
           exposed * std::min(k.memory_us, k.compute_us);
    e.us += k.us;
    e.kernels.push_back(k);
  }
  return e;
}

}  // namespace prism::tune
