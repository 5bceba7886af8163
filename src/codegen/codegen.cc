// The CUDA generator (codegen.h): recognizes the "GEMM + epilogue" structure of
// a block graph and writes the kernel from the device templates of
// kernels/prism/device_common.cuh.
#include "prism/codegen/codegen.h"

#include <algorithm>
#include <functional>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"
#include "gen_util.h"

namespace prism::codegen {
namespace {

using internal::FloatLit;
using internal::Ident;
using internal::KernelPrologue;

#include "device_common_source.inc"  // kDeviceCommonCuh: kernels/prism/device_common.cuh

constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int64_t kMaxAccumulatorRegs = 192;  // per thread; more would spill
constexpr int64_t kPadElems = 8;  // 16 bytes of f16 per shared row: conflict-free fragments

// The row pitch, in f32 elements, of a matmul's cross-warp reduction buffer for an N tile of
// `n` (a multiple of 8): ≡ 8 or 24 (mod 32), so that the float2 fragment stores of a half warp
// (four rows g, four column pairs t) fall in 32 distinct banks. An unpadded N that is a
// multiple of 32 put all eight rows of a warp's store in the same four banks: an 8-way
// conflict on every store (docs/codegen.md, the `matmul(A, B)` row of the GEMM table).
int64_t RedPitch(int64_t n) { return n % 16 == 0 ? n + 8 : n; }

// `const u32_t pa[4] = …;`: the two m16n8 f32 accumulators xa[0], xa[1] of an [M, 16] X·A
// (`xa` names a float [2][4]) rounded to f16 (bf16) pairs by `pack2` (PackF16x2, PackBF16x2),
// in the m16k16 A-fragment order (the accumulator layout is the A layout) for the chained ·B.
std::string PackXaFragment(const std::string& xa, const char* pack2) {
  return absl::StrCat("const u32_t pa[4] = {", pack2, "(", xa, "[0][0], ", xa, "[0][1]), ", pack2,
                      "(", xa, "[0][2], ", xa, "[0][3]), ", pack2, "(", xa, "[1][0], ", xa,
                      "[1][1]), ", pack2, "(", xa, "[1][2], ", xa, "[1][3])};");
}

struct LoopInput {
  int op = -1;
  int64_t rows = 0, cols = 0, pitch = 0;
  int64_t offset = 0;  // bytes within a stage
};

struct MatMulPlan {
  int op = -1, acc = -1, a = -1, b = -1;
  // Elementwise ops between loop input tiles and the matmul's A operand (matmul(silu(X), W),
  // matmul(silu(G) ⊙ U, W)), in op order: applied to the A fragments after each load (the
  // prologue), rounded back to the inputs' format. `a_leaves` are the input tiles they read
  // (of A's shape, or one row [1, K] broadcast over the rows: `a_row_leaves`; `a` is the first
  // of A's shape), `a_key` names the fragments: `a` without ops, else the operand (the last op).
  std::vector<int> a_ops, a_leaves, a_row_leaves;
  int a_key = -1;
  int64_t n = 0;           // the N tile
  int64_t red_offset = 0;  // bytes within the reduction buffer
  int64_t red_pitch = 0;   // f32 elements per row of the reduction buffer (RedPitch)
  // A chained loop matmul (lora's split: acc_sum((X·A)·B)): `a` is the inner loop matmul X·A
  // (inner_, [M, 16], never stored), `b` a loop-invariant [16, N] input whose fragments are
  // read once into registers: from global memory before the loop, or (gemm_chained_b_smem)
  // from its tile in shared memory after the loop.
  bool chained = false;
  int64_t b_smem_offset = -1;  // gemm_chained_b_smem: the B tile's bytes in dynamic smem
  int64_t b_rows = 0, b_pitch = 0;  // its rows, and f16 elements per row (N + 8)
  // A side matmul: its accumulator is only stored, with its own N tile, narrower than the
  // after-loop tile (lora's split: X·A [M, 16] next to X·W [M, N/gx], sharing the X tile).
  // Its n8 tiles are dealt to the warps along N, ⌈n8 / WN⌉ each; a warp whose tiles would
  // lie past N skips them (a warp-uniform guard).
  bool side = false;
  // Added into another plan's accumulator after the loop (KernelGen::folds_): no reduction
  // buffer of its own, never stored.
  bool folded = false;
};

// An after-loop matmul acc_sum(loop matmul) · (loop-invariant input tile): e.g. lora's
// (X·A)·B. Evaluated per output element in f32 (R multiply-adds, B read from global memory).
struct PostMatMulPlan {
  int op = -1, acc = -1, b = -1;
  int64_t r = 0;  // the contracted extent
};

struct SumSqPlan {
  int acc = -1;
  int a_input = -1;  // the loop input whose squares are summed
  int64_t red_offset = 0;
};

class KernelGen {
 public:
  // With `fused`, the combine kernel after this one is folded in (cluster_combine).
  KernelGen(const BlockProgram& program, int kernel_index, const CodegenOptions& options,
            const internal::FusedCombine* fused = nullptr)
      : p_(program),
        k_(program.kernels[kernel_index].block()),
        kname_(program.kernels[kernel_index].name),
        options_(options),
        fused_combine_(fused) {}

  absl::StatusOr<LaunchConfig> Generate(std::string& source);

 private:
  absl::Status Err(int op, absl::string_view what) const {
    return absl::UnimplementedError(
        absl::StrCat("codegen: kernel ", kname_, ", op ", OpLabel(op), ": ", what));
  }
  std::string OpLabel(int i) const { return internal::OpLabel(k_, i); }
  absl::Status Analyze();
  // C expression of the first element's coordinate along `dim` of op `i`'s
  // tile.
  std::string TileOrigin(int i, int dim, bool with_loop) const;
  std::string ElementExpr(int i, const std::vector<int64_t>& out_tile);
  // The f32 expression of A-prologue op `x` (a_ops) over its leaves, each leaf's value named
  // by `leaf_var`.
  std::string PrologueExpr(int x, const std::vector<int>& leaves,
                           const std::function<std::string(int)>& leaf_var) const;
  std::string ParamName(int tensor) const {
    return absl::StrCat("t_", Ident(p_.tensors[tensor].name));
  }
  // Whether `tensor` is a program input named in CodegenOptions::constant_inputs.
  bool IsConstantInput(int tensor) const {
    return std::find(p_.inputs.begin(), p_.inputs.end(), tensor) != p_.inputs.end() &&
           std::find(options_.constant_inputs.begin(), options_.constant_inputs.end(),
                     p_.tensors[tensor].name) != options_.constant_inputs.end();
  }
  // The base pointer expression of output `o`'s stored tile and its row pitch: the tensor in
  // global memory at the tile's origin, or (cluster_combine) the tile kept row-major in the
  // fused region of shared memory.
  std::pair<std::string, std::string> OutBase(int o) const;
  // Whether every even column of output op `o`'s tile starts a pair that one 8-byte (f32) or
  // 4-byte (f16) store may write: an even row pitch and column origin, and (a tile kept in
  // shared memory) an 8-byte-aligned region. Tensors are cuMemAlloc'd (256-byte aligned).
  bool PairAligned(int o) const;
  // The matmul whose accumulator output op `o` stores as it is (tile [M, N tile], not the A
  // operand of an after-loop matmul), or nullptr.
  const MatMulPlan* StoredAccumulator(int o) const;
  // The plan of loop matmul op `op` (which must have one).
  // The element type ("float", "f16_t", "bf16_t") and f32 rounding of output op `o`'s tensor
  // (the rounding is empty for f32).
  const char* OutType(int o) const;
  std::string OutRound(int o, const std::string& x) const;
  // "LoadAFragment<kSumSq>" with the kernel's 16-bit format ("<true, true>" for bf16 Σx²).
  std::string LoadA(bool sumsq) const {
    return absl::StrCat("LoadAFragment<", sumsq ? "true" : "false",
                        h_->dtype == DType::kBF16 ? ", true>" : ">");
  }
  const MatMulPlan& PlanOf(int op) const {
    return *std::find_if(matmuls_.begin(), matmuls_.end(),
                         [&](const MatMulPlan& m) { return m.op == op; });
  }

  const BlockProgram& p_;
  const ConcreteBlockGraph& k_;
  std::string kname_;
  const CodegenOptions& options_;
  const internal::FusedCombine* fused_combine_ = nullptr;
  // The inputs' 16-bit format (f16 or bf16): tiles, fragments, mma (set by Analyze); with
  // f32_, every input is f32 (tiles of 4-byte elements, FmaTilesF32 on the CUDA cores) and
  // h_ is unused.
  const internal::Half16* h_ = nullptr;
  bool f32_ = false;
  int64_t elem_bytes_ = 2;  // of the loop tiles in shared memory
  int64_t fused_off_ = 0;  // the fused region's byte offset in shared memory

