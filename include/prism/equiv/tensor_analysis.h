// The e-class analysis of the tensor term language (language.h): for every class, its
// symbolic per-block shape, its constant value when it is a scalar (constant folding), the
// parallel axes its value may depend on, and — for axis leaves — the axis. Side conditions
// of rules (condition.h) are predicates over these data; proofs are replayed with the same
// data computed over single terms (ComputeTermData), so the checker needs no e-graph.
//
//   TensorEnv env;
//   env.ctx = &ctx;
//   env.SetLeafShape("X", {16, 4096});
//   env.SetLeafShape("W", {4096, 6144});
//   EGraph g(&ctx, std::make_unique<TensorAnalysis>(env));
//   EClassId y = g.AddTerm(*ParseTerm(ctx, "(matmul X (partition W 1 @x {g}))"));
//   static_cast<TensorAnalysis*>(g.analysis())->data(g.Find(y)).ShapeString(&ctx);
//   // "[16, 6144/g]"
//
// Sizes are exact monomials over expr atoms (SymSize), so a partition by {g} followed by a
// combine over the same axis gives back the original size without any divisibility
// reasoning: a partition *assumes* that its degree divides the size (the search's family
// constraints guarantee it); only concrete non-divisible sizes are rejected.
//
// Constant folding is exact: integers fold with overflow checks, reals only when the double
// operation is exact (so folding never equates two different reals). `dimsize` and `dimof`
// fold to integers from shapes. A class with a concrete constant gets its literal as a member
// (Modify), justified in explanations by a "const-fold" step.
//
// Merging classes whose known shapes or constants differ, or adding an ill-formed node, is
// recorded in diagnostics(), prefixed with the rule that was being applied ("rule x: ..."):
// with sound, well-guarded rules it never happens, so tests assert that it stays empty.
#ifndef PRISM_EQUIV_TENSOR_ANALYSIS_H_
#define PRISM_EQUIV_TENSOR_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/equiv/analysis.h"
#include "prism/equiv/symbol.h"
#include "prism/equiv/term.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

class EGraph;
struct ENode;

// An exact symbolic integer  (num / den) · Π atom^exponent  over expr atoms (variables, or
// any non-product expression), kept in a canonical form so that equality is structural.
class SymSize {
 public:
  SymSize() = default;  // the constant 1
  static SymSize Const(int64_t v);
  // Products and constants are decomposed; any other expression is one atom.
  static SymSize FromExpr(const ExprContext& ctx, Expr e);

  bool is_const() const { return atoms_.empty() && den_ == 1; }
  std::optional<int64_t> const_value() const;
  // nullopt on int64 overflow.
  std::optional<SymSize> Times(const SymSize& o) const;
  // nullopt on division by zero or overflow.
  std::optional<SymSize> DividedBy(const SymSize& o) const;
  // Defined only for like terms (same atoms) or constants; nullopt otherwise.
  std::optional<SymSize> Plus(const SymSize& o) const;
  // "4096", "4096/g", "g*F", "3/2"; atoms printed with `ctx` (or "#handle").
  std::string ToString(const ExprContext* ctx) const;
  // The expressions of the atoms (each once), e.g. for collecting variables.
  std::vector<Expr> atom_exprs() const;
  // The integer value when every variable is bound; nullopt if a variable is unbound, the
  // value is not an integer, or int64 overflows.
  std::optional<int64_t> Evaluate(const ExprContext& ctx, const Assignment& assignment) const;

  friend bool operator==(const SymSize& a, const SymSize& b) {
    return a.num_ == b.num_ && a.den_ == b.den_ && a.atoms_ == b.atoms_;
  }
  friend bool operator!=(const SymSize& a, const SymSize& b) { return !(a == b); }

 private:
  bool Normalize();  // false on overflow
  int64_t num_ = 1;
  int64_t den_ = 1;                               // > 0, gcd(num, den) = 1
  std::vector<std::pair<uint32_t, int>> atoms_;   // (expr handle, exponent != 0), by handle
};

