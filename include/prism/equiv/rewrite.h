// Rewrites (egg: rewrite.rs): a named rule `lhs => rhs if conditions`, where the conditions
// are predicates over the analysis data of the classes bound to lhs variables (condition.h).
// A `<=>` rule of a rule file becomes two Rewrites with the same name; the second has
// `reversed` set (it rewrites the rule's right side into its left side).
//
//   const Rewrite& r = rules.rewrites()[0];
//   std::vector<SearchMatch> m = r.Search(g);
//   size_t changed = r.Apply(g, m);      // unions that merged two classes
//   g.Rebuild();
//
// Applying a match adds lhs[σ] and rhs[σ] as exact terms and unions them with justification
// Rule(name, reversed), so explanations can show the exact instance (egg's
// union_instantiations). Conditions are evaluated at application time with the data of the
// TensorAnalysis (an e-graph without one satisfies no condition).
#ifndef PRISM_EQUIV_REWRITE_H_
#define PRISM_EQUIV_REWRITE_H_

#include <string>
#include <vector>

#include "prism/equiv/condition.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/pattern.h"

namespace prism::equiv {

struct Rewrite {
  std::string name;
  Pattern lhs;
  Pattern rhs;
  std::vector<Condition> conditions;
  bool reversed = false;       // the right-to-left half of a `<=>` rule
  bool bidirectional = false;  // written with `<=>`
  std::string location;        // "file:line:col" of the rule
  std::string doc;             // the comment above the rule (its soundness argument)

  const std::vector<std::string>& var_names() const { return lhs.var_names(); }
  std::vector<SearchMatch> Search(const EGraph& g) const { return lhs.Search(g); }
  bool ConditionsHold(const EGraph& g, const Subst& subst) const;
  // Applies every match whose conditions hold; returns how many unions changed the graph.
  size_t Apply(EGraph& g, const std::vector<SearchMatch>& matches) const;
  // "(rule NAME LHS => RHS if C...)" as written (the reverse half prints its own direction).
  std::string ToString(const ExprContext* ctx = nullptr) const;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_REWRITE_H_
