// Rule validation with Z3 (include/prism/equiv/rule_check.h): instantiation of a rule at
// small concrete shapes, an elementwise symbolic evaluator of terms into smt::Terms, and one
// "some element differs" query per instantiation. Uses only smt/'s API (never z3++.h).
#include "prism/equiv/rule_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/equiv/condition.h"
#include "prism/equiv/language.h"
#include "prism/equiv/tensor_analysis.h"
#include "prism/equiv/term.h"
#include "prism/smt/solver.h"
#include "index_math.h"

namespace prism::equiv {
namespace {

struct SymbolLess {
  bool operator()(Symbol a, Symbol b) const { return a.name() < b.name(); }
};
// Axis -> block index.
using BlockMap = std::map<Symbol, int64_t, SymbolLess>;

void CheckOk(const absl::Status& status) { PRISM_CHECK(status.ok(), status.ToString()); }

enum class VarKind : uint8_t { kUnknown, kTensor, kDim, kReal, kAxis, kDegree };

VarKind KindOfOperand(absl::string_view code) {
  if (code == "t") return VarKind::kTensor;
  if (code == "d" || code == "k") return VarKind::kDim;
  if (code == "c" || code == "eps") return VarKind::kReal;
  if (code == "ax") return VarKind::kAxis;
  if (code == "n") return VarKind::kDegree;
  return VarKind::kUnknown;
}

// The kind of every variable slot, from the operand positions it occupies (left side first).
std::vector<VarKind> InferKinds(const Rewrite& rule) {
  std::vector<VarKind> kinds(rule.var_names().size(), VarKind::kUnknown);
  for (const Pattern* p : {&rule.lhs, &rule.rhs}) {
    for (const Pattern::Node& n : p->nodes()) {
      if (n.var >= 0) continue;
      const TermOpInfo* info = FindTermOp(n.op);
      if (info == nullptr) continue;
      const std::vector<absl::string_view> codes = absl::StrSplit(info->operands, ' ');
      for (size_t i = 0; i < n.children.size() && i < codes.size(); ++i) {
        const Pattern::Node& c = p->nodes()[n.children[i]];
        if (c.var >= 0 && kinds[c.var] == VarKind::kUnknown) kinds[c.var] = KindOfOperand(codes[i]);
      }
    }
  }
  // A bare-variable side or a variable only in conditions: from the predicate's argument kind.
  for (const Condition& c : rule.conditions) {
    for (size_t i = 0; i < c.args.size(); ++i) {
      const int v = c.args[i].var;
      if (v < 0 || kinds[v] != VarKind::kUnknown) continue;
      const ArgKind k = c.predicate->args[i];
      kinds[v] = k == ArgKind::kTensor ? VarKind::kTensor
                 : k == ArgKind::kAxis ? VarKind::kAxis
                                       : VarKind::kDim;
    }
  }
  for (VarKind& k : kinds) {
    if (k == VarKind::kUnknown) k = VarKind::kTensor;
  }
  return kinds;
}

// Appends pattern node `node` of `p` instantiated with `values` to `out`; records the index of
// each variable's first occurrence in `first`.
uint32_t Build(const Pattern& p, int node, const std::vector<Term>& values, Term& out,
               std::vector<int>& first) {
  const Pattern::Node& n = p.nodes()[node];
  if (n.var >= 0) {
    const uint32_t idx = out.Append(values[n.var], values[n.var].root());
    if (first[n.var] < 0) first[n.var] = static_cast<int>(idx);
    return idx;
  }
  std::vector<uint32_t> kids;
  for (int c : n.children) kids.push_back(Build(p, c, values, out, first));
  return out.Add(n.op, std::move(kids), n.payload);
}

struct Leaf {
  std::string name;
  std::vector<int64_t> shape;
};

struct Candidate {
  Term lhs;
  Term rhs;
  TensorEnv env;
  std::vector<TensorData> lhs_data;
  std::vector<TensorData> rhs_data;
  std::vector<Leaf> leaves;
  std::string rhs_problem;  // non-empty: the right side is ill-formed or of another shape
  bool dependent = false;   // some tensor variable depends on an axis
  double score = 0;
  std::string key;
};

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string LeavesText(const std::vector<Leaf>& leaves) {
  std::vector<std::string> parts;
  for (const Leaf& l : leaves) parts.push_back(absl::StrCat(l.name, ": ", ShapeText(l.shape)));
  return absl::StrJoin(parts, "; ");
}

bool FirstError(const std::vector<TensorData>& data, std::string* error) {
  for (const TensorData& d : data) {
    if (!d.error.empty()) {
      *error = d.error;
      return true;
    }
  }
  return false;
}

// One random candidate instantiation of `rule`, or nullopt when it is ill-formed or its
// conditions fail.
std::optional<Candidate> Draw(const Rewrite& rule, const std::vector<VarKind>& kinds,
                              ExprContext& ctx, std::mt19937_64& rng, int attempt) {
  const auto uniform = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const auto chance = [&](double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng) < p;
  };
  const size_t nv = kinds.size();
  std::vector<int> axis_degree(nv, 0);
  std::vector<int> axes;
  for (size_t v = 0; v < nv; ++v) {
    if (kinds[v] == VarKind::kAxis) {
      axis_degree[v] = 2 + uniform(2);
      axes.push_back(static_cast<int>(v));
    }
  }
  // Degree variables follow the axis they declare, where the left side pairs them.
  std::vector<int> degree_of(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    if (kinds[v] == VarKind::kDegree) degree_of[v] = 2 + uniform(2);
  }
  for (const Pattern::Node& n : rule.lhs.nodes()) {
    if (n.var >= 0 || n.children.size() < 3) continue;
    const TermOpInfo* info = FindTermOp(n.op);
    if (info == nullptr) continue;
    int ax = -1, deg = -1;
    if (info->category == TermOpCategory::kPartition) {
      ax = rule.lhs.nodes()[n.children[2]].var;
      deg = rule.lhs.nodes()[n.children[3]].var;
    } else if (info->category == TermOpCategory::kReplicate) {
      ax = rule.lhs.nodes()[n.children[1]].var;
      deg = rule.lhs.nodes()[n.children[2]].var;
    }
    if (ax >= 0 && deg >= 0 && kinds[deg] == VarKind::kDegree) degree_of[deg] = axis_degree[ax];
  }
  const int common_rank = std::vector<int>{2, 2, 3, 1}[uniform(4)];
  const bool all_two = chance(0.3);
  Candidate cand;
  std::vector<Term> values(nv);
  for (size_t v = 0; v < nv; ++v) {
    Term& t = values[v];
    const std::string& name = rule.var_names()[v];
    switch (kinds[v]) {
      case VarKind::kDim:
        t.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(uniform(3)));
        break;
      case VarKind::kDegree:
        t.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(degree_of[v]));
        break;
      case VarKind::kReal:
        t.Add(LeafOpFor(Payload::Kind::kReal), {}, Payload::Real(attempt % 2 ? -1.5 : 0.5));
        break;
      case VarKind::kAxis:
        t.Add(LeafOpFor(Payload::Kind::kAxis), {}, Payload::Axis(Symbol(name)));
        break;
      case VarKind::kTensor:
      case VarKind::kUnknown: {
        const int rank = chance(0.7) ? common_rank : uniform(4);
        std::vector<int64_t> shape(rank);
        for (int64_t& s : shape) s = all_two ? 2 : (chance(0.15) ? 1 : 2 + uniform(2));
        Leaf leaf{absl::StrCat("in_", name), shape};
        if (!axes.empty() && rank > 0 && chance(0.5)) {
          const int ax = axes[uniform(static_cast<int>(axes.size()))];
          const int dim = uniform(rank);
          leaf.shape[dim] *= axis_degree[ax];
          const uint32_t l = t.Add(Symbol(leaf.name));
          const uint32_t d = t.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(dim));
          const uint32_t a = t.Add(LeafOpFor(Payload::Kind::kAxis), {},
                                   Payload::Axis(Symbol(rule.var_names()[ax])));
          const uint32_t n =
              t.Add(LeafOpFor(Payload::Kind::kInt), {}, Payload::Int(axis_degree[ax]));
          t.Add(Symbol("partition"), {l, d, a, n});
          cand.dependent = true;
        } else {
          t.Add(Symbol(leaf.name));
        }
        cand.leaves.push_back(std::move(leaf));
        break;
      }
    }
  }
  int64_t elements = 0;
  for (const Leaf& l : cand.leaves) {
    int64_t e = 1;
    for (int64_t s : l.shape) e *= s;
    elements += e;
  }
  if (elements > 200) return std::nullopt;
  std::vector<int> first(nv, -1);
  Build(rule.lhs, rule.lhs.root(), values, cand.lhs, first);
  cand.env.ctx = &ctx;
  for (const Leaf& l : cand.leaves) cand.env.SetLeafShape(l.name, l.shape);
  cand.lhs_data = ComputeTermData(cand.env, cand.lhs);
  std::string error;
  if (FirstError(cand.lhs_data, &error) || !cand.lhs_data.back().shape) return std::nullopt;
  for (const Condition& c : rule.conditions) {
    const auto data_of = [&](int slot) -> const TensorData* {
      return first[slot] >= 0 ? &cand.lhs_data[first[slot]] : nullptr;
    };
    if (!EvaluateCondition(c, data_of, &cand.env)) return std::nullopt;
  }
  std::vector<int> rhs_first(nv, -1);
  Build(rule.rhs, rule.rhs.root(), values, cand.rhs, rhs_first);
  cand.rhs_data = ComputeTermData(cand.env, cand.rhs);
  if (FirstError(cand.rhs_data, &error)) {
    cand.rhs_problem = absl::StrCat("the right side is ill-formed: ", error);
  } else if (!cand.rhs_data.back().shape ||
             !(*cand.rhs_data.back().shape == *cand.lhs_data.back().shape)) {
    cand.rhs_problem = absl::StrCat("the sides have different shapes: ",
                                    cand.lhs_data.back().ShapeString(&ctx), " and ",
                                    cand.rhs_data.back().ShapeString(&ctx));
  }
  // Rank: sizes other than 1 and distinct sizes expose more mistakes; per-block dependence
  // exercises the parallel operators; smaller is cheaper.
  std::set<int64_t> distinct;
  for (const Leaf& l : cand.leaves) {
    for (int64_t s : l.shape) {
      cand.score += s != 1;
      distinct.insert(s);
    }
  }
  cand.score += 2.0 * static_cast<double>(distinct.size()) + (cand.dependent ? 3 : 0) -
                0.01 * static_cast<double>(elements);
  // A reduction or normalization over a dim of extent 1 is the identity and hides mistakes.
  for (const auto* side : {&cand.lhs, &cand.rhs}) {
    const std::vector<TensorData>& data = side == &cand.lhs ? cand.lhs_data : cand.rhs_data;
    for (uint32_t i = 0; i < side->size(); ++i) {
      const TermNode& node = side->node(i);
      const TermOpInfo* info = FindTermOp(node.op);
      if (info == nullptr || (info->category != TermOpCategory::kReduce &&
                              info->category != TermOpCategory::kNorm)) {
        continue;
      }
      const TensorData& t = data[node.children[0]];
      const TensorData& d = data[node.children[1]];
      if (!t.shape || !d.value || !d.value->is_int) continue;
      const std::optional<int64_t> dim = d.value->integer.const_value();
      if (!dim || *dim < 0 || *dim >= static_cast<int64_t>(t.shape->size())) continue;
      const std::optional<int64_t> extent = (*t.shape)[*dim].const_value();
      cand.score += extent && *extent > 1 ? 2 : -6;
    }
  }
  cand.key = absl::StrCat(cand.lhs.ToString(&ctx), " ", LeavesText(cand.leaves));
  return cand;
}

