// Private header of search/ (not installed): the Searcher behind Search(), one object per call.
// Its parts live in
//   search.cc    Search(), Run() (the pipeline), the target e-graph and the op vocabulary;
//   generate.cc  structure generation: abstract values, canonical forms, the completion bound;
//   maps.cc      map constraints and map resolution;
//   build.cc     building the one-kernel and split-reduction candidates, validation;
//   search_cache_io.cc  the shape-independent cache (templates to and from JSON);
//   rank.cc      proof, ranking and pruning (parallel, deterministic).
// Member contracts are documented at their declarations here.
#ifndef PRISM_SRC_SEARCH_SEARCHER_H_
#define PRISM_SRC_SEARCH_SEARCHER_H_

#include "prism/search/search.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <thread>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/equiv/egraph.h"
#include "prism/equiv/lower.h"
#include "prism/equiv/lower_sgraph.h"
#include "prism/equiv/rules.h"
#include "prism/equiv/runner.h"
#include "prism/equiv/subterm.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/prune/block_family.h"
#include "prism/prune/pruner.h"
#include "prism/search/cache.h"
#include "prism/base/hash.h"
#include "nlohmann/json.hpp"

namespace prism::search::internal {

using equiv::EClassId;
using equiv::LeafOpFor;
using equiv::Payload;
using equiv::Symbol;

constexpr int64_t kR = kReplicate;

// One generated block op (inputs first, one per Program input).
struct GenOp {
  BlockOpKind kind = BlockOpKind::kInput;
  OpKind fn = OpKind::kInput;
  int a = -1, b = -1;
  int64_t count = 0;  // inv_rms: n; input: Program input index
  double scalar = 0.0;  // unary scale: the constant c of c·x; rms, inv_rms: eps
  auto Key() const {
    return std::make_tuple(static_cast<int>(kind), static_cast<int>(fn), a, b, count, scalar);
  }
};

// A value of the partial structure: its abstract class and whether it is after the loop.
struct Value {
  EClassId cls;
  bool after = false;
  std::vector<int64_t> shape;  // whole-tensor shape of the abstract expression
};

// The numpy-style broadcast of two shapes (aligned from the right, extent 1 stretches).
inline std::vector<int64_t> Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out = a.size() >= b.size() ? a : b;
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    out[i] = std::max(x, y);
  }
  return out;
}

class Searcher {
 public:
  Searcher(const Program& program, const SearchConfig& config, const Target& target)
      : program_(program), config_(config), target_(target) {}

  absl::StatusOr<SearchResult> Run();

 private:
  absl::Status BuildTarget();

  void CollectVocabulary();

  std::optional<EClassId> Int(int64_t v);
  std::optional<EClassId> Node1(absl::string_view op, std::vector<std::optional<EClassId>> kids);

  // The abstract value of `op` over `values`, or nullopt if it is not in the target.
  std::optional<Value> Abstract(const GenOp& op, const std::vector<Value>& values);

  std::vector<GenOp> Candidates(const std::vector<GenOp>& ops, const std::vector<Value>& values,
                                int accumulators) const;

  // The expression tree of the last op of `ops` (independent of the order the ops were added
  // in), from canon_, the trees of the earlier ops: two op sequences with the same tree are the
  // same structure.
  std::string Canonical(const std::vector<GenOp>& ops) const;

  static bool AllUsed(const std::vector<GenOp>& ops);

  // Whether the ops left (max_block_ops minus the compute ops so far) cannot complete the
  // structure: every value that no op uses yet (inputs included) must still reach the output,
  // and (a) an op consumes at most two values and adds one, so d unused values need at least
  // d − 1 more ops; (b) the value of class c needs at least depth(c) more ops (ComputeDepths).
  bool Hopeless(const std::vector<GenOp>& ops, const std::vector<Value>& values) const;

  // depth_: every target class's distance from the root in block ops: the fewest ops whose
  // abstract expressions (Abstract) lead from the class up to the root, found breadth-first
  // over the target e-graph. Most ops add one e-node level above their operands (or none), so
  // every e-node's children are one op away; acc_sumsq_last adds sum(square(·)) and inv_rms
  // rsqrt(add(div(·, n), eps)), so the operands inside those patterns are one op away too. A
  // lower bound on the ops of any completion: each op of a chain from a value to the root is
  // one such edge. (Until 2026-12-05 the bound was ⌈e-node levels / 3⌉ whenever rms_norm was
  // in the vocabulary, which barely pruned: rms_norm(mul(h, scale(t, c))) generated 59 M op
  // sequences.) Classes the root does not reach have no entry and need 0.
  void ComputeDepths();

