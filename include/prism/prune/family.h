// A family: named integer parameters with domains, named structural constraints (boolean
// expressions) and named metric expressions (resources, traffic, work) over the parameters.
// It is what the Pruner (prune/pruner.h) decides with Z3 against the rule files
// smt_theories/rules/*.smt2, which refer to the metrics by the standard names below.
//
//   ExprContext ctx;
//   PRISM_ASSIGN_OR_RETURN(nlohmann::json j, ...);   // e.g. tests/prune/families/*.json
//   PRISM_ASSIGN_OR_RETURN(prune::Family f, prune::Family::FromJson(j, ctx));
//   Expr smem = f.MetricOrDefault(prune::kSmemBytes);
//   PRISM_ASSIGN_OR_RETURN(prune::Family::Evaluation ev,
//                          f.Evaluate({{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}));
//   ev.feasible();  ev.metrics.at("smem_bytes");
//
// JSON form (every key but "name" and "parameters" optional; unknown keys are errors):
//   {
//     "name": "rmsnorm_linear.one_kernel",
//     "description": "free text",
//     "constants": {"M": 16, "K": 4096, "N": 6144},          // substituted when parsing
//     "parameters": [{"name": "g", "domain": "divisors(6144)", "doc": "blocks along N"}, ...],
//     "constraints": [{"name": "k_tile_mma", "condition": "(K floordiv F) mod 16 == 0",
//                      "why": "mma.sync m16n8k16 consumes k in steps of 16"}, ...],
//     "metrics": {"smem_bytes": "S * (M * (K floordiv F) + (K floordiv F) * (N floordiv g)) * 2",
//                 ...}
//   }
// Domains use Domain::FromJson (a printed form such as "pow2(64, 512)" or an object);
// expressions use the printed syntax of expr/expr.h (or a JSON integer). Constants are
// replaced by their values when parsing, so ToJson prints them as numbers (and keeps the
// "constants" table), and FromJson(ToJson(f)) rebuilds exactly the same family.
//
// Metric semantics. For a family of several kernels, capacity metrics (smem, registers,
// threads, grid) are the maximum over its kernels and work metrics (bytes, flops, sfu_ops) are
// sums. An absent metric takes the default in StandardMetrics(); the defaults are neutral for
// capacity rules (0 bytes, 0 registers, 1 thread, 1 block) and make every work lower bound 0,
// so a rule that only uses a metric as an upper bound on resources or a lower bound on time
// stays sound with them. A rule that reads a metric the other way (an occupancy floor: "too
// few blocks") must check HasMetric first.
//
// Thread safety: a Family refers to an ExprContext that it does not own (which must outlive
// it) and is as thread-safe as that context (i.e. not: one family per worker, or Import).
#ifndef PRISM_PRUNE_FAMILY_H_
#define PRISM_PRUNE_FAMILY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json_fwd.hpp"
#include "prism/expr/domain.h"
#include "prism/expr/eval.h"
#include "prism/expr/expr.h"