  std::vector<LoopInput> inputs_;
  std::map<int, int> input_index_;  // op → inputs_ index
  std::vector<MatMulPlan> matmuls_;
  std::vector<MatMulPlan> inner_;  // loop matmuls consumed only by a chained matmul
  std::vector<SumSqPlan> sumsqs_;
  std::vector<PostMatMulPlan> post_matmuls_;
  std::set<int> invariant_inputs_;  // loop-invariant input ops (read from global memory)
  std::set<int> epilogue_inputs_;    // those read by after-loop elementwise ops
  std::set<int> post_operands_;     // accumulators used only as an after-loop matmul's A
  // An after-loop add of two matmul accumulators of the same N tile, each used by it alone
  // (lora's split partial X·W + (X·A)·B): add op → (the plan it is folded into, the folded
  // plan), by MatMulPlan::op. The second accumulator is added into the first right after the
  // loop, so the sum is stored (or reduced across warps) as one accumulator.
  std::map<int, std::pair<int, int>> folds_;
  std::set<int> fused_;  // loop ops emitted as part of an accumulator (square)
  std::set<int> prologue_;  // loop ops applied to A fragments (MatMulPlan::a_ops)
  std::vector<int> outputs_;
  int64_t mt_ = 0, kt_ = 0;  // matmul tile (all loop matmuls share M and K)
  int64_t nt_ = 0;            // the after-loop tile's N (the stored tiles')
  int mtiles_ = 0;
  int warps_ = 0, wn_ = 1, wk_ = 1;
  // Per after-loop expression: emitted variable name.
  std::map<int, std::string> emitted_;
  std::string body_;
};

absl::Status KernelGen::Analyze() {
  if (k_.threads % 32 != 0 || k_.threads < 32 || k_.threads > 1024) {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", kname_, ": threads ",
                                                 k_.threads,
                                                 " is not a multiple of 32 in [32, 1024]"));
  }
  warps_ = static_cast<int>(k_.threads / 32);
  {
    int f32_in = -1, half_in = -1;
    for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
      if (k_.ops[i].kind != BlockOpKind::kInput) continue;
      (p_.tensors[k_.ops[i].tensor].dtype == DType::kF32 ? f32_in : half_in) = i;
    }
    if (f32_in >= 0 && half_in >= 0) {
      const ConcreteTensor& a = p_.tensors[k_.ops[f32_in].tensor];
      const ConcreteTensor& b = p_.tensors[k_.ops[half_in].tensor];
      return Err(f32_in, absl::StrCat(a.name, " is f32 but ", b.name, " is ", DTypeName(b.dtype),
                                      "; one kernel reads one format"));
    }
    f32_ = f32_in >= 0;
    elem_bytes_ = f32_ ? 4 : 2;
    h_ = internal::Half16Of(DType::kF16);
    if (!f32_) {
      PRISM_ASSIGN_OR_RETURN(h_, internal::KernelHalf16(p_, k_, kname_));
    }
  }
  const std::vector<int> uses = internal::UseCounts(k_);
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    switch (op.kind) {
      case BlockOpKind::kInput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        if (t.shape.size() != 2 || op.tile.size() != 2)
          return Err(i, "only rank-2 tiles are supported");
        if (op.walks_groups) return Err(i, "forloops over partial-result groups are not supported");
        if (op.fmap == kReplicate) {
          // Only as the B operand of an after-loop matmul (checked there and below).
          invariant_inputs_.insert(i);
          break;
        }
        if (op.tile[1] % 8 != 0 || t.shape[1] % 8 != 0) {
          return Err(i, "tile rows must be whole 16-byte chunks (columns a multiple of 8)");
        }
        LoopInput in;
        in.op = i;
        in.rows = op.tile[0];
        in.cols = op.tile[1];
        in.pitch = in.cols + kPadElems;
        input_index_[i] = static_cast<int>(inputs_.size());
        inputs_.push_back(in);
        break;
      }
      case BlockOpKind::kMatMul: {
        const int a = op.operands[0], b = op.operands[1];
        if (op.phase == Phase::kAfter) {
          const ConcreteBlockOp& acc = k_.ops[a];
          const bool acc_of_matmul =
              acc.kind == BlockOpKind::kAccSum &&
              std::any_of(matmuls_.begin(), matmuls_.end(), [&](const MatMulPlan& m) {
                return m.acc == a;
              });
          if (!acc_of_matmul || uses[a] != 1 || !invariant_inputs_.count(b)) {
            return Err(i,
                       "an after-loop matmul must be acc_sum(matmul) · (a loop-invariant input "
                       "tile), its A operand used by nothing else");
          }
          if (acc.tile.size() != 2 || k_.ops[b].tile.size() != 2) {
            return Err(i, "only rank-2 tiles are supported");
          }
          PostMatMulPlan pm;
          pm.op = i;
          pm.acc = a;
          pm.b = b;
          pm.r = acc.tile[1];
          post_matmuls_.push_back(pm);
          post_operands_.insert(a);
          break;
        }
        if (auto in = std::find_if(matmuls_.begin(), matmuls_.end(),
                                   [&](const MatMulPlan& m) { return m.op == a; });
            in != matmuls_.end() && invariant_inputs_.count(b)) {
          if (f32_) {
            return Err(i, "a chained matmul (X·A)·B is not supported on f32 tiles (its X·A "
                          "is a tensor-core A fragment)");
          }
          // (X·A)·B inside the loop: X·A per K chunk on tensor cores, rounded to f16 as the
          // A operand of ·B (B: [16, N], one k16 step).
          if (uses[a] != 1 || in->n != kMmaK || k_.ops[b].tile[0] != kMmaK ||
              k_.ops[b].tile[1] % kMmaN != 0) {
            return Err(i,
                       "a matmul of a loop matmul must be (X·A)·B with X·A [M, 16] used by "
                       "nothing else and B a loop-invariant [16, N] tile, N a multiple of 8");
          }
          inner_.push_back(*in);
          matmuls_.erase(in);
          MatMulPlan m;
          m.op = i;
          m.a = m.a_key = a;
          m.b = b;
          m.n = k_.ops[b].tile[1];
          m.chained = true;
          matmuls_.push_back(m);
          break;
        }
        // The A operand may be elementwise ops (unary, or binary of two such) of loop input
        // tiles of its own shape or of one row [1, K] broadcast over its rows (RMSNorm's
        // gain), each op used by this matmul alone.
        std::vector<int> ops, leaves;
        std::vector<int> row_leaves;  // one-row leaves broadcast over A's rows
        const std::function<bool(int)> collect = [&](int x) {
          const ConcreteBlockOp& o = k_.ops[x];
          if (input_index_.count(x)) {
            const Shape& at = k_.ops[a].tile;
            const bool row = o.tile.size() == 2 && at.size() == 2 && o.tile[0] == 1 &&
                             at[0] > 1 && o.tile[1] == at[1];
            if (o.tile != at && !row) return false;
            if (std::find(leaves.begin(), leaves.end(), x) == leaves.end()) leaves.push_back(x);
            if (row && std::find(row_leaves.begin(), row_leaves.end(), x) == row_leaves.end()) {
              row_leaves.push_back(x);
            }
            return true;
          }
          if ((o.kind != BlockOpKind::kUnary && o.kind != BlockOpKind::kBinary) ||
              o.phase != Phase::kLoop || uses[x] != 1 || o.tile != k_.ops[a].tile) {
            return false;
          }
          for (int y : o.operands) {
            if (!collect(y)) return false;
          }
          ops.push_back(x);
          return true;
        };
        int a_in = a;
        if (!input_index_.count(a) && collect(a)) {
          std::sort(ops.begin(), ops.end());
          std::sort(leaves.begin(), leaves.end());
          for (int c : ops) prologue_.insert(c);
          // The fragments' own load: the first leaf of A's shape (a row leaf is loaded beside).
          a_in = -1;
          for (int l : leaves) {
            if (a_in < 0 && std::count(row_leaves.begin(), row_leaves.end(), l) == 0) a_in = l;
          }
          if (a_in < 0) a_in = leaves.front();
          std::stable_partition(leaves.begin(), leaves.end(), [&](int l) { return l == a_in; });
        } else {
          ops.clear();
          leaves.clear();
          row_leaves.clear();
        }
        if (!input_index_.count(a_in) || !input_index_.count(b)) {
          return Err(i, "matmul operands must be loop input tiles (or, for A, elementwise ops of "
                        "such tiles)");
        }
        const Shape& ta = k_.ops[a].tile;
        const Shape& tb = k_.ops[b].tile;
        if (ta[1] % kMmaK != 0) return Err(i, "the K tile must be a multiple of 16");
        if (tb[1] % kMmaN != 0) return Err(i, "the N tile must be a multiple of 8");
        if (!matmuls_.empty() && (ta[0] != mt_ || ta[1] != kt_)) {
          return Err(i, "all matmuls of a kernel must share the M and K tile extents");
        }
        mt_ = ta[0];
        kt_ = ta[1];
        MatMulPlan m;
        m.op = i;
        m.a = a_in;
        m.a_ops = ops;
        m.a_leaves = leaves;
        m.a_row_leaves = row_leaves;
        m.a_key = ops.empty() ? a_in : a;
        m.b = b;
        m.n = tb[1];
        matmuls_.push_back(m);
        break;
      }
      case BlockOpKind::kAccSum: {
        const int x = op.operands[0];
        auto it = std::find_if(matmuls_.begin(), matmuls_.end(),
                               [&](const MatMulPlan& m) { return m.op == x; });
        if (it == matmuls_.end() || it->acc != -1 || uses[x] != 1) {
          return Err(i, "acc_sum is supported only over a matmul used by nothing else");
        }
        it->acc = i;
        break;
      }
      case BlockOpKind::kAccSumSqLast:
      case BlockOpKind::kAccSumLast: {
        int x = op.operands[0];
        if (op.kind == BlockOpKind::kAccSumLast) {
          const ConcreteBlockOp& sq = k_.ops[x];
          if (sq.kind != BlockOpKind::kUnary || sq.fn != OpKind::kSquare || uses[x] != 1) {
            return Err(i, "acc_sum_last is supported only over square(A tile of a matmul)");
          }
          fused_.insert(x);
          x = sq.operands[0];
        }
        const bool is_a = std::any_of(matmuls_.begin(), matmuls_.end(),
                                      [&](const MatMulPlan& m) {
                                        return m.a == x || std::count(m.a_leaves.begin(),
                                                                      m.a_leaves.end(), x) > 0;
                                      });
        if (!is_a) return Err(i, "the sum of squares must be over a matmul's A tile (fused)");
        if (std::any_of(matmuls_.begin(), matmuls_.end(), [&](const MatMulPlan& m) {
              return std::count(m.a_row_leaves.begin(), m.a_row_leaves.end(), x) > 0;
            })) {
          return Err(i, "the sum of squares of a row broadcast over the A tile is not supported");
        }
        SumSqPlan s;
        s.acc = i;
        s.a_input = x;
        sumsqs_.push_back(s);
        break;
      }
      case BlockOpKind::kUnary:
      case BlockOpKind::kBinary:
        if (op.phase == Phase::kLoop) {
          // The fused square of acc_sum_last, or part of a matmul's A prologue (both checked
          // when the consumer is reached, and at the end).
          break;
        }
        [[fallthrough]];
      case BlockOpKind::kInvRms:
      case BlockOpKind::kDivCount:
        if (op.phase != Phase::kAfter) {
          return Err(i, "elementwise ops are supported only after the forloop");
        }
        if (op.tile.size() != 2) return Err(i, "only rank-2 tiles are supported");
        break;
      case BlockOpKind::kOutput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        // f32 outputs: the partial results of a split reduction (kernel 1 of a split-K
        // family), stored unrounded; only of an accumulator (acc_sum of a matmul, Σx²).
        // (Or of an add of two accumulators, which Analyze folds into one below.)
        const ConcreteBlockOp& src = k_.ops[op.operands[0]];
        const auto is_acc = [&](const ConcreteBlockOp& x) {
          return x.kind == BlockOpKind::kAccSum || x.kind == BlockOpKind::kAccSumSqLast ||
                 x.kind == BlockOpKind::kAccSumLast;
        };
        const bool acc_src = is_acc(src) || (src.kind == BlockOpKind::kBinary &&
                                             src.fn == OpKind::kAdd &&
                                             is_acc(k_.ops[src.operands[0]]) &&
                                             is_acc(k_.ops[src.operands[1]]));
        if (t.dtype == DType::kF32 && !acc_src && !f32_) {
          return Err(i,
                     "f32 outputs are supported only of an accumulator or a sum of two (split "
                     "partials)");
        }
        if (internal::Half16Of(t.dtype) == nullptr && t.dtype != DType::kF32)
          return Err(i, "only f16, bf16 and f32 outputs are supported");
        if (t.shape.size() != 2 || op.tile.size() != 2)
          return Err(i, "only rank-2 tiles are supported");
        if (k_.ops[op.operands[0]].phase != Phase::kAfter) {
          return Err(i, "only outputs computed after the forloop are supported");
        }
        outputs_.push_back(i);
        break;
      }
      default:
        return Err(i, "this block op is not supported by the generator yet");
    }
  }
  for (int f : fused_) {
    if (k_.ops[f].phase != Phase::kLoop) return Err(f, "square outside the loop");
  }
  for (int in : invariant_inputs_) {
    for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
      const ConcreteBlockOp& op = k_.ops[i];
      for (size_t j = 0; j < op.operands.size(); ++j) {
        if (op.operands[j] != in) continue;
        const bool post_b =
            j == 1 && (std::any_of(post_matmuls_.begin(), post_matmuls_.end(),
                                   [&](const PostMatMulPlan& m) { return m.op == i; }) ||
                       std::any_of(matmuls_.begin(), matmuls_.end(), [&](const MatMulPlan& m) {
                         return m.chained && m.op == i;
                       }));
        // An operand of an after-loop elementwise op (a bias [1, N] or residual [M, N] tile
        // added in the epilogue): read from global memory per stored element (ElementExpr).
        const bool epilogue =
            op.phase == Phase::kAfter &&
            (op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary ||
             op.kind == BlockOpKind::kInvRms || op.kind == BlockOpKind::kDivCount);
        if (epilogue) {
          epilogue_inputs_.insert(in);
        } else if (!post_b) {
          return Err(in,
                     "loop-invariant input tiles are supported only as the B operand of an "
                     "after-loop or a chained matmul, or as operands of after-loop "
                     "elementwise ops");
        }
      }
    }
  }
  if (matmuls_.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "codegen: kernel ", kname_, ": only kernels with a tensor-core matmul are supported yet"));
  }
  for (const MatMulPlan& m : matmuls_) {
    if (m.acc == -1) return Err(m.op, "a matmul must be closed by acc_sum");
  }
  if (outputs_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname_, " has no output"));
  }
  // After-loop tiles and outputs are evaluated per element of the stored tile
  // [mt_, nt_] (extent-1 dims broadcast); anything else would be indexed
  // wrongly. (An after-loop matmul's A operand is read at (m, r) instead.)
  // (The widest stored tile: a split's Σx² partial is [M, 1] next to the [M, N] product.)
  nt_ = 0;
  for (int o : outputs_) nt_ = std::max(nt_, k_.ops[o].tile[1]);
  std::set<int> side_ops;  // side matmuls' accumulators and the outputs that store them
  for (MatMulPlan& m : matmuls_) {
    if (post_operands_.count(m.acc) || m.n == nt_) continue;
    // A narrower accumulator is fine when nothing but outputs of its own tile reads it.
    bool only_stored = !m.chained && uses[m.acc] > 0;
    for (int i = 0; i < static_cast<int>(k_.ops.size()) && only_stored; ++i) {
      const ConcreteBlockOp& op = k_.ops[i];
      if (std::find(op.operands.begin(), op.operands.end(), m.acc) == op.operands.end()) continue;
      only_stored = op.kind == BlockOpKind::kOutput && op.tile == Shape{mt_, m.n};
      if (only_stored) side_ops.insert(i);
    }
    if (!only_stored) {
      return Err(m.op, absl::StrCat("the N tile (", m.n, ") differs from the stored tile's (",
                                    nt_, ") and its accumulator is not only stored"));
    }
    m.side = true;
    side_ops.insert(m.acc);
  }
  if (std::all_of(matmuls_.begin(), matmuls_.end(), [](const MatMulPlan& m) { return m.side; })) {
    return Err(matmuls_.front().op, "every matmul is narrower than the stored tile");
  }
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.kind != BlockOpKind::kBinary || op.fn != OpKind::kAdd) continue;
    const auto plan = [&](int acc) {
      return std::find_if(matmuls_.begin(), matmuls_.end(),
                          [&](const MatMulPlan& m) { return m.acc == acc; });
    };
    const auto a = plan(op.operands[0]), b = plan(op.operands[1]);
    if (a == matmuls_.end() || b == matmuls_.end() || a == b || a->side || b->side ||
        a->folded || b->folded || a->n != b->n || uses[a->acc] != 1 || uses[b->acc] != 1 ||
        post_operands_.count(a->acc) || post_operands_.count(b->acc) ||
        op.tile != Shape{mt_, a->n}) {
      continue;
    }
    b->folded = true;
    folds_[i] = {a->op, b->op};
  }
  for (const PostMatMulPlan& pm : post_matmuls_) {
    const Shape& tb = k_.ops[pm.b].tile;
    const Shape& ta = k_.ops[pm.acc].tile;
    if (ta[0] != mt_ || tb[0] != pm.r || tb[1] != nt_) {
      return Err(pm.op, absl::StrCat("the after-loop matmul must be [", mt_, ", R] · [R, ", nt_,
                                     "]"));
    }
  }
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.phase != Phase::kAfter && op.kind != BlockOpKind::kOutput &&
        !epilogue_inputs_.count(i)) {
      continue;
    }
    if (post_operands_.count(i) || side_ops.count(i)) continue;
    if (op.tile.size() != 2 || (op.tile[0] != 1 && op.tile[0] != mt_) ||
        (op.tile[1] != 1 && op.tile[1] != nt_)) {
      return Err(i, absl::StrCat("after-loop tiles must be [", mt_, " or 1, ", nt_,
                                 " or 1] (the matmul tile, broadcast)"));
    }
    if (op.kind == BlockOpKind::kOutput && op.tile != k_.ops[op.operands[0]].tile) {
      return Err(i, "the stored tile must have its operand's shape");
    }
  }
  mtiles_ = static_cast<int>((mt_ + kMmaM - 1) / kMmaM);
  // Warps: split N (wn_) only when the K tile has fewer 16-wide chunks than
  // warps. (Side matmuls take whatever split the others get.)
  const int64_t kc = kt_ / kMmaK;
  auto n_splits = [&](int w) {
    return std::all_of(matmuls_.begin(), matmuls_.end(),
                       [&](const MatMulPlan& m) { return m.side || (m.n / kMmaN) % w == 0; });
  };
  wn_ = 1;
  if (options_.gemm_warps_along_n) {
    const auto two_per_warp = [&](int w) {
      return std::all_of(matmuls_.begin(), matmuls_.end(),
                         [&](const MatMulPlan& m) { return m.side || m.n / kMmaN / w >= 2; });
    };
    while (warps_ % (wn_ * 2) == 0 && n_splits(wn_ * 2) && two_per_warp(wn_ * 2)) wn_ *= 2;
  } else {
    while (warps_ / wn_ > kc && n_splits(wn_ * 2) && warps_ % (wn_ * 2) == 0) wn_ *= 2;
  }
  wk_ = warps_ / wn_;
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if ((op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary) &&
        op.phase == Phase::kLoop && !fused_.count(i) && !prologue_.count(i)) {
      return Err(i, "elementwise ops inside the forloop are supported only on a matmul's A tile "
                    "(used by that matmul alone) or as the square under acc_sum_last");
    }
  }
  // Stage layout.
  int64_t off = 0;
  for (LoopInput& in : inputs_) {
    in.offset = off;
    off += in.rows * in.pitch * elem_bytes_;
  }
  return absl::OkStatus();
}

