// Rule files (smt_theories/equiv/*.rules; syntax in docs/rule_format.md):
//
//   ; diag(r)·(A·B) = (diag(r)·A)·B: a per-row scale commutes into the left factor.
//   (rule matmul-rowscale (mul (matmul ?a ?b) ?r) <=> (matmul (mul ?a ?r) ?b)
//     if (row-scale ?r ?a))
//
//   ExprContext ctx;
//   PRISM_ASSIGN_OR_RETURN(RuleSet rules, LoadDefaultRules(ctx));
//   Runner(&g).Run(rules.rewrites());
//
// The loader rejects, with InvalidArgument and an exact location:
//   syntax errors                        "FILE:LINE:COL: found X, expected Y"
//   unknown operators / wrong arity      "FILE:LINE:COL: unknown operator 'matmull'"
//   unknown predicates / wrong arguments "FILE:LINE:COL: predicate 'row-scale' takes 2 ..."
//   unbound variables                    "rule 'x' (FILE:3:1): right side uses ?c, which the
//                                          left side does not bind"
//   duplicate names                      "rule 'x' (FILE:9:1): duplicate name (first defined
//                                          at FILE:3:1)"
// The comment lines directly above a rule become its `doc` (its soundness argument).
#ifndef PRISM_EQUIV_RULES_H_
#define PRISM_EQUIV_RULES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/equiv/rewrite.h"
#include "prism/expr/expr.h"

namespace prism::equiv {

struct RuleParseOptions {
  // Operators must be those of the term language (language.h) with their arity. Off for
  // generic e-graph tests over uninterpreted operators.
  bool check_operators = true;
};

// A rule file a RuleSet was read from: its base name and the stable hash of its bytes
// (HashToHex(StableHashBytes(text)), base/hash.h) — what proofs cite (docs/proofs.md).
struct RuleSource {
  std::string name;
  std::string hash;
};

class RuleSet {
 public:
  // Every rewrite in file order; a `<=>` rule contributes its forward then its reverse half.
  const std::vector<Rewrite>& rewrites() const { return rewrites_; }
  // Distinct rule names in file order.
  std::vector<std::string> names() const;
  size_t num_rules() const;
  // The rewrite called `name` (its reverse half when `reversed`), or nullptr.
  const Rewrite* Find(absl::string_view name, bool reversed = false) const;
  // Appends `other`'s rules; InvalidArgument on a duplicate name.
  absl::Status Append(const RuleSet& other);
  // A copy without the rules named in `names` (for negative tests); keeps the sources.
  RuleSet Without(const std::vector<std::string>& names) const;
  // The files the rules came from, in load order (one per ParseRules call; ParseRules with
  // an empty file name records the name "<inline>").
  const std::vector<RuleSource>& sources() const { return sources_; }

 private:
  friend absl::StatusOr<RuleSet> ParseRules(ExprContext&, absl::string_view, absl::string_view,
                                            const RuleParseOptions&);
  std::vector<Rewrite> rewrites_;
  std::vector<RuleSource> sources_;
};

absl::StatusOr<RuleSet> ParseRules(ExprContext& ctx, absl::string_view text,
                                   absl::string_view filename, const RuleParseOptions& options = {});
// NotFound if the file cannot be read.
absl::StatusOr<RuleSet> LoadRuleFile(ExprContext& ctx, absl::string_view path,
                                     const RuleParseOptions& options = {});
// Every `*.rules` file of `dir`, in file-name order; NotFound if there is none.
absl::StatusOr<RuleSet> LoadRuleDirectory(ExprContext& ctx, absl::string_view dir);
// LoadRuleDirectory(DataDir() + "/smt_theories/equiv").
absl::StatusOr<RuleSet> LoadDefaultRules(ExprContext& ctx);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_RULES_H_
