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
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gen_util.h"
#include "prism/base/check.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {

// The graph's block coordinates inside a pointwise kernel (bz = blockIdx.z / P).
const std::array<const char*, 3> kAxes = {"bx", "by", "bz"};

std::string UnaryExpr(const ConcreteBlockOp& op, const std::string& x) {
  switch (op.fn) {
    case OpKind::kExp:
      return absl::StrCat("expf(", x, ")");
    case OpKind::kSilu:
      return absl::StrCat("prism_dev::Silu(", x, ")");
    case OpKind::kGelu:
      return absl::StrCat("prism_dev::Gelu(", x, ")");
    case OpKind::kRelu:
      return absl::StrCat("fmaxf(", x, ", 0.0f)");
    case OpKind::kSqrt:
      return absl::StrCat("sqrtf(", x, ")");
    case OpKind::kRsqrt:
      return absl::StrCat("1.0f / sqrtf(", x, ")");
    case OpKind::kSquare:
      return absl::StrCat(x, " * ", x);
    case OpKind::kNeg:
      return absl::StrCat("-", x);
    case OpKind::kRecip:
      return absl::StrCat("1.0f / ", x);
    case OpKind::kScale:
      return absl::StrCat(FloatLit(op.scalar), " * ", x);
    default:
      break;
  }
  PRISM_UNREACHABLE("unary fn ", GetOpInfo(op.fn).name);
}

class PointwiseGen {
 public:
  PointwiseGen(const BlockProgram& p, int kernel, const CodegenOptions& options)
      : p_(p), k_(p.kernels[kernel].block()), kname_(p.kernels[kernel].name), options_(options) {}

  absl::StatusOr<LaunchConfig> Generate(std::string& source);

 private:
  absl::Status Err(int op, absl::string_view what) const { return OpError(kname_, k_, op, what); }
  absl::Status Analyze();
  // The statement computing op `i` at the current output element (indices i0, i1, ...).
  std::string Statement(int i, const Shape& out_tile) const;
  std::string Var(int i) const { return absl::StrCat("v", i); }

  const BlockProgram& p_;
  const ConcreteBlockGraph& k_;
  std::string kname_;
  const CodegenOptions& options_;
  std::vector<int> outputs_;
};

absl::Status PointwiseGen::Analyze() {
  if (k_.threads % 32 != 0 || k_.threads < 32 || k_.threads > 1024) {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", kname_, ": threads ",
                                                 k_.threads,
                                                 " is not a multiple of 32 in [32, 1024]"));
  }
  for (int i = 0; i < static_cast<int>(k_.ops.size()); ++i) {
    const ConcreteBlockOp& op = k_.ops[i];
    switch (op.kind) {
      case BlockOpKind::kInput:
      case BlockOpKind::kOutput: {
        const ConcreteTensor& t = p_.tensors[op.tensor];
        if (t.dtype != DType::kF16 && t.dtype != DType::kF32) {
          return Err(i, "only f16 and f32 tensors are supported");
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
        break;
      case BlockOpKind::kAccSum:
        if (k_.ops[op.operands[0]].phase != Phase::kLoop) {
          return Err(i, "acc_sum of a loop-invariant tile is not supported");
        }
        break;
      default:
        return Err(i,
                   "the pointwise template (no matmul) supports only inputs, elementwise ops, "
                   "inv_rms and acc_sum");
    }
  }
  if (outputs_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname_, " has no output"));
  }
  // Every op an output depends on must broadcast to the output's tile (each dim equal or 1).
  for (int o : outputs_) {
    const Shape& out = k_.ops[o].tile;
    std::vector<int> stack = {o};
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
      for (int x : k_.ops[i].operands) stack.push_back(x);
    }
  }
  return absl::OkStatus();
}

