// Lowering sGraphs (block/sgraph.h) into terms of the parallel algebra (docs/rule_format.md §2),
// the candidate side of ProveEquivalent (issue 5 item 2). The term of an sGraph output means
// the whole output tensor for EVERY value of the graph's parameters: grid sizes and forloop
// ranges appear only as symbolic degrees {g}, so one proof covers the whole family.
//
//   ExprContext ctx;                                   // one per proof
//   PRISM_ASSIGN_OR_RETURN(LoweredSGraph low, LowerSGraph(graph, ctx));
//   PRISM_ASSIGN_OR_RETURN(Term goal, LowerProgramOutput(program, 0));
//   ProveResult r = ProveEquivalent(ctx, low.env, low.outputs[0], goal, rules);
//
// Lowering (one Term DAG; kernels in order; every kernel tensor has the term of its whole
// value — a program input is its leaf, a tensor written by a kernel is what that kernel stores):
//   - axes: a grid axis p of kernel k whose size is not the constant 1 becomes an axis of degree
//     {gp}; the forloop (unless its range is the constant 1) an axis of degree {F}. An axis is
//     NAMED BY ITS DEGREE (the parameter's name, "c8" for a constant 8, "k0.x" otherwise), made
//     unique within the kernel by a suffix ("g", "g.2"). So axes of different kernels with the
//     same degree share a name: that is sound because combine/reduce/reduce_max bind their
//     axis (the semantics of rule_format.md §2 is compositional in the environment ρ, and a
//     consumer kernel only mentions the producer's axes inside the producer's combines), and it
//     is what lets `partition-combine-same` (kernels.rules) take the slice a consumer block
//     reads straight back to the producer's per-block term.
//   - input, imap (px, py, pz), fmap f: per tensor dim d ascending, the grid partitions x, y, z
//     (x innermost = most significant, as the emulator linearizes), then the forloop partition
//     `(partition … f @F {F})` outermost (position c·F + i).
//   - compute ops: their term operators (dims normalized by the tile's rank); inv_rms(s, n, eps)
//     = (rsqrt (add (div s n) eps)), n an integer literal when constant.
//   - accumulators: acc_sum(x) = (reduce x @F); acc_sum_last(x) = (reduce (sum x last) @F);
//     acc_sumsq_last(x) = (reduce (sum (square x) last) @F); acc_max_last(x) =
//     (reduce_max (max x last) @F); with M = (reduce_max (max s last) @F):
//     acc_online_sum(s) = (reduce (sum (exp (sub s M)) last) @F) and acc_online_matmul(s, v) =
//     (reduce (matmul (exp (sub s M)) v) @F) — the final values of the running-max recurrences.
//     Without a forloop axis (F = 1) the reduce is dropped.
//   - output, omap: the stored tile combined over every mapped axis, z innermost (so x is the
//     most significant position); partial results are thereby laid side by side, and the
//     consumer's partition of that dim (forloop walking the groups) or reduction over it undoes
//     the combine (`partition-combine-same`, `sum-combine`, `max-combine`).
//   - library kernels: the Program op on whole tensor terms (as LowerProgramOutput spells it).
//
// Contract: `graph` validates (maps resolved, Validate OK), its input shapes are constants, and
// `ctx` declares no variable named like a parameter of the graph with a different domain
// (parameters are imported into `ctx` with their domains). Errors: Validate's message, or
// InvalidArgument "tensor X has a symbolic shape ..." / "parameter 'g' ...".
#ifndef PRISM_EQUIV_LOWER_SGRAPH_H_
#define PRISM_EQUIV_LOWER_SGRAPH_H_

#include <vector>

#include "absl/status/statusor.h"
#include "prism/block/sgraph.h"
#include "prism/equiv/prove.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"

namespace prism::equiv {

struct LoweredSGraph {
  std::vector<Term> outputs;  // one term per sGraph output, in order
  TensorEnv env;              // the shapes of the graph's inputs (ctx = the lowering's ctx)
};

absl::StatusOr<LoweredSGraph> LowerSGraph(const SGraph& graph, ExprContext& ctx);

// Limits for proving lowered sGraphs: the runner's defaults with room for 60,000 nodes (the
// online-softmax split-KV proof needs about 30,000; every fixture proves in well under 1 s).
ProveOptions SGraphProveOptions();

// Lowers `graph` and every output of `program` into `ctx` and proves output i of the graph
// equal to output i of the program (ProveEquivalent, in order). InvalidArgument if the graph
// does not lower, or if the counts, names or shapes of the inputs or the count of outputs
// differ ("input 1 is W [4096, 6144] in the sGraph but A [4096, 16] in the program").
absl::StatusOr<std::vector<ProveResult>> ProveSGraph(ExprContext& ctx, const SGraph& graph,
                                                     const Program& program, const RuleSet& rules,
                                                     const ProveOptions& options);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_LOWER_SGRAPH_H_
