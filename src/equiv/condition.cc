#include "prism/equiv/condition.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"

namespace prism::equiv {

std::optional<int64_t> PredicateArg::Int() const {
  if (literal.has_value()) return literal;
  if (data == nullptr || !data->value.has_value() || !data->value->is_int) return std::nullopt;
  return data->value->integer.const_value();
}

namespace {

using Args = absl::Span<const PredicateArg>;

const SymShape* ShapeOf(const PredicateArg& a) {
  if (a.data == nullptr || !a.data->error.empty() || !a.data->shape.has_value()) return nullptr;
  return &*a.data->shape;
}

// k normalized for `rank` (negative counts from the end); nullopt when out of range.
std::optional<int> Normalize(int64_t k, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (k < -r || k >= r) return std::nullopt;
  return static_cast<int>(k < 0 ? k + r : k);
}

std::optional<bool> FreeOf(Args a) {
  if (a[0].data == nullptr || !a[0].data->error.empty()) return std::nullopt;
  if (a[1].data == nullptr || !a[1].data->axis.has_value()) return std::nullopt;
  return !a[0].data->DependsOn(*a[1].data->axis);
}

std::optional<bool> DimIs(Args a) {
  const SymShape* s = ShapeOf(a[0]);
  std::optional<int64_t> d = a[1].Int(), k = a[2].Int();
  if (s == nullptr || !d.has_value() || !k.has_value()) return std::nullopt;
  std::optional<int> n = Normalize(*k, s->size());
  return n.has_value() && *n == *d;
}

std::optional<bool> Distinct(Args a) {
  std::optional<int64_t> d = a[0].Int(), e = a[1].Int();
  if (!d.has_value() || !e.has_value()) return std::nullopt;
  return *d != *e;
}

std::optional<bool> SameShape(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  if (x == nullptr || y == nullptr) return std::nullopt;
  return *x == *y;
}

std::optional<bool> SameRank(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  if (x == nullptr || y == nullptr) return std::nullopt;
  return x->size() == y->size();
}

// a and b broadcast against each other at one rank: every pair of dims is equal or has a 1.
std::optional<bool> CoBroadcast(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  if (x == nullptr || y == nullptr) return std::nullopt;
  if (x->size() != y->size()) return false;
  for (size_t i = 0; i < x->size(); ++i) {
    if ((*x)[i] != (*y)[i] && (*x)[i] != SymSize::Const(1) && (*y)[i] != SymSize::Const(1)) {
      return false;
    }
  }
  return true;
}

std::optional<bool> RankLe(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  if (x == nullptr || y == nullptr) return std::nullopt;
  return x->size() <= y->size();
}

std::optional<bool> SameExcept(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  std::optional<int64_t> k = a[2].Int();
  if (x == nullptr || y == nullptr || !k.has_value()) return std::nullopt;
  if (x->size() != y->size()) return false;
  std::optional<int> n = Normalize(*k, x->size());
  if (!n.has_value()) return false;
  for (size_t i = 0; i < x->size(); ++i) {
    if (static_cast<int>(i) != *n && (*x)[i] != (*y)[i]) return false;
  }
  return true;
}

// b broadcasts into a: rank(b) <= rank(a) and each aligned dim of b is 1 or equal to a's.
std::optional<bool> BroadcastsIntoShapes(const SymShape* b, const SymShape* a) {
  if (a == nullptr || b == nullptr) return std::nullopt;
  if (b->size() > a->size()) return false;
  const size_t off = a->size() - b->size();
  for (size_t i = 0; i < b->size(); ++i) {
    if ((*b)[i] != SymSize::Const(1) && (*b)[i] != (*a)[i + off]) return false;
  }
  return true;
}

std::optional<bool> BroadcastsInto(Args a) { return BroadcastsIntoShapes(ShapeOf(a[0]), ShapeOf(a[1])); }

std::optional<bool> BroadcastUnitAt(const PredicateArg& b_arg, const PredicateArg& a_arg,
                                    std::optional<int64_t> k) {
  const SymShape *b = ShapeOf(b_arg), *a = ShapeOf(a_arg);
  std::optional<bool> into = BroadcastsIntoShapes(b, a);
  if (!into.has_value() || !k.has_value()) return std::nullopt;
  if (!*into) return false;
  std::optional<int> n = Normalize(*k, a->size());
  if (!n.has_value()) return false;
  const int64_t j = static_cast<int64_t>(*n) - static_cast<int64_t>(a->size() - b->size());
  return j < 0 || (*b)[j] == SymSize::Const(1);
}

std::optional<bool> BroadcastUnit(Args a) { return BroadcastUnitAt(a[0], a[1], a[2].Int()); }
std::optional<bool> RowScale(Args a) { return BroadcastUnitAt(a[0], a[1], -1); }
std::optional<bool> ColScale(Args a) { return BroadcastUnitAt(a[0], a[1], -2); }

std::optional<bool> BatchDim(Args a) {
  const SymShape* s = ShapeOf(a[0]);
  std::optional<int64_t> d = a[1].Int();
  if (s == nullptr || !d.has_value()) return std::nullopt;
  return *d >= 0 && *d + 2 < static_cast<int64_t>(s->size());
}

std::optional<bool> Scalar(Args a) {
  const SymShape* s = ShapeOf(a[0]);
  if (s == nullptr) return std::nullopt;
  return std::all_of(s->begin(), s->end(), [](const SymSize& d) { return d == SymSize::Const(1); });
}

std::optional<bool> Contractible(Args a) {
  const SymShape *x = ShapeOf(a[0]), *y = ShapeOf(a[1]);
  if (x == nullptr || y == nullptr) return std::nullopt;
  return x->size() >= 2 && y->size() >= 2 && x->back() == (*y)[y->size() - 2];
}

std::optional<bool> DistinctAxes(Args a) {
  if (a[0].data == nullptr || a[1].data == nullptr || !a[0].data->axis.has_value() ||
      !a[1].data->axis.has_value()) {
    return std::nullopt;
  }
  return *a[0].data->axis != *a[1].data->axis;
}

std::optional<bool> ExtentIs(Args a) {
  if (a[0].env == nullptr || a[0].data == nullptr || !a[0].data->axis.has_value()) return std::nullopt;
  SymSize n;
  if (a[1].literal.has_value()) {
    n = SymSize::Const(*a[1].literal);
  } else if (a[1].data != nullptr && a[1].data->value.has_value() && a[1].data->value->is_int) {
    n = a[1].data->value->integer;
  } else {
    return std::nullopt;
  }
  auto it = a[0].env->extents.find(*a[0].data->axis);
  if (it == a[0].env->extents.end()) return std::nullopt;
  return it->second == n;
}

using K = ArgKind;
const std::vector<PredicateInfo>& PredicateTable() {
  static const std::vector<PredicateInfo>* table = new std::vector<PredicateInfo>{
      {"free-of", {K::kTensor, K::kAxis}, "t's value does not depend on axis ax", FreeOf},
      {"dim-is", {K::kTensor, K::kInt, K::kInt}, "dim d is k normalized for t's rank", DimIs},
      {"distinct", {K::kInt, K::kInt}, "integers d and e differ", Distinct},
      {"same-shape", {K::kTensor, K::kTensor}, "a and b have equal shapes", SameShape},
      {"same-rank", {K::kTensor, K::kTensor}, "a and b have equal ranks", SameRank},
      {"co-broadcast", {K::kTensor, K::kTensor},
       "same rank, every pair of dims equal or one of them 1", CoBroadcast},
      {"rank-le", {K::kTensor, K::kTensor}, "rank(a) <= rank(b)", RankLe},
      {"same-except", {K::kTensor, K::kTensor, K::kInt},
       "same rank and equal dims except dim k", SameExcept},
      {"broadcasts-into", {K::kTensor, K::kTensor}, "broadcasting b against a gives a's shape",
       BroadcastsInto},
      {"broadcast-unit", {K::kTensor, K::kTensor, K::kInt},
       "b broadcasts into a with a 1 (or nothing) aligned with a's dim k", BroadcastUnit},
      {"row-scale", {K::kTensor, K::kTensor}, "(broadcast-unit r a -1)", RowScale},
      {"col-scale", {K::kTensor, K::kTensor}, "(broadcast-unit c b -2)", ColScale},
      {"batch-dim", {K::kTensor, K::kInt}, "0 <= d < rank(a) - 2", BatchDim},
      {"scalar", {K::kTensor}, "every dim is 1", Scalar},
      {"contractible", {K::kTensor, K::kTensor}, "a's last dim equals b's second-to-last", Contractible},
      {"distinct-axes", {K::kAxis, K::kAxis}, "x and y are different axes", DistinctAxes},
      {"extent-is", {K::kAxis, K::kInt}, "axis x was declared with degree n", ExtentIs},
  };
  return *table;
}

}  // namespace

absl::Span<const PredicateInfo> AllPredicates() { return PredicateTable(); }

const PredicateInfo* FindPredicate(absl::string_view name) {
  for (const PredicateInfo& p : PredicateTable()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string Condition::ToString(absl::Span<const std::string> var_names) const {
  std::string s = absl::StrCat("(", predicate->name);
  for (const Arg& a : args) {
    if (a.var >= 0) {
      absl::StrAppend(&s, " ?", static_cast<size_t>(a.var) < var_names.size() ? var_names[a.var] : "_");
    } else {
      absl::StrAppend(&s, " ", a.literal);
    }
  }
  s += ")";
  return negated ? absl::StrCat("(not ", s, ")") : s;
}

bool EvaluateCondition(const Condition& c, const std::function<const TensorData*(int)>& data_of,
                       const TensorEnv* env) {
  PRISM_CHECK(c.predicate != nullptr && c.args.size() == c.predicate->args.size());
  std::vector<PredicateArg> args(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    args[i].env = env;
    if (c.args[i].var >= 0) {
      args[i].data = data_of(c.args[i].var);
      if (args[i].data == nullptr) return false;
    } else {
      args[i].literal = c.args[i].literal;
    }
  }
  std::optional<bool> r = c.predicate->fn(args);
  if (!r.has_value()) return false;
  return c.negated ? !*r : *r;
}

}  // namespace prism::equiv
