#include "facts.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism::proofcheck::internal {
namespace {

constexpr OpInfo kOps[] = {
    {"matmul", 2, Cat::kMatMul},     {"exp", 1, Cat::kUnary},         {"silu", 1, Cat::kUnary},
    {"gelu", 1, Cat::kUnary},        {"relu", 1, Cat::kUnary},        {"sqrt", 1, Cat::kUnary},
    {"rsqrt", 1, Cat::kUnary},       {"square", 1, Cat::kUnary},      {"neg", 1, Cat::kUnary},
    {"recip", 1, Cat::kUnary},       {"scale", 2, Cat::kScale},       {"add", 2, Cat::kBinary},
    {"sub", 2, Cat::kBinary},        {"mul", 2, Cat::kBinary},        {"div", 2, Cat::kBinary},
    {"sum", 2, Cat::kReduce},        {"max", 2, Cat::kReduce},        {"mean", 2, Cat::kReduce},
    {"rms_norm", 3, Cat::kNorm},     {"softmax", 2, Cat::kNorm},      {"concat", 3, Cat::kConcat},
    {"partition", 4, Cat::kPartition}, {"replicate", 3, Cat::kReplicate},
    {"combine", 3, Cat::kCombine},   {"reduce", 2, Cat::kAxisReduce}, {"reduce_max", 2, Cat::kAxisReduce},
    {"dimsize", 2, Cat::kDimSize},   {"dimof", 2, Cat::kDimOf},
};

using Shape = std::vector<Size>;

std::string ShapeString(const Shape& s) {
  std::vector<std::string> dims;
  for (const Size& d : s) dims.push_back(d.ToString());
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}
std::string ShapeString(const Facts& f) { return f.shape ? ShapeString(*f.shape) : "[?]"; }

std::optional<int64_t> ConstInt(const Facts& f) {
  if (!f.value || !f.value->is_int) return std::nullopt;
  return f.value->integer.AsConst();
}
std::optional<double> AsDouble(const Value& v) {
  if (!v.is_int) return v.real;
  std::optional<int64_t> c = v.integer.AsConst();
  if (!c || std::llabs(*c) >= (int64_t{1} << 53)) return std::nullopt;
  return static_cast<double>(*c);
}
Value Int(Size s) { return Value{true, std::move(s), 0.0}; }
Value Real(double r) { return Value{false, Size::Const(0), r}; }

// Exact double arithmetic: a result only when nothing was rounded (so folding never equates
// different reals).
std::optional<double> Exact(char op, double a, double b) {
  double r = 0.0;
  if (op == '*') {
    r = a * b;
    if (!std::isfinite(r) || std::fma(a, b, -r) != 0.0) return std::nullopt;
  } else if (op == '/') {
    if (b == 0.0) return std::nullopt;
    r = a / b;
    if (!std::isfinite(r) || std::fma(r, b, -a) != 0.0) return std::nullopt;
  } else {  // '+': TwoSum error term must vanish
    r = a + b;
    const double bb = r - a;
    if (!std::isfinite(r) || (a - (r - bb)) + (b - bb) != 0.0) return std::nullopt;
  }
  return r;
}

std::optional<Value> Fold(absl::string_view op, const Value& x, const Value& y) {
  if (x.is_int && y.is_int && op != "div") {
    std::optional<Size> r;
    if (op == "mul") {
      r = Times(x.integer, y.integer);
    } else if (op == "add") {
      r = Plus(x.integer, y.integer);
    } else if (op == "sub") {
      std::optional<Size> neg = Times(y.integer, Size::Const(-1));
      if (neg) r = Plus(x.integer, *neg);
    }
    if (!r) return std::nullopt;
    return Int(*r);
  }
  std::optional<double> a = AsDouble(x), b = AsDouble(y);
  if (!a || !b) return std::nullopt;
  std::optional<double> r = op == "mul" ? Exact('*', *a, *b)
                            : op == "div" ? Exact('/', *a, *b)
                            : op == "add" ? Exact('+', *a, *b)
                            : op == "sub" ? Exact('+', *a, -*b)
                                          : std::nullopt;
  if (!r) return std::nullopt;
  return Real(*r);
}

std::optional<Value> FoldUnary(absl::string_view op, const Value& x) {
  if (op == "neg") return Fold("mul", x, Int(Size::Const(-1)));
  if (op == "square") return Fold("mul", x, x);
  std::optional<double> a = AsDouble(x);
  if (!a) return std::nullopt;
  if (op == "recip") {
    std::optional<double> r = Exact('/', 1.0, *a);
    if (!r) return std::nullopt;
    return Real(*r);
  }
  if (op == "sqrt" && *a >= 0) {
    const double s = std::sqrt(*a);
    if (std::fma(s, s, -*a) != 0.0) return std::nullopt;
    return Real(s);
  }
  return std::nullopt;
}

const Size kOne = Size::Const(1);

// numpy broadcasting: aligned at the last dim, equal or one of them 1.
std::optional<Shape> Broadcast(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const Size* x = i + a.size() >= r ? &a[i + a.size() - r] : nullptr;
    const Size* y = i + b.size() >= r ? &b[i + b.size() - r] : nullptr;
    if (x == nullptr || y == nullptr) {
      out[i] = x ? *x : *y;
    } else if (*x == *y || *y == kOne) {
      out[i] = *x;
    } else if (*x == kOne) {
      out[i] = *y;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// A dim operand: an integer constant in [0, rank).
std::optional<int> Dim(const Facts& d, size_t rank, std::string* error) {
  std::optional<int64_t> v = ConstInt(d);
  if (!v) {
    *error = "the dim must be an integer literal";
  } else if (*v < 0 || *v >= static_cast<int64_t>(rank)) {
    *error = absl::StrCat("dim ", *v, " is out of range for rank ", rank);
  } else {
    return static_cast<int>(*v);
  }
  return std::nullopt;
}

Facts Node(const Tree& t, const Env& env, const std::vector<Facts>& kids) {
  Facts out;
  switch (t.kind) {
    case Tree::Kind::kInt: out.shape = Shape{}; out.value = Int(Size::Const(t.i)); return out;
    case Tree::Kind::kReal: out.shape = Shape{}; out.value = Real(t.r); return out;
    case Tree::Kind::kSym:
      out.shape = Shape{};
      if (std::optional<Size> s = ParseSize(t.text)) out.value = Int(*s);
      return out;
    case Tree::Kind::kAxis: out.axis = t.text; return out;
    case Tree::Kind::kVar:
    case Tree::Kind::kWord: out.error = absl::StrCat("'", Print(t), "' is not a term"); return out;
    case Tree::Kind::kApply: break;
  }
  for (const Facts& k : kids) {
    if (!k.error.empty()) {
      out.error = k.error;
      return out;
    }
    out.deps.insert(out.deps.end(), k.deps.begin(), k.deps.end());
  }
  std::sort(out.deps.begin(), out.deps.end());
  out.deps.erase(std::unique(out.deps.begin(), out.deps.end()), out.deps.end());
  const OpInfo* op = FindOp(t.text);
  if (op == nullptr) {
    if (!kids.empty()) out.error = absl::StrCat("unknown operator '", t.text, "'");
    if (auto it = env.inputs.find(t.text); it != env.inputs.end()) out.shape = it->second;
    return out;
  }
  if (static_cast<int>(kids.size()) != op->arity) {
    out.error = absl::StrCat(op->name, " takes ", op->arity, " operands, found ", kids.size());
    return out;
  }
  auto fail = [&](std::string msg) {
    Facts f;
    f.error = absl::StrCat("ill-formed node ", Abbrev(t, 80), ": ", msg);
    return f;
  };
  const Facts& a = kids[0];
  const bool known = a.shape.has_value();  // rank known
  const size_t rank = known ? a.shape->size() : 0;
  std::string err;
  switch (op->cat) {
    case Cat::kUnary:
      out.shape = a.shape;
      if (a.value) out.value = FoldUnary(op->name, *a.value);
      return out;
    case Cat::kScale:
      if (kids[1].shape && !kids[1].shape->empty()) return fail("the constant must be a scalar");
      out.shape = a.shape;
      if (a.value && kids[1].value) out.value = Fold("mul", *a.value, *kids[1].value);
      return out;
    case Cat::kBinary:
      if (a.shape && kids[1].shape) {
        out.shape = Broadcast(*a.shape, *kids[1].shape);
        if (!out.shape) {
          return fail(absl::StrCat("cannot broadcast ", ShapeString(a), " with ", ShapeString(kids[1])));
        }
      }
      if (a.value && kids[1].value) out.value = Fold(op->name, *a.value, *kids[1].value);
      return out;
    case Cat::kReduce:
    case Cat::kNorm: {
      if (!known) return out;
      std::optional<int> d = Dim(kids[1], rank, &err);
      if (!d) return fail(err);
      out.shape = a.shape;
      if (op->cat == Cat::kReduce) (*out.shape)[*d] = kOne;
      if (op->arity == 3 && !kids[2].value) return fail("eps must be a constant");
      return out;
    }
    case Cat::kConcat: {
      const Facts& b = kids[1];
      if (!known || !b.shape) return out;
      if (rank != b.shape->size()) {
        return fail(absl::StrCat("ranks differ: ", ShapeString(a), " and ", ShapeString(b)));
      }
      std::optional<int> d = Dim(kids[2], rank, &err);
      if (!d) return fail(err);
      for (size_t i = 0; i < rank; ++i) {
        if (static_cast<int>(i) != *d && (*a.shape)[i] != (*b.shape)[i]) {
          return fail(absl::StrCat("shapes differ outside dim ", *d, ": ", ShapeString(a), " and ",
                                   ShapeString(b)));
        }
      }
      std::optional<Size> sum = Plus((*a.shape)[*d], (*b.shape)[*d]);
      if (!sum) return out;
      out.shape = a.shape;
      (*out.shape)[*d] = *sum;
      return out;
    }
    case Cat::kMatMul: {
      const Facts& b = kids[1];
      if (!known || !b.shape) return out;
      const Shape &x = *a.shape, &y = *b.shape;
      if (x.size() < 2 || y.size() < 2) return fail("operands must have rank >= 2");
      if (x.back() != y[y.size() - 2]) {
        return fail(absl::StrCat("inner dims differ: ", ShapeString(a), " x ", ShapeString(b)));
      }
      std::optional<Shape> batch = Broadcast(Shape(x.begin(), x.end() - 2), Shape(y.begin(), y.end() - 2));
      if (!batch) return fail(absl::StrCat("cannot broadcast the batch dims of ", ShapeString(a), " and ", ShapeString(b)));
      batch->push_back(x[x.size() - 2]);
      batch->push_back(y.back());
      out.shape = std::move(batch);
      return out;
    }
    case Cat::kPartition:
    case Cat::kReplicate: {
      const bool part = op->cat == Cat::kPartition;
      const Facts& ax = kids[part ? 2 : 1];
      const Facts& n = kids[part ? 3 : 2];
      if (!ax.axis) return fail("expected an axis (@name)");
      if (!n.value || !n.value->is_int) return fail("the degree must be an integer");
      auto it = env.axes.find(*ax.axis);
      if (it == env.axes.end()) return fail(absl::StrCat("axis @", *ax.axis, " is not declared in the proof's environment"));
      if (it->second != n.value->integer) {
        return fail(absl::StrCat("axis @", *ax.axis, " has degree ", n.value->integer.ToString(),
                                 " here but ", it->second.ToString(), " in the proof's environment"));
      }
      const Size& degree = it->second;
      if (degree.AsConst() && *degree.AsConst() < 1) return fail("the degree must be positive");
      if (part) {
        out.deps.push_back(*ax.axis);
        std::sort(out.deps.begin(), out.deps.end());
        out.deps.erase(std::unique(out.deps.begin(), out.deps.end()), out.deps.end());
      }
      if (!known) return out;
      out.shape = a.shape;
      if (!part) return out;
      std::optional<int> d = Dim(kids[1], rank, &err);
      if (!d) return fail(err);
      std::optional<Size> q = Over((*a.shape)[*d], degree);
      if (!q) return fail("size overflow");
      if ((*a.shape)[*d].AsConst() && degree.AsConst() && !q->AsConst()) {
        return fail(absl::StrCat("dim ", *d, " of size ", (*a.shape)[*d].ToString(),
                                 " is not divisible by ", degree.ToString()));
      }
      (*out.shape)[*d] = *q;
      return out;
    }
    case Cat::kCombine:
    case Cat::kAxisReduce: {
      const bool combine = op->cat == Cat::kCombine;
      const Facts& ax = kids[combine ? 2 : 1];
      if (!ax.axis) return fail("expected an axis (@name)");
      auto it = env.axes.find(*ax.axis);
      if (it == env.axes.end()) return fail(absl::StrCat("axis @", *ax.axis, " is not declared in the proof's environment"));
      out.deps.erase(std::remove(out.deps.begin(), out.deps.end(), *ax.axis), out.deps.end());
      if (!known) return out;
      out.shape = a.shape;
      if (!combine) return out;
      std::optional<int> d = Dim(kids[1], rank, &err);
      if (!d) return fail(err);
      std::optional<Size> p = Times((*a.shape)[*d], it->second);
      if (!p) return fail("size overflow");
      (*out.shape)[*d] = *p;
      return out;
    }
    case Cat::kDimSize:
    case Cat::kDimOf: {
      out.shape = Shape{};
      if (!known) return out;
      if (op->cat == Cat::kDimSize) {
        std::optional<int> d = Dim(kids[1], rank, &err);
        if (!d) return fail(err);
        out.value = Int((*a.shape)[*d]);
        return out;
      }
      std::optional<int64_t> k = ConstInt(kids[1]);
      const int64_t r = static_cast<int64_t>(rank);
      if (!k) return fail("the dim must be an integer literal");
      if (*k < -r || *k >= r) return fail(absl::StrCat("dim ", *k, " is out of range for rank ", r));
      out.value = Int(Size::Const(*k < 0 ? *k + r : *k));
      return out;
    }
  }
  return out;
}

// ---- predicates ---------------------------------------------------------------------------------
struct Arg {
  const Facts* facts = nullptr;
  std::optional<int64_t> literal;
  std::optional<int64_t> AsInt() const { return literal ? literal : facts ? ConstInt(*facts) : std::nullopt; }
  const Shape* shape() const {
    return facts && facts->error.empty() && facts->shape ? &*facts->shape : nullptr;
  }
};
using Args = std::vector<Arg>;
using Answer = std::optional<bool>;

std::optional<int> Normal(int64_t k, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (k < -r || k >= r) return std::nullopt;
  return static_cast<int>(k < 0 ? k + r : k);
}

Answer BroadcastsInto(const Shape* b, const Shape* a) {
  if (!a || !b) return std::nullopt;
  if (b->size() > a->size()) return false;
  const size_t off = a->size() - b->size();
  for (size_t i = 0; i < b->size(); ++i) {
    if ((*b)[i] != kOne && (*b)[i] != (*a)[i + off]) return false;
  }
  return true;
}

Answer BroadcastUnit(const Arg& b, const Arg& a, std::optional<int64_t> k) {
  Answer into = BroadcastsInto(b.shape(), a.shape());
  if (!into || !k) return std::nullopt;
  if (!*into) return false;
  std::optional<int> n = Normal(*k, a.shape()->size());
  if (!n) return false;
  const int64_t j = *n - static_cast<int64_t>(a.shape()->size() - b.shape()->size());
  return j < 0 || (*b.shape())[j] == kOne;
}

template <typename F>
Answer Shapes2(const Args& a, F f) {
  const Shape *x = a[0].shape(), *y = a[1].shape();
  if (!x || !y) return std::nullopt;
  return f(*x, *y);
}

Answer Evaluate(absl::string_view p, const Args& a, const Env& env) {
  if (p == "free-of") {
    if (!a[0].facts || !a[0].facts->error.empty() || !a[1].facts || !a[1].facts->axis) return std::nullopt;
    const auto& deps = a[0].facts->deps;
    return std::find(deps.begin(), deps.end(), *a[1].facts->axis) == deps.end();
  }
  if (p == "dim-is") {
    std::optional<int64_t> d = a[1].AsInt(), k = a[2].AsInt();
    if (!a[0].shape() || !d || !k) return std::nullopt;
    std::optional<int> n = Normal(*k, a[0].shape()->size());
    return n && *n == *d;
  }
  if (p == "distinct") {
    std::optional<int64_t> d = a[0].AsInt(), e = a[1].AsInt();
    if (!d || !e) return std::nullopt;
    return *d != *e;
  }
  if (p == "same-shape") return Shapes2(a, [](const Shape& x, const Shape& y) { return x == y; });
  if (p == "same-rank") return Shapes2(a, [](const Shape& x, const Shape& y) { return x.size() == y.size(); });
  if (p == "rank-le") return Shapes2(a, [](const Shape& x, const Shape& y) { return x.size() <= y.size(); });
  if (p == "co-broadcast") {
    return Shapes2(a, [](const Shape& x, const Shape& y) {
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i] != y[i] && x[i] != kOne && y[i] != kOne) return false;
      }
      return true;
    });
  }
  if (p == "contractible") {
    return Shapes2(a, [](const Shape& x, const Shape& y) {
      return x.size() >= 2 && y.size() >= 2 && x.back() == y[y.size() - 2];
    });
  }
  if (p == "same-except") {
    std::optional<int64_t> k = a[2].AsInt();
    if (!k) return std::nullopt;
    return Shapes2(a, [&](const Shape& x, const Shape& y) {
      std::optional<int> n = Normal(*k, x.size());
      if (x.size() != y.size() || !n) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (static_cast<int>(i) != *n && x[i] != y[i]) return false;
      }
      return true;
    });
  }
  if (p == "broadcasts-into") return BroadcastsInto(a[0].shape(), a[1].shape());
  if (p == "broadcast-unit") return BroadcastUnit(a[0], a[1], a[2].AsInt());
  if (p == "row-scale") return BroadcastUnit(a[0], a[1], -1);
  if (p == "col-scale") return BroadcastUnit(a[0], a[1], -2);
  if (p == "batch-dim") {
    std::optional<int64_t> d = a[1].AsInt();
    if (!a[0].shape() || !d) return std::nullopt;
    return *d >= 0 && *d + 2 < static_cast<int64_t>(a[0].shape()->size());
  }
  if (p == "scalar") {
    if (!a[0].shape()) return std::nullopt;
    return std::all_of(a[0].shape()->begin(), a[0].shape()->end(), [](const Size& d) { return d == kOne; });
  }
  if (p == "distinct-axes") {
    if (!a[0].facts || !a[1].facts || !a[0].facts->axis || !a[1].facts->axis) return std::nullopt;
    return *a[0].facts->axis != *a[1].facts->axis;
  }
  if (p == "extent-is") {
    if (!a[0].facts || !a[0].facts->axis) return std::nullopt;
    std::optional<Size> n;
    if (a[1].literal) {
      n = Size::Const(*a[1].literal);
    } else if (a[1].facts && a[1].facts->value && a[1].facts->value->is_int) {
      n = a[1].facts->value->integer;
    }
    auto it = env.axes.find(*a[0].facts->axis);
    if (!n || it == env.axes.end()) return std::nullopt;
    return it->second == *n;
  }
  return std::nullopt;
}

}  // namespace