std::string KernelGen::PrologueExpr(int x, const std::vector<int>& leaves,
                                    const std::function<std::string(int)>& leaf_var) const {
  if (std::find(leaves.begin(), leaves.end(), x) != leaves.end()) return leaf_var(x);
  const ConcreteBlockOp& o = k_.ops[x];
  if (o.kind == BlockOpKind::kUnary) {
    return internal::UnaryExpr(o, PrologueExpr(o.operands[0], leaves, leaf_var));
  }
  const char* sym = o.fn == OpKind::kAdd   ? " + "
                    : o.fn == OpKind::kSub ? " - "
                    : o.fn == OpKind::kMul ? " * "
                                           : " / ";
  return absl::StrCat("(", PrologueExpr(o.operands[0], leaves, leaf_var), sym,
                      PrologueExpr(o.operands[1], leaves, leaf_var), ")");
}

std::string KernelGen::TileOrigin(int i, int dim, bool with_loop) const {
  return internal::TileOrigin(k_, i, dim, with_loop);
}

// The f32 value of after-loop op `i` at output element (m, n), emitted into
// body_ once.
std::string KernelGen::ElementExpr(int i, const std::vector<int64_t>& out_tile) {
  auto found = emitted_.find(i);
  if (found != emitted_.end()) return found->second;
  const ConcreteBlockOp& op = k_.ops[i];
  const std::string v = absl::StrCat("v", i);
  const std::string m = op.tile[0] == 1 ? "0" : "m";
  const std::string n = op.tile[1] == 1 ? "0" : "n";
  std::string e;
  auto arg = [&](int k) { return ElementExpr(op.operands[k], out_tile); };
  if (const auto fold = folds_.find(i); fold != folds_.end()) {
    // The sum is in the first accumulator's reduction buffer (Generate adds the second in).
    return ElementExpr(PlanOf(fold->second.first).acc, out_tile);
  }
  switch (op.kind) {
    case BlockOpKind::kAccSum: {
      const MatMulPlan& mm = *std::find_if(matmuls_.begin(), matmuls_.end(),
                                           [&](const MatMulPlan& x) { return x.acc == i; });
      e = absl::StrCat("ReduceAcc(reinterpret_cast<const float*>(smem + ", mm.red_offset, "), ", m,
                       " * ", mm.red_pitch, " + ", n, ", ", mtiles_ * kMmaM * mm.red_pitch, ")");
      break;
    }
    case BlockOpKind::kMatMul: {
      // acc_sum(loop matmul) · B (loop-invariant, from global memory), r ascending.
      const PostMatMulPlan& pm = *std::find_if(post_matmuls_.begin(), post_matmuls_.end(),
                                               [&](const PostMatMulPlan& x) { return x.op == i; });
      const MatMulPlan& mm = *std::find_if(matmuls_.begin(), matmuls_.end(),
                                           [&](const MatMulPlan& x) { return x.acc == pm.acc; });
      const ConcreteTensor& tb = p_.tensors[k_.ops[pm.b].tensor];
      absl::StrAppend(&body_, "      float ", v, " = 0.0f;  // ", OpLabel(i), "\n");
      absl::StrAppend(&body_, "      {\n        const ", f32_ ? "float" : h_->type, "* bp = ",
                      ParamName(k_.ops[pm.b].tensor),
                      " + (", TileOrigin(pm.b, 0, false), ") * ", tb.shape[1], "LL + ",
                      TileOrigin(pm.b, 1, false), " + n;\n");
      absl::StrAppend(&body_, "#pragma unroll\n        for (int r = 0; r < ", pm.r, "; ++r) ", v,
                      " += ReduceAcc(reinterpret_cast<const float*>(smem + ", mm.red_offset,
                      "), ", m, " * ", mm.red_pitch, " + r, ", mtiles_ * kMmaM * mm.red_pitch,
                      ") * ", f32_ ? "" : h_->to_f32, "(bp[(long long)r * ", tb.shape[1],
                      "LL]);\n      }\n");
      emitted_[i] = v;
      return v;
    }
    case BlockOpKind::kAccSumSqLast:
    case BlockOpKind::kAccSumLast: {
      const SumSqPlan& s = *std::find_if(sumsqs_.begin(), sumsqs_.end(),
                                         [&](const SumSqPlan& x) { return x.acc == i; });
      e = absl::StrCat("ReduceAcc(reinterpret_cast<const float*>(smem + ", s.red_offset, "), ", m,
                       ", ", mtiles_ * kMmaM, ")");
      break;
    }
    case BlockOpKind::kInput: {
      // A loop-invariant input tile (epilogue_inputs_) at element (m, n) of the stored tile,
      // from global memory; an extent-1 dim (a bias row) broadcasts.
      const ConcreteTensor& t = p_.tensors[op.tensor];
      e = internal::ToF32(t, absl::StrCat(ParamName(op.tensor), "[(long long)(",
                                          TileOrigin(i, 0, false), " + ", m, ") * ", t.shape[1],
                                          "LL + ", TileOrigin(i, 1, false), " + ", n, "]"));
      break;
    }
    case BlockOpKind::kInvRms:
      e = absl::StrCat("1.0f / sqrtf(", arg(0), " / ", FloatLit(static_cast<double>(op.count)),
                       " + ", FloatLit(op.eps), ")");
      break;
    case BlockOpKind::kDivCount:
      e = absl::StrCat(arg(0), " / ", FloatLit(static_cast<double>(op.count)));
      break;
    case BlockOpKind::kUnary:
      e = internal::UnaryExpr(op, arg(0));
      break;
    case BlockOpKind::kBinary: {
      const std::string a = arg(0), b = arg(1);
      const char* sym = op.fn == OpKind::kAdd   ? " + "
                        : op.fn == OpKind::kSub ? " - "
                        : op.fn == OpKind::kMul ? " * "
                                                : " / ";
      e = absl::StrCat(a, sym, b);
      break;
    }
    default:
      PRISM_UNREACHABLE("after-loop op kind ", GetBlockOpInfo(op.kind).name);
  }
  absl::StrAppend(&body_, "      const float ", v, " = ", e, ";  // ", OpLabel(i), "\n");
  emitted_[i] = v;
  (void)out_tile;
  return v;
}