// ---- the elementwise symbolic evaluator ---------------------------------------------------

struct SymTensor {
  std::vector<int64_t> shape;
  std::vector<smt::Term> v;  // row-major
};

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

using internal::Flatten;
using internal::Unflatten;

// The element of `t` that broadcasting against an output of rank out_rank reads at `idx`.
const smt::Term& Broadcast(const SymTensor& t, const std::vector<int64_t>& idx) {
  const size_t off = idx.size() - t.shape.size();
  int64_t flat = 0;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    flat = flat * t.shape[i] + (t.shape[i] == 1 ? 0 : idx[off + i]);
  }
  return t.v[flat];
}

class Encoder {
 public:
  explicit Encoder(smt::Solver& s) : s_(s) {
    exp_ = *s_.DeclareFunction("exp_", 1);
    sqrt_ = *s_.DeclareFunction("sqrt_", 1);
    silu_ = *s_.DeclareFunction("silu_", 1);
    gelu_ = *s_.DeclareFunction("gelu_", 1);
    zero_ = s_.Real(0);
    one_ = s_.Real(1);
  }

  // The value of `term` (with per-node data `data`, axes of `env`) at block index `rho`.
  absl::StatusOr<SymTensor> Evaluate(const Term& term, const std::vector<TensorData>& data,
                                     const TensorEnv& env, const BlockMap& rho) {
    memo_.clear();
    return Eval(term, data, env, term.root(), rho);
  }

