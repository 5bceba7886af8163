#include "prism/equiv/pattern.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/equiv/language.h"
#include "pattern_reader.h"

namespace prism::equiv {

// ---- reading -----------------------------------------------------------------------------------
namespace internal {

int VarTable::Slot(const std::string& name) {
  auto [it, inserted] = index.try_emplace(name, static_cast<int>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

absl::StatusOr<int> ReadPatternNodes(ExprContext& ctx, const SExpr& e, absl::string_view filename,
                                     bool check_operators, VarTable& vars,
                                     std::vector<Pattern::Node>& out) {
  auto error = [&](const SExpr& at, absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(Where(filename, at), ": ", msg));
  };
  Pattern::Node node;
  switch (e.kind) {
    case SExpr::Kind::kBrace: {
      absl::StatusOr<Payload> p = SymPayload(ctx, e.text);
      if (!p.ok()) return error(e, p.status().message());
      node.op = LeafOpFor(Payload::Kind::kSym);
      node.payload = *p;
      break;
    }
    case SExpr::Kind::kAtom:
      switch (ClassifyAtom(e.text)) {
        case AtomKind::kVar:
          node.var = vars.Slot(e.text.substr(1));
          break;
        case AtomKind::kInt:
        case AtomKind::kReal: {
          absl::StatusOr<Payload> p = LiteralPayload(e.text);
          if (!p.ok()) return error(e, p.status().message());
          node.op = LeafOpFor(p->kind());
          node.payload = *p;
          break;
        }
        case AtomKind::kAxis:
          node.op = LeafOpFor(Payload::Kind::kAxis);
          node.payload = Payload::Axis(Symbol(e.text.substr(1)));
          break;
        case AtomKind::kName:
          if (check_operators) {
            const TermOpInfo* info = FindTermOp(Symbol(e.text));
            if (info != nullptr) {
              return error(e, absl::StrCat("operator '", e.text, "' takes ", info->arity,
                                           " operands, found 0 (write (", e.text, " ...))"));
            }
            return error(e, absl::StrCat("found '", e.text,
                                         "', expected ?variable, a number, {size}, @axis or (op ...)"));
          }
          node.op = Symbol(e.text);
          break;
        case AtomKind::kBad:
          return error(e, absl::StrCat("found '", e.text,
                                       "', expected ?variable, a number, {size}, @axis or (op ...)"));
      }
      break;
    case SExpr::Kind::kList: {
      if (e.items.empty()) return error(e, "found '()', expected an operator application");
      const SExpr& head = e.items[0];
      if (!head.is_atom() || ClassifyAtom(head.text) != AtomKind::kName) {
        return error(head, absl::StrCat("found '", Describe(head), "', expected an operator name"));
      }
      if (check_operators) {
        const TermOpInfo* info = FindTermOp(Symbol(head.text));
        if (info == nullptr) return error(head, absl::StrCat("unknown operator '", head.text, "'"));
        const int found = static_cast<int>(e.items.size()) - 1;
        if (found != info->arity) {
          return error(head, absl::StrCat("operator '", head.text, "' takes ", info->arity,
                                          " operands (", info->operands, "), found ", found));
        }
      }
      node.op = Symbol(head.text);
      for (size_t i = 1; i < e.items.size(); ++i) {
        PRISM_ASSIGN_OR_RETURN(int c, ReadPatternNodes(ctx, e.items[i], filename, check_operators,
                                                       vars, out));
        node.children.push_back(c);
      }
      break;
    }
  }
  out.push_back(std::move(node));
  return static_cast<int>(out.size()) - 1;
}

}  // namespace internal

// ---- Pattern -----------------------------------------------------------------------------------
Pattern::Pattern(std::vector<Node> nodes, std::vector<std::string> var_names)
    : nodes_(std::move(nodes)), var_names_(std::move(var_names)) {
  PRISM_CHECK(!nodes_.empty(), "empty pattern");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    PRISM_CHECK(n.var < static_cast<int>(var_names_.size()), "pattern variable slot out of range");
    for (int c : n.children) PRISM_CHECK(c >= 0 && static_cast<size_t>(c) < i, "bad pattern child");
  }
  Compile();
}

absl::StatusOr<Pattern> Pattern::Parse(ExprContext& ctx, absl::string_view text) {
  PRISM_ASSIGN_OR_RETURN(std::vector<internal::SExpr> forms, internal::ReadSExprs(text, ""));
  if (forms.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected exactly one pattern, found ", forms.size()));
  }
  internal::VarTable vars;
  std::vector<Node> nodes;
  PRISM_RETURN_IF_ERROR(
      internal::ReadPatternNodes(ctx, forms[0], "", /*check_operators=*/false, vars, nodes).status());
  return Pattern(std::move(nodes), std::move(vars.names));
}

int Pattern::slot(absl::string_view name) const {
  for (size_t i = 0; i < var_names_.size(); ++i) {
    if (var_names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

void Pattern::Compile() {
  program_.clear();
  vars_.clear();
  var_reg_.assign(var_names_.size(), -1);
  num_regs_ = 1;
  CompileNode(root(), 0);
}

void Pattern::CompileNode(int node, int reg) {
  const Node& n = nodes_[node];
  if (n.var >= 0) {
    if (var_reg_[n.var] < 0) {
      var_reg_[n.var] = reg;
      vars_.push_back(n.var);
    } else {
      program_.push_back(Instr{false, reg, 0, 0, var_reg_[n.var]});
    }
    return;
  }
  const int out = num_regs_;
  num_regs_ += static_cast<int>(n.children.size());
  program_.push_back(Instr{true, reg, node, out, 0});
  for (size_t i = 0; i < n.children.size(); ++i) CompileNode(n.children[i], out + static_cast<int>(i));
}

void Pattern::Run(const EGraph& g, size_t pc, std::vector<EClassId>& regs,
                  std::vector<Subst>& out) const {
  if (pc == program_.size()) {
    Subst s(var_names_.size(), EClassId::Invalid());
    for (int v : vars_) s[v] = g.Find(regs[var_reg_[v]]);
    out.push_back(std::move(s));
    return;
  }
  const Instr& in = program_[pc];
  if (!in.bind) {
    if (g.Find(regs[in.reg]) == g.Find(regs[in.other])) Run(g, pc + 1, regs, out);
    return;
  }
  const Node& pn = nodes_[in.node];
  const EClass& cls = g.eclass(g.Find(regs[in.reg]));
  for (const ENode& n : cls.nodes) {
    if (n.op != pn.op || n.payload != pn.payload || n.children.size() != pn.children.size()) continue;
    for (size_t i = 0; i < n.children.size(); ++i) regs[in.out + i] = n.children[i];
    Run(g, pc + 1, regs, out);
  }
}

void Pattern::SearchClass(const EGraph& g, EClassId id, std::vector<Subst>& out) const {
  std::vector<EClassId> regs(num_regs_, EClassId::Invalid());
  regs[0] = g.Find(id);
  std::vector<Subst> found;
  Run(g, 0, regs, found);
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  out.insert(out.end(), found.begin(), found.end());
}

std::vector<SearchMatch> Pattern::Search(const EGraph& g) const {
  PRISM_CHECK(g.clean(), "pattern search needs a clean e-graph (call Rebuild)");
  std::vector<SearchMatch> matches;
  auto visit = [&](EClassId id) {
    SearchMatch m{id, {}};
    SearchClass(g, id, m.substs);
    if (!m.substs.empty()) matches.push_back(std::move(m));
  };
  if (is_var()) {
    for (EClassId id : g.class_ids()) visit(id);
  } else {
    for (EClassId id : g.classes_with_op(nodes_.back().op)) visit(id);
  }
  return matches;
}

EClassId Pattern::Instantiate(EGraph& g, const Subst& subst) const {
  std::vector<EClassId> ids(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.var >= 0) {
      PRISM_CHECK(static_cast<size_t>(n.var) < subst.size() && subst[n.var].valid(),
                  "Instantiate: ?", var_names_[n.var], " is not bound");
      ids[i] = subst[n.var];
      continue;
    }
    ENode e{n.op, n.payload, {}};
    for (int c : n.children) e.children.push_back(ids[c]);
    ids[i] = g.AddUncanonical(e);
  }
  return ids.back();
}

std::string Pattern::NodeString(int i, const ExprContext* ctx) const {
  const Node& n = nodes_[i];
  if (n.var >= 0) return absl::StrCat("?", var_names_[n.var]);
  std::string head = n.payload.is_none() ? std::string(n.op.name()) : n.payload.ToString(ctx);
  if (n.children.empty()) return head;
  std::string s = absl::StrCat("(", head);
  for (int c : n.children) absl::StrAppend(&s, " ", NodeString(c, ctx));
  return s + ")";
}

std::string Pattern::ToString(const ExprContext* ctx) const {
  return nodes_.empty() ? "<empty>" : NodeString(root(), ctx);
}

}  // namespace prism::equiv
