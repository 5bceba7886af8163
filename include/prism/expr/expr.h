// Immutable, hash-consed symbolic integer expressions (in the style of Z3's ast_manager and
// egg's Id + memo): an ExprContext owns every node in an arena plus a uniquing table; an Expr
// is a 32-bit handle into one context. Structurally equal nodes built in the same context get
// the same handle, so equality is handle comparison. Node kinds are listed once in
// expr_kinds.def; factories are the only way to build nodes and they check operand sorts.
//
//   ExprContext ctx;
//   Expr K = ctx.Const(4096);
//   PRISM_ASSIGN_OR_RETURN(Expr F, ctx.Var("F", *Domain::DivisorsOf(4096)));
//   Expr tile = ctx.FloorDiv(K, F);
//   Expr smem = ctx.Mul(ctx.Mul(tile, ctx.Const(16)), ctx.Const(2));
//   ctx.ToString(smem);                       // "((4096 floordiv F) * 16) * 2"
//   ctx.ToString(Simplify(ctx, smem));        // "32 * (4096 floordiv F)"   (simplify.h)
//
// Printed syntax (ParseExpr in parse.h reads exactly this; parse(print(e)) == e):
//   literals     42, -7            variables   identifiers [A-Za-z_][A-Za-z0-9_]*
//   arithmetic   a + b + c, a - b, a * b * c, a floordiv b, a mod b, -a, min(a, b), max(a, b)
//   comparisons  a == b, a != b, a < b, a <= b, a > b, a >= b (the last two build Lt/Le swapped)
//   booleans     true, false, p and q, p or q, not p
// Precedence, loosest first: or < and < not < comparisons (non-associative) < + - <
// * floordiv mod (left-associative) < unary minus < atoms. Add/Mul/And/Or are n-ary nodes: the
// parser builds one flat node per unparenthesized chain, and the printer parenthesizes a nested
// node of the same precedence, so "(a + b) + c" and "a + b + c" are different nodes.
// "a - b" is Add(a, Mul(-1, b)) (with Mul(-1, c) folded to Mul(-c) when b is "c * ...", and
// "a - 3" is Add(a, Const(-3))); "-x" is Mul(-1, x) and "-3" is Const(-3).
//
// Keywords (not usable as variable names): floordiv mod min max and or not true false.
//
// Thread safety: an ExprContext is NOT thread-safe; every search worker owns its own context.
// Move an expression to another context with ExprContext::Import. Handles from one context
// must never be used with another (only the handle range is checked).
#ifndef PRISM_EXPR_EXPR_H_
#define PRISM_EXPR_EXPR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/base/id.h"
#include "prism/expr/domain.h"

namespace prism {

struct ExprTag {};
// A handle to a node of one ExprContext. Default-constructed handles are invalid.
using Expr = Id<ExprTag>;

inline constexpr int kNaryArity = -1;

enum class ExprKind : uint8_t {
#define PRISM_EXPR_KIND(Name, Arity, Sort, OperandSort, Syntax, Precedence, Spelling) k##Name,
#include "prism/expr/expr_kinds.def"
#undef PRISM_EXPR_KIND
};
inline constexpr int kNumExprKinds = 0
#define PRISM_EXPR_KIND(Name, Arity, Sort, OperandSort, Syntax, Precedence, Spelling) +1
#include "prism/expr/expr_kinds.def"
#undef PRISM_EXPR_KIND
    ;

enum class Sort : uint8_t { kNone, kInt, kBool };
enum class ExprSyntax : uint8_t { kLeaf, kInfix, kCall, kPrefix };

// Static facts about a kind, from expr_kinds.def.
struct ExprKindInfo {
  const char* name;      // "FloorDiv"
  int arity;             // kNaryArity for Add/Mul/And/Or
  Sort sort;             // sort of the node
  Sort operand_sort;     // kNone for leaves
  ExprSyntax syntax;
  int precedence;
  const char* spelling;  // "floordiv", "+", "min", ...
};
const ExprKindInfo& KindInfo(ExprKind kind);
// "FloorDiv", ... (the Name column).
absl::string_view KindName(ExprKind kind);

class ExprContext {
 public:
  ExprContext();
  ExprContext(const ExprContext&) = delete;
  ExprContext& operator=(const ExprContext&) = delete;
  ExprContext(ExprContext&& other) noexcept;
  ExprContext& operator=(ExprContext&& other) noexcept;
  ~ExprContext();

