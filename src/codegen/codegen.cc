// The CUDA generator (codegen.h): recognizes the "GEMM + epilogue" structure of
// a block graph and writes the kernel from the device templates of
// kernels/prism/device_common.cuh.
#include "prism/codegen/codegen.h"

#include <algorithm>
#include <cstdint>
#include <map>
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

#include "device_common_source.inc"  // kDeviceCommonCuh: kernels/prism/device_common.cuh

constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int64_t kPadElems = 8;  // 16 bytes of f16 per shared row: conflict-free fragments

struct LoopInput {
  int op = -1;
  int64_t rows = 0, cols = 0, pitch = 0;
  int64_t offset = 0;  // bytes within a stage
};

struct MatMulPlan {
  int op = -1, acc = -1, a = -1, b = -1;
  int64_t red_offset = 0;  // bytes within the reduction buffer
};

struct SumSqPlan {
  int acc = -1;
  int a_input = -1;  // the loop input whose squares are summed
  int64_t red_offset = 0;
};

class KernelGen {
 public:
  KernelGen(const BlockProgram& program, int kernel_index, const CodegenOptions& options)
      : p_(program),
        k_(program.kernels[kernel_index].block()),
        kname_(program.kernels[kernel_index].name),
        options_(options) {}

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
  std::string ParamName(int tensor) const {
    return absl::StrCat("t_", Ident(p_.tensors[tensor].name));
  }

  const BlockProgram& p_;
  const ConcreteBlockGraph& k_;
  std::string kname_;
  const CodegenOptions& options_;

