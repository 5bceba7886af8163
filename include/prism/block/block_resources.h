// Symbolic resource use and work of an sGraph's kernels, as expressions over its parameters,
// and the family metrics derived from them (named as in prune/family.h and
// smt_theories/resources.smt2, whose contracts they follow).
//
// Per block graph (tile = the extents Validate derives; bytes = elements × dtype size):
//   smem_bytes       stages × Σ bytes of tiles loaded inside the loop (inputs with an fmap)
//                    + Σ bytes of loop-invariant input tiles (loaded once). Accumulators are
//                    register-resident and not counted here.
//   accumulator_elems  f32 accumulator state per block (the running max of online
//                    accumulators included).
//   regs_per_thread  ceil(accumulator_elems / threads): a lower bound (no fixed overhead).
//   l2_bytes         blocks × (F × Σ loop tile bytes + Σ invariant tile bytes): what all blocks
//                    load (a replicated tile counts once per block that loads it).
//   dram_bytes       Σ bytes of the distinct tensors the kernel reads + of those it writes.
//   flops            blocks × (F × loop-op flops + invariant-op flops + after-loop flops), with
//                    matmul 2·m·n·k, elementwise 1 per element, reductions 1 per input element
//                    (the per-op table is in docs/block_graph.md).
//   sfu_ops          exp, silu, gelu, sqrt, rsqrt, recip evaluations, counted like flops.
// Library kernels contribute dram_bytes, l2_bytes (= dram_bytes), flops and sfu_ops only.
//
//   PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(g));
//   PRISM_ASSIGN_OR_RETURN(SGraphResources r, ComputeResources(g, info));
//   PRISM_ASSIGN_OR_RETURN(int64_t smem, EvaluateInt(g.ctx(), r.kernels[0].smem_bytes, a));
#ifndef PRISM_BLOCK_BLOCK_RESOURCES_H_
#define PRISM_BLOCK_BLOCK_RESOURCES_H_

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/expr/expr.h"
#include "prism/block/sgraph.h"

namespace prism {

struct KernelResources {
  bool library = false;
  std::array<Expr, kNumGridAxes> grid;  // block graphs only
  Expr blocks;                          // gx · gy · gz
  Expr threads;
  Expr smem_bytes;
  Expr accumulator_elems;
  Expr regs_per_thread;
  Expr l2_bytes;
  Expr dram_bytes;
  Expr flops;
  Expr sfu_ops;
};

struct SGraphResources {
  std::vector<KernelResources> kernels;
  // Family metrics, in prune/family.h's vocabulary: capacity metrics (smem_bytes,
  // regs_per_thread, threads_per_block, grid_x, grid_y, grid_z, grid_blocks) are the max over
  // block graphs; work metrics (dram_bytes, l2_bytes, flops, sfu_ops) the sum over all
  // kernels; kernels the number of launches. All simplified. A graph of library kernels only
  // has no capacity metrics (the pruner reads them as unknown).
  std::vector<std::pair<std::string, Expr>> metrics;
  // The metric called `name`; PRISM_CHECKs that it exists.
  Expr Metric(absl::string_view name) const;
};

// `analysis` must be Validate(graph)'s result.
absl::StatusOr<SGraphResources> ComputeResources(const SGraph& graph,
                                                 const SGraphAnalysis& analysis);

}  // namespace prism

#endif  // PRISM_BLOCK_BLOCK_RESOURCES_H_