  // Whether the vocabulary (CollectVocabulary) might produce the root's class at all: a
  // fixpoint over the target e-graph in which a class is producible when it holds an e-node
  // with every child producible whose operator is not a Program operator outside the
  // vocabulary. The vocabulary's operators are those of the block ops' abstract expressions:
  // matmul, the Program's unary and binary functions, scale, sum, max, div, and rms_norm,
  // rsqrt, add, div, square for rms_norm; so concat, for one, is never produced. An
  // over-approximation, so false proves that no structure can end at the root: the search
  // generates nothing (a root that is a concat, which no block op computes, used to spend the
  // whole budget generating: 162 M op sequences in 22 s for a random program, 2026-12-05).
  bool RootProducible() const;

  // Reports progress when the interval has passed (or always, for `force`); calling thread only.
  void Report(const char* stage, int64_t done = 0, int64_t total = 0, bool force = false);

  // Whether the current op set (canon_, as a set) was explored before; records it if not.
  bool StateSeen();

  absl::Status Extend(std::vector<GenOp>& ops, std::vector<Value>& values, int accumulators);
  // Whether op i is a matmul whose operands are inputs or, recursively, such matmuls (X·W,
  // (X·A)·B), its A operand also elementwise ops of inputs (silu(X)·W, (silu(G) ⊙ U)·W): a
  // value that summing over K chunks can leave unchanged.
  static bool MatmulOfInputs(const std::vector<GenOp>& ops, int i);
  // `ops` (its last op the root's class) as a structure: its maps resolved, once per
  // structure, when every op is used.
  absl::Status CompleteStructure(std::vector<GenOp>& ops, std::vector<Value>& values);
  // The structure `ops` + acc_sum(last op), when the last op's value is the root in the loop
  // phase (Extend stops at the root; this is its one continuation that can be the program).
  absl::Status AccumulateRoot(std::vector<GenOp>& ops, std::vector<Value>& values);

  // ---- map resolution, proof, pruning ----------------------------------------------------------

  // Necessary conditions on the maps of a one-kernel structure, from the well-formedness rules
  // of docs/block_graph.md §3 (so the filter only skips maps that Validate rejects; test
  // MapPrefilterChangesNothing): dims that must be split alike (contraction and elementwise
  // operands on differently split dims are rejected; unary ops, rms, inv_rms and accumulators
  // keep their operand's tile dims) form classes; a class must not be split by the grid if it
  // holds a dim that an op reduces (a contraction, sum/max, rms, a *_last accumulator: grid
  // blocks would hold partial results that no following kernel reduces), nor walked by the
  // forloop if rms needs it whole or acc_sum (acc_*_last: a dim but the last) accumulates it;
  // a dim of the stored value is split exactly by the axes the omap lays out on it and never
  // walked. A dim of extent 1 is never unified (it may be a broadcast or a reduced dim).
  struct DimClass {
    std::vector<std::pair<int, int>> members;  // (input, dim)
    bool no_grid = false, no_loop = false;
    int64_t output_dim = kR;                   // the stored value's dim in this class, if any
  };

  std::vector<DimClass> MapConstraints(const std::vector<GenOp>& ops) const;

  // ---- map resolution -------------------------------------------------------------------------
  // One complete choice of maps for a structure: `axes` grid axes (x, y, ...), the output dim
  // each axis lays its blocks out on (strictly increasing: the grid-axis symmetry is broken by
  // ordering the axes by their output dim), and per input the dim each axis splits (or kR) and
  // the dim the forloop walks (or kR).
  struct Maps {
    int axes = 0;
    std::array<int64_t, kNumGridAxes> omap{kR, kR, kR};
    std::vector<std::array<int64_t, kNumGridAxes>> imap;
    std::vector<int64_t> fmap;
  };

  absl::Status ResolveMaps(const std::vector<GenOp>& ops, const std::vector<Value>& values);

  // Whether the maps of inputs 0..last satisfy MapConstraints so far: the assigned members of
  // a class are split alike (by the same set of grid axes, and walked by the forloop or not),
  // as the class's flags and its output dim require.
  bool ConsistentSoFar(const Maps& m, size_t last) const;

  // Chooses input i's imap (one entry per axis: kR or a dim no other axis of this input splits)
  // and fmap, then recurses; at the end, builds and queues the candidates.
  absl::Status AssignInput(const std::vector<GenOp>& ops, const std::vector<Value>& values, Maps& m,
                           size_t i);

  // ---- building candidates ------------------------------------------------------------------------
  static constexpr std::array<const char*, kNumGridAxes> kAxisParam = {"gx", "gy", "gz"};

  struct Common {
    std::array<Expr, kNumGridAxes> grid;
    Expr forloop, threads, stages;
    int64_t loop_gcd = 0;
    std::vector<int> tensors;  // the graph's tensor per Program input
    int output = -1;
  };