  const std::vector<smt::Term>& premises() const { return premises_; }
  const std::vector<std::string>& symbols() const { return symbol_order_; }
  // Non-empty when a side cannot be encoded (division by a literal 0).
  const std::string& error() const { return error_; }

 private:
  absl::StatusOr<std::vector<int64_t>> ShapeOf(const TensorData& d) {
    if (!d.shape) return absl::InvalidArgumentError("unknown shape");
    std::vector<int64_t> out;
    for (const SymSize& s : *d.shape) {
      std::optional<int64_t> v = s.const_value();
      if (!v) return absl::InvalidArgumentError("symbolic size");
      out.push_back(*v);
    }
    return out;
  }

  absl::StatusOr<int64_t> IntOf(const TensorData& d) {
    if (!d.value || !d.value->is_int || !d.value->integer.const_value()) {
      return absl::InvalidArgumentError("expected a concrete integer");
    }
    return *d.value->integer.const_value();
  }

  // a / b as a · inv(b), where inv(b) is a fresh symbol with b · inv(b) = 1 (one per
  // divisor polynomial): every side stays a polynomial over inputs and atoms, which Z3 decides
  // far more easily than real division, and b ≠ 0 is implied — a rule claims equality where
  // both sides are defined.
  smt::Term Div(smt::Term a, smt::Term b) { return s_.Mul({a, Inv(b)}); }

