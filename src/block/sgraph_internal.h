// Private helpers shared by the block module's sources.
#ifndef PRISM_SRC_BLOCK_SGRAPH_INTERNAL_H_
#define PRISM_SRC_BLOCK_SGRAPH_INTERNAL_H_

#include <string>

#include "prism/block/sgraph.h"

namespace prism::internal {

// Calls f(Expr&) on every expression slot of the graph (tensor shapes, grid, threads, forloop,
// stages, maps, fmaps, inv_rms counts), in a fixed order. Invalid (unset) slots are skipped.
template <typename F>
void ForEachExprSlot(SGraph& graph, F&& f) {
  auto visit = [&f](Expr& e) {
    if (e.valid()) f(e);
  };
  for (SGraphTensor& t : graph.mutable_tensors()) {
    for (Expr& d : t.shape) visit(d);
  }
  for (Kernel& k : graph.mutable_kernels()) {
    if (!k.is_block()) continue;
    BlockGraph& b = k.block();
    for (Expr& g : b.grid) visit(g);
    visit(b.threads);
    visit(b.forloop);
    visit(b.stages);
    for (BlockOp& op : b.ops) {
      for (Expr& m : op.map) visit(m);
      visit(op.fmap);
      visit(op.count);
    }
  }
}

// The same, read-only: f(Expr).
template <typename F>
void ForEachExpr(const SGraph& graph, F&& f) {
  auto visit = [&f](Expr e) {
    if (e.valid()) f(e);
  };
  for (const SGraphTensor& t : graph.tensors()) {
    for (Expr d : t.shape) visit(d);
  }
  for (const Kernel& k : graph.kernels()) {
    if (!k.is_block()) continue;
    const BlockGraph& b = k.block();
    for (Expr g : b.grid) visit(g);
    visit(b.threads);
    visit(b.forloop);
    visit(b.stages);
    for (const BlockOp& op : b.ops) {
      for (Expr m : op.map) visit(m);
      visit(op.fmap);
      visit(op.count);
    }
  }
}

}  // namespace prism::internal

#endif  // PRISM_SRC_BLOCK_SGRAPH_INTERNAL_H_
