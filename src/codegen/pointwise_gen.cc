// The pointwise template (gen_util.h): a block graph without matmuls whose ops are inputs,
// elementwise ops, inv_rms and acc_sum — e.g. the combine kernel of a split-K / split-KV
// sGraph, whose forloop walks the partial-result groups (O = Σ Nt / Σ Dt).
//
// One graph block is launched as P = ⌈elements / T⌉ thread blocks along z (launch grid
// (gx, gy, gz·P), P capped so that gz·P ≤ 65535, a loop covering the rest): the elements are
// independent, so this keeps the graph's semantics and puts every load of the forloop in
// flight at once. For its element a thread evaluates the invariant ops once, runs the forloop
// reading the loop inputs' elements straight from global memory (no shared memory), adds into
// f32 accumulators in iteration order (the emulator's order), then evaluates the after-loop
// ops and stores. Tiles of extent 1 broadcast.
//
// An after-loop matmul acc_sum(loop input) · (loop-invariant input) — lora's combine kernel
// when the split stores X·A: (Σ_s P1)·B, with the contracted extent R small — is evaluated
// per element too: for r ascending, the element's A[row, r] summed over the forloop in
// iteration order, times B[r, col] from global memory. The R·F loads of A are the same for
// every element of a row (L1 broadcasts), and with no barrier they are in flight together
// with the element's other loads.
//
// Row reductions — rms, and sum / max over the last dim (ntrans: rms(X + α ⊙ (rms(H) − X));
// standalone row sums, maxima and softmax): the kernel must have no forloop (forloop 1, no
// acc_sum), every row op must reduce the same row tile, and every stored tile must be that
// tile or one value per row; one graph block is one thread block (P = 1: a row is reduced
// within the block). Each row op q, in op order, gets a pass over the row tile that recomputes
// its operand from global memory (inputs are re-read, from L1/L2 after the first pass), folds
// it per row (squares summed for rms, sum, or max; f32, one register per row, warp shuffles,
// then the warps' partials through shared memory) and keeps the row's value in shared memory
// (inv_q[row] = 1/sqrt(Σ/C + eps) for rms, row_q[row] otherwise); the final pass computes the
// outputs with rms_q(x) = x · inv_q[row] and a reduction read as row_q[row], then the stores of
// one value per row. At most 32 rows per block. When each thread has E = rows·C/T elements
// with T dividing C and E · (inputs) ≤ 96, the inputs are loaded once into registers up front
// (all loads in flight together; thread t holds elements j·T + t) and every pass reads them
// there.
//
// softmax's shift: the search proves softmax(x) = exp(x) / sum(exp(x)), whose exp overflows
// f32 for x > 88.7. An exp whose every use is a row sum S of it or exp / S, every such S used
// only as that divisor, is evaluated as exp(x − m) with m = max_row x from a pass of its own
// before S's: the ratios are unchanged and no exp exceeds 1.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gen_util.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {

// The graph's block coordinates inside a pointwise kernel (bz = blockIdx.z / P).
const std::array<const char*, 3> kAxes = {"bx", "by", "bz"};

// An after-loop matmul's contracted extent, at most (R·F loads of A per element).
constexpr int64_t kMaxMatMulR = 64;

// A log-sum-exp combine with at most this many iterations keeps the partials' Dn' in
// registers (ElementLoops).
constexpr int64_t kMaxLseRegs = 32;

class PointwiseGen {
 public:
  PointwiseGen(const BlockProgram& p, int kernel, const CodegenOptions& options)
      : p_(p), k_(p.kernels[kernel].block()), kname_(p.kernels[kernel].name), options_(options) {
    for (const LsePair& pair : FindLsePairs(p)) {
      for (const LsePair::Reader& r : pair.readers) {
        if (r.kernel == kernel) lse_.push_back(r);
      }
    }
  }

  absl::StatusOr<LaunchConfig> Generate(std::string& source);
  // GenerateCombineTail (gen_util.h): the element loops inside the producer of `f`.
  absl::StatusOr<std::string> Tail(const FusedCombine& f, int64_t threads,
                                   const std::string& region);

 private:
  absl::Status Err(int op, absl::string_view what) const { return OpError(kname_, k_, op, what); }
  absl::Status Analyze();
  // The statement computing op `i` at the current output element (indices i0, i1, ...).
  // `names` overrides the index variables ("i0", "i1", ...) per dim.
  std::string Statement(int i, const Shape& out_tile,
                        const std::vector<std::string>& names = {}) const;
  std::string Var(int i) const { return absl::StrCat("v", i); }
  // The store of output op `o` at the current element (indices i0, i1, ...).
  std::string StoreStatement(int o) const;
  // The ops `root` depends on (itself included), in op order.
  std::set<int> Needed(int root) const;
  // The loops over each of `outs`' stored tiles (every output when empty), element e from
  // `first` in steps of `step`.
  std::string ElementLoops(const std::string& first, int64_t step,
                           const std::vector<int>& outs = {}) const;
  bool IsRowOp(int i) const {
    return std::find(row_ops_.begin(), row_ops_.end(), i) != row_ops_.end();
  }
  // One pass over the row tile before the stores (file comment): each row's fold of `value`
  // (squares summed for rms, sum, or max) into `dest` — "inv<q>" (rms: 1/sqrt(Σ/C + eps)),
  // "row<q>" (sum / max) or "mx<e>" (the max of shifted exp e's operand).
  struct RowPass {
    enum How { kSumSq, kSum, kMax } how;
    int value;
    std::string dest;
    std::string kind;  // "rms", "sum", "max" (the kernel comment)
    std::string what;  // "rms factor (Hn (rms))" (code comments)
    double eps;        // kSumSq
  };
  // The passes of the row ops in op order, a shifted exp's max before its first sum.
  std::vector<RowPass> Passes() const;
  std::string PassCode(const RowPass& pass) const;
  // The multi-index i0, i1, ... of element e of `tile` (row-major), one line each.
  static std::string IndexLines(const Shape& tile, const std::string& indent);
  // "[0]" with one row per block, else "[e / C]" (C: the current stored tile's last dim).
  std::string RowIndex(const Shape& out_tile) const {
    return rows_ == 1 ? std::string("[0]") : absl::StrCat("[e / ", out_tile.back(), "]");
  }