  // Declares the parameters, the Program's inputs and its output in `g`. `split` adds the
  // split axis `gs` (domain: divisors of the walked dims' gcd) as grid axis m.axes.
  Common DeclareCommon(SGraph& g, const Maps& m, bool split) const;

  // Adds block op `op` (operands already translated through `id`) to `kb`.
  static int AddOp(BlockGraphBuilder& kb, SGraph& g, const GenOp& op, const std::vector<int>& id,
                   const std::string& name, int tensor, std::array<int64_t, kNumGridAxes> imap,
                   int64_t fmap);

  // The one-kernel candidate of `ops` under `m`.
  SGraph BuildOneKernel(const std::vector<GenOp>& ops, const Maps& m) const;

  // The split-reduction form of a valid one-kernel candidate (`info` = its analysis): a new
  // grid axis `gs` also splits every dim the forloop walks, so each block reduces one chunk;
  // kernel k0 stores every accumulator that an after-loop op (or the store) consumes as f32
  // partial results, laid side by side along a dim no other axis splits; kernel k1 walks the gs
  // partials with its forloop, accumulates them (sum; max for acc_max_last) and runs the
  // after-loop ops. Flash-decoding (split-KV) and split-K are instances. nullopt when the form
  // does not apply: no forloop, no free grid axis, an after-loop op consuming a computed
  // loop-invariant tile, or an accumulator that some grid axis does not split (its blocks
  // would store copies).
  std::optional<SGraph> BuildSplit(const std::vector<GenOp>& ops, const std::vector<Value>& values,
                                   const Maps& m, const SGraphAnalysis& info) const;

  absl::Status TryMaps(const std::vector<GenOp>& ops, const std::vector<Value>& values, const Maps& m);

  void Queue(SGraph g, size_t template_index);

  // A Program whose output is one op that runs as a library kernel (RunsAsLibraryKernel: a
  // concat, or a reduction or norm over a dim other than the last) of its inputs (every operand
  // an input; an input read more than once allowed), or with SearchConfig::library_kernel any
  // op of its inputs (RunsAsOneLibraryKernel): the one family is a single library kernel
  // (codegen's copy, reduction, matmul or elementwise kernel) with no parameters. nullopt for
  // any other Program: the block-op generation has no concat and reduces the last dim only, so
  // one inside a computation has no family (prism::OptimizeParts cuts such programs there,
  // search SplitAtLibraryOp).
  std::optional<SGraph> LibraryGraph() const;
  // Queued library candidates carry this template index (no template: not cached).
  static constexpr size_t kNoTemplate = static_cast<size_t>(-1);

  // ---- the shape-independent cache (cache.h) -------------------------------------------------
  // A structure and its maps: everything TryMaps needs to rebuild its candidates at any sizes.
  struct Template {
    std::vector<GenOp> ops;
    Maps maps;
  };

  static std::optional<BlockOpKind> BlockOpByName(absl::string_view name);

  // The Program's structure without its sizes (dims other than 1), the target and the
  // generation settings: equal keys generate the same structures.
  std::string CacheKey() const;

  // inv_rms's count refers to the last dim of an input (the one it was taken from).
  nlohmann::json TemplateJson(const Template& t) const;

  // The template at this Program's sizes, or nullopt when it does not apply to them (an entry
  // of another format, or maps that refer to dims of extent 1 now).
  std::optional<std::pair<Template, std::vector<Value>>> TemplateFromJson(const nlohmann::json& j) const;

  // The whole-tensor shape of op's result (the e-graph-free part of Abstract()).
  std::optional<Value> ShapeOf(const GenOp& op, const std::vector<Value>& values) const;

  // On a hit, queues the cached candidates rebuilt at this Program's sizes; false on a miss.
  bool ReplayCache();

  // After a complete search: records the structures of the proved candidates.
  absl::Status RecordCache();

  // ---- proof, ranking and pruning (parallel, deterministic) ------------------------------------
  struct Candidate {
    SGraph graph;
    std::optional<equiv::ProveResult> proof;  // output 0's; unset when the budget ran out first
    absl::Status status;                      // an error of a worker
    // After ranking (proved candidates):
    std::unique_ptr<ExprContext> fctx;        // owns the family's expressions
    std::optional<prune::Family> family;
    double cost_us = -1;                      // best cost lower bound over the ranked instances
    Assignment best;
    std::optional<prune::Decision> decision;  // the deciding pruner verdict, if one was asked
    // The search's deadline passed while this candidate was ranked or decided: it is neither
    // a family nor pruned (result's budget_exhausted tells the caller).
    bool cut_short = false;
    size_t template_index = 0;                // templates_[...] that built it
  };

  int Workers(size_t jobs) const;

