// Helpers shared by the generator's templates (gen_util.h).
#include "gen_util.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {

std::string Ident(absl::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out;
}

std::string FloatLit(double v) {
  std::string s = absl::StrFormat("%.9g", static_cast<double>(static_cast<float>(v)));
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // "4096" → "4096.0"
  return s + "f";
}

std::string OpLabel(const ConcreteBlockGraph& k, int i) {
  const ConcreteBlockOp& op = k.ops[i];
  std::string kind(GetBlockOpInfo(op.kind).name);
  if (op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary ||
      op.kind == BlockOpKind::kReduce) {
    kind = std::string(GetOpInfo(op.fn).name);
  }
  return absl::StrCat(op.name.empty() ? absl::StrCat("#", i) : op.name, " (", kind, ")");
}

absl::Status OpError(absl::string_view kernel, const ConcreteBlockGraph& k, int op,
                     absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat("codegen: kernel ", kernel, ", op ", OpLabel(k, op), ": ", what));
}

std::string TileOrigin(const ConcreteBlockGraph& k, int i, int dim, bool with_loop,
                       const std::array<const char*, 3>& kAxes) {
  const ConcreteBlockOp& op = k.ops[i];
  std::string c;
  for (int axis = 0; axis < kNumGridAxes; ++axis) {
    if (op.map[axis] != dim) continue;
    c = c.empty() ? std::string(kAxes[axis])
                  : absl::StrCat("(", c, " * ", k.grid[axis], "LL + ", kAxes[axis], ")");
  }
  if (with_loop && op.fmap == dim) {
    c = c.empty() ? std::string("it") : absl::StrCat("(", c, " * ", k.forloop, "LL + it)");
  }
  if (c.empty()) return "0LL";
  return absl::StrCat("(long long)", c, " * ", op.tile[dim], "LL");
}

absl::StatusOr<std::string> DeviceElemType(const ConcreteTensor& t) {
  if (t.dtype == DType::kF16) return std::string("prism_dev::f16_t");
  if (t.dtype == DType::kF32) return std::string("float");
  return absl::UnimplementedError(absl::StrCat("codegen: tensor ", t.name, " has dtype ",
                                               DTypeName(t.dtype),
                                               "; only f16 and f32 tensors are supported"));
}

std::string ParamName(const BlockProgram& p, int tensor) {
  return absl::StrCat("t_", Ident(p.tensors[tensor].name));
}

absl::Status KernelParams(const BlockProgram& p, const ConcreteBlockGraph& k,
                          absl::string_view kernel, LaunchConfig& launch, std::string& params) {
  std::map<int, bool> args;
  for (const ConcreteBlockOp& op : k.ops) {
    if (op.kind == BlockOpKind::kInput) args.emplace(op.tensor, false);
    if (op.kind == BlockOpKind::kOutput) args[op.tensor] = true;
  }
  std::vector<std::string> list;
  for (const auto& [t, written] : args) {
    absl::StatusOr<std::string> type = DeviceElemType(p.tensors[t]);
    if (!type.ok()) {
      return absl::UnimplementedError(
          absl::StrCat("codegen: kernel ", kernel, ": ", type.status().message()));
    }
    launch.args.push_back(t);
    launch.written.push_back(written);
    list.push_back(
        absl::StrCat(written ? "" : "const ", *type, "* __restrict__ ", ParamName(p, t)));
  }
  params = absl::StrJoin(list, ", ");
  return absl::OkStatus();
}

Template ChooseTemplate(const ConcreteBlockGraph& k) {
  bool matmul = false;
  for (const ConcreteBlockOp& op : k.ops) {
    if (op.kind == BlockOpKind::kMatMul) matmul = true;
  }
  if (!matmul) return Template::kPointwise;
  for (const ConcreteBlockOp& op : k.ops) {
    if (op.kind == BlockOpKind::kUnary && op.fn == OpKind::kExp && op.phase == Phase::kLoop &&
        k.ops[op.operands[0]].kind == BlockOpKind::kMatMul) {
      return Template::kAttention;
    }
  }
  return Template::kGemm;
}

std::string PipelineIterationHead(int64_t stages) {
  if (stages == 1) {
    return "    load_stage(it, 0);\n    CpAsyncCommit();\n    CpAsyncWait<0>();\n    __syncthreads();\n";
  }
  return "    CpAsyncWait<kStages - 2>();\n    __syncthreads();\n"
         "    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + kStages - 1) % kStages);\n"
         "    CpAsyncCommit();\n";
}

}  // namespace prism::codegen::internal
