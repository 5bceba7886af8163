#include "prism/search/search.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
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
    deadline_ = start + config_.budget;
    if (program_.outputs().size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search supports programs with one output; this one has ", program_.outputs().size()));
    }
    if (config_.max_kernels != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_kernels = ", config_.max_kernels, ": only one-kernel search is implemented"));
    }
    PRISM_RETURN_IF_ERROR(BuildTarget());
    PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target_));
    pruner_ = &pruner;
    CollectVocabulary();
    std::vector<GenOp> ops;
    std::vector<Value> values;
    for (size_t i = 0; i < program_.inputs().size(); ++i) {
      const Node& n = program_.node(program_.inputs()[i]);
      std::optional<EClassId> c = index_->FindNode(Symbol(n.name), Payload(), {});
      if (!c) return absl::InvalidArgumentError(absl::StrCat("input ", n.name, " is not used by the output"));
      ops.push_back(GenOp{BlockOpKind::kInput, OpKind::kInput, -1, -1, static_cast<int64_t>(i)});
      values.push_back(Value{*c, false, n.shape});
    }
    PRISM_RETURN_IF_ERROR(Extend(ops, values, 0));
    std::stable_sort(result_.families.begin(), result_.families.end(),
                     [](const FamilyResult& x, const FamilyResult& y) { return x.cost_us < y.cost_us; });
    result_.funnel.survivors = static_cast<int64_t>(result_.families.size());
    result_.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
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

  std::vector<GenOp> Candidates(const std::vector<Value>& values, int accumulators) const {
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
        out.push_back({BlockOpKind::kAccSum, OpKind::kInput, i, -1, 0});
        if (sum_ || rms_) out.push_back({BlockOpKind::kAccSumLast, OpKind::kInput, i, -1, 0});
        if (rms_) out.push_back({BlockOpKind::kAccSumSqLast, OpKind::kInput, i, -1, 0});
        if (max_) out.push_back({BlockOpKind::kAccMaxLast, OpKind::kInput, i, -1, 0});
      }
    }
    std::sort(out.begin(), out.end(), [](const GenOp& x, const GenOp& y) { return x.Key() < y.Key(); });
    return out;
  }

  // The expression tree of op `i` (independent of the order the ops were added in): two op
  // sequences with the same tree are the same structure.
  static std::string Canonical(const std::vector<GenOp>& ops, size_t i) {
    const GenOp& op = ops[i];
    std::string s = absl::StrCat("(", static_cast<int>(op.kind), ".", static_cast<int>(op.fn), ".",
                                 op.count);
    std::vector<std::string> kids;
    if (op.a >= 0) kids.push_back(Canonical(ops, static_cast<size_t>(op.a)));
    if (op.b >= 0) kids.push_back(Canonical(ops, static_cast<size_t>(op.b)));
    // add and mul commute: their operands are unordered.
    if (op.kind == BlockOpKind::kBinary && (op.fn == OpKind::kAdd || op.fn == OpKind::kMul)) {
      std::sort(kids.begin(), kids.end());
    }
    for (const std::string& k : kids) absl::StrAppend(&s, " ", k);
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

  absl::Status Extend(std::vector<GenOp>& ops, std::vector<Value>& values, int accumulators) {
    if (absl::Now() > deadline_) {
      result_.budget_exhausted = true;
      return absl::OkStatus();
    }
    // Inputs + ops + the output store.
    if (static_cast<int>(ops.size()) + 1 >= config_.max_block_ops) return absl::OkStatus();
    const int last = static_cast<int>(ops.size()) - 1;
    const bool last_is_input = ops[last].kind == BlockOpKind::kInput;
    for (const GenOp& op : Candidates(values, accumulators)) {
      const bool consumes_last = op.a == last || op.b == last;
      if (!last_is_input && !consumes_last && !(ops[last].Key() < op.Key())) continue;
      ++result_.funnel.generated;
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
      const bool acc = IsAccumulator(op.kind);
      if (v->cls == root_) {
        if (AllUsed(ops) && structures_seen_.insert(Canonical(ops, ops.size() - 1)).second) {
          ++result_.funnel.structures;
          PRISM_RETURN_IF_ERROR(ResolveMaps(ops));
        }
      } else {
        PRISM_RETURN_IF_ERROR(Extend(ops, values, accumulators + (acc ? 1 : 0)));
      }
      ops.pop_back();
      values.pop_back();
      if (result_.budget_exhausted) break;
    }
    return absl::OkStatus();
  }

  // ---- map resolution, proof, pruning ----------------------------------------------------------
  absl::Status ResolveMaps(const std::vector<GenOp>& ops) {
    const size_t inputs = program_.inputs().size();
    std::vector<int64_t> ranks;
    for (size_t i = 0; i < inputs; ++i) {
      ranks.push_back(static_cast<int64_t>(program_.node(program_.inputs()[i]).shape.size()));
    }
    const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
    // Odometer over (imap, fmap) per input and the omap: each entry in [-1, rank).
    std::vector<int64_t> digit(2 * inputs + 1, kR);
    std::vector<int64_t> hi;
    for (size_t i = 0; i < inputs; ++i) {
      hi.push_back(ranks[i]);
      hi.push_back(ranks[i]);
    }
    hi.push_back(static_cast<int64_t>(out_shape.size()));
    while (true) {
      PRISM_RETURN_IF_ERROR(TryMaps(ops, digit));
      size_t k = 0;
      while (k < digit.size() && ++digit[k] >= hi[k]) digit[k++] = kR;
      if (k == digit.size()) break;
    }
    return absl::OkStatus();
  }

  absl::Status TryMaps(const std::vector<GenOp>& ops, const std::vector<int64_t>& digit) {
    const size_t inputs = program_.inputs().size();
    const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
    const int64_t omap = digit.back();
    bool any_split = false, any_loop = false;
    int64_t loop_gcd = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const Shape& s = program_.node(program_.inputs()[i]).shape;
      any_split = any_split || digit[2 * i] != kR;
      if (digit[2 * i + 1] != kR) {
        any_loop = true;
        loop_gcd = std::gcd(loop_gcd, s[digit[2 * i + 1]]);
      }
    }
    if ((omap == kR) != !any_split) return absl::OkStatus();  // x must split iff it is stored
    // Canonical: without a forloop an accumulator is the identity, so the same family without
    // it is generated too.
    if (!any_loop) {
      for (const GenOp& op : ops) {
        if (IsAccumulator(op.kind)) return absl::OkStatus();
      }
    }
    SGraph g("candidate");
    const auto param = [&](absl::string_view name, ParamRole role, absl::StatusOr<Domain> d) {
      PRISM_CHECK(d.ok(), d.status().message());
      absl::StatusOr<Expr> e = g.AddParam(name, role, *d);
      PRISM_CHECK(e.ok(), e.status().message());
      return *e;
    };
    const Expr gx = omap == kR ? g.One() : param("g", ParamRole::kGrid, Domain::DivisorsOf(out_shape[omap]));
    const Expr f = any_loop ? param("F", ParamRole::kForloop, Domain::DivisorsOf(loop_gcd)) : g.One();
    const Expr t = param("T", ParamRole::kThreads, Domain::Set({64, 128, 256, 512}));
    const Expr st = any_loop ? param("S", ParamRole::kStages, Domain::Range(1, 4)) : g.One();
    std::vector<int> tensors;
    for (size_t i = 0; i < inputs; ++i) {
      const Node& n = program_.node(program_.inputs()[i]);
      tensors.push_back(g.AddInput(n.name, n.dtype, n.shape));
    }
    const Node& on = program_.node(program_.outputs()[0].tensor);
    const int y = g.AddOutput(on.name, on.dtype, on.shape);
    BlockGraphBuilder kb(g, {gx, g.One(), g.One()}, t, f, st);
    std::vector<int> id;
    for (const GenOp& op : ops) {
      const std::string name = absl::StrCat("v", id.size());
      switch (op.kind) {
        case BlockOpKind::kInput: {
          const size_t i = static_cast<size_t>(op.count);
          id.push_back(kb.Input(name, tensors[i], {digit[2 * i], kR, kR}, digit[2 * i + 1]));
          break;
        }
        case BlockOpKind::kMatMul: id.push_back(kb.MatMul(name, id[op.a], id[op.b])); break;
        case BlockOpKind::kUnary: id.push_back(kb.Unary(name, op.fn, id[op.a])); break;
        case BlockOpKind::kBinary: id.push_back(kb.Binary(name, op.fn, id[op.a], id[op.b])); break;
        case BlockOpKind::kReduce: id.push_back(kb.Reduce(name, op.fn, id[op.a], -1)); break;
        case BlockOpKind::kRms: id.push_back(kb.Rms(name, id[op.a], -1)); break;
        case BlockOpKind::kInvRms: id.push_back(kb.InvRms(name, id[op.a], g.Const(op.count))); break;
        default: id.push_back(kb.Accumulate(name, op.kind, id[op.a])); break;
      }
    }
    kb.Output(id.back(), y, {omap, kR, kR});
    std::move(kb).Finish("k0");
    if (!Validate(g).ok()) return absl::OkStatus();
    if (!seen_.insert(g.StructuralHash()).second) return absl::OkStatus();
    ++result_.funnel.mapped;
    // Prove (a fresh context: parameter domains differ between candidates).
    ExprContext pctx;
    PRISM_ASSIGN_OR_RETURN(equiv::RuleSet rules, equiv::LoadDefaultRules(pctx));
    PRISM_ASSIGN_OR_RETURN(std::vector<equiv::ProveResult> proofs,
                           equiv::ProveSGraph(pctx, g, program_, rules, equiv::SGraphProveOptions()));
    if (proofs[0].verdict != equiv::Verdict::kProved) {
      ++result_.funnel.unproved;
      if (proofs[0].verdict == equiv::Verdict::kRefuted) ++result_.funnel.refuted;
      return absl::OkStatus();
    }
    ++result_.funnel.proved;
    // Prune and rank.
    ExprContext fctx;
    PRISM_ASSIGN_OR_RETURN(prune::Family family, BuildFamily(g, fctx));
    if (config_.prune) {
      PRISM_ASSIGN_OR_RETURN(prune::Decision d, pruner_->Decide(family, incumbent_));
      if (d.prunes()) {
        const std::vector<std::string>& rules_hit =
            std::holds_alternative<prune::Infeasible>(d.result)
                ? std::get<prune::Infeasible>(d.result).rules
                : std::get<prune::Dominated>(d.result).rules;
        for (const std::string& r : rules_hit) ++result_.funnel.pruned_by_rule[r];
        return absl::OkStatus();
      }
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<Assignment> instances,
                           pruner_->EnumerateInstances(family, config_.prune ? incumbent_ : std::nullopt,
                                                       config_.instances_per_family));
    FamilyResult fr;
    fr.cost_us = -1;
    for (const Assignment& a : instances) {
      PRISM_ASSIGN_OR_RETURN(prune::InstanceCheck c, pruner_->CheckInstance(family, a, std::nullopt));
      if (!c.ok()) continue;
      if (fr.cost_us < 0 || c.cost_lower_bound_us < fr.cost_us) {
        fr.cost_us = c.cost_lower_bound_us;
        fr.best = a;
      }
    }
    if (fr.cost_us < 0) {
      ++result_.funnel.pruned_by_rule["no_feasible_instance"];
      return absl::OkStatus();
    }
    if (!incumbent_ || fr.cost_us < *incumbent_) incumbent_ = fr.cost_us;
    fr.proof_steps = proofs[0].proof->steps.size();
    fr.graph = std::make_unique<SGraph>(std::move(g));
    result_.families.push_back(std::move(fr));
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
  prune::Pruner* pruner_ = nullptr;
  std::optional<double> incumbent_;
  bool matmul_ = false, sum_ = false, max_ = false, rms_ = false;
  std::set<OpKind> unary_, binary_;
  std::set<int64_t> counts_;
  absl::flat_hash_set<uint64_t> seen_;  // structural hashes of the mapped candidates
  absl::flat_hash_set<std::string> structures_seen_;  // Canonical() of the complete structures
  SearchResult result_;
};

}  // namespace

absl::StatusOr<SearchResult> Search(const Program& program, const SearchConfig& config,
                                    const Target& target) {
  return Searcher(program, config, target).Run();
}

}  // namespace prism::search
