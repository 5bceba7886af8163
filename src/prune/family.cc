#include "prism/prune/family.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <memory>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/expr/expr_json.h"
#include "prism/expr/parse.h"

namespace prism::prune {

const std::vector<MetricInfo>& StandardMetrics() {
  static const std::vector<MetricInfo> metrics = {
      {kSmemBytes, "0", "bytes", "shared memory per block (static + dynamic)"},
      {kRegsPerThread, "0", "registers", "32-bit registers per thread"},
      {kThreadsPerBlock, "1", "threads", "threads per block"},
      {kGridX, "1", "blocks", "grid size along x"},
      {kGridY, "1", "blocks", "grid size along y"},
      {kGridZ, "1", "blocks", "grid size along z"},
      {kGridBlocks, "grid_x * grid_y * grid_z", "blocks", "blocks per launch"},
      {kDramBytes, "0", "bytes", "unique bytes read and written (DRAM traffic lower bound)"},
      {kL2Bytes, "dram_bytes", "bytes", "bytes loaded by all blocks (through L2)"},
      {kFlops, "0", "flops", "arithmetic work (a multiply-add is 2 flops)"},
      {kSfuOps, "0", "ops", "special-function operations (exp, rsqrt, ...)"},
      {kKernels, "1", "launches", "kernel launches"},
  };
  return metrics;
}

namespace {

const MetricInfo* FindStandardMetric(absl::string_view name) {
  for (const MetricInfo& m : StandardMetrics()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string StandardMetricList() {
  std::vector<std::string> names;
  for (const MetricInfo& m : StandardMetrics()) names.emplace_back(m.name);
  return absl::StrJoin(names, ", ");
}

bool IsName(absl::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

}  // namespace

struct Family::Plan {
  CompiledExprs program;  // roots: constraints_ in order, then StandardMetrics() in order
};

struct Family::PlanSlot {
  std::once_flag once;
  std::unique_ptr<const Plan> plan;
};

Family::Family(std::string name, ExprContext& ctx)
    : name_(std::move(name)), ctx_(&ctx), plan_(std::make_shared<PlanSlot>()) {}

const Family::Plan& Family::GetPlan() const {
  if (plan_ == nullptr) plan_ = std::make_shared<PlanSlot>();  // a moved-from family
  PlanSlot& slot = *plan_;
  std::call_once(slot.once, [&] {
    std::vector<Expr> roots;
    roots.reserve(constraints_.size() + StandardMetrics().size());
    for (const NamedConstraint& c : constraints_) roots.push_back(c.condition);
    for (const MetricInfo& m : StandardMetrics()) roots.push_back(MetricOrDefault(m.name));
    std::vector<Expr> vars;
    vars.reserve(parameters_.size());
    for (const Parameter& p : parameters_) vars.push_back(p.var);
    auto plan = std::make_unique<Plan>();
    plan->program = CompiledExprs(*ctx_, roots, vars);
    slot.plan = std::move(plan);
  });
  return *slot.plan;
}

bool Family::RunPlan(absl::Span<const int64_t> values, Numbers& out) const {
  const Plan& plan = GetPlan();
  plan.program.Run(values, out.scratch);
  const size_t nc = constraints_.size();
  const size_t nm = StandardMetrics().size();
  out.holds.resize(nc);
  out.metrics.resize(nm);
  for (size_t i = 0; i < nc + nm; ++i) {
    if (!plan.program.ok(out.scratch, i)) return false;
    const int64_t v = plan.program.value(out.scratch, i);
    if (i < nc) {
      out.holds[i] = v;
    } else {
      out.metrics[i - nc] = v;
    }
  }
  return true;
}

absl::StatusOr<bool> Family::EvaluateNumbers(absl::Span<const int64_t> values,
                                            Numbers& out) const {
  PRISM_CHECK(values.size() == parameters_.size(), "family ", name_, ": ", values.size(),
              " values for ", parameters_.size(), " parameters");
  for (size_t i = 0; i < values.size(); ++i) {
    if (!parameters_[i].domain.Contains(values[i])) return false;
  }
  if (RunPlan(values, out)) return true;
  // A constraint or metric has no value: Evaluate's error, with its message.
  Assignment a;
  for (size_t i = 0; i < values.size(); ++i) a[parameters_[i].name] = values[i];
  const absl::StatusOr<Evaluation> slow = EvaluateSlowly(a);
  PRISM_CHECK(!slow.ok(), "family ", name_,
              ": the compiled evaluation failed where the tree evaluation succeeded");
  return slow.status();
}

const Parameter* Family::FindParameter(absl::string_view name) const {
  for (const Parameter& p : parameters_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::StatusOr<Expr> Family::AddParameter(absl::string_view name, const Domain& domain,
                                          absl::string_view doc) {
  if (FindParameter(name) != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate parameter '", name, "'"));
  }
  if (constants_.count(std::string(name)) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "' has the name of a constant"));
  }
  PRISM_ASSIGN_OR_RETURN(Expr var, ctx_->Var(name, domain));
  parameters_.push_back(Parameter{std::string(name), domain, var, std::string(doc)});
  plan_ = std::make_shared<PlanSlot>();
  return var;
}

absl::Status Family::AddConstant(absl::string_view name, int64_t value) {
  // Constants are parsed as variables (Parse), so they follow the variable naming rules.
  if (ExprContext probe; !probe.Var(name, *Domain::Set({value})).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant name '", name, "' is not an identifier or is a keyword"));
  }
  if (FindParameter(name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant '", name, "' has the name of a parameter"));
  }
  if (!constants_.emplace(std::string(name), value).second) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate constant '", name, "'"));
  }
  return absl::OkStatus();
}

absl::Status Family::CheckOverParameters(absl::string_view what, Expr e) const {
  for (Expr v : FreeVars(*ctx_, e)) {
    const Parameter* p = FindParameter(ctx_->var_name(v));
    if (p == nullptr || p->var != v) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": variable '", ctx_->var_name(v),
                                                     "' is not a parameter of the family"));
    }
  }
  return absl::OkStatus();
}

absl::Status Family::AddConstraint(absl::string_view name, Expr condition,
                                   absl::string_view why) {
  if (!IsName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "constraint name '", name, "' is not a name (letters, digits, '_', '.')"));
  }
  for (const NamedConstraint& c : constraints_) {
    if (c.name == name) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate constraint '", name, "'"));
    }
  }
  if (ctx_->sort(condition) != Sort::kBool) {
    return absl::InvalidArgumentError(absl::StrCat("constraint ", name, ": '",
                                                   ctx_->ToString(condition),
                                                   "' is an integer, expected a condition"));
  }
  PRISM_RETURN_IF_ERROR(CheckOverParameters(absl::StrCat("constraint ", name), condition));
  constraints_.push_back(NamedConstraint{std::string(name), condition, std::string(why)});
  plan_ = std::make_shared<PlanSlot>();
  return absl::OkStatus();
}