const OpInfo* FindOp(absl::string_view name) {
  for (const OpInfo& op : kOps) {
    if (name == op.name) return &op;
  }
  return nullptr;
}

Facts ComputeFacts(const Tree& t, const Env& env) {
  std::vector<Facts> kids;
  kids.reserve(t.kids.size());
  for (const Tree& k : t.kids) kids.push_back(ComputeFacts(k, env));
  return Node(t, env, kids);
}

std::string ConditionString(const Condition& c) {
  std::string s = absl::StrCat("(", c.predicate);
  for (const Condition::Arg& a : c.args) {
    absl::StrAppend(&s, " ", a.var.empty() ? absl::StrCat(a.literal) : absl::StrCat("?", a.var));
  }
  s += ")";
  return c.negated ? absl::StrCat("(not ", s, ")") : s;
}

std::optional<std::vector<bool>> PredicateSignature(absl::string_view name) {
  // true: a variable (tensor or axis); false: a variable or an integer literal.
  static const std::map<std::string, std::vector<bool>, std::less<>> kSigs = {
      {"free-of", {true, true}},          {"dim-is", {true, false, false}},
      {"distinct", {false, false}},       {"same-shape", {true, true}},
      {"same-rank", {true, true}},        {"rank-le", {true, true}},
      {"co-broadcast", {true, true}},
      {"same-except", {true, true, false}}, {"broadcasts-into", {true, true}},
      {"broadcast-unit", {true, true, false}}, {"row-scale", {true, true}},
      {"col-scale", {true, true}},        {"batch-dim", {true, false}},
      {"scalar", {true}},                 {"contractible", {true, true}},
      {"distinct-axes", {true, true}},    {"extent-is", {true, false}},
  };
  auto it = kSigs.find(name);
  if (it == kSigs.end()) return std::nullopt;
  return it->second;
}

bool Holds(const Condition& c, const std::map<std::string, Facts>& facts, const Env& env) {
  Args args;
  for (const Condition::Arg& a : c.args) {
    Arg arg;
    if (a.var.empty()) {
      arg.literal = a.literal;
    } else {
      auto it = facts.find(a.var);
      if (it == facts.end()) return false;
      arg.facts = &it->second;
    }
    args.push_back(arg);
  }
  Answer r = Evaluate(c.predicate, args, env);
  if (!r) return false;
  return c.negated ? !*r : *r;
}

}  // namespace prism::proofcheck::internal