  const BlockProgram& p_;
  const ConcreteBlockGraph& k_;
  std::string kname_;
  const CodegenOptions& options_;
  std::vector<int> outputs_;
  // Row ops, in op order: rms, and sum / max over the last dim (file comment). Each gets a
  // pass over the row tile before the stores.
  std::vector<int> row_ops_;
  // exp ops evaluated as exp(x − max_row x) (softmax's shift, file comment).
  std::set<int> shifted_;
  std::vector<int> matmuls_;      // after-loop matmuls, in op order
  Shape row_tile_;                // the tile every row op reduces (with row ops)
  int64_t rows_ = 0, cols_ = 0;   // row_tile_ as rows × last dim (with row ops)
  int64_t reg_elems_ = 0;  // > 0: inputs cached in registers, this many elements per thread
  int64_t vec_ = 1;        // 8: the cached inputs are loaded (and outputs stored) 16 bytes at a time
  // Folded into a producer (Tail): inputs of these tensors are read from the cluster's shared
  // memory, iteration `it` from rank `it` (rb[it]: that rank's fused region).
  const FusedCombine* fused_ = nullptr;
  // Partials in log-sum-exp form read here (FindLsePairs): Σ_it N_it / Σ_it Dn_it is evaluated
  // as Σ N'·2^(Dn' − M) / Σ 2^(Dn' − M), M = max_it Dn'.
  std::vector<LsePair::Reader> lse_;
  // The row-major address of the current element (indices i0, i1, ...) in op i's tensor (an
  // input or output whose tile is the stored tile).
  std::string Addr(int i, bool with_loop) const;
};

std::string PointwiseGen::Addr(int i, bool with_loop) const {
  const ConcreteTensor& t = p_.tensors[k_.ops[i].tensor];
  std::string addr;
  int64_t stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    const std::string term = absl::StrCat(
        "(", TileOrigin(k_, i, static_cast<int>(d), with_loop, kAxes), " + i", d, ")");
    addr = addr.empty() ? absl::StrCat(term, " * ", stride, "LL")
                        : absl::StrCat(term, " * ", stride, "LL + ", addr);
    stride *= t.shape[d];
  }
  return addr;
}

std::string PointwiseGen::StoreStatement(int o) const {
  const ConcreteBlockOp& out = k_.ops[o];
  const ConcreteTensor& t = p_.tensors[out.tensor];
  std::string addr;
  int64_t stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    const std::string term =
        absl::StrCat("(", TileOrigin(k_, o, static_cast<int>(d), false, kAxes), " + i", d, ")");
    addr = addr.empty() ? absl::StrCat(term, " * ", stride, "LL")
                        : absl::StrCat(term, " * ", stride, "LL + ", addr);
    stride *= t.shape[d];
  }
  const std::string v = Var(out.operands[0]);
  return absl::StrCat(ParamName(p_, out.tensor), "[", addr,
                      "] = ", FromF32(t, v), ";");
}

std::set<int> PointwiseGen::Needed(int root) const {
  std::set<int> need;
  std::vector<int> stack = {root};
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (!need.insert(i).second) continue;
    // A matmul's operands are not per element: its statement sums its A row and reads B. A
    // row reduction's value comes from its pass.
    if (k_.ops[i].kind == BlockOpKind::kMatMul || k_.ops[i].kind == BlockOpKind::kReduce) continue;
    for (int x : k_.ops[i].operands) stack.push_back(x);
  }
  return need;
}

