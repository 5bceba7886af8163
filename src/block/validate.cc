// Validate(): the well-formedness rules of sGraphs and the symbolic derivation of tile shapes,
// phases, split structure, partial results and divisibility constraints. Every rule and its
// message are listed in docs/block_graph.md ("Well-formedness").
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/expr/simplify.h"
#include "prism/block/sgraph.h"
#include "sgraph_internal.h"
#include "symbolic.h"

namespace prism {
namespace {

using internal::ConstValueOf;
using internal::ExactDiv;
using internal::PolyDiv;
using internal::Product;
using internal::SameExpr;
using internal::ShapeString;

// "(x, y)", "(forloop)", "(x; forloop)" or "(nothing)".
std::string SplitString(uint8_t mask, bool loop) {
  std::vector<std::string> parts;
  for (int p = 0; p < kNumGridAxes; ++p) {
    if (mask & (1u << p)) parts.emplace_back(GridAxisName(p));
  }
  std::string s = absl::StrJoin(parts, ", ");
  if (loop) s = s.empty() ? "forloop" : absl::StrCat(s, "; forloop");
  return absl::StrCat("(", s.empty() ? "nothing" : s, ")");
}

std::string AxesString(uint8_t mask) {
  std::vector<std::string> parts;
  for (int p = 0; p < kNumGridAxes; ++p) {
    if (mask & (1u << p)) parts.emplace_back(GridAxisName(p));
  }
  return absl::StrJoin(parts, ", ");
}

bool IsUnaryFn(OpKind fn) { return GetOpInfo(fn).category == OpCategory::kUnary; }
bool IsBinaryFn(OpKind fn) { return GetOpInfo(fn).category == OpCategory::kBinary; }

std::string FnList(OpCategory category) {
  std::vector<std::string> names;
  for (const OpInfo& info : AllOps()) {
    if (info.category == category) names.emplace_back(info.name);
  }
  return absl::StrJoin(names, " ");
}

// A tile dim's split structure, for merging and comparing.
struct DimFacts {
  Expr extent;
  uint8_t grid = 0;
  bool loop = false;
  Expr group;  // valid if grouped
};

DimFacts FactsOf(const TileInfo& t, size_t d) {
  return {t.shape[d], t.grid_split[d], t.loop_split[d], t.group_extent[d]};
}

void SetDim(TileInfo& t, size_t d, const DimFacts& f) {
  t.shape[d] = f.extent;
  t.grid_split[d] = f.grid;
  t.loop_split[d] = f.loop;
  t.group_extent[d] = f.group;
}

TileInfo EmptyTile(size_t rank) {
  TileInfo t;
  t.shape.resize(rank);
  t.grid_split.assign(rank, 0);
  t.loop_split.assign(rank, false);
  t.group_extent.assign(rank, Expr());
  return t;
}

class Validator {
 public:
  explicit Validator(const SGraph& graph) : g_(graph), ctx_(graph.ctx()) {}

  absl::StatusOr<SGraphAnalysis> Run() {
    PRISM_RETURN_IF_ERROR(CheckGraph());
    const size_t nt = g_.tensors().size();
    out_.partials.assign(nt, {});
    out_.producer.assign(nt, -1);
    out_.tiles.assign(g_.kernels().size(), {});
    written_.assign(nt, false);
    read_.assign(nt, false);
    for (int t : g_.inputs()) written_[t] = true;
    for (size_t k = 0; k < g_.kernels().size(); ++k) {
      k_ = static_cast<int>(k);
      if (g_.kernels()[k].is_block()) {
        PRISM_RETURN_IF_ERROR(CheckBlock());
      } else {
        PRISM_RETURN_IF_ERROR(CheckLibrary());
      }
    }
    PRISM_RETURN_IF_ERROR(CheckFinal());
    return std::move(out_);
  }

 private:
  // ---- messages --------------------------------------------------------------------------------
  std::string OpName(int i) const {
    const BlockOp& op = block().ops[i];
    if (op.kind == BlockOpKind::kOutput && op.tensor >= 0 &&
        op.tensor < static_cast<int>(g_.tensors().size())) {
      return absl::StrCat("output ", g_.tensors()[op.tensor].name);
    }
    return op.DisplayName(i);
  }
  template <typename... Args>
  absl::Status KernelError(const Args&... args) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", KernelDisplayName(g_, k_), ": ", args...));
  }
  template <typename... Args>
  absl::Status OpError(int i, const Args&... args) const {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", KernelDisplayName(g_, k_), ", op ", OpName(i), ": ", args...));
  }
  std::string Str(Expr e) const { return ctx_.ToString(e); }
  std::string TensorName(int t) const { return g_.tensors()[t].name; }
  const BlockGraph& block() const { return g_.kernels()[k_].block(); }