  // ---- factories (hash-consed; structurally equal calls return the same handle) ----------
  // Operands must be valid handles of this context with the operand sort the kind requires
  // (PRISM_CHECK: a sort mismatch is a bug in the caller; user text is checked by the parser).
  Expr Const(int64_t value);
  Expr Bool(bool value);
  // Declares (or returns) the integer variable `name`. InvalidArgument if `name` is not an
  // identifier or is a keyword, or if `name` already exists with a different domain.
  absl::StatusOr<Expr> Var(absl::string_view name, const Domain& domain);
  // The variable called `name`, if declared.
  std::optional<Expr> FindVar(absl::string_view name) const;
  // All declared variables, in declaration order.
  const std::vector<Expr>& vars() const { return var_exprs_; }

  // N-ary kinds: with 0 operands Add/Mul/And/Or return 0/1/true/false, with 1 operand the
  // operand itself; otherwise one flat node with the operands in the given order.
  Expr Add(absl::Span<const Expr> operands);
  Expr Add(Expr a, Expr b) { return Add({a, b}); }
  Expr Mul(absl::Span<const Expr> operands);
  Expr Mul(Expr a, Expr b) { return Mul({a, b}); }
  Expr Neg(Expr a) { return Mul(Const(-1), a); }
  Expr Sub(Expr a, Expr b) { return Add(a, Neg(b)); }
  Expr FloorDiv(Expr a, Expr b);
  Expr Mod(Expr a, Expr b);
  Expr Min(Expr a, Expr b);
  Expr Max(Expr a, Expr b);
  Expr Eq(Expr a, Expr b);
  Expr Ne(Expr a, Expr b);
  Expr Lt(Expr a, Expr b);
  Expr Le(Expr a, Expr b);
  Expr Gt(Expr a, Expr b) { return Lt(b, a); }
  Expr Ge(Expr a, Expr b) { return Le(b, a); }
  Expr And(absl::Span<const Expr> operands);
  Expr And(Expr a, Expr b) { return And({a, b}); }
  Expr Or(absl::Span<const Expr> operands);
  Expr Or(Expr a, Expr b) { return Or({a, b}); }
  Expr Not(Expr a);
  // Generic factory for every non-leaf kind (used by visitors that rebuild nodes); same
  // contract as the specific factory. PRISM_CHECKs that `kind` is not a leaf.
  Expr Make(ExprKind kind, absl::Span<const Expr> operands);

  // ---- inspection ---------------------------------------------------------------------
  ExprKind kind(Expr e) const { return node(e).kind; }
  Sort sort(Expr e) const { return KindInfo(kind(e)).sort; }
  bool is_const(Expr e) const { return kind(e) == ExprKind::kConst; }
  // The operands; the span stays valid for the lifetime of the context (operand arrays live in
  // an arena that never moves), even while new nodes are created.
  absl::Span<const Expr> operands(Expr e) const;
  Expr operand(Expr e, size_t i) const { return operands(e)[i]; }
  // Const only.
  int64_t const_value(Expr e) const;
  // BoolConst only.
  bool bool_value(Expr e) const;
  // Var only.
  const std::string& var_name(Expr e) const;
  const Domain& var_domain(Expr e) const;
  // A stable (run- and platform-independent) structural hash: depends on kinds, constants,
  // variable names and domains, and operand order; not on handle values.
  uint64_t structural_hash(Expr e) const { return node(e).hash; }
  // Number of distinct nodes in the context.
  size_t size() const { return nodes_.size(); }
  // True if `e` is a valid handle of a node of this context.
  bool contains(Expr e) const { return e.valid() && e.value() < nodes_.size(); }

  // A total order on expressions that depends only on structure (kind, constant, variable
  // name, operands lexicographically), never on handle values; returns <0, 0, >0.
  // The simplifier sorts by it, so canonical forms do not depend on construction order.
  int StructuralCompare(Expr a, Expr b) const;

  // ---- printing -------------------------------------------------------------------------
  // The printed syntax described in the file comment.
  std::string ToString(Expr e) const;

