// Helpers shared by report.cc and audit.cc (private to report/).
#ifndef PRISM_SRC_REPORT_REPORT_INTERNAL_H_
#define PRISM_SRC_REPORT_REPORT_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/block/sgraph.h"
#include "prism/ir/program.h"
#include "prism/tune/tune.h"

namespace prism::report::internal {

// A theory file by its path relative to the theory directory, with the stable hash of its
// bytes (HashToHex(StableHashBytes)).
struct TheoryFile {
  std::string path;
  std::string hash;
};

// resources.smt2, cost.smt2, hardware/<target>.smt2, then equiv/*.rules and rules/*.smt2 in
// name order. NotFound / read errors name the path.
absl::StatusOr<std::vector<TheoryFile>> TheoryFiles(const std::string& theory_dir,
                                                    const std::string& target);
// `given`, or DataDir()/smt_theories when empty.
absl::StatusOr<std::string> DefaultTheoryDir(const std::string& given);

// "%.4g"; "n/a" for non-finite values.
std::string Num(double v);
std::string HtmlEscape(absl::string_view s);
// "007-<family, unsafe characters as _>.<query>.smt2" for pruned family index 6.
std::string SmtFileName(size_t index, absl::string_view family, absl::string_view query);

// "selected by measurement" / "selected by the cost model's estimate".
const char* SelectedBy(tune::Method method);

// One step of the readable rewrite chain: the rewritten subterm before and after.
struct ChainStep {
  std::string rule, direction, kind;  // kind: "rule", "analysis" or "given"
  std::vector<int> position;
  std::string from, to;
};

struct ProofData {
  std::string proof_json;  // proof.json (equiv/proof_json.h), with a final newline
  std::string start, goal;
  std::vector<ChainStep> steps;
  std::vector<std::string> rules_used;
};

// Proves `graph` equivalent to `program` (equiv::ProveSGraph with the shipped rules;
// deterministic). Internal error if it does not prove.
absl::StatusOr<ProofData> ProveChosen(const Program& program, const SGraph& graph);

}  // namespace prism::report::internal

#endif  // PRISM_SRC_REPORT_REPORT_INTERNAL_H_
