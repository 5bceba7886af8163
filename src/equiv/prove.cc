#include "prism/equiv/prove.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "prism/equiv/egraph.h"

namespace prism::equiv {

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kProved: return "proved";
    case Verdict::kRefuted: return "refuted";
    case Verdict::kUnknown: return "unknown";
  }
  return "?";
}

ProveResult ProveEquivalent(ExprContext& ctx, const TensorEnv& env, const Term& a, const Term& b,
                            const RuleSet& rules, const ProveOptions& options) {
  const absl::Time start = absl::Now();
  TensorEnv e = env;
  e.ctx = &ctx;
  auto owned = std::make_unique<TensorAnalysis>(std::move(e));
  TensorAnalysis* analysis = owned.get();
  EGraph g(&ctx, std::move(owned));
  const EClassId ia = g.AddTerm(a);
  const EClassId ib = g.AddTerm(b);
  ProveResult r;
  g.Rebuild();
  for (const auto& [id, which] : {std::pair{ia, "first"}, std::pair{ib, "second"}}) {
    const TensorData& d = analysis->data(g.Find(id));
    if (!d.error.empty()) {
      r.reason = absl::StrCat("the ", which, " term is ill-formed: ",
                              analysis->diagnostics().empty() ? d.error : analysis->diagnostics()[0]);
      r.diagnostics = analysis->diagnostics();
      r.time = absl::Now() - start;
      return r;
    }
  }
  Runner runner(&g, options.limits);
  runner.StopWhenEquivalent(ia, ib);
  r.stop = runner.Run(rules.rewrites());
  r.iterations = runner.iterations().size();
  r.nodes = g.num_nodes();
  r.classes = g.num_classes();
  r.diagnostics = analysis->diagnostics();
  if (g.Equivalent(ia, ib)) {
    absl::StatusOr<Explanation> ex = g.Explain(ia, ib);
    if (ex.ok()) {
      r.verdict = Verdict::kProved;
      r.reason = absl::StrCat("proved in ", ex->steps.size(), " steps");
      r.proof = *std::move(ex);
    } else {
      r.reason = absl::StrCat("equal, but no explanation: ", ex.status().message());
    }
  } else {
    r.reason = absl::StrCat("stopped (", StopReasonName(r.stop), ") without merging the terms");
    if (options.refute) {
      RandomTestResult t = RandomTest(ctx, env, a, b, options.random_test);
      if (t.outcome == RandomTestOutcome::kDiffer) {
        r.verdict = Verdict::kRefuted;
        r.reason = absl::StrCat("refuted by random testing ", t.counterexample->ToString());
        r.counterexample = std::move(t.counterexample);
      } else {
        absl::StrAppend(&r.reason, "; random testing ",
                        t.outcome == RandomTestOutcome::kAgree ? "" : "skipped: ", t.reason);
      }
    }
  }
  r.time = absl::Now() - start;
  return r;
}

}  // namespace prism::equiv
