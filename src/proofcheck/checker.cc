// The proof checker: reads the proof JSON and the cited rule files, then replays every step
// (checker.h). Rules are read here from their text (docs/rule_format.md §3), not by equiv/.
#include "prism/proofcheck/checker.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "facts.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "tree.h"

namespace prism::proofcheck {
namespace {

using internal::Condition;
using internal::Env;
using internal::Facts;
using internal::Size;
using internal::Tree;
using Json = nlohmann::json;

absl::Status Reject(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }
absl::Status Malformed(absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat("malformed proof: ", msg));
}

// ---- rule files -------------------------------------------------------------------------------
struct Rule {
  std::string name;
  std::string where;  // FILE:LINE:COL
  Tree lhs, rhs;
  bool both = false;
  std::vector<Condition> conditions;
};

absl::Status RuleError(absl::string_view file, const Tree& at, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", at.line, ":", at.col, ": ", msg));
}

bool IsRuleName(const std::string& s) {
  return !s.empty() && (std::islower(static_cast<unsigned char>(s[0])) || std::isdigit(static_cast<unsigned char>(s[0]))) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
}

// Checks that `p` uses only term-language operators with their arity; collects its variables.
absl::Status CheckPattern(absl::string_view file, const Tree& p, std::vector<std::string>& vars) {
  switch (p.kind) {
    case Tree::Kind::kVar:
      if (std::find(vars.begin(), vars.end(), p.text) == vars.end()) vars.push_back(p.text);
      return absl::OkStatus();
    case Tree::Kind::kWord:
      return RuleError(file, p, absl::StrCat("found '", p.text, "', expected a pattern"));
    case Tree::Kind::kApply: {
      const internal::OpInfo* op = internal::FindOp(p.text);
      if (op == nullptr) return RuleError(file, p, absl::StrCat("unknown operator '", p.text, "'"));
      if (static_cast<int>(p.kids.size()) != op->arity) {
        return RuleError(file, p, absl::StrCat("operator '", p.text, "' takes ", op->arity,
                                               " operands, found ", p.kids.size()));
      }
      for (const Tree& k : p.kids) PRISM_RETURN_IF_ERROR(CheckPattern(file, k, vars));
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

absl::StatusOr<Rule> ReadRule(absl::string_view file, const Tree& form) {
  const auto& k = form.kids;
  if (!form.list || form.text != "rule" || k.size() < 4 || k[0].list || k[0].kind != Tree::Kind::kApply ||
      k[2].kind != Tree::Kind::kWord || (k[2].text != "=>" && k[2].text != "<=>")) {
    return RuleError(file, form, absl::StrCat("found '", internal::Abbrev(form, 40),
                                              "', expected (rule NAME LHS => RHS [if CONDITION...])"));
  }
  Rule r;
  r.name = k[0].text;
  r.where = absl::StrCat(file, ":", form.line, ":", form.col);
  if (!IsRuleName(r.name)) return RuleError(file, k[0], absl::StrCat("bad rule name '", r.name, "'"));
  const std::string prefix = absl::StrCat("rule '", r.name, "' (", r.where, "): ");
  r.lhs = k[1];
  r.rhs = k[3];
  r.both = k[2].text == "<=>";
  std::vector<std::string> lhs_vars, rhs_vars;
  PRISM_RETURN_IF_ERROR(CheckPattern(file, r.lhs, lhs_vars));
  PRISM_RETURN_IF_ERROR(CheckPattern(file, r.rhs, rhs_vars));
  if (r.lhs.kind == Tree::Kind::kVar || (r.both && r.rhs.kind == Tree::Kind::kVar)) {
    return Reject(absl::StrCat(prefix, "a side that rewrites is a bare variable"));
  }
  for (const std::string& v : rhs_vars) {
    if (!Contains(lhs_vars, v)) {
      return Reject(absl::StrCat(prefix, "right side uses ?", v, ", which the left side does not bind"));
    }
  }
  for (const std::string& v : lhs_vars) {
    if (r.both && !Contains(rhs_vars, v)) {
      return Reject(absl::StrCat(prefix, "left side uses ?", v, ", which the right side does not bind"));
    }
  }
  if (k.size() == 4) return r;
  if (k[4].list || k[4].text != "if" || k.size() == 5) {
    return RuleError(file, k[4], "expected 'if' and at least one condition after the right side");
  }
  for (size_t i = 5; i < k.size(); ++i) {
    Condition c;
    const Tree* call = &k[i];
    if (call->list && call->text == "not" && call->kids.size() == 1) {
      c.negated = true;
      call = &call->kids[0];
    }
    std::optional<std::vector<bool>> sig = internal::PredicateSignature(call->text);
    if (!call->list || !sig) {
      return RuleError(file, *call, absl::StrCat("found '", internal::Abbrev(*call, 40), "', expected a condition"));
    }
    if (call->kids.size() != sig->size()) {
      return RuleError(file, *call, absl::StrCat("predicate '", call->text, "' takes ", sig->size(),
                                                 " arguments, found ", call->kids.size()));
    }
    c.predicate = call->text;
    for (size_t a = 0; a < sig->size(); ++a) {
      const Tree& arg = call->kids[a];
      if (arg.kind == Tree::Kind::kVar && Contains(lhs_vars, arg.text)) {
        c.args.push_back({arg.text, 0});
      } else if (arg.kind == Tree::Kind::kInt && !(*sig)[a]) {
        c.args.push_back({"", arg.i});
      } else {
        return Reject(absl::StrCat(prefix, "condition argument '", internal::Print(arg),
                                   "' is not a variable of the left side", (*sig)[a] ? "" : " or an integer"));
      }
    }
    r.conditions.push_back(std::move(c));
  }
  return r;
}

// ---- matching ---------------------------------------------------------------------------------
using Binding = std::map<std::string, const Tree*>;

bool Match(const Tree& p, const Tree& t, Binding& b) {
  if (p.kind == Tree::Kind::kVar) {
    auto [it, fresh] = b.emplace(p.text, &t);
    return fresh || *it->second == t;
  }
  if (p.kind != t.kind || p.kids.size() != t.kids.size()) return false;
  if (p.kids.empty()) return p == t;
  if (p.text != t.text) return false;
  for (size_t i = 0; i < p.kids.size(); ++i) {
    if (!Match(p.kids[i], t.kids[i], b)) return false;
  }
  return true;
}

Tree Instantiate(const Tree& p, const Binding& b) {
  if (p.kind == Tree::Kind::kVar) return *b.at(p.text);
  Tree out = p;
  for (Tree& k : out.kids) k = Instantiate(k, b);
  return out;
}

// ---- the proof file ---------------------------------------------------------------------------
struct Step {
  std::string kind, rule, direction;
  std::vector<int> position;
  Tree before, after;
};

struct Proof {
  int version = 0;
  std::vector<std::pair<std::string, std::string>> files;  // name, hash
  Env env;
  std::string start_text, goal_text;
  Tree start, goal;
  std::vector<Step> steps;
};

absl::StatusOr<std::string> String(const Json& j, const std::string& field, const std::string& path) {
  if (!j.is_object() || !j.contains(field) || !j.at(field).is_string()) {
    return Malformed(absl::StrCat(path, field, ": expected a string"));
  }
  return j.at(field).get<std::string>();
}

absl::StatusOr<Tree> TermField(const Json& j, const std::string& field, const std::string& path,
                               std::string* text = nullptr) {
  PRISM_ASSIGN_OR_RETURN(std::string s, String(j, field, path));
  absl::StatusOr<Tree> t = internal::ReadTerm(s);
  if (!t.ok()) return Malformed(absl::StrCat(path, field, ": ", t.status().message()));
  if (text != nullptr) *text = s;
  return t;
}

absl::StatusOr<Size> SizeValue(const Json& j, const std::string& path) {
  if (j.is_number_integer()) return Size::Const(j.get<int64_t>());
  if (j.is_string()) {
    if (std::optional<Size> s = internal::ParseSize(j.get<std::string>())) return *s;
  }
  return Malformed(absl::StrCat(path, ": expected an integer or a size such as \"4096/g\""));
}

absl::StatusOr<Proof> ParseProof(absl::string_view text) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return Malformed(absl::StrCat("not JSON: ", e.what()));
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "prism.proof") {
    return Malformed("\"format\" must be \"prism.proof\"");
  }
  Proof p;
  if (!j.contains("version") || !j["version"].is_number_integer()) return Malformed("version: expected an integer");
  p.version = j["version"].get<int>();
  if (p.version != 1) {
    return Malformed(absl::StrCat("version ", p.version, " is not supported (this checker reads version 1)"));
  }
  if (!j.contains("rule_files") || !j["rule_files"].is_array()) return Malformed("rule_files: expected an array");
  for (size_t i = 0; i < j["rule_files"].size(); ++i) {
    const std::string path = absl::StrCat("rule_files[", i, "].");
    PRISM_ASSIGN_OR_RETURN(std::string name, String(j["rule_files"][i], "name", path));
    PRISM_ASSIGN_OR_RETURN(std::string hash, String(j["rule_files"][i], "hash", path));
    p.files.push_back({name, hash});
  }
  if (!j.contains("env") || !j["env"].is_object()) return Malformed("env: expected an object");
  const Json& env = j["env"];
  for (const char* list : {"inputs", "axes"}) {
    if (!env.contains(list) || !env[list].is_array()) return Malformed(absl::StrCat("env.", list, ": expected an array"));
  }
  for (size_t i = 0; i < env["inputs"].size(); ++i) {
    const Json& in = env["inputs"][i];
    const std::string path = absl::StrCat("env.inputs[", i, "].");
    PRISM_ASSIGN_OR_RETURN(std::string name, String(in, "name", path));
    if (!in.contains("shape") || !in["shape"].is_array()) return Malformed(absl::StrCat(path, "shape: expected an array"));
    std::vector<Size> shape;
    for (size_t d = 0; d < in["shape"].size(); ++d) {
      PRISM_ASSIGN_OR_RETURN(Size s, SizeValue(in["shape"][d], absl::StrCat(path, "shape[", d, "]")));
      shape.push_back(s);
    }
    if (!p.env.inputs.emplace(name, shape).second) return Malformed(absl::StrCat(path, "name: '", name, "' given twice"));
  }
  for (size_t i = 0; i < env["axes"].size(); ++i) {
    const Json& ax = env["axes"][i];
    const std::string path = absl::StrCat("env.axes[", i, "].");
    PRISM_ASSIGN_OR_RETURN(std::string name, String(ax, "name", path));
    if (!ax.contains("degree")) return Malformed(absl::StrCat(path, "degree: missing"));
    PRISM_ASSIGN_OR_RETURN(Size degree, SizeValue(ax["degree"], absl::StrCat(path, "degree")));
    if (!p.env.axes.emplace(name, degree).second) return Malformed(absl::StrCat(path, "name: '", name, "' given twice"));
  }
  PRISM_ASSIGN_OR_RETURN(p.start, TermField(j, "start", "", &p.start_text));
  PRISM_ASSIGN_OR_RETURN(p.goal, TermField(j, "goal", "", &p.goal_text));
  if (!j.contains("steps") || !j["steps"].is_array()) return Malformed("steps: expected an array");
  for (size_t i = 0; i < j["steps"].size(); ++i) {
    const Json& s = j["steps"][i];
    const std::string path = absl::StrCat("steps[", i, "].");
    Step step;
    PRISM_ASSIGN_OR_RETURN(step.kind, String(s, "kind", path));
    PRISM_ASSIGN_OR_RETURN(step.rule, String(s, "rule", path));
    PRISM_ASSIGN_OR_RETURN(step.direction, String(s, "direction", path));
    if (step.direction != "forward" && step.direction != "backward") {
      return Malformed(absl::StrCat(path, "direction: expected \"forward\" or \"backward\""));
    }
    const Json* pos = s.contains("position") ? &s["position"] : nullptr;
    if (pos == nullptr || !pos->is_array() ||
        !std::all_of(pos->begin(), pos->end(), [](const Json& x) { return x.is_number_integer(); })) {
      return Malformed(absl::StrCat(path, "position: expected an array of integers"));
    }
    for (const Json& x : *pos) step.position.push_back(x.get<int>());
    PRISM_ASSIGN_OR_RETURN(step.before, TermField(s, "before", path));
    PRISM_ASSIGN_OR_RETURN(step.after, TermField(s, "after", path));
    p.steps.push_back(std::move(step));
  }
  return p;
}

// ---- replay -----------------------------------------------------------------------------------
absl::StatusOr<Facts> WellFormed(const Tree& t, const Env& env, absl::string_view what) {
  Facts f = internal::ComputeFacts(t, env);
  if (!f.error.empty()) return Reject(absl::StrCat(what, " is ill-formed: ", f.error));
  if (!f.shape) return Reject(absl::StrCat(what, " has an unknown shape (an input missing from env.inputs?)"));
  return f;
}

std::string FactsString(const Facts& f) {
  if (f.axis) return absl::StrCat("@", *f.axis);
  std::string s = "[?]";
  if (f.shape) {
    std::vector<std::string> dims;
    for (const Size& d : *f.shape) dims.push_back(d.ToString());
    s = absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
  }
  if (f.value) {
    absl::StrAppend(&s, " = ", f.value->is_int ? f.value->integer.ToString() : absl::StrCat(f.value->real));
  }
  if (!f.deps.empty()) absl::StrAppend(&s, " deps{", absl::StrJoin(f.deps, ","), "}");
  return s;
}

absl::Status CheckRuleStep(const Rule& rule, const Step& s, const Tree& from, const Tree& to,
                           const Env& env, const std::string& where) {
  const std::string name = absl::StrCat("rule '", rule.name, "'", s.direction == "backward" ? " (backward)" : "");
  Binding b;
  if (!Match(rule.lhs, from, b)) {
    return Reject(absl::StrCat(where, name, " does not match at position ", internal::PathString(s.position),
                               ": ", internal::Abbrev(from), " is not an instance of ", internal::Print(rule.lhs)));
  }
  const Tree expected = Instantiate(rule.rhs, b);
  if (expected != to) {
    return Reject(absl::StrCat(where, name, " at position ", internal::PathString(s.position),
                               ": the right side gives ", internal::Abbrev(expected), ", the proof has ",
                               internal::Abbrev(to)));
  }
  std::map<std::string, Facts> facts;
  for (const auto& [var, tree] : b) facts.emplace(var, internal::ComputeFacts(*tree, env));
  for (const Condition& c : rule.conditions) {
    if (internal::Holds(c, facts, env)) continue;
    std::vector<std::string> vals;
    for (const Condition::Arg& a : c.args) {
      if (!a.var.empty()) vals.push_back(absl::StrCat("?", a.var, " = ", FactsString(facts.at(a.var))));
    }
    return Reject(absl::StrCat(where, name, " at position ", internal::PathString(s.position), ": condition ",
                               internal::ConditionString(c), " does not hold (", absl::StrJoin(vals, "; "), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckFoldStep(const Step& s, const Tree& from, const Tree& to, const Env& env,
                           const std::string& where) {
  const Facts f = internal::ComputeFacts(from, env);
  bool ok = false;
  if (f.error.empty() && f.value) {
    if (f.value->is_int) {
      std::optional<int64_t> v = f.value->integer.AsConst();
      ok = v && to.kind == Tree::Kind::kInt && to.i == *v;
    } else {
      ok = to.kind == Tree::Kind::kReal && std::bit_cast<uint64_t>(to.r) == std::bit_cast<uint64_t>(f.value->real);
    }
  }
  if (ok) return absl::OkStatus();
  return Reject(absl::StrCat(where, "const-fold at position ", internal::PathString(s.position), ": ",
                             internal::Abbrev(from), " does not fold to ", internal::Print(to)));
}

absl::Status Replay(const Proof& p, const std::map<std::string, Rule>& rules) {
  PRISM_ASSIGN_OR_RETURN(Facts start, WellFormed(p.start, p.env, "the start term"));
  PRISM_ASSIGN_OR_RETURN(Facts goal, WellFormed(p.goal, p.env, "the goal term"));
  if (*start.shape != *goal.shape) {
    return Reject(absl::StrCat("the start term has shape ", FactsString(start), " but the goal term has shape ",
                               FactsString(goal)));
  }
  if (p.steps.empty()) {
    return p.start == p.goal ? absl::OkStatus() : Reject("the proof has no steps, but start and goal differ");
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    const std::string where = absl::StrCat("step ", i + 1, ": ");
    if (i == 0 && s.before != p.start) return Reject("step 1: does not start at the start term");
    if (i > 0 && s.before != p.steps[i - 1].after) {
      return Reject(absl::StrCat(where, "does not start where step ", i, " ended"));
    }
    const Tree* b = internal::At(s.before, s.position);
    const Tree* a = internal::At(s.after, s.position);
    if (b == nullptr || a == nullptr) {
      return Reject(absl::StrCat(where, "position ", internal::PathString(s.position), " is not in the term"));
    }
    if (internal::Replace(s.before, s.position, 0, *a) != s.after) {
      return Reject(absl::StrCat(where, "the terms differ outside position ", internal::PathString(s.position)));
    }
    const bool forward = s.direction == "forward";
    const Tree& from = forward ? *b : *a;
    const Tree& to = forward ? *a : *b;
    if (s.kind == "rule") {
      auto it = rules.find(s.rule);
      if (it == rules.end()) {
        return Reject(absl::StrCat(where, "unknown rule '", s.rule, "' (not in the cited rule files)"));
      }
      PRISM_RETURN_IF_ERROR(CheckRuleStep(it->second, s, from, to, p.env, where));
    } else if (s.kind == "analysis" && s.rule == "const-fold") {
      PRISM_RETURN_IF_ERROR(CheckFoldStep(s, from, to, p.env, where));
    } else if (s.kind == "given") {
      return Reject(absl::StrCat(where, "'", s.rule, "' is an assumption (a given step), which cannot be checked"));
    } else {
      return Reject(absl::StrCat(where, "unknown step kind '", s.kind, "' with '", s.rule,
                                 "' (expected a rule, or the analysis const-fold)"));
    }
    PRISM_RETURN_IF_ERROR(WellFormed(s.after, p.env, absl::StrCat(where, "the term after the step")).status());
  }
  if (p.steps.back().after != p.goal) return Reject("the last step does not end at the goal term");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<RuleFile>> ReadRuleDirectory(absl::string_view dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(dir), ec)) {
    if (e.is_regular_file() && e.path().extension() == ".rules") names.push_back(e.path().filename().string());
  }
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list rule directory ", dir, ": ", ec.message()));
  std::sort(names.begin(), names.end());
  std::vector<RuleFile> files;
  for (const std::string& n : names) {
    PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(dir, n)));
    files.push_back({n, std::move(text)});
  }
  return files;
}

absl::StatusOr<ProofSummary> CheckProof(absl::string_view proof_json, absl::Span<const RuleFile> rule_files) {
  PRISM_ASSIGN_OR_RETURN(Proof p, ParseProof(proof_json));
  std::map<std::string, Rule> rules;
  ProofSummary sum;
  for (const auto& [name, hash] : p.files) {
    // An explicit capture: clang before 16 cannot capture a structured binding implicitly.
    auto f = std::find_if(rule_files.begin(), rule_files.end(),
                          [&name = name](const RuleFile& r) { return r.name == name; });
    if (f == rule_files.end()) {
      std::vector<std::string> given;
      for (const RuleFile& r : rule_files) given.push_back(r.name);
      return Reject(absl::StrCat("rule file '", name, "' cited by the proof is not among the rule files given (",
                                 given.empty() ? "none" : absl::StrJoin(given, ", "), ")"));
    }
    const std::string actual = HashToHex(StableHashBytes(f->text));
    if (actual != hash) {
      return Reject(absl::StrCat("rule file '", name, "' has hash ", actual, ", but the proof was made with hash ",
                                 hash, " (the rules changed since the proof was made)"));
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<Tree> forms, internal::ReadForms(f->text, name, true));
    for (const Tree& form : forms) {
      PRISM_ASSIGN_OR_RETURN(Rule r, ReadRule(name, form));
      const std::string where = r.where;
      auto [it, fresh] = rules.emplace(r.name, std::move(r));
      if (!fresh) {
        return Reject(absl::StrCat("rule '", it->first, "' (", where, "): duplicate name (first defined at ",
                                   it->second.where, ")"));
      }
    }
    sum.rule_files.push_back(absl::StrCat(name, " ", hash));
  }
  PRISM_RETURN_IF_ERROR(Replay(p, rules));
  sum.version = p.version;
  sum.start = p.start_text;
  sum.goal = p.goal_text;
  sum.steps = p.steps.size();
  for (const auto& [name, shape] : p.env.inputs) {
    std::vector<std::string> dims;
    for (const Size& d : shape) dims.push_back(d.ToString());
    sum.inputs.push_back(absl::StrCat(name, ": [", absl::StrJoin(dims, ", "), "]"));
  }
  for (const auto& [name, degree] : p.env.axes) sum.axes.push_back(absl::StrCat(name, ": ", degree.ToString()));
  for (const Step& s : p.steps) {
    if (s.kind != "rule") continue;
    ++sum.rule_steps;
    if (!Contains(sum.rules_used, s.rule)) sum.rules_used.push_back(s.rule);
  }
  return sum;
}

}  // namespace prism::proofcheck
