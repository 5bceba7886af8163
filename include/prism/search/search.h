// Search (DESIGN.md §1 steps 2–7, issue 6; docs/search.md is the long form).
//
// Search(program, config, target) enumerates sGraph families for a single-output Program,
// proves each equivalent to the Program for all parameter values (equiv/lower_sgraph.h) and
// decides the proved ones with the Z3 pruner (prune/pruner.h). Stages, in order:
//   1. Target: the Program's output term saturated under the shipped rules; a SubtermIndex
//      answers "is this abstract expression part of the target?".
//   2. Generate (depth-first, canonical): block ops from the Program's vocabulary whose
//      abstract expressions are classes of the target; each op set explored once, values never
//      recomputed, only fused accumulators, partial structures the remaining ops cannot finish
//      dropped; at most max_block_ops compute ops and max_accumulators accumulators.
//   3. Maps: up to max_grid_dims grid axes ordered by the output dim they lay out (symmetry
//      broken), a forloop, threads, stages; inputs assigned one at a time under the
//      structure's dimension equalities (necessary conditions of Validate), then Validate().
//   4. Split forms (max_kernels = 2): each valid one-kernel candidate with a forloop also gives
//      a two-kernel family whose new axis gs splits the walked dims; kernel 2 reduces the f32
//      partials (split-K, split-KV).
//   5. Prove every distinct candidate (parallel).
//   6. Rank every proved family over its feasible instances by the cost lower bound
//      (cost.smt2), order by the ranking model (rank_us), take the best rank as the incumbent
//      and decide the dearer families against it with Z3 (Dominated / Infeasible with the
//      rules of the unsat core); unknown never prunes. One Z3 context per worker.
// Deterministic: the same Program, config and target give the same families in the same order,
// whatever the number of threads. With config.cache (cache.h), a Program structure searched
// before at other sizes skips stages 1–3.
//
//   PRISM_ASSIGN_OR_RETURN(Target h200, LoadTarget("h200"));
//   PRISM_ASSIGN_OR_RETURN(SearchResult r, Search(program, SearchConfig{}, h200));
//   const FamilyResult& best = r.families[0];   // best.graph, best.best (an Assignment)
#ifndef PRISM_SEARCH_SEARCH_H_
#define PRISM_SEARCH_SEARCH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prism/block/sgraph.h"
#include "prism/expr/eval.h"
#include "prism/ir/program.h"
#include "prism/search/cache.h"
#include "prism/smt/solver.h"
#include "prism/smt/target.h"