absl::Status PointwiseGen::Analyze() {
  if (k_.threads % 32 != 0 || k_.threads < 32 || k_.threads > 1024) {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", kname_, ": threads ",
                                                 k_.threads,
                                                 " is not a multiple of 32 in [32, 1024]"));
  }
  const std::vector<int> uses = UseCounts(k_);
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    switch (op.kind) {
      case BlockOpKind::kMatMul: {
        const ConcreteBlockOp& a = k_.ops[op.operands[0]];
        const ConcreteBlockOp& b = k_.ops[op.operands[1]];
        if (op.phase != Phase::kAfter || a.kind != BlockOpKind::kAccSum ||
            k_.ops[a.operands[0]].kind != BlockOpKind::kInput || uses[op.operands[0]] != 1 ||
            b.kind != BlockOpKind::kInput || b.phase != Phase::kInvariant) {
          return Err(i,
                     "the pointwise template supports a matmul only after the forloop, as "
                     "acc_sum(loop input tile) · (loop-invariant input tile), its A operand used "
                     "by nothing else");
        }
        if (op.tile.size() != 2 || a.tile.size() != 2 || b.tile.size() != 2) {
          return Err(i, "only rank-2 matmul tiles are supported");
        }
        if (a.tile[1] > kMaxMatMulR) {
          return Err(i, absl::StrCat("the contracted extent (", a.tile[1], ") is over ",
                                     kMaxMatMulR, " (each element sums its own row of A)"));
        }
        matmuls_.push_back(i);
        break;
      }
      case BlockOpKind::kInput:
      case BlockOpKind::kOutput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        if (Half16Of(t.dtype) == nullptr && t.dtype != DType::kF32) {
          return Err(i, "only f16, bf16 and f32 tensors are supported");
        }
        if (t.shape.size() != op.tile.size()) {
          return Err(i, "the tile must have the tensor's rank");
        }
        if (op.kind == BlockOpKind::kOutput) outputs_.push_back(i);
        break;
      }
      case BlockOpKind::kUnary:
      case BlockOpKind::kBinary:
      case BlockOpKind::kInvRms:
      case BlockOpKind::kDivCount:
        break;
      case BlockOpKind::kRms:
        if (op.dim != static_cast<int>(op.tile.size()) - 1) {
          return Err(i, "rms is supported only over the last dim");
        }
        row_ops_.push_back(i);
        break;
      case BlockOpKind::kReduce:
        if (op.dim != static_cast<int>(op.tile.size()) - 1) {
          return Err(i, absl::StrCat(GetOpInfo(op.fn).name,
                                     " is supported only over the last dim (a row reduction)"));
        }
        row_ops_.push_back(i);
        break;
      case BlockOpKind::kAccSum:
        if (k_.ops[op.operands[0]].phase != Phase::kLoop) {
          return Err(i, "acc_sum of a loop-invariant tile is not supported");
        }
        break;
      default:
        return Err(i,
                   "the pointwise template supports only inputs, elementwise ops, inv_rms, "
                   "div_count, rms, sum and max over the last dim, acc_sum and an after-loop "
                   "matmul of an acc_sum");
    }
  }
  if (outputs_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname_, " has no output"));
  }
  // Every op an output depends on must broadcast to the output's tile (each dim equal or 1);
  // a row op's operand is evaluated in its pass, over the row tile (checked below).
  auto check_broadcast = [&](int root, const Shape& out) -> absl::Status {
    std::vector<int> stack = {root};
    std::set<int> seen;
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (!seen.insert(i).second) continue;
      const Shape& t = k_.ops[i].tile;
      if (t.size() != out.size()) return Err(i, "tiles of different ranks are not supported");
      for (size_t d = 0; d < t.size(); ++d) {
        if (t[d] != 1 && t[d] != out[d]) {
          return Err(i, absl::StrCat("tile dim ", d, " (", t[d],
                                     ") does not broadcast to the stored tile's (", out[d], ")"));
        }
      }
      if (k_.ops[i].kind == BlockOpKind::kMatMul) continue;  // operands checked above
      if (i != root && IsRowOp(i)) continue;                  // checked with its pass
      for (int x : k_.ops[i].operands) stack.push_back(x);
    }
    return absl::OkStatus();
  };
  for (int o : outputs_) PRISM_RETURN_IF_ERROR(check_broadcast(o, k_.ops[o].tile));
  if (!row_ops_.empty()) {
    const int first = row_ops_.front();
    const absl::string_view first_name =
        k_.ops[first].kind == BlockOpKind::kRms ? "rms" : GetOpInfo(k_.ops[first].fn).name;
    if (k_.forloop != 1) {
      return Err(first, absl::StrCat(first_name, " is supported only in kernels without a "
                                                 "forloop (forloop ",
                                     k_.forloop, ")"));
    }
    for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
      if (k_.ops[i].kind == BlockOpKind::kAccSum) {
        return Err(i, absl::StrCat("acc_sum in a kernel with ", first_name, " is not supported"));
      }
    }
    // The row tile: what every row op reduces; the stores are of it or of one value per row.
    row_tile_ = k_.ops[k_.ops[first].operands[0]].tile;
    Shape per_row = row_tile_;
    per_row.back() = 1;
    auto dims = [](const Shape& t) { return absl::StrJoin(t, "×"); };
    for (int q : row_ops_) {
      const Shape& in = k_.ops[k_.ops[q].operands[0]].tile;
      if (in != row_tile_) {
        return Err(q, absl::StrCat("reduces a ", dims(in), " tile where ", OpLabel(k_, first),
                                   " reduces ", dims(row_tile_),
                                   ": the row reductions of a kernel must share one tile"));
      }
      PRISM_RETURN_IF_ERROR(check_broadcast(k_.ops[q].operands[0], row_tile_));
    }
    for (int o : outputs_) {
      if (k_.ops[o].tile != row_tile_ && k_.ops[o].tile != per_row) {
        return Err(o, absl::StrCat("with row reductions, a stored tile must be the reduced tile (",
                                   dims(row_tile_), ") or one value per row (", dims(per_row),
                                   "), not ", dims(k_.ops[o].tile)));
      }
    }
    cols_ = row_tile_.back();
    rows_ = 1;
    for (size_t d = 0; d + 1 < row_tile_.size(); ++d) rows_ *= row_tile_[d];
    if (rows_ > 32) {
      return Err(first, absl::StrCat(first_name, " over ", rows_,
                                     " rows per block (at most 32 are supported)"));
    }
    // softmax's shift: exp(x) whose every use is a row sum S of it or exp(x) / S, and every
    // S used only as such a divisor, is evaluated as exp(x − m), m = max_row x: each ratio is
    // unchanged (the factor exp(−m) cancels) and no exp overflows (exp(x) does in f32 for
    // x > 88.7, which f16 inputs reach).
    std::vector<std::vector<int>> users(k_.ops.size());
    for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
      for (int x : k_.ops[i].operands) users[x].push_back(i);
    }
    auto is_row_sum_of = [&](int u, int e) {
      return k_.ops[u].kind == BlockOpKind::kReduce && k_.ops[u].fn == OpKind::kSum &&
             k_.ops[u].operands[0] == e;
    };
    auto is_ratio = [&](int u, int e) {
      const ConcreteBlockOp& d = k_.ops[u];
      return d.kind == BlockOpKind::kBinary && d.fn == OpKind::kDiv && d.operands[0] == e &&
             d.operands[1] != e && is_row_sum_of(d.operands[1], e);
    };
    for (int e = 0; e < static_cast<int>(k_.ops.size()); ++e) {
      const ConcreteBlockOp& op = k_.ops[e];
      if (op.kind != BlockOpKind::kUnary || op.fn != OpKind::kExp || op.tile != row_tile_) continue;
      bool sums = false, ok = true;
      for (int u : users[e]) {
        if (is_row_sum_of(u, e)) {
          sums = true;
          for (int v : users[u]) ok = ok && is_ratio(v, e);
        } else {
          ok = ok && is_ratio(u, e);
        }
      }
      if (sums && ok) shifted_.insert(e);
    }
    int64_t inputs = 0;
    for (const ConcreteBlockOp& op : k_.ops) inputs += op.kind == BlockOpKind::kInput ? 1 : 0;
    const int64_t elems = rows_ * cols_ / k_.threads;
    if (cols_ % k_.threads == 0 && elems * inputs <= 96) reg_elems_ = elems;
    // 16-byte vectors: f16 or bf16 tensors whose tiles are the row tile and span the tensor's last
    // dim (so 8 consecutive elements are contiguous and 16-byte aligned), C a multiple of 8·T.
    // Stores of one value per row are not vectorized.
    bool vec = reg_elems_ > 0 && cols_ % (8 * k_.threads) == 0;
    for (const ConcreteBlockOp& op : k_.ops) {
      if (op.kind != BlockOpKind::kInput && op.kind != BlockOpKind::kOutput) continue;
      if (op.kind == BlockOpKind::kOutput && op.tile == per_row && per_row != row_tile_) continue;
      const ConcreteTensor& t = p_.tensors[op.tensor];
      if (Half16Of(t.dtype) == nullptr || op.tile != row_tile_ || t.shape.back() != cols_) {
        vec = false;
      }
    }
    if (vec) vec_ = 8;
  }
  return absl::OkStatus();
}