namespace prism::prune {

// Standard metric names (the vocabulary of smt_theories/rules/*.smt2).
inline constexpr absl::string_view kSmemBytes = "smem_bytes";           // dynamic+static smem per block
inline constexpr absl::string_view kRegsPerThread = "regs_per_thread";  // 32-bit registers
inline constexpr absl::string_view kThreadsPerBlock = "threads_per_block";
inline constexpr absl::string_view kGridX = "grid_x";
inline constexpr absl::string_view kGridY = "grid_y";
inline constexpr absl::string_view kGridZ = "grid_z";
inline constexpr absl::string_view kGridBlocks = "grid_blocks";  // grid_x * grid_y * grid_z
inline constexpr absl::string_view kDramBytes = "dram_bytes";    // unique bytes read + written
inline constexpr absl::string_view kL2Bytes = "l2_bytes";        // bytes loaded by all blocks
inline constexpr absl::string_view kFlops = "flops";             // tensor-core + CUDA-core flops
inline constexpr absl::string_view kSfuOps = "sfu_ops";          // exp, rsqrt, ... (SFU work)
inline constexpr absl::string_view kKernels = "kernels";         // kernel launches

struct MetricInfo {
  absl::string_view name;
  // The default when absent, in the printed syntax; may refer to other metrics by name
  // (grid_blocks = grid_x * grid_y * grid_z, l2_bytes = dram_bytes).
  absl::string_view default_value;
  absl::string_view unit;
  absl::string_view description;
};
// The standard metrics, in a fixed order (the order of Evaluation::metrics and ToJson).
const std::vector<MetricInfo>& StandardMetrics();

struct Parameter {
  std::string name;
  Domain domain;
  Expr var;         // the variable in ctx()
  std::string doc;  // optional
};

struct NamedConstraint {
  std::string name;  // e.g. "tile_divides_k"; unique within the family
  Expr condition;    // Bool sort, over the parameters only
  std::string why;   // the structural reason (reported with the verdict)
};

class Family {
 public:
  // An empty family called `name` whose expressions live in `ctx` (not owned; must outlive
  // the family).
  Family(std::string name, ExprContext& ctx);

  // ---- building (each call validates; errors are InvalidArgument naming the item) -------
  // Declares the parameter (a variable of ctx). Errors: not an identifier / a keyword,
  // duplicate parameter or constant, or the variable exists in ctx with another domain.
  absl::StatusOr<Expr> AddParameter(absl::string_view name, const Domain& domain,
                                    absl::string_view doc = "");
  // A named integer constant usable in ParseExpr-based setters below (substituted).
  absl::Status AddConstant(absl::string_view name, int64_t value);
  // `condition` must be Bool-sorted and use parameters only; names are unique.
  absl::Status AddConstraint(absl::string_view name, Expr condition, absl::string_view why);
  // `value` must be Int-sorted and use parameters only; `name` must be a standard metric.
  // Replaces an earlier value of the same metric.
  absl::Status SetMetric(absl::string_view name, Expr value);
  // Parses `text` (constants substituted, parameters only) and adds / sets it.
  absl::Status AddConstraintText(absl::string_view name, absl::string_view text,
                                 absl::string_view why);
  absl::Status SetMetricText(absl::string_view name, absl::string_view text);
  // Parses an expression of this family (constants substituted, parameters only).
  absl::StatusOr<Expr> Parse(absl::string_view text) const;
  void set_description(std::string d) { description_ = std::move(d); }

  // ---- inspection ---------------------------------------------------------------------
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  ExprContext& ctx() const { return *ctx_; }
  const std::vector<Parameter>& parameters() const { return parameters_; }
  // nullptr if there is no such parameter.
  const Parameter* FindParameter(absl::string_view name) const;
  const std::map<std::string, int64_t>& constants() const { return constants_; }
  const std::vector<NamedConstraint>& constraints() const { return constraints_; }
  // The explicitly set metrics, by name.
  const std::map<std::string, Expr>& metrics() const { return metrics_; }
  bool HasMetric(absl::string_view name) const;
  // The metric's expression, or its documented default (StandardMetrics) when absent.
  // PRISM_CHECK that `name` is a standard metric.
  Expr MetricOrDefault(absl::string_view name) const;

  // The number of assignments in the product of the parameter domains (saturating at
  // INT64_MAX).
  int64_t SpaceSize() const;
  // Calls `fn` on every assignment of the parameter domains, in a fixed order (first
  // parameter slowest); stops early when `fn` returns false. InvalidArgument if SpaceSize()
  // exceeds `max_count`. For brute-force checks of pruning verdicts on small families.
  absl::Status ForEachAssignment(const std::function<bool(const Assignment&)>& fn,
                                 int64_t max_count = int64_t{1} << 22) const;