  std::vector<LoopInput> inputs_;
  std::map<int, int> input_index_;  // op → inputs_ index
  std::vector<MatMulPlan> matmuls_;
  std::vector<SumSqPlan> sumsqs_;
  std::set<int> fused_;  // loop ops emitted as part of an accumulator (square)
  std::vector<int> outputs_;
  int64_t mt_ = 0, kt_ = 0, nt_ = 0;  // matmul tile (all matmuls share M and K)
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
  std::vector<int> uses(k_.ops.size(), 0);
  for (const ConcreteBlockOp& op : k_.ops) {
    for (int o : op.operands) ++uses[o];
  }
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    switch (op.kind) {
      case BlockOpKind::kInput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        if (t.dtype != DType::kF16) return Err(i, "only f16 input tensors are supported");
        if (t.shape.size() != 2 || op.tile.size() != 2)
          return Err(i, "only rank-2 tiles are supported");
        if (op.walks_groups) return Err(i, "forloops over partial-result groups are not supported");
        if (op.fmap == kReplicate) return Err(i, "loop-invariant input tiles are not supported");
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
        if (!input_index_.count(a) || !input_index_.count(b)) {
          return Err(i, "matmul operands must be loop input tiles");
        }
        const Shape& ta = k_.ops[a].tile;
        const Shape& tb = k_.ops[b].tile;
        if (ta[1] % kMmaK != 0) return Err(i, "the K tile must be a multiple of 16");
        if (tb[1] % kMmaN != 0) return Err(i, "the N tile must be a multiple of 8");
        if (!matmuls_.empty() && (ta[0] != mt_ || ta[1] != kt_)) {
          return Err(i, "all matmuls of a kernel must share the M and K tile extents");
        }
        if (!matmuls_.empty() && tb[1] != nt_) return Err(i, "all matmuls must share the N tile");
        mt_ = ta[0];
        kt_ = ta[1];
        nt_ = tb[1];
        MatMulPlan m;
        m.op = i;
        m.a = a;
        m.b = b;
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
                                      [&](const MatMulPlan& m) { return m.a == x; });
        if (!is_a) return Err(i, "the sum of squares must be over a matmul's A tile (fused)");
        SumSqPlan s;
        s.acc = i;
        s.a_input = x;
        sumsqs_.push_back(s);
        break;
      }
      case BlockOpKind::kUnary:
        if (op.phase == Phase::kLoop) {
          // Only the fused square of acc_sum_last (checked when the accumulator
          // is reached).
          if (op.fn != OpKind::kSquare)
            return Err(i, "elementwise ops inside the forloop are not supported");
          break;
        }
        [[fallthrough]];
      case BlockOpKind::kBinary:
      case BlockOpKind::kInvRms:
        if (op.phase != Phase::kAfter) {
          return Err(i, "elementwise ops are supported only after the forloop");
        }
        if (op.tile.size() != 2) return Err(i, "only rank-2 tiles are supported");
        break;
      case BlockOpKind::kOutput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        if (t.dtype != DType::kF16) return Err(i, "only f16 outputs are supported");
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
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.kind == BlockOpKind::kUnary && op.phase == Phase::kLoop && !fused_.count(i)) {
      return Err(i, "elementwise ops inside the forloop are not supported");
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
  // After-loop tiles and outputs are evaluated per element of the matmul tile
  // [mt_, nt_] (extent-1 dims broadcast); anything else would be indexed
  // wrongly.
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    if (op.phase != Phase::kAfter && op.kind != BlockOpKind::kOutput) continue;
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
  // warps.
  const int64_t kc = kt_ / kMmaK, ntiles = nt_ / kMmaN;
  wn_ = 1;
  while (warps_ / wn_ > kc && ntiles % (wn_ * 2) == 0 && warps_ % (wn_ * 2) == 0) wn_ *= 2;
  wk_ = warps_ / wn_;
  // Stage layout.
  int64_t off = 0;
  for (LoopInput& in : inputs_) {
    in.offset = off;
    off += in.rows * in.pitch * 2;
  }
  return absl::OkStatus();
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
  switch (op.kind) {
    case BlockOpKind::kAccSum: {
      const MatMulPlan& mm = *std::find_if(matmuls_.begin(), matmuls_.end(),
                                           [&](const MatMulPlan& x) { return x.acc == i; });
      e = absl::StrCat("ReduceAcc(reinterpret_cast<const float*>(smem + ", mm.red_offset, "), ", m,
                       " * ", nt_, " + ", n, ", ", mtiles_ * kMmaM * nt_, ")");
      break;
    }
    case BlockOpKind::kAccSumSqLast:
    case BlockOpKind::kAccSumLast: {
      const SumSqPlan& s = *std::find_if(sumsqs_.begin(), sumsqs_.end(),
                                         [&](const SumSqPlan& x) { return x.acc == i; });
      e = absl::StrCat("ReduceAcc(reinterpret_cast<const float*>(smem + ", s.red_offset, "), ", m,
                       ", ", mtiles_ * kMmaM, ")");
      break;
    }
    case BlockOpKind::kInvRms:
      e = absl::StrCat("1.0f / sqrtf(", arg(0), " / ", FloatLit(static_cast<double>(op.count)),
                       " + ", FloatLit(op.eps), ")");
      break;
    case BlockOpKind::kUnary: {
      const std::string x = arg(0);
      switch (op.fn) {
        case OpKind::kExp:
          e = absl::StrCat("expf(", x, ")");
          break;
        case OpKind::kSilu:
          e = absl::StrCat("prism_dev::Silu(", x, ")");
          break;
        case OpKind::kGelu:
          e = absl::StrCat("prism_dev::Gelu(", x, ")");
          break;
        case OpKind::kRelu:
          e = absl::StrCat("fmaxf(", x, ", 0.0f)");
          break;
        case OpKind::kSqrt:
          e = absl::StrCat("sqrtf(", x, ")");
          break;
        case OpKind::kRsqrt:
          e = absl::StrCat("1.0f / sqrtf(", x, ")");
          break;
        case OpKind::kSquare:
          e = absl::StrCat(x, " * ", x);
          break;
        case OpKind::kNeg:
          e = absl::StrCat("-", x);
          break;
        case OpKind::kRecip:
          e = absl::StrCat("1.0f / ", x);
          break;
        case OpKind::kScale:
          e = absl::StrCat(FloatLit(op.scalar), " * ", x);
          break;
        default:
          PRISM_UNREACHABLE("unary fn ", GetOpInfo(op.fn).name);
      }
      break;
    }
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
  launch.stage_bytes = inputs_.back().offset + inputs_.back().rows * inputs_.back().pitch * 2;
  // Reduction buffer: per matmul WK × (16·mtiles) × N f32; per sum of squares
  // WK × 16·mtiles.
  const int64_t mrows = static_cast<int64_t>(mtiles_) * kMmaM;
  int64_t red = 0;
  for (MatMulPlan& m : matmuls_) {
    m.red_offset = red;
    red += wk_ * mrows * nt_ * 4;
  }
  for (SumSqPlan& s : sumsqs_) {
    s.red_offset = red;
    red += wk_ * mrows * 4;
  }
  launch.reduction_bytes = red;
  launch.dynamic_smem_bytes = std::max(stages * launch.stage_bytes, red);
  if (launch.dynamic_smem_bytes > options_.max_dynamic_smem_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "codegen: kernel ", kname_, " needs ", launch.dynamic_smem_bytes,
        " bytes of shared memory (", stages, " stages of ", launch.stage_bytes,
        " B, reduction buffer ", red, " B), over the limit of ", options_.max_dynamic_smem_bytes));
  }
  const int ntw = static_cast<int>(nt_ / kMmaN / wn_);
  launch.accumulator_regs = static_cast<int64_t>(matmuls_.size()) * mtiles_ * ntw * 4 +
                            static_cast<int64_t>(sumsqs_.size()) * mtiles_ * 2;

  // Arguments: every tensor an input or output op touches, by tensor index.
  std::map<int, bool> args;
  for (const ConcreteBlockOp& op : k_.ops) {
    if (op.kind == BlockOpKind::kInput) args.emplace(op.tensor, false);
    if (op.kind == BlockOpKind::kOutput) args[op.tensor] = true;
  }
  std::vector<std::string> params;
  for (const auto& [t, written] : args) {
    launch.args.push_back(t);
    launch.written.push_back(written);
    params.push_back(
        absl::StrCat(written ? "" : "const ", "prism_dev::f16_t* __restrict__ ", ParamName(t)));
  }

  std::string s;
  absl::StrAppend(&s, "// kernel ", kname_, ": grid (", k_.grid[0], ", ", k_.grid[1], ", ",
                  k_.grid[2], "), ", k_.threads, " threads, forloop ", k_.forloop, ", ", stages,
                  " stage(s); matmul tile ", mt_, "x", nt_, "x", kt_, " (", mtiles_,
                  " m16 tile(s)); warps ", wk_, " along K x ", wn_, " along N\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", k_.threads, ") ",
                  launch.function, "(", absl::StrJoin(params, ", "), ") {\n");
  absl::StrAppend(&s, "  using namespace prism_dev;\n");
  absl::StrAppend(&s, "  extern __shared__ __align__(16) unsigned char smem[];\n");
  absl::StrAppend(&s, "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n");
  absl::StrAppend(&s, "  const int wn = warp % ", wn_, ", wk = warp / ", wn_, ";\n");
  absl::StrAppend(&s, "  (void)wn; (void)wk;\n");
  // Loads of one stage.
  absl::StrAppend(&s, "  auto load_stage = [&](int it, int stage) {\n");
  absl::StrAppend(&s, "    unsigned char* base = smem + stage * ", launch.stage_bytes, ";\n");
  for (const LoopInput& in : inputs_) {
    const ConcreteBlockOp& op = k_.ops[in.op];
    const ConcreteTensor& t = p_.tensors[op.tensor];
    absl::StrAppend(&s, "    LoadTileAsync<", in.rows, ", ", in.cols, ", ", k_.threads,
                    ">(reinterpret_cast<f16_t*>(base + ", in.offset, "), ", in.pitch, ", ",
                    ParamName(op.tensor), " + (", TileOrigin(in.op, 0, true), ") * ", t.shape[1],
                    "LL + ", TileOrigin(in.op, 1, true), ", ", t.shape[1], "LL, tid);  // ",
                    OpLabel(in.op), "\n");
  }
  absl::StrAppend(&s, "  };\n");
  // Accumulators.
  for (const MatMulPlan& m : matmuls_) {
    absl::StrAppend(&s, "  float acc", m.op, "[", mtiles_, "][", ntw, "][4] = {};  // ",
                    OpLabel(m.acc), "\n");
  }
  for (const SumSqPlan& q : sumsqs_) {
    absl::StrAppend(&s, "  float ssl", q.acc, "[", mtiles_, "] = {}, ssh", q.acc, "[", mtiles_,
                    "] = {};  // ", OpLabel(q.acc), "\n");
  }
  // Pipeline prologue.
  absl::StrAppend(&s, "  constexpr int kStages = ", stages, ", kF = ", k_.forloop, ";\n");
  absl::StrAppend(&s,
                  "#pragma unroll\n  for (int st = 0; st < kStages - 1; ++st) {\n"
                  "    if (st < kF) load_stage(st, st);\n    CpAsyncCommit();\n  }\n");
  absl::StrAppend(&s, "  for (int it = 0; it < kF; ++it) {\n");
  absl::StrAppend(&s, internal::PipelineIterationHead(stages));
  absl::StrAppend(&s, "    const unsigned char* base = smem + (it % kStages) * ",
                  launch.stage_bytes, ";\n");
  const int64_t kchunks = kt_ / kMmaK;
  const int64_t kiters = (kchunks + wk_ - 1) / wk_;
  absl::StrAppend(&s, "#pragma unroll\n    for (int kk = 0; kk < ", kiters, "; ++kk) {\n");
  absl::StrAppend(&s, "      const int kc = wk + kk * ", wk_, ";\n");
  if (kchunks % wk_ != 0) absl::StrAppend(&s, "      if (kc >= ", kchunks, ") break;\n");
  // A fragments, one set per distinct A input.
  std::vector<int> a_inputs;
  for (const MatMulPlan& m : matmuls_) {
    if (std::find(a_inputs.begin(), a_inputs.end(), m.a) == a_inputs.end()) a_inputs.push_back(m.a);
  }
  for (int a : a_inputs) {
    const LoopInput& in = inputs_[input_index_.at(a)];
    const SumSqPlan* sq = nullptr;
    for (const SumSqPlan& q : sumsqs_) {
      if (q.a_input == a) sq = &q;  // (a second sum over the same tile reuses the first's sums)
    }
    absl::StrAppend(&s, "      u32_t a", a, "[", mtiles_, "][4];\n");
    absl::StrAppend(&s, "#pragma unroll\n      for (int mt = 0; mt < ", mtiles_, "; ++mt) {\n");
    const std::string call_args =
        absl::StrCat("(a", a, "[mt], reinterpret_cast<const f16_t*>(base + ", in.offset, "), ",
                     in.pitch, ", ", in.rows, ", mt * 16, kc * 16, lane, ");
    if (sq == nullptr) {
      absl::StrAppend(&s, "        float d0 = 0.f, d1 = 0.f;\n        LoadAFragment<false>",
                      call_args, "d0, d1);\n");
    } else {
      const std::string ss = absl::StrCat("ssl", sq->acc, "[mt], ssh", sq->acc, "[mt]");
      if (wn_ == 1) {
        absl::StrAppend(&s, "        LoadAFragment<true>", call_args, ss, ");\n");
      } else {
        absl::StrAppend(&s, "        if (wn == 0) LoadAFragment<true>", call_args, ss,
                        ");\n        else LoadAFragment<false>", call_args, ss, ");\n");
      }
    }
    absl::StrAppend(&s, "      }\n");
  }
  for (const MatMulPlan& m : matmuls_) {
    const LoopInput& in = inputs_[input_index_.at(m.b)];
    const std::string bptr =
        absl::StrCat("reinterpret_cast<const f16_t*>(base + ", in.offset, "), ", in.pitch);
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
                      "; ++mt) {\n          MmaM16N8K16(acc", m.op, "[mt][nt], a", m.a,
                      "[mt], b0);\n", "          MmaM16N8K16(acc", m.op, "[mt][nt + 1], a", m.a,
                      "[mt], b1);  // ", OpLabel(m.op), "\n        }\n      }\n");
    }
    if (ntw % 2 == 0) continue;
    absl::StrAppend(&s, "      {\n        const int nt = ", ntw - 1, ";\n");
    absl::StrAppend(&s, "        u32_t b[2];\n        LoadBFragment(b, ", bptr, ", kc * 16, (wn * ",
                    ntw, " + nt) * 8, lane);\n");
    absl::StrAppend(&s, "#pragma unroll\n        for (int mt = 0; mt < ", mtiles_,
                    "; ++mt) MmaM16N8K16(acc", m.op, "[mt][nt], a", m.a, "[mt], b);  // ",
                    OpLabel(m.op), "\n      }\n");
  }
  absl::StrAppend(&s, "    }\n", stages == 1 ? "    __syncthreads();\n" : "", "  }\n");
  // Cross-warp reduction buffers (alias the stages).
  absl::StrAppend(&s, "  CpAsyncWait<0>();\n  __syncthreads();\n");
  absl::StrAppend(&s,
                  "  {\n    const int g = lane >> 2, t = lane & 3;\n    "
                  "(void)g; (void)t;\n");
  for (const MatMulPlan& m : matmuls_) {
    absl::StrAppend(&s, "    {\n    float* red = reinterpret_cast<float*>(smem + ", m.red_offset,
                    ") + wk * ", mrows * nt_, ";\n");
    absl::StrAppend(&s, "#pragma unroll\n    for (int mt = 0; mt < ", mtiles_,
                    "; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < ", ntw, "; ++nt) {\n");
    absl::StrAppend(&s, "      const int r = mt * 16 + g, c = (wn * ", ntw,
                    " + nt) * 8 + 2 * t;\n");
    absl::StrAppend(&s, "      red[r * ", nt_, " + c] = acc", m.op, "[mt][nt][0];\n");
    absl::StrAppend(&s, "      red[r * ", nt_, " + c + 1] = acc", m.op, "[mt][nt][1];\n");
    absl::StrAppend(&s, "      red[(r + 8) * ", nt_, " + c] = acc", m.op, "[mt][nt][2];\n");
    absl::StrAppend(&s, "      red[(r + 8) * ", nt_, " + c + 1] = acc", m.op,
                    "[mt][nt][3];\n    }\n    }\n");
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
    const std::string v = ElementExpr(op.operands[0], op.tile);
    absl::StrAppend(&s, "  {  // ", OpLabel(o), " → ", t.name, "\n");
    absl::StrAppend(&s, "    f16_t* out = ", ParamName(op.tensor), " + (", TileOrigin(o, 0, false),
                    ") * ", t.shape[1], "LL + ", TileOrigin(o, 1, false), ";\n");
    absl::StrAppend(&s, "    for (int e = tid; e < ", op.tile[0] * op.tile[1],
                    "; e += ", k_.threads, ") {\n");
    absl::StrAppend(&s, "      const int m = e / ", op.tile[1], ", n = e % ", op.tile[1],
                    ";\n      (void)m; (void)n;\n");
    absl::StrAppend(&s, body_);
    absl::StrAppend(&s, "      out[(long long)m * ", t.shape[1], "LL + n] = F32ToF16(", v, ");\n");
    absl::StrAppend(&s, "    }\n  }\n");
  }
  absl::StrAppend(&s, "}\n");
  source += s;
  return launch;
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
    k["dynamic_smem_bytes"] = l.dynamic_smem_bytes;
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
                  "are "
                  "row-major f16\n// (unsigned short bits or __half) or f32 device "
                  "pointers.\n#pragma once\n"
                  "#include <cuda_runtime.h>\n\nnamespace prism_generated {\nnamespace ",
                  Ident(p.name), " {\n\n");
  std::set<int> all;
  for (const LaunchConfig& l : launches) {
    std::vector<std::string> params, names;
    for (size_t i = 0; i < l.args.size(); ++i) {
      const std::string n = absl::StrCat("t_", Ident(p.tensors[l.args[i]].name));
      params.push_back(absl::StrCat(l.written[i] ? "" : "const ", "void* ", n));
      const bool f32 = p.tensors[l.args[i]].dtype == DType::kF32;
      names.push_back(absl::StrCat("static_cast<", l.written[i] ? "" : "const ",
                                   f32 ? "float" : "prism_dev::f16_t", "*>(", n, ")"));
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

}  // namespace

const std::string& DeviceCommonSource() {
  static const std::string* const kText = new std::string(kDeviceCommonCuh);
  return *kText;
}

absl::StatusOr<GeneratedCode> GenerateCuda(const BlockProgram& program,
                                           const CodegenOptions& options) {
  GeneratedCode out;
  std::string kernels;
  for (int i = 0; i < static_cast<int>(program.kernels.size()); ++i) {
    if (!program.kernels[i].is_block()) {
      return absl::UnimplementedError(
          absl::StrCat("codegen: kernel ", program.kernels[i].name, ": library kernels (",
                       GetOpInfo(program.kernels[i].library().op).name, ") are not supported yet"));
    }
    LaunchConfig l;
    switch (internal::ChooseTemplate(program.kernels[i].block())) {
      case internal::Template::kAttention: {
        PRISM_ASSIGN_OR_RETURN(l, internal::GenerateAttentionKernel(program, i, options, kernels));
        break;
      }
      case internal::Template::kPointwise: {
        PRISM_ASSIGN_OR_RETURN(l, internal::GeneratePointwiseKernel(program, i, options, kernels));
        break;
      }
      case internal::Template::kGemm: {
        KernelGen gen(program, i, options);
        PRISM_ASSIGN_OR_RETURN(l, gen.Generate(kernels));
        break;
      }
    }
    out.launches.push_back(std::move(l));
  }
  absl::StrAppend(&out.source, "// Generated by prism codegen from block program '", program.name,
                  "'. Self-contained CUDA C++ (sm_80+).\n", DeviceCommonSource(), "\n", kernels);
  out.launch_json = LaunchJson(program, out.launches);
  out.host_header = HostHeader(program, out.launches);
  return out;
}

}  // namespace prism::codegen