std::string PointwiseGen::Statement(int i, const Shape& out_tile,
                                    const std::vector<std::string>& names) const {
  const ConcreteBlockOp& op = k_.ops[i];
  auto idx = [&](size_t d) {
    if (op.tile[d] == 1 && out_tile[d] != 1) return std::string("0");
    return d < names.size() ? names[d] : absl::StrCat("i", d);
  };
  std::string e;
  switch (op.kind) {
    case BlockOpKind::kInput: {
      if (reg_elems_ > 0) {  // cached (Generate)
        e = absl::StrCat("x", i, "[q]");
        break;
      }
      const ConcreteTensor& t = p_.tensors[op.tensor];
      if (fused_ != nullptr && fused_->tensors.count(op.tensor)) {
        // Row-major within the tile that rank `it` kept (MatchClusterCombine: same tile).
        std::string local;
        int64_t stride = 1;
        for (size_t d = op.tile.size(); d-- > 0;) {
          if (op.tile[d] != 1) {
            const std::string term = absl::StrCat(idx(d), " * ", stride);
            local = local.empty() ? term : absl::StrCat(term, " + ", local);
          }
          stride *= op.tile[d];
        }
        if (local.empty()) local = "0";
        const Half16* h = Half16Of(t.dtype);
        e = absl::StrCat(h != nullptr ? h->ld_cluster : "LdClusterF32", "(rb[it] + ",
                         fused_->offset.at(op.tensor), "u + static_cast<u32_t>(", local, ") * ",
                         DTypeBytes(t.dtype), "u)");
        break;
      }
      // Row-major address: Σ_d (origin_d + index_d) · stride_d.
      std::string addr;
      int64_t stride = 1;
      for (size_t d = t.shape.size(); d-- > 0;) {
        const std::string term = absl::StrCat(
            "(", TileOrigin(k_, i, static_cast<int>(d), true, kAxes), " + ", idx(d), ")");
        addr = addr.empty() ? absl::StrCat(term, " * ", stride, "LL")
                            : absl::StrCat(term, " * ", stride, "LL + ", addr);
        stride *= t.shape[d];
      }
      const std::string load = absl::StrCat(ParamName(p_, op.tensor), "[", addr, "]");
      e = ToF32(t, load);
      break;
    }
    case BlockOpKind::kUnary:
      e = shifted_.count(i) > 0
              ? absl::StrCat("expf(", Var(op.operands[0]), " - mx", i, RowIndex(out_tile),
                             ")")  // softmax's shift (Analyze)
              : UnaryExpr(op, Var(op.operands[0]));
      break;
    case BlockOpKind::kBinary: {
      const char* sym = op.fn == OpKind::kAdd   ? " + "
                        : op.fn == OpKind::kSub ? " - "
                        : op.fn == OpKind::kMul ? " * "
                                                : " / ";
      e = absl::StrCat(Var(op.operands[0]), sym, Var(op.operands[1]));
      break;
    }
    case BlockOpKind::kInvRms:
      e = absl::StrCat("1.0f / sqrtf(", Var(op.operands[0]), " / ",
                       FloatLit(static_cast<double>(op.count)), " + ", FloatLit(op.eps), ")");
      break;
    case BlockOpKind::kDivCount:
      e = absl::StrCat(Var(op.operands[0]), " / ", FloatLit(static_cast<double>(op.count)));
      break;
    case BlockOpKind::kMatMul: {
      // Σ_r (Σ_it A_it[row, r]) · B[r, col] (file comment).
      const int acc = op.operands[0], in = k_.ops[acc].operands[0], b = op.operands[1];
      const Shape& a_tile = k_.ops[acc].tile;
      const ConcreteTensor& tb = p_.tensors[k_.ops[b].tensor];
      const std::string load = absl::StrCat(
          ParamName(p_, k_.ops[b].tensor), "[(", TileOrigin(k_, b, 0, false, kAxes), " + r) * ",
          tb.shape[1], "LL + ", TileOrigin(k_, b, 1, false, kAxes), " + ", idx(1), "]");
      return absl::StrCat(
          "float ", Var(i), " = 0.0f;  // ", OpLabel(k_, i), "\n#pragma unroll\n    for (int r = 0; r < ",
          a_tile[1], "; ++r) {\n      float ", Var(acc), " = 0.0f;  // ", OpLabel(k_, acc),
          "\n#pragma unroll\n      for (int it = 0; it < kF; ++it) {\n        ",
          Statement(in, a_tile, {a_tile[0] == 1 ? std::string("0") : idx(0), "r"}), "\n        ",
          Var(acc), " += ", Var(in), ";\n      }\n      ", Var(i), " += ", Var(acc), " * ",
          ToF32(tb, load), ";\n    }");
    }
    case BlockOpKind::kRms:  // the row's factor from its pass (PassCode)
      e = absl::StrCat(Var(op.operands[0]), " * inv", i, RowIndex(out_tile));
      break;
    case BlockOpKind::kReduce:  // the row's value from its pass (PassCode)
      e = absl::StrCat("row", i, RowIndex(out_tile));
      break;
    default:
      PRISM_UNREACHABLE("pointwise op kind ", GetBlockOpInfo(op.kind).name);
  }
  return absl::StrCat("const float ", Var(i), " = ", e, ";  // ", OpLabel(k_, i));
}

