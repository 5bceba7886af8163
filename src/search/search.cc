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

namespace prism::search {
namespace {

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
  auto Key() const { return std::make_tuple(static_cast<int>(kind), static_cast<int>(fn), a, b, count); }
};

// A value of the partial structure: its abstract class and whether it is after the loop.
struct Value {
  EClassId cls;
  bool after = false;
  std::vector<int64_t> shape;  // whole-tensor shape of the abstract expression
};

std::vector<int64_t> Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
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

  absl::StatusOr<SearchResult> Run() {
    const absl::Time start = absl::Now();
    start_ = start;
    deadline_ = start + config_.budget;
    if (program_.outputs().size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search supports programs with one output; this one has ", program_.outputs().size()));
    }
    if (config_.max_kernels < 1 || config_.max_kernels > 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_kernels = ", config_.max_kernels,
          ": expected 1 (one block graph) or 2 (also the split-reduction forms)"));
    }
    if (config_.max_grid_dims < 0 || config_.max_grid_dims > kNumGridAxes) {
      return absl::InvalidArgumentError(absl::StrCat("max_grid_dims = ", config_.max_grid_dims,
                                                     ": expected 0..", kNumGridAxes));
    }
    // The theories load (errors surface before any work); workers make their own pruners.
    PRISM_RETURN_IF_ERROR(prune::Pruner::Create(target_).status());
    if (!ReplayCache()) {
      PRISM_RETURN_IF_ERROR(BuildTarget());
      CollectVocabulary();
      std::vector<GenOp> ops;
      std::vector<Value> values;
      for (size_t i = 0; i < program_.inputs().size(); ++i) {
        const Node& n = program_.node(program_.inputs()[i]);
        std::optional<EClassId> c = index_->FindNode(Symbol(n.name), Payload(), {});
        if (!c) {
          return absl::InvalidArgumentError(absl::StrCat("input ", n.name, " is not used by the output"));
        }
        ops.push_back(GenOp{BlockOpKind::kInput, OpKind::kInput, -1, -1, static_cast<int64_t>(i)});
        canon_.push_back(Canonical(ops));
        values.push_back(Value{*c, false, n.shape});
      }
      PRISM_RETURN_IF_ERROR(Extend(ops, values, 0));
    }
    const absl::Time generated = absl::Now();
    PRISM_RETURN_IF_ERROR(ProveAll());
    const absl::Time proved = absl::Now();
    PRISM_RETURN_IF_ERROR(PruneAndRank());
    PRISM_RETURN_IF_ERROR(RecordCache());
    result_.generate_s = absl::ToDoubleSeconds(generated - start);
    result_.prove_s = absl::ToDoubleSeconds(proved - generated);
    result_.prune_s = absl::ToDoubleSeconds(absl::Now() - proved);
    std::stable_sort(result_.families.begin(), result_.families.end(),
                     [](const FamilyResult& x, const FamilyResult& y) { return x.rank_us < y.rank_us; });
    result_.funnel.survivors = static_cast<int64_t>(result_.families.size());
    result_.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
    Report("done", 0, 0, /*force=*/true);
    return std::move(result_);
  }

 private:
  absl::Status BuildTarget() {
    PRISM_ASSIGN_OR_RETURN(rules_, equiv::LoadDefaultRules(ctx_));
    PRISM_ASSIGN_OR_RETURN(equiv::Term goal, equiv::LowerProgramOutput(program_, 0));
    graph_ = std::make_unique<equiv::EGraph>(
        &ctx_, std::make_unique<equiv::TensorAnalysis>(equiv::ProgramEnv(program_, &ctx_)));
    const EClassId root = graph_->AddTerm(goal);
    equiv::Runner(graph_.get()).Run(rules_.rewrites());
    root_ = graph_->Find(root);
    ComputeDepths();
    index_ = std::make_unique<equiv::SubtermIndex>(graph_.get());
    return absl::OkStatus();
  }

  void CollectVocabulary() {
    for (const Node& n : program_.nodes()) {
      const OpInfo& info = GetOpInfo(n.op);
      if (n.op == OpKind::kMatMul) matmul_ = true;
      if (info.category == OpCategory::kUnary && n.op != OpKind::kScale) unary_.insert(n.op);
      if (info.category == OpCategory::kBinary) binary_.insert(n.op);
      if (n.op == OpKind::kSum) sum_ = true;
      if (n.op == OpKind::kMax) max_ = true;
      if (n.op == OpKind::kRmsNorm) rms_ = true;
      if (n.op == OpKind::kSoftmax) {
        unary_.insert(OpKind::kExp);
        binary_.insert(OpKind::kDiv);
        sum_ = true;
      }
    }
    if (rms_) binary_.insert(OpKind::kMul);
    for (TensorId in : program_.inputs()) {
      const Shape& s = program_.node(in).shape;
      if (!s.empty()) counts_.insert(s.back());
    }
  }

  std::optional<EClassId> Int(int64_t v) {
    return index_->FindNode(LeafOpFor(Payload::Kind::kInt), Payload::Int(v), {});
  }
  std::optional<EClassId> Node1(absl::string_view op, std::vector<std::optional<EClassId>> kids) {
    std::vector<EClassId> k;
    for (auto& c : kids) {
      if (!c) return std::nullopt;
      k.push_back(*c);
    }
    return index_->FindNode(Symbol(op), Payload(), k);
  }

  // The abstract value of `op` over `values`, or nullopt if it is not in the target.
  std::optional<Value> Abstract(const GenOp& op, const std::vector<Value>& values) {
    const Value& a = values[op.a];
    const auto last = [&](const Value& v) { return Int(static_cast<int64_t>(v.shape.size()) - 1); };
    auto keep_last1 = [](std::vector<int64_t> s) {
      s.back() = 1;
      return s;
    };
    Value out;
    out.after = a.after;
    std::optional<EClassId> c;
    switch (op.kind) {
      case BlockOpKind::kMatMul: {
        const Value& b = values[op.b];
        out.after = a.after || b.after;
        if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2]) {
          return std::nullopt;
        }
        c = Node1("matmul", {a.cls, b.cls});
        out.shape = b.shape.size() > a.shape.size() ? b.shape : a.shape;
        out.shape[out.shape.size() - 2] = a.shape[a.shape.size() - 2];
        out.shape.back() = b.shape.back();
        break;
      }
      case BlockOpKind::kUnary:
        c = Node1(GetOpInfo(op.fn).name, {a.cls});
        out.shape = a.shape;
        break;
      case BlockOpKind::kBinary: {
        const Value& b = values[op.b];
        out.after = a.after || b.after;
        c = Node1(GetOpInfo(op.fn).name, {a.cls, b.cls});
        out.shape = Broadcast(a.shape, b.shape);
        break;
      }
      case BlockOpKind::kReduce:
        c = Node1(GetOpInfo(op.fn).name, {a.cls, last(a)});
        out.shape = keep_last1(a.shape);
        break;
      case BlockOpKind::kRms:
        c = Node1("rms_norm", {a.cls, last(a), index_->FindNode(LeafOpFor(Payload::Kind::kReal),
                                                                Payload::Real(kDefaultRmsEps), {})});
        out.shape = a.shape;
        break;
      case BlockOpKind::kInvRms: {
        const std::optional<EClassId> eps =
            index_->FindNode(LeafOpFor(Payload::Kind::kReal), Payload::Real(kDefaultRmsEps), {});
        c = Node1("rsqrt", {Node1("add", {Node1("div", {a.cls, Int(op.count)}), eps})});
        out.shape = a.shape;
        break;
      }
      case BlockOpKind::kAccSum:
        c = a.cls;
        out.shape = a.shape;
        out.after = true;
        break;
      case BlockOpKind::kAccSumLast:
        c = Node1("sum", {a.cls, last(a)});
        out.shape = keep_last1(a.shape);
        out.after = true;
        break;
      case BlockOpKind::kAccSumSqLast:
        c = Node1("sum", {Node1("square", {a.cls}), last(a)});
        out.shape = keep_last1(a.shape);
        out.after = true;
        break;
      case BlockOpKind::kAccMaxLast:
        c = Node1("max", {a.cls, last(a)});
        out.shape = keep_last1(a.shape);
        out.after = true;
        break;
      default:
        return std::nullopt;
    }
    if (!c) return std::nullopt;
    out.cls = graph_->Find(*c);
    return out;
  }

  std::vector<GenOp> Candidates(const std::vector<GenOp>& ops, const std::vector<Value>& values,
                                int accumulators) const {
    std::vector<GenOp> out;
    const int n = static_cast<int>(values.size());
    for (int i = 0; i < n; ++i) {
      if (matmul_) {
        for (int j = 0; j < n; ++j) out.push_back({BlockOpKind::kMatMul, OpKind::kMatMul, i, j, 0});
      }
      for (OpKind f : unary_) out.push_back({BlockOpKind::kUnary, f, i, -1, 0});
      for (OpKind f : binary_) {
        const bool commutative = f == OpKind::kAdd || f == OpKind::kMul;
        for (int j = commutative ? i : 0; j < n; ++j) {
          if (j != i) out.push_back({BlockOpKind::kBinary, f, i, j, 0});
        }
      }
      if (sum_) out.push_back({BlockOpKind::kReduce, OpKind::kSum, i, -1, 0});
      if (max_) out.push_back({BlockOpKind::kReduce, OpKind::kMax, i, -1, 0});
      if (rms_) {
        out.push_back({BlockOpKind::kRms, OpKind::kInput, i, -1, 0});
        for (int64_t c : counts_) out.push_back({BlockOpKind::kInvRms, OpKind::kInput, i, -1, c});
      }
      if (accumulators < config_.max_accumulators && !values[i].after) {
        // Canonical accumulators: acc_sum(sum(x, last)) is acc_sum_last(x) and
        // acc_sum_last(square(x)) is acc_sumsq_last(x) (same values, same phases), so only
        // the fused forms are generated.
        const bool sum_last = ops[i].kind == BlockOpKind::kReduce && ops[i].fn == OpKind::kSum;
        const bool square = ops[i].kind == BlockOpKind::kUnary && ops[i].fn == OpKind::kSquare;
        if (!sum_last) out.push_back({BlockOpKind::kAccSum, OpKind::kInput, i, -1, 0});
        if ((sum_ || rms_) && !(square && rms_)) {
          out.push_back({BlockOpKind::kAccSumLast, OpKind::kInput, i, -1, 0});
        }
        if (rms_) out.push_back({BlockOpKind::kAccSumSqLast, OpKind::kInput, i, -1, 0});
        if (max_) out.push_back({BlockOpKind::kAccMaxLast, OpKind::kInput, i, -1, 0});
      }
    }
    std::sort(out.begin(), out.end(), [](const GenOp& x, const GenOp& y) { return x.Key() < y.Key(); });
    return out;
  }

  // The expression tree of the last op of `ops` (independent of the order the ops were added
  // in), from canon_, the trees of the earlier ops: two op sequences with the same tree are the
  // same structure.
  std::string Canonical(const std::vector<GenOp>& ops) const {
    const GenOp& op = ops.back();
    std::string s = absl::StrCat("(", static_cast<int>(op.kind), ".", static_cast<int>(op.fn), ".",
                                 op.count);
    std::vector<absl::string_view> kids;
    if (op.a >= 0) kids.push_back(canon_[op.a]);
    if (op.b >= 0) kids.push_back(canon_[op.b]);
    // add and mul commute: their operands are unordered.
    if (op.kind == BlockOpKind::kBinary && (op.fn == OpKind::kAdd || op.fn == OpKind::kMul)) {
      std::sort(kids.begin(), kids.end());
    }
    for (absl::string_view k : kids) absl::StrAppend(&s, " ", k);
    return s + ")";
  }

  static bool AllUsed(const std::vector<GenOp>& ops) {
    std::vector<bool> used(ops.size(), false);
    for (const GenOp& op : ops) {
      if (op.a >= 0) used[op.a] = true;
      if (op.b >= 0) used[op.b] = true;
    }
    for (size_t i = 0; i + 1 < ops.size(); ++i) {
      if (!used[i]) return false;
    }
    return true;
  }

  // Whether the ops left (max_block_ops minus the compute ops so far) cannot complete the
  // structure: every value that no op uses yet (inputs included) must still reach the output,
  // and (a) an op consumes at most two values and adds one, so d unused values need at least
  // d − 1 more ops; (b) the value of class c needs at least ⌈depth(c) / 3⌉ more ops, where
  // depth(c) is c's distance from the root in the target e-graph (e-node levels): no block
  // op adds more than three levels to its operands' abstract expressions (inv_rms adds
  // rsqrt, add, div; acc_sumsq_last sum and square; every other op one or none).
  bool Hopeless(const std::vector<GenOp>& ops, const std::vector<Value>& values) const {
    const int left = config_.max_block_ops - static_cast<int>(ops.size() - program_.inputs().size());
    std::vector<bool> used(ops.size(), false);
    for (const GenOp& op : ops) {
      if (op.a >= 0) used[op.a] = true;
      if (op.b >= 0) used[op.b] = true;
    }
    int dangling = 0, need = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (used[i]) continue;
      ++dangling;
      auto it = depth_.find(values[i].cls);
      const int depth = it == depth_.end() ? 0 : it->second;
      need = std::max(need, (depth + 2) / 3);
    }
    need = std::max(need, dangling - 1);
    return need > left;
  }

  // depth_: every target class's distance from the root (breadth-first over e-node children).
  void ComputeDepths() {
    std::vector<EClassId> frontier = {root_};
    depth_[root_] = 0;
    for (size_t k = 0; k < frontier.size(); ++k) {
      const EClassId c = frontier[k];
      const int d = depth_[c];
      for (const equiv::ENode& n : graph_->eclass(c).nodes) {
        for (EClassId child : n.children) {
          const EClassId r = graph_->Find(child);
          if (depth_.emplace(r, d + 1).second) frontier.push_back(r);
        }
      }
    }
  }

  // Reports progress when the interval has passed (or always, for `force`); calling thread only.
  void Report(const char* stage, int64_t done = 0, int64_t total = 0, bool force = false) {
    if (!config_.progress) return;
    const absl::Time now = absl::Now();
    if (!force && now < next_report_) return;
    next_report_ = now + config_.progress_interval;
    SearchProgress p;
    p.stage = stage;
    p.elapsed_s = absl::ToDoubleSeconds(now - start_);
    p.generated = result_.funnel.generated;
    p.structures = result_.funnel.structures;
    p.candidates = static_cast<int64_t>(candidates_.size());
    p.done = done;
    p.total = total;
    config_.progress(p);
  }

  // Whether the current op set (canon_, as a set) was explored before; records it if not.
  bool StateSeen() {
    std::vector<absl::string_view> keys(canon_.begin(), canon_.end());
    std::sort(keys.begin(), keys.end());
    return !states_seen_.insert(absl::HashOf(keys)).second;
  }

  absl::Status Extend(std::vector<GenOp>& ops, std::vector<Value>& values, int accumulators) {
    if (absl::Now() > deadline_) {
      result_.budget_exhausted = true;
      return absl::OkStatus();
    }
    // Compute ops and accumulators (inputs and the store are not counted).
    if (static_cast<int>(ops.size() - program_.inputs().size()) >= config_.max_block_ops) {
      return absl::OkStatus();
    }
    for (const GenOp& op : Candidates(ops, values, accumulators)) {
      ++result_.funnel.generated;
      if ((result_.funnel.generated & 1023) == 0) Report("generate");
      std::optional<Value> v = Abstract(op, values);
      if (!v) {
        ++result_.funnel.pruned_abstract;
        continue;
      }
      bool duplicate = false;
      for (const Value& w : values) duplicate = duplicate || (w.cls == v->cls && w.after == v->after);
      if (duplicate) continue;
      ops.push_back(op);
      values.push_back(*v);
      canon_.push_back(Canonical(ops));
      // Canonical generation: an op set is explored once, whatever order its ops were added
      // in (the continuations of a set do not depend on the order).
      if (StateSeen()) {
        ++result_.funnel.revisited;
      } else if (v->cls == root_) {
        if (AllUsed(ops) && structures_seen_.insert(canon_.back()).second) {
          PRISM_RETURN_IF_ERROR(ResolveMaps(ops, values));
        }
      } else if (Hopeless(ops, values)) {
        ++result_.funnel.pruned_bound;
      } else {
        const bool acc = IsAccumulator(op.kind);
        PRISM_RETURN_IF_ERROR(Extend(ops, values, accumulators + (acc ? 1 : 0)));
      }
      canon_.pop_back();
      ops.pop_back();
      values.pop_back();
      if (result_.budget_exhausted) break;
    }
    return absl::OkStatus();
  }

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

  std::vector<DimClass> MapConstraints(const std::vector<GenOp>& ops) const {
    std::vector<int> parent;
    std::vector<uint8_t> no_grid, no_loop;
    const auto fresh = [&] {
      parent.push_back(static_cast<int>(parent.size()));
      no_grid.push_back(0);
      no_loop.push_back(0);
      return static_cast<int>(parent.size()) - 1;
    };
    const std::function<int(int)> find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    const auto unite = [&](int a, int b) { parent[find(a)] = find(b); };
    struct Dims {
      std::vector<int> slot;
      std::vector<int64_t> size;
    };
    std::vector<Dims> v;
    std::map<int, std::pair<int, int>> slot_to_input;
    // Aligns a's and b's dims from the right, all but the `skip` trailing ones, unifying equal
    // extents > 1; returns the aligned result dims (b's where a lacks one or has extent 1).
    const auto align = [&](const Dims& a, const Dims& b, size_t skip) {
      const size_t ra = a.size.size() - skip, rb = b.size.size() - skip;
      const size_t r = std::max(ra, rb);
      Dims out;
      for (size_t k = 0; k < r; ++k) {
        const bool ha = k + ra >= r, hb = k + rb >= r;
        const size_t ia = k + ra - r, ib = k + rb - r;
        if (ha && hb && a.size[ia] == b.size[ib] && a.size[ia] > 1) unite(a.slot[ia], b.slot[ib]);
        const bool take_a = ha && (!hb || a.size[ia] > 1);
        out.slot.push_back(take_a ? a.slot[ia] : b.slot[ib]);
        out.size.push_back(take_a ? a.size[ia] : b.size[ib]);
      }
      return out;
    };
    for (const GenOp& op : ops) {
      Dims d;
      switch (op.kind) {
        case BlockOpKind::kInput: {
          const Shape& s = program_.node(program_.inputs()[static_cast<size_t>(op.count)]).shape;
          for (size_t k = 0; k < s.size(); ++k) {
            d.slot.push_back(fresh());
            d.size.push_back(s[k]);
            slot_to_input[d.slot.back()] = {static_cast<int>(op.count), static_cast<int>(k)};
          }
          break;
        }
        case BlockOpKind::kMatMul: {
          const Dims& a = v[op.a];
          const Dims& b = v[op.b];
          const size_t ra = a.size.size(), rb = b.size.size();
          if (a.size[ra - 1] == b.size[rb - 2] && a.size[ra - 1] > 1) {
            unite(a.slot[ra - 1], b.slot[rb - 2]);
          }
          no_grid[a.slot[ra - 1]] = no_grid[b.slot[rb - 2]] = 1;
          d = align(a, b, 2);
          d.slot.push_back(a.slot[ra - 2]);
          d.size.push_back(a.size[ra - 2]);
          d.slot.push_back(b.slot[rb - 1]);
          d.size.push_back(b.size[rb - 1]);
          break;
        }
        case BlockOpKind::kBinary: d = align(v[op.a], v[op.b], 0); break;
        case BlockOpKind::kRms:
          d = v[op.a];
          no_grid[d.slot.back()] = no_loop[d.slot.back()] = 1;
          break;
        case BlockOpKind::kAccSum:
          d = v[op.a];
          for (int sl : d.slot) no_loop[sl] = 1;
          break;
        case BlockOpKind::kReduce:
        case BlockOpKind::kAccSumLast:
        case BlockOpKind::kAccSumSqLast:
        case BlockOpKind::kAccMaxLast:
          d = v[op.a];
          if (op.kind != BlockOpKind::kReduce) {
            for (size_t k = 0; k + 1 < d.slot.size(); ++k) no_loop[d.slot[k]] = 1;
          }
          no_grid[d.slot.back()] = 1;
          d.slot.back() = fresh();
          d.size.back() = 1;
          break;
        default: d = v[op.a]; break;  // unary, inv_rms: the operand's tile dims
      }
      v.push_back(std::move(d));
    }
    std::map<int, DimClass> classes;
    for (size_t sl = 0; sl < parent.size(); ++sl) {
      DimClass& c = classes[find(static_cast<int>(sl))];
      c.no_grid = c.no_grid || no_grid[sl];
      c.no_loop = c.no_loop || no_loop[sl];
      auto it = slot_to_input.find(static_cast<int>(sl));
      if (it != slot_to_input.end()) c.members.push_back(it->second);
    }
    const Dims& out = v.back();
    for (size_t k = 0; k < out.slot.size(); ++k) classes[find(out.slot[k])].output_dim = static_cast<int64_t>(k);
    std::vector<DimClass> result;
    for (auto& [root, c] : classes) {
      if (!c.members.empty()) result.push_back(std::move(c));
    }
    return result;
  }

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

  absl::Status ResolveMaps(const std::vector<GenOp>& ops, const std::vector<Value>& values) {
    const size_t inputs = program_.inputs().size();
    ++result_.funnel.structures;
    if (config_.map_prefilter) {
      equal_ = MapConstraints(ops);
    } else {
      equal_.clear();
    }
    const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
    const int64_t out_rank = static_cast<int64_t>(out_shape.size());
    const int max_axes = std::min<int>(config_.max_grid_dims, static_cast<int>(out_rank));
    Maps m;
    m.imap.assign(inputs, {kR, kR, kR});
    m.fmap.assign(inputs, kR);
    // Axes 0..max_axes, each on a distinct output dim, in increasing dim order.
    std::function<absl::Status(int, int64_t)> choose_omap = [&](int axis, int64_t from) -> absl::Status {
      m.axes = axis;
      PRISM_RETURN_IF_ERROR(AssignInput(ops, values, m, 0));
      if (axis == max_axes || result_.budget_exhausted) return absl::OkStatus();
      for (int64_t d = from; d < out_rank; ++d) {
        if (out_shape[d] < 2) continue;  // nothing to split
        m.omap[axis] = d;
        PRISM_RETURN_IF_ERROR(choose_omap(axis + 1, d + 1));
        m.omap[axis] = kR;
        m.axes = axis;
        if (result_.budget_exhausted) break;
      }
      return absl::OkStatus();
    };
    return choose_omap(0, 0);
  }

  // Whether the maps of inputs 0..last satisfy MapConstraints so far: the assigned members of
  // a class are split alike (by the same set of grid axes, and walked by the forloop or not),
  // as the class's flags and its output dim require.
  bool ConsistentSoFar(const Maps& m, size_t last) const {
    for (const DimClass& c : equal_) {
      int want_grid = -1;
      if (c.output_dim != kR) {
        want_grid = 0;
        for (int a = 0; a < m.axes; ++a) want_grid |= m.omap[a] == c.output_dim ? (1 << a) : 0;
      } else if (c.no_grid) {
        want_grid = 0;
      }
      int want_loop = c.output_dim != kR || c.no_loop ? 0 : -1;
      for (const auto& [i, d] : c.members) {
        if (static_cast<size_t>(i) > last) continue;
        int grid = 0;
        for (int a = 0; a < m.axes; ++a) grid |= m.imap[i][a] == d ? (1 << a) : 0;
        const int loop = m.fmap[i] == d ? 1 : 0;
        if (want_grid < 0) want_grid = grid;
        if (want_loop < 0) want_loop = loop;
        if (grid != want_grid || loop != want_loop) return false;
      }
    }
    return true;
  }

  // Chooses input i's imap (one entry per axis: kR or a dim no other axis of this input splits)
  // and fmap, then recurses; at the end, builds and queues the candidates.
  absl::Status AssignInput(const std::vector<GenOp>& ops, const std::vector<Value>& values, Maps& m,
                           size_t i) {
    const size_t inputs = program_.inputs().size();
    if (i == inputs) return TryMaps(ops, values, m);
    if (absl::Now() > deadline_) {
      result_.budget_exhausted = true;
      return absl::OkStatus();
    }
    const int64_t rank = static_cast<int64_t>(program_.node(program_.inputs()[i]).shape.size());
    std::function<absl::Status(int)> axis_choice = [&](int a) -> absl::Status {
      if (a == m.axes) {
        for (int64_t f = kR; f < rank; ++f) {
          m.fmap[i] = f;
          if (ConsistentSoFar(m, i)) PRISM_RETURN_IF_ERROR(AssignInput(ops, values, m, i + 1));
          if (result_.budget_exhausted) break;
        }
        m.fmap[i] = kR;
        return absl::OkStatus();
      }
      for (int64_t d = kR; d < rank; ++d) {
        bool taken = false;
        for (int b = 0; b < a; ++b) taken = taken || (d != kR && m.imap[i][b] == d);
        if (taken) continue;
        m.imap[i][a] = d;
        PRISM_RETURN_IF_ERROR(axis_choice(a + 1));
        if (result_.budget_exhausted) break;
      }
      m.imap[i][a] = kR;
      return absl::OkStatus();
    };
    return axis_choice(0);
  }

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
  Common DeclareCommon(SGraph& g, const Maps& m, bool split) const {
    const size_t inputs = program_.inputs().size();
    const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
    const auto param = [&](absl::string_view name, ParamRole role, absl::StatusOr<Domain> d) {
      PRISM_CHECK(d.ok(), d.status().message());
      absl::StatusOr<Expr> e = g.AddParam(name, role, *d);
      PRISM_CHECK(e.ok(), e.status().message());
      return *e;
    };
    Common c;
    for (size_t i = 0; i < inputs; ++i) {
      if (m.fmap[i] != kR) {
        c.loop_gcd = std::gcd(c.loop_gcd, program_.node(program_.inputs()[i]).shape[m.fmap[i]]);
      }
    }
    // Grid sizes start at 2: an axis of one block is the family without that axis, which is
    // generated too (so families are disjoint).
    c.grid = {g.One(), g.One(), g.One()};
    for (int a = 0; a < m.axes; ++a) {
      const int64_t d = out_shape[m.omap[a]];
      c.grid[a] = param(kAxisParam[a], ParamRole::kGrid, Domain::DivisorsOf(d, 2, d));
    }
    if (split) {
      c.grid[m.axes] = param("gs", ParamRole::kGrid, Domain::DivisorsOf(c.loop_gcd, 2, c.loop_gcd));
    }
    const bool loop = c.loop_gcd > 0;
    c.forloop = loop ? param("F", ParamRole::kForloop, Domain::DivisorsOf(c.loop_gcd)) : g.One();
    c.threads = param("T", ParamRole::kThreads, Domain::Set({64, 128, 256, 512}));
    c.stages = loop ? param("S", ParamRole::kStages, Domain::Range(1, 4)) : g.One();
    for (size_t i = 0; i < inputs; ++i) {
      const Node& n = program_.node(program_.inputs()[i]);
      c.tensors.push_back(g.AddInput(n.name, n.dtype, n.shape));
    }
    const Node& on = program_.node(program_.outputs()[0].tensor);
    c.output = g.AddOutput(on.name, on.dtype, on.shape);
    return c;
  }

  // Adds block op `op` (operands already translated through `id`) to `kb`.
  static int AddOp(BlockGraphBuilder& kb, SGraph& g, const GenOp& op, const std::vector<int>& id,
                   const std::string& name, int tensor, std::array<int64_t, kNumGridAxes> imap,
                   int64_t fmap) {
    switch (op.kind) {
      case BlockOpKind::kInput: return kb.Input(name, tensor, imap, fmap);
      case BlockOpKind::kMatMul: return kb.MatMul(name, id[op.a], id[op.b]);
      case BlockOpKind::kUnary: return kb.Unary(name, op.fn, id[op.a]);
      case BlockOpKind::kBinary: return kb.Binary(name, op.fn, id[op.a], id[op.b]);
      case BlockOpKind::kReduce: return kb.Reduce(name, op.fn, id[op.a], -1);
      case BlockOpKind::kRms: return kb.Rms(name, id[op.a], -1);
      case BlockOpKind::kInvRms: return kb.InvRms(name, id[op.a], g.Const(op.count));
      default: return kb.Accumulate(name, op.kind, id[op.a]);
    }
  }

  // The one-kernel candidate of `ops` under `m`.
  SGraph BuildOneKernel(const std::vector<GenOp>& ops, const Maps& m) const {
    SGraph g("candidate");
    const Common c = DeclareCommon(g, m, /*split=*/false);
    BlockGraphBuilder kb(g, c.grid, c.threads, c.forloop, c.stages);
    std::vector<int> id;
    for (const GenOp& op : ops) {
      const size_t i = static_cast<size_t>(op.count);
      const bool in = op.kind == BlockOpKind::kInput;
      id.push_back(AddOp(kb, g, op, id, absl::StrCat("v", id.size()), in ? c.tensors[i] : -1,
                         in ? m.imap[i] : std::array<int64_t, kNumGridAxes>{kR, kR, kR},
                         in ? m.fmap[i] : kR));
    }
    kb.Output(id.back(), c.output, m.omap);
    std::move(kb).Finish("k0");
    return g;
  }

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
                                   const Maps& m, const SGraphAnalysis& info) const {
    if (m.axes >= kNumGridAxes) return std::nullopt;
    const std::vector<TileInfo>& tiles = info.tiles[0];
    int64_t loop_gcd = 0;
    for (size_t i = 0; i < m.fmap.size(); ++i) {
      if (m.fmap[i] != kR) loop_gcd = std::gcd(loop_gcd, program_.node(program_.inputs()[i]).shape[m.fmap[i]]);
    }
    if (loop_gcd < 2) return std::nullopt;  // no forloop, or nothing to split
    const size_t n = ops.size();
    std::vector<bool> after(n), boundary(n);
    for (size_t j = 0; j < n; ++j) {
      after[j] = tiles[j].phase == Phase::kAfter && !IsAccumulator(ops[j].kind);
    }
    const auto mark = [&](int operand) {
      if (operand >= 0 && !after[operand]) boundary[operand] = true;
    };
    for (size_t j = 0; j < n; ++j) {
      if (after[j]) {
        mark(ops[j].a);
        mark(ops[j].b);
      }
    }
    mark(static_cast<int>(n) - 1);  // the stored value
    for (size_t j = 0; j < n; ++j) {
      if (!boundary[j]) continue;
      if (tiles[j].phase == Phase::kInvariant && ops[j].kind != BlockOpKind::kInput) return std::nullopt;
      if (tiles[j].phase == Phase::kLoop) return std::nullopt;
    }
    SGraph g("candidate");
    const Common c = DeclareCommon(g, m, /*split=*/true);
    ExprContext& ctx = g.ctx();
    // Partial tensors and the omaps that store them.
    struct Partial {
      int tensor = -1;
      int64_t dim = 0;
      std::array<int64_t, kNumGridAxes> omap{kR, kR, kR};
      BlockOpKind combine = BlockOpKind::kAccSum;
    };
    std::vector<std::optional<Partial>> partial(n);
    for (size_t j = 0; j < n; ++j) {
      if (!boundary[j] || tiles[j].phase != Phase::kAfter) continue;
      if (ops[j].kind == BlockOpKind::kAccOnlineSum || ops[j].kind == BlockOpKind::kAccOnlineMatMul) {
        return std::nullopt;
      }
      const TileInfo& t = tiles[j];
      Partial p;
      for (int a = 0; a < m.axes; ++a) {
        for (size_t d = 0; d < t.grid_split.size(); ++d) {
          if (t.grid_split[d] & (1u << a)) p.omap[a] = static_cast<int64_t>(d);
        }
        if (p.omap[a] == kR) return std::nullopt;  // replicated along axis a: copies
      }
      int64_t free_dim = kR;
      for (size_t d = 0; d < t.grid_split.size(); ++d) {
        if (t.grid_split[d] == 0) free_dim = static_cast<int64_t>(d);
      }
      if (free_dim == kR) return std::nullopt;
      p.dim = free_dim;
      p.omap[m.axes] = free_dim;
      p.combine = ops[j].kind == BlockOpKind::kAccMaxLast ? BlockOpKind::kAccMaxLast : BlockOpKind::kAccSum;
      // The accumulator's whole tensor (its abstract value's shape), gs times along free_dim.
      std::vector<Expr> shape;
      for (size_t d = 0; d < values[j].shape.size(); ++d) {
        const Expr e = ctx.Const(values[j].shape[d]);
        shape.push_back(static_cast<int64_t>(d) == free_dim ? ctx.Mul(e, c.grid[m.axes]) : e);
      }
      p.tensor = g.AddTensor(absl::StrCat("P", j), DType::kF32, std::move(shape));
      partial[j] = p;
    }
    // Kernel k0: every op but the after-loop ones; gs also splits the walked dims.
    {
      BlockGraphBuilder kb(g, c.grid, c.threads, c.forloop, c.stages);
      std::vector<int> id(n, -1);
      for (size_t j = 0; j < n; ++j) {
        if (after[j]) continue;
        const GenOp& op = ops[j];
        const size_t i = static_cast<size_t>(op.count);
        const bool in = op.kind == BlockOpKind::kInput;
        std::array<int64_t, kNumGridAxes> imap{kR, kR, kR};
        int64_t fmap = kR;
        if (in) {
          imap = m.imap[i];
          fmap = m.fmap[i];
          if (fmap != kR) imap[m.axes] = fmap;
        }
        id[j] = AddOp(kb, g, op, id, absl::StrCat("v", j), in ? c.tensors[i] : -1, imap, fmap);
      }
      for (size_t j = 0; j < n; ++j) {
        if (partial[j]) kb.Output(id[j], partial[j]->tensor, partial[j]->omap);
      }
      std::move(kb).Finish("k0");
    }
    // Kernel k1: the partials' reduction and the after-loop ops.
    {
      std::array<Expr, kNumGridAxes> grid = c.grid;
      grid[m.axes] = g.One();
      BlockGraphBuilder kb(g, grid, c.threads, c.grid[m.axes], c.stages);
      std::vector<int> id(n, -1);
      for (size_t j = 0; j < n; ++j) {
        if (partial[j]) {
          std::array<int64_t, kNumGridAxes> imap = partial[j]->omap;
          imap[m.axes] = kR;
          const int in = kb.Input(absl::StrCat("p", j), partial[j]->tensor, imap, partial[j]->dim);
          id[j] = kb.Accumulate(absl::StrCat("r", j), partial[j]->combine, in);
        } else if (boundary[j]) {  // a loop-invariant input tile, loaded again
          const size_t i = static_cast<size_t>(ops[j].count);
          id[j] = kb.Input(absl::StrCat("v", j), c.tensors[i], m.imap[i], kR);
        } else if (after[j]) {
          id[j] = AddOp(kb, g, ops[j], id, absl::StrCat("v", j), -1, {kR, kR, kR}, kR);
        }
      }
      kb.Output(id[n - 1], c.output, m.omap);
      std::move(kb).Finish("k1");
    }
    return g;
  }

  absl::Status TryMaps(const std::vector<GenOp>& ops, const std::vector<Value>& values, const Maps& m) {
    if (absl::Now() > deadline_) {
      result_.budget_exhausted = true;
      return absl::OkStatus();
    }
    const size_t inputs = program_.inputs().size();
    bool any_loop = false;
    for (size_t i = 0; i < inputs; ++i) any_loop = any_loop || m.fmap[i] != kR;
    // Every axis must split some input (else its blocks store copies).
    for (int a = 0; a < m.axes; ++a) {
      bool splits = false;
      for (size_t i = 0; i < inputs; ++i) splits = splits || m.imap[i][a] != kR;
      if (!splits) return absl::OkStatus();
    }
    // Canonical: without a forloop an accumulator is the identity, so the same family without
    // it is generated too.
    if (!any_loop) {
      for (const GenOp& op : ops) {
        if (IsAccumulator(op.kind)) return absl::OkStatus();
      }
    }
    ++result_.funnel.map_validated;
    SGraph g = BuildOneKernel(ops, m);
    absl::StatusOr<SGraphAnalysis> info = Validate(g);
    if (!info.ok()) return absl::OkStatus();
    const size_t t = templates_.size();
    templates_.push_back(Template{ops, m});
    if (config_.max_kernels >= 2) {
      if (std::optional<SGraph> split = BuildSplit(ops, values, m, *info)) {
        ++result_.funnel.split_built;
        if (Validate(*split).ok()) Queue(std::move(*split), t);
      }
    }
    Queue(std::move(g), t);
    return absl::OkStatus();
  }

  void Queue(SGraph g, size_t template_index) {
    if (!seen_.insert(g.StructuralHash()).second) return;
    ++result_.funnel.mapped;
    Candidate c;
    c.graph = std::move(g);
    c.template_index = template_index;
    candidates_.push_back(std::move(c));
  }

  // ---- the shape-independent cache (cache.h) -------------------------------------------------
  // A structure and its maps: everything TryMaps needs to rebuild its candidates at any sizes.
  struct Template {
    std::vector<GenOp> ops;
    Maps maps;
  };

  static std::optional<BlockOpKind> BlockOpByName(absl::string_view name) {
#define PRISM_BLOCK_OP(e, spelling, cat, arity) \
    if (name == spelling) return BlockOpKind::e;
#include "prism/block/block_ops.def"
#undef PRISM_BLOCK_OP
    return std::nullopt;
  }

  // The Program's structure without its sizes (dims other than 1), the target and the
  // generation settings: equal keys generate the same structures.
  std::string CacheKey() const {
    StableHasher h;
    h.Add(uint64_t{0x5ea4c4});  // format 1
    for (const Node& n : program_.nodes()) {
      h.Add(static_cast<int>(n.op)).Add(static_cast<int>(n.dtype)).Add(n.dim).Add(n.scalar).Add(n.eps);
      h.Add(static_cast<uint64_t>(n.operands.size()));
      for (TensorId o : n.operands) h.Add(o.value());
      h.Add(static_cast<uint64_t>(n.shape.size()));
      for (int64_t d : n.shape) h.Add(d == 1);
    }
    for (const OutputDecl& o : program_.outputs()) h.Add(o.tensor.value());
    for (char ch : target_.name) h.Add(static_cast<int>(ch));
    h.Add(config_.max_kernels).Add(config_.max_grid_dims).Add(config_.max_block_ops).Add(config_.max_accumulators);
    return absl::StrCat("search-", HashToHex(h.Finish()));
  }

  // inv_rms's count refers to the last dim of an input (the one it was taken from).
  nlohmann::json TemplateJson(const Template& t) const {
    nlohmann::json ops = nlohmann::json::array();
    for (const GenOp& op : t.ops) {
      nlohmann::json j = {{"kind", std::string(GetBlockOpInfo(op.kind).name)}};
      if (op.kind == BlockOpKind::kInput) j["input"] = op.count;
      if (op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary || op.kind == BlockOpKind::kReduce) {
        j["fn"] = std::string(GetOpInfo(op.fn).name);
      }
      if (op.a >= 0) j["a"] = op.a;
      if (op.b >= 0) j["b"] = op.b;
      if (op.kind == BlockOpKind::kInvRms) {
        for (size_t i = 0; i < program_.inputs().size(); ++i) {
          const Shape& sh = program_.node(program_.inputs()[i]).shape;
          if (!sh.empty() && sh.back() == op.count) {
            j["count_of_input"] = i;
            break;
          }
        }
      }
      ops.push_back(j);
    }
    nlohmann::json imap = nlohmann::json::array();
    for (const auto& a : t.maps.imap) imap.push_back(std::vector<int64_t>(a.begin(), a.end()));
    return {{"ops", ops},
            {"axes", t.maps.axes},
            {"omap", std::vector<int64_t>(t.maps.omap.begin(), t.maps.omap.end())},
            {"imap", imap},
            {"fmap", t.maps.fmap}};
  }

  // The template at this Program's sizes, or nullopt when it does not apply to them (an entry
  // of another format, or maps that refer to dims of extent 1 now).
  std::optional<std::pair<Template, std::vector<Value>>> TemplateFromJson(const nlohmann::json& j) const {
    const size_t inputs = program_.inputs().size();
    Template t;
    std::vector<Value> values;
    const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
    try {
      for (const nlohmann::json& o : j.at("ops")) {
        std::optional<BlockOpKind> kind = BlockOpByName(o.at("kind").get<std::string>());
        if (!kind) return std::nullopt;
        GenOp op;
        op.kind = *kind;
        op.a = o.value("a", -1);
        op.b = o.value("b", -1);
        const int n = static_cast<int>(t.ops.size());
        if ((op.a >= n) || (op.b >= n) || (op.kind != BlockOpKind::kInput && op.a < 0)) return std::nullopt;
        if (o.contains("fn")) {
          std::optional<OpKind> fn = ParseOpName(o.at("fn").get<std::string>());
          if (!fn) return std::nullopt;
          op.fn = *fn;
        }
        if (op.kind == BlockOpKind::kInput) {
          op.count = o.at("input").get<int64_t>();
          if (op.count < 0 || op.count >= static_cast<int64_t>(inputs)) return std::nullopt;
        }
        if (op.kind == BlockOpKind::kInvRms) {
          const size_t i = o.at("count_of_input").get<size_t>();
          if (i >= inputs || program_.node(program_.inputs()[i]).shape.empty()) return std::nullopt;
          op.count = program_.node(program_.inputs()[i]).shape.back();
        }
        std::optional<Value> v = ShapeOf(op, values);
        if (!v) return std::nullopt;
        t.ops.push_back(op);
        values.push_back(*v);
      }
      t.maps.axes = j.at("axes").get<int>();
      const std::vector<int64_t> omap = j.at("omap").get<std::vector<int64_t>>();
      const std::vector<std::vector<int64_t>> imap = j.at("imap").get<std::vector<std::vector<int64_t>>>();
      t.maps.fmap = j.at("fmap").get<std::vector<int64_t>>();
      if (t.maps.axes < 0 || t.maps.axes > kNumGridAxes || omap.size() != kNumGridAxes ||
          imap.size() != inputs || t.maps.fmap.size() != inputs) {
        return std::nullopt;
      }
      for (int a = 0; a < kNumGridAxes; ++a) t.maps.omap[a] = omap[a];
      for (int a = 0; a < t.maps.axes; ++a) {
        if (t.maps.omap[a] < 0 || t.maps.omap[a] >= static_cast<int64_t>(out_shape.size()) ||
            out_shape[t.maps.omap[a]] < 2) {
          return std::nullopt;
        }
      }
      for (size_t i = 0; i < inputs; ++i) {
        const int64_t rank = static_cast<int64_t>(program_.node(program_.inputs()[i]).shape.size());
        if (imap[i].size() != kNumGridAxes || t.maps.fmap[i] < kR || t.maps.fmap[i] >= rank) return std::nullopt;
        std::array<int64_t, kNumGridAxes> row{kR, kR, kR};
        for (int a = 0; a < kNumGridAxes; ++a) {
          if (imap[i][a] < kR || imap[i][a] >= rank) return std::nullopt;
          row[a] = imap[i][a];
        }
        t.maps.imap.push_back(row);
      }
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;
    }
    return std::make_pair(std::move(t), std::move(values));
  }

  // The whole-tensor shape of op's result (the e-graph-free part of Abstract()).
  std::optional<Value> ShapeOf(const GenOp& op, const std::vector<Value>& values) const {
    Value out;
    if (op.kind == BlockOpKind::kInput) {
      out.shape = program_.node(program_.inputs()[static_cast<size_t>(op.count)]).shape;
      return out;
    }
    const Value& a = values[op.a];
    out.after = a.after || IsAccumulator(op.kind);
    switch (op.kind) {
      case BlockOpKind::kMatMul: {
        if (op.b < 0) return std::nullopt;
        const Value& b = values[op.b];
        if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2]) {
          return std::nullopt;
        }
        out.shape = b.shape.size() > a.shape.size() ? b.shape : a.shape;
        out.shape[out.shape.size() - 2] = a.shape[a.shape.size() - 2];
        out.shape.back() = b.shape.back();
        out.after = out.after || b.after;
        return out;
      }
      case BlockOpKind::kBinary:
        if (op.b < 0) return std::nullopt;
        out.shape = Broadcast(a.shape, values[op.b].shape);
        out.after = out.after || values[op.b].after;
        return out;
      case BlockOpKind::kReduce:
      case BlockOpKind::kAccSumLast:
      case BlockOpKind::kAccSumSqLast:
      case BlockOpKind::kAccMaxLast:
        out.shape = a.shape;
        if (out.shape.empty()) return std::nullopt;
        out.shape.back() = 1;
        return out;
      case BlockOpKind::kUnary:
      case BlockOpKind::kRms:
      case BlockOpKind::kInvRms:
      case BlockOpKind::kAccSum:
        out.shape = a.shape;
        return out;
      default:
        return std::nullopt;
    }
  }

  // On a hit, queues the cached candidates rebuilt at this Program's sizes; false on a miss.
  bool ReplayCache() {
    if (config_.cache == nullptr) return false;
    std::optional<nlohmann::json> entry = config_.cache->Get(CacheKey());
    if (!entry || !entry->contains("templates") || !(*entry)["templates"].is_array()) return false;
    result_.cache_hit = true;
    for (const nlohmann::json& tj : (*entry)["templates"]) {
      std::optional<std::pair<Template, std::vector<Value>>> t = TemplateFromJson(tj);
      if (!t) continue;
      absl::Status s = TryMaps(t->first.ops, t->second, t->first.maps);
      (void)s;  // TryMaps only fails on budget, which it records
    }
    return true;
  }

  // After a complete search: records the structures of the proved candidates.
  absl::Status RecordCache() {
    if (config_.cache == nullptr || result_.cache_hit || result_.budget_exhausted) return absl::OkStatus();
    std::vector<bool> keep(templates_.size(), false);
    for (const Candidate& c : candidates_) {
      if (c.proof && c.proof->verdict == equiv::Verdict::kProved) keep[c.template_index] = true;
    }
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < templates_.size(); ++i) {
      if (keep[i]) list.push_back(TemplateJson(templates_[i]));
    }
    nlohmann::json entry = {{"format", "prism.search_cache"},
                            {"version", 1},
                            {"target", target_.name},
                            {"templates", list}};
    return config_.cache->Put(CacheKey(), std::move(entry));
  }

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
    size_t template_index = 0;                // templates_[...] that built it
  };

  int Workers(size_t jobs) const {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int t = config_.threads > 0 ? config_.threads : cores;
    return static_cast<int>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(t), jobs)));
  }

  // Runs fn(worker_state, k) for k in [0, n) on Workers(n) threads; each thread first makes its
  // own state with make() (e.g. a Pruner: one Z3 context per worker). Which thread runs which k
  // does not matter to the result: every job writes only its own slot.
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

  absl::Status ProveAll() {
    struct NoState {};
    return ParallelFor(
        "prove", candidates_.size(), [] { return absl::StatusOr<NoState>(NoState{}); },
        [&](NoState&, size_t i) {
          Candidate& c = candidates_[i];
          if (absl::Now() > deadline_) return;
          // A fresh context per candidate: parameter domains differ between candidates.
          ExprContext pctx;
          absl::StatusOr<equiv::RuleSet> rules = equiv::LoadDefaultRules(pctx);
          if (!rules.ok()) {
            c.status = rules.status();
            return;
          }
          equiv::ProveOptions options = equiv::SGraphProveOptions();
          options.random_test.max_ops = config_.refute_max_ops;
          absl::StatusOr<std::vector<equiv::ProveResult>> proofs =
              equiv::ProveSGraph(pctx, c.graph, program_, *rules, options);
          if (!proofs.ok()) {
            c.status = proofs.status();
          } else {
            c.proof = std::move((*proofs)[0]);
          }
        });
  }

  // Ranks every proved candidate by enumerating its instances (no incumbent), proves the ones
  // with no feasible instance infeasible, takes the cheapest as the incumbent, then decides
  // every family whose best instance is dearer than the incumbent against it (dominance).
  // Families that tie with the incumbent survive. All Z3 work runs on one Pruner per worker;
  // the incumbent is fixed before the dominance queries, so the result does not depend on
  // scheduling.
  absl::Status PruneAndRank() {
    std::vector<size_t> proved;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      Candidate& c = candidates_[i];
      PRISM_RETURN_IF_ERROR(c.status);
      if (!c.proof) {
        result_.budget_exhausted = true;
        continue;
      }
      if (c.proof->verdict != equiv::Verdict::kProved) {
        ++result_.funnel.unproved;
        if (c.proof->verdict == equiv::Verdict::kRefuted) ++result_.funnel.refuted;
        continue;
      }
      ++result_.funnel.proved;
      proved.push_back(i);
    }
    const auto make_pruner = [&] {
      prune::PrunerOptions options;
      options.brute_force_limit = config_.brute_force_limit;
      options.keep_queries = config_.record_pruned;
      return prune::Pruner::Create(target_, options);
    };
    PRISM_RETURN_IF_ERROR(ParallelFor("rank", proved.size(), make_pruner, [&](prune::Pruner& pruner, size_t k) {
      Candidate& c = candidates_[proved[k]];
      c.status = Rank(pruner, c);
    }));
    for (size_t i : proved) PRISM_RETURN_IF_ERROR(candidates_[i].status);
    // The incumbent: the ranking model's estimate of the best family (RankUs, at least its
    // lower bound). Dominance: a family is pruned only when Z3 proves that no instance's lower
    // bound is below the incumbent, so the family the ranking puts first always survives.
    // Families whose best instance's lower bound is already below it cannot be dominated
    // and are not asked about.
    for (size_t i : proved) {
      const Candidate& c = candidates_[i];
      if (c.cost_us >= 0 && (!incumbent_ || RankUs(c) < *incumbent_)) incumbent_ = RankUs(c);
    }
    result_.incumbent_us = incumbent_;
    std::vector<size_t> dearer;
    if (config_.prune && incumbent_) {
      for (size_t i : proved) {
        const Candidate& c = candidates_[i];
        if (c.cost_us >= *incumbent_) dearer.push_back(i);
      }
    }
    PRISM_RETURN_IF_ERROR(ParallelFor("prune", dearer.size(), make_pruner, [&](prune::Pruner& pruner, size_t k) {
      Candidate& c = candidates_[dearer[k]];
      absl::StatusOr<prune::Decision> d = pruner.Decide(*c.family, incumbent_);
      if (d.ok()) {
        c.decision = *std::move(d);
      } else {
        c.status = d.status();
      }
    }));
    for (size_t i : proved) {
      Candidate& c = candidates_[i];
      PRISM_RETURN_IF_ERROR(c.status);
      if (c.decision && c.decision->prunes()) {
        const std::vector<std::string>& rules_hit =
            std::holds_alternative<prune::Infeasible>(c.decision->result)
                ? std::get<prune::Infeasible>(c.decision->result).rules
                : std::get<prune::Dominated>(c.decision->result).rules;
        for (const std::string& r : rules_hit) ++result_.funnel.pruned_by_rule[r];
        if (config_.record_pruned) {
          PrunedFamily p = PrunedOf(c);
          const bool infeasible = std::holds_alternative<prune::Infeasible>(c.decision->result);
          p.verdict = infeasible ? "infeasible" : "dominated";
          p.rules = rules_hit;
          if (!infeasible) p.incumbent_us = std::get<prune::Dominated>(c.decision->result).incumbent_us;
          p.decision = c.decision->ToString();
          p.smt_query = c.decision->smt_query;
          p.smt2 = c.decision->smt_text;
          result_.pruned.push_back(std::move(p));
        }
        continue;
      }
      if (c.cost_us < 0) {
        ++result_.funnel.pruned_by_rule["no_feasible_instance"];
        if (config_.record_pruned) {
          PrunedFamily p = PrunedOf(c);
          p.verdict = "no_feasible_instance";
          if (c.decision) p.decision = c.decision->ToString();
          result_.pruned.push_back(std::move(p));
        }
        continue;
      }
      FamilyResult fr;
      fr.cost_us = c.cost_us;
      fr.rank_us = RankUs(c);
      fr.best = c.best;
      fr.proof_steps = c.proof->proof->steps.size();
      fr.kernels = static_cast<int>(c.graph.kernels().size());
      fr.graph = std::make_unique<SGraph>(std::move(c.graph));
      result_.families.push_back(std::move(fr));
    }
    return absl::OkStatus();
  }

  // The parts of a pruned family's record that do not depend on its verdict (moves the graph).
  static PrunedFamily PrunedOf(Candidate& c) {
    PrunedFamily p;
    p.name = c.family->name();
    p.kernels = static_cast<int>(c.graph.kernels().size());
    p.cost_us = c.cost_us;
    p.graph = std::make_unique<SGraph>(std::move(c.graph));
    return p;
  }

  // The ranking model (DESIGN.md §5: calibrated, unlike the dominance bound): the lower bound
  // with each kernel's launch at the target's measured typical overhead instead of the
  // dominance floor. The instance it prefers is the lower bound's (the term is constant per
  // family).
  double RankUs(const Candidate& c) const {
    const double extra_ns = static_cast<double>(target_.launch_overhead_ns - target_.launch_floor_ns);
    return c.cost_us + static_cast<double>(c.graph.kernels().size()) * std::max(0.0, extra_ns) / 1000.0;
  }

  // Builds c's family and finds its cheapest instance among the first instances_per_family
  // feasible ones; with none (and pruning on), asks Z3 for the infeasibility proof.
  absl::Status Rank(prune::Pruner& pruner, Candidate& c) const {
    c.fctx = std::make_unique<ExprContext>();
    PRISM_ASSIGN_OR_RETURN(prune::Family family, BuildFamily(c.graph, *c.fctx));
    c.family = std::move(family);
    PRISM_ASSIGN_OR_RETURN(std::vector<Assignment> instances,
                           pruner.EnumerateInstances(*c.family, std::nullopt, config_.instances_per_family));
    for (const Assignment& a : instances) {
      PRISM_ASSIGN_OR_RETURN(prune::InstanceCheck check, pruner.CheckInstance(*c.family, a, std::nullopt));
      if (!check.ok()) continue;
      if (c.cost_us < 0 || check.cost_lower_bound_us < c.cost_us) {
        c.cost_us = check.cost_lower_bound_us;
        c.best = a;
      }
    }
    if (c.cost_us < 0 && config_.prune) {
      PRISM_ASSIGN_OR_RETURN(prune::Decision d, pruner.Decide(*c.family, std::nullopt));
      c.decision = std::move(d);
    }
    return absl::OkStatus();
  }

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

}  // namespace

absl::StatusOr<SearchResult> Search(const Program& program, const SearchConfig& config,
                                    const Target& target) {
  return Searcher(program, config, target).Run();
}

}  // namespace prism::search
