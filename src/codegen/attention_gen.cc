// The attention template (gen_util.h): the first kernel of a split-KV (flash-decoding)
// sGraph, with the block semantics of the `gqa` / `qknorm_gqa` fixtures:
//
//   Qt  = input Q   [Gt, Mq, D]   loop-invariant           (optionally Qn = rms(Qt, last))
//   Ktt = input Kt  [Gt, D, Lc]   forloop walks dim 2
//   Vt  = input V   [Gt, Lc, Dv]  forloop walks dim 1      (optionally Vn = rms(Vt, last))
//   S = matmul(Q, K);  E = exp(S);  N = acc_sum(matmul(E, V));  Dn = acc_sum_last(E)
//   outputs: N, Dn (each any number of times, f32 or f16 tensors)
//
// Generated code (flash-attention-2 style, exact block semantics):
//   - K and V tiles stream through an S-stage cp.async ring (rows padded by 16 bytes); the Q
//     tile is copied once and kept as mma A fragments in registers.
//   - each warp owns one m16 row tile of one head (tiles = Gt·⌈Mq/16⌉); extra warps split the
//     chunk's Lc columns (ws splits), fewer warps take several tiles each;
//   - S = Q·K on tensor cores (mma.sync m16n8k16, f32 accumulators);
//   - E = exp(S) is never formed in f16: the warp keeps a running row maximum m and works with
//     P = exp(S − m) ∈ (0, 1], rounded to f16 as the A operand of the second matmul, and
//     rescales its f32 accumulators by exp(m_old − m) when m grows. After the loop it stores the
//     partials in log-sum-exp form, N' = Σ P·V / Σ P and Dn' = m + log2 Σ P, when the program
//     reads them only as Σ N / Σ Dn (FindLsePairs, gen_util.h); otherwise it multiplies back by
//     exp(m), so the stored N = Σ exp(S)·V and Dn = Σ exp(S) are the block op's values (f32
//     rounding aside; they overflow f32 once S > 88.7) — exp(S) itself exceeds f16's range as
//     soon as S > 11;
//   - rms(Q, last) scales rows of S (S·inv_q, inv_q from the squares summed while the Q
//     fragments are loaded); rms(V, last) scales P's columns (P·inv_v before rounding, inv_v per
//     KV row, one extra barrier per iteration); Q and V stay exact f16 operands;
//   - after the loop the warps' partial sums (ws > 1) are added through shared memory (aliasing
//     the stages) and the block stores its tiles with coalesced stores;
//   - options: attention_tiles_per_warp = 2 (a warp's two tiles share each K/V fragment),
//     attention_pipeline (S of chunk i+1 issued before the softmax of chunk i; S ≥ 3),
//     attention_lazy_rescale (m moves only when a chunk exceeds it by more than 8, log2 units;
//     the rescale is a warp-uniform branch), attention_exp_f16x2 (P as ex2.approx.f16x2 of
//     f16-rounded arguments; Σ P as P times a ones fragment on the tensor cores).
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gen_util.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {

constexpr int64_t kPad = 8;  // f16 elements (16 bytes) of padding per shared row

// The name of WgmmaHelper(n, ss, h)'s function: WgmmaM64N<n>K16[SS][BF16].
std::string WgmmaName(int64_t n, bool ss, const Half16& h) {
  return absl::StrCat("WgmmaM64N", n, "K16", ss ? "SS" : "", h.dtype == DType::kBF16 ? "BF16" : "");
}

// The inline-PTX wrapper of wgmma.mma_async m64n<n>k16 with f32 accumulators, A (f16 or bf16,
// by `h`) from registers and B from shared memory by an MN-major descriptor (imm-trans-b = 1);
// `accumulate` 0 overwrites d. Guarded so that several kernels of one source share it.
// `ss`: A from shared memory too, by a K-major descriptor (imm-trans-a = 0):
// WgmmaM64N<n>K16SS(d, desc_a, desc_b, accumulate).
std::string WgmmaHelper(int64_t n, bool ss, const Half16& h) {
  const int64_t regs = n / 2;
  const int64_t in = ss ? 2 : 5;  // operands after the accumulators: A (1 or 4), B, accumulate
  const std::string name = WgmmaName(n, ss, h);
  const std::string guard = absl::StrCat("PRISM_WGMMA_M64N", n, "K16", ss ? "_SS" : "",
                                         h.dtype == DType::kBF16 ? "_BF16" : "");
  std::string s = absl::StrCat(
      "#ifndef ", guard, "\n#define ", guard,
      "\nnamespace prism_dev {\n__device__ __forceinline__ void ", name, "(float (&d)[", n / 8,
      "][4], ",
      ss ? "unsigned long long desc_a" : "const u32_t (&a)[4]",
      ", unsigned long long desc, int accumulate) {\n"
      "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %",
      regs + in, ", 0;\\nwgmma.mma_async.sync.aligned.m64n", n, "k16.f32.", h.ptx, ".", h.ptx,
      " {");
  for (int64_t i = 0; i < regs; ++i) absl::StrAppend(&s, i == 0 ? "" : ",", "%", i);
  if (ss) {
    absl::StrAppend(&s, "}, %", regs, ", %", regs + 1, ", p, 1, 1, 0, 1;\\n}\\n\"\n    : ");
  } else {
    absl::StrAppend(&s, "}, {%", regs, ",%", regs + 1, ",%", regs + 2, ",%", regs + 3, "}, %",
                    regs + 4, ", p, 1, 1, 1;\\n}\\n\"\n    : ");
  }
  for (int64_t i = 0; i < regs; ++i) {
    absl::StrAppend(&s, i == 0 ? "" : ", ", "\"+f\"(d[", i / 4, "][", i % 4, "])");
  }
  absl::StrAppend(&s,
                  ss ? "\n    : \"l\"(desc_a), "
                     : "\n    : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), ",
                  "\"l\"(desc), \"r\"(accumulate));\n}\n}  // namespace prism_dev\n#endif\n");
  return s;
}

class AttentionGen {
 public:
  AttentionGen(const BlockProgram& p, int kernel, const CodegenOptions& options,
               const FusedCombine* fused)
      : p_(p),
        k_(p.kernels[kernel].block()),
        kname_(p.kernels[kernel].name),
        options_(options),
        fused_(fused) {
    for (const LsePair& pair : FindLsePairs(p)) lse_ |= pair.producer == kernel;
  }

  absl::StatusOr<LaunchConfig> Generate(std::string& source);

 private:
  absl::Status Err(int op, absl::string_view what) const { return OpError(kname_, k_, op, what); }
  absl::Status KernelErr(absl::string_view what) const {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", kname_, ": ", what));
  }
  absl::Status Analyze();
  // The resident blocks per SM that __launch_bounds__ asks for (why: at its use in Generate).
  int64_t MinBlocks() const {
    return wgmma_ ? (!pipeline_ && lw_ <= 64 && k_.threads == 256 ? 2 : 1)
                  : (tpw_ == 1 && lw_ <= 32 ? std::max<int64_t>(1, 512 / k_.threads) : 1);
  }
  // Pointer to head h's [rows, cols] slice of a rank-3 input tile (global memory).
  std::string SlicePtr(int op, const std::string& h, bool with_loop) const;
  // The address of element (h, r, c) of output op `out`'s tile: in the tensor (global memory),
  // or in the fused region (cluster_combine).
  std::string OutAddr(int out, const std::string& h, const std::string& r,
                      const std::string& c) const;

  const BlockProgram& p_;
  const Half16* h_ = nullptr;  // the inputs' 16-bit format (Analyze)
  const ConcreteBlockGraph& k_;
  std::string kname_;
  const CodegenOptions& options_;
  // cluster_combine: the combine kernel folded in; its partial tiles are kept in shared memory
  // at fused_off_ (tile-local row-major, FusedCombine::offset) instead of being stored.
  const FusedCombine* fused_ = nullptr;
  int64_t fused_off_ = 0;

  int q_ = -1, k_in_ = -1, v_ = -1;  // input ops
  int rms_q_ = -1, rms_v_ = -1;      // rms ops (or -1)
  int s_ = -1, e_ = -1, ev_ = -1;    // S = Q·K, E = exp(S), EV = E·V
  // E = exp(scale(S, c)): the scale op and c (folded into the scores' log2(e) factor).
  int sc_op_ = -1;
  double score_scale_ = 1.0;
  std::vector<int> num_accs_, den_accs_;
  std::vector<int> outputs_;
  int64_t gt_ = 0, mq_ = 0, d_ = 0, lc_ = 0, dv_ = 0;
  int warps_ = 0, mph_ = 0, tiles_ = 0, groups_ = 0, ws_ = 1, tpw_ = 1;
  int64_t lw_ = 0;
  bool pipeline_ = false;  // CodegenOptions::attention_pipeline
  bool lazy_ = false;      // CodegenOptions::attention_lazy_rescale
  bool exp16_ = false;     // CodegenOptions::attention_exp_f16x2
  bool wgmma_ = false;     // CodegenOptions::attention_wgmma
  bool late_loads_ = false;  // CodegenOptions::attention_wgmma_late_loads
  bool split_pv_ = false;    // CodegenOptions::attention_wgmma_split_pv
  // The partials are stored in log-sum-exp form (FindLsePairs): N / Dn and log2 Dn.
  bool lse_ = false;
};

absl::Status AttentionGen::Analyze() {
  if (k_.threads % 32 != 0 || k_.threads < 32 || k_.threads > 1024) {
    return KernelErr(
        absl::StrCat("threads ", k_.threads, " is not a multiple of 32 in [32, 1024]"));
  }
  warps_ = static_cast<int>(k_.threads / 32);
  PRISM_ASSIGN_OR_RETURN(h_, KernelHalf16(p_, k_, kname_));
  const int n = static_cast<int>(k_.ops.size());
  const std::vector<int> uses = UseCounts(k_);
  // The S = Q·K matmul whose result is exponentiated.
  for (int i = 0; i < n; ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.kind != BlockOpKind::kUnary || op.fn != OpKind::kExp || op.phase != Phase::kLoop) {
      continue;
    }
    int x = op.operands[0], scale = -1;
    if (k_.ops[x].kind == BlockOpKind::kUnary && k_.ops[x].fn == OpKind::kScale) {
      scale = x;
      x = k_.ops[x].operands[0];
    }
    if (k_.ops[x].kind != BlockOpKind::kMatMul) continue;
    if (e_ != -1) return Err(i, "the attention template takes one exponentiated score tile");
    e_ = i;
    s_ = x;
    sc_op_ = scale;
  }
  if (e_ == -1) return KernelErr("no exp(matmul) inside the forloop (not an attention kernel)");
  if (uses[s_] != 1) return Err(s_, "the score tile may only be exponentiated");
  if (sc_op_ != -1) {
    // The scores' factor log2(e) becomes c·log2(e): the row maxima are taken of the raw
    // scores and then multiplied by it, which is the max of the scaled scores only for c > 0.
    score_scale_ = k_.ops[sc_op_].scalar;
    if (uses[sc_op_] != 1) return Err(sc_op_, "the scaled score tile may only be exponentiated");
    if (!(score_scale_ > 0)) {
      return Err(sc_op_, absl::StrCat("the score scale must be positive, found ", score_scale_));
    }
  }
  auto unwrap_rms = [&](int x, int& rms) -> int {
    if (k_.ops[x].kind == BlockOpKind::kRms) {
      rms = x;
      return k_.ops[x].operands[0];
    }
    return x;
  };
  q_ = unwrap_rms(k_.ops[s_].operands[0], rms_q_);
  k_in_ = k_.ops[s_].operands[1];
  for (int i = 0; i < n; ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    switch (op.kind) {
      case BlockOpKind::kInput:
      case BlockOpKind::kRms:
      case BlockOpKind::kOutput:
        break;
      case BlockOpKind::kMatMul:
        if (i == s_) break;
        if (op.operands[0] != e_ || ev_ != -1) {
          return Err(i, "the attention template takes S = Q·K and one E·V matmul, E = exp(S)");
        }
        ev_ = i;
        v_ = unwrap_rms(op.operands[1], rms_v_);
        break;
      case BlockOpKind::kUnary:
        if (i != e_ && i != sc_op_) {
          return Err(i, "elementwise ops other than exp(S) (or exp(scale(S, c))) are not "
                        "supported here");
        }
        break;
      case BlockOpKind::kAccSum:
        if (op.operands[0] != ev_) return Err(i, "acc_sum is supported only of E·V");
        num_accs_.push_back(i);
        break;
      case BlockOpKind::kAccSumLast:
        if (op.operands[0] != e_) return Err(i, "acc_sum_last is supported only of E = exp(S)");
        den_accs_.push_back(i);
        break;
      default:
        return Err(i, "this block op is not supported by the attention template");
    }
  }
  if (ev_ == -1) return Err(e_, "exp(S) must feed a matmul E·V");
  if (uses[ev_] != static_cast<int>(num_accs_.size())) {
    return Err(ev_, "E·V may only be accumulated by acc_sum");
  }
  for (int i = 0; i < n; ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.kind == BlockOpKind::kInput) {
      if (i != q_ && i != k_in_ && i != v_) return Err(i, "unexpected input for attention");
      const ConcreteTensor& t = p_.tensors[op.tensor];
      if (t.shape.size() != 3 || op.tile.size() != 3) {
        return Err(i, "the attention template takes rank-3 [heads, rows, cols] tiles");
      }
      if (op.walks_groups) return Err(i, "forloops over partial-result groups are not supported");
      if (op.tile[2] % 8 != 0 || t.shape[2] % 8 != 0) {
        return Err(i, "tile rows must be whole 16-byte chunks (columns a multiple of 8)");
      }
    }
    if (op.kind == BlockOpKind::kRms) {
      if (i != rms_q_ && i != rms_v_) return Err(i, "rms is supported only of the Q or V tile");
      if (op.dim != static_cast<int>(op.tile.size()) - 1) {
        return Err(i, "rms is supported only over the last dim");
      }
      if (uses[i] != 1) return Err(i, "the rms tile may only feed its matmul");
    }
    if (op.kind == BlockOpKind::kOutput) {
      const int x = op.operands[0];
      const bool ok = std::count(num_accs_.begin(), num_accs_.end(), x) > 0 ||
                      std::count(den_accs_.begin(), den_accs_.end(), x) > 0;
      if (!ok) return Err(i, "the attention template stores only acc_sum(E·V) and acc_sum_last(E)");
      const ConcreteTensor& t = p_.tensors[op.tensor];
      if (Half16Of(t.dtype) == nullptr && t.dtype != DType::kF32) {
        return Err(i, "only f16, bf16 and f32 outputs are supported");
      }
      if (t.shape.size() != 3 || op.tile.size() != 3) return Err(i, "only rank-3 tiles");
      outputs_.push_back(i);
    }
  }
  if (outputs_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname_, " has no output"));
  }
  const ConcreteBlockOp& q = k_.ops[q_];
  const ConcreteBlockOp& kk = k_.ops[k_in_];
  const ConcreteBlockOp& v = k_.ops[v_];
  if (q.kind != BlockOpKind::kInput || q.phase != Phase::kInvariant) {
    return Err(s_, "the Q operand must be a loop-invariant input tile (or its rms)");
  }
  if (kk.kind != BlockOpKind::kInput || kk.phase != Phase::kLoop) {
    return Err(s_, "the K operand must be a loop input tile");
  }
  if (v.kind != BlockOpKind::kInput || v.phase != Phase::kLoop) {
    return Err(ev_, "the V operand must be a loop input tile (or its rms)");
  }
  if (q.tile[0] != kk.tile[0] || q.tile[0] != v.tile[0]) {
    return Err(s_, "Q, K and V tiles must hold the same heads (no batch broadcast)");
  }
  gt_ = q.tile[0];
  mq_ = q.tile[1];
  d_ = q.tile[2];
  lc_ = kk.tile[2];
  dv_ = v.tile[2];
  if (d_ % 16 != 0) return Err(s_, "the contraction (head) dim must be a multiple of 16");
  if (dv_ % 16 != 0) return Err(ev_, "the V tile's columns must be a multiple of 16");
  mph_ = static_cast<int>((mq_ + 15) / 16);
  tiles_ = static_cast<int>(gt_) * mph_;
  // Row tiles per warp: 1 by default when there are at least as many warps as tiles (extra
  // warps split the chunk's columns), else tiles / warps; options can ask for 2 (the warp's
  // two tiles share every K and V fragment loaded from shared memory).
  const int want = options_.attention_tiles_per_warp;
  if (want != 0 && want != 1 && want != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen: attention_tiles_per_warp is ", want, ", expected 0 (auto), 1 or 2"));
  }
  tpw_ = want != 0 ? want : (warps_ >= tiles_ ? 1 : tiles_ / warps_);
  wgmma_ = options_.attention_wgmma;
  if (wgmma_) {
    // One warpgroup per 64-row tile of one head: warp w holds m16 tile w mod tiles, so the 4
    // warps of a warpgroup hold 4 consecutive tiles of one head and share the column split.
    if (want == 2) {
      return KernelErr("attention_wgmma: one m16 row tile per warp (attention_tiles_per_warp 2)");
    }
    if (mq_ % 64 != 0) {
      return KernelErr(absl::StrCat("attention_wgmma: ", mq_,
                                    " query rows per head are not a multiple of 64 (one "
                                    "warpgroup tile)"));
    }
    if (warps_ % tiles_ != 0) {
      return KernelErr(absl::StrCat("attention_wgmma: ", warps_,
                                    " warps are not a multiple of 4 per 64-row tile (",
                                    tiles_ / 4, " tile(s))"));
    }
    tpw_ = 1;
  }
  if (tpw_ > 2 || tiles_ % tpw_ != 0 || (tpw_ > 1 && mph_ % tpw_ != 0)) {
    return KernelErr(absl::StrCat(tiles_, " m16 row tiles (", mph_, " per head) over ", warps_,
                                  " warps: expected 1 or 2 tiles of one head per warp"));
  }
  groups_ = tiles_ / tpw_;
  if (warps_ % groups_ != 0) {
    return KernelErr(absl::StrCat(warps_, " warps do not divide evenly over ", groups_,
                                  " groups of ", tpw_, " m16 row tile(s)"));
  }
  ws_ = warps_ / groups_;
  pipeline_ = options_.attention_pipeline;
  lazy_ = options_.attention_lazy_rescale;
  exp16_ = options_.attention_exp_f16x2;
  if (exp16_ && h_->dtype != DType::kF16) {
    return KernelErr(absl::StrCat("attention_exp_f16x2: the inputs are ", h_->ptx,
                                  "; the f16x2 exponential needs f16 (P is rounded to the "
                                  "inputs' format)"));
  }
  if (pipeline_ && k_.stages < 3) {
    return KernelErr(
        absl::StrCat("the software-pipelined attention loop needs at least 3 "
                     "stages, found ",
                     k_.stages));
  }
  lw_ = lc_ / ws_;
  if (lc_ % ws_ != 0 || lw_ % 16 != 0) {
    return Err(s_, absl::StrCat("the KV chunk (", lc_, " columns) split over ", ws_,
                                " warps must give multiples of 16 columns"));
  }
  if (wgmma_) {
    if (lw_ % 64 != 0 || lw_ > 256) {
      return Err(s_, absl::StrCat("attention_wgmma: the warpgroup's KV columns (", lc_, " / ",
                                  ws_, " = ", lw_, ") must be a multiple of 64, at most 256"));
    }
    if (d_ % 64 != 0) {
      return Err(s_, absl::StrCat("attention_wgmma: the head dim ", d_,
                                 " must be a multiple of 64 (whole 128-byte rows of Q)"));
    }
    if (dv_ % 64 != 0 || dv_ > 256) {
      return Err(ev_, absl::StrCat("attention_wgmma: the V tile's ", dv_,
                                   " columns must be a multiple of 64, at most 256"));
    }
    // The score wgmma (m64, n = the warpgroup's KV columns) holds its lw/2 f32 accumulators
    // per thread in one instruction, with about 26 other registers live beside it: ptxas
    // asked for 154 at lw 256 and refused the 128 that __launch_bounds__(512, 1) leaves
    // ("Insufficient registers"; 12 candidates of every attention row failed in NVRTC on
    // 2026-12-06). Below that, ptxas spills rather than fails (lw 128 at 128 registers).
    const int64_t need = lw_ / 2 + 26;
    const int64_t cap = std::min<int64_t>(255, 65536 / (k_.threads * MinBlocks()));
    if (need > cap) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "codegen: kernel ", kname_, ": attention_wgmma: the score wgmma's 64 x ", lw_,
          " accumulator needs at least ", need, " registers per thread, over the ", cap,
          " that ", k_.threads, " threads and ", MinBlocks(),
          " resident block(s) leave; use fewer threads or a shorter KV chunk"));
    }
  }
  late_loads_ = options_.attention_wgmma_late_loads;
  split_pv_ = options_.attention_wgmma_split_pv;
  for (const auto& [on, name] : {std::pair{late_loads_, "attention_wgmma_late_loads"},
                                 std::pair{split_pv_, "attention_wgmma_split_pv"}}) {
    if (on && (!wgmma_ || pipeline_)) {
      return KernelErr(absl::StrCat(name, " needs attention_wgmma without attention_pipeline"));
    }
  }
  if (late_loads_ && k_.stages < 2) {
    return KernelErr("attention_wgmma_late_loads needs at least 2 stages (with one, the chunk's "
                     "own load comes first)");
  }
  if (split_pv_ && exp16_) {
    return KernelErr("attention_wgmma_split_pv and attention_exp_f16x2 cannot be combined");
  }
  return absl::OkStatus();
}