  // Rebuilds `e` (a handle of `from`) in this context; variables are declared here with their
  // domains (PRISM_CHECK that no conflicting declaration exists).
  Expr Import(const ExprContext& from, Expr e);
  // The same, through `memo` (nodes of `from` → nodes of this context): a node in it is not
  // rebuilt but replaced by its entry, and every node rebuilt is added. Importing several
  // expressions through one memo rebuilds their shared nodes once; an entry placed there
  // beforehand substitutes (e.g. a variable by its value; the caller keeps the sorts equal).
  Expr Import(const ExprContext& from, Expr e, absl::flat_hash_map<Expr, Expr>& memo);

 private:
  struct Node {
    ExprKind kind;
    uint32_t op_count;
    const Expr* ops;  // into the operand arena
    int64_t payload;  // Const: value; BoolConst: 0/1; Var: index into var_names_/var_domains_
    uint64_t hash;
  };
  struct KeyView {
    ExprKind kind;
    int64_t payload;
    absl::Span<const Expr> ops;
  };
  struct TableHash {
    using is_transparent = void;
    const ExprContext* ctx;
    size_t operator()(uint32_t id) const;
    size_t operator()(const KeyView& k) const;
  };
  struct TableEq {
    using is_transparent = void;
    const ExprContext* ctx;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t a, const KeyView& b) const;
    bool operator()(const KeyView& a, uint32_t b) const { return (*this)(b, a); }
  };

  const Node& node(Expr e) const;
  KeyView key(uint32_t id) const;
  Expr Intern(ExprKind kind, int64_t payload, absl::Span<const Expr> ops);
  const Expr* AllocateOperands(absl::Span<const Expr> ops);
  void CheckOperands(ExprKind kind, absl::Span<const Expr> ops) const;

  std::vector<Node> nodes_;
  // Operand arena: fixed-size chunks that never move.
  std::vector<std::unique_ptr<Expr[]>> chunks_;
  size_t chunk_used_ = 0;
  size_t chunk_capacity_ = 0;
  std::vector<std::string> var_names_;
  std::vector<Domain> var_domains_;
  std::vector<Expr> var_exprs_;
  absl::flat_hash_map<std::string, uint32_t> var_index_;
  // Uniquing table of node ids; hashed/compared through the context (heterogeneous lookup by
  // KeyView). Rebuilt on move, since the functors point at the context.
  std::unique_ptr<absl::flat_hash_set<uint32_t, TableHash, TableEq>> table_;
  // Simplify's results (simplify.h): a pure function of the expression, since expressions
  // are immutable and Simplify ignores domains; the block module's validation and
  // instantiation ask for the same ones many times.
  friend Expr Simplify(ExprContext& ctx, Expr e);
  absl::flat_hash_map<Expr, Expr> simplified_;
};

// ---- traversal (derived from expr_kinds.def) -------------------------------------------

// Calls visitor.Visit<Name>(e) for e's kind (e.g. VisitFloorDiv(e)) and returns its result.
//   struct Depth {
//     const ExprContext& ctx;
//     int VisitConst(Expr) { return 0; }  ...  int VisitAdd(Expr e) { ... }
//   };
template <typename Visitor>
decltype(auto) Dispatch(const ExprContext& ctx, Expr e, Visitor&& visitor) {
  switch (ctx.kind(e)) {
#define PRISM_EXPR_KIND(Name, Arity, Sort, OperandSort, Syntax, Precedence, Spelling) \
  case ExprKind::k##Name:                                                            \
    return visitor.Visit##Name(e);
#include "prism/expr/expr_kinds.def"
#undef PRISM_EXPR_KIND
  }
  return visitor.VisitConst(e);  // unreachable: the switch is exhaustive
}

// The distinct nodes reachable from `roots`, each once, operands before users (post-order,
// deterministic). Bottom-up passes (SMT encoding, evaluation, rebuilding) iterate over this.
std::vector<Expr> PostOrder(const ExprContext& ctx, absl::Span<const Expr> roots);

// The variables occurring in `e`, sorted by name.
std::vector<Expr> FreeVars(const ExprContext& ctx, Expr e);

// Replaces every occurrence of a key of `replacements` (any node, typically variables) by its
// value, bottom-up, without simplifying. Keys and values must have equal sorts (PRISM_CHECK).
Expr Substitute(ExprContext& ctx, Expr e, const absl::flat_hash_map<Expr, Expr>& replacements);

}  // namespace prism

#endif  // PRISM_EXPR_EXPR_H_
