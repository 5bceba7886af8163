// A ranking estimate of a generated instance's time per call, for choosing among candidates
// without a GPU (docs/optimize.md, "The estimate").
//
//   tune::InstanceWork work{.flops = m.at("flops"), .sfu_ops = m.at("sfu_ops")};
//   tune::Estimate e = tune::EstimateInstance(target, program, code, work);
//   e.us;              // estimated µs per call
//   e.ToString();      // "k0: 1.50 + 19.02 µs (memory: 50.37 MB at 2.86 TB/s) | k1: ..."
//
// The cost model's lower bound (smt_theories/cost.smt2) is what pruning needs: no instance is
// faster. It is a poor ranking: with L2-warm traffic free and every rate at its ceiling, it
// ties the instances that stream one weight matrix in 384 blocks with those that stream it in
// 32, and on the twelve rows of ../shared/WORKLOADS.md its cheapest candidate measured 1.3–7.4×
// the fastest (2.2× in geometric mean, H100, 2026-12-06). The estimate models what the lower
// bound leaves out, per kernel of the generated code:
//   - memory: a kernel's bytes stream at min(dram_efficiency × the DRAM bandwidth, bytes in
//     flight / loaded_latency_us (Little's law: resident blocks × stages ahead × stage bytes),
//     active SMs × one SM's share of the bandwidth), plus kernel_latency_us;
//   - compute (first kernel): the instance's flops and special-function operations at
//     tensor_efficiency / sfu_efficiency of the target's ceilings, over the active SMs, and
//     block_lockstep more per warpgroup of a block beyond the first (a block's warps meet at
//     one barrier per stage, so one warpgroup's stall is less covered by another's work: the
//     attention rows measured 11–14 % per warpgroup);
//   - a kernel takes the longer of the two plus a share of the shorter: 1/F of it for a
//     pipelined loop of F iterations (its fill and drain), at least overlap_loss (the overlap
//     is not perfect; without it, compute-bound attention instances tied, and the tie went
//     to instances that measured 1.4× the fastest), all of it for a kernel without a stage
//     ring (one stage, or loads straight from global memory);
//   - a kernel without pipeline stages pays serial_element_us per element each thread walks;
//   - launches: the target's launch overhead for the first kernel (first_launch_pdl_saving_us
//     less with programmatic dependent launch, which overlaps the previous call), then
//     dependent_launch_us per kernel (dependent_launch_pdl_us with PDL).
// Its constants were fitted to 2,390 measured candidates of the twelve rows (H100,
// bench/gpu/results/h100-2026-12-06-s11-run1); the loop's fill and drain and block_lockstep
// were chosen on that run and two later ones (h100-2026-12-07-s20-run1, -s20-run2), and checked
// on a run measured after them (-s21-run1): there, the candidate it ranks first measured
// 1.00–1.11× the fastest on every row, 1.044× in geometric mean (docs/optimize.md "The
// estimate"; tools/estimate_check.py). It is not a bound and proves nothing.
#ifndef PRISM_TUNE_ESTIMATE_H_
#define PRISM_TUNE_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "prism/block/block_instance.h"
#include "prism/codegen/codegen.h"
#include "prism/smt/target.h"

namespace prism::tune {

// The family's work metrics at the instance (prune::Family::Evaluate's "flops" and "sfu_ops").
struct InstanceWork {
  int64_t flops = 0;
  int64_t sfu_ops = 0;
};

// The estimate's constants (the fitted defaults; see the header comment).
struct EstimateModel {
  double dram_efficiency = 0.85;       // of hw_dram_bytes_per_ns that a stream reaches
  double loaded_latency_us = 2.0;      // Little's law: bandwidth ≤ bytes in flight / this
  double single_stage_inflight = 0.25;  // stages ahead of a one-stage loop (loads, then waits)
  double kernel_latency_us = 1.0;      // a kernel's ramp-up and drain
  double serial_element_us = 0.04;     // per element a thread of a stageless kernel walks
  double tensor_efficiency = 0.3;      // of hw_tensor_flops_per_ns
  double sfu_efficiency = 0.3;         // of hw_sfu_ops_per_ns
  double first_launch_pdl_saving_us = 0.3;
  double dependent_launch_us = 2.0;
  double dependent_launch_pdl_us = 1.0;
  double overlap_loss = 0.2;  // of the shorter of memory and compute, added to the longer
  double block_lockstep = 0.08;  // compute time added per warpgroup of a block beyond the first
};

struct KernelEstimate {
  double launch_us = 0;
  double memory_us = 0;   // streaming time, kernel latency and serial_us included
  double serial_us = 0;   // a stageless kernel's per-element walk (serial_element_us)
  double compute_us = 0;  // 0 for kernels after the first
  double bytes = 0;       // bytes streamed
  double bytes_per_us = 0;  // the bandwidth the model allows them
  // launch_us + max(memory_us, compute_us) + the exposed share of min(memory_us, compute_us):
  // max(overlap_loss, 1 / forloop) with a ring of two or more stages, all of it without
  double us = 0;
};

struct Estimate {
  double us = 0;  // the sum over kernels
  std::vector<KernelEstimate> kernels;
  // "k0: 1.50 + 19.02 µs (memory: 50.37 MB at 2.86 TB/s) | k1: 1.00 + 1.21 µs (memory: ...)";
  // a kernel bound by its compute says "(compute: ... µs)", a stageless kernel's memory term
  // adds ", serial ... µs" (its part of the memory time).
  std::string ToString() const;
};

// The estimate of `code` (generated from `program`; one LaunchConfig per kernel, in order) on
// `target`. Kernels that `program` holds as block graphs take their forloop and stages from
// it; library kernels count as one stageless pass over their arguments. Total function: a
// launch with zero threads or grid counts as one (never divides by zero).
Estimate EstimateInstance(const Target& target, const BlockProgram& program,
                          const codegen::GeneratedCode& code, const InstanceWork& work,
                          const EstimateModel& model = {});

}  // namespace prism::tune

#endif  // PRISM_TUNE_ESTIMATE_H_