  // ---- graph level ----------------------------------------------------------------------------
  absl::Status CheckGraph() {
    if (g_.kernels().empty()) {
      return absl::InvalidArgumentError("sGraph has no kernels, expected at least one");
    }
    for (const Param& p : g_.params()) {
      if (!ctx_.contains(p.var) || ctx_.kind(p.var) != ExprKind::kVar ||
          ctx_.var_name(p.var) != p.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter '", p.name, "' is not a variable of the graph's context"));
      }
    }
    // Every variable used anywhere is a declared parameter.
    absl::Status status;
    internal::ForEachExpr(g_, [&](Expr e) {
      if (!status.ok()) return;
      if (!ctx_.contains(e)) {
        status = absl::InvalidArgumentError("an expression handle is not of the graph's context");
        return;
      }
      if (ctx_.sort(e) != Sort::kInt) {
        status = absl::InvalidArgumentError(
            absl::StrCat("expression '", Str(e), "' is a boolean, expected an integer expression"));
        return;
      }
      for (Expr v : FreeVars(ctx_, e)) {
        if (g_.FindParam(ctx_.var_name(v)) == nullptr) {
          status = absl::InvalidArgumentError(absl::StrCat("expression '", Str(e), "' uses '",
                                                           ctx_.var_name(v),
                                                           "', which is not a declared parameter"));
          return;
        }
      }
    });
    PRISM_RETURN_IF_ERROR(status);

    absl::flat_hash_set<std::string> names;
    for (const SGraphTensor& t : g_.tensors()) {
      if (!IsValidTensorName(t.name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor name '", t.name,
                         "' is not valid, expected an identifier that is not an op name or dtype"));
      }
      if (!names.insert(t.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", t.name, "' is declared twice, expected unique names"));
      }
      if (t.shape.empty() || t.shape.size() > static_cast<size_t>(kMaxRank)) {
        return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, " has rank ",
                                                       t.shape.size(), ", expected 1..", kMaxRank));
      }
      for (Expr d : t.shape) {
        if (!d.valid()) {
          return absl::InvalidArgumentError(absl::StrCat("tensor ", t.name, " has an unset dim"));
        }
        std::optional<int64_t> v = ConstValueOf(ctx_, d);
        if (v.has_value() && *v < 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("tensor ", t.name, " has dim ", *v, ", expected dims ≥ 1"));
        }
      }
    }
    const int nt = static_cast<int>(g_.tensors().size());
    absl::flat_hash_set<int> seen;
    for (int t : g_.inputs()) {
      if (t < 0 || t >= nt)
        return absl::InvalidArgumentError(absl::StrCat("input index ", t, " is out of range"));
      if (!seen.insert(t).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", TensorName(t), " is declared as an input twice"));
      }
    }
    absl::flat_hash_set<int> seen_out;
    for (int t : g_.outputs()) {
      if (t < 0 || t >= nt)
        return absl::InvalidArgumentError(absl::StrCat("output index ", t, " is out of range"));
      if (seen.contains(t)) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", TensorName(t), " is both an input and an output"));
      }
      if (!seen_out.insert(t).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", TensorName(t), " is declared as an output twice"));
      }
    }
    if (g_.outputs().empty()) {
      return absl::InvalidArgumentError("sGraph has no outputs, expected at least one");
    }
    return absl::OkStatus();
  }

  bool IsInput(int t) const {
    return std::find(g_.inputs().begin(), g_.inputs().end(), t) != g_.inputs().end();
  }
  bool IsOutput(int t) const {
    return std::find(g_.outputs().begin(), g_.outputs().end(), t) != g_.outputs().end();
  }

  // A positive-integer parameter slot of a kernel.
  absl::Status CheckCount(Expr e, absl::string_view what) {
    if (!e.valid()) return KernelError(what, " is unset");
    std::optional<int64_t> v = ConstValueOf(ctx_, e);
    if (v.has_value() && *v < 1) return KernelError(what, " is ", *v, ", expected ≥ 1");
    return absl::OkStatus();
  }

  // A resolved map entry in [-1, rank).
  absl::StatusOr<int> MapEntry(int i, Expr e, absl::string_view what, int rank,
                               absl::string_view tensor) {
    if (!e.valid()) return OpError(i, what, " is unset");
    std::optional<int64_t> v = ConstValueOf(ctx_, e);
    if (!v.has_value()) {
      return OpError(i, what, " is unresolved ('", Str(e),
                     "'), expected a constant: bind the map parameters before validating");
    }
    if (*v < kReplicate || *v >= rank) {
      return OpError(i, what, " = ", *v, " is out of range for tensor ", tensor, " of rank ", rank,
                     ", expected -1 (none) or 0..", rank - 1);
    }
    return static_cast<int>(*v);
  }

  // Records D mod divisor == 0 (or fails at once if it is decidedly false).
  // What splits dim `d` of a tensor whose grid map is `map` (and the forloop when `loop`), as
  // Divisible's messages name it: "grid x = g and forloop = F".
  std::string Splitters(const std::array<int, kNumGridAxes>& map, int d, bool loop) const {
    const BlockGraph& b = block();
    std::vector<std::string> parts;
    for (int p = 0; p < kNumGridAxes; ++p) {
      if (map[p] == d) {
        parts.push_back(absl::StrCat("grid ", GridAxisName(p), " = ", Str(b.grid[p])));
      }
    }
    if (loop) parts.push_back(absl::StrCat("forloop = ", Str(b.forloop)));
    return absl::StrJoin(parts, " and ");
  }

  // `splitters` names what divides the dim ("grid x = g and forloop = F"); asked for only when
  // the dim is not divisible outright (printing expressions is most of this check's cost).
  absl::Status Divisible(int i, Expr extent, Expr divisor, absl::string_view tensor, int dim,
                         absl::FunctionRef<std::string()> splitters_text) {
    if (internal::PolyDiv(ctx_, extent, divisor).has_value()) return absl::OkStatus();
    const std::string splitters = splitters_text();
    const Expr cond = Simplify(ctx_, ctx_.Eq(ctx_.Mod(extent, divisor), ctx_.Const(0)));
    if (ctx_.kind(cond) == ExprKind::kBoolConst) {
      if (ctx_.bool_value(cond)) return absl::OkStatus();
      return OpError(i, "tensor ", tensor, " dim ", dim, " (extent ", Str(extent),
                     ") is not divisible by ", Str(Simplify(ctx_, divisor)), " (", splitters,
                     "), expected a divisor");
    }
    out_.constraints.push_back(
        {cond, absl::StrCat("tensor ", tensor, " dim ", dim, " is split by ", splitters,
                            " (kernel ", KernelDisplayName(g_, k_), ", op ", OpName(i), ")")});
    return absl::OkStatus();
  }

  // ---- block graphs ---------------------------------------------------------------------------
  absl::Status CheckBlock() {
    const BlockGraph& b = block();
    for (int p = 0; p < kNumGridAxes; ++p) {
      PRISM_RETURN_IF_ERROR(CheckCount(b.grid[p], absl::StrCat("grid ", GridAxisName(p))));
    }
    PRISM_RETURN_IF_ERROR(CheckCount(b.threads, "threads"));
    PRISM_RETURN_IF_ERROR(CheckCount(b.forloop, "forloop"));
    PRISM_RETURN_IF_ERROR(CheckCount(b.stages, "stages"));
    std::vector<TileInfo>& tiles = out_.tiles[k_];
    tiles.clear();
    absl::flat_hash_set<std::string> names;
    std::vector<int> kernel_writes;
    bool any_output = false;
    for (size_t idx = 0; idx < b.ops.size(); ++idx) {
      const int i = static_cast<int>(idx);
      const BlockOp& op = b.ops[i];
      const BlockOpInfo& info = GetBlockOpInfo(op.kind);
      if (!op.name.empty() && !names.insert(op.name).second) {
        return OpError(i, "the name is used twice in the kernel, expected unique op names");
      }
      if (static_cast<int>(op.operands.size()) != info.arity) {
        return OpError(i, info.name, " takes ", info.arity, " operand(s), found ",
                       op.operands.size());
      }
      for (int a : op.operands) {
        if (a < 0 || a >= i) {
          return OpError(i, "operand ", a,
                         " is not an earlier op, expected ops in dependency order (an op may "
                         "only use ops before it)");
        }
        if (b.ops[a].kind == BlockOpKind::kOutput) {
          return OpError(i, "operand ", OpName(a), " is an output, which has no value");
        }
      }
      absl::StatusOr<TileInfo> tile = CheckOp(i);
      if (!tile.ok()) return tile.status();
      tiles.push_back(*std::move(tile));
      if (op.kind == BlockOpKind::kOutput) {
        any_output = true;
        kernel_writes.push_back(op.tensor);
      }
    }
    if (!any_output) return KernelError("has no output op, expected at least one");
    for (int t : kernel_writes) {
      written_[t] = true;
      out_.producer[t] = k_;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TileInfo> CheckOp(int i) {
    const BlockOp& op = block().ops[i];
    switch (op.kind) {
      case BlockOpKind::kInput: return CheckInput(i);
      case BlockOpKind::kOutput: return CheckOutput(i);
      case BlockOpKind::kMatMul: return CheckMatMul(i);
      case BlockOpKind::kUnary: return CheckUnary(i);
      case BlockOpKind::kBinary: return CheckBinary(i);
      case BlockOpKind::kReduce: return CheckReduce(i);
      case BlockOpKind::kRms: return CheckRms(i);
      case BlockOpKind::kInvRms: return CheckInvRms(i);
      case BlockOpKind::kDivCount: return CheckDivCount(i);
      case BlockOpKind::kAccSum:
      case BlockOpKind::kAccSumLast:
      case BlockOpKind::kAccSumSqLast:
      case BlockOpKind::kAccMaxLast:
      case BlockOpKind::kAccOnlineSum:
      case BlockOpKind::kAccOnlineMatMul: return CheckAccumulator(i);
    }
    PRISM_UNREACHABLE("bad block op kind");
  }

  const TileInfo& Tile(int op) const { return out_.tiles[k_][op]; }

  // The phase of a compute op from its operands (see docs: inside/after-loop rules).
  absl::StatusOr<Phase> ComputePhase(int i) {
    int loop_op = -1, after_op = -1;
    for (int a : block().ops[i].operands) {
      if (Tile(a).phase == Phase::kLoop && loop_op < 0) loop_op = a;
      if (Tile(a).phase == Phase::kAfter && after_op < 0) after_op = a;
    }
    if (loop_op >= 0 && after_op >= 0) {
      return OpError(i, "mixes ", OpName(loop_op), ", computed inside the forloop, with ",
                     OpName(after_op),
                     ", an after-loop value; after-loop ops may only consume accumulators and "
                     "loop-invariant tiles");
    }
    if (after_op >= 0) return Phase::kAfter;
    if (loop_op >= 0) return Phase::kLoop;
    return Phase::kInvariant;
  }

  absl::StatusOr<TileInfo> CheckInput(int i) {
    const BlockOp& op = block().ops[i];
    const BlockGraph& b = block();
    if (op.tensor < 0 || op.tensor >= static_cast<int>(g_.tensors().size())) {
      return OpError(i, "tensor index ", op.tensor, " is out of range");
    }
    const SGraphTensor& t = g_.tensors()[op.tensor];
    if (!written_[op.tensor]) {
      return OpError(i, "reads tensor ", t.name,
                     " before any kernel writes it, expected a program input or a tensor "
                     "written by an earlier kernel");
    }
    read_[op.tensor] = true;
    const int rank = static_cast<int>(t.shape.size());
    std::array<int, kNumGridAxes> imap;
    for (int p = 0; p < kNumGridAxes; ++p) {
      PRISM_ASSIGN_OR_RETURN(
          imap[p], MapEntry(i, op.map[p], absl::StrCat("imap ", GridAxisName(p)), rank, t.name));
    }
    PRISM_ASSIGN_OR_RETURN(int fmap, MapEntry(i, op.fmap, "fmap", rank, t.name));
    TileInfo tile = EmptyTile(rank);
    tile.phase = fmap == kReplicate ? Phase::kInvariant : Phase::kLoop;
    const std::vector<PartialLayout>& partials = out_.partials[op.tensor];
    for (int d = 0; d < rank; ++d) {
      std::vector<Expr> factors;
      for (int p = 0; p < kNumGridAxes; ++p) {
        if (imap[p] != d) continue;
        tile.grid_split[d] |= static_cast<uint8_t>(1u << p);
        factors.push_back(b.grid[p]);
      }
      if (fmap == d) {
        tile.loop_split[d] = true;
        factors.push_back(b.forloop);
      }
      const Expr divisor = Product(ctx_, factors);
      tile.shape[d] = ExactDiv(ctx_, t.shape[d], divisor);
      PRISM_RETURN_IF_ERROR(Divisible(i, t.shape[d], divisor, t.name, d,
                                      [&] { return Splitters(imap, d, fmap == d); }));
      for (const PartialLayout& l : partials) {
        if (l.dim != d) continue;
        const auto what = [&] {
          return absl::StrCat("tensor ", t.name, " holds ", Str(l.groups),
                              " partial results along dim ", d, " (one per block along grid axis ",
                              GridAxisName(l.axis), " of kernel ", KernelDisplayName(g_, l.kernel),
                              ")");
        };
        if (tile.grid_split[d] != 0) {
          return OpError(i, what(), ", but grid axis ", AxesString(tile.grid_split[d]),
                         " splits that dim; expected the forloop to walk the groups or the "
                         "whole dim in the tile");
        }
        if (fmap == d) {
          if (!SameExpr(ctx_, b.forloop, l.groups) ||
              !SameExpr(ctx_, tile.shape[d], l.group_extent)) {
            return OpError(i, what(), ", but the forloop (", Str(b.forloop),
                           " iterations) does not walk them one group per iteration; "
                           "expected forloop = ",
                           Str(l.groups));
          }
          tile.loop_split[d] = false;
          tile.loop_partial = true;  // an accumulator sums the groups
        } else {
          tile.group_extent[d] = l.group_extent;
        }
      }
    }
    return tile;
  }

  // Facts of two dims that must describe the same elements.
  absl::Status SameSplit(int i, int a, size_t da, int b, size_t db, absl::string_view what) {
    const TileInfo& ta = Tile(a);
    const TileInfo& tb = Tile(b);
    if (ta.grid_split[da] != tb.grid_split[db] || ta.loop_split[da] != tb.loop_split[db]) {
      return OpError(i, what, ": dim ", da, " of ", OpName(a), " is split by ",
                     SplitString(ta.grid_split[da], ta.loop_split[da]), " but dim ", db, " of ",
                     OpName(b), " by ", SplitString(tb.grid_split[db], tb.loop_split[db]),
                     ", so the tiles hold different elements; expected the same maps");
    }
    if (ta.group_extent[da].valid() != tb.group_extent[db].valid()) {
      return OpError(i, what, ": dim ", da, " of ", OpName(a), " and dim ", db, " of ", OpName(b),
                     " differ in holding unreduced partial results");
    }
    return absl::OkStatus();
  }

  // Merges dim d of two same-rank operands (equal extents or one of them 1).
  absl::StatusOr<DimFacts> MergeDim(int i, int a, int b, size_t d, absl::string_view what) {
    return MergeDim(i, a, d, b, d, what);
  }
  // The same for dim da of a's tile against dim db of b's (batch dims aligned from the right).
  absl::StatusOr<DimFacts> MergeDim(int i, int a, size_t da, int b, size_t db,
                                    absl::string_view what) {
    const TileInfo& ta = Tile(a);
    const TileInfo& tb = Tile(b);
    const Expr ea = ta.shape[da], eb = tb.shape[db];
    const auto unsplit = [](const TileInfo& t, size_t dim) {
      return t.grid_split[dim] == 0 && !t.loop_split[dim] && !t.group_extent[dim].valid();
    };
    if (SameExpr(ctx_, ea, eb)) {
      // Extent 1 on both sides: an unsplit one is the whole (size-1) dim and broadcasts, even
      // when the other is a split dim bound to tiles of one element (D / g with g = D).
      if (ConstValueOf(ctx_, ea) == 1) {
        if (unsplit(tb, db)) return FactsOf(ta, da);
        if (unsplit(ta, da)) return FactsOf(tb, db);
      }
      PRISM_RETURN_IF_ERROR(SameSplit(i, a, da, b, db, what));
      return FactsOf(ta, da);
    }
    if (ConstValueOf(ctx_, ea) == 1) return FactsOf(tb, db);
    if (ConstValueOf(ctx_, eb) == 1) return FactsOf(ta, da);
    return OpError(i, what, ": tile shapes ", ShapeString(ctx_, ta.shape), " and ",
                   ShapeString(ctx_, tb.shape), " differ at dim ", da,
                   da == db ? std::string() : absl::StrCat(" (", db, " of the second)"),
                   ", expected equal extents or 1 (broadcast)");
  }

  absl::StatusOr<TileInfo> CheckMatMul(int i) {
    PRISM_ASSIGN_OR_RETURN(TileInfo t, MatMulLike(i, "matmul", /*online=*/false));
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  // matmul and acc_online_matmul: a[..., M, K] x b[..., K, N], the batch dims aligned from the
  // right as in the IR (a missing leading dim is 1: [B, M, K] x [K, N] is [B, M, N]).
  absl::StatusOr<TileInfo> MatMulLike(int i, absl::string_view what, bool online) {
    const BlockOp& op = block().ops[i];
    const int a = op.operands[0], b = op.operands[1];
    const TileInfo& ta = Tile(a);
    const TileInfo& tb = Tile(b);
    const size_t ra = ta.shape.size(), rb = tb.shape.size(), r = std::max(ra, rb);
    if (ra < 2 || rb < 2) {
      return OpError(i, what, ": found tiles of rank ", ra, " and ", rb, ", expected ranks ≥ 2");
    }
    if (!SameExpr(ctx_, ta.shape[ra - 1], tb.shape[rb - 2])) {
      return OpError(i, what, ": inner dims differ: found ", ShapeString(ctx_, ta.shape), " x ",
                     ShapeString(ctx_, tb.shape), ", expected a[..., K] x b[K, ...] with equal K");
    }
    PRISM_RETURN_IF_ERROR(SameSplit(i, a, ra - 1, b, rb - 2, absl::StrCat(what, " contraction")));
    if (ta.group_extent[ra - 1].valid()) {
      return OpError(i, what,
                     ": the contraction dim holds unreduced partial results, expected "
                     "them reduced first");
    }
    TileInfo t = EmptyTile(r);
    for (size_t d = 0; d + 2 < r; ++d) {
      const bool has_a = d + ra >= r, has_b = d + rb >= r;
      const size_t da = d + ra - r, db = d + rb - r;
      if (has_a && has_b) {
        PRISM_ASSIGN_OR_RETURN(DimFacts f,
                               MergeDim(i, a, da, b, db, absl::StrCat(what, " batch")));
        SetDim(t, d, f);
      } else {
        SetDim(t, d, has_a ? FactsOf(ta, da) : FactsOf(tb, db));
      }
    }
    SetDim(t, r - 2, FactsOf(ta, ra - 2));
    SetDim(t, r - 1, FactsOf(tb, rb - 1));
    t.partial_axes = ta.partial_axes | tb.partial_axes | ta.grid_split[ra - 1];
    t.loop_partial = ta.loop_partial || tb.loop_partial || ta.loop_split[ra - 1];
    if (online) {
      PRISM_RETURN_IF_ERROR(NoLoopSplit(i, t, what));
      t.loop_partial = false;
    }
    return t;
  }

  absl::StatusOr<TileInfo> CheckUnary(int i) {
    const BlockOp& op = block().ops[i];
    if (!IsUnaryFn(op.fn)) {
      return OpError(i, "'", GetOpInfo(op.fn).name, "' is not a unary function, expected one of ",
                     FnList(OpCategory::kUnary));
    }
    TileInfo t = Tile(op.operands[0]);
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::StatusOr<TileInfo> CheckBinary(int i) {
    const BlockOp& op = block().ops[i];
    const absl::string_view fn = GetOpInfo(op.fn).name;
    if (!IsBinaryFn(op.fn)) {
      return OpError(i, "'", fn, "' is not a binary function, expected one of ",
                     FnList(OpCategory::kBinary));
    }
    const int a = op.operands[0], b = op.operands[1];
    const size_t r = Tile(a).shape.size();
    if (Tile(b).shape.size() != r) {
      return OpError(i, fn, ": found tiles of rank ", r, " and ", Tile(b).shape.size(),
                     ", expected equal ranks (tile dims are tensor dims)");
    }
    TileInfo t = EmptyTile(r);
    for (size_t d = 0; d < r; ++d) {
      PRISM_ASSIGN_OR_RETURN(DimFacts f, MergeDim(i, a, b, d, fn));
      SetDim(t, d, f);
    }
    t.partial_axes = Tile(a).partial_axes | Tile(b).partial_axes;
    t.loop_partial = Tile(a).loop_partial || Tile(b).loop_partial;
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::StatusOr<int> TileDim(int i, int64_t dim, size_t rank) {
    const int r = static_cast<int>(rank);
    if (dim < -r || dim >= r) {
      return OpError(i, "dim ", dim, " is out of range for a tile of rank ", r, ", expected ", -r,
                     "..", r - 1);
    }
    return static_cast<int>(dim < 0 ? dim + r : dim);
  }

  // Reduces dim d of t (to extent 1): a grid split makes a partial, a loop split a loop
  // partial; groups must be single elements.
  absl::Status ReduceDim(int i, TileInfo& t, int d, absl::string_view what) {
    if (t.group_extent[d].valid()) {
      if (ConstValueOf(ctx_, t.group_extent[d]) != 1) {
        return OpError(i, what, ": dim ", d, " holds partial results in groups of ",
                       Str(t.group_extent[d]),
                       ", and reducing it would mix elements within a group; expected groups "
                       "of one element (or the forloop walking the groups)");
      }
      t.group_extent[d] = Expr();
    }
    t.partial_axes |= t.grid_split[d];
    t.grid_split[d] = 0;
    if (t.loop_split[d]) t.loop_partial = true;
    t.loop_split[d] = false;
    t.shape[d] = ctx_.Const(1);
    return absl::OkStatus();
  }

  absl::StatusOr<TileInfo> CheckReduce(int i) {
    const BlockOp& op = block().ops[i];
    if (op.fn != OpKind::kSum && op.fn != OpKind::kMax) {
      return OpError(i, "'", GetOpInfo(op.fn).name,
                     "' is not a tile reduction, expected sum or max");
    }
    TileInfo t = Tile(op.operands[0]);
    PRISM_ASSIGN_OR_RETURN(int d, TileDim(i, op.dim, t.shape.size()));
    PRISM_RETURN_IF_ERROR(ReduceDim(i, t, d, GetOpInfo(op.fn).name));
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::StatusOr<TileInfo> CheckRms(int i) {
    const BlockOp& op = block().ops[i];
    TileInfo t = Tile(op.operands[0]);
    PRISM_ASSIGN_OR_RETURN(int d, TileDim(i, op.dim, t.shape.size()));
    if (t.grid_split[d] != 0 || t.loop_split[d] || t.group_extent[d].valid()) {
      return OpError(i, "rms over dim ", d, " needs the whole dim in one tile, but it is split by ",
                     SplitString(t.grid_split[d], t.loop_split[d]),
                     t.group_extent[d].valid() ? " and holds partial results" : "",
                     "; expected an unsplit dim (or acc_sumsq_last and inv_rms)");
    }
    if (!(op.eps >= 0)) return OpError(i, "eps ", op.eps, " is negative, expected ≥ 0");
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::StatusOr<TileInfo> CheckInvRms(int i) {
    const BlockOp& op = block().ops[i];
    if (!op.count.valid()) return OpError(i, "inv_rms count is unset");
    if (std::optional<int64_t> n = ConstValueOf(ctx_, op.count); n.has_value() && *n < 1) {
      return OpError(i, "inv_rms count is ", *n, ", expected ≥ 1");
    }
    if (!(op.eps >= 0)) return OpError(i, "eps ", op.eps, " is negative, expected ≥ 0");
    TileInfo t = Tile(op.operands[0]);
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::StatusOr<TileInfo> CheckDivCount(int i) {
    const BlockOp& op = block().ops[i];
    if (!op.count.valid()) return OpError(i, "div_count count is unset");
    if (std::optional<int64_t> n = ConstValueOf(ctx_, op.count); n.has_value() && *n < 1) {
      return OpError(i, "div_count count is ", *n, ", expected ≥ 1");
    }
    TileInfo t = Tile(op.operands[0]);
    PRISM_ASSIGN_OR_RETURN(t.phase, ComputePhase(i));
    return t;
  }

  absl::Status NoLoopSplit(int i, const TileInfo& t, absl::string_view what) {
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.loop_split[d]) {
        return OpError(i, what, ": dim ", d,
                       " of its operand is walked by the forloop, so iterations hold different "
                       "elements, not partial results; expected that dim reduced first (matmul "
                       "contraction, reduce, or a *_last accumulator)");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<TileInfo> CheckAccumulator(int i) {
    const BlockOp& op = block().ops[i];
    const absl::string_view what = GetBlockOpInfo(op.kind).name;
    for (int a : op.operands) {
      if (Tile(a).phase == Phase::kAfter) {
        return OpError(i, what, " consumes ", OpName(a),
                       ", an after-loop value; nothing inside the forloop may consume an "
                       "accumulator");
      }
    }
    TileInfo t;
    if (op.kind == BlockOpKind::kAccOnlineMatMul) {
      PRISM_ASSIGN_OR_RETURN(t, MatMulLike(i, what, /*online=*/true));
    } else {
      t = Tile(op.operands[0]);
      if (op.kind != BlockOpKind::kAccSum) {
        PRISM_RETURN_IF_ERROR(ReduceDim(i, t, static_cast<int>(t.shape.size()) - 1, what));
      }
      PRISM_RETURN_IF_ERROR(NoLoopSplit(i, t, what));
    }
    t.loop_partial = false;
    t.phase = Phase::kAfter;
    return t;
  }

  absl::StatusOr<TileInfo> CheckOutput(int i) {
    const BlockOp& op = block().ops[i];
    const BlockGraph& b = block();
    if (op.tensor < 0 || op.tensor >= static_cast<int>(g_.tensors().size())) {
      return OpError(i, "tensor index ", op.tensor, " is out of range");
    }
    const SGraphTensor& tensor = g_.tensors()[op.tensor];
    if (IsInput(op.tensor)) {
      return OpError(i, "writes program input ", tensor.name,
                     ", expected an output or intermediate tensor");
    }
    if (written_[op.tensor]) {
      return OpError(
          i, "tensor ", tensor.name, " is written twice (also by kernel ",
          out_.producer[op.tensor] >= 0 ? KernelDisplayName(g_, out_.producer[op.tensor]) : "?",
          "), expected one writer");
    }
    for (int j = 0; j < i; ++j) {
      if (b.ops[j].kind == BlockOpKind::kOutput && b.ops[j].tensor == op.tensor) {
        return OpError(i, "tensor ", tensor.name,
                       " is written twice in this kernel, expected one writer");
      }
    }
    const int v = op.operands[0];
    TileInfo t = Tile(v);
    if (t.phase == Phase::kLoop) {
      return OpError(i, "stores ", OpName(v),
                     ", a tile computed inside the forloop; expected an accumulator, an "
                     "after-loop value or a loop-invariant tile");
    }
    const int rank = static_cast<int>(tensor.shape.size());
    if (static_cast<int>(t.shape.size()) != rank) {
      return OpError(i, "stores a tile of rank ", t.shape.size(), " into tensor ", tensor.name,
                     " of rank ", rank, ", expected equal ranks");
    }
    for (int d = 0; d < rank; ++d) {
      if (t.group_extent[d].valid()) {
        return OpError(i, "stores ", OpName(v), ", whose dim ", d,
                       " still holds the unreduced partial results of an earlier kernel; "
                       "expected them reduced");
      }
      PRISM_CHECK(!t.loop_split[d], "after-loop tile with a loop-split dim");
    }
    std::array<int, kNumGridAxes> omap;
    for (int p = 0; p < kNumGridAxes; ++p) {
      PRISM_ASSIGN_OR_RETURN(omap[p], MapEntry(i, op.map[p], absl::StrCat("omap ", GridAxisName(p)),
                                               rank, tensor.name));
    }
    std::vector<PartialLayout> layouts;
    for (int p = 0; p < kNumGridAxes; ++p) {
      const bool trivial = ConstValueOf(ctx_, b.grid[p]) == 1;
      const uint8_t bit = static_cast<uint8_t>(1u << p);
      const absl::string_view ax = GridAxisName(p);
      int split_dim = -1;
      for (int d = 0; d < rank; ++d) {
        if (t.grid_split[d] & bit) split_dim = d;
      }
      if (trivial) {
        // Partials of a single block are still laid out (and reduced) as the structure says,
        // so that binding a grid size to 1 never changes what the consumer must do.
        if (omap[p] != kReplicate && (t.partial_axes & bit)) {
          layouts.push_back({omap[p], b.grid[p], Expr(), k_, p});
          continue;
        }
        if (omap[p] != kReplicate && split_dim >= 0 && split_dim != omap[p]) {
          return OpError(i, "grid axis ", ax, " splits tile dim ", split_dim,
                         " but the omap lays it out on dim ", omap[p], ", expected dim ",
                         split_dim);
        }
        continue;
      }
      if (omap[p] == kReplicate && split_dim < 0 && !(t.partial_axes & bit)) {
        // A replicated store: no dim of the tile is split by p and no block along p holds a
        // partial result, so nothing the tile holds depends on p and every block along p
        // stores the same values to the same elements (e.g. a split's Σx² partial, computed
        // by every column block). The emulator checks that the copies agree.
        continue;
      }
      if (omap[p] == kReplicate) {
        const std::string why =
            (t.partial_axes & bit)
                ? absl::StrCat("; blocks along ", ax, " hold partial results (", ax,
                               " splits a reduction): map ", ax,
                               " to an output dim to lay the partials side by side and reduce "
                               "them in a following kernel")
                : absl::StrCat("; expected an omap entry for ", ax);
        return OpError(i, "grid axis ", ax, " (", Str(b.grid[p]),
                       " blocks) is not mapped by the omap, so its blocks would race on the same "
                       "elements",
                       why);
      }
      if (t.partial_axes & bit) {
        layouts.push_back({omap[p], b.grid[p], Expr(), k_, p});
        continue;
      }
      if (split_dim < 0) {
        return OpError(i, "grid axis ", ax, " (", Str(b.grid[p]),
                       " blocks) neither splits a dim of the stored tile nor holds partial "
                       "results, so its blocks would store copies; expected it to split an "
                       "input dim (or extent 1)");
      }
      if (split_dim != omap[p]) {
        return OpError(i, "grid axis ", ax, " splits tile dim ", split_dim,
                       " but the omap lays it out on dim ", omap[p], ", expected dim ", split_dim);
      }
    }
    // Partial axes must own their output dim.
    for (PartialLayout& l : layouts) {
      for (int p = 0; p < kNumGridAxes; ++p) {
        if (p != l.axis && omap[p] == l.dim && ConstValueOf(ctx_, b.grid[p]) != 1) {
          return OpError(i, "grid axis ", GridAxisName(l.axis), " holds partial results on dim ",
                         l.dim, ", which grid axis ", GridAxisName(p),
                         " also splits; expected a dim of its own");
        }
      }
      l.group_extent = t.shape[l.dim];
    }
    // The tile must be the tensor's dims divided by the axes laid out on them.
    std::vector<Expr> expected(rank);
    for (int d = 0; d < rank; ++d) {
      std::vector<Expr> factors;
      for (int p = 0; p < kNumGridAxes; ++p) {
        if (omap[p] == d) factors.push_back(b.grid[p]);
      }
      const Expr divisor = Product(ctx_, factors);
      expected[d] = ExactDiv(ctx_, tensor.shape[d], divisor);
      PRISM_RETURN_IF_ERROR(Divisible(i, tensor.shape[d], divisor, tensor.name, d,
                                      [&] { return Splitters(omap, d, false); }));
    }
    for (int d = 0; d < rank; ++d) {
      if (!SameExpr(ctx_, expected[d], t.shape[d])) {
        return OpError(i, "stores a tile of shape ", ShapeString(ctx_, t.shape), " into tensor ",
                       tensor.name, " ", ShapeString(ctx_, tensor.shape),
                       ", but the omap gives tiles of shape ", ShapeString(ctx_, expected),
                       " (dim ", d, " differs)");
      }
    }
    out_.partials[op.tensor] = std::move(layouts);
    return t;
  }

  // ---- library kernels ------------------------------------------------------------------------
  absl::Status CheckLibrary() {
    const LibraryKernel& lk = g_.kernels()[k_].library();
    const OpInfo& info = GetOpInfo(lk.op);
    const int nt = static_cast<int>(g_.tensors().size());
    if (lk.op == OpKind::kInput) return KernelError("a library kernel cannot run 'input'");
    if (info.arity >= 0 ? static_cast<int>(lk.operands.size()) != info.arity
                        : lk.operands.size() < 2) {
      return KernelError(info.name, " takes ", info.arity >= 0 ? absl::StrCat(info.arity) : "≥ 2",
                         " operand(s), found ", lk.operands.size());
    }
    std::vector<const SGraphTensor*> ops;
    for (int t : lk.operands) {
      if (t < 0 || t >= nt) return KernelError("operand index ", t, " is out of range");
      if (!written_[t]) {
        return KernelError("reads tensor ", TensorName(t),
                           " before any kernel writes it, expected a program input or a "
                           "tensor written by an earlier kernel");
      }
      read_[t] = true;
      ops.push_back(&g_.tensors()[t]);
      if (ops.back()->dtype != ops.front()->dtype) {
        return KernelError(info.name, ": found operands of dtypes ", DTypeName(ops.front()->dtype),
                           " and ", DTypeName(ops.back()->dtype), ", expected one dtype");
      }
    }
    if (lk.result < 0 || lk.result >= nt) {
      return KernelError("result index ", lk.result, " is out of range");
    }
    const SGraphTensor& result = g_.tensors()[lk.result];
    if (IsInput(lk.result)) {
      return KernelError("writes program input ", result.name,
                         ", expected an output or intermediate tensor");
    }
    if (written_[lk.result]) {
      return KernelError("tensor ", result.name, " is written twice, expected one writer");
    }
    // Partial results may only be reduced here: sum/max over their dim, one element per group.
    for (int t : lk.operands) {
      for (const PartialLayout& l : out_.partials[t]) {
        const int rank = static_cast<int>(g_.tensors()[t].shape.size());
        const int64_t dim = lk.dim < 0 ? lk.dim + rank : lk.dim;
        const bool reduces = (lk.op == OpKind::kSum || lk.op == OpKind::kMax) && dim == l.dim &&
                             ConstValueOf(ctx_, l.group_extent) == 1;
        if (!reduces) {
          return KernelError(info.name, " reads tensor ", TensorName(t), ", which holds ",
                             Str(l.groups), " partial results along dim ", l.dim, " (grid axis ",
                             GridAxisName(l.axis), " of kernel ", KernelDisplayName(g_, l.kernel),
                             "); expected sum or max over dim ", l.dim,
                             " with one element per group, or a block graph whose forloop walks "
                             "the groups");
        }
      }
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<Expr> shape, InferLibraryShape(lk, ops));
    bool same = shape.size() == result.shape.size();
    for (size_t d = 0; same && d < shape.size(); ++d)
      same = SameExpr(ctx_, shape[d], result.shape[d]);
    if (!same) {
      return KernelError("result tensor ", result.name, " has shape ",
                         ShapeString(ctx_, result.shape), ", but ", info.name, " gives ",
                         ShapeString(ctx_, shape));
    }
    written_[lk.result] = true;
    out_.producer[lk.result] = k_;
    return absl::OkStatus();
  }

  absl::StatusOr<Expr> Broadcast(Expr a, Expr b, const std::vector<Expr>& sa,
                                 const std::vector<Expr>& sb) {
    if (SameExpr(ctx_, a, b)) return a;
    if (ConstValueOf(ctx_, a) == 1) return b;
    if (ConstValueOf(ctx_, b) == 1) return a;
    return KernelError("cannot broadcast ", ShapeString(ctx_, sa), " with ", ShapeString(ctx_, sb),
                       ", expected equal dims or one of them 1");
  }

  absl::StatusOr<std::vector<Expr>> BroadcastShapesSym(const std::vector<Expr>& a,
                                                       const std::vector<Expr>& b) {
    const size_t r = std::max(a.size(), b.size());
    std::vector<Expr> out(r);
    for (size_t i = 0; i < r; ++i) {
      const Expr da = i < a.size() ? a[a.size() - 1 - i] : ctx_.Const(1);
      const Expr db = i < b.size() ? b[b.size() - 1 - i] : ctx_.Const(1);
      PRISM_ASSIGN_OR_RETURN(out[r - 1 - i], Broadcast(da, db, a, b));
    }
    return out;
  }

  absl::StatusOr<std::vector<Expr>> InferLibraryShape(const LibraryKernel& lk,
                                                      const std::vector<const SGraphTensor*>& ops) {
    const OpInfo& info = GetOpInfo(lk.op);
    const std::vector<Expr>& x = ops[0]->shape;
    const int r = static_cast<int>(x.size());
    auto axis = [&](int rank) -> absl::StatusOr<int> {
      if (lk.dim < -rank || lk.dim >= rank) {
        return KernelError(info.name, ": dim ", lk.dim, " is out of range for rank ", rank);
      }
      return static_cast<int>(lk.dim < 0 ? lk.dim + rank : lk.dim);
    };
    switch (info.category) {
      case OpCategory::kUnary: return x;
      case OpCategory::kBinary: return BroadcastShapesSym(x, ops[1]->shape);
      case OpCategory::kNorm: {
        PRISM_RETURN_IF_ERROR(axis(r).status());
        return x;
      }
      case OpCategory::kReduce: {
        PRISM_ASSIGN_OR_RETURN(int d, axis(r));
        std::vector<Expr> s = x;
        s[d] = ctx_.Const(1);
        return s;
      }
      case OpCategory::kConcat: {
        PRISM_ASSIGN_OR_RETURN(int d, axis(r));
        std::vector<Expr> s = x;
        std::vector<Expr> parts;
        for (const SGraphTensor* t : ops) {
          if (static_cast<int>(t->shape.size()) != r) {
            return KernelError("concat: operands differ in rank");
          }
          for (int j = 0; j < r; ++j) {
            if (j != d && !SameExpr(ctx_, t->shape[j], x[j])) {
              return KernelError("concat: operand shapes differ outside dim ", d);
            }
          }
          parts.push_back(t->shape[d]);
        }
        s[d] = Simplify(ctx_, ctx_.Add(parts));
        return s;
      }
      case OpCategory::kMatMul: {
        const std::vector<Expr>& y = ops[1]->shape;
        if (x.size() < 2 || y.size() < 2) return KernelError("matmul: operands need rank ≥ 2");
        if (!SameExpr(ctx_, x.back(), y[y.size() - 2])) {
          return KernelError("matmul: inner dims differ: found ", ShapeString(ctx_, x), " x ",
                             ShapeString(ctx_, y));
        }
        std::vector<Expr> bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
        PRISM_ASSIGN_OR_RETURN(std::vector<Expr> s, BroadcastShapesSym(bx, by));
        s.push_back(x[x.size() - 2]);
        s.push_back(y.back());
        return s;
      }
      case OpCategory::kSource: break;
    }
    return KernelError("cannot run ", info.name, " as a library kernel");
  }

  // ---- whole graph ------------------------------------------------------------------------------
  absl::Status CheckFinal() {
    for (int t : g_.outputs()) {
      if (!written_[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("sGraph output ", TensorName(t), " is never written by a kernel"));
      }
      for (const PartialLayout& l : out_.partials[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("sGraph output ", TensorName(t), " holds ", Str(l.groups),
                         " partial results along dim ", l.dim, " (grid axis ", GridAxisName(l.axis),
                         " of kernel ", KernelDisplayName(g_, l.kernel),
                         " splits a reduction), but no following kernel reduces them"));
      }
    }
    for (size_t t = 0; t < g_.tensors().size(); ++t) {
      const int ti = static_cast<int>(t);
      if (IsInput(ti) || IsOutput(ti)) continue;
      if (!written_[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", TensorName(ti),
                         " is never written, expected an intermediate written by "
                         "one kernel and read by a later one"));
      }
      if (!read_[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", TensorName(ti), " is written but never read"));
      }
    }
    for (int t : g_.inputs()) {
      if (!read_[t]) {
        return absl::InvalidArgumentError(
            absl::StrCat("program input ", TensorName(t), " is never read"));
      }
    }
    return absl::OkStatus();
  }

  const SGraph& g_;
  ExprContext& ctx_;
  int k_ = 0;
  SGraphAnalysis out_;
  std::vector<bool> written_;
  std::vector<bool> read_;
};

}  // namespace

absl::StatusOr<SGraphAnalysis> Validate(const SGraph& graph) { return Validator(graph).Run(); }

}  // namespace prism
