// Terms: the trees that e-graphs store, rules rewrite and proofs show. A Term is a DAG of
// TermNodes in a vector (children before parents, root last — egg's RecExpr); two terms are
// equal when they are equal as trees (sharing is not observable).
//
// Text syntax (s-expressions; ParseTerm reads exactly what ToString prints):
//   (op child ...)    an operator applied to children, e.g. (matmul X W)
//   name              a 0-ary operator (a leaf), e.g. an input tensor X
//   42  -1            an integer literal (payload kInt), e.g. a dim or a scalar
//   1e-06  0.5        a real literal (payload kReal): has '.', 'e' or 'E'; printed so that
//                     it reads back bit-exactly; NaN and infinities are not terms
//   {F}  {g * F}      a symbolic integer (payload kSym): an expr/ expression, in the printed
//                     syntax of expr/expr.h; unknown variables are declared with domain
//                     range(1, 2147483647)
//   @x                a parallel axis named x (payload kAxis)
// Operator names are [A-Za-z_][A-Za-z0-9_.-]*; `;` starts a comment to the end of the line.
//
//   ExprContext ctx;
//   PRISM_ASSIGN_OR_RETURN(Term t, ParseTerm(ctx, "(partition W 1 @x {g})"));
//   t.ToString(&ctx);        // "(partition W 1 @x {g})"
//   t.node(t.root()).op;     // Symbol("partition")
#ifndef PRISM_EQUIV_TERM_H_
#define PRISM_EQUIV_TERM_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/equiv/symbol.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

// The optional datum of a node besides its operator and children. Reals compare and hash by
// bit pattern (so hash-consing never merges 0.0 with -0.0).
class Payload {
 public:
  enum class Kind : uint8_t { kNone, kInt, kReal, kSym, kAxis };

  Payload() = default;  // kNone
  static Payload Int(int64_t v);
  static Payload Real(double v);
  static Payload Sym(Expr e);
  static Payload Axis(Symbol name);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  // Accessors PRISM_CHECK the kind.
  int64_t int_value() const;
  double real_value() const;
  Expr sym() const;
  Symbol axis() const;

  // The text form (see the file comment); `ctx` prints kSym payloads (without it "{#<handle>}").
  std::string ToString(const ExprContext* ctx) const;

  friend bool operator==(const Payload& a, const Payload& b) {
    return a.kind_ == b.kind_ && a.bits_ == b.bits_;
  }
  friend bool operator!=(const Payload& a, const Payload& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Payload& p) {
    return H::combine(std::move(h), p.kind_, p.bits_);
  }

 private:
  Kind kind_ = Kind::kNone;
  uint64_t bits_ = 0;
};

// The operator symbol of payload-carrying leaves: int, real, sym, axis.
Symbol LeafOpFor(Payload::Kind kind);

struct TermNode {
  Symbol op;
  Payload payload;
  std::vector<uint32_t> children;  // indices of earlier nodes of the same Term
};

class Term {
 public:
  Term() = default;

  // Appends a node; its children must be indices of nodes already added (PRISM_CHECK).
  // Returns its index. The last node added is the root.
  uint32_t Add(TermNode node);
  // Convenience: Add({op, payload, children}).
  uint32_t Add(Symbol op, std::vector<uint32_t> children = {}, Payload payload = {});

  bool empty() const { return nodes_.empty(); }
  size_t size() const { return nodes_.size(); }
  const TermNode& node(uint32_t i) const;
  uint32_t root() const;  // PRISM_CHECKs non-empty

  // The s-expression of the root / of node `index`.
  std::string ToString(const ExprContext* ctx = nullptr) const;
  std::string ToString(uint32_t index, const ExprContext* ctx) const;

  // Number of nodes of the tree (shared subterms counted once per occurrence).
  size_t TreeSize() const;

  // The node at `path` (child indices from the root), or nullopt if the path leaves the tree.
  std::optional<uint32_t> At(absl::Span<const int> path) const;
  // A standalone copy of the subtree rooted at node `index`.
  Term Subterm(uint32_t index) const;
  // This term with the subtree at `path` replaced by `replacement`; PRISM_CHECKs the path.
  Term Replace(absl::Span<const int> path, const Term& replacement) const;
  // Appends a copy of `other`'s root tree; returns the index of its root here.
  uint32_t Append(const Term& other, uint32_t other_index);

  // Tree equality.
  friend bool operator==(const Term& a, const Term& b);
  friend bool operator!=(const Term& a, const Term& b) { return !(a == b); }

 private:
  std::vector<TermNode> nodes_;
};

// Tree equality of a's node ia and b's node ib.
bool SubtermsEqual(const Term& a, uint32_t ia, const Term& b, uint32_t ib);

// Parses one term (see the file comment). InvalidArgument "LINE:COL: found X, expected Y".
absl::StatusOr<Term> ParseTerm(ExprContext& ctx, absl::string_view text);

// A path as printed in proofs: "[]" for the root, "[0, 1]" for child 1 of child 0.
std::string PathToString(absl::Span<const int> path);

// Formats a real so that it reads back bit-exactly and always contains '.', 'e' or 'E'
// (the shortest such decimal form).
std::string FormatReal(double v);

// Inserts into `out` the names of `t`'s input leaves: 0-ary nodes without payload whose name
// is not an operator of the term language (language.h).
void CollectInputs(const Term& t, std::set<std::string>& out);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_TERM_H_