// The value of a scalar class: an integer (possibly symbolic) or a real.
struct ScalarValue {
  bool is_int = true;
  SymSize integer;
  double real = 0.0;

  static ScalarValue Int(SymSize v) { return {true, std::move(v), 0.0}; }
  static ScalarValue Real(double v) { return {false, SymSize::Const(0), v}; }
  bool concrete() const { return !is_int || integer.is_const(); }
  // The number, when concrete (integers converted exactly when |v| < 2^53).
  std::optional<double> AsDouble() const;
  std::string ToString(const ExprContext* ctx) const;
  // Numeric equality (an integer equals a real of the same value).
  friend bool operator==(const ScalarValue& a, const ScalarValue& b);
};

using SymShape = std::vector<SymSize>;
std::string SymShapeToString(const SymShape& s, const ExprContext* ctx);

struct TensorData {
  std::optional<SymShape> shape;      // per-block shape; nullopt = unknown
  std::optional<ScalarValue> value;   // for scalars with a known value
  std::vector<Symbol> deps;           // axes the value may depend on (sorted by name)
  std::optional<Symbol> axis;         // for axis leaves
  std::string error;                  // non-empty: ill-formed (the first reason)

  bool DependsOn(Symbol axis_name) const;
  std::optional<int> rank() const;
  std::string ShapeString(const ExprContext* ctx) const;
  // "[16, 4096] = 3 deps{F}" style one-liner.
  std::string ToString(const ExprContext* ctx) const;
  friend bool operator==(const TensorData& a, const TensorData& b);
};

// What the analysis knows besides the nodes: shapes of input leaves and the extents of the
// parallel axes (declared by partition/replicate; one extent per axis name).
struct TensorEnv {
  const ExprContext* ctx = nullptr;
  absl::flat_hash_map<Symbol, SymShape> leaves;
  absl::flat_hash_map<Symbol, SymSize> extents;

  void SetLeafShape(absl::string_view name, const std::vector<int64_t>& shape);
  void SetLeafSymShape(absl::string_view name, SymShape shape);
};

// The datum of one node (operator, payload, children's data). Declares the node's axis
// extent in `env` (partition/replicate); a conflicting declaration makes the node ill-formed.
TensorData ComputeTensorData(TensorEnv& env, Symbol op, const Payload& payload,
                             absl::Span<const TensorData* const> children);
// The data of every node of `term`, bottom-up (result[i] for node i).
std::vector<TensorData> ComputeTermData(TensorEnv& env, const Term& term);
// Declares in `env` the extents of every partition/replicate in `term` (for checking proofs
// whose intermediate terms combine or reduce axes declared elsewhere).
void DeclareAxes(TensorEnv& env, const Term& term);

// The literal leaf for a concrete scalar value.
Payload LiteralFor(const ScalarValue& v);

class TensorAnalysis final : public TypedAnalysis<TensorData> {
 public:
  explicit TensorAnalysis(TensorEnv env) : env_(std::move(env)) {}
  absl::string_view name() const override { return "tensor"; }
  const TensorEnv& env() const { return env_; }
  // Problems recorded (deduplicated, at most 100), in the order found.
  const std::vector<std::string>& diagnostics() const { return diagnostics_; }

  void Modify(EGraph& g, EClassId id) override;
  void SetOrigin(absl::string_view origin) override { origin_ = std::string(origin); }
  std::string Describe(EClassId id) const override;

 protected:
  TensorData Make(const EGraph& g, const ENode& node) override;
  MergeResult Join(TensorData& into, const TensorData& from) override;

 private:
  // The term id of the literal member of `id`'s class, adding and justifying it if needed;
  // invalid if the class has no concrete value.
  EClassId EnsureLiteral(EGraph& g, EClassId id);
  void Diagnose(std::string message);

  TensorEnv env_;
  std::vector<std::string> diagnostics_;
  absl::flat_hash_set<std::string> diagnostic_set_;
  absl::flat_hash_set<uint32_t> folding_;  // classes whose literal is being added
  std::string origin_;
};

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_TENSOR_ANALYSIS_H_