std::string AttentionGen::SlicePtr(int i, const std::string& h, bool with_loop) const {
  const ConcreteBlockOp& op = k_.ops[i];
  const ConcreteTensor& t = p_.tensors[op.tensor];
  return absl::StrCat(ParamName(p_, op.tensor), " + ((", TileOrigin(k_, i, 0, with_loop), " + ", h,
                      ") * ", t.shape[1], "LL + ", TileOrigin(k_, i, 1, with_loop), ") * ",
                      t.shape[2], "LL + ", TileOrigin(k_, i, 2, with_loop));
}

absl::StatusOr<LaunchConfig> AttentionGen::Generate(std::string& source) {
  PRISM_RETURN_IF_ERROR(Analyze());
  LaunchConfig launch;
  launch.kernel = kname_;
  launch.function =
      absl::StrCat("prism_", Ident(p_.name), "_", Ident(kname_), options_.name_suffix);
  launch.grid = k_.grid;
  launch.threads = k_.threads;
  std::string params;
  std::string tail;  // the folded combine kernel (cluster_combine)
  if (fused_ != nullptr) {
    const ConcreteBlockGraph& c = p_.kernels[fused_->combine].block();
    std::set<int> keep;
    for (const auto& [t, o] : fused_->tensors) keep.insert(t);
    PRISM_RETURN_IF_ERROR(KernelParams(p_, {&k_, &c}, keep, kname_, launch, params));
    launch.kernel = absl::StrCat(kname_, "+", p_.kernels[fused_->combine].name);
    launch.cluster = fused_->ClusterDims();
  } else {
    PRISM_RETURN_IF_ERROR(KernelParams(p_, k_, kname_, launch, params));
  }

  const int64_t stages = std::max<int64_t>(1, k_.stages);
  // wgmma: K and V unpadded in the 128-byte-swizzled layout (LoadTileSw128Async), the stages
  // 1024-byte aligned (the swizzle atom).
  const int64_t qpitch = wgmma_ ? d_ : d_ + kPad, kpitch = wgmma_ ? lc_ : lc_ + kPad,
                vpitch = wgmma_ ? dv_ : dv_ + kPad;
  const int64_t q_bytes = gt_ * mq_ * qpitch * 2;
  const int64_t vinv_off = q_bytes;
  const int64_t vinv_bytes = rms_v_ >= 0 ? (pipeline_ ? 2 : 1) * gt_ * lc_ * 4 : 0;
  const int64_t stage_off =
      wgmma_ ? (vinv_off + vinv_bytes + 1023) / 1024 * 1024 : vinv_off + vinv_bytes;
  const int64_t k_head = d_ * kpitch * 2, v_head = lc_ * vpitch * 2;
  const int64_t v_off = gt_ * k_head;
  launch.stage_bytes = gt_ * (k_head + v_head);
  const int64_t rows = static_cast<int64_t>(tiles_) * 16;
  // The reduction rows are padded by 8 floats: the fragment writes (rows g = lane/4 at a pitch
  // of Dv + 8 words) then fall in distinct banks within each half-warp.
  const int64_t rpitch = dv_ + 8;
  const int64_t red_l_off = ws_ * rows * rpitch * 4;
  // One warp per row tile along the chunk (ws = 1): no cross-warp sum, so every thread stores
  // its accumulator fragments straight to global memory (float2 / f16 pairs at even columns),
  // without the shared round trip and its barrier.
  bool direct = ws_ == 1;
  for (int out : outputs_) {
    if (p_.tensors[k_.ops[out].tensor].shape[2] % 2 != 0) direct = false;
    // Kept tiles: the float2 stores of N need even rows (Dn's are single floats).
    if (fused_ != nullptr && k_.ops[out].tile[2] % 2 != 0 &&
        std::count(num_accs_.begin(), num_accs_.end(), k_.ops[out].operands[0]) > 0) {
      direct = false;
    }
  }
  // Σ P per warp and row, and with lse_ each warp's running max m per row.
  launch.reduction_bytes = direct ? 0 : red_l_off + (lse_ ? 2 : 1) * ws_ * rows * 4;
  // The fused region follows the reduction buffer (both alias the stages; in the direct form
  // a barrier before the tile writes makes every warp finish with the stages first).
  fused_off_ = stage_off + (launch.reduction_bytes + 15) / 16 * 16;
  launch.dynamic_smem_bytes =
      stage_off +
      std::max(stages * launch.stage_bytes, fused_ != nullptr
                                                ? fused_off_ - stage_off + fused_->bytes
                                                : launch.reduction_bytes) +
      (wgmma_ ? 1024 : 0);  // wgmma: room to align the buffer's start to 1024 bytes
  if (fused_ != nullptr) {
    PRISM_ASSIGN_OR_RETURN(tail, GenerateCombineTail(p_, *fused_, k_.threads,
                                                     absl::StrCat("smem + ", fused_off_), options_));
  }
  if (launch.dynamic_smem_bytes > options_.max_dynamic_smem_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("codegen: kernel ", kname_, " needs ", launch.dynamic_smem_bytes,
                     " bytes of shared memory (Q tile ", q_bytes, " B, ", stages, " stages of ",
                     launch.stage_bytes, " B, reduction buffer ", launch.reduction_bytes,
                     " B), over the limit of ", options_.max_dynamic_smem_bytes));
  }
  const int64_t nl = lw_ / 8;  // n8 score tiles per warp
  launch.accumulator_regs =
      tpw_ * (dv_ / 8 * 4 + (exp16_ ? 6 : 4) + nl * 4 * (pipeline_ ? 2 : 1));

  const ConcreteTensor& kt = p_.tensors[k_.ops[k_in_].tensor];
  const ConcreteTensor& vt = p_.tensors[k_.ops[v_].tensor];
  const ConcreteTensor& qt = p_.tensors[k_.ops[q_].tensor];
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname_, ": grid (", k_.grid[0], ", ", k_.grid[1], ", ",
                  k_.grid[2], "), ", k_.threads, " threads, forloop ", k_.forloop, ", ", stages,
                  " stage(s); attention template: ", gt_, " head(s) x ", mq_, " rows, D ", d_,
                  ", KV chunk ", lc_, ", Dv ", dv_, "; ", tiles_, " m16 tile(s), ", tpw_,
                  " per warp, ", ws_, " warp(s) per tile along the chunk",
                  rms_q_ >= 0 ? "; rms(Q) as row scale" : "",
                  rms_v_ >= 0 ? "; rms(V) as P column scale" : "",
                  wgmma_ ? "; wgmma: one warpgroup per 64-row tile, K and V by descriptor" : "",
                  "\n");
  if (wgmma_) {
    absl::StrAppend(&s,
                    "#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#error \"",
                    launch.function, ": attention_wgmma kernels need sm_90a (wgmma)\"\n#endif\n");
    absl::StrAppend(&s, WgmmaHelper(lw_, true, *h_), WgmmaHelper(dv_, false, *h_));
  }
  // Occupancy: with one row tile per warp and at most 32 score columns per warp the live
  // state fits in 128 registers without spills (NVRTC 13, sm_80/sm_90; 64 columns spill), so
  // ask for 65536 / (T · 128) resident blocks (16 warps per SM); else leave it to ptxas.
  // wgmma with two warpgroups and 64-column chunks: two resident blocks (≤ 128 registers, no
  // spills) measured 20.6 µs against 25.9 with one (gqa b=8, x16 y2 z8 F8 S2, 2026-12-02);
  // with one warpgroup, four blocks were no faster.
  const int64_t min_blocks = MinBlocks();
  if (fused_ != nullptr) {
    absl::StrAppend(&s, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n#error \"",
                    launch.function,
                    ": cluster_combine kernels need sm_90 or newer (thread block clusters)\"\n"
                    "#endif\n// launched as clusters of (1, 1, ",
                    fused_->cluster, ") blocks; kernel ", p_.kernels[fused_->combine].name,
                    " folded in\n");
  }
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", k_.threads, ", ",
                  min_blocks, ") ", launch.function, "(", params, ") {\n");
  absl::StrAppend(&s, "  using namespace prism_dev;\n");
  absl::StrAppend(&s, KernelPrologue(options_));
  if (wgmma_) {
    absl::StrAppend(&s,
                    "  extern __shared__ __align__(1024) unsigned char smem_raw[];\n"
                    "  unsigned char* smem = smem_raw + ((1024u - (static_cast<u32_t>("
                    "__cvta_generic_to_shared(smem_raw)) & 1023u)) & 1023u);\n");
  } else {
    absl::StrAppend(&s, "  extern __shared__ __align__(16) unsigned char smem[];\n");
  }
  absl::StrAppend(&s, "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n");
  absl::StrAppend(&s, "  const int g = lane >> 2, t4 = lane & 3;\n");
  // The scores' factor: log2(e), times the score scale c of exp(scale(S, c)).
  absl::StrAppend(&s, "  constexpr float kLog2e = ",
                  score_scale_ == 1.0 ? std::string("1.4426950408889634f")
                                      : absl::StrCat(FloatLit(1.4426950408889634 * score_scale_),
                                                     ";  // log2(e) · the score scale ",
                                                     FloatLit(score_scale_)),
                  score_scale_ == 1.0 ? ";\n" : "\n");
  absl::StrAppend(&s, "  constexpr int kStages = ", stages, ", kF = ", k_.forloop, ";\n");
  if (!wgmma_) {
    absl::StrAppend(&s, "  ", h_->type, "* qs = reinterpret_cast<", h_->type, "*>(smem);\n");
  }
  if (rms_v_ >= 0) {
    absl::StrAppend(&s, "  float* vinv = reinterpret_cast<float*>(smem + ", vinv_off,
                    ");  // rms(V) factor per KV row of the current chunk\n");
  }
  // Q tile, once (its own cp.async group, committed before the K/V prologue).
  absl::StrAppend(&s, "#pragma unroll 1\n  for (int h = 0; h < ", gt_, "; ++h) {  // ",
                  OpLabel(k_, q_), "\n");
  if (wgmma_) {  // swizzled, K-major: the A operand of the score wgmma, by descriptor
    absl::StrAppend(&s, "    LoadTileSw128Async<", mq_, ", ", d_, ", ", k_.threads,
                    ">(smem + h * ", mq_ * qpitch * 2, ", ", SlicePtr(q_, "h", false), ", ",
                    qt.shape[2], "LL, tid);\n  }\n  CpAsyncCommit();\n");
  } else {
    absl::StrAppend(&s, "    LoadTileAsync<", mq_, ", ", d_, ", ", k_.threads, ">(qs + h * ",
                    mq_ * qpitch, ", ", qpitch, ", ", SlicePtr(q_, "h", false), ", ",
                    qt.shape[2], "LL, tid);\n  }\n  CpAsyncCommit();\n");
  }
  // K/V stage loads.
  absl::StrAppend(&s, "  auto load_stage = [&](int it, int stage) {\n");
  absl::StrAppend(&s, "    unsigned char* base = smem + ", stage_off, " + stage * ",
                  launch.stage_bytes, ";\n");
  absl::StrAppend(&s, "#pragma unroll 1\n    for (int h = 0; h < ", gt_, "; ++h) {\n");
  if (wgmma_) {
    absl::StrAppend(&s, "      LoadTileSw128Async<", d_, ", ", lc_, ", ", k_.threads,
                    ">(base + h * ", k_head, ", ", SlicePtr(k_in_, "h", true), ", ", kt.shape[2],
                    "LL, tid);  // ", OpLabel(k_, k_in_), "\n");
    absl::StrAppend(&s, "      LoadTileSw128Async<", lc_, ", ", dv_, ", ", k_.threads,
                    ">(base + ", v_off, " + h * ", v_head, ", ", SlicePtr(v_, "h", true), ", ",
                    vt.shape[2], "LL, tid);  // ", OpLabel(k_, v_), "\n");
  } else {
    absl::StrAppend(&s, "      LoadTileAsync<", d_, ", ", lc_, ", ", k_.threads,
                    ">(reinterpret_cast<", h_->type, "*>(base + h * ", k_head, "), ", kpitch, ", ",
                    SlicePtr(k_in_, "h", true), ", ", kt.shape[2], "LL, tid);  // ",
                    OpLabel(k_, k_in_), "\n");
    absl::StrAppend(&s, "      LoadTileAsync<", lc_, ", ", dv_, ", ", k_.threads,
                    ">(reinterpret_cast<", h_->type, "*>(base + ", v_off, " + h * ", v_head, "), ",
                    vpitch, ", ", SlicePtr(v_, "h", true), ", ", vt.shape[2], "LL, tid);  // ",
                    OpLabel(k_, v_), "\n");
  }
  absl::StrAppend(&s, "    }\n  };\n");
  // Warp → (tile, column split).
  absl::StrAppend(&s, "  const int grp = warp % ", groups_, ", kv = warp / ", groups_,
                  ";  // row tiles grp·", tpw_, " + tp, one head\n");
  absl::StrAppend(&s, "  const int tile0 = grp * ", tpw_, ", wh = tile0 / ", mph_,
                  ";  // wh: the warp's head\n");
  absl::StrAppend(&s, "  const int col0 = kv * ", lw_, ";  // this warp's columns of the chunk\n");
  if (!wgmma_) {
    absl::StrAppend(&s, "  u32_t qf[", tpw_, "][", d_ / 16, "][4];  // Q A fragments\n");
  }
  absl::StrAppend(&s, "  float o[", tpw_, "][", dv_ / 8,
                  "][4] = {};  // Σ P·V (scaled by exp(-m))\n");
  if (exp16_) {
    absl::StrAppend(&s, "  float m_lo[", tpw_, "], m_hi[", tpw_, "], lacc[", tpw_,
                    "][4] = {};  // running row max; Σ P (P·ones: every column a row sum)\n");
    absl::StrAppend(&s, "  const u32_t ones[2] = {0x3c003c00u, 0x3c003c00u};  // f16 1.0 pairs\n");
  } else {
    absl::StrAppend(&s, "  float m_lo[", tpw_, "], m_hi[", tpw_, "], l_lo[", tpw_,
                    "] = {}, l_hi[", tpw_, "] = {};  // running row max, Σ P\n");
  }
  absl::StrAppend(&s, "  float qsc_lo[", tpw_, "], qsc_hi[", tpw_,
                  "];  // log2(e) · rms(Q) row factor\n");
  absl::StrAppend(&s, "#pragma unroll\n  for (int tp = 0; tp < ", tpw_,
                  "; ++tp) { m_lo[tp] = m_hi[tp] = -__int_as_float(0x7f800000); qsc_lo[tp] = "
                  "qsc_hi[tp] = kLog2e; }\n");
  // Pieces of the loop body (emitted once or twice below).
  // Q fragments and rms(Q)'s row factors, once the Q group has landed.
  std::string qfrag;
  if (wgmma_) {  // Q stays in shared memory; rms(Q)'s factors from its swizzled rows
    if (rms_q_ >= 0) {
      const ConcreteBlockOp& r = k_.ops[rms_q_];
      const int64_t part = d_ / 4;  // the columns of each of the quad's 4 threads
      absl::StrAppend(&qfrag, "      {  // ", OpLabel(k_, rms_q_),
                      ": S rows scaled by 1/sqrt(mean(q²) + eps)\n");
      absl::StrAppend(&qfrag, "        const unsigned char* qh = smem + wh * ", mq_ * d_ * 2,
                      ";\n        const int r_lo = (tile0 % ", mph_, ") * 16 + g;\n");
      const char* bf_arg = h_->dtype == DType::kBF16 ? "<true>" : "";
      absl::StrAppend(&qfrag, "        const float ssl = SumSqRowSw128", bf_arg, "(qh, ", mq_, ", r_lo, t4 * ",
                      part, ", ", part, "), ssh = SumSqRowSw128", bf_arg, "(qh, ", mq_, ", r_lo + 8, t4 * ",
                      part, ", ", part, ");\n");
      for (const char* half : {"lo", "hi"}) {
        absl::StrAppend(&qfrag, "        qsc_", half, "[0] = kLog2e / sqrtf(QuadSum(ss",
                        half[0] == 'l' ? "l" : "h", ") / ", FloatLit(static_cast<double>(d_)),
                        " + ", FloatLit(r.eps), ");\n");
      }
      absl::StrAppend(&qfrag, "      }\n");
    }
  } else {
  absl::StrAppend(&qfrag, "#pragma unroll\n      for (int tp = 0; tp < ", tpw_, "; ++tp) {\n");
  absl::StrAppend(&qfrag, "        const int m0 = ((tile0 + tp) % ", mph_, ") * 16;\n");
  absl::StrAppend(&qfrag, "        float ssl = 0.f, ssh = 0.f;\n");
  absl::StrAppend(&qfrag, "#pragma unroll\n        for (int kc = 0; kc < ", d_ / 16,
                  "; ++kc) LoadAFragment<", rms_q_ >= 0 ? "true" : "false",
                  h_->dtype == DType::kBF16 ? ", true" : "", ">(qf[tp][kc], qs + wh * ", mq_ * qpitch, ", ", qpitch, ", ", mq_,
                  ", m0, kc * 16, lane, ssl, ssh);\n");
  if (rms_q_ >= 0) {
    const ConcreteBlockOp& r = k_.ops[rms_q_];
    absl::StrAppend(&qfrag, "        // ", OpLabel(k_, rms_q_),
                    ": S rows scaled by 1/sqrt(mean(q²) + eps)\n");
    absl::StrAppend(&qfrag, "        qsc_lo[tp] = kLog2e / sqrtf(QuadSum(ssl) / ",
                    FloatLit(static_cast<double>(d_)), " + ", FloatLit(r.eps), ");\n");
    absl::StrAppend(&qfrag, "        qsc_hi[tp] = kLog2e / sqrtf(QuadSum(ssh) / ",
                    FloatLit(static_cast<double>(d_)), " + ", FloatLit(r.eps), ");\n");
  } else {
    absl::StrAppend(&qfrag, "        (void)ssl; (void)ssh;\n");
  }
  absl::StrAppend(&qfrag, "      }\n");
  }
  // rms(V)'s factor per KV row of the stage at `b` into `dst`, 16-byte reads (conflict-free
  // with the padded pitch). With fewer rows than threads, four (or two) threads share a row
  // when Dv allows (a quarter or half of the row each, summed by shuffles within the group;
  // every thread runs the same trips, so the shuffles see whole warps): the factors are ready
  // sooner, the idle threads did nothing before. Else one thread per row.
  // The pipelined loop computes the next chunk's factors off the critical path and has no
  // registers to spare (`shared_rows` false: one thread per row there).
  auto vinv_code = [&](const std::string& b, const std::string& dst, bool shared_rows) {
    std::string c;
    if (rms_v_ < 0) return c;
    const ConcreteBlockOp& r = k_.ops[rms_v_];
    const int64_t rows = gt_ * lc_;
    int64_t lanes = 1;  // threads per row
    for (int64_t k : {4, 2}) {
      if (shared_rows && lanes == 1 && rows * k <= k_.threads && dv_ % (8 * k) == 0) lanes = k;
    }
    const bool quad = lanes > 1;
    const int64_t items = lanes * rows, cols = dv_ / lanes;
    // wgmma: `row` is the head's swizzled V tile and the row's chunks are found by Sw128Offset.
    const std::string row_ptr =
        wgmma_ ? absl::StrCat("reinterpret_cast<const ", h_->type, "*>(", b, " + ", v_off, " + (r / ", lc_,
                              ") * ", v_head, ")")
               : absl::StrCat("reinterpret_cast<const ", h_->type, "*>(", b, " + ", v_off, ") + (r / ",
                              lc_, ") * ", lc_ * vpitch, " + (r % ", lc_, ") * ", vpitch,
                              quad ? absl::StrCat(" + part * ", cols) : "");
    const std::string chunk =
        wgmma_ ? absl::StrCat("reinterpret_cast<const unsigned char*>(row) + Sw128Offset(", lc_,
                              ", r % ", lc_, ", ", quad ? absl::StrCat("part * ", cols, " + ") : "",
                              "c)")
               : "row + c";
    // Off the pipelined loop, four accumulators (one per 32-bit word of a 16-byte chunk): there
    // the loop runs while the score wgmma is in flight but takes about four times as long (ncu
    // source counters), so its dependency chain is the kernel's. With rsqrtf this took
    // qknorm_gqa b=1 6.95 → 6.79 µs and b=8 20.16 → 19.87 on the H200 (docs/performance.md,
    // 2026-12-04 afternoon run 7). The pipelined loop keeps one accumulator and the IEEE form: its
    // mma.sync kernels sit at 255 registers, and either change made qknorm_gqa b=8 T256 S4 spill
    // (924 and 1,036 bytes; codegen_nvrtc_test).
    const bool chains = shared_rows;
    const std::string sum = absl::StrCat(
        chains ? "        float sq[4] = {};\n" : "", "#pragma unroll\n        for (int c = 0; c < ",
        cols, "; c += 8) {\n          const uint4 w = *reinterpret_cast<const uint4*>(", chunk,
        ");\n"
        "          const u32_t ws4[4] = {w.x, w.y, w.z, w.w};\n"
        "#pragma unroll\n          for (int j = 0; j < 4; ++j) {\n"
        "            const float a = ", h_->to_f32, "(ws4[j] & 0xffff), b = ", h_->to_f32,
        "(ws4[j] >> 16);\n",
        chains ? "            sq[j] = fmaf(a, a, sq[j]);\n            sq[j] = fmaf(b, b, sq[j]);\n"
               : "            ss = fmaf(a, a, ss);\n            ss = fmaf(b, b, ss);\n",
        "          }\n        }\n", chains ? "        ss = (sq[0] + sq[1]) + (sq[2] + sq[3]);\n" : "");
    const std::string factor =
        chains ? absl::StrCat("rsqrtf(ss * ", FloatLit(1.0 / static_cast<double>(dv_)), " + ",
                              FloatLit(r.eps), ")")
               : absl::StrCat("1.0f / sqrtf(ss / ", FloatLit(static_cast<double>(dv_)), " + ",
                              FloatLit(r.eps), ")");
    if (quad) {
      const bool partial = items % k_.threads != 0;
      absl::StrAppend(&c, "    // ", OpLabel(k_, rms_v_), ": per-row factor, ", lanes,
                      " threads per V row\n");
      absl::StrAppend(&c, "    for (int q0 = 0; q0 < ", items, "; q0 += ", k_.threads,
                      ") {\n      const int q = q0 + tid, r = q / ", lanes, ", part = q % ", lanes,
                      ";\n      float ss = 0.f;\n");
      absl::StrAppend(&c, partial ? absl::StrCat("      if (q < ", items, ") {\n") : "      {\n",
                      "        const ", h_->type, "* row = ", row_ptr, ";\n", sum, "      }\n");
      for (int64_t x = 1; x < lanes; x *= 2) {
        absl::StrAppend(&c, "      ss += __shfl_xor_sync(0xffffffffu, ss, ", x, ");\n");
      }
      absl::StrAppend(&c, "      if (part == 0", partial ? absl::StrCat(" && q < ", items) : "",
                      ") ", dst, "[r] = ", factor, ";\n    }\n");
    } else {
      absl::StrAppend(&c, "    // ", OpLabel(k_, rms_v_),
                      ": per-row factor, one thread per V row\n");
      absl::StrAppend(&c, "    for (int r = tid; r < ", rows, "; r += ", k_.threads,
                      ") {\n      float ss = 0.f;\n      {\n        const ", h_->type, "* row = ", row_ptr,
                      ";\n", sum, "      }\n");
      absl::StrAppend(&c, "      ", dst, "[r] = ", factor, ";\n    }\n");
    }
    return c;
  };
  // S = Q·K of the stage at `b` into the new array `sc` (each K fragment loaded once for the
  // warp's tiles).
  // wgmma with `wait` false: issued and committed only (the pipelined loop waits for it with
  // the P·V group, after the softmax of the chunk before). `during`: code that runs while the
  // tensor cores work (wgmma: between the commit and the wait; mma.sync, which the issuing
  // warp waits for itself: before the matmul).
  auto qk_code = [&](const std::string& sc, const std::string& b, bool wait = true,
                     const std::string& during = "") {
    std::string c;
    if (wgmma_) {  // the warpgroup's [64, lw] scores: D/16 wgmma k16 steps, K by descriptor
      absl::StrAppend(&c, "    float ", sc, "[1][", nl, "][4];  // ", OpLabel(k_, s_),
                      " (k16 step 0 overwrites)\n");
      absl::StrAppend(&c, "    {\n    const unsigned char* kb = ", b, " + wh * ", k_head,
                      " + (col0 / 64) * ", d_ * 128, ";\n");
      // Q's [64, D] warpgroup tile, K-major: k16 step kc at byte (kc mod 4)·32 of its 128-byte
      // rows, in column panel kc / 4 (LBO unused by the swizzled K-major layout).
      absl::StrAppend(&c, "    const unsigned char* qb = smem + wh * ", mq_ * d_ * 2,
                      " + ((tile0 & ~3) % ", mph_, ") * 16 * 128;\n");
      absl::StrAppend(&c, "    WgmmaFence();\n#pragma unroll\n    for (int kc = 0; kc < ", d_ / 16,
                      "; ++kc) ", WgmmaName(lw_, true, *h_), "(", sc,
                      "[0], WgmmaDescSw128(qb + (kc >> 2) * ", mq_ * 128,
                      " + (kc & 3) * 32, 16, 1024), WgmmaDescSw128(kb + kc * 2048, ", d_ * 128,
                      ", 1024), kc);\n");
      absl::StrAppend(&c, "    WgmmaCommit();\n", during, wait ? "    WgmmaWait<0>();\n" : "",
                      "    }\n");
      if (!wait) return c;
      absl::StrAppend(&c, "#pragma unroll\n    for (int j = 0; j < ", nl,
                      "; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(",
                      sc, "[0][j][e]);\n");
      return c;
    }
    absl::StrAppend(&c, during, "    float ", sc, "[", tpw_, "][", nl, "][4] = {};  // ",
                    OpLabel(k_, s_), "\n");
    absl::StrAppend(&c, "    {\n    const ", h_->type, "* ks = reinterpret_cast<const ", h_->type, "*>(", b,
                    " + wh * ", k_head, ");\n");
    absl::StrAppend(&c, "#pragma unroll\n    for (int kc = 0; kc < ", d_ / 16,
                    "; ++kc) {\n#pragma unroll\n      for (int np = 0; np < ", nl / 2,
                    "; ++np) {\n        u32_t b4[4];\n        LoadBFragmentX4(b4, ks, ", kpitch,
                    ", kc * 16, col0 + np * 16, lane);\n"
                    "        const u32_t b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};\n"
                    "#pragma unroll\n        for (int tp = 0; tp < ",
                    tpw_, "; ++tp) {\n          ", h_->mma, "(", sc,
                    "[tp][2 * np], qf[tp][kc], b0);\n", "          ", h_->mma, "(", sc,
                    "[tp][2 * np + 1], qf[tp][kc], b1);\n"
                    "        }\n      }\n    }\n    }\n");
    return c;
  };
  // Running max, P = exp(S − m) and P·V for the stage at `b` (rms(V) factors at `vinv_row`).
  auto softmax_pv_code = [&](const std::string& sc, const std::string& b,
                             const std::string& vinv_row) {
    std::string c;
    absl::StrAppend(&c, "    {\n    const ", h_->type, "* vs = reinterpret_cast<const ", h_->type, "*>(", b, " + ",
                    v_off, " + wh * ", v_head, ");\n");
    absl::StrAppend(&c, "    u32_t pf[", tpw_, "][", nl, "][2];  // ", OpLabel(k_, e_),
                    " / exp(m), ", h_->ptx, "\n");
    absl::StrAppend(&c, "#pragma unroll\n    for (int tp = 0; tp < ", tpw_, "; ++tp) {\n");
    // Row max of this chunk (of the scaled scores), merged with the running max.
    absl::StrAppend(&c, "      float mx_lo = -__int_as_float(0x7f800000), mx_hi = mx_lo;\n");
    absl::StrAppend(&c, "#pragma unroll\n      for (int j = 0; j < ", nl,
                    "; ++j) {\n        mx_lo = fmaxf(mx_lo, fmaxf(", sc, "[tp][j][0], ", sc,
                    "[tp][j][1]));\n        mx_hi = fmaxf(mx_hi, fmaxf(", sc, "[tp][j][2], ", sc,
                    "[tp][j][3]));\n      }\n");
    // m in log2 units: m = max(m_old, log2(e)·scale·max_j s); lazily, only when some row of
    // the warp exceeds m_old by more than 8 (then P ≤ 2^8).
    absl::StrAppend(
        &c,
        "      const float cm_lo = QuadMax(mx_lo) * qsc_lo[tp], cm_hi = QuadMax(mx_hi) * "
        "qsc_hi[tp];\n");
    absl::StrAppend(&c, lazy_
                            ? "      if (__any_sync(0xffffffffu, cm_lo > m_lo[tp] + 8.f || cm_hi > "
                              "m_hi[tp] + 8.f)) {\n"
                            : "      {\n");
    absl::StrAppend(&c,
                    "        const float mn_lo = fmaxf(m_lo[tp], cm_lo), mn_hi = fmaxf(m_hi[tp], "
                    "cm_hi);\n"
                    "        const float a_lo = Exp2(m_lo[tp] - mn_lo), a_hi = Exp2(m_hi[tp] - "
                    "mn_hi);\n"
                    "        m_lo[tp] = mn_lo;\n        m_hi[tp] = mn_hi;\n");
    absl::StrAppend(&c, exp16_ ? "        lacc[tp][0] *= a_lo; lacc[tp][1] *= a_lo; lacc[tp][2] *= "
                                 "a_hi; lacc[tp][3] *= a_hi;\n"
                               : "        l_lo[tp] *= a_lo;\n        l_hi[tp] *= a_hi;\n");
    absl::StrAppend(&c, "#pragma unroll\n        for (int j = 0; j < ", dv_ / 8,
                    "; ++j) {\n          o[tp][j][0] *= a_lo; o[tp][j][1] *= a_lo;\n"
                    "          o[tp][j][2] *= a_hi; o[tp][j][3] *= a_hi;\n        }\n      }\n");
    absl::StrAppend(&c, "      const float ml = m_lo[tp], mh = m_hi[tp];\n");
    // P = exp(S - m) → f16 A fragments; Σ P sums the unrounded P (f32 exp) or the f16 P (on the
    // tensor cores, below).
    // o[64, Dv] += P[64, lw] · V[lw, Dv] for the wgmma k16 steps [k0, k1), V by descriptor.
    const std::string fence_o = absl::StrCat(
        "#pragma unroll\n    for (int j = 0; j < ", dv_ / 8,
        "; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) WgmmaFenceReg(o[0][j][e]);\n");
    auto pv_issue = [&](int64_t k0, int64_t k1) {
      return absl::StrCat(
          "#pragma unroll\n    for (int kc = ", k0, "; kc < ", k1, "; ++kc) {  // ",
          OpLabel(k_, ev_), "\n      const u32_t a[4] = {pf[0][2 * kc][0], pf[0][2 * kc][1], "
          "pf[0][2 * kc + 1][0], pf[0][2 * kc + 1][1]};\n      ", WgmmaName(dv_, false, *h_),
          "(o[0], a, WgmmaDescSw128(reinterpret_cast<const unsigned char*>(vs) + (col0 + kc * "
          "16) * 128, ", lc_ * 128, ", 1024), 1);\n    }\n");
    };
    if (exp16_) {
      absl::StrAppend(&c, "#pragma unroll\n      for (int j = 0; j < ", nl, "; ++j) {\n");
      absl::StrAppend(
          &c, "        pf[tp][j][0] = Exp2F16x2(PackF16x2(fmaf(", sc,
          "[tp][j][0], qsc_lo[tp], -ml), fmaf(", sc, "[tp][j][1], qsc_lo[tp], -ml)));\n",
          "        pf[tp][j][1] = Exp2F16x2(PackF16x2(fmaf(", sc,
          "[tp][j][2], qsc_hi[tp], -mh), fmaf(", sc, "[tp][j][3], qsc_hi[tp], -mh)));\n");
      absl::StrAppend(&c, "      }\n");
      // Σ P of the f16 P (before rms(V)'s column scale), on the tensor cores.
      absl::StrAppend(&c, "#pragma unroll\n      for (int kc = 0; kc < ", lw_ / 16,
                      "; ++kc) {  // Σ P = P·ones\n"
                      "        const u32_t a[4] = {pf[tp][2 * kc][0], pf[tp][2 * kc][1], "
                      "pf[tp][2 * kc + 1][0], pf[tp][2 * kc + 1][1]};\n"
                      "        MmaM16N8K16(lacc[tp], a, ones);\n      }\n");
      if (rms_v_ >= 0) {
        absl::StrAppend(&c, "#pragma unroll\n      for (int j = 0; j < ", nl, "; ++j) {  // ",
                        OpLabel(k_, rms_v_),
                        ": E·rms(V) = (E·diag(inv_v))·V\n"
                        "        const float2 iv = *reinterpret_cast<const float2*>(",
                        vinv_row, " + wh * ", lc_, " + col0 + j * 8 + 2 * t4);\n"
                        "        const u32_t iv2 = PackF16x2(iv.x, iv.y);\n"
                        "        pf[tp][j][0] = MulF16x2(pf[tp][j][0], iv2);\n"
                        "        pf[tp][j][1] = MulF16x2(pf[tp][j][1], iv2);\n      }\n");
      }
    } else {
      // P of the score columns' n8 tiles [j0, j1), f32 exp.
      auto p_loop = [&](int64_t j0, int64_t j1) {
        std::string l = absl::StrCat(
            "#pragma unroll\n      for (int j = ", j0, "; j < ", j1, "; ++j) {\n",
            "        const float p0 = Exp2(fmaf(", sc, "[tp][j][0], qsc_lo[tp], -ml));\n",
            "        const float p1 = Exp2(fmaf(", sc, "[tp][j][1], qsc_lo[tp], -ml));\n",
            "        const float p2 = Exp2(fmaf(", sc, "[tp][j][2], qsc_hi[tp], -mh));\n",
            "        const float p3 = Exp2(fmaf(", sc, "[tp][j][3], qsc_hi[tp], -mh));\n",
            "        l_lo[tp] += p0 + p1;\n        l_hi[tp] += p2 + p3;\n");
        if (rms_v_ >= 0) {
          absl::StrAppend(&l, "        // ", OpLabel(k_, rms_v_),
                          ": E·rms(V) = (E·diag(inv_v))·V\n"
                          "        const float2 iv = *reinterpret_cast<const float2*>(",
                          vinv_row, " + wh * ", lc_, " + col0 + j * 8 + 2 * t4);\n",
                          "        pf[tp][j][0] = ", h_->pack2, "(p0 * iv.x, p1 * iv.y);\n"
                          "        pf[tp][j][1] = ", h_->pack2, "(p2 * iv.x, p3 * iv.y);\n");
        } else {
          absl::StrAppend(&l,
                          "        pf[tp][j][0] = ", h_->pack2, "(p0, p1);\n"
                          "        pf[tp][j][1] = ", h_->pack2, "(p2, p3);\n");
        }
        absl::StrAppend(&l, "      }\n");
        return l;
      };
      if (split_pv_) {
        // The first half of the columns' P, their P·V issued (not waited for), then the
        // second half's P while the tensor cores run (one row tile per warp: tp is 0).
        absl::StrAppend(&c, p_loop(0, nl / 2), fence_o, "    WgmmaFence();\n",
                        pv_issue(0, lw_ / 32), p_loop(nl / 2, nl));
      } else {
        absl::StrAppend(&c, p_loop(0, nl));
      }
    }
    absl::StrAppend(&c, "    }\n");
    if (wgmma_) {
      if (split_pv_) {
        absl::StrAppend(&c, "    WgmmaFence();\n", pv_issue(lw_ / 32, lw_ / 16));
      } else {
        absl::StrAppend(&c, fence_o, "    WgmmaFence();\n", pv_issue(0, lw_ / 16));
      }
      absl::StrAppend(&c, "    WgmmaCommit();\n    WgmmaWait<0>();\n", fence_o,
                      "#pragma unroll\n    for (int j = 0; j < ", nl,
                      "; ++j) {\n      WgmmaFenceReg(pf[0][j][0]);\n"
                      "      WgmmaFenceReg(pf[0][j][1]);\n    }\n    }\n");
      return c;
    }
    absl::StrAppend(&c, "#pragma unroll\n    for (int kc = 0; kc < ", lw_ / 16, "; ++kc) {  // ",
                    OpLabel(k_, ev_), "\n");
    absl::StrAppend(&c, "#pragma unroll\n      for (int np = 0; np < ", dv_ / 16,
                    "; ++np) {\n        u32_t b4[4];\n        LoadBFragmentX4(b4, vs, ", vpitch,
                    ", col0 + kc * 16, np * 16, lane);\n"
                    "        const u32_t b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};\n"
                    "#pragma unroll\n        for (int tp = 0; tp < ",
                    tpw_,
                    "; ++tp) {\n"
                    "          const u32_t a[4] = {pf[tp][2 * kc][0], pf[tp][2 * kc][1], "
                    "pf[tp][2 * kc + 1][0], pf[tp][2 * kc + 1][1]};\n"
                    "          ", h_->mma, "(o[tp][2 * np], a, b0);\n          ", h_->mma,
                    "(o[tp][2 * np + 1], a, b1);\n"
                    "        }\n      }\n    }\n    }\n");
    return c;
  };
  const std::string stage_base =
      absl::StrCat("smem + ", stage_off, " + (it % kStages) * ", launch.stage_bytes);
  // Prologue.
  absl::StrAppend(&s,
                  "#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n"
                  "    if (st < kF) load_stage(st, st);\n    CpAsyncCommit();\n  }\n");
  if (pipeline_) {
    // Software pipelined: S for chunk it+1 is issued before the softmax and P·V of chunk it
    // (independent work for the tensor cores while the SFU computes the exps). At iteration it
    // stages it and it+1 must have landed, and stage it−1 (read last in iteration it−1) is
    // refilled: S ≥ 3. rms(V)'s factors are double-buffered, so no second barrier.
    // wgmma: S(it+1) runs on the tensor cores during the softmax of chunk it; the P·V group's
    // wait covers it.
    const char* fence = wgmma_ ? "FenceProxyAsyncShared();\n    " : "";
    absl::StrAppend(&s, "  CpAsyncWait<kStages - 2>();\n  ", fence, "__syncthreads();\n  {\n");
    absl::StrAppend(&s, qfrag);
    absl::StrAppend(&s, "  }\n");
    if (rms_v_ >= 0) {
      absl::StrAppend(&s, "  {\n    const unsigned char* nb = smem + ", stage_off, ";\n",
                      vinv_code("nb", "vinv", false), "  }\n");
    }
    absl::StrAppend(&s, qk_code("sc", absl::StrCat("smem + ", stage_off)));
    absl::StrAppend(&s, "#pragma unroll 1\n  for (int it = 0; it < kF; ++it) {\n");
    absl::StrAppend(&s, "    CpAsyncWait<kStages - 3>();\n    ", fence, "__syncthreads();\n");
    absl::StrAppend(&s,
                    "    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + "
                    "kStages - 1) % kStages);\n    CpAsyncCommit();\n");
    absl::StrAppend(&s, "    const unsigned char* base = ", stage_base, ";\n");
    absl::StrAppend(&s, "    const unsigned char* nb = smem + ", stage_off,
                    " + ((it + 1) % kStages) * ", launch.stage_bytes,
                    ";  // chunk it+1 (unused data after the last chunk)\n");
    absl::StrAppend(&s, vinv_code("nb", absl::StrCat("(vinv + ((it + 1) & 1) * ", gt_ * lc_, ")"),
                                  false));
    absl::StrAppend(&s, qk_code("sn", "nb", !wgmma_));
    absl::StrAppend(
        &s, softmax_pv_code("sc", "base", absl::StrCat("(vinv + (it & 1) * ", gt_ * lc_, ")")));
    if (wgmma_) {
      absl::StrAppend(&s, "#pragma unroll\n    for (int j = 0; j < ", nl,
                      "; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) "
                      "WgmmaFenceReg(sn[0][j][e]);\n");
    }
    absl::StrAppend(&s, "#pragma unroll\n    for (int tp = 0; tp < ", tpw_,
                    "; ++tp)\n#pragma unroll\n    for (int j = 0; j < ", nl,
                    "; ++j)\n#pragma unroll\n    for (int e = 0; e < 4; ++e) sc[tp][j][e] = "
                    "sn[tp][j][e];\n");
    absl::StrAppend(&s, "  }\n");
  } else {
    if (wgmma_) {
      // The Q fragments before the loop (the Q group was committed first), not in its first
      // iteration: with fragments assigned only when it == 0, ptxas 13.0 reused their registers
      // for P inside the loop in the lazy-rescale form (SASS of gqa b=8 x16 y2 z8 F8 T256 S2:
      // P packed into R88-R103, the Q fragments of the next iteration's wgmma), a wrong result.
      absl::StrAppend(&s, "  CpAsyncWait<kStages - 1>();  // the Q tile\n  __syncthreads();\n  {\n",
                      qfrag, "  }\n");
    }
    absl::StrAppend(&s, "#pragma unroll 1\n  for (int it = 0; it < kF; ++it) {\n");
    // wgmma: the landed stage's cp.async writes made visible to its async proxy.
    // Late loads: the head without its refill, which runs while the score wgmma does instead.
    absl::StrAppend(&s, PipelineIterationHead(stages, /*fence_async_proxy=*/wgmma_,
                                              /*refill=*/!late_loads_));
    const std::string late_load =
        late_loads_ ? PipelineRefill("late: while the score wgmma runs") : "";
    absl::StrAppend(&s, "    const unsigned char* base = ", stage_base, ";\n");
    if (!wgmma_) absl::StrAppend(&s, "    if (it == 0) {\n", qfrag, "    }\n");
    // rms(V)'s factors are written after the iteration's first barrier (every warp is done with
    // the previous chunk's) and read after a second one, placed after S = Q·K. With wgmma they
    // are computed while the score matmul runs (issued, not yet waited for): on the H200 that
    // took qknorm_gqa b=1 7.07 → 6.95 µs and b=8 (x16 y4 z4 F8 T128 S2) 20.94 → 20.53
    // (docs/performance.md, 2026-12-03 night).
    absl::StrAppend(&s, qk_code("sc", "base", true,
                                absl::StrCat(late_load, vinv_code("base", "vinv", true))));
    if (rms_v_ >= 0) absl::StrAppend(&s, "    __syncthreads();\n");
    absl::StrAppend(&s, softmax_pv_code("sc", "base", "vinv"));
    absl::StrAppend(&s, stages == 1 ? "    __syncthreads();\n" : "", "  }\n");
  }
  if (direct) {
    absl::StrAppend(&s, "  CpAsyncWait<0>();\n",
                    fused_ != nullptr
                        ? "  __syncthreads();  // the stages are free: the tiles alias them\n"
                        : "",
                    lse_ ? "  // Partials in log-sum-exp form (Σ P·V / Σ P, m + log2 Σ P), stored "
                           "from the fragments\n"
                         : "  // Partial sums × exp(m), stored from the fragments\n");
    absl::StrAppend(&s, "#pragma unroll\n  for (int tp = 0; tp < ", tpw_, "; ++tp) {\n");
    absl::StrAppend(&s, "    const int r_lo = ((tile0 + tp) % ", mph_,
                    ") * 16 + g, r_hi = r_lo + 8;  // rows of head wh\n");
    const char* row_sums = exp16_ ? "lacc[tp][0]" : "QuadSum(l_lo[tp])";
    const char* row_sums_hi = exp16_ ? "lacc[tp][2]" : "QuadSum(l_hi[tp])";
    if (lse_) {
      // 1 ≤ Σ P ≤ Lc: __fdividef and lg2.approx are accurate to a few ulps there, and the IEEE
      // forms' slow paths cost the gqa b=1 partial kernel 0.1 µs on the H200 (2026-12-04).
      absl::StrAppend(&s, "    const float ls_lo = ", row_sums, ", ls_hi = ", row_sums_hi,
                      ";  // Σ P\n"
                      "    const float e_lo = __fdividef(1.0f, ls_lo), e_hi = __fdividef(1.0f, ls_hi);"
                      "  // N = Σ P·V / Σ P\n"
                      "    const float sl = m_lo[tp] + __log2f(ls_lo), sh = m_hi[tp] + __log2f(ls_hi);"
                      "  // Dn = log2 Σ exp(S)\n");
    } else {
      absl::StrAppend(&s,
                      "    const float e_lo = Exp2(m_lo[tp]), e_hi = Exp2(m_hi[tp]);  // exp(m)\n"
                      "    const float sl = ", row_sums, " * e_lo, sh = ", row_sums_hi, " * e_hi;\n");
    }
    const bool ragged = mq_ % 16 != 0;
    for (int out : outputs_) {
      const ConcreteBlockOp& op = k_.ops[out];
      const ConcreteTensor& t = p_.tensors[op.tensor];
      const bool num = std::count(num_accs_.begin(), num_accs_.end(), op.operands[0]) > 0;
      auto dst = [&](const std::string& r, const std::string& c) {
        return OutAddr(out, "wh", r, c);
      };
      absl::StrAppend(&s, "    // ", OpLabel(k_, out), " → ", t.name, " (",
                      OpLabel(k_, op.operands[0]), ")\n");
      if (num) {
        const Half16* oh = Half16Of(t.dtype);
        auto put = [&](const char* r, const char* e, int i0) {
          const std::string a = absl::StrCat("o[tp][j][", i0, "] * ", e),
                            b = absl::StrCat("o[tp][j][", i0 + 1, "] * ", e);
          return oh != nullptr
                     ? absl::StrCat("*reinterpret_cast<u32_t*>(", dst(r, "c"), ") = ", oh->pack2,
                                    "(", a, ", ", b, ");")
                     : absl::StrCat("*reinterpret_cast<float2*>(", dst(r, "c"), ") = make_float2(",
                                    a, ", ", b, ");");
        };
        absl::StrAppend(&s, "#pragma unroll\n    for (int j = 0; j < ", dv_ / 8,
                        "; ++j) {\n      const int c = j * 8 + 2 * t4;\n");
        absl::StrAppend(&s, "      ", ragged ? absl::StrCat("if (r_lo < ", mq_, ") ") : "",
                        put("r_lo", "e_lo", 0), "\n");
        absl::StrAppend(&s, "      ", ragged ? absl::StrCat("if (r_hi < ", mq_, ") ") : "",
                        put("r_hi", "e_hi", 2), "\n    }\n");
      } else {
        const char* cv = Half16Of(t.dtype) != nullptr ? Half16Of(t.dtype)->from_f32 : "";
        absl::StrAppend(&s, "    if (t4 == 0) {\n      ",
                        ragged ? absl::StrCat("if (r_lo < ", mq_, ") ") : "", "*(",
                        dst("r_lo", "0"), ") = ", cv, "(sl);\n      ",
                        ragged ? absl::StrCat("if (r_hi < ", mq_, ") ") : "", "*(",
                        dst("r_hi", "0"), ") = ", cv, "(sh);\n    }\n");
      }
    }
    absl::StrAppend(&s, "  }\n", tail, "}\n");
    source += s;
    return launch;
  }
  // Partial sums × exp(m) into shared memory (aliasing the stages), then coalesced stores.
  // With lse_ each warp's sums stay relative to its own m, which goes to redm; the stores weight
  // warp w by 2^(m_w − max_w m_w).
  absl::StrAppend(&s, "  CpAsyncWait<0>();\n  __syncthreads();\n");
  absl::StrAppend(&s, "  float* red = reinterpret_cast<float*>(smem + ", stage_off,
                  ");  // [ws][tiles·16][Dv + 8]\n");
  absl::StrAppend(&s, "  float* redl = red + ", ws_ * rows * rpitch, ";  // [ws][tiles·16]\n");
  if (lse_) {
    absl::StrAppend(&s, "  float* redm = redl + ", ws_ * rows,
                    ";  // [ws][tiles·16]: each warp's running max m\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n  for (int tp = 0; tp < ", tpw_, "; ++tp) {\n");
  absl::StrAppend(&s, "    const int r_lo = kv * ", rows,
                  " + (tile0 + tp) * 16 + g, r_hi = r_lo + 8;\n");
  absl::StrAppend(&s, lse_ ? "    const float e_lo = 1.0f, e_hi = 1.0f;  // relative to m\n"
                           : "    const float e_lo = Exp2(m_lo[tp]), e_hi = Exp2(m_hi[tp]);  // exp(m)\n");
  absl::StrAppend(&s, "#pragma unroll\n    for (int j = 0; j < ", dv_ / 8,
                  "; ++j) {\n      const int c = j * 8 + 2 * t4;\n");
  absl::StrAppend(&s, "      *reinterpret_cast<float2*>(red + r_lo * ", rpitch,
                  " + c) = make_float2(o[tp][j][0] * e_lo, o[tp][j][1] * e_lo);\n");
  absl::StrAppend(&s, "      *reinterpret_cast<float2*>(red + r_hi * ", rpitch,
                  " + c) = make_float2(o[tp][j][2] * e_hi, o[tp][j][3] * e_hi);\n    }\n");
  absl::StrAppend(
      &s,
      exp16_ ? "    const float sl = lacc[tp][0] * e_lo, sh = lacc[tp][2] * e_hi;\n"
             : "    const float sl = QuadSum(l_lo[tp]) * e_lo, sh = QuadSum(l_hi[tp]) * e_hi;\n",
      lse_ ? "    if (t4 == 0) { redl[r_lo] = sl; redl[r_hi] = sh; redm[r_lo] = m_lo[tp]; "
             "redm[r_hi] = m_hi[tp]; }\n  }\n  __syncthreads();\n"
           : "    if (t4 == 0) { redl[r_lo] = sl; redl[r_hi] = sh; }\n  }\n  __syncthreads();\n");
  for (int out : outputs_) {
    const ConcreteBlockOp& op = k_.ops[out];
    const ConcreteTensor& t = p_.tensors[op.tensor];
    const bool num = std::count(num_accs_.begin(), num_accs_.end(), op.operands[0]) > 0;
    const int64_t cols = num ? dv_ : 1;
    // Four consecutive columns per thread where the rows allow aligned vectors (Dv and the
    // tensor's row length multiples of 4): one float4 (f32) or 8-byte (f16) store.
    const int64_t vec = num && dv_ % 4 == 0 && t.shape[2] % 4 == 0 ? 4 : 1;
    const int64_t items = gt_ * mq_ * cols / vec, per_row = cols / vec;
    const int64_t trips = (items + k_.threads - 1) / k_.threads;
    absl::StrAppend(&s, "  // ", OpLabel(k_, out), " → ", t.name, " (", OpLabel(k_, op.operands[0]),
                    "), ", vec, " column(s) per thread and step\n");
    absl::StrAppend(&s, trips <= 16 ? "#pragma unroll\n" : "#pragma unroll 4\n",
                    "  for (int i = 0; i < ", trips, "; ++i) {\n    const int e = tid + i * ",
                    k_.threads, ";\n");
    if (items % k_.threads != 0) absl::StrAppend(&s, "    if (e >= ", items, ") break;\n");
    absl::StrAppend(&s, "    const int h = e / ", mq_ * per_row, ", r = (e / ", per_row, ") % ",
                    mq_, ", c = (e % ", per_row, ") * ", vec, ";\n    (void)c;\n");
    absl::StrAppend(&s, "    const int pr = h * ", mph_ * 16, " + r;\n");
    const std::string dst = OutAddr(out, "h", "r", "c");
    if (lse_) {
      // The row's max over the warps, each warp's weight 2^(m_w − mx) and the weighted Σ P.
      absl::StrAppend(&s, "    float mx = -__int_as_float(0x7f800000), ls = 0.f, wt[", ws_,
                      "];\n#pragma unroll\n    for (int w = 0; w < ", ws_,
                      "; ++w) mx = fmaxf(mx, redm[w * ", rows, " + pr]);\n#pragma unroll\n"
                      "    for (int w = 0; w < ", ws_, "; ++w) {\n      wt[w] = Exp2(redm[w * ", rows,
                      " + pr] - mx);\n      ls += redl[w * ", rows, " + pr] * wt[w];\n    }\n");
      if (!num) {
        absl::StrAppend(&s, "    *(", dst, ") = mx + __log2f(ls);  // log2 Σ exp(S)\n  }\n");
        continue;
      }
      absl::StrAppend(&s, "    const float il = __fdividef(1.0f, ls);\n");
    }
    if (vec == 4) {
      if (lse_) {
        absl::StrAppend(
            &s, "    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);\n#pragma unroll\n    for (int w = 0; w < ",
            ws_, "; ++w) {\n      const float4 u = *reinterpret_cast<const float4*>(red + (w * ",
            rows, " + pr) * ", rpitch,
            " + c);\n      const float f = wt[w] * il;\n      v.x += u.x * f; v.y += u.y * f; "
            "v.z += u.z * f; v.w += u.w * f;\n    }\n");
      } else {
        absl::StrAppend(&s, "    float4 v = *reinterpret_cast<const float4*>(red + pr * ", rpitch,
                        " + c);\n");
        absl::StrAppend(
            &s, "#pragma unroll\n    for (int w = 1; w < ", ws_,
            "; ++w) {\n      const float4 u = *reinterpret_cast<const float4*>(red + (w * ", rows,
            " + pr) * ", rpitch,
            " + c);\n      v.x += u.x; v.y += u.y; v.z += u.z; v.w += u.w;\n    }\n");
      }
      if (const Half16* oh = Half16Of(t.dtype)) {
        absl::StrAppend(&s, "    *reinterpret_cast<uint2*>(", dst, ") = make_uint2(", oh->pack2,
                        "(v.x, v.y), ", oh->pack2, "(v.z, v.w));\n");
      } else {
        absl::StrAppend(&s, "    *reinterpret_cast<float4*>(", dst, ") = v;\n");
      }
    } else {
      absl::StrAppend(&s, "    float v = 0.f;\n#pragma unroll\n    for (int w = 0; w < ", ws_,
                      "; ++w) v += ",
                      num ? absl::StrCat("red[(w * ", rows, " + pr) * ", rpitch, " + c]")
                          : absl::StrCat("redl[w * ", rows, " + pr]"),
                      lse_ ? " * wt[w] * il" : "", ";\n");
      absl::StrAppend(&s, "    *(", dst, ") = ", FromF32(t, "v"), ";\n");
    }
    absl::StrAppend(&s, "  }\n");
  }
  absl::StrAppend(&s, tail, "}\n");
  source += s;
  return launch;
}