absl::StatusOr<LaunchConfig> KernelGen::Generate(std::string& source) {
  PRISM_RETURN_IF_ERROR(Analyze());
  LaunchConfig launch;
  launch.kernel = kname_;
  launch.function =
      absl::StrCat("prism_", Ident(p_.name), "_", Ident(kname_), options_.name_suffix);
  launch.grid = k_.grid;
  launch.threads = k_.threads;
  const int64_t stages = std::max<int64_t>(1, k_.stages);
  auto ntw_of = [&](const MatMulPlan& m) {
    return static_cast<int>((m.n / kMmaN + wn_ - 1) / wn_);
  };
  // The warp-uniform guard of a side matmul's n8 tile nt when WN does not divide its tiles.
  auto tile_guard = [&](const MatMulPlan& m) {
    return (m.n / kMmaN) % wn_ == 0
               ? std::string()
               : absl::StrCat("if (wn * ", ntw_of(m), " + nt < ", m.n / kMmaN, ") ");
  };
  launch.accumulator_regs = static_cast<int64_t>(sumsqs_.size()) * mtiles_ * 2;
  for (const MatMulPlan& m : matmuls_) {
    launch.accumulator_regs += mtiles_ * ntw_of(m) * 4;
    // gemm_defer_chained: X·A's two m16n8 accumulators per m16 tile live across the loop.
    if (m.chained && options_.gemm_defer_chained) launch.accumulator_regs += mtiles_ * 8;
  }
  if (launch.accumulator_regs > kMaxAccumulatorRegs) {
    // Compile-time indexed f32 accumulators live in registers; past this they spill (e.g. a
    // split family whose blocks keep the whole N = 6144 row: 768 n8 tiles).
    return absl::ResourceExhaustedError(absl::StrCat(
        "codegen: kernel ", kname_, " needs ", launch.accumulator_regs,
        " f32 accumulator registers per thread (matmul N tile ", matmuls_.front().n, " over ",
        wn_, " warp(s) along N), over the limit of ", kMaxAccumulatorRegs));
  }
  launch.stage_bytes =
      inputs_.back().offset + inputs_.back().rows * inputs_.back().pitch * elem_bytes_;
  // Reduction buffer: per matmul WK × (16·mtiles) × RedPitch(N) f32; per sum of squares
  // WK × 16·mtiles.
  const int64_t mrows = static_cast<int64_t>(mtiles_) * kMmaM;
  int64_t red = 0;
  for (MatMulPlan& m : matmuls_) {
    if (m.folded) continue;
    m.red_offset = red;
    m.red_pitch = RedPitch(m.n);
    red += wk_ * mrows * m.red_pitch * 4;
  }
  for (SumSqPlan& s : sumsqs_) {
    s.red_offset = red;
    red += wk_ * mrows * 4;
  }
  launch.reduction_bytes = red;
  launch.dynamic_smem_bytes = std::max(stages * launch.stage_bytes, red);
  if (fused_combine_ != nullptr) {
    // The kept partial tiles after the stages and the reduction buffer (no aliasing: no
    // barrier is needed before the tiles are written).
    fused_off_ = (launch.dynamic_smem_bytes + 15) / 16 * 16;
    launch.dynamic_smem_bytes = fused_off_ + fused_combine_->bytes;
  }
  // gemm_chained_b_smem: each chained matmul's B tile after everything else (rows of N + 8
  // f16: the four rows a warp's fragment loads touch at once start 8 banks apart).
  int64_t b_tiles = 0;
  for (MatMulPlan& m : matmuls_) {
    if (!m.chained || !options_.gemm_chained_b_smem) continue;
    if (!options_.gemm_defer_chained) {
      return absl::InvalidArgumentError(absl::StrCat(
          "codegen: kernel ", kname_, ": gemm_chained_b_smem needs gemm_defer_chained: ",
          "without it the chained matmul ", OpLabel(m.op),
          " multiplies by B at every k16 chunk (set both options, or neither)"));
    }
    m.b_rows = k_.ops[m.b].tile[0];
    m.b_pitch = m.n + 8;
    m.b_smem_offset = (launch.dynamic_smem_bytes + 15) / 16 * 16;
    launch.dynamic_smem_bytes = m.b_smem_offset + m.b_rows * m.b_pitch * 2;
    b_tiles += m.b_rows * m.b_pitch * 2;
  }
  if (launch.dynamic_smem_bytes > options_.max_dynamic_smem_bytes) {
    const std::string kept =
        fused_combine_ != nullptr
            ? absl::StrCat(", kept partial tiles ", fused_combine_->bytes, " B")
            : std::string();
    const std::string b = b_tiles > 0 ? absl::StrCat(", B tiles ", b_tiles, " B") : std::string();
    return absl::ResourceExhaustedError(absl::StrCat(
        "codegen: kernel ", kname_, " needs ", launch.dynamic_smem_bytes,
        " bytes of shared memory (", stages, " stages of ", launch.stage_bytes,
        " B, reduction buffer ", red, " B", kept, b, "), over the limit of ",
        options_.max_dynamic_smem_bytes));
  }

  // Arguments: every tensor an input or output op touches, by tensor index (with a folded
  // combine kernel: the union of both kernels' tensors but the kept partial tiles).
  std::string params;
  std::string tail;  // the folded combine kernel (cluster_combine)
  if (fused_combine_ != nullptr) {
    const ConcreteBlockGraph& c = p_.kernels[fused_combine_->combine].block();
    std::set<int> keep;
    for (const auto& [t, o] : fused_combine_->tensors) keep.insert(t);
    PRISM_RETURN_IF_ERROR(internal::KernelParams(p_, {&k_, &c}, keep, kname_, launch, params));
    launch.kernel = absl::StrCat(kname_, "+", p_.kernels[fused_combine_->combine].name);
    launch.cluster = fused_combine_->ClusterDims();
    PRISM_ASSIGN_OR_RETURN(tail, internal::GenerateCombineTail(
                                     p_, *fused_combine_, k_.threads,
                                     absl::StrCat("smem + ", fused_off_), options_));
  } else {
    PRISM_RETURN_IF_ERROR(internal::KernelParams(p_, k_, kname_, launch, params));
  }

  // Direct stores: with one warp along K every warp holds whole sums for its columns, so when
  // every output stores an accumulator as it is (a split family's partial results), each
  // thread stores its fragments straight to global memory: no shared-memory round trip and
  // no barrier after the loop (on the H200 0.2-0.6 µs of a 13-15 µs lora partial kernel,
  // docs/codegen.md).
  const bool direct = wk_ == 1 && std::all_of(outputs_.begin(), outputs_.end(), [&](int o) {
    const ConcreteBlockOp& op = k_.ops[o];
    const int src = op.operands[0];
    if (StoredAccumulator(o) != nullptr) return true;
    if (post_operands_.count(src)) return false;
    for (const SumSqPlan& q : sumsqs_) {
      if (q.acc == src) return op.tile == std::vector<int64_t>{mt_, 1};
    }
    return false;
  });
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname_, ": grid (", k_.grid[0], ", ", k_.grid[1], ", ",
                  k_.grid[2], "), ", k_.threads, " threads, forloop ", k_.forloop, ", ", stages,
                  " stage(s); matmul tile ", mt_, "x", nt_, "x", kt_, " (", mtiles_,
                  " m16 tile(s)); warps ", wk_, " along K x ", wn_, " along N",
                  direct ? "; fragments stored directly" : "", "\n");
  if (fused_combine_ != nullptr) {
    const std::array<int64_t, 3> d = fused_combine_->ClusterDims();
    absl::StrAppend(&s, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n#error \"",
                    launch.function,
                    ": cluster_combine kernels need sm_90 or newer (thread block clusters)\"\n"
                    "#endif\n// launched as clusters of (", d[0], ", ", d[1], ", ", d[2],
                    ") blocks; kernel ", p_.kernels[fused_combine_->combine].name,
                    " folded in\n");
  }
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", k_.threads, ") ",
                  launch.function, "(", params, ") {\n");
  absl::StrAppend(&s, "  using namespace prism_dev;\n");
  // CodegenOptions::constant_inputs: with programmatic dependent launch and a pipeline, the
  // prologue's loads of constant inputs' tiles go before griddepcontrol.wait (`early`), the
  // others' after it.
  const bool pdl_split = options_.programmatic_dependent_launch && stages > 1;
  std::vector<bool> early(inputs_.size(), false);
  bool any_early = false, all_early = true;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    early[i] = pdl_split && IsConstantInput(k_.ops[inputs_[i].op].tensor);
    any_early |= early[i];
    all_early &= early[i];
  }
  auto early_b = [&](const MatMulPlan& m) {
    return pdl_split && IsConstantInput(k_.ops[m.b].tensor);
  };
  for (const MatMulPlan& m : matmuls_) any_early |= m.b_smem_offset >= 0 && early_b(m);
  absl::StrAppend(&s, any_early ? "  prism_dev::PdlLaunchDependents();  // programmatic "
                                  "dependent launch; the wait follows the constant inputs' loads\n"
                                : KernelPrologue(options_));
  absl::StrAppend(&s, "  extern __shared__ __align__(16) unsigned char smem[];\n");
  absl::StrAppend(&s, "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n");
  absl::StrAppend(&s, "  const int wn = warp % ", wn_, ", wk = warp / ", wn_, ";\n");
  absl::StrAppend(&s, "  (void)wn; (void)wk;\n");
  // Loads of one stage (`which`: every input, or only the early or late ones).
  auto load_lambda = [&](absl::string_view name, int which) {
    absl::StrAppend(&s, "  auto ", name, " = [&](int it, int stage) {\n");
    absl::StrAppend(&s, "    unsigned char* base = smem + stage * ", launch.stage_bytes, ";\n");
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if ((which == 1 && !early[i]) || (which == 2 && early[i])) continue;
      const LoopInput& in = inputs_[i];
      const ConcreteBlockOp& op = k_.ops[in.op];
      const ConcreteTensor& t = p_.tensors[op.tensor];
      absl::StrAppend(&s, "    LoadTileAsync", f32_ ? "F32<" : "<", in.rows, ", ", in.cols, ", ",
                      k_.threads, ">(reinterpret_cast<", f32_ ? "float" : h_->type, "*>(base + ",
                      in.offset, "), ", in.pitch, ", ",
                      ParamName(op.tensor), " + (", TileOrigin(in.op, 0, true), ") * ",
                      t.shape[1], "LL + ", TileOrigin(in.op, 1, true), ", ", t.shape[1],
                      "LL, tid);  // ", OpLabel(in.op), early[i] ? " (constant input)" : "", "\n");
    }
    absl::StrAppend(&s, "  };\n");
  };
  load_lambda("load_stage", 0);
  const int64_t n_early = std::count(early.begin(), early.end(), true);
  if (n_early > 0 && !all_early) {
    load_lambda("load_early", 1);
    load_lambda("load_late", 2);
  }
  // Accumulators.
  for (const MatMulPlan& m : matmuls_) {
    const int ntw = ntw_of(m);
    absl::StrAppend(&s, "  float acc", m.op, "[", mtiles_, "][", ntw, "][4] = {};  // ",
                    OpLabel(m.acc), "\n");
  }
  for (const SumSqPlan& q : sumsqs_) {
    absl::StrAppend(&s, "  float ssl", q.acc, "[", mtiles_, "] = {}, ssh", q.acc, "[", mtiles_,
                    "] = {};  // ", OpLabel(q.acc), "\n");
  }
  if (options_.gemm_defer_chained) {
    for (const MatMulPlan& m : matmuls_) {
      if (!m.chained) continue;
      absl::StrAppend(&s, "  float xa", m.op, "[", mtiles_, "][2][4] = {};  // ", OpLabel(m.a),
                      ", summed over the loop (gemm_defer_chained)\n");
    }
  }
  // Pipeline prologue (gemm_chained_b_smem: the B tiles first, in the first commit group).
  // With early loads (constant_inputs): the constant B tiles and the constant inputs' S - 1
  // stages (one commit group per stage) before griddepcontrol.wait, then the other B tiles and
  // the other inputs' S - 1 stages. Iteration it's CpAsyncWait<kStages - 2> leaves at most
  // S - 2 groups pending, so the late stage it has arrived, and every early group before it.
  absl::StrAppend(&s, "  constexpr int kStages = ", stages, ", kF = ", k_.forloop, ";\n");
  auto load_b_tiles = [&](int which) {
    for (const MatMulPlan& m : matmuls_) {
      if (m.b_smem_offset < 0) continue;
      if ((which == 1 && !early_b(m)) || (which == 2 && early_b(m))) continue;
      const ConcreteTensor& tb = p_.tensors[k_.ops[m.b].tensor];
      absl::StrAppend(&s, "  LoadTileAsync<", m.b_rows, ", ", m.n, ", ", k_.threads,
                      ">(reinterpret_cast<", h_->type, "*>(smem + ", m.b_smem_offset, "), ",
                      m.b_pitch, ", ", ParamName(k_.ops[m.b].tensor), " + (",
                      TileOrigin(m.b, 0, false), ") * ", tb.shape[1], "LL + ",
                      TileOrigin(m.b, 1, false), ", ", tb.shape[1], "LL, tid);  // ",
                      OpLabel(m.b), " (gemm_chained_b_smem", early_b(m) ? ", constant input" : "",
                      ")\n");
    }
  };
  auto prologue = [&](absl::string_view fn) {
    absl::StrAppend(&s, "#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n    if (st < kF) ",
                    fn, "(st, st);\n    CpAsyncCommit();\n  }\n");
  };
  if (!any_early) {
    load_b_tiles(0);
    prologue("load_stage");
  } else {
    const bool late_b = std::any_of(matmuls_.begin(), matmuls_.end(), [&](const MatMulPlan& m) {
      return m.b_smem_offset >= 0 && !early_b(m);
    });
    load_b_tiles(1);
    if (n_early > 0) {
      prologue(all_early ? "load_stage" : "load_early");
    } else {
      absl::StrAppend(&s, "  CpAsyncCommit();\n");  // the constant B tiles' group
    }
    absl::StrAppend(&s, "  prism_dev::PdlWait();  // the previous grid has completed: the other "
                        "inputs may be read now\n");
    load_b_tiles(2);
    if (n_early == 0) {
      prologue("load_stage");
    } else if (!all_early) {
      prologue("load_late");
    } else if (late_b) {
      absl::StrAppend(&s, "  CpAsyncCommit();\n");
    }
  }
  // Chained matmuls: the invariant B [16, N] tile's fragments, once, from global memory, after
  // the prologue's copies are issued: their loads and packing would otherwise hold back the
  // first W tiles by a DRAM round trip (ncu: lora b=1's partial kernel stalled on its global
  // loads twice as often as rmsnorm_linear's, docs/performance.md).
  // With gemm_chained_b_smem the same fragments come from the tile in shared memory after
  // the loop (b_fragments).
  auto b_fragments = [&](const MatMulPlan& m, const std::string& bp, const std::string& pitch) {
    const int ntw = ntw_of(m);
    return absl::StrCat(
        "  {\n    const ", h_->type, "* bp = ", bp, ";\n    const int g = lane >> 2, t = lane & 3;\n",
        "#pragma unroll\n    for (int nt = 0; nt < ", ntw, "; ++nt) {\n",
        "      const ", h_->type, "* q = bp + (2 * t) * ", pitch, " + (wn * ", ntw, " + nt) * 8 + g;\n",
        "      bf", m.op, "[nt][0] = Pack2(q[0], q[", pitch, "]);\n      bf", m.op,
        "[nt][1] = Pack2(q[8 * ", pitch, "], q[9 * ", pitch, "]);\n    }\n  }\n");
  };
  for (const MatMulPlan& m : matmuls_) {
    if (!m.chained) continue;
    const ConcreteTensor& tb = p_.tensors[k_.ops[m.b].tensor];
    absl::StrAppend(&s, "  u32_t bf", m.op, "[", ntw_of(m), "][2];  // ", OpLabel(m.b), "\n");
    if (m.b_smem_offset >= 0) continue;
    absl::StrAppend(&s, b_fragments(m,
                                    absl::StrCat(ParamName(k_.ops[m.b].tensor), " + (",
                                                 TileOrigin(m.b, 0, false), ") * ", tb.shape[1],
                                                 "LL + ", TileOrigin(m.b, 1, false)),
                                    absl::StrCat(tb.shape[1], "LL")));
  }
  absl::StrAppend(&s, "  for (int it = 0; it < kF; ++it) {\n");
  absl::StrAppend(&s, internal::PipelineIterationHead(stages));
  absl::StrAppend(&s, "    const unsigned char* base = smem + (it % kStages) * ",
                  launch.stage_bytes, ";\n");
  const int64_t kchunks = kt_ / kMmaK;
  const int64_t kiters = (kchunks + wk_ - 1) / wk_;
  absl::StrAppend(&s, "#pragma unroll\n    for (int kk = 0; kk < ", kiters, "; ++kk) {\n");
  absl::StrAppend(&s, "      const int kc = wk + kk * ", wk_, ";\n");
  if (kchunks % wk_ != 0) absl::StrAppend(&s, "      if (kc >= ", kchunks, ") break;\n");
  if (f32_) {
    // f32 tiles: each warp's m16n8 tiles by FMAs (FmaTilesF32), in the accumulator layout of
    // the tensor-core path, so the epilogue below is the same; sums of squares in
    // LoadAFragment<true>'s lane share (SumSqRowsF32), by the warps with wn == 0.
    for (const SumSqPlan& q : sumsqs_) {
      const LoopInput& ain = inputs_[input_index_.at(q.a_input)];
      absl::StrAppend(&s, "      ", wn_ > 1 ? "if (wn == 0) " : "", "SumSqRowsF32(ssl", q.acc,
                      ", ssh", q.acc, ", reinterpret_cast<const float*>(base + ", ain.offset,
                      "), ", ain.pitch, ", ", ain.rows, ", kc * 16, lane);  // ", OpLabel(q.acc),
                      "\n");
    }
    for (const MatMulPlan& m : matmuls_) {
      const LoopInput& ain = inputs_[input_index_.at(m.a)];
      const LoopInput& bin = inputs_[input_index_.at(m.b)];
      const int ntw = ntw_of(m);
      // A side matmul's uneven share: its n8 tiles past N are skipped.
      const std::string nvalid =
          (m.n / kMmaN) % wn_ == 0 ? absl::StrCat(ntw)
                                   : absl::StrCat(m.n / kMmaN, " - wn * ", ntw);
      const std::string b_args =
          absl::StrCat("kc * 16, reinterpret_cast<const float*>(base + ", bin.offset, "), ",
                       bin.pitch, ", wn * ", ntw * kMmaN, ", ", nvalid, ", lane);  // ",
                       OpLabel(m.op), "\n");
      if (!m.a_ops.empty()) {
        // The A prologue in f32: each A value computed from its leaves' staged elements (a
        // one-row leaf at row 0) where FmaTilesF32Fn reads it; no rounding (the Program's
        // intermediate is f32).
        std::string labels, decl;
        for (int c : m.a_ops) absl::StrAppend(&labels, labels.empty() ? "" : ", ", OpLabel(c));
        for (int leaf : m.a_leaves) {
          const LoopInput& in = inputs_[input_index_.at(leaf)];
          const bool row = std::count(m.a_row_leaves.begin(), m.a_row_leaves.end(), leaf) > 0;
          absl::StrAppend(&decl, "          const float x", leaf,
                          " = reinterpret_cast<const float*>(base + ", in.offset, ")[",
                          row ? "" : absl::StrCat("r * ", in.pitch, " + "), "k];\n");
        }
        const std::string v = PrologueExpr(m.a_key, m.a_leaves,
                                           [](int leaf) { return absl::StrCat("x", leaf); });
        absl::StrAppend(&s, "      {  // ", labels, " on the A tile\n",
                        "        const auto a_at = [&](int r, int k) {\n", decl,
                        "          return ", v, ";\n        };\n");
        absl::StrAppend(&s, "        FmaTilesF32Fn(acc", m.op, ", a_at, ", ain.rows, ", ", b_args,
                        "      }\n");
        continue;
      }
      absl::StrAppend(&s, "      FmaTilesF32(acc", m.op, ", reinterpret_cast<const float*>(base + ",
                      ain.offset, "), ", ain.pitch, ", ", ain.rows, ", ", b_args);
    }
  } else {
    // A fragments, one set per distinct A operand: an input tile, or elementwise ops of input
    // tiles (each loaded, the ops applied in f32, the result rounded back).
    std::vector<const MatMulPlan*> a_plans;
    for (const std::vector<MatMulPlan>* list : {&matmuls_, &inner_}) {
      for (const MatMulPlan& m : *list) {
        if (m.chained) continue;
        if (std::none_of(a_plans.begin(), a_plans.end(),
                         [&](const MatMulPlan* x) { return x->a_key == m.a_key; })) {
          a_plans.push_back(&m);
        }
      }
    }
    std::set<int> summed;  // A inputs whose sum of squares the first load of the tile adds
    for (const MatMulPlan* ap : a_plans) {
      absl::StrAppend(&s, "      u32_t a", ap->a_key, "[", mtiles_, "][4];\n");
      absl::StrAppend(&s, "#pragma unroll\n      for (int mt = 0; mt < ", mtiles_, "; ++mt) {\n");
      // Where each loaded tile goes: the first into the fragments themselves, others into
      // their own registers (l<op>).
      const std::vector<int> loads = ap->a_leaves.empty() ? std::vector<int>{ap->a} : ap->a_leaves;
      auto reg = [&](int leaf) {
        return leaf == loads.front() ? absl::StrCat("a", ap->a_key, "[mt]")
                                     : absl::StrCat("l", leaf);
      };
      bool dummies = false;  // d0, d1 (the sums a load without Σx² adds to) declared
      for (int leaf : loads) {
        const LoopInput& in = inputs_[input_index_.at(leaf)];
        const SumSqPlan* sq = nullptr;
        if (summed.insert(leaf).second) {
          for (const SumSqPlan& q : sumsqs_) {
            if (q.a_input == leaf) sq = &q;  // (a second sum over the tile reuses the first's)
          }
        }
        if (leaf != loads.front()) absl::StrAppend(&s, "        u32_t l", leaf, "[4];\n");
        if (std::count(ap->a_row_leaves.begin(), ap->a_row_leaves.end(), leaf) > 0) {
          // One row broadcast over the fragment's rows (no Σx² is taken of it: Analyze).
          absl::StrAppend(&s, "        LoadARowFragment(", reg(leaf), ", reinterpret_cast<const ",
                          h_->type, "*>(base + ", in.offset, "), kc * 16, lane);\n");
          continue;
        }
        const std::string call_args =
            absl::StrCat("(", reg(leaf), ", reinterpret_cast<const ", h_->type, "*>(base + ",
                         in.offset, "), ", in.pitch, ", ", in.rows, ", mt * 16, kc * 16, lane, ");
        if (sq == nullptr) {
          absl::StrAppend(&s, dummies ? "" : "        float d0 = 0.f, d1 = 0.f;\n", "        ",
                          LoadA(false), call_args, "d0, d1);\n");
          dummies = true;
        } else {
          const std::string ss = absl::StrCat("ssl", sq->acc, "[mt], ssh", sq->acc, "[mt]");
          if (wn_ == 1) {
            absl::StrAppend(&s, "        ", LoadA(true), call_args, ss, ");\n");
          } else {
            absl::StrAppend(&s, "        if (wn == 0) ", LoadA(true), call_args, ss,
                            ");\n        else ", LoadA(false), call_args, ss, ");\n");
          }
        }
      }
      if (!ap->a_ops.empty()) {
        // f32 values of each half (0: bits 0..15, 1: bits 16..31) of each loaded register.
        const bool one = loads.size() == 1;
        auto var = [&](int leaf, int half) {
          return one ? absl::StrCat("x", half) : absl::StrCat("x", leaf, "_", half);
        };
        std::string labels, decl;
        for (int c : ap->a_ops) absl::StrAppend(&labels, labels.empty() ? "" : ", ", OpLabel(c));
        for (int leaf : loads) {
          absl::StrAppend(&decl, decl.empty() ? "          const float " : ",\n                      ",
                          var(leaf, 0), " = ", h_->to_f32, "(", reg(leaf), "[j] & 0xffffu), ",
                          var(leaf, 1), " = ", h_->to_f32, "(", reg(leaf), "[j] >> 16)");
        }
        // The operand's f32 expression per half, over the loaded values.
        const auto expr = [&](int half) {
          return PrologueExpr(ap->a_key, loads, [&](int leaf) { return var(leaf, half); });
        };
        absl::StrAppend(&s, "#pragma unroll\n        for (int j = 0; j < 4; ++j) {  // ", labels,
                        " on the A fragment\n", decl, ";\n          a", ap->a_key,
                        "[mt][j] = ", h_->pack2, "(", expr(0), ", ", expr(1),
                        ");\n        }\n");
      }
      absl::StrAppend(&s, "      }\n");
    }
    for (const MatMulPlan& m : matmuls_) {
      const int ntw = ntw_of(m);
      if (m.chained) {
        // (X·A)·B: the inner X·A over this k16 chunk (all 16 columns in every warp; the warps
        // along K each hold a partial), rounded to f16: its m16n8 accumulator pairs are the
        // m16k16 A fragment of ·B.
        const MatMulPlan& in = *std::find_if(inner_.begin(), inner_.end(),
                                             [&](const MatMulPlan& x) { return x.op == m.a; });
        const LoopInput& ain = inputs_[input_index_.at(in.b)];
        absl::StrAppend(&s, "      {  // ", OpLabel(in.op), " then ", OpLabel(m.op), "\n");
        absl::StrAppend(&s, "        u32_t b4[4];\n        LoadBFragmentX4(b4, reinterpret_cast<"
                        "const ", h_->type, "*>(base + ", ain.offset, "), ", ain.pitch,
                        ", kc * 16, 0, lane);\n");
        absl::StrAppend(&s,
                        "        const u32_t b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};\n");
        if (options_.gemm_defer_chained) {
          // gemm_defer_chained: only X·A here, summed over the loop; ·B after it.
          absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                          "; ++mt) {\n          ", h_->mma, "(xa", m.op, "[mt][0], a", in.a_key,
                          "[mt], b0);\n          ", h_->mma, "(xa", m.op, "[mt][1], a", in.a_key,
                          "[mt], b1);\n        }\n      }\n");
          continue;
        }
        absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                        "; ++mt) {\n          float xa[2][4] = {};\n          ", h_->mma, "(xa[0], a",
                        in.a_key, "[mt], b0);\n          ", h_->mma, "(xa[1], a", in.a_key,
                        "[mt], b1);\n");
        absl::StrAppend(&s, "          ", PackXaFragment("xa", h_->pack2), "\n");
        absl::StrAppend(&s, "#pragma unroll\n          for (int nt = 0; nt < ", ntw,
                        "; ++nt) ", h_->mma, "(acc", m.op, "[mt][nt], pa, bf", m.op,
                        "[nt]);\n        }\n      }\n");
        continue;
      }
      const LoopInput& in = inputs_[input_index_.at(m.b)];
      const std::string bptr =
          absl::StrCat("reinterpret_cast<const ", h_->type, "*>(base + ", in.offset, "), ", in.pitch);
      if (const std::string guard = tile_guard(m); !guard.empty()) {
        // A side matmul's uneven share: one n8 tile at a time, skipped past N.
        absl::StrAppend(&s, "#pragma unroll\n      for (int nt = 0; nt < ", ntw, "; ++nt) ", guard,
                        "{\n        u32_t b[2];\n        LoadBFragment(b, ", bptr,
                        ", kc * 16, (wn * ", ntw, " + nt) * 8, lane);\n");
        absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                        "; ++mt) ", h_->mma, "(acc", m.op, "[mt][nt], a", m.a_key, "[mt], b);  // ",
                        OpLabel(m.op), "\n      }\n");
        continue;
      }
      // Pairs of n8 tiles with ldmatrix.x4.trans; an odd last tile with scalar
      // loads.
      if (ntw >= 2) {
        absl::StrAppend(&s, "#pragma unroll\n      for (int nt = 0; nt + 1 < ", ntw,
                        "; nt += 2) {\n");
        absl::StrAppend(&s, "        u32_t b4[4];\n        LoadBFragmentX4(b4, ", bptr,
                        ", kc * 16, (wn * ", ntw, " + nt) * 8, lane);\n");
        absl::StrAppend(&s,
                        "        const u32_t b0[2] = {b4[0], b4[1]}, b1[2] = "
                        "{b4[2], b4[3]};\n");
        absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                        "; ++mt) {\n          ", h_->mma, "(acc", m.op, "[mt][nt], a", m.a_key,
                        "[mt], b0);\n", "          ", h_->mma, "(acc", m.op, "[mt][nt + 1], a", m.a_key,
                        "[mt], b1);  // ", OpLabel(m.op), "\n        }\n      }\n");
      }
      if (ntw % 2 == 0) continue;
      absl::StrAppend(&s, "      {\n        const int nt = ", ntw - 1, ";\n");
      absl::StrAppend(&s, "        u32_t b[2];\n        LoadBFragment(b, ", bptr, ", kc * 16, (wn * ",
                      ntw, " + nt) * 8, lane);\n");
      absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                      "; ++mt) ", h_->mma, "(acc", m.op, "[mt][nt], a", m.a_key, "[mt], b);  // ",
                      OpLabel(m.op), "\n      }\n");
    }
  }
  absl::StrAppend(&s, "    }\n", stages == 1 ? "    __syncthreads();\n" : "", "  }\n");
  if (options_.gemm_defer_chained) {
    // X·A (this warp's K chunks) rounded to f16 once: its m16n8 accumulator pairs are the
    // m16k16 A fragment of ·B. Each warp along K adds its share; the epilogue sums the warps.
    for (const MatMulPlan& m : matmuls_) {
      if (!m.chained) continue;
      if (m.b_smem_offset >= 0) {
        // B's tile came in with the first stage (its commit group completed, and a barrier
        // passed, before iteration 0 read that stage).
        absl::StrAppend(&s, b_fragments(m,
                                        absl::StrCat("reinterpret_cast<const ", h_->type, "*>(smem + ",
                                                     m.b_smem_offset, ")"),
                                        absl::StrCat(m.b_pitch)));
      }
      absl::StrAppend(&s, "#pragma unroll\n  for (int mt = 0; mt < ", mtiles_,
                      "; ++mt) {  // ", OpLabel(m.op), " after the loop\n");
      absl::StrAppend(&s, "    ", PackXaFragment(absl::StrCat("xa", m.op, "[mt]"), h_->pack2), "\n");
      absl::StrAppend(&s, "#pragma unroll\n    for (int nt = 0; nt < ", ntw_of(m),
                      "; ++nt) ", h_->mma, "(acc", m.op, "[mt][nt], pa, bf", m.op, "[nt]);\n  }\n");
    }
  }
  for (const auto& [add, plans] : folds_) {
    const int ntw = ntw_of(PlanOf(plans.first));
    absl::StrAppend(&s, "#pragma unroll\n  for (int mt = 0; mt < ", mtiles_,
                    "; ++mt)\n#pragma unroll\n  for (int nt = 0; nt < ", ntw,
                    "; ++nt)\n#pragma unroll\n  for (int e = 0; e < 4; ++e) acc", plans.first,
                    "[mt][nt][e] += acc", plans.second, "[mt][nt][e];  // ", OpLabel(add), "\n");
  }
  if (direct) {
    absl::StrAppend(&s, "  CpAsyncWait<0>();\n  {\n    const int g = lane >> 2, t = lane & 3;\n");
    for (int o : outputs_) {
      const ConcreteBlockOp& op = k_.ops[o];
      const ConcreteTensor& t = p_.tensors[op.tensor];
      const int src = op.operands[0];
      const bool f32_out = t.dtype == DType::kF32;
      auto val = [&](const std::string& x) { return OutRound(o, x); };
      const auto [base, ld] = OutBase(o);
      absl::StrAppend(&s, "    {  // ", OpLabel(o), " → ", t.name, "\n    ", OutType(o),
                      "* out = ", base, ";\n");
      // Rows past the tile's M (the m16 tiles' padding) are not stored.
      const bool partial_rows = mt_ % kMmaM != 0;
      auto guard = [&](const std::string& row) {
        return partial_rows ? absl::StrCat("if (", row, " < ", mt_, ") ") : std::string();
      };
      const MatMulPlan* mm = StoredAccumulator(o);
      if (mm != nullptr) {
        const int ntw = ntw_of(*mm);
        const std::string acc = absl::StrCat("acc", mm->op, "[mt][nt]");
        absl::StrAppend(&s, "#pragma unroll\n    for (int mt = 0; mt < ", mtiles_,
                        "; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < ", ntw, "; ++nt) ",
                        tile_guard(*mm), "{\n");
        absl::StrAppend(&s, "      const int r = mt * 16 + g, c = (wn * ", ntw,
                        " + nt) * 8 + 2 * t;\n");
        if (PairAligned(o)) {
          // Each fragment pair (columns c, c + 1; c even) as one 8-byte f32 (or 4-byte f16)
          // store: a quad fills a 32-byte sector of its row with one instruction instead of
          // two half-filled ones.
          // (A copy: clang does not let a lambda capture a structured binding.)
          auto pair = [&, pitch = ld](const std::string& row, const std::string& lo,
                                      const std::string& hi) {
            const std::string at = absl::StrCat("out + (long long)", row, " * ", pitch, " + c");
            return f32_out ? absl::StrCat("*reinterpret_cast<float2*>(", at, ") = make_float2(",
                                          lo, ", ", hi, ");")
                           : absl::StrCat("*reinterpret_cast<u32_t*>(", at, ") = ",
                                          internal::Half16Of(t.dtype)->pack2, "(", lo,
                                          ", ", hi, ");");
          };
          absl::StrAppend(&s, "      ", guard("r"), pair("r", acc + "[0]", acc + "[1]"), "\n");
          absl::StrAppend(&s, "      ", guard("r + 8"), pair("(r + 8)", acc + "[2]", acc + "[3]"),
                          "\n    }\n    }\n");
          continue;
        }
        absl::StrAppend(&s, "      ", guard("r"), "{ out[(long long)r * ", ld, " + c] = ",
                        val(acc + "[0]"), "; out[(long long)r * ", ld, " + c + 1] = ",
                        val(acc + "[1]"), "; }\n");
        absl::StrAppend(&s, "      ", guard("r + 8"), "{ out[(long long)(r + 8) * ", ld,
                        " + c] = ", val(acc + "[2]"), "; out[(long long)(r + 8) * ", ld,
                        " + c + 1] = ", val(acc + "[3]"), "; }\n    }\n    }\n");
        continue;
      }
      // A sum of squares [M, 1]: the warps with wn == 0 hold it (LoadAFragment<true>); the
      // quad's four lanes each summed a quarter of every row's columns.
      const SumSqPlan& q = *std::find_if(sumsqs_.begin(), sumsqs_.end(),
                                         [&](const SumSqPlan& x) { return x.acc == src; });
      absl::StrAppend(&s, "#pragma unroll\n    for (int mt = 0; mt < ", mtiles_, "; ++mt) {\n");
      absl::StrAppend(&s, "      const float lo = QuadSum(ssl", q.acc, "[mt]), hi = QuadSum(ssh",
                      q.acc, "[mt]);\n      const int r = mt * 16 + g;\n");
      absl::StrAppend(&s, "      if (wn == 0 && t == 0) {\n        ", guard("r"),
                      "out[(long long)r * ", ld, "] = ", val("lo"), ";\n        ", guard("r + 8"),
                      "out[(long long)(r + 8) * ", ld, "] = ", val("hi"), ";\n      }\n    }\n    }\n");
    }
    absl::StrAppend(&s, "    (void)g; (void)t;\n  }\n", tail, "}\n");
    source += s;
    return launch;
  }
  // Cross-warp reduction buffers (alias the stages).
  absl::StrAppend(&s, "  CpAsyncWait<0>();\n  __syncthreads();\n");
  absl::StrAppend(&s,
                  "  {\n    const int g = lane >> 2, t = lane & 3;\n    "
                  "(void)g; (void)t;\n");
  for (const MatMulPlan& m : matmuls_) {
    if (m.folded) continue;
    const int ntw = ntw_of(m);
    const int64_t rp = m.red_pitch;
    absl::StrAppend(&s, "    {  // rows of ", m.n, " + ", rp - m.n,
                    " f32: a half warp's float2 stores hit 32 distinct banks\n"
                    "    float* red = reinterpret_cast<float*>(smem + ",
                    m.red_offset, ") + wk * ", mrows * rp, ";\n");
    absl::StrAppend(&s, "#pragma unroll\n    for (int mt = 0; mt < ", mtiles_,
                    "; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < ", ntw, "; ++nt) ",
                    tile_guard(m), "{\n");
    absl::StrAppend(&s, "      const int r = mt * 16 + g, c = (wn * ", ntw,
                    " + nt) * 8 + 2 * t;\n");
    // Rows ≥ M (the zero rows of the M padding) are never read back: with M ≤ 8 the upper
    // half of every m16 fragment is not stored at all.
    absl::StrAppend(&s, "      *reinterpret_cast<float2*>(red + r * ", rp,
                    " + c) = make_float2(acc", m.op, "[mt][nt][0], acc", m.op,
                    "[mt][nt][1]);\n");
    if (mtiles_ > 1 || mt_ > 8) {
      absl::StrAppend(&s, "      *reinterpret_cast<float2*>(red + (r + 8) * ", rp,
                      " + c) = make_float2(acc", m.op, "[mt][nt][2], acc", m.op,
                      "[mt][nt][3]);\n");
    }
    absl::StrAppend(&s, "    }\n    }\n");
  }
  for (const SumSqPlan& q : sumsqs_) {
    absl::StrAppend(&s, "    {\n    float* rss = reinterpret_cast<float*>(smem + ", q.red_offset,
                    ") + wk * ", mrows, ";\n");
    absl::StrAppend(&s, "#pragma unroll\n    for (int mt = 0; mt < ", mtiles_, "; ++mt) {\n");
    absl::StrAppend(&s, "      const float lo = QuadSum(ssl", q.acc, "[mt]), hi = QuadSum(ssh",
                    q.acc, "[mt]);\n");
    absl::StrAppend(&s,
                    "      if (wn == 0 && t == 0) { rss[mt * 16 + g] = lo; "
                    "rss[mt * 16 + g + 8] = hi; }\n    }\n    }\n");
  }
  absl::StrAppend(&s, "  }\n  __syncthreads();\n");
  // Reduction helper: sum over the WK warp partials.
  absl::StrAppend(&s,
                  "  auto ReduceAcc = [&](const float* p, int idx, int stride) {\n"
                  "    float v = 0.f;\n#pragma unroll\n    for (int w = 0; w < ",
                  wk_, "; ++w) v += p[w * stride + idx];\n    return v;\n  };\n");
  // Epilogue per output.
  for (int o : outputs_) {
    const ConcreteBlockOp& op = k_.ops[o];
    const ConcreteTensor& t = p_.tensors[op.tensor];
    emitted_.clear();
    body_.clear();
    absl::StrAppend(&s, "  {  // ", OpLabel(o), " → ", t.name, "\n");
    const bool f32_out = t.dtype == DType::kF32;
    const auto [base, ld] = OutBase(o);
    absl::StrAppend(&s, "    ", OutType(o), "* out = ", base, ";\n");
    // An f32 output of a matmul's accumulator as it is (a split-K partial) with whole float4s
    // in every row of the tile and of the tensor: four columns per thread, float4 shared loads
    // and global stores; the warps' partials are added in ReduceAcc's order (same result).
    const MatMulPlan* vec = StoredAccumulator(o);
    if (f32_out && vec != nullptr && vec->n % 4 == 0 && t.shape[1] % 4 == 0 &&
        (fused_combine_ == nullptr || !fused_combine_->tensors.count(op.tensor))) {
      const int64_t q = vec->n / 4;
      absl::StrAppend(&s, "    for (int e = tid; e < ", mt_ * q, "; e += ", k_.threads,
                      ") {  // four columns per thread\n");
      absl::StrAppend(&s, "      const int m = e / ", q, ", n = (e % ", q, ") * 4;\n");
      absl::StrAppend(&s, "      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);\n#pragma unroll\n",
                      "      for (int w = 0; w < ", wk_, "; ++w) {\n");
      absl::StrAppend(&s, "        const float4 p = *reinterpret_cast<const float4*>(",
                      "reinterpret_cast<const float*>(smem + ", vec->red_offset, ") + w * ",
                      mtiles_ * kMmaM * vec->red_pitch, " + m * ", vec->red_pitch, " + n);\n");
      absl::StrAppend(&s, "        v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;\n      }\n");
      absl::StrAppend(&s, "      *reinterpret_cast<float4*>(out + (long long)m * ", ld,
                      " + n) = v;\n    }\n  }\n");
      continue;
    }
    const std::string v = ElementExpr(op.operands[0], op.tile);
    absl::StrAppend(&s, "    for (int e = tid; e < ", op.tile[0] * op.tile[1],
                    "; e += ", k_.threads, ") {\n");
    absl::StrAppend(&s, "      const int m = e / ", op.tile[1], ", n = e % ", op.tile[1],
                    ";\n      (void)m; (void)n;\n");
    absl::StrAppend(&s, body_);
    absl::StrAppend(&s, "      out[(long long)m * ", ld, " + n] = ",
                    OutRound(o, v), ";\n");
    absl::StrAppend(&s, "    }\n  }\n");
  }
  absl::StrAppend(&s, tail, "}\n");
  source += s;
  return launch;
}

