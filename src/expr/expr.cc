#include "prism/expr/expr.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/hash.h"

namespace prism {
namespace {

constexpr Sort kSortNone = Sort::kNone;
constexpr Sort kSortInt = Sort::kInt;
constexpr Sort kSortBool = Sort::kBool;
constexpr ExprSyntax kSyntaxLeaf = ExprSyntax::kLeaf;
constexpr ExprSyntax kSyntaxInfix = ExprSyntax::kInfix;
constexpr ExprSyntax kSyntaxCall = ExprSyntax::kCall;
constexpr ExprSyntax kSyntaxPrefix = ExprSyntax::kPrefix;

constexpr std::array<ExprKindInfo, kNumExprKinds> kKindInfo = {{
#define PRISM_EXPR_KIND(Name, Arity, Sort, OperandSort, Syntax, Precedence, Spelling) \
  {#Name, Arity, kSort##Sort, kSort##OperandSort, kSyntax##Syntax, Precedence, Spelling},
#include "prism/expr/expr_kinds.def"
#undef PRISM_EXPR_KIND
}};

constexpr const char* kKeywords[] = {"floordiv", "mod", "min", "max", "and",
                                     "or",       "not", "true", "false"};

bool IsIdentifier(absl::string_view name) {
  if (name.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

const ExprKindInfo& KindInfo(ExprKind kind) { return kKindInfo[static_cast<size_t>(kind)]; }
absl::string_view KindName(ExprKind kind) { return KindInfo(kind).name; }

// ---- uniquing table ----------------------------------------------------------------------

size_t ExprContext::TableHash::operator()(uint32_t id) const { return (*this)(ctx->key(id)); }

size_t ExprContext::TableHash::operator()(const KeyView& k) const {
  uint64_t h = HashCombine(static_cast<uint64_t>(k.kind), static_cast<uint64_t>(k.payload));
  for (Expr e : k.ops) h = HashCombine(h, e.value());
  return static_cast<size_t>(h);
}

bool ExprContext::TableEq::operator()(uint32_t a, const KeyView& b) const {
  KeyView ka = ctx->key(a);
  return ka.kind == b.kind && ka.payload == b.payload &&
         std::equal(ka.ops.begin(), ka.ops.end(), b.ops.begin(), b.ops.end());
}

ExprContext::ExprContext()
    : table_(std::make_unique<absl::flat_hash_set<uint32_t, TableHash, TableEq>>(
          0, TableHash{this}, TableEq{this})) {}

ExprContext::~ExprContext() = default;

ExprContext::ExprContext(ExprContext&& other) noexcept { *this = std::move(other); }

ExprContext& ExprContext::operator=(ExprContext&& other) noexcept {
  if (this == &other) return *this;
  nodes_ = std::move(other.nodes_);
  chunks_ = std::move(other.chunks_);
  chunk_used_ = other.chunk_used_;
  chunk_capacity_ = other.chunk_capacity_;
  other.chunk_used_ = other.chunk_capacity_ = 0;
  var_names_ = std::move(other.var_names_);
  var_domains_ = std::move(other.var_domains_);
  var_exprs_ = std::move(other.var_exprs_);
  var_index_ = std::move(other.var_index_);
  simplified_ = std::move(other.simplified_);
  other.simplified_.clear();
  // The table's functors point at their context: rebuild for this one.
  table_ = std::make_unique<absl::flat_hash_set<uint32_t, TableHash, TableEq>>(
      nodes_.size(), TableHash{this}, TableEq{this});
  for (uint32_t i = 0; i < nodes_.size(); ++i) table_->insert(i);
  other.nodes_.clear();
  other.chunks_.clear();
  other.var_names_.clear();
  other.var_domains_.clear();
  other.var_exprs_.clear();
  other.var_index_.clear();
  other.table_ = std::make_unique<absl::flat_hash_set<uint32_t, TableHash, TableEq>>(
      0, TableHash{&other}, TableEq{&other});
  return *this;
}

const ExprContext::Node& ExprContext::node(Expr e) const {
  PRISM_CHECK(contains(e), "expression handle ", e.value(), " is not in this context (",
              nodes_.size(), " nodes)");
  return nodes_[e.value()];
}

ExprContext::KeyView ExprContext::key(uint32_t id) const {
  const Node& n = nodes_[id];
  return KeyView{n.kind, n.payload, absl::Span<const Expr>(n.ops, n.op_count)};
}

absl::Span<const Expr> ExprContext::operands(Expr e) const {
  const Node& n = node(e);
  return absl::Span<const Expr>(n.ops, n.op_count);
}

int64_t ExprContext::const_value(Expr e) const {
  const Node& n = node(e);
  PRISM_CHECK(n.kind == ExprKind::kConst, "const_value of a ", KindName(n.kind), " node");
  return n.payload;
}

bool ExprContext::bool_value(Expr e) const {
  const Node& n = node(e);
  PRISM_CHECK(n.kind == ExprKind::kBoolConst, "bool_value of a ", KindName(n.kind), " node");
  return n.payload != 0;
}

const std::string& ExprContext::var_name(Expr e) const {
  const Node& n = node(e);
  PRISM_CHECK(n.kind == ExprKind::kVar, "var_name of a ", KindName(n.kind), " node");
  return var_names_[n.payload];
}

const Domain& ExprContext::var_domain(Expr e) const {
  const Node& n = node(e);
  PRISM_CHECK(n.kind == ExprKind::kVar, "var_domain of a ", KindName(n.kind), " node");
  return var_domains_[n.payload];
}

Expr ExprContext::Intern(ExprKind kind, int64_t payload, absl::Span<const Expr> ops) {
  KeyView k{kind, payload, ops};
  auto it = table_->find(k);
  if (it != table_->end()) return Expr(*it);
  PRISM_CHECK(nodes_.size() < std::numeric_limits<uint32_t>::max() - 1,
              "expression context is full");
  StableHasher h;
  h.Add(KindName(kind));
  switch (kind) {
    case ExprKind::kConst:
    case ExprKind::kBoolConst: h.Add(payload); break;
    case ExprKind::kVar:
      h.Add(var_names_[payload]).Add(var_domains_[payload].StableHash());
      break;
    default:
      h.Add(static_cast<uint64_t>(ops.size()));
      for (Expr op : ops) h.Add(nodes_[op.value()].hash);
  }
  Node n{kind, static_cast<uint32_t>(ops.size()), AllocateOperands(ops), payload, h.Finish()};
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(n);
  table_->insert(id);
  return Expr(id);
}

const Expr* ExprContext::AllocateOperands(absl::Span<const Expr> ops) {
  if (ops.empty()) return nullptr;
  if (chunk_capacity_ - chunk_used_ < ops.size()) {
    constexpr size_t kChunk = 4096;
    chunk_capacity_ = std::max(kChunk, ops.size());
    chunks_.push_back(std::make_unique<Expr[]>(chunk_capacity_));
    chunk_used_ = 0;
  }
  Expr* out = chunks_.back().get() + chunk_used_;
  std::copy(ops.begin(), ops.end(), out);
  chunk_used_ += ops.size();
  return out;
}

void ExprContext::CheckOperands(ExprKind kind, absl::Span<const Expr> ops) const {
  const ExprKindInfo& info = KindInfo(kind);
  PRISM_CHECK(info.syntax != ExprSyntax::kLeaf, "Make of leaf kind ", info.name);
  if (info.arity == kNaryArity) {
    PRISM_CHECK(ops.size() >= 2, info.name, " needs at least 2 operands, got ", ops.size());
  } else {
    PRISM_CHECK(static_cast<int>(ops.size()) == info.arity, info.name, " needs ", info.arity,
                " operands, got ", ops.size());
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    PRISM_CHECK(contains(ops[i]), info.name, " operand ", i, " is not a handle of this context");
    PRISM_CHECK(sort(ops[i]) == info.operand_sort, info.name, " operand ", i, " has the wrong sort: ",
                ToString(ops[i]));
  }
}

Expr ExprContext::Const(int64_t value) { return Intern(ExprKind::kConst, value, {}); }
Expr ExprContext::Bool(bool value) { return Intern(ExprKind::kBoolConst, value ? 1 : 0, {}); }

absl::StatusOr<Expr> ExprContext::Var(absl::string_view name, const Domain& domain) {
  if (!IsIdentifier(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable name '", name, "' is not an identifier (letters, digits, '_', not starting "
        "with a digit)"));
  }
  for (const char* kw : kKeywords) {
    if (name == kw) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable name '", name, "' is a keyword of the expression syntax"));
    }
  }
  auto it = var_index_.find(name);
  if (it != var_index_.end()) {
    if (!(var_domains_[it->second] == domain)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", name, "' is already declared with domain ",
          var_domains_[it->second].ToString(), ", not ", domain.ToString()));
    }
    return var_exprs_[it->second];
  }
  const uint32_t index = static_cast<uint32_t>(var_names_.size());
  var_names_.emplace_back(name);
  var_domains_.push_back(domain);
  var_index_.emplace(std::string(name), index);
  Expr e = Intern(ExprKind::kVar, index, {});
  var_exprs_.push_back(e);
  return e;
}

std::optional<Expr> ExprContext::FindVar(absl::string_view name) const {
  auto it = var_index_.find(name);
  if (it == var_index_.end()) return std::nullopt;
  return var_exprs_[it->second];
}

Expr ExprContext::Make(ExprKind kind, absl::Span<const Expr> operands) {
  const ExprKindInfo& info = KindInfo(kind);
  if (info.arity == kNaryArity && operands.size() < 2) {
    if (operands.size() == 1) {
      PRISM_CHECK(sort(operands[0]) == info.operand_sort, info.name, " operand has the wrong sort");
      return operands[0];
    }
    switch (kind) {
      case ExprKind::kAdd: return Const(0);
      case ExprKind::kMul: return Const(1);
      case ExprKind::kAnd: return Bool(true);
      case ExprKind::kOr: return Bool(false);
      default: PRISM_UNREACHABLE("n-ary kind ", info.name);
    }
  }
  CheckOperands(kind, operands);
  return Intern(kind, 0, operands);
}

Expr ExprContext::Add(absl::Span<const Expr> ops) { return Make(ExprKind::kAdd, ops); }
Expr ExprContext::Mul(absl::Span<const Expr> ops) { return Make(ExprKind::kMul, ops); }
Expr ExprContext::FloorDiv(Expr a, Expr b) { return Make(ExprKind::kFloorDiv, {a, b}); }
Expr ExprContext::Mod(Expr a, Expr b) { return Make(ExprKind::kMod, {a, b}); }
Expr ExprContext::Min(Expr a, Expr b) { return Make(ExprKind::kMin, {a, b}); }
Expr ExprContext::Max(Expr a, Expr b) { return Make(ExprKind::kMax, {a, b}); }
Expr ExprContext::Eq(Expr a, Expr b) { return Make(ExprKind::kEq, {a, b}); }
Expr ExprContext::Ne(Expr a, Expr b) { return Make(ExprKind::kNe, {a, b}); }
Expr ExprContext::Lt(Expr a, Expr b) { return Make(ExprKind::kLt, {a, b}); }
Expr ExprContext::Le(Expr a, Expr b) { return Make(ExprKind::kLe, {a, b}); }
Expr ExprContext::And(absl::Span<const Expr> ops) { return Make(ExprKind::kAnd, ops); }
Expr ExprContext::Or(absl::Span<const Expr> ops) { return Make(ExprKind::kOr, ops); }
Expr ExprContext::Not(Expr a) { return Make(ExprKind::kNot, {a}); }

int ExprContext::StructuralCompare(Expr a, Expr b) const {
  if (a == b) return 0;
  const Node& na = node(a);
  const Node& nb = node(b);
  if (na.kind != nb.kind) return na.kind < nb.kind ? -1 : 1;
  switch (na.kind) {
    case ExprKind::kConst:
    case ExprKind::kBoolConst:
      return na.payload < nb.payload ? -1 : (na.payload > nb.payload ? 1 : 0);
    case ExprKind::kVar: {
      const int c = var_names_[na.payload].compare(var_names_[nb.payload]);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    default: break;
  }
  absl::Span<const Expr> oa = operands(a), ob = operands(b);
  if (oa.size() != ob.size()) return oa.size() < ob.size() ? -1 : 1;
  for (size_t i = 0; i < oa.size(); ++i) {
    const int c = StructuralCompare(oa[i], ob[i]);
    if (c != 0) return c;
  }
  return 0;
}

// ---- printing ----------------------------------------------------------------------------
namespace {

class Printer {
 public:
  explicit Printer(const ExprContext& ctx) : ctx_(ctx) {}

  void Print(Expr e, std::string& out) {
    const ExprKindInfo& info = KindInfo(ctx_.kind(e));
    switch (info.syntax) {
      case ExprSyntax::kLeaf: PrintLeaf(e, out); return;
      case ExprSyntax::kCall: {
        absl::StrAppend(&out, info.spelling, "(");
        absl::Span<const Expr> ops = ctx_.operands(e);
        for (size_t i = 0; i < ops.size(); ++i) {
          if (i > 0) out += ", ";
          Print(ops[i], out);
        }
        out += ")";
        return;
      }
      case ExprSyntax::kPrefix:
        absl::StrAppend(&out, info.spelling, " ");
        PrintOperand(ctx_.operand(e, 0), info.precedence, /*parens_if_equal=*/false, out);
        return;
      case ExprSyntax::kInfix: PrintInfix(e, info, out); return;
    }
  }

 private:
  void PrintLeaf(Expr e, std::string& out) {
    switch (ctx_.kind(e)) {
      case ExprKind::kConst: absl::StrAppend(&out, ctx_.const_value(e)); return;
      case ExprKind::kBoolConst: out += ctx_.bool_value(e) ? "true" : "false"; return;
      case ExprKind::kVar: out += ctx_.var_name(e); return;
      default: PRISM_UNREACHABLE();
    }
  }

  // An operand of an operator with precedence `prec`: parenthesized if it binds looser, or
  // equally loose when `parens_if_equal` (nested n-ary nodes, non-associative operators and
  // right operands of left-associative ones).
  void PrintOperand(Expr op, int prec, bool parens_if_equal, std::string& out) {
    const ExprKindInfo& info = KindInfo(ctx_.kind(op));
    const bool parens = info.precedence < prec || (parens_if_equal && info.precedence == prec);
    if (parens) out += "(";
    Print(op, out);
    if (parens) out += ")";
  }

  void PrintInfix(Expr e, const ExprKindInfo& info, std::string& out) {
    absl::Span<const Expr> ops = ctx_.operands(e);
    const ExprKind kind = ctx_.kind(e);
    if (kind == ExprKind::kFloorDiv || kind == ExprKind::kMod) {
      // Left-associative, but the parser builds a flat Mul for "a * b", so a Mul on the left
      // would re-parse differently only if unparenthesized: parenthesize every equal-precedence
      // operand to keep the round trip exact and the reading obvious.
      PrintOperand(ops[0], info.precedence, true, out);
      absl::StrAppend(&out, " ", info.spelling, " ");
      PrintOperand(ops[1], info.precedence, true, out);
      return;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i > 0 && kind == ExprKind::kAdd && PrintSubtracted(ops[i], out)) continue;
      if (i > 0) absl::StrAppend(&out, " ", info.spelling, " ");
      PrintOperand(ops[i], info.precedence, true, out);
    }
  }

  // Prints " - t" for an Add operand that the parser rebuilds from "a - t" exactly; returns
  // false if `op` has no such form.
  bool PrintSubtracted(Expr op, std::string& out) {
    const int add_prec = KindInfo(ExprKind::kAdd).precedence;
    if (ctx_.kind(op) == ExprKind::kConst) {
      const int64_t c = ctx_.const_value(op);
      if (c >= 0 || c == std::numeric_limits<int64_t>::min()) return false;
      absl::StrAppend(&out, " - ", -c);
      return true;
    }
    if (ctx_.kind(op) != ExprKind::kMul) return false;
    absl::Span<const Expr> ops = ctx_.operands(op);
    if (!ctx_.is_const(ops[0])) return false;
    const int64_t c = ctx_.const_value(ops[0]);
    if (c >= 0 || c == std::numeric_limits<int64_t>::min()) return false;
    absl::Span<const Expr> rest = ops.subspan(1);
    if (c == -1) {
      // "a - t" with t not a literal and not starting with a literal: Mul(-1, t) or, if t is an
      // unparenthesized product, Mul(-1, t's factors).
      if (ctx_.is_const(rest[0])) return false;
      out += " - ";
      if (rest.size() == 1) {
        // Sums and products keep their parentheses (they are nested nodes); a floordiv or
        // mod needs none.
        if (ctx_.kind(rest[0]) == ExprKind::kMul) {
          out += "(";
          Print(rest[0], out);
          out += ")";
        } else {
          PrintOperand(rest[0], add_prec, true, out);
        }
        return true;
      }
      PrintFactors(rest, out);
      return true;
    }
    // "a - |c| * t..." parses to Mul(-|c|, t...) = Mul(c, t...).
    absl::StrAppend(&out, " - ", -c);
    for (Expr f : rest) {
      out += " * ";
      PrintOperand(f, KindInfo(ExprKind::kMul).precedence, true, out);
    }
    return true;
  }

  void PrintFactors(absl::Span<const Expr> factors, std::string& out) {
    for (size_t i = 0; i < factors.size(); ++i) {
      if (i > 0) out += " * ";
      PrintOperand(factors[i], KindInfo(ExprKind::kMul).precedence, true, out);
    }
  }

  const ExprContext& ctx_;
};

}  // namespace

std::string ExprContext::ToString(Expr e) const {
  std::string out;
  Printer(*this).Print(e, out);
  return out;
}

// ---- traversal -----------------------------------------------------------------------------

std::vector<Expr> PostOrder(const ExprContext& ctx, absl::Span<const Expr> roots) {
  std::vector<Expr> order;
  absl::flat_hash_set<Expr> done;
  // Iterative DFS: (node, next operand index).
  std::vector<std::pair<Expr, size_t>> stack;
  for (Expr root : roots) {
    if (done.contains(root)) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      absl::Span<const Expr> ops = ctx.operands(e);
      if (next < ops.size()) {
        Expr child = ops[next++];
        if (!done.contains(child)) stack.emplace_back(child, 0);
        continue;
      }
      Expr finished = e;
      stack.pop_back();
      if (done.insert(finished).second) order.push_back(finished);
    }
  }
  return order;
}

std::vector<Expr> FreeVars(const ExprContext& ctx, Expr e) {
  std::vector<Expr> vars;
  for (Expr n : PostOrder(ctx, {e})) {
    if (ctx.kind(n) == ExprKind::kVar) vars.push_back(n);
  }
  std::sort(vars.begin(), vars.end(),
            [&](Expr a, Expr b) { return ctx.var_name(a) < ctx.var_name(b); });
  return vars;
}

Expr Substitute(ExprContext& ctx, Expr e, const absl::flat_hash_map<Expr, Expr>& replacements) {
  for (const auto& [from, to] : replacements) {
    PRISM_CHECK(ctx.sort(from) == ctx.sort(to), "Substitute: ", ctx.ToString(from), " and ",
                ctx.ToString(to), " have different sorts");
  }
  absl::flat_hash_map<Expr, Expr> rebuilt;
  std::vector<Expr> ops;
  for (Expr n : PostOrder(ctx, {e})) {
    auto it = replacements.find(n);
    if (it != replacements.end()) {
      rebuilt[n] = it->second;
      continue;
    }
    if (KindInfo(ctx.kind(n)).syntax == ExprSyntax::kLeaf) {
      rebuilt[n] = n;
      continue;
    }
    ops.clear();
    for (Expr op : ctx.operands(n)) ops.push_back(rebuilt.at(op));
    rebuilt[n] = ctx.Make(ctx.kind(n), ops);
  }
  return rebuilt.at(e);
}

Expr ExprContext::Import(const ExprContext& from, Expr e) {
  absl::flat_hash_map<Expr, Expr> rebuilt;
  return Import(from, e, rebuilt);
}

Expr ExprContext::Import(const ExprContext& from, Expr e,
                         absl::flat_hash_map<Expr, Expr>& rebuilt) {
  if (auto it = rebuilt.find(e); it != rebuilt.end()) return it->second;
  std::vector<Expr> ops;
  for (Expr n : PostOrder(from, {e})) {
    if (rebuilt.contains(n)) continue;
    Expr out;
    switch (from.kind(n)) {
      case ExprKind::kConst: out = Const(from.const_value(n)); break;
      case ExprKind::kBoolConst: out = Bool(from.bool_value(n)); break;
      case ExprKind::kVar: {
        absl::StatusOr<Expr> v = Var(from.var_name(n), from.var_domain(n));
        PRISM_CHECK(v.ok(), "Import: ", v.status().message());
        out = *v;
        break;
      }
      default:
        ops.clear();
        for (Expr op : from.operands(n)) ops.push_back(rebuilt.at(op));
        out = Make(from.kind(n), ops);
    }
    rebuilt[n] = out;
  }
  return rebuilt.at(e);
}

}  // namespace prism
