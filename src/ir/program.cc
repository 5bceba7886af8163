// ProgramBuilder::Build — validation, cycle detection, topological order, shape inference —
// and Program's accessors, equality and structural hashes.
#include "prism/ir/program.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "boost/graph/adjacency_list.hpp"
#include "boost/graph/depth_first_search.hpp"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"

namespace prism {
namespace {

constexpr OpInfo kOps[] = {
#define PRISM_OP(e, name, cat, arity, attr) \
  {OpKind::e, name, OpCategory::cat, arity, OpAttr::attr},
#include "prism/ir/ops.def"
#undef PRISM_OP
};

absl::Status Invalid(const Node& node, absl::string_view message) {
  if (node.loc.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.loc.line, ":", node.loc.column, ": ", message));
  }
  return absl::InvalidArgumentError(message);
}

absl::Status InvalidAt(SourceLoc loc, absl::string_view message) {
  if (loc.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(loc.line, ":", loc.column, ": ", message));
  }
  return absl::InvalidArgumentError(message);
}

// How messages name a tensor: its name; for an anonymous tensor parsed from text, the op and
// where it was written ("neg@4:9"); otherwise the builder id ("%3").
std::string ShortName(const Node& node, uint32_t builder_id) {
  if (!node.name.empty()) return node.name;
  if (node.loc.valid()) {
    return absl::StrCat(GetOpInfo(node.op).name, "@", node.loc.line, ":", node.loc.column);
  }
  return absl::StrCat("%", builder_id);
}

std::string Describe(const Node& node, uint32_t builder_id) {
  if (!node.name.empty()) return absl::StrCat("tensor '", node.name, "'");
  return absl::StrCat("tensor %", builder_id, " (", GetOpInfo(node.op).name, ")");
}

absl::Status CheckDeclaredShape(const Shape& shape) {
  if (shape.empty()) {
    return absl::InvalidArgumentError(
        "found a shape of rank 0, expected rank 1 to 4 (e.g. f16[16, 4096])");
  }
  if (shape.size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("found a shape of rank ", shape.size(), " (",
                                                   ShapeToString(shape),
                                                   "), expected rank at most 4"));
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1 || shape[i] > kMaxDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "found dim ", shape[i], " at position ", i, " of ", ShapeToString(shape),
          ", expected every dim in 1..", kMaxDim));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- op table --------------------------------------------------------------------------------
const OpInfo& GetOpInfo(OpKind kind) {
  const size_t i = static_cast<size_t>(kind);
  PRISM_CHECK(i < std::size(kOps), "bad op kind ", i);
  return kOps[i];
}

absl::Span<const OpInfo> AllOps() { return kOps; }

std::optional<OpKind> ParseOpName(absl::string_view name) {
  for (const OpInfo& info : kOps) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

bool IsValidTensorName(absl::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !digit(c)) return false;
  }
  if (name == "input" || name == "output" || name == "eps") return false;
  if (ParseOpName(name).has_value() || ParseDType(name).has_value()) return false;
  return true;
}