const MatMulPlan* KernelGen::StoredAccumulator(int o) const {
  const ConcreteBlockOp& op = k_.ops[o];
  const int src = op.operands[0];
  if (post_operands_.count(src)) return nullptr;
  const auto fold = folds_.find(src);
  for (const MatMulPlan& m : matmuls_) {
    if (fold != folds_.end() ? m.op == fold->second.first : m.acc == src) {
      return op.tile == std::vector<int64_t>{mt_, m.n} ? &m : nullptr;
    }
  }
  return nullptr;
}

bool KernelGen::PairAligned(int o) const {
  const ConcreteBlockOp& op = k_.ops[o];
  const ConcreteTensor& t = p_.tensors[op.tensor];
  if (op.tile[1] % 2 != 0) return false;  // the column origin is a multiple of the tile
  if (fused_combine_ != nullptr && fused_combine_->tensors.count(op.tensor)) {
    return (fused_off_ + fused_combine_->offset.at(op.tensor)) % 8 == 0;
  }
  return t.shape[1] % 2 == 0;
}

const char* KernelGen::OutType(int o) const {
  const DType dt = p_.tensors[k_.ops[o].tensor].dtype;
  return dt == DType::kF32 ? "float" : internal::Half16Of(dt)->type;
}

std::string KernelGen::OutRound(int o, const std::string& x) const {
  return internal::FromF32(p_.tensors[k_.ops[o].tensor], x);
}

