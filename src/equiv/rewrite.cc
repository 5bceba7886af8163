#include "prism/equiv/rewrite.h"

#include "absl/strings/str_cat.h"
#include "prism/equiv/tensor_analysis.h"

namespace prism::equiv {

bool Rewrite::ConditionsHold(const EGraph& g, const Subst& subst) const {
  if (conditions.empty()) return true;
  const auto* analysis = dynamic_cast<const TensorAnalysis*>(g.analysis());
  if (analysis == nullptr) return false;
  auto data_of = [&](int slot) -> const TensorData* {
    if (slot < 0 || static_cast<size_t>(slot) >= subst.size() || !subst[slot].valid()) return nullptr;
    return &analysis->data(g.Find(subst[slot]));
  };
  for (const Condition& c : conditions) {
    if (!EvaluateCondition(c, data_of, &analysis->env())) return false;
  }
  return true;
}

size_t Rewrite::Apply(EGraph& g, const std::vector<SearchMatch>& matches) const {
  const Justification why = Justification::Rule(Symbol(name), reversed);
  Analysis* analysis = g.analysis();
  if (analysis != nullptr) analysis->SetOrigin(absl::StrCat("rule ", name, reversed ? " (reversed)" : ""));
  size_t changed = 0;
  for (const SearchMatch& m : matches) {
    for (const Subst& s : m.substs) {
      if (!ConditionsHold(g, s)) continue;
      const EClassId from = g.options().explanations ? lhs.Instantiate(g, s) : m.eclass;
      const EClassId to = rhs.Instantiate(g, s);
      if (g.Union(from, to, why)) ++changed;
    }
  }
  if (analysis != nullptr) analysis->SetOrigin("");
  return changed;
}

std::string Rewrite::ToString(const ExprContext* ctx) const {
  std::string s = absl::StrCat("(rule ", name, " ", lhs.ToString(ctx), " => ", rhs.ToString(ctx));
  if (!conditions.empty()) {
    s += " if";
    for (const Condition& c : conditions) absl::StrAppend(&s, " ", c.ToString(var_names()));
  }
  return s + ")";
}

}  // namespace prism::equiv
