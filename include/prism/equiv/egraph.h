// The e-graph (egg: egraph.rs): hash-consed e-nodes over 32-bit e-class ids, a union-find,
// deferred Rebuild that restores congruence closure (egg's worklist of parents to
// re-canonicalize, then upward analysis propagation), an optional analysis, and explanations.
//
//   ExprContext ctx;
//   EGraph g(&ctx);
//   PRISM_ASSIGN_OR_RETURN(Term fa, ParseTerm(ctx, "(f a)"));
//   PRISM_ASSIGN_OR_RETURN(Term fb, ParseTerm(ctx, "(f b)"));
//   EClassId x = g.AddTerm(fa), y = g.AddTerm(fb);
//   g.Union(g.AddTerm(*ParseTerm(ctx, "a")), g.AddTerm(*ParseTerm(ctx, "b")),
//           Justification::Given("a = b"));
//   g.Rebuild();
//   g.Find(x) == g.Find(y);          // true: congruence
//   g.Explain(x, y)->steps.size();   // 1: "a = b" at position [0]
//
// Ids. Every id is created for one exact e-node (the "term id": its node's children are the
// ids that were passed in, not necessarily canonical), so every id denotes one exact term
// (TermOf). With explanations on (the default), adding a node that is congruent to an
// existing one but spelled with different child ids creates a new id, immediately merged
// with the existing class by congruence (egg's uncanonical ids); with explanations off, Add
// returns the existing class. Ids are handed out densely in call order, and nothing depends
// on hash-map iteration order, so the same sequence of calls always produces the same ids,
// classes and node orders (Dump() is byte-identical).
//
// Invariants. After Rebuild() (clean() == true): every root class's `nodes` are canonical
// (children are roots) and distinct; congruent nodes are in the same class; analysis data
// are up to date. Union() and Add() may leave the graph dirty; pattern search requires a
// clean graph.
//
// Not thread-safe.
#ifndef PRISM_EQUIV_EGRAPH_H_
#define PRISM_EQUIV_EGRAPH_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "prism/equiv/analysis.h"
#include "prism/equiv/explain.h"
#include "prism/equiv/symbol.h"
#include "prism/equiv/term.h"
#include "prism/equiv/union_find.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

// An operator applied to e-classes, with an optional payload (a literal, a symbolic size, an
// axis name).
struct ENode {
  Symbol op;
  Payload payload;
  absl::InlinedVector<EClassId, 4> children;

  friend bool operator==(const ENode& a, const ENode& b) {
    return a.op == b.op && a.payload == b.payload && a.children == b.children;
  }
  template <typename H>
  friend H AbslHashValue(H h, const ENode& n) {
    h = H::combine(std::move(h), n.op, n.payload, n.children.size());
    for (EClassId c : n.children) h = H::combine(std::move(h), c);
    return h;
  }
};

struct EClass {
  // Canonical and deduplicated after Rebuild; in insertion order (merged classes appended).
  std::vector<ENode> nodes;
  // node_ids[i]: the term id whose node is nodes[i] (up to canonicalization).
  std::vector<EClassId> node_ids;
  // Term ids of nodes that have a child in this class (may repeat; deduplicated by Rebuild).
  std::vector<EClassId> parents;
};

struct EGraphOptions {
  // Record a proof forest so that Explain works (costs one extra id per uncanonical add).
  bool explanations = true;
};

class EGraph {
 public:
  // `ctx` owns the expressions of symbolic payloads (used for printing); it must outlive the
  // graph. `analysis` may be null.
  explicit EGraph(ExprContext* ctx, std::unique_ptr<Analysis> analysis = nullptr,
                  EGraphOptions options = {});
  EGraph(const EGraph&) = delete;
  EGraph& operator=(const EGraph&) = delete;

