// Explanations (egg: explain.rs): every union the e-graph performs is recorded with its reason
// — a rule and the substitution it fired with, a congruence, an analysis fold, or a union the
// caller asserted — in a proof forest over the ids of exact terms. Explaining why two terms
// are equal walks the forest path between them and expands congruences into their children's
// explanations, giving a *flat* proof: a sequence of terms, each obtained from the previous
// one by rewriting one position with one rule, in one direction.
//
//   EGraph g(&ctx, std::make_unique<TensorAnalysis>(env));
//   EClassId a = g.AddTerm(start), b = g.AddTerm(goal);
//   Runner(&g).Run(rules.rewrites());
//   absl::StatusOr<Explanation> e = g.Explain(a, b);
//   // e->steps[i]: rule name, direction, position, whole term before and after
//   std::cout << e->ToString(&ctx);
//
// Every step of a proof is checkable in isolation: for a rule step in the forward direction,
// the subterm of `before` at `position` is an instance of the rule's left side under some
// substitution σ satisfying its side conditions, `after` is `before` with that subterm
// replaced by right-side[σ]; a backward step is the same with before/after swapped. An
// analysis step (`const-fold`) replaces a subterm by the literal its constant evaluates to.
#ifndef PRISM_EQUIV_EXPLAIN_H_
#define PRISM_EQUIV_EXPLAIN_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "prism/equiv/symbol.h"
#include "prism/equiv/term.h"
#include "prism/equiv/union_find.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

// Why two e-classes were merged.
struct Justification {
  enum class Kind : uint8_t {
    kGiven,       // asserted by the caller of EGraph::Union (name says why)
    kCongruence,  // same operator and payload, children pairwise equal
    kRule,        // a rewrite rule fired (name = rule name)
    kAnalysis,    // an analysis merged a class with a literal (name = e.g. "const-fold")
  };
  Kind kind = Kind::kGiven;
  Symbol name;
  // kRule: the rule was applied from its right side to its left (a `<=>` rule's second half).
  bool reversed = false;

  static Justification Given(absl::string_view why) { return {Kind::kGiven, Symbol(why), false}; }
  static Justification Congruence() { return {Kind::kCongruence, Symbol(), false}; }
  static Justification Rule(Symbol rule, bool reversed) { return {Kind::kRule, rule, reversed}; }
  static Justification Analysis(absl::string_view what) {
    return {Kind::kAnalysis, Symbol(what), false};
  }
};

enum class Direction : uint8_t { kForward, kBackward };
absl::string_view DirectionName(Direction d);  // "forward", "backward"

struct ProofStep {
  Justification::Kind kind = Justification::Kind::kRule;  // never kCongruence
  Symbol rule;                                             // rule / analysis / given name
  // kRule: kForward rewrites an instance of the rule's left side into its right side.
  // kAnalysis: kForward replaces a foldable subterm by its literal.
  Direction direction = Direction::kForward;
  std::vector<int> position;  // path from the root of `before` to the rewritten subterm
  Term before;                // whole term before the step
  Term after;                 // whole term after the step
};

struct Explanation {
  Term start;
  Term goal;
  std::vector<ProofStep> steps;  // steps[0].before == start, steps.back().after == goal

  // egg-style flat rendering: the start term, then one line per step
  //   "  3. matmul-rowscale backward at [0]: <term after>".
  std::string ToString(const ExprContext* ctx = nullptr) const;
  // Distinct rule names used, in first-use order.
  std::vector<std::string> RulesUsed() const;
};

// The proof forest: a spanning forest over term ids whose edges are the recorded unions
// (Nieuwenhuis & Oliveras' proof-producing congruence closure, as in egg). Adding an edge
// reroots one tree so the forest stays a forest; paths between ids in the same tree are
// unique, and a congruence edge's children were already connected by older edges when it was
// added, so recursive explanations terminate.
class ProofForest {
 public:
  // One forest edge as traversed from `from` to `to`.
  struct Edge {
    EClassId from;
    EClassId to;
    Justification justification;
    // True when the edge is traversed in the direction it was recorded (union(from, to)).
    bool along;
  };

  // Registers the next id (ids must be registered densely, in order).
  void AddId();
  size_t size() const { return links_.size(); }
  // Records that `a` and `b` (in different trees) are equal because of `j`; `a` plays the
  // left (before) side of `j`.
  void Union(EClassId a, EClassId b, const Justification& j);
  // The edges on the path from `a` to `b`, in order; PRISM_CHECKs that they are connected.
  std::vector<Edge> Path(EClassId a, EClassId b) const;
  bool Connected(EClassId a, EClassId b) const;

 private:
  struct Link {
    EClassId parent;  // invalid at a root
    Justification justification;
    bool forward = true;  // true: this id is the `a` (before) side of the recorded union
  };
  EClassId Root(EClassId id) const;
  void Reroot(EClassId id);
  std::vector<Link> links_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_EXPLAIN_H_
