#include "prism/equiv/rules.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "pattern_reader.h"
#include "sexpr.h"

namespace prism::equiv {
namespace {

using internal::AtomKind;
using internal::SExpr;

constexpr absl::string_view kShape = "(rule NAME LHS => RHS [if CONDITION...])";

absl::Status At(absl::string_view file, const SExpr& e, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(internal::Where(file, e), ": ", msg));
}

bool IsRuleName(absl::string_view s) {
  if (s.empty() || !(std::islower(static_cast<unsigned char>(s[0])) || std::isdigit(static_cast<unsigned char>(s[0])))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
           c == '-' || c == '_';
  });
}

// The full text of an s-expression, single-spaced.
std::string Render(const SExpr& e) {
  switch (e.kind) {
    case SExpr::Kind::kAtom:
      return e.text;
    case SExpr::Kind::kBrace:
      return absl::StrCat("{", e.text, "}");
    case SExpr::Kind::kList: {
      std::vector<std::string> parts;
      for (const SExpr& i : e.items) parts.push_back(Render(i));
      return absl::StrCat("(", absl::StrJoin(parts, " "), ")");
    }
  }
  return "";
}

absl::StatusOr<Condition> ReadCondition(const SExpr& e, absl::string_view file,
                                        internal::VarTable& vars, size_t lhs_slots,
                                        const std::string& rule_prefix) {
  Condition c;
  const SExpr* call = &e;
  if (e.is_list() && !e.items.empty() && e.items[0].is_atom() && e.items[0].text == "not") {
    if (e.items.size() != 2 || !e.items[1].is_list()) {
      return At(file, e, "found '(not ...)' with the wrong shape, expected (not (PREDICATE ARG...))");
    }
    c.negated = true;
    call = &e.items[1];
  }
  if (!call->is_list() || call->items.empty() || !call->items[0].is_atom()) {
    return At(file, *call, absl::StrCat("found '", internal::Describe(*call),
                                        "', expected a condition (PREDICATE ARG...)"));
  }
  const std::string& pname = call->items[0].text;
  c.predicate = FindPredicate(pname);
  if (c.predicate == nullptr) {
    return At(file, call->items[0], absl::StrCat("unknown predicate '", pname, "'"));
  }
  const size_t found = call->items.size() - 1;
  if (found != c.predicate->args.size()) {
    return At(file, call->items[0],
              absl::StrCat("predicate '", pname, "' takes ", c.predicate->args.size(),
                           " arguments, found ", found));
  }
  for (size_t i = 1; i < call->items.size(); ++i) {
    const SExpr& a = call->items[i];
    const ArgKind kind = c.predicate->args[i - 1];
    Condition::Arg arg;
    AtomKind ak = a.is_atom() ? internal::ClassifyAtom(a.text) : AtomKind::kBad;
    if (ak == AtomKind::kVar) {
      const std::string name = a.text.substr(1);
      auto it = vars.index.find(name);
      if (it == vars.index.end() || static_cast<size_t>(it->second) >= lhs_slots) {
        return absl::InvalidArgumentError(absl::StrCat(rule_prefix, "condition ", Render(e), " uses ?",
                                                       name, ", which the left side does not bind"));
      }
      arg.var = it->second;
    } else if (ak == AtomKind::kInt && kind == ArgKind::kInt) {
      absl::StatusOr<Payload> p = internal::LiteralPayload(a.text);
      if (!p.ok()) return At(file, a, p.status().message());
      arg.literal = p->int_value();
    } else {
      absl::string_view expected = kind == ArgKind::kInt ? "a ?variable or an integer" : "a ?variable";
      return At(file, a, absl::StrCat("argument ", i, " of '", pname, "': found '",
                                      internal::Describe(a), "', expected ", expected));
    }
    c.args.push_back(arg);
  }
  return c;
}

