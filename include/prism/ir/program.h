// Program: the input of prism — a static-shape DAG of tensor ops (DESIGN.md §2.1). Semantics
// of every op are defined once in docs/ir_semantics.md and implemented once by the reference
// interpreter (ir/interpreter.h).
//
// A Program is immutable and always valid: it is produced only by ProgramBuilder::Build(),
// which resolves forward references, rejects cycles, sorts nodes topologically, infers every
// shape and dtype, and checks every rule (ranks, dims, broadcasting, unused tensors, names).
//
//   ProgramBuilder b;
//   TensorId x = b.Input("X", DType::kF16, {16, 4096});
//   TensorId w = b.Input("W", DType::kF16, {4096, 6144});
//   TensorId y = b.MatMul(b.RmsNorm(x, -1), w);
//   b.SetName(y, "Y");
//   b.Output(y);
//   absl::StatusOr<Program> p = std::move(b).Build();   // p->node(y_in_p).shape == {16, 6144}
#ifndef PRISM_IR_PROGRAM_H_
#define PRISM_IR_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prism/base/id.h"
#include "prism/ir/types.h"

namespace prism {

// ---- the op vocabulary (ops.def) ------------------------------------------------------------
enum class OpKind : uint8_t {
#define PRISM_OP(e, name, cat, arity, attr) e,
#include "prism/ir/ops.def"
#undef PRISM_OP
};
enum class OpCategory : uint8_t { kSource, kMatMul, kUnary, kBinary, kReduce, kNorm, kConcat };
enum class OpAttr : uint8_t { kNone, kDim, kScalar, kDimEps };

struct OpInfo {
  OpKind kind;
  absl::string_view name;  // the text-format spelling, e.g. "rms_norm"
  OpCategory category;
  int arity;  // tensor operands; -1 = variadic (≥ 2)
  OpAttr attr;
};

// Static description of `kind` (from ops.def).
const OpInfo& GetOpInfo(OpKind kind);
// All ops in ops.def order.
absl::Span<const OpInfo> AllOps();
// The op spelled `name` in the text format, or nullopt.
std::optional<OpKind> ParseOpName(absl::string_view name);

inline constexpr double kDefaultRmsEps = 1e-6;

// ---- nodes -----------------------------------------------------------------------------------
// 1-based line and column of a construct in .prism text; {0, 0} when not parsed from text.
struct SourceLoc {
  int line = 0;
  int column = 0;
  bool valid() const { return line > 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

struct TensorTag {};
// Identifies a tensor (= the node that produces it). In a Program, ids are dense positions in
// topological order (operands have smaller ids than their users). In a ProgramBuilder, ids
// are creation order; Build() renumbers them (see Program::builder_to_program()).
using TensorId = Id<TensorTag>;

// One op application; each node produces exactly one tensor.
struct Node {
  OpKind op = OpKind::kInput;
  std::vector<TensorId> operands;
  // Attributes, meaningful per GetOpInfo(op).attr:
  int64_t dim = 0;               // kDim / kDimEps: axis as written (negative counts from end)
  double scalar = 0.0;           // kScalar: the constant of scale(x, c)
  double eps = kDefaultRmsEps;   // kDimEps: rms_norm's epsilon
  // Name in the text format; "" for an anonymous (nested) tensor.
  std::string name;
  // Result type. For inputs: declared. For other ops: inferred by Build() (any value set by the
  // caller is ignored and overwritten).
  DType dtype = DType::kF32;
  Shape shape;
  // Provenance for error messages and round-trip printing (not part of equality or hash).
  SourceLoc loc;
  std::vector<std::string> leading_lines;  // comment/blank lines just above the statement
  std::string trailing_comment;            // "# ..." on the statement's line, or ""
};

// An `output NAME` statement.
struct OutputDecl {
  TensorId tensor;
  SourceLoc loc;
  std::vector<std::string> leading_lines;
  std::string trailing_comment;
};

// ---- Program ---------------------------------------------------------------------------------
class Program {
 public:
  Program() = default;  // the empty program (not valid input for any pass; Build() rejects it)

  size_t num_tensors() const { return nodes_.size(); }
  const Node& node(TensorId id) const;  // PRISM_CHECKs that id is in range
  // All nodes in topological order; nodes()[i] has id TensorId(i).
  absl::Span<const Node> nodes() const { return nodes_; }
  // Input tensors in declaration order.
  absl::Span<const TensorId> inputs() const { return inputs_; }
  // Output declarations in declaration order (a tensor may not be output twice).
  absl::Span<const OutputDecl> outputs() const { return outputs_; }
  std::vector<TensorId> output_tensors() const;
  // The tensor named `name`, if any.
  std::optional<TensorId> Find(absl::string_view name) const;
  // The name, or "%<id>" for an anonymous tensor (for messages only; not parseable).
  std::string DisplayName(TensorId id) const;
  // Number of times each tensor is used as an operand (indexed by id).
  const std::vector<int>& use_counts() const { return use_counts_; }
  // Comment/blank lines after the last statement.
  absl::Span<const std::string> trailing_lines() const { return trailing_lines_; }
  // For each builder id (index), the id it became in this Program.
  absl::Span<const TensorId> builder_to_program() const { return builder_to_program_; }

  // Stable structural hash: equal for programs that compute the same thing in the same
  // structure (ops, attributes, wiring, dtypes, shapes, input order, output order) regardless
  // of tensor names, comments and source locations; identical across runs and platforms.
  uint64_t StructuralHash() const;
  // Hash of the structure with all shapes left out (ops, attributes, wiring, dtypes, ranks):
  // programs that differ only in sizes share it (the search's family cache key).
  uint64_t ShapeFreeHash() const;

  // Exact equality: same nodes (ops, attributes, operands, names, dtypes, shapes, comments) and
  // same outputs; source locations are ignored.
  friend bool operator==(const Program& a, const Program& b);

 private:
  friend class ProgramBuilder;
  std::vector<Node> nodes_;
  std::vector<TensorId> inputs_;
  std::vector<OutputDecl> outputs_;
  std::vector<int> use_counts_;
  std::vector<std::string> trailing_lines_;
  std::vector<TensorId> builder_to_program_;
};

// ---- ProgramBuilder --------------------------------------------------------------------------
// Collects nodes; reports every error at Build(). Operand ids may refer to nodes added later
// (forward references, as the text format allows); they must exist by Build().
// Convenience methods return the new node's builder id.
class ProgramBuilder {
 public:
  TensorId Input(absl::string_view name, DType dtype, Shape shape, SourceLoc loc = {});
  TensorId MatMul(TensorId a, TensorId b);
  TensorId Unary(OpKind op, TensorId x);  // exp silu gelu relu sqrt rsqrt square neg recip
  TensorId Exp(TensorId x) { return Unary(OpKind::kExp, x); }
  TensorId Silu(TensorId x) { return Unary(OpKind::kSilu, x); }
  TensorId Square(TensorId x) { return Unary(OpKind::kSquare, x); }
  TensorId Rsqrt(TensorId x) { return Unary(OpKind::kRsqrt, x); }
  TensorId Scale(TensorId x, double c);
  TensorId Binary(OpKind op, TensorId a, TensorId b);  // add sub mul div
  TensorId Add(TensorId a, TensorId b) { return Binary(OpKind::kAdd, a, b); }
  TensorId Sub(TensorId a, TensorId b) { return Binary(OpKind::kSub, a, b); }
  TensorId Mul(TensorId a, TensorId b) { return Binary(OpKind::kMul, a, b); }
  TensorId Div(TensorId a, TensorId b) { return Binary(OpKind::kDiv, a, b); }
  TensorId Reduce(OpKind op, TensorId x, int64_t dim);  // sum max mean (keepdim)
  TensorId Sum(TensorId x, int64_t dim) { return Reduce(OpKind::kSum, x, dim); }
  TensorId RmsNorm(TensorId x, int64_t dim, double eps = kDefaultRmsEps);
  TensorId Softmax(TensorId x, int64_t dim);
  TensorId Concat(std::vector<TensorId> parts, int64_t dim);

  // General form (used by the parser and JSON import): appends `node` as given.
  TensorId AddNode(Node node);
  // Mutable access to a node added earlier (e.g. to set loc or comments); PRISM_CHECKs range.
  Node& mutable_node(TensorId id);
  size_t num_nodes() const { return nodes_.size(); }
  // Names a tensor (must be a valid identifier, not an op name, dtype or keyword; checked at
  // Build()).
  void SetName(TensorId id, absl::string_view name);
  // Declares `id` as a program output.
  void Output(TensorId id, SourceLoc loc = {});
  // Mutable access to the last output declaration (for comments); PRISM_CHECKs one exists.
  OutputDecl& mutable_last_output();
  void SetTrailingLines(std::vector<std::string> lines) { trailing_lines_ = std::move(lines); }

  // Validates and produces the Program. Errors are InvalidArgument; the message starts with
  // "LINE:COL: " when the offending node has a source location, and names the tensor, what was
  // found and what was expected, e.g.
  //   "3:5: matmul: inner dims differ: found [16, 4096] x [2048, 6144], expected
  //    a[..., K] x b[..., K, N] with equal K (4096 vs 2048)"
  // Checks, in order: non-empty, at least one output, names (valid, unique), operand ids,
  // cycles (naming the tensors on the cycle), per-node arity/attributes/rank/dims/dtypes/shapes
  // in topological order, every named tensor used or output, no tensor output twice.
  absl::StatusOr<Program> Build() &&;

 private:
  std::vector<Node> nodes_;
  std::vector<OutputDecl> outputs_;
  std::vector<std::string> trailing_lines_;
};

// Shape/dtype inference for one op application, the single source of truth used by Build():
// given the operand types, returns the result shape, or InvalidArgument with a message (no
// location prefix) saying what was found and what was expected.
absl::StatusOr<Shape> InferShape(const Node& node, absl::Span<const Shape* const> operand_shapes);

// The program of output `i` alone: the nodes that output depends on (in the original order,
// names, attributes and source locations kept), the inputs among them in the original order,
// and that one output. Optimizing a multi-output program output by output uses it (no fusion
// across outputs). OutOfRange "output 3 of a program with 2 outputs" for a bad `i`.
absl::StatusOr<Program> OutputCone(const Program& program, size_t i);

// `program` cut in two at tensor `t` (not an input, not an output): `first` computes t alone
// (its cone, t its one output, named `name` when t is anonymous), `second` is `program` with t
// an input of the same name, dtype and shape (the nodes only t needed left out). Running first
// and then second with first's output gives program's outputs: second is program with t's
// definition replaced by its value. Names, attributes and source locations are kept.
// InvalidArgument when t is an input or an output, or when `name` is taken by another tensor.
struct ProgramSplit {
  Program first, second;
};
absl::StatusOr<ProgramSplit> SplitAt(const Program& program, TensorId t, const std::string& name);

// `program` with each input of lower rank that elementwise ops broadcast declared at the rank
// they broadcast it to, with leading 1s: a bias b f16[N] added to a [M, N] matmul becomes
// b f16[1, N], a gain G f16[K] multiplying rms_norm(X) [M, K] becomes G f16[1, K], and so does
// an input reaching such a broadcast through unary ops (add(X, exp(b))) or through reductions
// and norms over a dim counted from the end (add(X, rms_norm(b, -1))); those ops' results gain
// the same leading 1s. Under the broadcast rule (dims aligned at the last one) every value
// is unchanged, and so are the input's elements and their order in memory: a caller passes the
// same buffer. The block graph pairs tiles of equal rank, so the search needs this view (tools
// and prism::Optimize apply it). `padded` lists the inputs changed, in program order, with
// their declared shapes. Inputs that a matmul, a concat, or a reduction or norm over a dim
// counted from the start (sum(b, 0)) reads, that are
// outputs, or whose users need them at different ranks stay as they are, and so does every
// output's shape.
struct BroadcastView {
  Program program;
  std::vector<std::pair<std::string, Shape>> padded;  // name, the shape as declared
};
absl::StatusOr<BroadcastView> PadBroadcastInputs(const Program& program);

// True if `name` may name a tensor: [A-Za-z_][A-Za-z0-9_]*, not an op name, dtype name,
// `input`, `output` or `eps` (the rms_norm keyword argument).
bool IsValidTensorName(absl::string_view name);

}  // namespace prism

#endif  // PRISM_IR_PROGRAM_H_