absl::StatusOr<LaunchConfig> PointwiseGen::Generate(std::string& source) {
  PRISM_RETURN_IF_ERROR(Analyze());
  LaunchConfig launch;
  launch.kernel = kname_;
  launch.function =
      absl::StrCat("prism_", Ident(p_.name), "_", Ident(kname_), options_.name_suffix);
  launch.threads = k_.threads;
  int64_t most = 1;
  for (int o : outputs_) {
    int64_t n = 1;
    for (int64_t d : k_.ops[o].tile) n *= d;
    most = std::max(most, n);
  }
  // With row ops a row must stay in one thread block: P = 1.
  const int64_t parts =
      !row_ops_.empty()
          ? 1
          : std::max<int64_t>(1,
                              std::min((most + k_.threads - 1) / k_.threads, 65535 / k_.grid[2]));
  launch.grid = {k_.grid[0], k_.grid[1], k_.grid[2] * parts};
  std::string params;
  PRISM_RETURN_IF_ERROR(KernelParams(p_, k_, kname_, launch, params));
  int64_t accs = 0;
  for (const ConcreteBlockOp& op : k_.ops) accs += op.kind == BlockOpKind::kAccSum ? 1 : 0;
  launch.accumulator_regs = accs;

  const std::vector<RowPass> passes = Passes();
  std::vector<std::string> kinds;
  for (const RowPass& pass : passes) kinds.push_back(pass.kind);
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname_, ": grid (", k_.grid[0], ", ", k_.grid[1], ", ",
                  k_.grid[2], "), ", k_.threads, " threads, forloop ", k_.forloop,
                  "; pointwise template: launched as (", launch.grid[0], ", ", launch.grid[1], ", ",
                  launch.grid[2], ") blocks, ", parts,
                  row_ops_.empty()
                      ? " per graph block, one output element per thread, loads from "
                        "global memory, f32 accumulators in iteration order\n"
                      : absl::StrCat(" per graph block, ", passes.size(), " row pass(es) (",
                                     absl::StrJoin(kinds, ", "), ") over ", rows_, " row(s) of ",
                                     cols_,
                                     reg_elems_ > 0
                                         ? absl::StrCat(", inputs in registers (", reg_elems_,
                                                        " per thread, ", vec_ * 2, "-byte loads)")
                                         : std::string(", inputs re-read per pass"),
                                     "\n"));
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", k_.threads, ") ",
                  launch.function, "(", params, ") {\n");
  absl::StrAppend(&s, KernelPrologue(options_));
  absl::StrAppend(&s, "  using namespace prism_dev;\n  constexpr int kF = ", k_.forloop,
                  ", kParts = ", parts, ";\n");
  absl::StrAppend(&s,
                  "  const long long bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z / kParts;\n"
                  "  const int first = (blockIdx.z % kParts) * ",
                  k_.threads, " + threadIdx.x;\n  (void)bx; (void)by; (void)bz;\n");
  if (row_ops_.empty()) {
    absl::StrAppend(&s, ElementLoops("first", k_.threads * parts), "}\n");
    source += s;
    return launch;
  }
  // Row passes (file comment).
  const int64_t warps = k_.threads / 32;
  const Shape& tile = row_tile_;
  if (rows_ == 1) {
    // One row per block: each pass has its own partials array, and every thread combines it
    // after the one barrier (same order as a single thread would), keeping the result in a
    // register: one barrier per pass instead of two.
    for (const RowPass& pass : passes) {
      absl::StrAppend(&s, "  __shared__ float red_", pass.dest, "[", warps, "];\n  float ",
                      pass.dest, "[1];  // the row's ", pass.what, ", in every thread\n");
    }
  } else {
    absl::StrAppend(&s, "  __shared__ float red[", warps * rows_, "];\n");
    for (const RowPass& pass : passes) {
      absl::StrAppend(&s, "  __shared__ float ", pass.dest, "[", rows_, "];  // each row's ",
                      pass.what, "\n");
    }
  }
  if (reg_elems_ > 0) {
    // Cache every input's elements of this thread (j·T + t) in registers.
    absl::StrAppend(&s, "  // inputs cached in registers: element (j·", k_.threads,
                    " + threadIdx.x)·", vec_, " + k of the tile in slot j·", vec_, " + k\n");
    for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
      if (k_.ops[i].kind == BlockOpKind::kInput) {
        absl::StrAppend(&s, "  float x", i, "[", reg_elems_, "];\n");
      }
    }
    const int64_t slots = reg_elems_ / vec_;
    // Element of slot q = j·V + k: (j·T + t)·V + k (V = 1 or 8).
    const std::string elem0 = absl::StrCat("(j * ", k_.threads, " + threadIdx.x) * ", vec_);
    absl::StrAppend(&s, "#pragma unroll\n  for (int j = 0; j < ", slots,
                    "; ++j) {\n    const int e = ", elem0, ";\n", IndexLines(tile, "    "));
    if (vec_ == 8) {
      for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
        if (k_.ops[i].kind != BlockOpKind::kInput) continue;
        const Half16* h = Half16Of(p_.tensors[k_.ops[i].tensor].dtype);
        absl::StrAppend(&s, "    {  // ", OpLabel(k_, i), ": 16-byte load\n      const U32x4 raw = "
                        "*reinterpret_cast<const U32x4*>(", ParamName(p_, k_.ops[i].tensor),
                        " + ", Addr(i, true), ");\n      const u32_t w[4] = {raw.x, raw.y, "
                        "raw.z, raw.w};\n#pragma unroll\n      for (int k = 0; k < 8; ++k) x", i,
                        "[j * 8 + k] = ", h->to_f32, "(static_cast<", h->type,
                        ">((w[k >> 1] >> (16 * (k & 1))) & 0xffffu));\n    }\n");
      }
      absl::StrAppend(&s, "  }\n");
    }
    const int64_t saved = reg_elems_;
    reg_elems_ = 0;  // Statement() emits the global loads
    for (int i = 0; i < static_cast<int>(k_.ops.size()) && vec_ == 1; ++i) {
      if (k_.ops[i].kind != BlockOpKind::kInput) continue;
      absl::StrAppend(&s, "    {\n      ", Statement(i, tile), "\n      x", i, "[j] = ", Var(i),
                      ";\n    }\n");
    }
    reg_elems_ = saved;
    if (vec_ == 1) absl::StrAppend(&s, "  }\n");
  }
  for (const RowPass& pass : passes) absl::StrAppend(&s, PassCode(pass));
  if (reg_elems_ == 0) {
    absl::StrAppend(&s, ElementLoops("first", k_.threads), "}\n");
    source += s;
    return launch;
  }
  // The stores of the row tile, from the cached inputs; then those of one value per row.
  std::vector<int> per_row;
  for (int o : outputs_) {
    const ConcreteBlockOp& out = k_.ops[o];
    if (out.tile != tile) {
      per_row.push_back(o);
      continue;
    }
    const ConcreteTensor& t = p_.tensors[out.tensor];
    absl::StrAppend(&s, "  // ", OpLabel(k_, o), " → ", t.name, "\n");
    absl::StrAppend(&s, "#pragma unroll\n  for (int j = 0; j < ", reg_elems_ / vec_,
                    "; ++j) {\n    float ov[", vec_, "];\n#pragma unroll\n    for (int k = 0; k < ",
                    vec_, "; ++k) {\n      const int q = j * ", vec_, " + k;\n      const int e = (j * ",
                    k_.threads, " + threadIdx.x) * ", vec_, " + k;\n", IndexLines(tile, "      "));
    for (int i : Needed(out.operands[0])) {
      absl::StrAppend(&s, "      ", Statement(i, tile), "\n");
    }
    absl::StrAppend(&s, "      ov[k] = ", Var(out.operands[0]), ";\n      (void)q;\n    }\n");
    absl::StrAppend(&s, "    const int e = (j * ", k_.threads, " + threadIdx.x) * ", vec_, ";\n",
                    IndexLines(tile, "    "));
    if (vec_ == 8) {
      const char* pack = Half16Of(t.dtype)->pack2;
      absl::StrAppend(&s, "    *reinterpret_cast<U32x4*>(", ParamName(p_, out.tensor), " + ",
                      Addr(o, false), ") = U32x4{", pack, "(ov[0], ov[1]), ", pack,
                      "(ov[2], ov[3]), ", pack, "(ov[4], ov[5]), ", pack, "(ov[6], ov[7])};\n  }\n");
    } else {
      absl::StrAppend(&s, "    ", ParamName(p_, out.tensor), "[", Addr(o, false), "] = ",
                      FromF32(t, "ov[0]"), ";\n  }\n");
    }
  }
  if (!per_row.empty()) {
    const int64_t saved = reg_elems_;
    reg_elems_ = 0;  // per-row inputs are loaded from global memory
    absl::StrAppend(&s, ElementLoops("first", k_.threads, per_row));
    reg_elems_ = saved;
  }
  absl::StrAppend(&s, "  (void)first;\n}\n");
  source += s;
  return launch;
}