std::pair<std::string, std::string> KernelGen::OutBase(int o) const {
  const ConcreteBlockOp& op = k_.ops[o];
  const ConcreteTensor& t = p_.tensors[op.tensor];
  if (fused_combine_ != nullptr && fused_combine_->tensors.count(op.tensor)) {
    return {absl::StrCat("reinterpret_cast<", OutType(o), "*>(smem + ",
                         fused_off_ + fused_combine_->offset.at(op.tensor), ")"),
            absl::StrCat(op.tile[1], "LL")};
  }
  const std::string ld = absl::StrCat(t.shape[1], "LL");
  return {absl::StrCat(ParamName(op.tensor), " + (", TileOrigin(o, 0, false), ") * ", ld, " + ",
                       TileOrigin(o, 1, false)),
          ld};
}

std::string LaunchJson(const BlockProgram& p, const std::vector<LaunchConfig>& launches) {
  nlohmann::ordered_json j;
  j["format"] = "prism.launch";
  j["version"] = 1;
  j["program"] = p.name;
  nlohmann::ordered_json ks = nlohmann::ordered_json::array();
  for (const LaunchConfig& l : launches) {
    nlohmann::ordered_json k;
    k["kernel"] = l.kernel;
    k["function"] = l.function;
    k["grid"] = {l.grid[0], l.grid[1], l.grid[2]};
    k["block"] = {l.threads, 1, 1};
    if (l.cluster != std::array<int64_t, 3>{1, 1, 1}) {
      k["cluster"] = {l.cluster[0], l.cluster[1], l.cluster[2]};
    }
    if (l.programmatic) k["programmatic_dependent_launch"] = true;
    k["dynamic_smem_bytes"] = l.dynamic_smem_bytes;
    if (l.residency_pad_bytes > 0) k["residency_pad_bytes"] = l.residency_pad_bytes;
    nlohmann::ordered_json args = nlohmann::ordered_json::array();
    for (size_t i = 0; i < l.args.size(); ++i) {
      const ConcreteTensor& t = p.tensors[l.args[i]];
      args.push_back({{"tensor", t.name},
                      {"dtype", std::string(DTypeName(t.dtype))},
                      {"shape", t.shape},
                      {"access", l.written[i] ? "write" : "read"}});
    }
    k["args"] = args;
    ks.push_back(k);
  }
  j["kernels"] = ks;
  return j.dump(1) + "\n";
}