namespace prism::search {

// A snapshot of a running search, for progress displays.
struct SearchProgress {
  const char* stage = "generate";  // "generate", "prove", "rank", "prune" or "done"
  double elapsed_s = 0;
  // The candidates came from SearchConfig::cache (no target saturation, generation or map
  // resolution ran; the funnel's generation counts are 0).
  bool cache_hit = false;
  int64_t generated = 0;    // op sequences explored so far
  int64_t structures = 0;
  int64_t candidates = 0;   // valid, distinct mapped candidates so far
  int64_t done = 0;         // prove / rank: jobs finished of `total`
  int64_t total = 0;
};

struct SearchConfig {
  // 1: one block graph; 2: also the split-reduction form of each one-kernel candidate (a
  // grid axis over the walked dims, partials reduced by a second kernel).
  int max_kernels = 2;
  int max_grid_dims = 2;        // grid axes of a one-kernel candidate (the split adds one)
  int threads = 0;              // proving workers; 0 = one per core
  int max_block_ops = 11;       // compute ops + accumulators per kernel (inputs and the store not counted)
  int max_accumulators = 3;     // forloop accumulators per kernel
  uint64_t seed = 1;            // reserved for randomized stages (none today)
  absl::Duration budget = absl::Seconds(30);  // wall clock; the search stops when spent
  int instances_per_family = 1 << 20;         // feasible instances ranked per family
  bool prune = true;                          // false: no SMT decisions (every family survives)
  // Skip map combinations that violate a dimension equality of the structure (contraction and
  // elementwise operands split alike) before building and validating them. Changes nothing
  // but speed: only maps that Validate rejects are skipped (test MapPrefilterChangesNothing).
  bool map_prefilter = true;
  // Random testing of candidates that saturation does not prove is skipped when one
  // evaluation would cost more operations than this (the candidate is then dropped as
  // unproved instead of refuted: only the funnel's `refuted` count changes).
  // 2·10⁷ (2026-12-05; it was 2·10⁸): softmax(scale(Q·Kt, c))·V at [32, 1, 128] · [32, 128,
  // 2048] spent 120 s of random tests at about 3·10⁷ operations each, ran out of budget and
  // kept 20 proved families, where without them the search took 9 s and proved 68.
  double refute_max_ops = 2e7;
  // Ranking evaluates every assignment of a family concretely when its space has at most this
  // many (else the pruner walks it with Z3 cutting infeasible subtrees).
  int64_t brute_force_limit = int64_t{1} << 21;
  // Each pruning query's Z3 budget (smt/solver.h): the rlimit is deterministic, the wall-clock
  // timeout_ms a safety net. A query that hits either answers kUnknown and prunes nothing, so a
  // timeout reached only on a loaded machine changes the funnel; tests that compare funnels
  // raise timeout_ms well past any query's time (the rlimit still bounds them).
  smt::Budget query_budget;
  // Called from the calling thread about every progress_interval while the search runs, and
  // once with stage "done". Must not call back into the search.
  std::function<void(const SearchProgress&)> progress;
  absl::Duration progress_interval = absl::Milliseconds(100);
  // Shape-independent reuse (cache.h): when set, a search whose Program structure, target and
  // generation settings were searched before (at any sizes) rebuilds the recorded candidates
  // instead of generating; a complete search records its proved candidates. Not owned.
  FamilyCache* cache = nullptr;
  // Keep every pruned family (its sGraph, verdict, deciding rules and deciding SMT query) in
  // SearchResult::pruned, for reports and audits (report/report.h). Costs memory only.
  bool record_pruned = true;
  // Run the program as one library kernel instead of generating block graphs: its output must
  // be one op of its inputs (any op; RunsAsOneLibraryKernel), and its one family is that
  // library kernel with no parameters (codegen's copy, reduction, matmul or elementwise
  // kernel). prism::OptimizeParts and prism optimize set it for such a program when none of
  // its block-graph families can be generated as CUDA (the fallback, docs/optimize.md).
  // Search returns InvalidArgument when it is set for any other program.
  bool library_kernel = false;
};

struct Funnel {
  int64_t generated = 0;        // block-op sequences explored (partial structures)
  int64_t pruned_abstract = 0;  // ops rejected because their abstract expression is not in the target
  int64_t revisited = 0;        // op sets reached again in another order (explored once)
  int64_t pruned_bound = 0;     // partial structures that the ops left cannot complete
  int64_t structures = 0;       // complete structures (before maps)
  int64_t map_validated = 0;    // map choices consistent with the dimension equalities: built and validated
  int64_t split_built = 0;      // split-reduction forms built from valid one-kernel candidates
  int64_t mapped = 0;           // map combinations that Validate accepts (distinct candidates)
  int64_t proved = 0;           // mapped candidates proved equal to the Program
  int64_t unproved = 0;         // mapped candidates not proved (refuted or unknown)
  int64_t refuted = 0;          // of those, refuted by random testing (a counterexample)
  std::map<std::string, int64_t> pruned_by_rule;  // rule → families it pruned
  int64_t survivors = 0;
};

struct FamilyResult {
  std::unique_ptr<SGraph> graph;  // the family (maps resolved, g/F/T/S symbolic)
  int kernels = 1;
  double cost_us = 0;             // best cost lower bound (cost.smt2) over its instances, µs
  // The ranking model's estimate at that instance: cost_us with each kernel's launch at the
  // target's measured typical overhead (hw_launch_overhead_ns) instead of the dominance floor.
  // Families are returned in increasing rank_us.
  double rank_us = 0;
  Assignment best;                // the instance with that cost
  size_t proof_steps = 0;
};

// A proved family that pruning removed (SearchConfig::record_pruned).
struct PrunedFamily {
  std::unique_ptr<SGraph> graph;  // the family (maps resolved, parameters symbolic)
  std::string name;               // the family's name (prune/block_family.h)
  int kernels = 1;
  // "infeasible" (no assignment satisfies the constraints and hard rules), "dominated" (every
  // lower bound >= the incumbent) or "no_feasible_instance" (none was found and pruning is
  // off: no SMT query decided).
  std::string verdict;
  std::vector<std::string> rules;  // the unsat core: rule names and "constraint.<name>"
  double incumbent_us = 0;         // dominated: the incumbent it was decided against
  double cost_us = -1;             // best lower bound over its ranked instances (-1: none)
  std::string decision;            // prune::Decision::ToString()
  std::string smt_query;           // the deciding query's name ("prune.decide", ...)
  std::string smt2;                // the deciding query (SMT-LIB2, deterministic text)
};

struct SearchResult {
  Funnel funnel;
  std::vector<FamilyResult> families;  // survivors, best (lowest rank_us) first
  std::vector<PrunedFamily> pruned;    // pruned families in candidate order (record_pruned)
  std::optional<double> incumbent_us;  // the incumbent of the dominance queries, if any
  double elapsed_s = 0;
  // The candidates came from SearchConfig::cache (no target saturation, generation or map
  // resolution ran; the funnel's generation counts are 0).
  bool cache_hit = false;
  // Wall time of the stages: generation with map resolution, proving (parallel), pruning
  // and ranking (sequential, in candidate order).
  double generate_s = 0, prove_s = 0, prune_s = 0;
  bool budget_exhausted = false;
};

// Why the search may find no family for `program`, when a cause is known ("" otherwise), as a
// sentence to append to "the search found no family for this program": a concat (no block
// op), a sum, max, mean, softmax or rms_norm over another dim than the last (block ops reduce
// the last dim), or a binary op broadcasting an input of lower rank (the block graph pairs
// tiles of equal rank), e.g. "; W f16[64] is broadcast against rank 2 by add (line 3): declare
// it as f16[1, 64] (...)". The first cause found, in that order.
std::string NoFamilyHint(const Program& program);

// Where a search that found no family stopped, for when NoFamilyHint knows no cause: the first
// funnel stage that nothing passed, as a sentence to append to "the search found no family for
// this program", e.g. "; its 4 complete structures had no dimension mapping that validates (2
// map choices built)". For a search that returned families, the pruning sentence.
std::string FunnelStopHint(const Funnel& funnel);

// The sentence to append to "the search found no family for this program" for `result` (a
// search of `program` that returned no family): NoFamilyHint's cause when it knows one, else
// where the search stopped (FunnelStopHint), or "" when its budget ran out first (it cannot
// tell then).
std::string NoFamilyReason(const Program& program, const SearchResult& result);

// Why no family of `program` may be generable as CUDA, when a cause is known ("" otherwise),
// as a sentence to append to "no family can be generated as CUDA yet: ...": a matmul whose A
// operand is (elementwise ops of) another matmul wider than 16 columns — the families keep
// that intermediate in one block, which only a narrow one (lora's X·A [M, 16]) fits; the
// program must be split there (SplitAtChainedMatmul; prism::OptimizeParts and `prism optimize` do
// it, tune::Optimize does not).
// E.g. "; matmul (line 4) reads the [8, 2048] result of matmul (line 4) through gelu: ...
// optimize the two parts as separate programs, ...".
std::string ChainedMatmulHint(const Program& program);

// Why codegen refused every family with "tile rows must be whole 16-byte chunks", as a
// sentence to append to "no family can be generated as CUDA yet: ...": the inputs and outputs
// whose last dim is not a multiple of 16 bytes, e.g. "; h f16[6, 7] has rows that are not
// whole 16-byte chunks, which the kernels load and store: make the last dims multiples of 16
// bytes (8 elements of f16 or bf16), ...". "" when every input and output is aligned.
std::string RowAlignmentHint(const Program& program);

// The first matmul (`consumer`) whose A operand is a matmul (`producer`) wider than 16 columns,
// or elementwise ops of one (`via`, their op names in data-flow order; a binary op is followed
// through its operand that is not an input): `cut` is the consumer's A operand, the tensor at
// which `prism optimize` splits such a program in two (ir SplitAt). nullopt when there is none.
struct ChainedMatmul {
  TensorId consumer, producer, cut;
  std::vector<std::string> via;
};
std::optional<ChainedMatmul> FindChainedMatmul(const Program& program);

// `program` cut at FindChainedMatmul's `cut` (ir SplitAt): `parts[0]` computes the cut tensor,
// `parts[1]` the program's output from it. `names` are the parts' names, used as their
// directories: the cut tensor's name (its own; when anonymous the first of H, H1, H2, ... that
// names no tensor of `program`), then the output's. nullopt when there is no chained matmul.
struct ChainedSplit {
  ChainedMatmul chain;
  Program parts[2];
  std::string names[2];
};
absl::StatusOr<std::optional<ChainedSplit>> SplitAtChainedMatmul(const Program& program);

// How many times `prism optimize` and prism::OptimizeParts cut a program (and its parts) at
// most.
inline constexpr int kMaxChainedCuts = 4;

// Whether node `n` of `program` is an op the block-op vocabulary cannot run, so that it runs
// as a library kernel of its own: a concat, or a sum, max, mean, softmax or rms_norm over a dim
// other than the last (block ops reduce the last dim only).
bool RunsAsLibraryKernel(const Program& program, const Node& n);

// The op for people, as the split line of prism optimize names it: "a concat", "a sum over
// dim 0", "a softmax over dim 1", ...
std::string LibraryOpText(const Program& program, const Node& n);

// `program` (one output) cut at an op that runs as a library kernel (RunsAsLibraryKernel; ir
// SplitAt): the search runs a program that is one such op of its inputs as a single library
// kernel (codegen's copy or reduction kernel), and nothing else with it. The cut: when the
// output is such an op, its first operand that is not an input (the part computes that
// operand; the rest is the op with the operand as an input); otherwise the first such op in
// program order (the part computes it; the rest reads it as an input). `op` is that library op
// (in `program`), `parts[0]` computes the cut tensor, `parts[1]` the output from it; `names`
// are the parts' names, used as their directories: the cut tensor's own name, or when
// anonymous the first of C, C1, C2, ... (a concat's cut) or R, R1, R2, ... (a reduction's or
// norm's) that names no tensor of `program`, then the output's. nullopt when the program has
// no such op, or is one such op of its inputs already. Cutting the parts again until every part
// is nullopt ends: each cut leaves both parts with fewer computed tensors. InvalidArgument for
// a program with more than one output.
struct LibrarySplit {
  TensorId cut;
  TensorId op;
  Program parts[2];
  std::string names[2];
};
absl::StatusOr<std::optional<LibrarySplit>> SplitAtLibraryOp(const Program& program);

// How many such cuts `prism optimize` and prism::OptimizeParts make at most along one path of
// parts (a program that needs more is refused).
inline constexpr int kMaxLibraryCuts = 16;
// FailedPrecondition for a program that needs more cuts than that (library-op and fallback
// cuts together): "the program needs more than 16 cuts at ops that run as kernels of their own
// (concats, reductions or norms over a dim other than the last, and ops that no block-graph
// family generates): split it into smaller programs".
absl::Status LibraryCutLimitError();

// Whether `program` (one output) is one op of its inputs: its output is computed by an op
// whose operands are all program inputs (an input read more than once allowed). Such a program
// can always run as a single library kernel (SearchConfig::library_kernel).
bool RunsAsOneLibraryKernel(const Program& program);

// `program` (one output) cut for the library-kernel fallback: used when no family of the
// program can be generated as CUDA and neither SplitAtLibraryOp nor SplitAtChainedMatmul
// applies, so that every part is eventually generated, by block graphs where the templates
// allow and as single library kernels elsewhere. The cut: nullopt when the program is one op
// of its inputs (RunsAsOneLibraryKernel: it runs as that library kernel) or has no computed
// tensor. Else at a matmul, the op the templates refuse most (odd shapes, rank > 2 tiles,
// operands that are not loop tiles): when the output is a matmul, its first operand that is
// not an input; otherwise the first matmul in program order. With no matmul, the output's
// first operand that is not an input (the last op runs on its own). `op` is that matmul, or
// the output's op; `names` as for SplitAtLibraryOp, anonymous cut tensors named P, P1, P2, ...
// Each cut leaves both parts with fewer computed tensors, so cutting the parts again ends.
// InvalidArgument for a program with more than one output.
absl::StatusOr<std::optional<LibrarySplit>> SplitForFallback(const Program& program);

// DIR/split.json for a split (format "prism.split", version 1, docs/optimize.md): the
// program's `label`, the cut tensor (name, dtype, shape), and the parts in launch order, each
// with its directory and the tensors it reads and writes. Ends with a newline.
std::string SplitManifest(const std::string& label, const Program& program,
                          const ChainedSplit& split);
// The same for a cut at a library op.
std::string SplitManifest(const std::string& label, const Program& program,
                          const LibrarySplit& split);

// InvalidArgument for a Program with more than one output or for an unsupported config;
// errors of rule loading and of the pruner's theories are returned as they are.
absl::StatusOr<SearchResult> Search(const Program& program, const SearchConfig& config,
                                    const Target& target);

}  // namespace prism::search

#endif  // PRISM_SEARCH_SEARCH_H_