std::vector<PointwiseGen::RowPass> PointwiseGen::Passes() const {
  std::vector<RowPass> passes;
  for (int q : row_ops_) {
    const ConcreteBlockOp& op = k_.ops[q];
    const int x = op.operands[0];
    if (op.kind == BlockOpKind::kRms) {
      passes.push_back({RowPass::kSumSq, x, absl::StrCat("inv", q), "rms",
                        absl::StrCat("rms factor (", OpLabel(k_, q), ")"), op.eps});
      continue;
    }
    // A shifted exp's max, before the first sum of it.
    if (shifted_.count(x) > 0) {
      const std::string dest = absl::StrCat("mx", x);
      bool done = false;
      for (const RowPass& p : passes) done = done || p.dest == dest;
      if (!done) {
        passes.push_back({RowPass::kMax, k_.ops[x].operands[0], dest, "max",
                          absl::StrCat("max of exp's operand (", OpLabel(k_, x), ", shifted)"),
                          0.0});
      }
    }
    const bool sum = op.fn == OpKind::kSum;
    passes.push_back({sum ? RowPass::kSum : RowPass::kMax, x, absl::StrCat("row", q),
                      sum ? "sum" : "max", absl::StrCat(sum ? "sum (" : "max (", OpLabel(k_, q), ")"),
                      0.0});
  }
  return passes;
}

std::string PointwiseGen::IndexLines(const Shape& tile, const std::string& indent) {
  std::string out;
  int64_t inner = 1;
  std::vector<std::string> idx(tile.size());
  for (size_t d = tile.size(); d-- > 0;) {
    idx[d] = absl::StrCat(indent, "const int i", d, " = (e / ", inner, ") % ", tile[d], ";");
    inner *= tile[d];
  }
  for (const std::string& line : idx) absl::StrAppend(&out, line, "\n");
  for (size_t d = 0; d < tile.size(); ++d) absl::StrAppend(&out, indent, "(void)i", d, ";\n");
  return out;
}

std::string PointwiseGen::PassCode(const RowPass& pass) const {
  const Shape& tile = row_tile_;
  const int64_t warps = k_.threads / 32;
  const int x = pass.value;
  const bool max = pass.how == RowPass::kMax;
  const char* neg_inf = "-__int_as_float(0x7f800000)";
  // acc ← acc ⊕ v: `fold` per element (v² for rms), `combine` for the warps' partials; then
  // the row's value from its total t.
  auto combine = [&](const std::string& acc, const std::string& v) {
    return max ? absl::StrCat(acc, " = fmaxf(", acc, ", ", v, ");")
               : absl::StrCat(acc, " += ", v, ";");
  };
  auto fold = [&](const std::string& acc, const std::string& v) {
    return pass.how == RowPass::kSumSq ? absl::StrCat(acc, " += ", v, " * ", v, ";")
                                       : combine(acc, v);
  };
  const std::string total =
      pass.how == RowPass::kSumSq
          ? absl::StrCat("1.0f / sqrtf(t / ", FloatLit(static_cast<double>(cols_)), " + ",
                         FloatLit(pass.eps), ")")
          : std::string("t");
  std::string s;
  absl::StrAppend(&s, "  {  // pass: the ", pass.what, "\n");
  if (max) {
    absl::StrAppend(&s, "    float ss[", rows_, "];\n#pragma unroll\n    for (int r = 0; r < ",
                    rows_, "; ++r) ss[r] = ", neg_inf, ";\n");
  } else {
    absl::StrAppend(&s, "    float ss[", rows_, "] = {};\n");
  }
  if (reg_elems_ > 0) {
    absl::StrAppend(&s, "#pragma unroll\n    for (int j = 0; j < ", reg_elems_ / vec_,
                    "; ++j)\n#pragma unroll\n    for (int k = 0; k < ", vec_,
                    "; ++k) {\n      const int q = j * ", vec_, " + k;\n      const int e = (j * ",
                    k_.threads, " + threadIdx.x) * ", vec_, " + k;\n", IndexLines(tile, "      "));
    for (int i : Needed(x)) absl::StrAppend(&s, "      ", Statement(i, tile), "\n");
    // V·T divides C: the elements of slot j are in row j·T·V / C for every t (a constant).
    absl::StrAppend(&s, "      ",
                    fold(absl::StrCat("ss[j * ", k_.threads * vec_, " / ", cols_, "]"), Var(x)),
                    "\n      (void)q;\n    }\n");
  } else {
    absl::StrAppend(&s, "#pragma unroll\n    for (int row = 0; row < ", rows_, "; ++row) {\n");
    absl::StrAppend(&s, "      for (int c = threadIdx.x; c < ", cols_, "; c += ", k_.threads,
                    ") {\n");
    absl::StrAppend(&s, "        const int e = row * ", cols_, " + c;\n", IndexLines(tile, "        "));
    for (int i : Needed(x)) absl::StrAppend(&s, "        ", Statement(i, tile), "\n");
    absl::StrAppend(&s, "        ", fold("ss[row]", Var(x)), "\n      }\n    }\n");
  }
  const char* warp_fn = max ? "WarpMax" : "WarpSum";
  const std::string init = max ? neg_inf : "0.0f";
  absl::StrAppend(&s, "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n");
  if (rows_ == 1) {
    absl::StrAppend(&s, "    {\n      const float w = ", warp_fn, "(ss[0]);\n      if (lane == 0) red_",
                    pass.dest, "[warp] = w;\n    }\n    __syncthreads();\n");
    absl::StrAppend(&s, "    {\n      float t = ", init, ";\n#pragma unroll\n      for (int w = 0; w < ",
                    warps, "; ++w) ", combine("t", absl::StrCat("red_", pass.dest, "[w]")), "\n      ",
                    pass.dest, "[0] = ", total, ";\n    }\n  }\n");
    return s;
  }
  absl::StrAppend(&s, "#pragma unroll\n    for (int row = 0; row < ", rows_,
                  "; ++row) {\n      const float w = ", warp_fn, "(ss[row]);\n      if (lane == "
                  "0) red[warp * ",
                  rows_, " + row] = w;\n    }\n    __syncthreads();\n");
  absl::StrAppend(&s, "    if (threadIdx.x < ", rows_, ") {\n      float t = ", init,
                  ";\n      for (int w = 0; w < ", warps, "; ++w) ",
                  combine("t", absl::StrCat("red[w * ", rows_, " + threadIdx.x]")), "\n      ",
                  pass.dest, "[threadIdx.x] = ", total, ";\n    }\n    __syncthreads();\n  }\n");
  return s;
}