std::string PointwiseGen::Statement(int i, const Shape& out_tile) const {
  const ConcreteBlockOp& op = k_.ops[i];
  auto idx = [&](size_t d) {
    return op.tile[d] == 1 && out_tile[d] != 1 ? std::string("0") : absl::StrCat("i", d);
  };
  std::string e;
  switch (op.kind) {
    case BlockOpKind::kInput: {
      const ConcreteTensor& t = p_.tensors[op.tensor];
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
      e = t.dtype == DType::kF16 ? absl::StrCat("F16ToF32(", load, ")") : load;
      break;
    }
    case BlockOpKind::kUnary:
      e = UnaryExpr(op, Var(op.operands[0]));
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
  const int64_t parts =
      std::max<int64_t>(1, std::min((most + k_.threads - 1) / k_.threads, 65535 / k_.grid[2]));
  launch.grid = {k_.grid[0], k_.grid[1], k_.grid[2] * parts};
  std::string params;
  PRISM_RETURN_IF_ERROR(KernelParams(p_, k_, kname_, launch, params));
  int64_t accs = 0;
  for (const ConcreteBlockOp& op : k_.ops) accs += op.kind == BlockOpKind::kAccSum ? 1 : 0;
  launch.accumulator_regs = accs;

  std::string s;
  absl::StrAppend(&s, "// kernel ", kname_, ": grid (", k_.grid[0], ", ", k_.grid[1], ", ",
                  k_.grid[2], "), ", k_.threads, " threads, forloop ", k_.forloop,
                  "; pointwise template: launched as (", launch.grid[0], ", ", launch.grid[1], ", ",
                  launch.grid[2], ") blocks, ", parts,
                  " per graph block, one output element per thread, loads from global memory, "
                  "f32 accumulators in iteration order\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", k_.threads, ") ",
                  launch.function, "(", params, ") {\n");
  absl::StrAppend(&s, "  using namespace prism_dev;\n  constexpr int kF = ", k_.forloop,
                  ", kParts = ", parts, ";\n");
  absl::StrAppend(&s,
                  "  const long long bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z / kParts;\n"
                  "  const int first = (blockIdx.z % kParts) * ",
                  k_.threads, " + threadIdx.x;\n  (void)bx; (void)by; (void)bz;\n");
  for (int o : outputs_) {
    const ConcreteBlockOp& out = k_.ops[o];
    const ConcreteTensor& t = p_.tensors[out.tensor];
    const Shape& tile = out.tile;
    int64_t n = 1;
    for (int64_t d : tile) n *= d;
    // The ops this output needs, by phase, in op order (dependency order).
    std::set<int> need;
    std::vector<int> stack = {out.operands[0]};
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (!need.insert(i).second) continue;
      for (int x : k_.ops[i].operands) stack.push_back(x);
    }
    absl::StrAppend(&s, "  // ", OpLabel(k_, o), " → ", t.name, "\n");
    absl::StrAppend(&s, "  for (int e = first; e < ", n, "; e += ", k_.threads * parts, ") {\n");
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
    if (!accs_needed.empty()) {
      absl::StrAppend(&s, "#pragma unroll 8\n    for (int it = 0; it < kF; ++it) {\n");
      for (int i : need) {
        if (k_.ops[i].phase == Phase::kLoop) {
          absl::StrAppend(&s, "      ", Statement(i, tile), "\n");
        }
      }
      for (int a : accs_needed) {
        absl::StrAppend(&s, "      ", Var(a), " += ", Var(k_.ops[a].operands[0]), ";\n");
      }
      absl::StrAppend(&s, "    }\n");
    }
    for (int i : need) {
      if (k_.ops[i].phase == Phase::kAfter && k_.ops[i].kind != BlockOpKind::kAccSum) {
        absl::StrAppend(&s, "    ", Statement(i, tile), "\n");
      }
    }
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
    absl::StrAppend(&s, "    ", ParamName(p_, out.tensor), "[", addr,
                    "] = ", t.dtype == DType::kF16 ? absl::StrCat("F32ToF16(", v, ")") : v,
                    ";\n  }\n");
  }
  absl::StrAppend(&s, "}\n");
  source += s;
  return launch;
}

}  // namespace

absl::StatusOr<LaunchConfig> GeneratePointwiseKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source) {
  PointwiseGen gen(p, kernel, options);
  return gen.Generate(source);
}

}  // namespace prism::codegen::internal
