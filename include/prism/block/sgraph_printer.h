// A readable listing of an sGraph: parameters, tensors, and each kernel's ops with their tile
// shapes and phases (when the graph validates; otherwise the first error is shown).
//
//   std::cout << SGraphToString(g);
//
//   sgraph rmsnorm_linear
//     param g: grid in divisors(6144)
//     tensor X: f16[16, 4096] input
//     kernel k0: block grid (g, 1, 1) threads T forloop F stages S
//       Xt = input X imap (-, -, -) fmap 1           # [16, 4096 floordiv F] loop
//       P = matmul(Xt, Wt)                            # [16, 6144 floordiv g] loop
//       A = acc_sum(P)                                # [16, 6144 floordiv g] after
//       output Y = Yt omap (1, -, -)                  # [16, 6144 floordiv g] after
//     kernel k1: library Ds = sum(D, dim=2)
#ifndef PRISM_BLOCK_SGRAPH_PRINTER_H_
#define PRISM_BLOCK_SGRAPH_PRINTER_H_

#include <string>

#include "prism/block/sgraph.h"
#include "prism/expr/eval.h"

namespace prism {

std::string SGraphToString(const SGraph& graph);

// The parameters of `graph` that `a` assigns, in declaration order: "gx=64 F=4 T=64 S=1"
// (parameters `a` does not assign are left out). Stable: tune keys its samples with it.
std::string AssignmentText(const SGraph& graph, const Assignment& a);

}  // namespace prism

#endif  // PRISM_BLOCK_SGRAPH_PRINTER_H_