  smt::Term Inv(smt::Term b) {
    const std::vector<smt::Monomial> monos = s_.Monomials(b);
    if (monos.empty()) {
      error_ = "division by the constant 0";
      return zero_;
    }
    if (monos.size() == 1) {
      // 1/(c·Π fᵢ) = (1/c)·Π 1/fᵢ: one inverse per factor, so that inverses of products
      // are products of inverses without nonlinear reasoning.
      std::vector<smt::Term> parts = {s_.Real(monos[0].den, monos[0].num)};
      for (const smt::Term& f : monos[0].factors) parts.push_back(InvAtom(f, s_.ToString(f)));
      return s_.Mul(parts);
    }
    std::string key;
    for (const smt::Monomial& m : monos) {
      absl::StrAppend(&key, m.num, "/", m.den, "*",
                      m.product.valid() ? s_.ToString(m.product) : "1", " ");
    }
    return InvAtom(b, key);
  }

  // The inverse symbol of the factor `f` (`key` identifies it); the inverse of an inverse
  // symbol is its original.
  smt::Term InvAtom(smt::Term f, const std::string& key) {
    if (auto it = inverse_of_.find(s_.ToString(f)); it != inverse_of_.end()) return it->second;
    auto it = inverses_.find(key);
    if (it != inverses_.end()) return it->second;
    const smt::Term inv =
        *s_.Symbol(absl::StrCat("inv_", inverses_.size()), smt::SortKind::kReal);
    CheckOk(s_.Declare(inv));
    premises_.push_back(s_.Eq(s_.Mul({f, inv}), one_));
    inverses_.emplace(key, inv);
    inverse_of_.emplace(s_.ToString(inv), f);
    return inv;
  }

  smt::Term Sqrt(smt::Term u) {
    const std::string key = s_.ToString(u);
    auto it = sqrt_apps_.find(key);
    if (it != sqrt_apps_.end()) return it->second;
    const smt::Term r = s_.Apply(sqrt_, {u});
    premises_.push_back(s_.Ge(u, zero_));
    premises_.push_back(s_.Ge(r, zero_));
    premises_.push_back(s_.Eq(s_.Mul({r, r}), u));
    sqrt_apps_.emplace(key, r);
    return r;
  }

  smt::Term ExpAtom(smt::Term u) {
    const std::string key = s_.ToString(u);
    auto it = exp_atoms_.find(key);
    if (it != exp_atoms_.end()) return it->second;
    const smt::Term r = s_.Apply(exp_, {u});
    premises_.push_back(s_.Gt(r, zero_));
    exp_atoms_.emplace(key, r);
    return r;
  }

  // exp(Σ cᵢ·mᵢ) = Π exp(mᵢ)^cᵢ (small integer cᵢ; other coefficients stay in the atom).
  smt::Term Exp(smt::Term u) {
    std::vector<smt::Term> num, den;
    for (const smt::Monomial& m : s_.Monomials(u)) {
      if (!m.product.valid()) {
        num.push_back(ExpAtom(s_.Real(m.num, m.den)));
      } else if (m.den == 1 && std::abs(m.num) <= 4) {
        const smt::Term atom = ExpAtom(m.product);
        for (int64_t k = 0; k < std::abs(m.num); ++k) (m.num > 0 ? num : den).push_back(atom);
      } else {
        num.push_back(ExpAtom(s_.Mul({s_.Real(m.num, m.den), m.product})));
      }
    }
    const smt::Term n = num.empty() ? one_ : s_.Mul(num);
    return den.empty() ? n : Div(n, s_.Mul(den));
  }

  smt::Term Input(const std::string& leaf, int64_t flat) {
    const std::string name = absl::StrCat(leaf, "_", flat);
    auto it = inputs_.find(name);
    if (it != inputs_.end()) return it->second;
    const smt::Term t = *s_.Symbol(name, smt::SortKind::kReal);
    CheckOk(s_.Declare(t));
    inputs_.emplace(name, t);
    symbol_order_.push_back(name);
    return t;
  }

  absl::StatusOr<SymTensor> Eval(const Term& term, const std::vector<TensorData>& data,
                                 const TensorEnv& env, uint32_t node,
                                 const BlockMap& rho) {
    // Memoized per node and the block indices of the axes the node depends on.
    std::string key = absl::StrCat(node);
    for (Symbol ax : data[node].deps) {
      auto it = rho.find(ax);
      absl::StrAppend(&key, ",", it == rho.end() ? -1 : it->second);
    }
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    PRISM_ASSIGN_OR_RETURN(SymTensor r, Compute(term, data, env, node, rho));
    memo_.emplace(key, r);
    return r;
  }