std::string PointwiseGen::ElementLoops(const std::string& first, int64_t step,
                                       const std::vector<int>& outs) const {
  std::string s;
  for (int o : outs.empty() ? outputs_ : outs) {
    const ConcreteBlockOp& out = k_.ops[o];
    const ConcreteTensor& t = p_.tensors[out.tensor];
    const Shape& tile = out.tile;
    int64_t n = 1;
    for (int64_t d : tile) n *= d;
    // The ops this output needs, by phase, in op order (dependency order).
    const std::set<int> need = Needed(out.operands[0]);
    absl::StrAppend(&s, "  // ", OpLabel(k_, o), " → ", t.name, "\n");
    absl::StrAppend(&s, "  for (int e = ", first, "; e < ", n, "; e += ", step, ") {\n");
    // Multi-index of element e (row-major in the tile).
    int64_t inner = 1;
    std::vector<std::string> idx(tile.size());
    for (size_t d = tile.size(); d-- > 0;) {
      idx[d] = absl::StrCat("    const int i", d, " = (e / ", inner, ") % ", tile[d], ";");
      inner *= tile[d];
    }
    for (const std::string& line : idx) absl::StrAppend(&s, line, "\n");
    for (size_t d = 0; d < tile.size(); ++d) absl::StrAppend(&s, "    (void)i", d, ";\n");
    for (int i : need) {
      if (k_.ops[i].phase == Phase::kInvariant) {
        absl::StrAppend(&s, "    ", Statement(i, tile), "\n");
      }
    }
    std::vector<int> accs_needed;
    for (int i : need) {
      if (k_.ops[i].kind == BlockOpKind::kAccSum) accs_needed.push_back(i);
    }
    for (int a : accs_needed) {
      absl::StrAppend(&s, "    float ", Var(a), " = 0.0f;  // ", OpLabel(k_, a), "\n");
    }
    const char* unroll = fused_ != nullptr ? "#pragma unroll\n" : "#pragma unroll 8\n";
    // The log-sum-exp pairs this output needs (file comment), in one of three forms:
    //   - lanes: one lane per split holds its weight 2^(Dn'_j − max Dn'), the max by warp
    //     shuffles, and iteration it reads lane it's by a shuffle. Needs at most 32 splits, a
    //     kernel of its own (not folded into a cluster), and the warp's 32 elements in one row
    //     (the stored tile's last dim a multiple of 32, Dn broadcast along it). On the H200 it
    //     made the gqa b=1 combine faster than the exact-exp one (2.54 against 3.02 µs alone):
    //     one Dn' load and one exp2 per thread instead of one per split;
    //   - registers (at most kMaxLseRegs splits): every Dn' loaded, the max taken, then the
    //     weights, both loops fully unrolled so that all loads are in flight at once;
    //   - a running max (more splits): the sums rescaled whenever the max grows.
    std::vector<const LsePair::Reader*> lse;
    for (const LsePair::Reader& r : lse_) {
      if (need.count(r.div) > 0) lse.push_back(&r);
    }
    const bool lse_lanes = !lse.empty() && fused_ == nullptr && k_.forloop <= 32 &&
                           tile.back() % 32 == 0 && k_.threads % 32 == 0;
    const bool lse_regs = !lse.empty() && !lse_lanes && k_.forloop <= kMaxLseRegs;
    if (lse_lanes || lse_regs) unroll = "#pragma unroll\n";
    for (const LsePair::Reader* r : lse) {
      const std::string m = absl::StrCat("lse_mx", r->div);
      if (lse_lanes) {
        absl::StrAppend(
            &s, "    // the partials' weights: lane j < kF holds 2^(Dn'_j - max Dn') (the warp's "
                "elements share the row)\n    float lse_wl", r->div, ";\n    {\n"
                "      const int lane = threadIdx.x & 31, it = lane < kF ? lane : kF - 1;\n      ",
            Statement(r->den_in, tile), "\n      const float d = lane < kF ? ", Var(r->den_in),
            " : -__int_as_float(0x7f800000);\n      float mx = d;\n#pragma unroll\n"
            "      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, "
            "o));\n      lse_wl", r->div, " = prism_dev::Exp2(d - mx);\n    }\n");
        continue;
      }
      absl::StrAppend(&s, "    float ", m,
                      " = -__int_as_float(0x7f800000);  // max of the partials' log2 Σ exp(S)",
                      lse_regs ? "" : " so far", "\n");
      if (!lse_regs) continue;
      absl::StrAppend(&s, "    float lse_d", r->div, "[kF];\n", unroll,
                      "    for (int it = 0; it < kF; ++it) {\n      ", Statement(r->den_in, tile),
                      "\n      lse_d", r->div, "[it] = ", Var(r->den_in), ";\n      ", m,
                      " = fmaxf(", m, ", ", Var(r->den_in), ");\n    }\n");
    }
    if (!accs_needed.empty()) {
      absl::StrAppend(&s, unroll, "    for (int it = 0; it < kF; ++it) {\n");
      for (int i : need) {
        bool cached = false;
        for (const LsePair::Reader* r : lse) cached |= (lse_regs || lse_lanes) && i == r->den_in;
        if (k_.ops[i].phase == Phase::kLoop && !cached) {
          absl::StrAppend(&s, "      ", Statement(i, tile), "\n");
        }
      }
      for (const LsePair::Reader* r : lse) {
        const std::string d = lse_regs ? absl::StrCat("lse_d", r->div, "[it]") : Var(r->den_in);
        const std::string m = absl::StrCat("lse_mx", r->div);
        if (lse_lanes) {
          absl::StrAppend(&s, "      const float lse_w", r->div, " = __shfl_sync(0xffffffffu, lse_wl",
                          r->div, ", it);  // this partial's weight, at most 1\n");
        } else if (lse_regs) {
          absl::StrAppend(&s, "      const float lse_w", r->div, " = prism_dev::Exp2(", d, " - ", m,
                          ");  // this partial's weight, at most 1\n");
        } else {
          // A larger max rescales the sums so far (2^-inf = 0 on the first iteration).
          absl::StrAppend(&s, "      const float lse_m", r->div, " = fmaxf(", m, ", ", d,
                          ");\n      const float lse_r", r->div, " = prism_dev::Exp2(", m,
                          " - lse_m", r->div, ");\n      const float lse_w", r->div,
                          " = prism_dev::Exp2(", d, " - lse_m", r->div, ");\n      ", m,
                          " = lse_m", r->div, ";\n      ", Var(r->num_acc), " *= lse_r", r->div,
                          ";\n      ", Var(r->den_acc), " *= lse_r", r->div, ";\n");
        }
      }
      for (int a : accs_needed) {
        const LsePair::Reader* pair = nullptr;
        for (const LsePair::Reader* r : lse) {
          if (a == r->num_acc || a == r->den_acc) pair = r;
        }
        if (pair == nullptr) {
          absl::StrAppend(&s, "      ", Var(a), " += ", Var(k_.ops[a].operands[0]), ";\n");
        } else if (a == pair->num_acc) {
          absl::StrAppend(&s, "      ", Var(a), " += ", Var(pair->num_in), " * lse_w", pair->div,
                          ";\n");
        } else {
          absl::StrAppend(&s, "      ", Var(a), " += lse_w", pair->div, ";\n");
        }
      }
      absl::StrAppend(&s, "    }\n");
    }
    for (int i : need) {
      if (k_.ops[i].phase == Phase::kAfter && k_.ops[i].kind != BlockOpKind::kAccSum) {
        absl::StrAppend(&s, "    ", Statement(i, tile), "\n");
      }
    }
    absl::StrAppend(&s, "    ", StoreStatement(o), "\n  }\n");
  }
  return s;
}