absl::Status Family::SetMetric(absl::string_view name, Expr value) {
  if (FindStandardMetric(name) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("metric '", name,
                                                   "' is unknown, expected one of ",
                                                   StandardMetricList()));
  }
  if (ctx_->sort(value) != Sort::kInt) {
    return absl::InvalidArgumentError(absl::StrCat("metric ", name, ": '", ctx_->ToString(value),
                                                   "' is a condition, expected an integer"));
  }
  PRISM_RETURN_IF_ERROR(CheckOverParameters(absl::StrCat("metric ", name), value));
  metrics_[std::string(name)] = value;
  plan_ = std::make_shared<PlanSlot>();
  return absl::OkStatus();
}

absl::StatusOr<Expr> Family::Parse(absl::string_view text) const {
  // Parse in a scratch context where parameters and constants are variables, substitute the
  // constants, then import into ctx(): ctx() never sees a constant as a variable.
  ExprContext scratch;
  absl::flat_hash_map<Expr, Expr> constants;
  for (const Parameter& p : parameters_) {
    PRISM_CHECK(scratch.Var(p.name, p.domain).ok(), "parameter ", p.name);
  }
  for (const auto& [name, value] : constants_) {
    absl::StatusOr<Expr> v = scratch.Var(name, *Domain::Set({value}));
    PRISM_CHECK(v.ok(), "constant ", name);
    constants.emplace(*v, scratch.Const(value));
  }
  absl::StatusOr<Expr> parsed = ParseExpr(scratch, text);
  if (!parsed.ok()) {
    const std::string message(parsed.status().message());
    // Unknown identifiers: say what may be used here.
    if (message.find("unknown variable") != std::string::npos) {
      std::vector<std::string> names;
      for (const Parameter& p : parameters_) names.push_back(p.name);
      for (const auto& [name, value] : constants_) names.push_back(name);
      return absl::InvalidArgumentError(absl::StrCat(
          message.substr(0, message.find(" (declare")), ": not a parameter or constant",
          names.empty() ? std::string() : absl::StrCat(" (known: ", absl::StrJoin(names, ", "), ")")));
    }
    return parsed.status();
  }
  return ctx_->Import(scratch, Substitute(scratch, *parsed, constants));
}

