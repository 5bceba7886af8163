// search/: Structure generation: abstract values of block ops, canonical forms, the completion
// bound. (searcher.h)
#include "prism/base/check.h"
#include "searcher.h"

#include <functional>

#include "absl/container/flat_hash_set.h"

namespace prism::search::internal {

std::optional<Value> Searcher::Abstract(const GenOp& op, const std::vector<Value>& values) {
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
      c = op.fn == OpKind::kScale
              ? Node1("scale", {a.cls, index_->FindNode(LeafOpFor(Payload::Kind::kReal),
                                                        Payload::Real(op.scalar), {})})
              : Node1(GetOpInfo(op.fn).name, {a.cls});
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
                                                              Payload::Real(op.scalar), {})});
      out.shape = a.shape;
      break;
    case BlockOpKind::kDivCount:
      c = Node1("div", {a.cls, Int(op.count)});
      out.shape = a.shape;
      break;
    case BlockOpKind::kInvRms: {
      const std::optional<EClassId> eps =
          index_->FindNode(LeafOpFor(Payload::Kind::kReal), Payload::Real(op.scalar), {});
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

std::vector<GenOp> Searcher::Candidates(const std::vector<GenOp>& ops,
                                        const std::vector<Value>& values, int accumulators) const {
  std::vector<GenOp> out;
  const int n = static_cast<int>(values.size());
  for (int i = 0; i < n; ++i) {
    if (matmul_) {
      for (int j = 0; j < n; ++j) out.push_back({BlockOpKind::kMatMul, OpKind::kMatMul, i, j, 0});
    }
    for (OpKind f : unary_) out.push_back({BlockOpKind::kUnary, f, i, -1, 0});
    for (double c : scales_) out.push_back({BlockOpKind::kUnary, OpKind::kScale, i, -1, 0, c});
    for (OpKind f : binary_) {
      // Both operands the same value only for ops the Program applies so (mul(X, X)).
      const bool commutative = f == OpKind::kAdd || f == OpKind::kMul;
      const bool self = self_binary_.count(f) > 0;
      for (int j = commutative ? i : 0; j < n; ++j) {
        if (j != i || self) out.push_back({BlockOpKind::kBinary, f, i, j, 0});
      }
    }
    if (sum_) out.push_back({BlockOpKind::kReduce, OpKind::kSum, i, -1, 0});
    for (int64_t c : div_counts_) out.push_back({BlockOpKind::kDivCount, OpKind::kInput, i, -1, c});
    if (max_) out.push_back({BlockOpKind::kReduce, OpKind::kMax, i, -1, 0});
    for (double eps : rms_eps_) {  // rms_norm's eps (1e-6, 1e-5, ...): each its own op
      out.push_back({BlockOpKind::kRms, OpKind::kInput, i, -1, 0, eps});
      for (int64_t c : counts_) {
        out.push_back({BlockOpKind::kInvRms, OpKind::kInput, i, -1, c, eps});
      }
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

std::string Searcher::Canonical(const std::vector<GenOp>& ops) const {
  const GenOp& op = ops.back();
  std::string s = absl::StrCat("(", static_cast<int>(op.kind), ".", static_cast<int>(op.fn), ".",
                               op.count);
  if (op.fn == OpKind::kScale) absl::StrAppend(&s, ".", absl::StrFormat("%.17g", op.scalar));
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

bool Searcher::AllUsed(const std::vector<GenOp>& ops) {
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

bool Searcher::Hopeless(const std::vector<GenOp>& ops, const std::vector<Value>& values) const {
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
    need = std::max(need, it == depth_.end() ? 0 : it->second);
  }
  need = std::max(need, dangling - 1);
  return need > left;
}

void Searcher::ComputeDepths() {
  // Breadth-first from the root; every edge is one block op (all weights 1). Besides every
  // e-node's children (the ops that add one level, or none), the two ops that add more:
  // acc_sumsq_last(a) = sum(square(a), last) and inv_rms(a) = rsqrt(add(div(a, n), eps)),
  // followed through the classes of their inner e-nodes exactly as Abstract builds them.
  const equiv::Symbol sum("sum"), square("square"), rsqrt("rsqrt"), add("add"), div("div");
  std::vector<EClassId> frontier = {root_};
  depth_[root_] = 0;
  // The operand classes of `op`-rooted e-nodes (first child) in class c.
  const auto inner = [&](EClassId c, const equiv::Symbol& op, std::vector<EClassId>& out) {
    for (const equiv::ENode& n : graph_->eclass(graph_->Find(c)).nodes) {
      if (n.op == op && !n.children.empty()) out.push_back(graph_->Find(n.children[0]));
    }
  };
  for (size_t k = 0; k < frontier.size(); ++k) {
    const EClassId c = frontier[k];
    const int d = depth_[c];
    const auto reach = [&](EClassId r) {
      if (depth_.emplace(r, d + 1).second) frontier.push_back(r);
    };
    for (const equiv::ENode& n : graph_->eclass(c).nodes) {
      for (EClassId child : n.children) reach(graph_->Find(child));
      if (n.children.empty()) continue;
      std::vector<EClassId> a, b;
      if (n.op == sum) {  // sum(square(a), last): acc_sumsq_last
        inner(n.children[0], square, a);
      } else if (n.op == rsqrt) {  // rsqrt(add(div(a, n), eps)): inv_rms
        inner(n.children[0], add, b);
        for (EClassId x : b) inner(x, div, a);
      }
      for (EClassId r : a) reach(r);
    }
  }
}

bool Searcher::RootProducible() const {
  // The Program-level tensor operators that no block op of this vocabulary builds; every
  // other e-node (leaves, the vocabulary's operators, the index and layout operators of the
  // rules) counts as producible when its children are.
  absl::flat_hash_set<equiv::Symbol> vocabulary;
  const auto add = [&](absl::string_view name) { vocabulary.insert(equiv::Symbol(name)); };
  if (matmul_) add("matmul");
  for (OpKind f : unary_) add(GetOpInfo(f).name);
  for (OpKind f : binary_) add(GetOpInfo(f).name);
  if (!scales_.empty()) add("scale");
  if (sum_ || rms_) add("sum");
  if (max_) add("max");
  if (!div_counts_.empty()) add("div");
  if (rms_) {
    for (absl::string_view op : {"rms_norm", "rsqrt", "add", "div", "square"}) add(op);
  }
  absl::flat_hash_set<equiv::Symbol> unreachable;
  for (const OpInfo& info : AllOps()) {
    const equiv::Symbol op(info.name);
    if (info.kind != OpKind::kInput && !vocabulary.contains(op)) unreachable.insert(op);
  }
  absl::flat_hash_set<EClassId> producible;
  for (bool changed = true; changed;) {
    changed = false;
    for (EClassId c : graph_->class_ids()) {
      if (producible.contains(c)) continue;
      for (const equiv::ENode& n : graph_->eclass(c).nodes) {
        bool ok = !unreachable.contains(n.op);
        for (size_t i = 0; ok && i < n.children.size(); ++i) {
          ok = producible.contains(graph_->Find(n.children[i]));
        }
        if (ok) {
          producible.insert(c);
          changed = true;
          break;
        }
      }
    }
  }
  return producible.contains(root_);
}

void Searcher::Report(const char* stage, int64_t done, int64_t total, bool force) {
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

bool Searcher::StateSeen() {
  std::vector<absl::string_view> keys(canon_.begin(), canon_.end());
  std::sort(keys.begin(), keys.end());
  return !states_seen_.insert(absl::HashOf(keys)).second;
}

bool Searcher::MatmulOfInputs(const std::vector<GenOp>& ops, int i) {
  const GenOp& op = ops[i];
  if (op.kind != BlockOpKind::kMatMul) return false;
  // An input, a matmul of inputs, or (the A operand) elementwise ops of inputs:
  // matmul(silu(G) ⊙ U, W) accumulated over K applies them to each tile before the matmul
  // (codegen's A prologue).
  const std::function<bool(int)> elementwise_of_inputs = [&](int j) {
    const GenOp& o = ops[j];
    if (o.kind == BlockOpKind::kInput) return true;
    if (o.kind == BlockOpKind::kUnary) return elementwise_of_inputs(o.a);
    return o.kind == BlockOpKind::kBinary && elementwise_of_inputs(o.a) &&
           elementwise_of_inputs(o.b);
  };
  const auto operand = [&](int j) {
    return ops[j].kind == BlockOpKind::kInput || MatmulOfInputs(ops, j);
  };
  return (operand(op.a) || elementwise_of_inputs(op.a)) && operand(op.b);
}

absl::Status Searcher::CompleteStructure(std::vector<GenOp>& ops, std::vector<Value>& values) {
  if (!AllUsed(ops) || !structures_seen_.insert(canon_.back()).second) return absl::OkStatus();
  return ResolveMaps(ops, values);
}

absl::Status Searcher::AccumulateRoot(std::vector<GenOp>& ops, std::vector<Value>& values) {
  const GenOp op{BlockOpKind::kAccSum, OpKind::kInput, static_cast<int>(ops.size()) - 1, -1, 0};
  ++result_.funnel.generated;
  std::optional<Value> v = Abstract(op, values);
  PRISM_CHECK(v && v->cls == root_, "acc_sum keeps its operand's class");
  ops.push_back(op);
  values.push_back(*v);
  canon_.push_back(Canonical(ops));
  absl::Status st = absl::OkStatus();
  if (StateSeen()) {
    ++result_.funnel.revisited;
  } else {
    st = CompleteStructure(ops, values);
  }
  canon_.pop_back();
  ops.pop_back();
  values.pop_back();
  return st;
}

absl::Status Searcher::Extend(std::vector<GenOp>& ops, std::vector<Value>& values,
                              int accumulators) {
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
      PRISM_RETURN_IF_ERROR(CompleteStructure(ops, values));
      // A root value still in the loop phase may also be summed over the forloop: for a
      // program that is one matmul, acc_sum(matmul(X, W)) is the family with a loop over K
      // (without this the search stopped at the matmul of whole tiles, which needs all of K
      // in shared memory at once). Only for a matmul of inputs (MatmulOfInputs; its A may be
      // elementwise ops of inputs, applied to each tile in the loop). For other
      // roots it costs more than it finds: gated_mlp's silu(X·A) ⊙ (X·B), reached as a matmul
      // of a product, fails its proof only after a full saturation (proving 2.8 → 9.3 s), and
      // lora's acc_sum(X·W + (X·A)·B) families, proved but with an add inside the loop,
      // which codegen does not generate, doubled its candidate building (its split sums are
      // already acc_sum(X·W) + acc_sum((X·A)·B)).
      if (!v->after && accumulators < config_.max_accumulators &&
          static_cast<int>(ops.size() - program_.inputs().size()) < config_.max_block_ops &&
          MatmulOfInputs(ops, static_cast<int>(ops.size()) - 1)) {
        PRISM_RETURN_IF_ERROR(AccumulateRoot(ops, values));
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

}  // namespace prism::search::internal
