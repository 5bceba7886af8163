// Static analysis of a Program for `prism check`: work, minimum traffic, and the roofline
// floor on a target.
//
//   ProgramStats s = AnalyzeProgram(p);
//   double floor_us = RooflineFloorUs(s, /*dram_Bps=*/4.19e12, /*matmul_flops=*/750e12);
#ifndef PRISM_IR_ANALYSIS_H_
#define PRISM_IR_ANALYSIS_H_

#include <cstdint>

#include "prism/ir/program.h"

namespace prism {

struct ProgramStats {
  double matmul_flops = 0;       // 2·M·N·K per matmul, times its batch
  double elementwise_flops = 0;  // one per output element of unary/binary ops; reductions,
                                 // norms and softmax counted per docs/ir_semantics.md
  double transcendentals = 0;    // exp, silu, gelu, sqrt, rsqrt, recip evaluations (SFU work)
  double min_bytes = 0;          // every input read once + every output written once
  double total_flops() const { return matmul_flops + elementwise_flops; }
};

ProgramStats AnalyzeProgram(const Program& program);

// max(min_bytes / dram_Bps, matmul_flops / matmul_flops_per_s) in microseconds — the floor of
// ../shared/WORKLOADS.md.
double RooflineFloorUs(const ProgramStats& stats, double dram_Bps, double matmul_flops_per_s);

}  // namespace prism

#endif  // PRISM_IR_ANALYSIS_H_