  absl::StatusOr<SymTensor> Compute(const Term& term, const std::vector<TensorData>& data,
                                    const TensorEnv& env, uint32_t node,
                                    const BlockMap& rho) {
    const TermNode& n = term.node(node);
    const TensorData& d = data[node];
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ShapeOf(d));
    SymTensor out;
    out.shape = shape;
    const int64_t size = NumElements(shape);
    // Scalars with a known value (literals, dimsize, dimof).
    if (d.value && d.value->concrete()) {
      std::optional<double> v = d.value->AsDouble();
      if (!v) return absl::InvalidArgumentError("scalar without a value");
      out.v.assign(size, s_.RealFromDouble(*v));
      return out;
    }
    const TermOpInfo* info = FindTermOp(n.op);
    if (info == nullptr) {
      if (!n.payload.is_none() || !n.children.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot evaluate ", term.ToString(node, nullptr)));
      }
      const std::string leaf(n.op.name());
      for (int64_t i = 0; i < size; ++i) out.v.push_back(Input(leaf, i));
      return out;
    }
    const auto child = [&](int i) { return Eval(term, data, env, n.children[i], rho); };
    const auto attr = [&](int i) { return IntOf(data[n.children[i]]); };
    const auto axis_of = [&](int i) { return term.node(n.children[i]).payload.axis(); };
    const auto degree = [&](Symbol ax) -> absl::StatusOr<int64_t> {
      auto it = env.extents.find(ax);
      if (it == env.extents.end() || !it->second.const_value()) {
        return absl::InvalidArgumentError(absl::StrCat("axis ", ax.name(), " has no degree"));
      }
      return *it->second.const_value();
    };
    switch (info->category) {
      case TermOpCategory::kUnary: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        for (const smt::Term& x : a.v) {
          switch (info->op) {
            case TermOp::kExp: out.v.push_back(Exp(x)); break;
            case TermOp::kSilu: out.v.push_back(s_.Apply(silu_, {x})); break;
            case TermOp::kGelu: out.v.push_back(s_.Apply(gelu_, {x})); break;
            case TermOp::kRelu: out.v.push_back(s_.Ite(s_.Gt(x, zero_), x, zero_)); break;
            case TermOp::kSqrt: out.v.push_back(Sqrt(x)); break;
            case TermOp::kRsqrt: out.v.push_back(Div(one_, Sqrt(x))); break;
            case TermOp::kSquare: out.v.push_back(s_.Mul({x, x})); break;
            case TermOp::kNeg: out.v.push_back(s_.Neg(x)); break;
            case TermOp::kRecip: out.v.push_back(Div(one_, x)); break;
            default: return absl::InvalidArgumentError("unknown unary operator");
          }
        }
        return out;
      }
      case TermOpCategory::kScale:
      case TermOpCategory::kBinary: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        PRISM_ASSIGN_OR_RETURN(SymTensor b, child(1));
        for (int64_t i = 0; i < size; ++i) {
          const std::vector<int64_t> idx = Unflatten(i, shape);
          const smt::Term x = Broadcast(a, idx), y = Broadcast(b, idx);
          switch (info->op) {
            case TermOp::kScale:
            case TermOp::kMul: out.v.push_back(s_.Mul({x, y})); break;
            case TermOp::kAdd: out.v.push_back(s_.Add({x, y})); break;
            case TermOp::kSub: out.v.push_back(s_.Sub(x, y)); break;
            case TermOp::kDiv: out.v.push_back(Div(x, y)); break;
            default: return absl::InvalidArgumentError("unknown binary operator");
          }
        }
        return out;
      }
      case TermOpCategory::kReduce:
      case TermOpCategory::kNorm: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        PRISM_ASSIGN_OR_RETURN(int64_t dim, attr(1));
        const int64_t extent = a.shape[dim];
        // The elements of a's line along `dim` through index idx.
        const auto line = [&](std::vector<int64_t> idx) {
          std::vector<smt::Term> l;
          for (int64_t k = 0; k < extent; ++k) {
            idx[dim] = k;
            l.push_back(a.v[Flatten(idx, a.shape)]);
          }
          return l;
        };
        for (int64_t i = 0; i < size; ++i) {
          const std::vector<int64_t> idx = Unflatten(i, shape);
          const std::vector<smt::Term> l = line(idx);
          switch (info->op) {
            case TermOp::kSum: out.v.push_back(s_.Add(l)); break;
            case TermOp::kMean: out.v.push_back(Div(s_.Add(l), s_.Real(extent))); break;
            case TermOp::kMax: {
              smt::Term m = l[0];
              for (size_t k = 1; k < l.size(); ++k) m = s_.Max(m, l[k]);
              out.v.push_back(m);
              break;
            }
            case TermOp::kSoftmax: {
              std::vector<smt::Term> e;
              for (const smt::Term& x : l) e.push_back(Exp(x));
              out.v.push_back(Div(Exp(a.v[i]), s_.Add(e)));
              break;
            }
            case TermOp::kRmsNorm: {
              PRISM_ASSIGN_OR_RETURN(SymTensor eps, child(2));
              std::vector<smt::Term> sq;
              for (const smt::Term& x : l) sq.push_back(s_.Mul({x, x}));
              const smt::Term ms = Div(s_.Add(sq), s_.Real(extent));
              out.v.push_back(s_.Mul({a.v[i], Div(one_, Sqrt(s_.Add({ms, eps.v[0]})))}));
              break;
            }
            default: return absl::InvalidArgumentError("unknown reduction");
          }
        }
        return out;
      }
      case TermOpCategory::kMatMul: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        PRISM_ASSIGN_OR_RETURN(SymTensor b, child(1));
        const size_t ra = a.shape.size(), rb = b.shape.size(), r = shape.size();
        const int64_t inner = a.shape[ra - 1];
        for (int64_t i = 0; i < size; ++i) {
          const std::vector<int64_t> idx = Unflatten(i, shape);
          std::vector<smt::Term> terms;
          for (int64_t k = 0; k < inner; ++k) {
            // Batch dims broadcast (numpy), the last two are (row, k) and (k, col).
            std::vector<int64_t> ia(ra), ib(rb);
            for (size_t j = 0; j + 2 < ra; ++j) {
              ia[j] = a.shape[j] == 1 ? 0 : idx[r - ra + j];
            }
            for (size_t j = 0; j + 2 < rb; ++j) {
              ib[j] = b.shape[j] == 1 ? 0 : idx[r - rb + j];
            }
            ia[ra - 2] = idx[r - 2];
            ia[ra - 1] = k;
            ib[rb - 2] = k;
            ib[rb - 1] = idx[r - 1];
            terms.push_back(
                s_.Mul({a.v[Flatten(ia, a.shape)], b.v[Flatten(ib, b.shape)]}));
          }
          out.v.push_back(s_.Add(terms));
        }
        return out;
      }
      case TermOpCategory::kConcat: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        PRISM_ASSIGN_OR_RETURN(SymTensor b, child(1));
        PRISM_ASSIGN_OR_RETURN(int64_t dim, attr(2));
        for (int64_t i = 0; i < size; ++i) {
          std::vector<int64_t> idx = Unflatten(i, shape);
          if (idx[dim] < a.shape[dim]) {
            out.v.push_back(a.v[Flatten(idx, a.shape)]);
          } else {
            idx[dim] -= a.shape[dim];
            out.v.push_back(b.v[Flatten(idx, b.shape)]);
          }
        }
        return out;
      }
      case TermOpCategory::kPartition: {
        PRISM_ASSIGN_OR_RETURN(SymTensor a, child(0));
        PRISM_ASSIGN_OR_RETURN(int64_t dim, attr(1));
        auto it = rho.find(axis_of(2));
        if (it == rho.end()) return absl::InvalidArgumentError("partition outside its axis");
        for (int64_t i = 0; i < size; ++i) {
          std::vector<int64_t> idx = Unflatten(i, shape);
          idx[dim] += it->second * shape[dim];
          out.v.push_back(a.v[Flatten(idx, a.shape)]);
        }
        return out;
      }
      case TermOpCategory::kReplicate:
        return child(0);
      case TermOpCategory::kCombine:
      case TermOpCategory::kAxisReduce: {
        const Symbol ax = axis_of(info->category == TermOpCategory::kCombine ? 2 : 1);
        PRISM_ASSIGN_OR_RETURN(int64_t deg, degree(ax));
        std::vector<SymTensor> parts;
        for (int64_t k = 0; k < deg; ++k) {
          BlockMap inner = rho;
          inner[ax] = k;
          PRISM_ASSIGN_OR_RETURN(SymTensor p, Eval(term, data, env, n.children[0], inner));
          parts.push_back(std::move(p));
        }
        if (info->category == TermOpCategory::kCombine) {
          PRISM_ASSIGN_OR_RETURN(int64_t dim, attr(1));
          const int64_t piece = parts[0].shape[dim];
          for (int64_t i = 0; i < size; ++i) {
            std::vector<int64_t> idx = Unflatten(i, shape);
            const int64_t which = idx[dim] / piece;
            idx[dim] %= piece;
            out.v.push_back(parts[which].v[Flatten(idx, parts[which].shape)]);
          }
          return out;
        }
        for (int64_t i = 0; i < size; ++i) {
          if (info->op == TermOp::kReduce) {
            std::vector<smt::Term> terms;
            for (const SymTensor& p : parts) terms.push_back(p.v[i]);
            out.v.push_back(s_.Add(terms));
          } else {
            smt::Term m = parts[0].v[i];
            for (size_t k = 1; k < parts.size(); ++k) m = s_.Max(m, parts[k].v[i]);
            out.v.push_back(m);
          }
        }
        return out;
      }
      case TermOpCategory::kAux:
        return absl::InvalidArgumentError("auxiliary operator without a value");
    }
    return absl::InvalidArgumentError("unknown operator");
  }

  smt::Solver& s_;
  smt::Function exp_, sqrt_, silu_, gelu_;
  smt::Term zero_, one_;
  std::vector<smt::Term> premises_;
  std::map<std::string, smt::Term> sqrt_apps_, exp_atoms_;
  std::map<std::string, smt::Term> inputs_;
  std::map<std::string, smt::Term> inverses_;    // divisor key -> inverse symbol
  std::map<std::string, smt::Term> inverse_of_;  // inverse symbol -> its divisor
  std::string error_;
  std::vector<std::string> symbol_order_;
  std::map<std::string, SymTensor> memo_;
};

