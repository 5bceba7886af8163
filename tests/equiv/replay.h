// Test helper: an independent replay of flat proofs (explain.h). It shares nothing with the
// prover's e-graph, matcher or explanation code: it matches rule patterns against plain term
// trees, instantiates right sides, recomputes the side conditions' data over the bound
// subterms, and checks that consecutive terms differ only at the rewritten position. The
// later `prism check-proof` generalizes it. The pattern trees and predicate functions come
// from the rule files and condition.h: they *are* the rules being checked.
//
//   absl::Status s = ReplayProof(proof, rules, env, ctx);   // OK, or what is wrong where
#ifndef PRISM_TESTS_EQUIV_REPLAY_H_
#define PRISM_TESTS_EQUIV_REPLAY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prism/equiv/condition.h"
#include "prism/equiv/explain.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"

namespace prism::equiv::testing {

// Binds pattern node `p` of `pat` against term node `t` of `term`; bindings by slot.
inline bool MatchTree(const Pattern& pat, int p, const Term& term, uint32_t t,
                      std::vector<std::optional<uint32_t>>& binding) {
  const Pattern::Node& pn = pat.nodes()[p];
  if (pn.var >= 0) {
    if (binding[pn.var].has_value()) return SubtermsEqual(term, *binding[pn.var], term, t);
    binding[pn.var] = t;
    return true;
  }
  const TermNode& tn = term.node(t);
  if (tn.op != pn.op || tn.payload != pn.payload || tn.children.size() != pn.children.size()) {
    return false;
  }
  for (size_t i = 0; i < pn.children.size(); ++i) {
    if (!MatchTree(pat, pn.children[i], term, tn.children[i], binding)) return false;
  }
  return true;
}

inline uint32_t InstantiateTree(const Pattern& pat, int p, const Term& from,
                                const std::vector<std::optional<uint32_t>>& binding, Term& out) {
  const Pattern::Node& pn = pat.nodes()[p];
  if (pn.var >= 0) return out.Append(from, *binding[pn.var]);
  TermNode n{pn.op, pn.payload, {}};
  for (int c : pn.children) n.children.push_back(InstantiateTree(pat, c, from, binding, out));
  return out.Add(std::move(n));
}

// Checks one rewrite of subterm `from` into subterm `to` by rule `r` (left to right).
inline absl::Status CheckRuleInstance(const Rewrite& r, const Term& from, const Term& to,
                                      TensorEnv& env, const ExprContext* ctx) {
  std::vector<std::optional<uint32_t>> binding(r.var_names().size());
  if (!MatchTree(r.lhs, r.lhs.root(), from, from.root(), binding)) {
    return absl::InvalidArgumentError(absl::StrCat("rule ", r.name, ": ", from.ToString(ctx),
                                                   " is not an instance of ", r.lhs.ToString(ctx)));
  }
  Term expected;
  InstantiateTree(r.rhs, r.rhs.root(), from, binding, expected);
  if (!(expected == to)) {
    return absl::InvalidArgumentError(absl::StrCat("rule ", r.name, ": right side gives ",
                                                   expected.ToString(ctx), ", proof has ",
                                                   to.ToString(ctx)));
  }
  // Side conditions over the data of the bound subterms.
  std::vector<TensorData> data(binding.size());
  for (size_t i = 0; i < binding.size(); ++i) {
    if (binding[i].has_value()) data[i] = ComputeTermData(env, from.Subterm(*binding[i])).back();
  }
  for (const Condition& c : r.conditions) {
    auto data_of = [&](int slot) -> const TensorData* {
      return binding[slot].has_value() ? &data[slot] : nullptr;
    };
    if (!EvaluateCondition(c, data_of, &env)) {
      return absl::InvalidArgumentError(absl::StrCat("rule ", r.name, ": condition ",
                                                     c.ToString(r.var_names()), " fails on ",
                                                     from.ToString(ctx)));
    }
  }
  return absl::OkStatus();
}

inline absl::Status ReplayProof(const Explanation& proof, const RuleSet& rules, TensorEnv env,
                                const ExprContext* ctx) {
  DeclareAxes(env, proof.start);
  DeclareAxes(env, proof.goal);
  if (proof.steps.empty()) {
    if (proof.start == proof.goal) return absl::OkStatus();
    return absl::InvalidArgumentError("no steps, but start and goal differ");
  }
  if (!(proof.steps.front().before == proof.start)) {
    return absl::InvalidArgumentError("the first step does not start at the start term");
  }
  if (!(proof.steps.back().after == proof.goal)) {
    return absl::InvalidArgumentError("the last step does not end at the goal term");
  }
  for (size_t i = 0; i < proof.steps.size(); ++i) {
    const ProofStep& s = proof.steps[i];
    const std::string where = absl::StrCat("step ", i + 1, " (", s.rule.name(), "): ");
    if (i > 0 && !(proof.steps[i - 1].after == s.before)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "does not start where step ", i, " ended"));
    }
    std::optional<uint32_t> b = s.before.At(s.position), a = s.after.At(s.position);
    if (!b.has_value() || !a.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "position ", PathToString(s.position),
                                                     " is not in the term"));
    }
    const Term before_sub = s.before.Subterm(*b), after_sub = s.after.Subterm(*a);
    if (!(s.before.Replace(s.position, after_sub) == s.after)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the terms differ outside ",
                                                     PathToString(s.position)));
    }
    const bool fwd = s.direction == Direction::kForward;
    const Term& from = fwd ? before_sub : after_sub;
    const Term& to = fwd ? after_sub : before_sub;
    switch (s.kind) {
      case Justification::Kind::kRule: {
        const Rewrite* r = rules.Find(s.rule.name());
        if (r == nullptr) return absl::InvalidArgumentError(absl::StrCat(where, "unknown rule"));
        absl::Status st = CheckRuleInstance(*r, from, to, env, ctx);
        if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(where, st.message()));
        break;
      }
      case Justification::Kind::kAnalysis: {
        if (s.rule.name() != "const-fold") {
          return absl::InvalidArgumentError(absl::StrCat(where, "unknown analysis"));
        }
        const TensorData d = ComputeTermData(env, from).back();
        if (!d.value.has_value() || !d.value->concrete() || to.size() != 1 ||
            to.node(0).payload != LiteralFor(*d.value)) {
          return absl::InvalidArgumentError(absl::StrCat(where, from.ToString(ctx),
                                                         " does not fold to ", to.ToString(ctx)));
        }
        break;
      }
      default:
        return absl::InvalidArgumentError(absl::StrCat(where, "is neither a rule nor a fold"));
    }
  }
  return absl::OkStatus();
}

}  // namespace prism::equiv::testing

#endif  // PRISM_TESTS_EQUIV_REPLAY_H_