  // ---- evaluation -------------------------------------------------------------------------
  struct Evaluation {
    // "g = 5 is not in divisors(6144)", one per parameter outside its domain.
    std::vector<std::string> domain_violations;
    // Names of the constraints that are false.
    std::vector<std::string> violated_constraints;
    // Every standard metric (defaults included), by name. Empty when a parameter is outside
    // its domain.
    std::map<std::string, int64_t> metrics;
    bool feasible() const { return domain_violations.empty() && violated_constraints.empty(); }
  };
  // Evaluates domains, constraints and metrics at `assignment`, which must assign exactly
  // the parameters. Errors (InvalidArgument): a parameter unassigned ("parameter 'g' is not
  // assigned"), a name that is not a parameter, or an evaluation error of a constraint or
  // metric, prefixed with its name ("metric smem_bytes: division by zero in ...").
  // Constraints and metrics are evaluated only when every parameter is in its domain.
  absl::StatusOr<Evaluation> Evaluate(const Assignment& assignment) const;

  // Evaluate's numbers without its names, for callers that check many instances (the pruner;
  // no strings, maps or expression walks per call). `values` are the parameters' values in
  // parameters() order (PRISM_CHECK on the count). Returns false, leaving `out` unspecified,
  // when a value is outside its parameter's domain (where Evaluate lists domain_violations);
  // InvalidArgument with Evaluate's message where Evaluate returns an error; else true, with
  // out.holds[i] the truth (0/1) of constraints()[i] and out.metrics[j] the value of
  // StandardMetrics()[j]. Reuse `out` across calls.
  // The parameters' values in parameters() order, into `values`; false (values unspecified)
  // when `assignment` misses a parameter or names something else, where Evaluate errs.
  bool ValuesOf(const Assignment& assignment, std::vector<int64_t>& values) const;
  struct Numbers {
    std::vector<int64_t> holds;
    std::vector<int64_t> metrics;
    CompiledExprs::Scratch scratch;
  };
  absl::StatusOr<bool> EvaluateNumbers(absl::Span<const int64_t> values, Numbers& out) const;

  // ---- serialization ----------------------------------------------------------------------
  nlohmann::json ToJson() const;
  // Errors (InvalidArgument) start with the JSON path of the offending value, e.g.
  //   "family rmsnorm_linear: parameters[1].domain: domain: missing key \"hi\""
  //   "family rmsnorm_linear: metrics.smem_byte: unknown metric, expected one of smem_bytes, ..."
  static absl::StatusOr<Family> FromJson(const nlohmann::json& j, ExprContext& ctx);

  // Stable hash of name, parameters (names, domains), constraints (names, structure) and
  // metrics (names, structure); independent of the context's handle values.
  uint64_t StableHash() const;

 private:
  absl::Status CheckOverParameters(absl::string_view what, Expr e) const;
  // Evaluate's constraints and metrics compiled once (CompiledExprs), on first use after the
  // family last changed. The slot is shared by copies of the family until one of them
  // changes (each change installs a fresh slot), so concurrent evaluations of one family and
  // its copies build it once.
  struct Plan;
  struct PlanSlot;
  const Plan& GetPlan() const;
  // Runs the plan at `values` (in the domains); false if a constraint or metric has no value.
  bool RunPlan(absl::Span<const int64_t> values, Numbers& out) const;
  // Evaluate's answer from the tree evaluator: for the exact error messages.
  absl::StatusOr<Evaluation> EvaluateSlowly(const Assignment& assignment) const;

  std::string name_;
  std::string description_;
  ExprContext* ctx_;
  std::vector<Parameter> parameters_;
  std::map<std::string, int64_t> constants_;
  std::vector<NamedConstraint> constraints_;
  std::map<std::string, Expr> metrics_;
  mutable std::shared_ptr<PlanSlot> plan_;  // null only in a moved-from family
};

}  // namespace prism::prune

#endif  // PRISM_PRUNE_FAMILY_H_
