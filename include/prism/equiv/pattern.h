// Patterns (egg: pattern.rs + machine.rs): terms with ?variables, compiled into a small
// matching program that runs against the e-classes of a clean e-graph.
//
//   PRISM_ASSIGN_OR_RETURN(Pattern p, Pattern::Parse(ctx, "(mul (matmul ?a ?b) ?r)"));
//   for (const SearchMatch& m : p.Search(g)) { ... m.eclass, m.substs[i][p.slot("a")] ... }
//
// Syntax: the term syntax of term.h plus `?name` variables. A variable that occurs twice must
// match the same e-class (non-linear patterns).
//
// Compilation: the pattern tree is flattened depth-first into instructions over registers
// holding e-class ids — Bind(reg, op, payload, arity → fresh registers for the children) and
// Compare(reg, reg) for repeated variables. Search starts only at classes that contain the
// root operator (EGraph::classes_with_op), and Bind scans a class's nodes for the operator.
// Cost: for a pattern with operator nodes p1..pk, matching one class costs at most
// Π |nodes of the bound class with op pi| steps (backtracking over the choices of e-node at
// each Bind); in practice it is linear in the number of matches. Search over the graph is
// that summed over the candidate root classes.
//
// Determinism: candidate classes are visited in ascending id, nodes in class order, and the
// substitutions of one class are sorted and deduplicated.
#ifndef PRISM_EQUIV_PATTERN_H_
#define PRISM_EQUIV_PATTERN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/term.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

// Variable slot -> e-class id (EClassId::Invalid() when the slot is not bound).
using Subst = std::vector<EClassId>;

struct SearchMatch {
  EClassId eclass;           // the root class matched
  std::vector<Subst> substs;
};

class Pattern {
 public:
  struct Node {
    int var = -1;               // >= 0: a variable (its slot); then op/payload/children unused
    Symbol op;
    Payload payload;
    std::vector<int> children;  // indices of earlier nodes
  };

  Pattern() = default;
  // `nodes` in children-before-parents order (root last); variable slots index `var_names`.
  Pattern(std::vector<Node> nodes, std::vector<std::string> var_names);
  // Parses a standalone pattern; slots are numbered in order of first occurrence.
  static absl::StatusOr<Pattern> Parse(ExprContext& ctx, absl::string_view text);

  const std::vector<Node>& nodes() const { return nodes_; }
  int root() const { return static_cast<int>(nodes_.size()) - 1; }
  bool is_var() const { return !nodes_.empty() && nodes_.back().var >= 0; }
  // Names of all slots (a rule's lhs and rhs share one table).
  const std::vector<std::string>& var_names() const { return var_names_; }
  // Slots that occur in this pattern, in order of first occurrence (depth-first, left first).
  const std::vector<int>& vars() const { return vars_; }
  // The slot of variable `name` (without '?'), or -1.
  int slot(absl::string_view name) const;

  // All matches in `g` (PRISM_CHECK: g.clean()).
  std::vector<SearchMatch> Search(const EGraph& g) const;
  // Appends the matches rooted at class `id` (sorted, deduplicated).
  void SearchClass(const EGraph& g, EClassId id, std::vector<Subst>& out) const;
  // Adds the instance pattern[subst] (every used slot must be bound) and returns the id of
  // that exact term (EGraph::AddUncanonical).
  EClassId Instantiate(EGraph& g, const Subst& subst) const;

  std::string ToString(const ExprContext* ctx = nullptr) const;

 private:
  struct Instr {
    bool bind = true;  // Bind or Compare
    int reg = 0;
    int node = 0;      // Bind: the pattern node
    int out = 0;       // Bind: first register of the children
    int other = 0;     // Compare: the register holding the first occurrence
  };
  void Compile();
  void CompileNode(int node, int reg);
  void Run(const EGraph& g, size_t pc, std::vector<EClassId>& regs, std::vector<Subst>& out) const;
  std::string NodeString(int i, const ExprContext* ctx) const;

  std::vector<Node> nodes_;
  std::vector<std::string> var_names_;
  std::vector<int> vars_;
  std::vector<Instr> program_;
  std::vector<int> var_reg_;  // by slot: register of the first occurrence, or -1
  int num_regs_ = 0;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_PATTERN_H_
