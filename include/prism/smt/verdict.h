// The answer of every solver query in prism: proved, refuted, or unknown — never a bool.
//
//   CheckResult r = solver.Check("prune.decide", budget);
//   if (r.verdict == Verdict::kProved) { ... r.core names the rules ... }
//   LOG << VerdictName(r.verdict) << ": " << r.reason;
#ifndef PRISM_SMT_VERDICT_H_
#define PRISM_SMT_VERDICT_H_

#include "absl/strings/string_view.h"

namespace prism {

// kProved:   the property holds (for a satisfiability query: the assertions are unsat).
// kRefuted:  the property fails and a counterexample exists (the assertions are sat; the
//            model is the counterexample / witness).
// kUnknown:  the solver gave up (budget, incompleteness); the reason says why. Callers must
//            treat it as "cannot conclude": pruning never acts on kUnknown.
enum class Verdict { kProved, kRefuted, kUnknown };

// "proved", "refuted", "unknown".
absl::string_view VerdictName(Verdict verdict);

}  // namespace prism

#endif  // PRISM_SMT_VERDICT_H_