// ---- shape inference -------------------------------------------------------------------------
absl::StatusOr<Shape> InferShape(const Node& node, absl::Span<const Shape* const> in) {
  const OpInfo& info = GetOpInfo(node.op);
  const int arity = info.arity;
  if (arity >= 0 && static_cast<int>(in.size()) != arity) {
    return absl::InvalidArgumentError(absl::StrCat(info.name, ": found ", in.size(),
                                                   " tensor operands, expected ", arity));
  }
  if (arity < 0 && in.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        info.name, ": found ", in.size(), " tensor operand", in.size() == 1 ? "" : "s",
        ", expected at least 2"));
  }
  switch (info.category) {
    case OpCategory::kSource: {
      absl::Status s = CheckDeclaredShape(node.shape);
      if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("input: ", s.message()));
      return node.shape;
    }
    case OpCategory::kMatMul: {
      const Shape& a = *in[0];
      const Shape& b = *in[1];
      if (a.size() < 2 || b.size() < 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "matmul: found operand shapes ", ShapeToString(a), " x ", ShapeToString(b),
            ", expected both of rank at least 2 (a[..., M, K] x b[..., K, N])"));
      }
      const int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
      if (k != kb) {
        return absl::InvalidArgumentError(absl::StrCat(
            "matmul: inner dims differ: found ", ShapeToString(a), " x ", ShapeToString(b),
            ", expected a[..., K] x b[..., K, N] with equal K (", k, " vs ", kb, ")"));
      }
      Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
      Shape batch;
      if (!batch_a.empty() || !batch_b.empty()) {
        if (batch_a.empty()) {
          batch = batch_b;
        } else if (batch_b.empty()) {
          batch = batch_a;
        } else {
          absl::StatusOr<Shape> bs = BroadcastShapes(batch_a, batch_b);
          if (!bs.ok()) {
            return absl::InvalidArgumentError(
                absl::StrCat("matmul: batch dims: ", bs.status().message()));
          }
          batch = *bs;
        }
      }
      batch.push_back(m);
      batch.push_back(n);
      return batch;
    }
    case OpCategory::kUnary:
      if (node.op == OpKind::kScale && !std::isfinite(node.scalar)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scale: found factor ", node.scalar, ", expected a finite number"));
      }
      return *in[0];
    case OpCategory::kBinary: {
      absl::StatusOr<Shape> s = BroadcastShapes(*in[0], *in[1]);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(info.name, ": ", s.status().message()));
      }
      return s;
    }
    case OpCategory::kReduce:
    case OpCategory::kNorm: {
      const Shape& x = *in[0];
      absl::StatusOr<int> d = NormalizeDim(node.dim, static_cast<int>(x.size()));
      if (!d.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(info.name, ": ", d.status().message()));
      }
      if (node.op == OpKind::kRmsNorm && !(std::isfinite(node.eps) && node.eps >= 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rms_norm: found eps=", node.eps, ", expected a finite number >= 0"));
      }
      if (info.category == OpCategory::kNorm) return x;
      Shape out = x;
      out[*d] = 1;  // keepdim
      return out;
    }
    case OpCategory::kConcat: {
      const Shape& first = *in[0];
      absl::StatusOr<int> d = NormalizeDim(node.dim, static_cast<int>(first.size()));
      if (!d.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("concat: ", d.status().message()));
      }
      Shape out = first;
      for (size_t i = 1; i < in.size(); ++i) {
        const Shape& s = *in[i];
        bool ok = s.size() == first.size();
        for (size_t j = 0; ok && j < s.size(); ++j) {
          if (static_cast<int>(j) != *d && s[j] != first[j]) ok = false;
        }
        if (!ok) {
          return absl::InvalidArgumentError(absl::StrCat(
              "concat: found operand shapes ", ShapeToString(first), " and ", ShapeToString(s),
              " (operand ", i, "), expected equal ranks and equal dims except dim ", *d));
        }
        out[*d] += s[*d];
      }
      if (out[*d] > kMaxDim) {
        return absl::InvalidArgumentError(absl::StrCat(
            "concat: result dim ", *d, " is ", out[*d], ", expected at most ", kMaxDim));
      }
      return out;
    }
  }
  PRISM_UNREACHABLE("bad op category");
}

// ---- ProgramBuilder --------------------------------------------------------------------------
TensorId ProgramBuilder::AddNode(Node node) {
  nodes_.push_back(std::move(node));
  return TensorId(static_cast<uint32_t>(nodes_.size() - 1));
}

Node& ProgramBuilder::mutable_node(TensorId id) {
  PRISM_CHECK(id.valid() && id.value() < nodes_.size(), "builder node id ", id.value());
  return nodes_[id.value()];
}