  // Runs fn(worker_state, k) for k in [0, n) on Workers(n) threads; each thread first makes its
  // own state with make() (e.g. a Pruner: one Z3 context per worker). Which thread runs which k
  // does not matter to the result: every job writes only its own slot.
  // The worker state of jobs that need none: ParallelFor(stage, n, NoWorkerState, fn(NoState&, k)).
  struct NoState {};
  static absl::StatusOr<NoState> NoWorkerState() { return NoState{}; }
  template <typename MakeState, typename Fn>
  absl::Status ParallelFor(const char* stage, size_t n, MakeState make, Fn fn) {
    if (n == 0) return absl::OkStatus();
    const int threads = Workers(n);
    std::atomic<size_t> next{0}, finished{0};
    std::vector<absl::Status> errors(static_cast<size_t>(threads));
    const auto work = [&](int w) {
      auto state = make();
      if (!state.ok()) {
        errors[static_cast<size_t>(w)] = state.status();
        return;
      }
      for (size_t k = next++; k < n; k = next++) {
        fn(*state, k);
        ++finished;
        if (w == 0) Report(stage, static_cast<int64_t>(finished), static_cast<int64_t>(n));
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (std::thread& t : pool) t.join();
    for (const absl::Status& e : errors) PRISM_RETURN_IF_ERROR(e);
    return absl::OkStatus();
  }

  absl::Status ProveAll();

  // Ranks every proved candidate by enumerating its instances (no incumbent), proves the ones
  // with no feasible instance infeasible, takes the cheapest as the incumbent, then decides
  // every family whose best instance is dearer than the incumbent against it (dominance).
  // Families that tie with the incumbent survive. Instances are enumerated on one Pruner per
  // worker (its Z3 cuts only empty subtrees, so the instances do not depend on its history);
  // every decision runs on a fresh Pruner, and the incumbent is fixed before the dominance
  // queries, so neither the survivors nor the rules credited depend on scheduling or on the
  // number of workers (short of a query stopped by its wall clock).
  absl::Status PruneAndRank();

  // The parts of a pruned family's record that do not depend on its verdict (moves the graph).
  static PrunedFamily PrunedOf(Candidate& c);

  // The ranking model (DESIGN.md §5: calibrated, unlike the dominance bound): the lower bound
  // with each kernel's launch at the target's measured typical overhead instead of the
  // dominance floor. The instance it prefers is the lower bound's (the term is constant per
  // family).
  double RankUs(const Candidate& c) const;

  // A pruner with the search's options and deadline, its Z3 context fresh.
  absl::StatusOr<prune::Pruner> MakePruner() const;

  // Builds c's family and finds its cheapest instance among the first instances_per_family
  // feasible ones; with none (and pruning on), asks Z3 for the infeasibility proof.
  absl::Status Rank(prune::Pruner& pruner, Candidate& c) const;

  const Program& program_;
  const SearchConfig& config_;
  const Target& target_;
  absl::Time deadline_;
  ExprContext ctx_;
  equiv::RuleSet rules_;
  std::unique_ptr<equiv::EGraph> graph_;
  std::unique_ptr<equiv::SubtermIndex> index_;
  EClassId root_;
  std::optional<double> incumbent_;
  bool matmul_ = false, sum_ = false, max_ = false, rms_ = false;
  std::set<OpKind> unary_, binary_;
  // The constants of the Program's scale ops (each a unary op of the vocabulary).
  std::set<double> scales_;
  // The eps of the Program's rms_norm ops (rms and inv_rms are generated with each).
  std::set<double> rms_eps_;
  // With mean: the counts n of div_count(x, n) (every node's last dim: mean is sum / n).
  std::set<int64_t> div_counts_;
  // Binary ops the Program applies to one value twice (mul(X, X)): only these are generated
  // with both operands the same value (elsewhere that only adds states to explore).
  std::set<OpKind> self_binary_;
  std::set<int64_t> counts_;
  absl::Time start_, next_report_;
  absl::flat_hash_map<EClassId, int> depth_;  // ComputeDepths
  absl::flat_hash_set<uint64_t> seen_;  // structural hashes of the mapped candidates
  std::vector<std::string> canon_;        // Canonical() of each op of the current sequence
  absl::flat_hash_set<size_t> states_seen_;  // hashes of the explored op sets
  std::vector<DimClass> equal_;  // MapConstraints of the current structure
  std::vector<Candidate> candidates_;                    // valid, distinct candidates, in order
  std::vector<Template> templates_;                      // the (ops, maps) that built them
  absl::flat_hash_set<std::string> structures_seen_;  // Canonical() of the complete structures
  SearchResult result_;
};

}  // namespace prism::search::internal

#endif  // PRISM_SRC_SEARCH_SEARCHER_H_
