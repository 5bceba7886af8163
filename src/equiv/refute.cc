#include "prism/equiv/refute.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "prism/base/rng.h"
#include "prism/equiv/language.h"
#include "index_math.h"

namespace prism::equiv {
namespace {

constexpr int64_t kCandidates[] = {2, 4, 3, 8, 1, 16, 6, 5};
constexpr size_t kMaxCombinations = 4096;

void CollectVars(const ExprContext& ctx, Expr e, std::set<std::string>& out) {
  for (Expr v : FreeVars(ctx, e)) out.insert(ctx.var_name(v));
}

std::string MapString(const std::map<std::string, int64_t>& m) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : m) parts.push_back(absl::StrCat(k, " = ", v));
  return absl::StrJoin(parts, ", ");
}


}  // namespace

std::string Counterexample::ToString() const {
  std::vector<std::string> where;
  if (!sizes.empty()) where.push_back(MapString(sizes));
  if (!block.empty()) where.push_back(absl::StrCat("block ", MapString(block)));
  where.push_back(absl::StrFormat("seed 0x%x", seed));
  return absl::StrCat("at ", absl::StrJoin(where, ", "), ": ", detail);
}

RandomTestResult RandomTest(const ExprContext& ctx, const TensorEnv& env, const Term& a,
                            const Term& b, const RandomTestOptions& options) {
  RandomTestResult result;
  // The inputs and the variables that need values.
  std::set<std::string> inputs, vars;
  CollectInputs(a, inputs);
  CollectInputs(b, inputs);
  for (const std::string& in : inputs) {
    auto it = env.leaves.find(Symbol(in));
    if (it == env.leaves.end()) {
      result.reason = absl::StrCat("input '", in, "' has no shape");
      return result;
    }
    for (const SymSize& d : it->second) {
      for (Expr e : d.atom_exprs()) CollectVars(ctx, e, vars);
    }
  }
  for (const Term* t : {&a, &b}) {
    for (uint32_t i = 0; i < t->size(); ++i) {
      if (t->node(i).payload.kind() == Payload::Kind::kSym) CollectVars(ctx, t->node(i).payload.sym(), vars);
    }
  }
  const std::vector<std::string> names(vars.begin(), vars.end());

  // The first combination of small sizes at which both terms are well-formed and cheap enough.
  std::vector<size_t> choice(names.size(), 0);
  std::optional<TermEvaluator> ev;
  TermPlan plan_a, plan_b;
  Assignment sizes;
  std::map<std::string, Shape> shapes;
  std::string last_problem = "no values in the variables' domains";
  for (size_t combo = 0; combo < kMaxCombinations && !ev.has_value(); ++combo) {
    sizes.clear();
    bool in_domain = true;
    for (size_t v = 0; v < names.size(); ++v) {
      const int64_t value = kCandidates[choice[v]];
      std::optional<Expr> var = ctx.FindVar(names[v]);
      if (var.has_value() && !ctx.var_domain(*var).Contains(value)) in_domain = false;
      sizes[names[v]] = value;
    }
    // Next combination (odometer, last variable fastest); stop after the last one.
    bool wrapped = true;
    for (size_t v = names.size(); v-- > 0;) {
      if (++choice[v] < std::size(kCandidates)) {
        wrapped = false;
        break;
      }
      choice[v] = 0;
    }
    if (in_domain) {
      TermEvaluator candidate(&ctx, sizes);
      bool shapes_ok = true;
      shapes.clear();
      for (const std::string& in : inputs) {
        Shape s;
        for (const SymSize& d : env.leaves.at(Symbol(in))) {
          std::optional<int64_t> v = d.Evaluate(ctx, sizes);
          if (!v.has_value() || *v < 1) shapes_ok = false;
          s.push_back(v.value_or(1));
        }
        shapes[in] = s;
        Tensor shell;
        shell.shape = s;
        candidate.SetInput(in, shell);
      }
      absl::StatusOr<TermPlan> pa = candidate.Plan(a), pb = candidate.Plan(b);
      if (!shapes_ok) {
        last_problem = absl::StrCat("an input shape is not a positive integer at ", MapString(std::map<std::string, int64_t>(sizes.begin(), sizes.end())));
      } else if (!pa.ok() || !pb.ok()) {
        last_problem = std::string((pa.ok() ? pb : pa).status().message());
      } else if (std::max(pa->ops, pb->ops) > options.max_ops) {
        last_problem = absl::StrFormat("an evaluation would take %.3g operations (limit %.3g)",
                                       std::max(pa->ops, pb->ops), options.max_ops);
      } else {
        ev.emplace(std::move(candidate));
        plan_a = *std::move(pa);
        plan_b = *std::move(pb);
      }
    }
    if (wrapped) break;
  }
  if (!ev.has_value()) {
    result.reason = absl::StrCat("no small sizes make both terms testable: ", last_problem);
    return result;
  }
  const std::map<std::string, int64_t> size_map(sizes.begin(), sizes.end());

  // Block indices of the axes either term leaves free.
  std::map<std::string, int64_t> free;
  for (const TermPlan* p : {&plan_a, &plan_b}) {
    for (const std::string& ax : p->axes.back()) free[ax] = p->degrees.at(ax);
  }
  std::vector<BlockIndex> blocks(1);
  for (const auto& [ax, deg] : free) {
    std::vector<BlockIndex> next;
    for (const BlockIndex& bi : blocks) {
      for (int64_t i = 0; i < deg && static_cast<int>(next.size()) < options.max_blocks; ++i) {
        BlockIndex n = bi;
        n[ax] = i;
        next.push_back(n);
      }
    }
    blocks = std::move(next);
  }

  size_t compared = 0;
  for (int trial = 0; trial < options.trials; ++trial) {
    const uint64_t seed = options.seed + static_cast<uint64_t>(trial);
    Rng root(seed);
    std::map<std::string, Tensor> drawn;
    for (const std::string& in : inputs) {
      Rng rng = root.Fork();
      Tensor t;
      t.shape = shapes[in];
      const int64_t n = NumElements(t.shape).value_or(0);
      t.data.resize(n);
      for (double& x : t.data) x = rng.Normal();
      ev->SetInput(in, t);
      drawn[in] = std::move(t);
    }
    Counterexample cx;
    cx.seed = seed;
    cx.sizes = size_map;
    cx.inputs = drawn;
    const Shape& root_a = plan_a.shapes.back();
    const Shape& root_b = plan_b.shapes.back();
    if (root_a != root_b) {
      cx.detail = absl::StrCat("shapes differ: ", ShapeToString(root_a), " vs ", ShapeToString(root_b));
      result.outcome = RandomTestOutcome::kDiffer;
      result.counterexample = std::move(cx);
      return result;
    }
    for (const BlockIndex& block : blocks) {
      absl::StatusOr<Tensor> va = ev->Evaluate(a, plan_a, block), vb = ev->Evaluate(b, plan_b, block);
      if (!va.ok() || !vb.ok()) {
        result.reason = absl::StrCat("evaluation failed: ", (va.ok() ? vb : va).status().message());
        return result;
      }
      double scale = 1.0;
      for (const Tensor* v : {&*va, &*vb}) {
        for (double x : v->data) {
          if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
        }
      }
      for (size_t e = 0; e < va->data.size(); ++e) {
        const double x = va->data[e], y = vb->data[e];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;  // outside the real domain
        ++compared;
        if (std::abs(x - y) <= options.rtol * std::max(std::abs(x), std::abs(y)) + options.atol * scale) continue;
        cx.block = {block.begin(), block.end()};
        cx.index = internal::Unflatten(static_cast<int64_t>(e), root_a);
        cx.first = x;
        cx.second = y;
        cx.detail = absl::StrFormat("element %s is %.17g vs %.17g", ShapeToString(cx.index), x, y);
        result.outcome = RandomTestOutcome::kDiffer;
        result.counterexample = std::move(cx);
        return result;
      }
    }
  }
  result.outcome = RandomTestOutcome::kAgree;
  result.reason = absl::StrCat("agreed on ", compared, " values",
                               size_map.empty() ? "" : absl::StrCat(" at ", MapString(size_map)), " (",
                               options.trials, " input draw", options.trials == 1 ? "" : "s", ", ",
                               blocks.size(), " block index", blocks.size() == 1 ? "" : "es", ")");
  return result;
}

}  // namespace prism::equiv