  // ---- building ------------------------------------------------------------------------------
  // Adds `node` (children: any ids of this graph) and returns the canonical id of its class.
  EClassId Add(const ENode& node) { return Find(AddUncanonical(node)); }
  // Adds `node` and returns the id of this exact node (see "Ids"); without explanations, the
  // canonical id.
  EClassId AddUncanonical(const ENode& node);
  // Adds every node of `term`; returns the id of its root (exact with explanations on).
  EClassId AddTerm(const Term& term);
  // Merges the classes of `a` and `b` for reason `why`; false if they were already equal.
  // `a` is recorded as the before side of `why` (the instance of a rule's left side).
  bool Union(EClassId a, EClassId b, const Justification& why);
  // Restores the invariants (see the file comment). Returns the number of congruence unions.
  size_t Rebuild();
  bool clean() const { return pending_.empty() && analysis_pending_.empty() && clean_; }

  // ---- queries -------------------------------------------------------------------------------
  EClassId Find(EClassId id) const { return uf_.Find(id); }
  bool Equivalent(EClassId a, EClassId b) const { return Find(a) == Find(b); }
  // The class of a root id (PRISM_CHECKs that it is a root).
  const EClass& eclass(EClassId id) const;
  // Root ids in ascending order (requires clean()).
  const std::vector<EClassId>& class_ids() const;
  // Root ids of classes that contain a node with operator `op`, ascending (requires clean()).
  absl::Span<const EClassId> classes_with_op(Symbol op) const;
  // The class of `node` if it is present (children canonicalized first), else nullopt.
  std::optional<EClassId> Lookup(const ENode& node) const;
  // The class representing `term` if every node of it is present (no insertion), else
  // nullopt. This is the "is this term a subterm of the target?" query of DESIGN.md §4.
  std::optional<EClassId> LookupTerm(const Term& term) const;
  // `node` with its children replaced by their roots.
  ENode Canonicalize(const ENode& node) const;

  size_t num_classes() const { return num_classes_; }
  // Nodes in all classes (exact after Rebuild, an upper bound before).
  size_t num_nodes() const { return num_nodes_; }
  // Ids handed out (classes plus uncanonical term ids).
  size_t num_ids() const { return id_nodes_.size(); }

  // The exact node id `id` was created for.
  const ENode& id_node(EClassId id) const;
  // The exact term of id `id` (children expanded recursively through id_node).
  Term TermOf(EClassId id) const;

  // Explains why the terms of ids `a` and `b` are equal (explanations must be on).
  // NotFound "the terms are not equal: ..." when they are in different classes;
  // FailedPrecondition when explanations are off.
  absl::StatusOr<Explanation> Explain(EClassId a, EClassId b) const;

  Analysis* analysis() { return analysis_.get(); }
  const Analysis* analysis() const { return analysis_.get(); }
  ExprContext* expr_context() const { return ctx_; }
  const EGraphOptions& options() const { return options_; }

  // Deterministic text rendering: one line per root class in id order,
  //   "e3 [analysis datum]: (matmul e1 e2) | (mul e4 e5)".
  std::string Dump() const;

 private:
  struct RawStep {
    Justification justification;
    Direction direction;
    std::vector<int> position;
    EClassId before;
    EClassId after;
  };
  EClassId NewId(const ENode& node);
  void ExplainIds(EClassId a, EClassId b, std::vector<int>& position, std::vector<RawStep>& out,
                  int depth) const;
  void RebuildClasses();
  size_t ClassWeight(EClassId root) const;

  ExprContext* ctx_;
  std::unique_ptr<Analysis> analysis_;
  EGraphOptions options_;
  mutable UnionFind uf_;
  std::vector<ENode> id_nodes_;                    // by id: the exact node
  std::vector<EClass> classes_;                    // by id: meaningful for roots
  absl::flat_hash_map<ENode, EClassId> memo_;      // canonical node -> an id of its class
  absl::flat_hash_map<ENode, EClassId> exact_;     // exact node -> its term id (explanations)
  std::vector<EClassId> pending_;                  // term ids whose nodes need re-canonicalizing
  std::vector<EClassId> analysis_pending_;         // term ids whose data must be re-derived
  ProofForest forest_;
  size_t num_classes_ = 0;
  size_t num_nodes_ = 0;
  bool clean_ = true;
  std::vector<EClassId> roots_;                              // valid when clean
  absl::flat_hash_map<Symbol, std::vector<EClassId>> by_op_;  // valid when clean
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_EGRAPH_H_