absl::StatusOr<std::string> PointwiseGen::Tail(const FusedCombine& f, int64_t threads,
                                               const std::string& region) {
  PRISM_RETURN_IF_ERROR(Analyze());
  if (!row_ops_.empty()) {
    return Err(row_ops_.front(),
               "cluster_combine: a combine kernel with a row reduction cannot be folded");
  }
  if (!matmuls_.empty()) {
    return Err(matmuls_.front(), "cluster_combine: a combine kernel with a matmul cannot be folded");
  }
  fused_ = &f;
  std::string s;
  absl::StrAppend(&s, "  // kernel ", kname_, " folded in (cluster_combine): the cluster's ",
                  f.cluster, " blocks evaluate the elements of combine block ",
                  f.axis == 2 ? "(x, y, 0)" : "(x, 0, z)", ", rank r from r·",
                  threads, " + t in steps of ", f.cluster * threads,
                  ", partial i read from rank i's shared memory\n");
  absl::StrAppend(&s, "  ClusterSync();  // every rank's partial tiles are written\n  {\n");
  absl::StrAppend(&s, "    constexpr int kF = ", k_.forloop, ";\n");
  absl::StrAppend(&s, f.axis == 2 ? "    const long long bx = blockIdx.x, by = blockIdx.y, bz = 0;\n"
                                   : "    const long long bx = blockIdx.x, by = 0, bz = blockIdx.z;\n",
                  "    (void)bx; (void)by; (void)bz;\n");
  absl::StrAppend(&s, "    const int first = static_cast<int>(ClusterRank()) * ", threads,
                  " + threadIdx.x;\n");
  absl::StrAppend(&s, "    u32_t rb[kF];  // each rank's fused region (shared::cluster)\n    {\n"
                      "      const u32_t fz = static_cast<u32_t>(__cvta_generic_to_shared(",
                  region, "));\n#pragma unroll\n      for (int r = 0; r < kF; ++r) rb[r] = "
                  "MapShared(fz, r);\n    }\n");
  std::string loops = ElementLoops("first", f.cluster * threads);
  // Indent the loops one level (they are written for a kernel body).
  std::string indented;
  for (absl::string_view line : absl::StrSplit(loops, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&indented, line.substr(0, 1) == "#" ? "" : "  ", line, "\n");
  }
  absl::StrAppend(&s, indented,
                  "  }\n  ClusterSync();  // keep this block's tiles until every rank has read "
                  "them\n");
  return s;
}

}  // namespace

absl::StatusOr<LaunchConfig> GeneratePointwiseKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source) {
  PointwiseGen gen(p, kernel, options);
  return gen.Generate(source);
}

absl::StatusOr<std::string> GenerateCombineTail(const BlockProgram& p, const FusedCombine& f,
                                                int64_t threads, const std::string& region,
                                                const CodegenOptions& options) {
  PointwiseGen gen(p, f.combine, options);
  return gen.Tail(f, threads, region);
}

}  // namespace prism::codegen::internal
