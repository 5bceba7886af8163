// Refutation by random testing: two terms are evaluated in f64 (term_eval.h) on the same
// seeded random inputs, at small concrete values of their symbolic sizes, at every block index
// of the axes they leave free; a difference beyond rounding is a counterexample — proof that
// the terms are NOT equivalent (for those sizes, hence not for all). Agreement proves nothing.
//
//   RandomTestResult r = RandomTest(ctx, env, candidate, program_term);
//   if (r.outcome == RandomTestOutcome::kDiffer) std::cout << r.counterexample->ToString();
//   // "at F = 2, g = 2, seed 0x5eed: element [3, 17] is 1.2031 vs 0.4417"
//
// Deterministic: the same terms, shapes and options give the same sizes, inputs and answer.
// Sizes: every variable of the terms' symbolic sizes and of the input shapes gets a value from
// 2, 4, 3, 8, 1, 16, 6, 5 (in that order, odometer-style over the variables sorted by name,
// within each variable's domain), the first combination at which both terms are well-formed
// (every partition divides its dim) and the work fits options.max_ops. Degree 1 is tried late
// because it hides missing partial sums. Inputs: standard normals, one Rng stream per input
// (root Rng(seed), forked in input-name order), row-major.
#ifndef PRISM_EQUIV_REFUTE_H_
#define PRISM_EQUIV_REFUTE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"
#include "prism/equiv/term_eval.h"

namespace prism::equiv {

struct RandomTestOptions {
  uint64_t seed = 0x5eed;
  int trials = 1;           // input draws (seed, seed + 1, ...)
  double rtol = 1e-6;       // |a − b| ≤ rtol·max(|a|, |b|) + atol·scale counts as equal,
  double atol = 1e-9;       // scale = max(1, the largest finite |value| of either result)
  double max_ops = 4e9;     // skip (kSkipped) when one evaluation would cost more
  int max_blocks = 256;     // block indices tried for the terms' free axes
};

struct Counterexample {
  uint64_t seed = 0;
  std::map<std::string, int64_t> sizes;   // values of the symbolic sizes
  std::map<std::string, int64_t> block;   // indices of the axes the terms leave free
  std::string detail;                     // "shapes differ: [8, 1] vs [1, 64]" or "element [3, 17] is 1.25 vs -0.5"
  std::vector<int64_t> index;             // the differing element (empty if shapes differ)
  double first = 0.0, second = 0.0;       // its values in the first and the second term
  std::map<std::string, Tensor> inputs;   // the random inputs used

  // "at F = 2, g = 2, block k = 1, seed 0x5eed: element [3, 17] is 1.25 vs -0.5".
  std::string ToString() const;
};

enum class RandomTestOutcome : uint8_t { kAgree, kDiffer, kSkipped };

struct RandomTestResult {
  RandomTestOutcome outcome = RandomTestOutcome::kSkipped;
  std::optional<Counterexample> counterexample;  // when kDiffer
  std::string reason;  // kAgree: what was tested; kSkipped: why nothing was tested
};

// Evaluates `a` and `b` (input shapes from `env`) and compares them as described above.
RandomTestResult RandomTest(const ExprContext& ctx, const TensorEnv& env, const Term& a,
                            const Term& b, const RandomTestOptions& options = {});

}  // namespace prism::equiv

#endif  // PRISM_EQUIV_REFUTE_H_