TensorId ProgramBuilder::Input(absl::string_view name, DType dtype, Shape shape, SourceLoc loc) {
  Node n;
  n.op = OpKind::kInput;
  n.name = std::string(name);
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.loc = loc;
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::MatMul(TensorId a, TensorId b) {
  Node n;
  n.op = OpKind::kMatMul;
  n.operands = {a, b};
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Unary(OpKind op, TensorId x) {
  Node n;
  n.op = op;
  n.operands = {x};
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Scale(TensorId x, double c) {
  Node n;
  n.op = OpKind::kScale;
  n.operands = {x};
  n.scalar = c;
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Binary(OpKind op, TensorId a, TensorId b) {
  Node n;
  n.op = op;
  n.operands = {a, b};
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Reduce(OpKind op, TensorId x, int64_t dim) {
  Node n;
  n.op = op;
  n.operands = {x};
  n.dim = dim;
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::RmsNorm(TensorId x, int64_t dim, double eps) {
  Node n;
  n.op = OpKind::kRmsNorm;
  n.operands = {x};
  n.dim = dim;
  n.eps = eps;
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Softmax(TensorId x, int64_t dim) {
  Node n;
  n.op = OpKind::kSoftmax;
  n.operands = {x};
  n.dim = dim;
  return AddNode(std::move(n));
}

TensorId ProgramBuilder::Concat(std::vector<TensorId> parts, int64_t dim) {
  Node n;
  n.op = OpKind::kConcat;
  n.operands = std::move(parts);
  n.dim = dim;
  return AddNode(std::move(n));
}

void ProgramBuilder::SetName(TensorId id, absl::string_view name) {
  mutable_node(id).name = std::string(name);
}

void ProgramBuilder::Output(TensorId id, SourceLoc loc) {
  OutputDecl out;
  out.tensor = id;
  out.loc = loc;
  outputs_.push_back(std::move(out));
}

OutputDecl& ProgramBuilder::mutable_last_output() {
  PRISM_CHECK(!outputs_.empty(), "no output declared yet");
  return outputs_.back();
}

namespace {

// Finds one cycle in the operand graph (edges operand -> user); returns the builder ids on it
// in dependency order, or an empty vector if the graph is acyclic.
std::vector<uint32_t> FindCycle(const std::vector<Node>& nodes) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph g(nodes.size());
  for (size_t u = 0; u < nodes.size(); ++u) {
    for (TensorId op : nodes[u].operands) boost::add_edge(op.value(), u, g);
  }
  struct Visitor : boost::default_dfs_visitor {
    std::vector<size_t>* parent;
    std::vector<uint32_t>* cycle;
    void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
      (*parent)[boost::target(e, g)] = boost::source(e, g);
    }
    void back_edge(Graph::edge_descriptor e, const Graph& g) const {
      if (!cycle->empty()) return;
      const size_t from = boost::source(e, g), to = boost::target(e, g);
      std::vector<uint32_t> path{static_cast<uint32_t>(from)};
      for (size_t v = from; v != to; v = (*parent)[v]) {
        path.push_back(static_cast<uint32_t>((*parent)[v]));
      }
      std::reverse(path.begin(), path.end());  // to ... from
      *cycle = std::move(path);
    }
  };
  std::vector<size_t> parent(nodes.size(), SIZE_MAX);
  std::vector<uint32_t> cycle;
  Visitor vis;
  vis.parent = &parent;
  vis.cycle = &cycle;
  boost::depth_first_search(g, boost::visitor(vis));
  return cycle;
}

}  // namespace

absl::StatusOr<Program> ProgramBuilder::Build() && {
  if (nodes_.empty()) {
    return absl::InvalidArgumentError(
        "the program has no tensors; expected at least one `NAME = input DTYPE[DIMS]` and an "
        "`output NAME`");
  }
  if (outputs_.empty()) {
    return absl::InvalidArgumentError(
        "the program has no output; expected at least one `output NAME` statement");
  }
  const uint32_t n = static_cast<uint32_t>(nodes_.size());

  // Names: valid and unique.
  absl::flat_hash_map<std::string, uint32_t> by_name;
  for (uint32_t i = 0; i < n; ++i) {
    const Node& node = nodes_[i];
    if (node.name.empty()) {
      if (node.op == OpKind::kInput) {
        return Invalid(node, absl::StrCat("input tensor %", i,
                                          " has no name; expected `NAME = input ...`"));
      }
      continue;
    }
    if (!IsValidTensorName(node.name)) {
      return Invalid(node, absl::StrCat(
          "found tensor name '", node.name,
          "', expected an identifier ([A-Za-z_][A-Za-z0-9_]*) that is not an op name, dtype, "
          "'input', 'output' or 'eps'"));
    }
    auto [it, inserted] = by_name.emplace(node.name, i);
    if (!inserted) {
      const Node& first = nodes_[it->second];
      return Invalid(node, absl::StrCat(
          "tensor '", node.name, "' is already defined",
          first.loc.valid() ? absl::StrCat(" at ", first.loc.line, ":", first.loc.column) : "",
          "; expected each name to be defined once"));
    }
  }

  // Operand ids, arity and attribute kinds.
  for (uint32_t i = 0; i < n; ++i) {
    const Node& node = nodes_[i];
    const OpInfo& info = GetOpInfo(node.op);
    for (size_t j = 0; j < node.operands.size(); ++j) {
      const TensorId op = node.operands[j];
      if (!op.valid() || op.value() >= n) {
        return Invalid(node, absl::StrCat(Describe(node, i), ": operand ", j,
                                          " refers to no tensor (id ",
                                          op.valid() ? absl::StrCat(op.value()) : "invalid",
                                          ", but there are ", n, " tensors)"));
      }
    }
    if (info.arity >= 0 && static_cast<int>(node.operands.size()) != info.arity) {
      return Invalid(node, absl::StrCat(info.name, ": found ", node.operands.size(),
                                        " tensor operand", node.operands.size() == 1 ? "" : "s",
                                        ", expected ", info.arity));
    }
    if (info.arity < 0 && node.operands.size() < 2) {
      return Invalid(node, absl::StrCat(info.name, ": found ", node.operands.size(),
                                        " tensor operand", node.operands.size() == 1 ? "" : "s",
                                        ", expected at least 2"));
    }
  }
  for (const OutputDecl& out : outputs_) {
    if (!out.tensor.valid() || out.tensor.value() >= n) {
      return InvalidAt(out.loc, "output refers to no tensor");
    }
  }

  // Cycles.
  if (std::vector<uint32_t> cycle = FindCycle(nodes_); !cycle.empty()) {
    std::vector<std::string> names;
    for (uint32_t id : cycle) names.push_back(ShortName(nodes_[id], id));
    names.push_back(names.front());
    // Report at the named node of the cycle that comes first in the source.
    uint32_t at = cycle.front();
    for (uint32_t id : cycle) {
      if (!nodes_[id].name.empty() && (nodes_[at].name.empty() || id < at)) at = id;
    }
    return Invalid(nodes_[at], absl::StrCat(
        "found a cycle: ", absl::StrJoin(names, " -> "),
        "; expected an acyclic program (a tensor cannot depend on itself)"));
  }

  // Stable topological order: Kahn's algorithm, smallest builder id first.
  std::vector<int> pending(n, 0);
  std::vector<std::vector<uint32_t>> users(n);
  for (uint32_t i = 0; i < n; ++i) {
    for (TensorId op : nodes_[i].operands) {
      ++pending[i];
      users[op.value()].push_back(i);
    }
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t u = ready.top();
    ready.pop();
    order.push_back(u);
    for (uint32_t v : users[u]) {
      if (--pending[v] == 0) ready.push(v);
    }
  }
  PRISM_CHECK(order.size() == n, "topological sort missed nodes after the cycle check");

  Program p;
  p.builder_to_program_.assign(n, TensorId());
  for (uint32_t pos = 0; pos < n; ++pos) p.builder_to_program_[order[pos]] = TensorId(pos);
  p.nodes_.reserve(n);
  for (uint32_t pos = 0; pos < n; ++pos) {
    Node node = nodes_[order[pos]];
    for (TensorId& op : node.operands) op = p.builder_to_program_[op.value()];
    p.nodes_.push_back(std::move(node));
  }

  // Per-node types, in topological order.
  p.use_counts_.assign(n, 0);
  for (uint32_t pos = 0; pos < n; ++pos) {
    Node& node = p.nodes_[pos];
    const OpInfo& info = GetOpInfo(node.op);
    std::vector<const Shape*> shapes;
    for (size_t j = 0; j < node.operands.size(); ++j) {
      const Node& operand = p.nodes_[node.operands[j].value()];
      shapes.push_back(&operand.shape);
      ++p.use_counts_[node.operands[j].value()];
      if (operand.dtype != p.nodes_[node.operands[0].value()].dtype) {
        return Invalid(node, absl::StrCat(
            info.name, ": found operands of dtypes ",
            DTypeName(p.nodes_[node.operands[0].value()].dtype), " and ",
            DTypeName(operand.dtype), ", expected all operands of one dtype"));
      }
    }
    absl::StatusOr<Shape> shape = InferShape(node, shapes);
    if (!shape.ok()) {
      const std::string who = node.name.empty() ? "" : absl::StrCat("tensor '", node.name, "': ");
      return Invalid(node, absl::StrCat(who, shape.status().message()));
    }
    node.shape = *std::move(shape);
    if (!node.operands.empty()) node.dtype = p.nodes_[node.operands[0].value()].dtype;
    if (node.op == OpKind::kInput) p.inputs_.push_back(TensorId(pos));
  }

  // Outputs: each tensor at most once.
  absl::flat_hash_map<uint32_t, size_t> first_output;  // tensor -> index in outputs_
  for (const OutputDecl& decl : outputs_) {
    OutputDecl out = decl;
    out.tensor = p.builder_to_program_[decl.tensor.value()];
    auto [it, inserted] = first_output.emplace(out.tensor.value(), p.outputs_.size());
    if (!inserted) {
      const OutputDecl& prev = p.outputs_[it->second];
      return InvalidAt(out.loc, absl::StrCat(
          "tensor '", p.DisplayName(out.tensor), "' is output twice",
          prev.loc.valid() ? absl::StrCat(" (first at ", prev.loc.line, ":", prev.loc.column,
                                          ")")
                           : "",
          "; expected each output once"));
    }
    p.outputs_.push_back(std::move(out));
  }

  // Every tensor is used or output.
  std::vector<bool> is_output(n, false);
  for (const OutputDecl& out : p.outputs_) is_output[out.tensor.value()] = true;
  for (uint32_t pos = 0; pos < n; ++pos) {
    if (p.use_counts_[pos] > 0 || is_output[pos]) continue;
    const Node& node = p.nodes_[pos];
    if (node.name.empty()) {
      return Invalid(node, absl::StrCat("tensor ", ShortName(node, order[pos]), " (",
                                        GetOpInfo(node.op).name,
                                        ") is never used; expected every tensor to be used or "
                                        "output"));
    }
    return Invalid(node, absl::StrCat("tensor '", node.name,
                                      "' is defined but never used; use it or declare it with "
                                      "`output ",
                                      node.name, "`"));
  }
  p.trailing_lines_ = std::move(trailing_lines_);
  return p;
}

// ---- Program ---------------------------------------------------------------------------------
const Node& Program::node(TensorId id) const {
  PRISM_CHECK(id.valid() && id.value() < nodes_.size(), "tensor id ", id.value(), " of ",
              nodes_.size());
  return nodes_[id.value()];
}

std::vector<TensorId> Program::output_tensors() const {
  std::vector<TensorId> out;
  out.reserve(outputs_.size());
  for (const OutputDecl& o : outputs_) out.push_back(o.tensor);
  return out;
}

std::optional<TensorId> Program::Find(absl::string_view name) const {
  if (name.empty()) return std::nullopt;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return TensorId(static_cast<uint32_t>(i));
  }
  return std::nullopt;
}

std::string Program::DisplayName(TensorId id) const {
  const Node& n = node(id);
  return n.name.empty() ? absl::StrCat("%", id.value()) : n.name;
}

namespace {
// Merkle hash over the DAG: a node's hash covers its op, attributes, type and its operands'
// hashes; inputs are identified by their position among the inputs. Names, comments and
// statement order do not matter.
uint64_t HashProgram(const Program& p, bool with_shapes) {
  std::vector<uint64_t> h(p.num_tensors());
  int input_index = 0;
  for (size_t i = 0; i < p.num_tensors(); ++i) {
    const Node& n = p.nodes()[i];
    const OpInfo& info = GetOpInfo(n.op);
    StableHasher hs;
    hs.Add(info.name).Add(DTypeName(n.dtype)).Add(static_cast<uint64_t>(n.shape.size()));
    if (with_shapes) {
      for (int64_t d : n.shape) hs.Add(d);
    }
    if (n.op == OpKind::kInput) hs.Add(input_index++);
    if (info.attr == OpAttr::kDim || info.attr == OpAttr::kDimEps) {
      // Normalized axis, so sum(x, -1) and sum(x, 1) on rank 2 agree.
      const int rank = static_cast<int>(p.node(n.operands[0]).shape.size());
      hs.Add(n.dim < 0 ? n.dim + rank : n.dim);
    }
    if (info.attr == OpAttr::kScalar) hs.Add(n.scalar);
    if (info.attr == OpAttr::kDimEps) hs.Add(n.eps);
    hs.Add(static_cast<uint64_t>(n.operands.size()));
    for (TensorId op : n.operands) hs.Add(h[op.value()]);
    h[i] = hs.Finish();
  }
  StableHasher out(0x70726f6772616d31ULL);
  out.Add(static_cast<uint64_t>(p.outputs().size()));
  for (const OutputDecl& o : p.outputs()) out.Add(h[o.tensor.value()]);
  return out.Finish();
}
}  // namespace

uint64_t Program::StructuralHash() const { return HashProgram(*this, /*with_shapes=*/true); }
uint64_t Program::ShapeFreeHash() const { return HashProgram(*this, /*with_shapes=*/false); }

bool operator==(const Program& a, const Program& b) {
  if (a.nodes_.size() != b.nodes_.size() || a.outputs_.size() != b.outputs_.size()) return false;
  for (size_t i = 0; i < a.nodes_.size(); ++i) {
    const Node& x = a.nodes_[i];
    const Node& y = b.nodes_[i];
    const OpAttr attr = GetOpInfo(x.op).attr;
    if (x.op != y.op || x.operands != y.operands || x.name != y.name || x.dtype != y.dtype ||
        x.shape != y.shape || x.leading_lines != y.leading_lines ||
        x.trailing_comment != y.trailing_comment) {
      return false;
    }
    if ((attr == OpAttr::kDim || attr == OpAttr::kDimEps) && x.dim != y.dim) return false;
    if (attr == OpAttr::kScalar && x.scalar != y.scalar) return false;
    if (attr == OpAttr::kDimEps && x.eps != y.eps) return false;
  }
  for (size_t i = 0; i < a.outputs_.size(); ++i) {
    const OutputDecl& x = a.outputs_[i];
    const OutputDecl& y = b.outputs_[i];
    if (x.tensor != y.tensor || x.leading_lines != y.leading_lines ||
        x.trailing_comment != y.trailing_comment) {
      return false;
    }
  }
  return a.trailing_lines_ == b.trailing_lines_;
}

namespace {

// The nodes `roots` depend on, the roots included; `stop` (when >= 0) is kept but not looked
// past (its operands are needed only through other paths).
std::vector<bool> ConeOf(const Program& program, const std::vector<size_t>& roots,
                         int64_t stop = -1) {
  std::vector<bool> needed(program.nodes().size(), false);
  for (size_t r : roots) needed[r] = true;
  for (size_t k = needed.size(); k-- > 0;) {  // operands have smaller ids than their users
    if (!needed[k] || static_cast<int64_t>(k) == stop) continue;
    for (TensorId o : program.nodes()[k].operands) needed[o.value()] = true;
  }
  return needed;
}

// Adds the `keep` nodes to `b` in order, operands renumbered (names, attributes and source
// locations kept), except a node for which `replace` returns the id to use instead. Returns
// each kept node's id in `b`.
std::vector<TensorId> CopyNodes(
    const Program& program, const std::vector<bool>& keep, ProgramBuilder& b,
    const std::function<std::optional<TensorId>(size_t)>& replace = nullptr) {
  std::vector<TensorId> id(keep.size());
  for (size_t k = 0; k < keep.size(); ++k) {
    if (!keep[k]) continue;
    if (replace) {
      if (std::optional<TensorId> r = replace(k)) {
        id[k] = *r;
        continue;
      }
    }
    Node node = program.nodes()[k];
    for (TensorId& o : node.operands) o = id[o.value()];
    id[k] = b.AddNode(std::move(node));
  }
  return id;
}

}  // namespace

absl::StatusOr<Program> OutputCone(const Program& program, size_t i) {
  if (i >= program.outputs().size()) {
    return absl::OutOfRangeError(absl::StrCat("output ", i, " of a program with ",
                                              program.outputs().size(), " outputs"));
  }
  const OutputDecl& out = program.outputs()[i];
  ProgramBuilder b;
  const std::vector<TensorId> id = CopyNodes(program, ConeOf(program, {out.tensor.value()}), b);
  b.Output(id[out.tensor.value()], out.loc);
  return std::move(b).Build();
}

absl::StatusOr<ProgramSplit> SplitAt(const Program& program, TensorId t,
                                     const std::string& name) {
  const size_t n = program.nodes().size();
  const size_t cut = t.value();
  if (cut >= n) return absl::InvalidArgumentError("SplitAt: no such tensor");
  const Node& at = program.nodes()[cut];
  if (at.op == OpKind::kInput) {
    return absl::InvalidArgumentError(absl::StrCat("SplitAt: ", at.name, " is an input"));
  }
  std::vector<size_t> outputs;
  for (const OutputDecl& o : program.outputs()) {
    if (o.tensor == t) return absl::InvalidArgumentError("SplitAt: the tensor is an output");
    outputs.push_back(o.tensor.value());
  }
  const std::string cut_name = at.name.empty() ? name : at.name;
  for (size_t k = 0; k < n; ++k) {
    if (k != cut && program.nodes()[k].name == cut_name) {
      return absl::InvalidArgumentError(
          absl::StrCat("SplitAt: the name ", cut_name, " is taken"));
    }
  }
  ProgramSplit out;
  {  // The first part: t's cone, t its output.
    ProgramBuilder b;
    const std::vector<TensorId> id = CopyNodes(program, ConeOf(program, {cut}), b);
    b.SetName(id[cut], cut_name);
    b.Output(id[cut]);
    PRISM_ASSIGN_OR_RETURN(out.first, std::move(b).Build());
  }
  {  // The second: the outputs' cones, stopping at t, which becomes an input.
    ProgramBuilder b;
    const std::vector<TensorId> id =
        CopyNodes(program, ConeOf(program, outputs, static_cast<int64_t>(cut)), b,
                  [&](size_t k) -> std::optional<TensorId> {
                    if (k != cut) return std::nullopt;
                    return b.Input(cut_name, at.dtype, at.shape, at.loc);
                  });
    for (const OutputDecl& o : program.outputs()) b.Output(id[o.tensor.value()], o.loc);
    PRISM_ASSIGN_OR_RETURN(out.second, std::move(b).Build());
  }
  return out;
}

absl::StatusOr<BroadcastView> PadBroadcastInputs(const Program& program) {
  const size_t n = program.nodes().size();
  const auto rank_of = [&](size_t k) { return static_cast<int64_t>(program.nodes()[k].shape.size()); };
  // want[k]: the rank k's users need it at. An elementwise op (unary or binary) needs its
  // operands at the rank it is itself wanted at (a lower-rank operand is broadcast, so giving
  // it leading 1s up to that rank changes no value), and so does a reduction or norm over a dim
  // counted from the end (sum, max, mean, softmax, rms_norm with dim < 0: leading 1s leave
  // that dim the same axis, and the result keeps its rank); any other op, and an output, needs
  // the tensor exactly as it is. Users come after their operands, so one reverse pass settles
  // it; users that disagree leave the tensor at its own rank.
  constexpr int64_t kUnset = 0, kConflict = -1;
  std::vector<int64_t> want(n, kUnset);
  const auto need = [&](size_t k, int64_t r) {
    want[k] = want[k] == kUnset || want[k] == r ? r : kConflict;
  };
  for (const OutputDecl& o : program.outputs()) need(o.tensor.value(), rank_of(o.tensor.value()));
  for (size_t k = n; k-- > 0;) {
    if (want[k] == kUnset || want[k] == kConflict) want[k] = rank_of(k);
    const Node& node = program.nodes()[k];
    const OpCategory cat = GetOpInfo(node.op).category;
    const bool from_end =
        node.dim < 0 && (cat == OpCategory::kReduce || cat == OpCategory::kNorm);
    const bool same_rank = cat == OpCategory::kUnary || cat == OpCategory::kBinary || from_end;
    for (TensorId o : node.operands) need(o.value(), same_rank ? want[k] : rank_of(o.value()));
  }
  std::vector<bool> pad(n, false);
  bool any = false;
  for (size_t k = 0; k < n; ++k) {
    pad[k] = program.nodes()[k].op == OpKind::kInput && want[k] > rank_of(k);
    any = any || pad[k];
  }
  BroadcastView out;
  if (!any) {
    out.program = program;
    return out;
  }
  ProgramBuilder b;
  const std::vector<TensorId> id =
      CopyNodes(program, std::vector<bool>(n, true), b, [&](size_t k) -> std::optional<TensorId> {
        if (!pad[k]) return std::nullopt;
        const Node& in = program.nodes()[k];
        Shape shape(static_cast<size_t>(want[k]) - in.shape.size(), 1);
        shape.insert(shape.end(), in.shape.begin(), in.shape.end());
        out.padded.emplace_back(in.name, in.shape);
        return b.Input(in.name, in.dtype, shape, in.loc);
      });
  for (const OutputDecl& o : program.outputs()) b.Output(id[o.tensor.value()], o.loc);
  PRISM_ASSIGN_OR_RETURN(out.program, std::move(b).Build());
  return out;
}

}  // namespace prism
