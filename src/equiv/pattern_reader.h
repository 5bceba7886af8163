// Private: builds Pattern nodes from s-expressions (shared by Pattern::Parse and the rule
// loader), numbering variables through a table shared by a rule's two sides.
#ifndef PRISM_SRC_EQUIV_PATTERN_READER_H_
#define PRISM_SRC_EQUIV_PATTERN_READER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "prism/equiv/pattern.h"
#include "sexpr.h"

namespace prism::equiv::internal {

struct VarTable {
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int> index;
  int Slot(const std::string& name);  // adds if new
};

// Appends the nodes of `e` to `out` (children first); returns the root's index. With
// `check_operators`, operator names and arities must be those of the term language and
// 0-ary names are rejected (rules may not mention particular inputs).
absl::StatusOr<int> ReadPatternNodes(ExprContext& ctx, const SExpr& e, absl::string_view filename,
                                     bool check_operators, VarTable& vars,
                                     std::vector<Pattern::Node>& out);

}  // namespace prism::equiv::internal

#endif  // PRISM_SRC_EQUIV_PATTERN_READER_H_