absl::StatusOr<std::vector<Rewrite>> ReadRule(ExprContext& ctx, const SExpr& form,
                                              absl::string_view file,
                                              const RuleParseOptions& options) {
  if (!form.is_list() || form.items.empty() || !form.items[0].is_atom() ||
      form.items[0].text != "rule") {
    return At(file, form, absl::StrCat("found '", internal::Describe(form), "', expected ", kShape));
  }
  const auto& items = form.items;
  if (items.size() < 2 || !items[1].is_atom() || !IsRuleName(items[1].text)) {
    const SExpr& at = items.size() < 2 ? form : items[1];
    return At(file, at, absl::StrCat("found '", items.size() < 2 ? ")" : internal::Describe(items[1]),
                                     "', expected a rule name ([a-z0-9][a-z0-9_-]*)"));
  }
  const std::string name = items[1].text;
  const std::string location = internal::Where(file, form);
  const std::string prefix = absl::StrCat("rule '", name, "' (", location, "): ");
  if (items.size() < 5) {
    return At(file, form, absl::StrCat("rule '", name, "' is incomplete, expected ", kShape));
  }
  const SExpr& arrow = items[3];
  const bool both = arrow.is_atom() && arrow.text == "<=>";
  if (!(arrow.is_atom() && (arrow.text == "=>" || both))) {
    return At(file, arrow, absl::StrCat("found '", internal::Describe(arrow), "', expected '=>' or '<=>'"));
  }
  internal::VarTable vars;
  std::vector<Pattern::Node> lhs_nodes, rhs_nodes;
  PRISM_RETURN_IF_ERROR(internal::ReadPatternNodes(ctx, items[2], file, options.check_operators,
                                                   vars, lhs_nodes)
                            .status());
  const size_t lhs_slots = vars.names.size();
  PRISM_RETURN_IF_ERROR(internal::ReadPatternNodes(ctx, items[4], file, options.check_operators,
                                                   vars, rhs_nodes)
                            .status());
  if (lhs_nodes.back().var >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "left side is a bare variable, which would match every class"));
  }
  for (const Pattern::Node& n : rhs_nodes) {
    if (n.var >= static_cast<int>(lhs_slots)) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "right side uses ?", vars.names[n.var],
                                                      ", which the left side does not bind"));
    }
  }
  if (both) {
    if (rhs_nodes.back().var >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          prefix, "right side of a <=> rule is a bare variable, which would match every class"));
    }
    absl::flat_hash_set<int> in_rhs;
    for (const Pattern::Node& n : rhs_nodes) in_rhs.insert(n.var);
    for (const Pattern::Node& n : lhs_nodes) {
      if (n.var >= 0 && !in_rhs.contains(n.var)) {
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, "left side uses ?", vars.names[n.var],
                         ", which the right side does not bind (a <=> rule rewrites both ways)"));
      }
    }
  }
  std::vector<Condition> conditions;
  if (items.size() > 5) {
    if (!items[5].is_atom() || items[5].text != "if") {
      return At(file, items[5], absl::StrCat("found '", internal::Describe(items[5]),
                                             "', expected 'if' or ')'"));
    }
    if (items.size() == 6) {
      return At(file, items[5], "found ')' after 'if', expected a condition");
    }
    for (size_t i = 6; i < items.size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(Condition c, ReadCondition(items[i], file, vars, lhs_slots, prefix));
      conditions.push_back(std::move(c));
    }
  }
  std::string doc = absl::StrJoin(form.comments, " ");
  Rewrite fwd;
  fwd.name = name;
  fwd.lhs = Pattern(lhs_nodes, vars.names);
  fwd.rhs = Pattern(rhs_nodes, vars.names);
  fwd.conditions = conditions;
  fwd.bidirectional = both;
  fwd.location = location;
  fwd.doc = doc;
  std::vector<Rewrite> out{fwd};
  if (both) {
    Rewrite rev = fwd;
    rev.lhs = fwd.rhs;
    rev.rhs = fwd.lhs;
    rev.reversed = true;
    out.push_back(std::move(rev));
  }
  return out;
}

}  // namespace

std::vector<std::string> RuleSet::names() const {
  std::vector<std::string> out;
  for (const Rewrite& r : rewrites_) {
    if (!r.reversed) out.push_back(r.name);
  }
  return out;
}

size_t RuleSet::num_rules() const { return names().size(); }

const Rewrite* RuleSet::Find(absl::string_view name, bool reversed) const {
  for (const Rewrite& r : rewrites_) {
    if (r.name == name && r.reversed == reversed) return &r;
  }
  return nullptr;
}

absl::Status RuleSet::Append(const RuleSet& other) {
  for (const Rewrite& r : other.rewrites_) {
    if (r.reversed) continue;
    if (const Rewrite* first = Find(r.name); first != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("rule '", r.name, "' (", r.location,
                                                     "): duplicate name (first defined at ",
                                                     first->location, ")"));
    }
  }
  rewrites_.insert(rewrites_.end(), other.rewrites_.begin(), other.rewrites_.end());
  sources_.insert(sources_.end(), other.sources_.begin(), other.sources_.end());
  return absl::OkStatus();
}

RuleSet RuleSet::Without(const std::vector<std::string>& names) const {
  RuleSet out;
  out.sources_ = sources_;
  for (const Rewrite& r : rewrites_) {
    if (std::find(names.begin(), names.end(), r.name) == names.end()) out.rewrites_.push_back(r);
  }
  return out;
}

absl::StatusOr<RuleSet> ParseRules(ExprContext& ctx, absl::string_view text,
                                   absl::string_view filename, const RuleParseOptions& options) {
  PRISM_ASSIGN_OR_RETURN(std::vector<SExpr> forms, internal::ReadSExprs(text, filename));
  RuleSet set;
  set.sources_.push_back(RuleSource{
      filename.empty() ? std::string("<inline>")
                       : std::filesystem::path(std::string(filename)).filename().string(),
      HashToHex(StableHashBytes(text))});
  for (const SExpr& form : forms) {
    PRISM_ASSIGN_OR_RETURN(std::vector<Rewrite> rws, ReadRule(ctx, form, filename, options));
    if (const Rewrite* first = set.Find(rws[0].name); first != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("rule '", rws[0].name, "' (", rws[0].location,
                                                     "): duplicate name (first defined at ",
                                                     first->location, ")"));
    }
    for (Rewrite& r : rws) set.rewrites_.push_back(std::move(r));
  }
  return set;
}

absl::StatusOr<RuleSet> LoadRuleFile(ExprContext& ctx, absl::string_view path,
                                     const RuleParseOptions& options) {
  PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseRules(ctx, text, path, options);
}

absl::StatusOr<RuleSet> LoadRuleDirectory(ExprContext& ctx, absl::string_view dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(dir), ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".rules") {
      files.push_back(entry.path().filename().string());
    }
  }
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list rule directory ", dir, ": ", ec.message()));
  if (files.empty()) return absl::NotFoundError(absl::StrCat("no *.rules files in ", dir));
  std::sort(files.begin(), files.end());
  RuleSet all;
  for (const std::string& f : files) {
    PRISM_ASSIGN_OR_RETURN(RuleSet set, LoadRuleFile(ctx, JoinPath(dir, f)));
    PRISM_RETURN_IF_ERROR(all.Append(set));
  }
  return all;
}

absl::StatusOr<RuleSet> LoadDefaultRules(ExprContext& ctx) {
  PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
  return LoadRuleDirectory(ctx, JoinPath(root, "smt_theories/equiv"));
}

}  // namespace prism::equiv