std::string BlockText(const BlockMap& rho) {
  std::vector<std::string> parts;
  for (const auto& [ax, i] : rho) parts.push_back(absl::StrCat(ax.name(), " = ", i));
  return parts.empty() ? "" : absl::StrCat(" at block ", absl::StrJoin(parts, ", "));
}

// Checks one instantiation with Z3.
RuleInstanceCheck CheckInstance(const Rewrite& rule, const Candidate& c, ExprContext& ctx,
                                const RuleCheckOptions& options) {
  RuleInstanceCheck out;
  out.lhs = c.lhs.ToString(&ctx);
  out.rhs = c.rhs.ToString(&ctx);
  out.shapes = LeavesText(c.leaves);
  const auto start = std::chrono::steady_clock::now();
  const auto finish = [&]() {
    out.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  if (!c.rhs_problem.empty()) {
    out.verdict = prism::Verdict::kRefuted;
    out.reason = absl::StrCat(c.rhs_problem, " (instance ", out.lhs, " with ", out.shapes, ")");
    return finish();
  }
  smt::Solver s;
  Encoder enc(s);
  // The free axes of either side: every block index of them is checked.
  std::set<Symbol, SymbolLess> free_axes;
  for (Symbol ax : c.lhs_data.back().deps) free_axes.insert(ax);
  for (Symbol ax : c.rhs_data.back().deps) free_axes.insert(ax);
  std::vector<BlockMap> blocks = {{}};
  for (Symbol ax : free_axes) {
    auto it = c.env.extents.find(ax);
    if (it == c.env.extents.end() || !it->second.const_value()) {
      out.reason = absl::StrCat("axis ", ax.name(), " has no concrete degree");
      return finish();
    }
    std::vector<BlockMap> next;
    for (const auto& b : blocks) {
      for (int64_t i = 0; i < *it->second.const_value(); ++i) {
        auto nb = b;
        nb[ax] = i;
        next.push_back(std::move(nb));
      }
    }
    blocks = std::move(next);
  }
  std::vector<smt::Term> diffs, evaluate;
  std::vector<std::string> where;
  for (const auto& rho : blocks) {
    absl::StatusOr<SymTensor> l = enc.Evaluate(c.lhs, c.lhs_data, c.env, rho);
    absl::StatusOr<SymTensor> r = enc.Evaluate(c.rhs, c.rhs_data, c.env, rho);
    if (!l.ok() || !r.ok()) {
      out.reason = absl::StrCat("cannot encode: ", (!l.ok() ? l.status() : r.status()).message());
      return finish();
    }
    for (size_t i = 0; i < l->v.size(); ++i) {
      diffs.push_back(s.Not(s.Eq(l->v[i], r->v[i])));
      evaluate.push_back(l->v[i]);
      evaluate.push_back(r->v[i]);
      where.push_back(absl::StrCat(BlockText(rho), " element ",
                                   ShapeText(Unflatten(static_cast<int64_t>(i), l->shape))));
    }
  }
  if (!enc.error().empty()) {
    out.reason = absl::StrCat("cannot encode: ", enc.error());
    return finish();
  }
  for (const smt::Term& p : enc.premises()) CheckOk(s.Assert(p));
  s.Push();
  CheckOk(s.Assert(s.Or(diffs)));
  smt::CheckOptions check;
  check.want_core = false;
  check.evaluate = evaluate;
  const smt::CheckResult r =
      s.Check(absl::StrCat("rule.", rule.name), smt::Budget{options.timeout_ms, options.rlimit},
              check);
  out.verdict = r.verdict;
  if (options.keep_smtlib) {
    out.smtlib = s.ToSmtLib2(absl::StrCat("rule.", rule.name), r.verdict,
                             {absl::StrCat("rule ", rule.name, ": ", out.lhs, " = ", out.rhs)});
  }
  s.Pop();
  if (r.verdict == prism::Verdict::kProved) {
    out.reason = "unsat";
    // Guard against a vacuous proof: the premises (axioms, non-zero divisors, sqrt domains)
    // alone must not be contradictory. A small budget: a contradiction is found at once, and
    // an undecided check (finding a model with sqrt axioms is hard) changes nothing.
    smt::CheckOptions plain;
    plain.want_core = false;
    const smt::Budget small{std::min<int64_t>(options.timeout_ms, 1000), options.rlimit / 40};
    const smt::CheckResult sat =
        s.Check(absl::StrCat("rule.", rule.name, ".premises"), small, plain);
    if (sat.verdict == prism::Verdict::kProved) {
      out.verdict = prism::Verdict::kUnknown;
      out.reason =
          "vacuous: the premises (axioms, non-zero divisors, sqrt domains) are contradictory";
    }
  }
  if (r.verdict == prism::Verdict::kProved) {
  } else if (r.verdict == prism::Verdict::kRefuted) {
    std::string element = "some element";
    for (size_t i = 0; i < where.size(); ++i) {
      if (r.evaluated[2 * i] != r.evaluated[2 * i + 1]) {
        element = absl::StrCat(where[i].substr(1), ": left ", r.evaluated[2 * i], ", right ",
                               r.evaluated[2 * i + 1]);
        break;
      }
    }
    // The inputs in order, at most 16.
    std::vector<std::string> inputs;
    size_t shown = 0;
    for (const std::string& name : enc.symbols()) {
      auto it = r.real_model.find(name);
      if (it == r.real_model.end()) continue;
      if (shown++ < 16) inputs.push_back(absl::StrCat(name, " = ", it->second));
    }
    if (shown > 16) inputs.push_back(absl::StrCat("... (", shown - 16, " more)"));
    out.reason = absl::StrCat("instance ", out.lhs, " with ", out.shapes, ": ", element,
                              "; inputs ", absl::StrJoin(inputs, ", "));
  } else {
    out.reason = absl::StrCat("z3: ", r.reason);
  }
  return finish();
}

}  // namespace