std::string AttentionGen::OutAddr(int out, const std::string& h, const std::string& r,
                                  const std::string& c) const {
  const ConcreteBlockOp& op = k_.ops[out];
  if (fused_ != nullptr) {  // the tile in shared memory, row-major [Gt, Mq, cols]
    const Half16* oh = Half16Of(p_.tensors[op.tensor].dtype);
    return absl::StrCat("reinterpret_cast<", oh != nullptr ? oh->type : "float", "*>(smem + ",
                        fused_off_,
                        " + ", fused_->offset.at(op.tensor), ") + (", h, " * ", op.tile[1], " + ",
                        r, ") * ", op.tile[2], " + ", c);
  }
  const ConcreteTensor& t = p_.tensors[op.tensor];
  return absl::StrCat(ParamName(p_, op.tensor), " + ((", TileOrigin(k_, out, 0, false), " + ", h,
                      ") * ", t.shape[1], "LL + ", TileOrigin(k_, out, 1, false), " + ", r,
                      ") * ", t.shape[2], "LL + ", TileOrigin(k_, out, 2, false), " + ", c);
}

}  // namespace

absl::StatusOr<LaunchConfig> GenerateAttentionKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source,
                                                     const FusedCombine* fused) {
  AttentionGen gen(p, kernel, options, fused);
  return gen.Generate(source);
}

}  // namespace prism::codegen::internal