std::string HostHeader(const BlockProgram& p, const std::vector<LaunchConfig>& launches) {
  std::string s;
  absl::StrAppend(&s, "// Generated by prism codegen: host launch helpers for program '", p.name,
                  "'.\n// Include after kernel.cu in one nvcc translation unit. Tensors "
                  "are row-major f16 or bf16\n// (unsigned short bits, __half or "
                  "__nv_bfloat16) or f32 device pointers, each\n// 16-byte aligned (as "
                  "cudaMalloc returns them: the kernels copy and store 16-byte\n// "
                  "chunks).\n#pragma once\n"
                  "#include <cuda_runtime.h>\n\nnamespace prism_generated {\nnamespace ",
                  Ident(p.name), " {\n\n");
  std::set<int> all;
  for (const LaunchConfig& l : launches) {
    std::vector<std::string> params, names;
    for (size_t i = 0; i < l.args.size(); ++i) {
      const std::string n = absl::StrCat("t_", Ident(p.tensors[l.args[i]].name));
      params.push_back(absl::StrCat(l.written[i] ? "" : "const ", "void* ", n));
      // (Every argument's dtype passed KernelParams, which emitted the kernel's signature.)
      const std::string type = internal::DeviceElemType(p.tensors[l.args[i]]).value_or("void");
      names.push_back(absl::StrCat("static_cast<", l.written[i] ? "" : "const ", type, "*>(", n,
                                   ")"));
      all.insert(l.args[i]);
    }
    absl::StrAppend(&s, "// ", l.function, ": grid (", l.grid[0], ", ", l.grid[1], ", ", l.grid[2],
                    "), block ", l.threads, ", ", l.dynamic_smem_bytes,
                    " bytes of dynamic shared memory.\n");
    absl::StrAppend(&s, "inline cudaError_t Launch_", Ident(l.kernel), "(",
                    absl::StrJoin(params, ", "), ", cudaStream_t stream = 0) {\n");
    absl::StrAppend(&s, "  cudaError_t e = cudaFuncSetAttribute(", l.function,
                    ", cudaFuncAttributeMaxDynamicSharedMemorySize, ", l.dynamic_smem_bytes,
                    ");\n  if (e != cudaSuccess) return e;\n");
    const bool cluster = l.cluster != std::array<int64_t, 3>{1, 1, 1};
    if (cluster || l.programmatic) {
      // Launch attributes: thread block clusters (sizes over 8 need the non-portable
      // permission) and programmatic dependent launch, through cudaLaunchKernelEx.
      if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 8) {
        absl::StrAppend(&s, "  e = cudaFuncSetAttribute(", l.function,
                        ", cudaFuncAttributeNonPortableClusterSizeAllowed, 1);\n"
                        "  if (e != cudaSuccess) return e;\n");
      }
      absl::StrAppend(&s, "  cudaLaunchConfig_t cfg = {};\n  cfg.gridDim = dim3(", l.grid[0], ", ",
                      l.grid[1], ", ", l.grid[2], ");\n  cfg.blockDim = dim3(", l.threads,
                      ");\n  cfg.dynamicSmemBytes = ", l.dynamic_smem_bytes,
                      ";\n  cfg.stream = stream;\n  cudaLaunchAttribute attr[2];\n");
      int n = 0;
      if (cluster) {
        absl::StrAppend(&s, "  attr[", n, "].id = cudaLaunchAttributeClusterDimension;\n  attr[", n,
                        "].val.clusterDim.x = ", l.cluster[0], ";\n  attr[", n,
                        "].val.clusterDim.y = ", l.cluster[1], ";\n  attr[", n,
                        "].val.clusterDim.z = ", l.cluster[2], ";\n");
        ++n;
      }
      if (l.programmatic) {
        absl::StrAppend(&s, "  attr[", n,
                        "].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n  attr[", n,
                        "].val.programmaticStreamSerializationAllowed = 1;\n");
        ++n;
      }
      absl::StrAppend(&s, "  cfg.attrs = attr;\n  cfg.numAttrs = ", n,
                      ";\n  return cudaLaunchKernelEx(&cfg, ", l.function, ", ",
                      absl::StrJoin(names, ", "), ");\n}\n\n");
      continue;
    }
    absl::StrAppend(&s, "  ", l.function, "<<<dim3(", l.grid[0], ", ", l.grid[1], ", ", l.grid[2],
                    "), dim3(", l.threads, "), ", l.dynamic_smem_bytes, ", stream>>>(",
                    absl::StrJoin(names, ", "), ");\n  return cudaGetLastError();\n}\n\n");
  }
  std::vector<std::string> params;
  for (int t : all) params.push_back(absl::StrCat("void* t_", Ident(p.tensors[t].name)));
  absl::StrAppend(&s, "// Runs every kernel in order.\ninline cudaError_t Run(",
                  absl::StrJoin(params, ", "),
                  ", cudaStream_t stream = 0) {\n  cudaError_t e = cudaSuccess;\n");
  for (const LaunchConfig& l : launches) {
    std::vector<std::string> names;
    for (int t : l.args) names.push_back(absl::StrCat("t_", Ident(p.tensors[t].name)));
    absl::StrAppend(&s, "  if ((e = Launch_", Ident(l.kernel), "(", absl::StrJoin(names, ", "),
                    ", stream)) != cudaSuccess) return e;\n");
  }
  absl::StrAppend(&s, "  return e;\n}\n\n}  // namespace ", Ident(p.name),
                  "\n}  // namespace prism_generated\n");
  return s;
}