absl::Status Family::AddConstraintText(absl::string_view name, absl::string_view text,
                                       absl::string_view why) {
  absl::StatusOr<Expr> e = Parse(text);
  if (!e.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("constraint ", name, ": ", e.status().message()));
  }
  return AddConstraint(name, *e, why);
}

absl::Status Family::SetMetricText(absl::string_view name, absl::string_view text) {
  absl::StatusOr<Expr> e = Parse(text);
  if (!e.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("metric ", name, ": ", e.status().message()));
  }
  return SetMetric(name, *e);
}

bool Family::HasMetric(absl::string_view name) const {
  // A scan: at most StandardMetrics().size() entries, and no key string built (the pruner asks
  // for every metric of a family at each instance it checks).
  return std::any_of(metrics_.begin(), metrics_.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

Expr Family::MetricOrDefault(absl::string_view name) const {
  auto it = metrics_.find(std::string(name));
  if (it != metrics_.end()) return it->second;
  const MetricInfo* info = FindStandardMetric(name);
  PRISM_CHECK(info != nullptr, "not a standard metric: ", name);
  if (name == kGridBlocks) {
    return ctx_->Mul({MetricOrDefault(kGridX), MetricOrDefault(kGridY), MetricOrDefault(kGridZ)});
  }
  if (name == kL2Bytes) return MetricOrDefault(kDramBytes);
  // The other defaults are integer literals: no parse (Evaluate asks for every metric of
  // every instance it checks).
  if (int64_t v = 0; absl::SimpleAtoi(info->default_value, &v)) return ctx_->Const(v);
  absl::StatusOr<Expr> e = ParseIntExpr(*ctx_, info->default_value);
  PRISM_CHECK(e.ok(), "default of ", name, ": ", e.status().message());
  return *e;
}

int64_t Family::SpaceSize() const {
  int64_t size = 1;
  for (const Parameter& p : parameters_) {
    if (__builtin_mul_overflow(size, p.domain.Size(), &size)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return size;
}

absl::Status Family::ForEachAssignment(const std::function<bool(const Assignment&)>& fn,
                                       int64_t max_count) const {
  const int64_t size = SpaceSize();
  if (size > max_count) {
    return absl::InvalidArgumentError(absl::StrCat("family ", name_, " has ", size,
                                                   " assignments, more than the limit ",
                                                   max_count));
  }
  std::vector<std::vector<int64_t>> values;
  for (const Parameter& p : parameters_) {
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> v, p.domain.Enumerate(max_count));
    values.push_back(std::move(v));
  }
  std::vector<size_t> index(values.size(), 0);
  Assignment a;
  while (true) {
    for (size_t i = 0; i < values.size(); ++i) a[parameters_[i].name] = values[i][index[i]];
    if (!fn(a)) return absl::OkStatus();
    // Odometer, last parameter fastest.
    size_t i = values.size();
    while (i > 0) {
      --i;
      if (++index[i] < values[i].size()) break;
      index[i] = 0;
      if (i == 0) return absl::OkStatus();
    }
    if (values.empty()) return absl::OkStatus();
  }
}

bool Family::ValuesOf(const Assignment& assignment, std::vector<int64_t>& values) const {
  values.clear();
  for (const Parameter& p : parameters_) {
    auto it = assignment.find(p.name);
    if (it == assignment.end()) return false;
    values.push_back(it->second);
  }
  return assignment.size() == values.size();  // else it names something else too
}

absl::StatusOr<Family::Evaluation> Family::Evaluate(const Assignment& assignment) const {
  // The compiled plan where it answers; the tree evaluator for what it does not carry (names
  // that are not parameters, unassigned ones, domain violations).
  thread_local std::vector<int64_t> values;
  thread_local Numbers numbers;
  if (!ValuesOf(assignment, values)) return EvaluateSlowly(assignment);
  PRISM_ASSIGN_OR_RETURN(bool in_domains, EvaluateNumbers(values, numbers));
  if (!in_domains) return EvaluateSlowly(assignment);
  Evaluation ev;
  for (size_t i = 0; i < constraints_.size(); ++i) {
    if (numbers.holds[i] == 0) ev.violated_constraints.push_back(constraints_[i].name);
  }
  for (size_t j = 0; j < StandardMetrics().size(); ++j) {
    ev.metrics.emplace(std::string(StandardMetrics()[j].name), numbers.metrics[j]);
  }
  return ev;
}

absl::StatusOr<Family::Evaluation> Family::EvaluateSlowly(const Assignment& assignment) const {
  for (const auto& [name, value] : assignment) {
    if (FindParameter(name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("assignment names '", name,
                                                     "', which is not a parameter of family ",
                                                     name_));
    }
  }
  Evaluation ev;
  for (const Parameter& p : parameters_) {
    auto it = assignment.find(p.name);
    if (it == assignment.end()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", p.name, "' is not assigned"));
    }
    if (!p.domain.Contains(it->second)) {
      ev.domain_violations.push_back(
          absl::StrCat(p.name, " = ", it->second, " is not in ", p.domain.ToString()));
    }
  }
  if (!ev.domain_violations.empty()) return ev;
  // One evaluator for all of them: the constraints and metrics share most subexpressions
  // (tile sizes, grid products), and this runs for every enumerated instance.
  AssignmentEvaluator values(*ctx_, assignment);
  for (const NamedConstraint& c : constraints_) {
    absl::StatusOr<bool> holds = values.EvaluateBool(c.condition);
    if (!holds.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("constraint ", c.name, ": ", holds.status().message()));
    }
    if (!*holds) ev.violated_constraints.push_back(c.name);
  }
  for (const MetricInfo& m : StandardMetrics()) {
    absl::StatusOr<int64_t> v = values.EvaluateInt(MetricOrDefault(m.name));
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("metric ", m.name, ": ", v.status().message()));
    }
    ev.metrics.emplace(std::string(m.name), *v);
  }
  return ev;
}