RuleCheckResult ValidateRule(const Rewrite& rule, ExprContext& ctx,
                             const RuleCheckOptions& options) {
  RuleCheckResult result;
  result.rule = rule.name;
  result.location = rule.location;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<VarKind> kinds = InferKinds(rule);
  // Seeded per rule with a platform-independent hash: the same instances on every machine.
  std::mt19937_64 rng(options.seed ^ StableHashBytes(rule.name));
  std::vector<Candidate> candidates;
  std::set<std::string> seen;
  for (int attempt = 0; attempt < options.max_tries && candidates.size() < 60; ++attempt) {
    std::optional<Candidate> c = Draw(rule, kinds, ctx, rng, attempt);
    if (!c || !seen.insert(c->key).second) continue;
    candidates.push_back(std::move(*c));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  // The best candidate, then the best ones that differ in per-block dependence or leaf shapes.
  std::vector<const Candidate*> chosen;
  for (int round = 0; round < 2; ++round) {
    for (const Candidate& c : candidates) {
      if (static_cast<int>(chosen.size()) >= options.instantiations) break;
      if (std::find(chosen.begin(), chosen.end(), &c) != chosen.end()) continue;
      bool differs = true;
      for (const Candidate* o : chosen) {
        if (round == 0 && (o->dependent == c.dependent ||
                           LeavesText(o->leaves) == LeavesText(c.leaves))) {
          differs = false;
        }
      }
      if (differs || round == 1) chosen.push_back(&c);
    }
  }
  // A candidate whose right side is ill-formed refutes the rule outright.
  for (const Candidate& c : candidates) {
    if (!c.rhs_problem.empty()) {
      chosen.insert(chosen.begin(), &c);
      break;
    }
  }
  if (chosen.empty()) {
    result.reason = absl::StrCat("no instantiation satisfies the conditions (", options.max_tries,
                                 " candidates drawn)");
  }
  int proved = 0;
  for (const Candidate* c : chosen) {
    RuleInstanceCheck check = CheckInstance(rule, *c, ctx, options);
    const prism::Verdict v = check.verdict;
    result.instances.push_back(std::move(check));
    if (v == prism::Verdict::kRefuted) {
      result.verdict = prism::Verdict::kRefuted;
      result.reason = result.instances.back().reason;
      break;
    }
    if (v == prism::Verdict::kProved) ++proved;
  }
  if (result.verdict != prism::Verdict::kRefuted && !chosen.empty()) {
    if (proved == static_cast<int>(chosen.size())) {
      result.verdict = prism::Verdict::kProved;
      std::vector<std::string> shapes;
      for (const RuleInstanceCheck& i : result.instances) shapes.push_back(i.shapes);
      result.reason = absl::StrCat(proved, " instantiation", proved == 1 ? "" : "s", ": ",
                                   absl::StrJoin(shapes, " | "));
    } else {
      for (const RuleInstanceCheck& i : result.instances) {
        if (i.verdict == prism::Verdict::kUnknown) {
          result.reason = absl::StrCat("instance ", i.lhs, ": ", i.reason);
          break;
        }
      }
    }
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<RuleCheckResult> ValidateRules(const RuleSet& rules, ExprContext& ctx,
                                           const RuleCheckOptions& options) {
  std::vector<RuleCheckResult> out;
  for (const Rewrite& r : rules.rewrites()) {
    if (r.reversed) continue;
    out.push_back(ValidateRule(r, ctx, options));
  }
  return out;
}

}  // namespace prism::equiv
