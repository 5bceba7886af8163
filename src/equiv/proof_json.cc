#include "prism/equiv/proof_json.h"

#include <map>
#include <set>
#include <string>

#include "prism/equiv/language.h"

namespace prism::equiv {
namespace {

using Json = nlohmann::ordered_json;

Json SizeJson(const SymSize& s, const ExprContext* ctx) {
  if (std::optional<int64_t> c = s.const_value()) return *c;
  return s.ToString(ctx);
}

absl::string_view KindName(Justification::Kind k) {
  switch (k) {
    case Justification::Kind::kRule: return "rule";
    case Justification::Kind::kAnalysis: return "analysis";
    case Justification::Kind::kGiven: return "given";
    case Justification::Kind::kCongruence: return "congruence";
  }
  return "?";
}

}  // namespace

Json ProofToJson(const Explanation& proof, const TensorEnv& env, const RuleSet& rules,
                 const ExprContext* ctx) {
  Json j;
  j["format"] = "prism.proof";
  j["version"] = kProofFormatVersion;
  j["rule_files"] = Json::array();
  for (const RuleSource& s : rules.sources()) j["rule_files"].push_back({{"name", s.name}, {"hash", s.hash}});

  std::set<std::string> inputs;
  CollectInputs(proof.start, inputs);
  CollectInputs(proof.goal, inputs);
  TensorEnv declared = env;
  declared.ctx = ctx;
  DeclareAxes(declared, proof.start);
  DeclareAxes(declared, proof.goal);
  for (const ProofStep& s : proof.steps) {
    DeclareAxes(declared, s.before);
    DeclareAxes(declared, s.after);
  }
  Json jin = Json::array();
  for (const std::string& name : inputs) {
    auto it = env.leaves.find(Symbol(name));
    if (it == env.leaves.end()) continue;
    Json shape = Json::array();
    for (const SymSize& d : it->second) shape.push_back(SizeJson(d, ctx));
    jin.push_back({{"name", name}, {"shape", shape}});
  }
  std::map<std::string, Json> axes;  // sorted by name
  for (const auto& [axis, degree] : declared.extents) axes[std::string(axis.name())] = SizeJson(degree, ctx);
  Json jax = Json::array();
  for (const auto& [name, degree] : axes) jax.push_back({{"name", name}, {"degree", degree}});
  j["env"] = {{"inputs", jin}, {"axes", jax}};

  j["start"] = proof.start.ToString(ctx);
  j["goal"] = proof.goal.ToString(ctx);
  j["steps"] = Json::array();
  for (const ProofStep& s : proof.steps) {
    j["steps"].push_back({{"kind", KindName(s.kind)},
                          {"rule", s.rule.name()},
                          {"direction", DirectionName(s.direction)},
                          {"position", s.position},
                          {"before", s.before.ToString(ctx)},
                          {"after", s.after.ToString(ctx)}});
  }
  return j;
}

}  // namespace prism::equiv
