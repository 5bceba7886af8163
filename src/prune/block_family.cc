// BuildFamily (block_family.h).
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "prism/base/status.h"
#include "prism/prune/block_family.h"
#include "prism/block/block_resources.h"

namespace prism {
namespace {

// "split.W.1" from a constraint reason "tensor W dim 1 is split by ...".
std::string ConstraintBase(absl::string_view reason) {
  std::vector<std::string> words = absl::StrSplit(reason, ' ');
  if (words.size() >= 4 && words[0] == "tensor" && words[2] == "dim") {
    return absl::StrCat("split.", words[1], ".", words[3]);
  }
  return "split";
}

}  // namespace

absl::StatusOr<prune::Family> BuildFamily(const SGraph& graph, ExprContext& ctx) {
  PRISM_ASSIGN_OR_RETURN(SGraphAnalysis info, Validate(graph));
  PRISM_ASSIGN_OR_RETURN(SGraphResources res, ComputeResources(graph, info));
  prune::Family family(graph.name().empty() ? "sgraph" : graph.name(), ctx);
  family.set_description(
      absl::StrCat("sGraph ", graph.name(), ": ", graph.kernels().size(), " kernel(s)"));
  for (const Param& p : graph.params()) {
    PRISM_ASSIGN_OR_RETURN(
        Expr v, family.AddParameter(p.name, graph.ctx().var_domain(p.var), ParamRoleName(p.role)));
    (void)v;
  }
  // One constraint per distinct condition; the reasons of duplicates are joined.
  std::vector<std::pair<Expr, std::vector<std::string>>> distinct;
  absl::flat_hash_map<Expr, size_t> index;
  for (const Constraint& c : info.constraints) {
    const Expr e = ctx.Import(graph.ctx(), c.condition);
    auto [it, inserted] = index.try_emplace(e, distinct.size());
    if (inserted) distinct.push_back({e, {}});
    distinct[it->second].second.push_back(c.reason);
  }
  absl::flat_hash_set<std::string> names;
  for (const auto& [e, reasons] : distinct) {
    const std::string base = ConstraintBase(reasons.front());
    std::string name = base;
    for (int n = 2; !names.insert(name).second; ++n) name = absl::StrCat(base, ".", n);
    PRISM_RETURN_IF_ERROR(family.AddConstraint(name, e, absl::StrJoin(reasons, "; ")));
  }
  for (const auto& [name, e] : res.metrics) {
    PRISM_RETURN_IF_ERROR(family.SetMetric(name, ctx.Import(graph.ctx(), e)));
  }
  return family;
}

}  // namespace prism