nlohmann::json Family::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  j["name"] = name_;
  if (!description_.empty()) j["description"] = description_;
  if (!constants_.empty()) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [name, value] : constants_) c[name] = value;
    j["constants"] = c;
  }
  nlohmann::json params = nlohmann::json::array();
  for (const Parameter& p : parameters_) {
    nlohmann::json pj = {{"name", p.name}, {"domain", p.domain.ToString()}};
    if (!p.doc.empty()) pj["doc"] = p.doc;
    params.push_back(pj);
  }
  j["parameters"] = params;
  nlohmann::json constraints = nlohmann::json::array();
  for (const NamedConstraint& c : constraints_) {
    nlohmann::json cj = {{"name", c.name}, {"condition", ctx_->ToString(c.condition)}};
    if (!c.why.empty()) cj["why"] = c.why;
    constraints.push_back(cj);
  }
  j["constraints"] = constraints;
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, e] : metrics_) metrics[name] = ctx_->ToString(e);
  j["metrics"] = metrics;
  return j;
}

namespace {

absl::Status JsonError(absl::string_view family, absl::string_view path,
                       absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("family ", family, ": ", path, ": ", message));
}

absl::Status CheckKeys(const nlohmann::json& j, absl::string_view family, absl::string_view path,
                       const std::vector<std::string>& allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return JsonError(family, path.empty() ? it.key() : absl::StrCat(path, ".", it.key()),
                       absl::StrCat("unknown key, expected one of ", absl::StrJoin(allowed, ", ")));
    }
  }
  return absl::OkStatus();
}