// CodegenOptions::balance_residency: pads `l`'s dynamic shared memory so that at most
// ceil(blocks / sms) of its blocks fit in one SM.
void BalanceResidency(const CodegenOptions& options, LaunchConfig& l) {
  const CodegenOptions::Residency& r = options.balance_residency;
  if (r.sms <= 0 || r.smem_per_sm <= 0 || l.dynamic_smem_bytes == 0) return;
  // A cluster's blocks must be co-resident in one GPC: capping the blocks per SM could leave a
  // cluster nowhere to run.
  if (l.cluster != std::array<int64_t, 3>{1, 1, 1}) return;
  const int64_t blocks = l.grid[0] * l.grid[1] * l.grid[2];
  const int64_t cap = (blocks + r.sms - 1) / r.sms;
  const int64_t want = r.smem_per_sm / (cap + 1) - r.smem_reserved_per_block + 1;
  if (want <= l.dynamic_smem_bytes || want > options.max_dynamic_smem_bytes) return;
  l.residency_pad_bytes = want - l.dynamic_smem_bytes;
  l.dynamic_smem_bytes = want;
}

}  // namespace

bool HasAttentionKernel(const BlockProgram& program) {
  for (const auto& k : program.kernels) {
    if (k.is_block() && internal::ChooseTemplate(k.block()) == internal::Template::kAttention) {
      return true;
    }
  }
  return false;
}

bool HasLibraryMatmul(const BlockProgram& program) {
  for (const auto& k : program.kernels) {
    if (!k.is_block() && k.library().op == OpKind::kMatMul) return true;
  }
  return false;
}

const std::string& DeviceCommonSource() {
  static const std::string* const kText = new std::string(kDeviceCommonCuh);
  return *kText;
}

absl::StatusOr<GeneratedCode> GenerateCuda(const BlockProgram& original,
                                           const CodegenOptions& options) {
  if (options.library_matmul_split_blocks_per_sm != 1 &&
      options.library_matmul_split_blocks_per_sm != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen: library_matmul_split_blocks_per_sm is ",
                     options.library_matmul_split_blocks_per_sm, ", expected 1 or 2"));
  }
  // Batched matmuls are generated on the rank-2 view (SqueezeBatchDims): same memory, same
  // tensor indices; launch.json keeps the program's own shapes.
  const std::optional<BlockProgram> squeezed = internal::SqueezeBatchDims(original);
  const BlockProgram& program = squeezed.has_value() ? *squeezed : original;
  GeneratedCode out;
  std::string kernels;
  // cluster_combine: the first candidate pair's reason, reported when no pair is fused.
  std::string no_fusion;
  int fused_pairs = 0;
  for (int i = 0; i < static_cast<int>(program.kernels.size()); ++i) {
    if (!program.kernels[i].is_block()) {
      // Whole tensors: generated on the program's own shapes.
      LaunchConfig l;
      PRISM_ASSIGN_OR_RETURN(l, internal::GenerateLibraryKernel(original, i, options, kernels));
      out.launches.push_back(std::move(l));
      continue;
    }
    const internal::Template tmpl = internal::ChooseTemplate(program.kernels[i].block());
    // cluster_combine: the combine kernel after a split-KV attention or split-K GEMM kernel
    // is folded into it (MatchClusterCombine); the first refusal is kept for the error below.
    std::optional<internal::FusedCombine> fused;
    if (options.cluster_combine && tmpl != internal::Template::kPointwise &&
        i + 1 < static_cast<int>(program.kernels.size())) {
      absl::StatusOr<internal::FusedCombine> f = internal::MatchClusterCombine(program, i);
      if (f.ok()) {
        fused = std::move(*f);
      } else if (no_fusion.empty()) {
        no_fusion = std::string(f.status().message());
      }
    }
    const internal::FusedCombine* fp = fused.has_value() ? &*fused : nullptr;
    LaunchConfig l;
    switch (tmpl) {
      case internal::Template::kAttention: {
        PRISM_ASSIGN_OR_RETURN(l, internal::GenerateAttentionKernel(program, i, options, kernels, fp));
        break;
      }
      case internal::Template::kPointwise: {
        PRISM_ASSIGN_OR_RETURN(l, internal::GeneratePointwiseKernel(program, i, options, kernels));
        break;
      }
      case internal::Template::kGemm: {
        KernelGen gen(program, i, options, fp);
        PRISM_ASSIGN_OR_RETURN(l, gen.Generate(kernels));
        break;
      }
    }
    if (fp != nullptr) {
      ++fused_pairs;
      ++i;  // the combine kernel is part of this one
    }
    out.launches.push_back(std::move(l));
  }
  for (LaunchConfig& l : out.launches) {
    l.programmatic = options.programmatic_dependent_launch;
    BalanceResidency(options, l);
  }
  if (options.cluster_combine && fused_pairs == 0) {
    return absl::UnimplementedError(
        no_fusion.empty()
            ? absl::StrCat("codegen: cluster_combine: program ", program.name,
                           " has no split-KV attention or split-K GEMM kernel followed by a "
                           "combine kernel")
            : no_fusion);
  }
  absl::StrAppend(&out.source, "// Generated by prism codegen from block program '", program.name,
                  "'. Self-contained CUDA C++ (sm_80+).\n", DeviceCommonSource(), "\n", kernels);
  out.launch_json = LaunchJson(original, out.launches);
  out.host_header = HostHeader(original, out.launches);
  return out;
}

}  // namespace prism::codegen
