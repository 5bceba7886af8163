// Extraction (egg: extract.rs): choosing one term per e-class by cost.
//
//   Extractor ex(g);                                   // cost 1 per node
//   Extractor::Result r = ex.ExtractTree(g.Find(id));  // smallest tree: r.term, r.cost
//   Extractor::Result d = ex.ExtractDag(g.Find(id));   // greedy DAG cost (shared nodes once)
//   std::optional<Extractor::Result> e = ex.ExtractDagExact(g.Find(id));  // optimal, small graphs
//
// Tree cost of a node = its operator cost + the tree costs of its children (a fixpoint over the
// graph; each class keeps its cheapest node, ties to the earlier node). DAG cost of a choice =
// the sum of the operator costs of the distinct classes it reaches: the greedy extractor
// computes, per class, the cheapest set of classes (its own node plus the union of its
// children's sets) by fixpoint iteration — sharing-aware but not always optimal; the exact
// extractor enumerates choices by branch and bound and gives up (nullopt) when more than
// `max_classes` classes are reachable. Extracted terms share repeated classes (Term is a DAG).
// Requires a clean graph.
#ifndef PRISM_EQUIV_EXTRACT_H_
#define PRISM_EQUIV_EXTRACT_H_

#include <functional>
#include <optional>
#include <vector>

#include "prism/equiv/egraph.h"
#include "prism/equiv/term.h"

namespace prism::equiv {

// The cost of one node, not counting its children; must be positive.
using NodeCost = std::function<double(const ENode&)>;

class Extractor {
 public:
  struct Result {
    double cost = 0;
    Term term;
  };
  // A null `cost` counts 1 per node (AST size).
  explicit Extractor(const EGraph& g, NodeCost cost = nullptr);

  Result ExtractTree(EClassId id) const;
  Result ExtractDag(EClassId id) const;
  std::optional<Result> ExtractDagExact(EClassId id, size_t max_classes = 16) const;
  // The tree cost of a class (infinity if it has no finite term).
  double TreeCost(EClassId id) const;

 private:
  Term Build(EClassId root, const std::function<const ENode&(EClassId)>& choice) const;
  const EGraph& g_;
  NodeCost cost_;
  std::vector<double> tree_cost_;    // by root id
  std::vector<int> tree_choice_;     // by root id: index into the class's nodes
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_EXTRACT_H_
