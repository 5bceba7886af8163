#include "prism/equiv/term.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "sexpr.h"
#include "prism/equiv/language.h"

namespace prism::equiv {

// ---- Payload -----------------------------------------------------------------------------------
Payload Payload::Int(int64_t v) {
  Payload p;
  p.kind_ = Kind::kInt;
  p.bits_ = static_cast<uint64_t>(v);
  return p;
}
Payload Payload::Real(double v) {
  Payload p;
  p.kind_ = Kind::kReal;
  p.bits_ = std::bit_cast<uint64_t>(v);
  return p;
}
Payload Payload::Sym(Expr e) {
  PRISM_CHECK(e.valid(), "symbolic payload needs a valid expression");
  Payload p;
  p.kind_ = Kind::kSym;
  p.bits_ = e.value();
  return p;
}
Payload Payload::Axis(Symbol name) {
  PRISM_CHECK(!name.empty(), "axis payload needs a name");
  Payload p;
  p.kind_ = Kind::kAxis;
  p.bits_ = name.handle();
  return p;
}
int64_t Payload::int_value() const {
  PRISM_CHECK(kind_ == Kind::kInt);
  return static_cast<int64_t>(bits_);
}
double Payload::real_value() const {
  PRISM_CHECK(kind_ == Kind::kReal);
  return std::bit_cast<double>(bits_);
}
Expr Payload::sym() const {
  PRISM_CHECK(kind_ == Kind::kSym);
  return Expr(static_cast<uint32_t>(bits_));
}
Symbol Payload::axis() const {
  PRISM_CHECK(kind_ == Kind::kAxis);
  return Symbol::FromHandle(static_cast<uint32_t>(bits_));
}

std::string FormatReal(double v) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v && std::signbit(std::strtod(buf, nullptr)) == std::signbit(v)) {
      break;
    }
  }
  std::string s(buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string Payload::ToString(const ExprContext* ctx) const {
  switch (kind_) {
    case Kind::kNone:
      return "";
    case Kind::kInt:
      return absl::StrCat(int_value());
    case Kind::kReal:
      return FormatReal(real_value());
    case Kind::kSym:
      if (ctx != nullptr && ctx->contains(sym())) return absl::StrCat("{", ctx->ToString(sym()), "}");
      return absl::StrCat("{#", sym().value(), "}");
    case Kind::kAxis:
      return absl::StrCat("@", axis().name());
  }
  return "";
}

Symbol LeafOpFor(Payload::Kind kind) {
  static const Symbol kInt("int"), kReal("real"), kSym("sym"), kAxis("axis");
  switch (kind) {
    case Payload::Kind::kInt:
      return kInt;
    case Payload::Kind::kReal:
      return kReal;
    case Payload::Kind::kSym:
      return kSym;
    case Payload::Kind::kAxis:
      return kAxis;
    case Payload::Kind::kNone:
      break;
  }
  PRISM_UNREACHABLE("no leaf operator for payload kind none");
}

// ---- Term --------------------------------------------------------------------------------------
uint32_t Term::Add(TermNode node) {
  for (uint32_t c : node.children) {
    PRISM_CHECK(c < nodes_.size(), "term child ", c, " does not precede node ", nodes_.size());
  }
  nodes_.push_back(std::move(node));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t Term::Add(Symbol op, std::vector<uint32_t> children, Payload payload) {
  return Add(TermNode{op, payload, std::move(children)});
}

const TermNode& Term::node(uint32_t i) const {
  PRISM_CHECK(i < nodes_.size(), "term node ", i, " out of range ", nodes_.size());
  return nodes_[i];
}

uint32_t Term::root() const {
  PRISM_CHECK(!nodes_.empty(), "empty term has no root");
  return static_cast<uint32_t>(nodes_.size() - 1);
}

std::string Term::ToString(const ExprContext* ctx) const {
  if (nodes_.empty()) return "<empty>";
  return ToString(root(), ctx);
}

std::string Term::ToString(uint32_t index, const ExprContext* ctx) const {
  const TermNode& n = node(index);
  std::string head = n.payload.is_none() ? std::string(n.op.name()) : n.payload.ToString(ctx);
  if (n.children.empty()) return head;
  std::string out = absl::StrCat("(", head);
  for (uint32_t c : n.children) absl::StrAppend(&out, " ", ToString(c, ctx));
  out += ")";
  return out;
}

size_t Term::TreeSize() const {
  if (nodes_.empty()) return 0;
  std::vector<size_t> size(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    size[i] = 1;
    for (uint32_t c : nodes_[i].children) size[i] += size[c];
  }
  return size.back();
}

std::optional<uint32_t> Term::At(absl::Span<const int> path) const {
  if (nodes_.empty()) return std::nullopt;
  uint32_t cur = root();
  for (int i : path) {
    const TermNode& n = nodes_[cur];
    if (i < 0 || static_cast<size_t>(i) >= n.children.size()) return std::nullopt;
    cur = n.children[i];
  }
  return cur;
}

uint32_t Term::Append(const Term& other, uint32_t other_index) {
  absl::flat_hash_map<uint32_t, uint32_t> copied;
  std::function<uint32_t(uint32_t)> copy = [&](uint32_t i) -> uint32_t {
    auto it = copied.find(i);
    if (it != copied.end()) return it->second;
    const TermNode& n = other.node(i);
    TermNode m{n.op, n.payload, {}};
    for (uint32_t c : n.children) m.children.push_back(copy(c));
    uint32_t id = Add(std::move(m));
    copied.emplace(i, id);
    return id;
  };
  return copy(other_index);
}

Term Term::Subterm(uint32_t index) const {
  Term t;
  t.Append(*this, index);
  return t;
}

Term Term::Replace(absl::Span<const int> path, const Term& replacement) const {
  PRISM_CHECK(At(path).has_value(), "path ", PathToString(path), " is not in the term");
  Term out;
  // Rebuild the spine from the root down to the replaced position; everything else is copied.
  std::function<uint32_t(uint32_t, size_t)> build = [&](uint32_t i, size_t depth) -> uint32_t {
    if (depth == path.size()) return out.Append(replacement, replacement.root());
    const TermNode& n = nodes_[i];
    TermNode m{n.op, n.payload, {}};
    for (size_t k = 0; k < n.children.size(); ++k) {
      m.children.push_back(static_cast<int>(k) == path[depth] ? build(n.children[k], depth + 1)
                                                              : out.Append(*this, n.children[k]));
    }
    return out.Add(std::move(m));
  };
  build(root(), 0);
  return out;
}

bool SubtermsEqual(const Term& a, uint32_t ia, const Term& b, uint32_t ib) {
  absl::flat_hash_set<std::pair<uint32_t, uint32_t>> known;
  std::function<bool(uint32_t, uint32_t)> eq = [&](uint32_t x, uint32_t y) -> bool {
    if (known.contains({x, y})) return true;
    const TermNode& m = a.node(x);
    const TermNode& n = b.node(y);
    if (m.op != n.op || m.payload != n.payload || m.children.size() != n.children.size()) {
      return false;
    }
    for (size_t k = 0; k < m.children.size(); ++k) {
      if (!eq(m.children[k], n.children[k])) return false;
    }
    known.insert({x, y});
    return true;
  };
  return eq(ia, ib);
}

bool operator==(const Term& a, const Term& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty();
  return SubtermsEqual(a, a.root(), b, b.root());
}

std::string PathToString(absl::Span<const int> path) {
  return absl::StrCat("[", absl::StrJoin(path, ", "), "]");
}

// ---- parsing -----------------------------------------------------------------------------------
namespace {

using internal::AtomKind;
using internal::SExpr;

absl::Status TermError(const SExpr& e, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(internal::Where("", e), ": ", msg));
}

absl::StatusOr<uint32_t> BuildTerm(ExprContext& ctx, const SExpr& e, Term& out) {
  switch (e.kind) {
    case SExpr::Kind::kBrace: {
      absl::StatusOr<Payload> p = internal::SymPayload(ctx, e.text);
      if (!p.ok()) return TermError(e, p.status().message());
      return out.Add(LeafOpFor(Payload::Kind::kSym), {}, *p);
    }
    case SExpr::Kind::kAtom: {
      switch (internal::ClassifyAtom(e.text)) {
        case AtomKind::kInt:
        case AtomKind::kReal: {
          absl::StatusOr<Payload> p = internal::LiteralPayload(e.text);
          if (!p.ok()) return TermError(e, p.status().message());
          return out.Add(LeafOpFor(p->kind()), {}, *p);
        }
        case AtomKind::kAxis:
          return out.Add(LeafOpFor(Payload::Kind::kAxis), {},
                         Payload::Axis(Symbol(e.text.substr(1))));
        case AtomKind::kName:
          return out.Add(Symbol(e.text));
        case AtomKind::kVar:
          return TermError(e, absl::StrCat("found pattern variable '", e.text,
                                           "', expected a term (variables occur only in rules)"));
        case AtomKind::kBad:
          return TermError(e, absl::StrCat("found '", e.text,
                                           "', expected an operator name, a number, {size} or @axis"));
      }
      break;
    }
    case SExpr::Kind::kList: {
      if (e.items.empty()) return TermError(e, "found '()', expected an operator application");
      const SExpr& head = e.items[0];
      if (!head.is_atom() || internal::ClassifyAtom(head.text) != AtomKind::kName) {
        return TermError(head, absl::StrCat("found '", internal::Describe(head),
                                            "', expected an operator name"));
      }
      std::vector<uint32_t> children;
      for (size_t i = 1; i < e.items.size(); ++i) {
        PRISM_ASSIGN_OR_RETURN(uint32_t c, BuildTerm(ctx, e.items[i], out));
        children.push_back(c);
      }
      return out.Add(Symbol(head.text), std::move(children));
    }
  }
  return TermError(e, "unreadable term");
}

}  // namespace

absl::StatusOr<Term> ParseTerm(ExprContext& ctx, absl::string_view text) {
  PRISM_ASSIGN_OR_RETURN(std::vector<SExpr> forms, internal::ReadSExprs(text, ""));
  if (forms.empty()) return absl::InvalidArgumentError("1:1: found end of input, expected a term");
  if (forms.size() > 1) {
    return TermError(forms[1], absl::StrCat("found '", internal::Describe(forms[1]),
                                            "' after the term, expected end of input"));
  }
  Term t;
  PRISM_RETURN_IF_ERROR(BuildTerm(ctx, forms[0], t).status());
  return t;
}

void CollectInputs(const Term& t, std::set<std::string>& out) {
  for (uint32_t i = 0; i < t.size(); ++i) {
    const TermNode& n = t.node(i);
    if (n.children.empty() && n.payload.is_none() && FindTermOp(n.op) == nullptr) {
      out.insert(std::string(n.op.name()));
    }
  }
}

}  // namespace prism::equiv