// The string at j[key]; `required` → error when absent.
absl::StatusOr<std::string> StringField(const nlohmann::json& j, const char* key, bool required,
                                        absl::string_view family, absl::string_view path) {
  auto it = j.find(key);
  const std::string where = path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  if (it == j.end()) {
    if (required) return JsonError(family, where, "missing (a string is required)");
    return std::string();
  }
  if (!it->is_string()) {
    return JsonError(family, where, absl::StrCat("expected a string, found ", it->dump()));
  }
  return it->get<std::string>();
}

std::string Where(absl::string_view family, absl::string_view path, const absl::Status& s) {
  return absl::StrCat("family ", family, ": ", path, ": ", s.message());
}

}  // namespace

absl::StatusOr<Family> Family::FromJson(const nlohmann::json& j, ExprContext& ctx) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("family: expected a JSON object, found ", j.type_name()));
  }
  auto name_it = j.find("name");
  if (name_it == j.end() || !name_it->is_string() || name_it->get<std::string>().empty()) {
    return absl::InvalidArgumentError("family: missing \"name\" (a non-empty string)");
  }
  const std::string fname = name_it->get<std::string>();
  PRISM_RETURN_IF_ERROR(CheckKeys(j, fname, "",
                                  {"name", "description", "constants", "parameters",
                                   "constraints", "metrics"}));
  Family f(fname, ctx);
  PRISM_ASSIGN_OR_RETURN(f.description_, StringField(j, "description", false, fname, ""));

  if (auto it = j.find("constants"); it != j.end()) {
    if (!it->is_object()) {
      return JsonError(fname, "constants",
                       absl::StrCat("expected an object of name: integer, found ", it->dump()));
    }
    for (auto c = it->begin(); c != it->end(); ++c) {
      const std::string path = absl::StrCat("constants.", c.key());
      if (!c->is_number_integer() ||
          (c->is_number_unsigned() &&
           c->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
        return JsonError(fname, path, absl::StrCat("expected a 64-bit integer, found ", c->dump()));
      }
      absl::Status s = f.AddConstant(c.key(), c->get<int64_t>());
      if (!s.ok()) return JsonError(fname, path, s.message());
    }
  }

  auto params_it = j.find("parameters");
  if (params_it == j.end() || !params_it->is_array()) {
    return JsonError(fname, "parameters", "missing or not an array");
  }
  for (size_t i = 0; i < params_it->size(); ++i) {
    const nlohmann::json& p = (*params_it)[i];
    const std::string path = absl::StrCat("parameters[", i, "]");
    if (!p.is_object()) {
      return JsonError(fname, path, absl::StrCat("expected an object, found ", p.dump()));
    }
    PRISM_RETURN_IF_ERROR(CheckKeys(p, fname, path, {"name", "domain", "doc"}));
    PRISM_ASSIGN_OR_RETURN(std::string pname, StringField(p, "name", true, fname, path));
    PRISM_ASSIGN_OR_RETURN(std::string doc, StringField(p, "doc", false, fname, path));
    auto d = p.find("domain");
    if (d == p.end()) return JsonError(fname, absl::StrCat(path, ".domain"), "missing");
    absl::StatusOr<Domain> domain = Domain::FromJson(*d);
    if (!domain.ok()) {
      return absl::InvalidArgumentError(
          Where(fname, absl::StrCat(path, ".domain"), domain.status()));
    }
    absl::StatusOr<Expr> added = f.AddParameter(pname, *domain, doc);
    if (!added.ok()) return absl::InvalidArgumentError(Where(fname, path, added.status()));
  }

  if (auto it = j.find("constraints"); it != j.end()) {
    if (!it->is_array()) return JsonError(fname, "constraints", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& c = (*it)[i];
      const std::string path = absl::StrCat("constraints[", i, "]");
      if (!c.is_object()) {
        return JsonError(fname, path, absl::StrCat("expected an object, found ", c.dump()));
      }
      PRISM_RETURN_IF_ERROR(CheckKeys(c, fname, path, {"name", "condition", "why"}));
      PRISM_ASSIGN_OR_RETURN(std::string cname, StringField(c, "name", true, fname, path));
      PRISM_ASSIGN_OR_RETURN(std::string text, StringField(c, "condition", true, fname, path));
      PRISM_ASSIGN_OR_RETURN(std::string why, StringField(c, "why", false, fname, path));
      absl::StatusOr<Expr> e = f.Parse(text);
      if (!e.ok()) {
        return absl::InvalidArgumentError(
            Where(fname, absl::StrCat(path, ".condition"),
                  absl::InvalidArgumentError(absl::StrCat("'", text, "': ", e.status().message()))));
      }
      absl::Status s = f.AddConstraint(cname, *e, why);
      if (!s.ok()) return absl::InvalidArgumentError(Where(fname, path, s));
    }
  }

  if (auto it = j.find("metrics"); it != j.end()) {
    if (!it->is_object()) return JsonError(fname, "metrics", "expected an object of name: expression");
    for (auto m = it->begin(); m != it->end(); ++m) {
      const std::string path = absl::StrCat("metrics.", m.key());
      if (FindStandardMetric(m.key()) == nullptr) {
        return JsonError(fname, path,
                         absl::StrCat("unknown metric, expected one of ", StandardMetricList()));
      }
      absl::StatusOr<Expr> e = m->is_string() ? f.Parse(m->get<std::string>())
                                              : ExprFromJson(ctx, *m);
      if (!e.ok()) {
        const std::string quoted = m->is_string() ? absl::StrCat("'", m->get<std::string>(), "': ")
                                                  : std::string();
        return JsonError(fname, path, absl::StrCat(quoted, e.status().message()));
      }
      absl::Status s = f.SetMetric(m.key(), *e);
      if (!s.ok()) return absl::InvalidArgumentError(Where(fname, path, s));
    }
  }
  return f;
}

uint64_t Family::StableHash() const {
  StableHasher h;
  h.Add("family").Add(name_);
  h.Add(static_cast<uint64_t>(parameters_.size()));
  for (const Parameter& p : parameters_) h.Add(p.name).Add(p.domain.StableHash());
  h.Add(static_cast<uint64_t>(constraints_.size()));
  for (const NamedConstraint& c : constraints_) {
    h.Add(c.name).Add(ctx_->structural_hash(c.condition));
  }
  h.Add(static_cast<uint64_t>(metrics_.size()));
  for (const auto& [name, e] : metrics_) h.Add(name).Add(ctx_->structural_hash(e));
  return h.Finish();
}

}  // namespace prism::prune
