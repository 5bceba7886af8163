// Side conditions of rewrite rules: named predicates over the analysis data (tensor_analysis.h)
// of the classes bound to a rule's variables, plus integer literals. The same predicate code
// serves the prover (data of e-classes) and proof replay (data computed over single terms).
//
// A predicate answers true, false or unknown (e.g. a shape is not known); a condition holds
// only when its predicate answers true — or, for `(not P)`, false — so unknown never fires a
// rule. Dims written as negative literals count from the end of the named tensor's rank.
//
//   const PredicateInfo* p = FindPredicate("row-scale");   // (row-scale ?r ?a)
//   std::optional<bool> ok = p->fn({PredicateArg{&r_data}, PredicateArg{&a_data}});
//
// The predicates (docs/rule_format.md lists them with examples):
//   (free-of t ax)          t's value does not depend on axis ax
//   (dim-is t d k)          dim d equals k normalized for t's rank (k may be negative)
//   (distinct d e)          integers d and e differ
//   (same-shape a b)  (same-rank a b)  (rank-le a b)
//   (same-except a b k)     same rank, equal dims except dim k (normalized for a's rank)
//   (co-broadcast a b)      same rank, every pair of dims equal or one of them 1
//   (broadcasts-into b a)   broadcasting b against a gives a's shape
//   (broadcast-unit b a k)  b broadcasts into a and b's dim aligned with a's dim k is 1 or absent
//   (row-scale r a)         (broadcast-unit r a -1): r scales the rows of a
//   (col-scale c b)         (broadcast-unit c b -2): c scales the columns of b
//   (batch-dim a d)         0 <= d < rank(a) - 2
//   (scalar c)              every dim of c is 1 (or c has rank 0)
//   (contractible a b)      a's last dim equals b's second-to-last (matmul a b is defined)
//   (distinct-axes x y)     x and y are different axes
//   (extent-is x n)         axis x was declared with degree n
#ifndef PRISM_EQUIV_CONDITION_H_
#define PRISM_EQUIV_CONDITION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/equiv/tensor_analysis.h"

namespace prism::equiv {

// What an argument position accepts: a tensor variable, an axis variable, or an integer
// (a literal, or a variable bound to a class with a concrete integer value).
enum class ArgKind : uint8_t { kTensor, kAxis, kInt };

struct PredicateArg {
  const TensorData* data = nullptr;  // for variables
  std::optional<int64_t> literal;    // for integer literals
  const TensorEnv* env = nullptr;    // the axis extents (set for every argument)
  // The integer this argument denotes, if any.
  std::optional<int64_t> Int() const;
};

struct PredicateInfo {
  absl::string_view name;
  std::vector<ArgKind> args;
  absl::string_view doc;  // one line
  std::optional<bool> (*fn)(absl::Span<const PredicateArg> args);
};

absl::Span<const PredicateInfo> AllPredicates();
// nullptr if unknown.
const PredicateInfo* FindPredicate(absl::string_view name);

struct Condition {
  struct Arg {
    int var = -1;          // >= 0: substitution slot of a variable
    int64_t literal = 0;   // when var < 0
  };
  const PredicateInfo* predicate = nullptr;
  bool negated = false;
  std::vector<Arg> args;

  // "(row-scale ?r ?a)" / "(not (distinct ?d ?e))".
  std::string ToString(absl::Span<const std::string> var_names) const;
};

// Evaluates `c` with the data of variable slot i given by data_of(i) (nullptr = no data:
// the condition does not hold) and the axis extents of `env` (may be null: extent-is fails).
bool EvaluateCondition(const Condition& c, const std::function<const TensorData*(int)>& data_of,
                       const TensorEnv* env);

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_CONDITION_H_
