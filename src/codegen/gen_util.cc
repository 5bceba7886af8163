// Helpers shared by the generator's templates (gen_util.h).
#include "gen_util.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
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

std::vector<int> UseCounts(const ConcreteBlockGraph& k) {
  std::vector<int> uses(k.ops.size(), 0);
  for (const ConcreteBlockOp& op : k.ops) {
    for (int o : op.operands) ++uses[o];
  }
  return uses;
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

std::string UnaryExpr(const ConcreteBlockOp& op, const std::string& x) {
  switch (op.fn) {
    case OpKind::kExp:
      return absl::StrCat("expf(", x, ")");
    case OpKind::kSilu:
      return absl::StrCat("prism_dev::Silu(", x, ")");
    case OpKind::kGelu:
      return absl::StrCat("prism_dev::Gelu(", x, ")");
    case OpKind::kRelu:
      return absl::StrCat("prism_dev::Relu(", x, ")");  // NaN kept (fmaxf would drop it)
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

absl::StatusOr<std::string> DeviceElemType(const ConcreteTensor& t) {
  if (const Half16* h = Half16Of(t.dtype)) return absl::StrCat("prism_dev::", h->type);
  if (t.dtype == DType::kF32) return std::string("float");
  return absl::UnimplementedError(absl::StrCat("codegen: tensor ", t.name, " has dtype ",
                                               DTypeName(t.dtype),
                                               "; only f16, bf16 and f32 tensors are supported"));
}

const Half16* Half16Of(DType dtype) {
  static constexpr Half16 kF16{DType::kF16, "f16_t",       "F16ToF32",    "F32ToF16",
                               "PackF16x2",  "MmaM16N8K16", "LdClusterF16", "false", "f16"};
  static constexpr Half16 kBF16{DType::kBF16,      "bf16_t",          "BF16ToF32",
                                "F32ToBF16",       "PackBF16x2",      "MmaM16N8K16BF16",
                                "LdClusterBF16",   "true",            "bf16"};
  if (dtype == DType::kF16) return &kF16;
  if (dtype == DType::kBF16) return &kBF16;
  return nullptr;
}

std::string ToF32(const ConcreteTensor& t, const std::string& load) {
  const Half16* h = Half16Of(t.dtype);
  return h != nullptr ? absl::StrCat(h->to_f32, "(", load, ")") : load;
}

std::string FromF32(const ConcreteTensor& t, const std::string& v) {
  const Half16* h = Half16Of(t.dtype);
  return h != nullptr ? absl::StrCat(h->from_f32, "(", v, ")") : v;
}

absl::StatusOr<const Half16*> KernelHalf16(const BlockProgram& p, const ConcreteBlockGraph& k,
                                           absl::string_view kernel) {
  const Half16* found = nullptr;
  int first = -1;
  for (int i = 0; i < static_cast<int>(k.ops.size()); ++i) {
    if (k.ops[i].kind != BlockOpKind::kInput) continue;
    const ConcreteTensor& t = p.tensors[k.ops[i].tensor];
    const Half16* h = Half16Of(t.dtype);
    if (h == nullptr) {
      return OpError(kernel, k, i,
                     absl::StrCat(t.name, " is ", DTypeName(t.dtype),
                                  "; matmul kernels read f16 or bf16 inputs only"));
    }
    if (found != nullptr && h != found) {
      return OpError(kernel, k, i,
                     absl::StrCat(t.name, " is ", h->ptx, " but ",
                                  p.tensors[k.ops[first].tensor].name, " is ", found->ptx,
                                  "; one kernel reads one 16-bit format"));
    }
    found = h;
    first = first < 0 ? i : first;
  }
  return found != nullptr ? found : Half16Of(DType::kF16);
}

std::string KernelPrologue(const CodegenOptions& options) {
  return options.programmatic_dependent_launch
             ? "  prism_dev::PdlPrologue();  // programmatic dependent launch: after the previous grid\n"
             : "";
}

std::string ParamName(const BlockProgram& p, int tensor) {
  return absl::StrCat("t_", Ident(p.tensors[tensor].name));
}

absl::Status KernelParams(const BlockProgram& p, const ConcreteBlockGraph& k,
                          absl::string_view kernel, LaunchConfig& launch, std::string& params) {
  return KernelParams(p, std::vector<const ConcreteBlockGraph*>{&k}, {}, kernel, launch, params);
}

absl::Status KernelParams(const BlockProgram& p, const std::vector<const ConcreteBlockGraph*>& ks,
                          const std::set<int>& exclude, absl::string_view kernel,
                          LaunchConfig& launch, std::string& params) {
  std::map<int, bool> args;
  for (const ConcreteBlockGraph* k : ks) {
    for (const ConcreteBlockOp& op : k->ops) {
      if (exclude.count(op.tensor)) continue;
      if (op.kind == BlockOpKind::kInput) args.emplace(op.tensor, false);
      if (op.kind == BlockOpKind::kOutput) args[op.tensor] = true;
    }
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

absl::StatusOr<FusedCombine> MatchClusterCombine(const BlockProgram& p, int producer) {
  const int combine = producer + 1;
  auto fail = [&](absl::string_view why) {
    return absl::UnimplementedError(
        absl::StrCat("codegen: cluster_combine: kernels ", p.kernels[producer].name,
                     combine < static_cast<int>(p.kernels.size())
                         ? absl::StrCat(", ", p.kernels[combine].name)
                         : std::string(),
                     ": ", why));
  };
  if (combine >= static_cast<int>(p.kernels.size())) {
    return fail("no kernel follows the producer");
  }
  if (!p.kernels[producer].is_block() || !p.kernels[combine].is_block()) {
    return fail("library kernels cannot be fused");
  }
  const ConcreteBlockGraph& a = p.kernels[producer].block();
  const ConcreteBlockGraph& b = p.kernels[combine].block();
  const Template producer_template = ChooseTemplate(a);
  if (producer_template == Template::kPointwise) {
    return fail("the producer is not a split-KV attention or split-K GEMM kernel");
  }
  if (ChooseTemplate(b) != Template::kPointwise) {
    return fail("the second kernel is not a pointwise combine kernel");
  }
  // The split axis: z for attention (split-KV), and for a GEMM with a grid z; else y (the
  // search's split-K GEMM forms: grid (g, s, 1)).
  const int axis = producer_template == Template::kAttention || a.grid[2] > 1 ? 2 : 1;
  const char axis_name = axis == 2 ? 'z' : 'y';
  const int64_t gs = a.grid[axis];
  if (gs < 2 || gs > 16) {
    return fail(absl::StrCat("the producer's grid ", std::string(1, axis_name), " (", gs,
                             ") is not a cluster size in [2, 16]"));
  }
  std::array<int64_t, 3> want = a.grid;
  want[axis] = 1;
  if (b.grid != want) {
    return fail(absl::StrCat("the combine grid (", b.grid[0], ", ", b.grid[1], ", ", b.grid[2],
                             ") is not the producer's (", want[0], ", ", want[1], ", ", want[2],
                             ")"));
  }
  if (b.forloop != gs) {
    return fail(absl::StrCat("the combine forloop (", b.forloop, ") does not walk the producer's ",
                             gs, " ", std::string(1, axis_name), " blocks"));
  }
  FusedCombine f;
  f.producer = producer;
  f.combine = combine;
  f.axis = axis;
  f.cluster = gs;
  for (int i = 0; i < static_cast<int>(a.ops.size()); ++i) {
    const ConcreteBlockOp& op = a.ops[i];
    if (op.kind != BlockOpKind::kOutput) continue;
    if (!f.tensors.emplace(op.tensor, i).second) {
      return fail(absl::StrCat("tensor ", p.tensors[op.tensor].name, " is written twice"));
    }
    if (op.map[axis] == kReplicate) {
      return fail(absl::StrCat("output ", OpLabel(a, i), " is not partitioned by grid ",
                               std::string(1, axis_name)));
    }
  }
  for (int t : p.outputs) {
    if (f.tensors.count(t)) {
      return fail(absl::StrCat("tensor ", p.tensors[t].name, " is a program output"));
    }
  }
  for (int k = 0; k < static_cast<int>(p.kernels.size()); ++k) {
    if (k == producer || k == combine) continue;
    if (!p.kernels[k].is_block()) {
      // A library kernel reads whole tensors from global memory, where the fused pair no
      // longer stores its partials.
      for (int t : p.kernels[k].library().operands) {
        if (f.tensors.count(t)) {
          return fail(absl::StrCat("tensor ", p.tensors[t].name, " is read by kernel ",
                                   p.kernels[k].name));
        }
      }
      continue;
    }
    for (const ConcreteBlockOp& op : p.kernels[k].block().ops) {
      if (op.kind == BlockOpKind::kInput && f.tensors.count(op.tensor)) {
        return fail(absl::StrCat("tensor ", p.tensors[op.tensor].name, " is read by kernel ",
                                 p.kernels[k].name));
      }
    }
  }
  std::set<int> read;
  for (int i = 0; i < static_cast<int>(b.ops.size()); ++i) {
    const ConcreteBlockOp& op = b.ops[i];
    if (op.kind == BlockOpKind::kOutput && f.tensors.count(op.tensor)) {
      return fail(absl::StrCat("the combine kernel writes ", p.tensors[op.tensor].name));
    }
    if (op.kind != BlockOpKind::kInput || !f.tensors.count(op.tensor)) continue;
    const ConcreteBlockOp& w = a.ops[f.tensors.at(op.tensor)];
    bool same = op.phase == Phase::kLoop && op.tile == w.tile && op.fmap == w.map[axis] &&
                op.map[axis] == kReplicate;
    for (int d = 0; d < 3; ++d) {
      if (d != axis && op.map[d] != w.map[d]) same = false;
    }
    if (!same) {
      return fail(absl::StrCat("input ", OpLabel(b, i), " does not read ",
                               p.tensors[op.tensor].name,
                               absl::StrCat(" tile by tile as the producer writes it (iteration i = block ", std::string(1, axis_name), ")")));
    }
    read.insert(op.tensor);
  }
  int64_t off = 0;
  for (const auto& [t, o] : f.tensors) {
    if (!read.count(t)) {
      return fail(absl::StrCat("tensor ", p.tensors[t].name, " is not read by the combine kernel"));
    }
    int64_t n = DTypeBytes(p.tensors[t].dtype);
    for (int64_t d : a.ops[o].tile) n *= d;
    f.offset[t] = off;
    off += (n + 15) / 16 * 16;
  }
  f.bytes = off;
  return f;
}

Template ChooseTemplate(const ConcreteBlockGraph& k) {
  // Pointwise: no matmul but after-loop ones of a sum of loaded tiles (lora's combine kernel,
  // (Σ_s P1)·B); the GEMM template multiplies only tiles it loads or accumulates itself.
  bool pointwise = true;
  for (const ConcreteBlockOp& op : k.ops) {
    if (op.kind != BlockOpKind::kMatMul) continue;
    const ConcreteBlockOp& a = k.ops[op.operands[0]];
    pointwise = pointwise && op.phase == Phase::kAfter && a.kind == BlockOpKind::kAccSum &&
                k.ops[a.operands[0]].kind == BlockOpKind::kInput;
  }
  if (pointwise) return Template::kPointwise;
  for (const ConcreteBlockOp& op : k.ops) {
    if (op.kind != BlockOpKind::kUnary || op.fn != OpKind::kExp || op.phase != Phase::kLoop) {
      continue;
    }
    // exp(S) or exp(scale(S, c)) of a matmul S.
    const ConcreteBlockOp* x = &k.ops[op.operands[0]];
    if (x->kind == BlockOpKind::kUnary && x->fn == OpKind::kScale) x = &k.ops[x->operands[0]];
    if (x->kind == BlockOpKind::kMatMul) return Template::kAttention;
  }
  return Template::kGemm;
}

std::string PipelineIterationHead(int64_t stages, bool fence_async_proxy, bool refill) {
  const char* fence = fence_async_proxy ? "    FenceProxyAsyncShared();\n" : "";
  if (stages == 1) {
    return absl::StrCat("    load_stage(it, 0);\n    CpAsyncCommit();\n    CpAsyncWait<0>();\n",
                        fence, "    __syncthreads();\n");
  }
  return absl::StrCat("    CpAsyncWait<kStages - 2>();\n", fence, "    __syncthreads();\n",
                      refill ? PipelineRefill() : "");
}

std::string PipelineRefill(absl::string_view note) {
  return absl::StrCat(
      "    if (it + kStages - 1 < kF) load_stage(it + kStages - 1, (it + kStages - 1) % kStages);",
      note.empty() ? "" : "  // ", note, "\n    CpAsyncCommit();\n");
}

}  // namespace prism::codegen::internal

namespace prism::codegen::internal {

std::optional<BlockProgram> SqueezeBatchDims(const BlockProgram& p) {
  bool batched = false;
  for (const ConcreteKernel& k : p.kernels) {
    if (!k.is_block()) continue;  // generated from the original program (whole tensors)
    const Template t = ChooseTemplate(k.block());
    if (t == Template::kAttention) return std::nullopt;
    for (const ConcreteBlockOp& op : k.block().ops) {
      batched = batched || (t == Template::kGemm && op.tile.size() > 2);
    }
  }
  if (!batched) return std::nullopt;
  // Rank r ≥ 3 → 2: dims 0..r−2 (the merged dims) become dim 0, dim r−1 becomes dim 1.
  auto new_dim = [](int d, size_t rank) { return d < static_cast<int>(rank) - 1 ? 0 : 1; };
  auto merged = [](const Shape& t) {
    if (t.size() <= 2) return t;
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < t.size(); ++d) rows *= t[d];
    return Shape{rows, t.back()};
  };
  // Whether the dims before the last two of a tile are all one element deep.
  auto unit_batch = [](const Shape& t) {
    for (size_t d = 0; d + 2 < t.size(); ++d) {
      if (t[d] != 1) return false;
    }
    return true;
  };
  BlockProgram out = p;
  for (ConcreteTensor& t : out.tensors) t.shape = merged(t.shape);
  for (size_t ki = 0; ki < out.kernels.size(); ++ki) {
    if (!p.kernels[ki].is_block()) continue;
    const ConcreteBlockGraph& orig = p.kernels[ki].block();
    ConcreteBlockGraph& k = std::get<ConcreteBlockGraph>(out.kernels[ki].body);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      ConcreteBlockOp& op = k.ops[i];
      const size_t rank = op.tile.size();
      if (rank == 1 || op.walks_groups) return std::nullopt;
      if (rank <= 2) continue;
      const int r = static_cast<int>(rank);
      if (op.kind == BlockOpKind::kInput || op.kind == BlockOpKind::kOutput) {
        const Shape& shape = p.tensors[op.tensor].shape;
        if (shape.size() != rank) return std::nullopt;
        // A contiguous range of merged rows: below the last merged dim j that the tile does
        // not span whole, one element deep.
        int j = -1;
        for (int d = 0; d + 1 < r; ++d) {
          if (op.tile[d] != shape[d]) j = d;
        }
        for (int d = 0; d < j; ++d) {
          if (op.tile[d] != 1) return std::nullopt;
        }
        // The axes on the merged dims, in x-major order, map them in dim order, and the
        // forloop walks at most dim j of them: TileOrigin's linearization (axes, then the
        // iteration) is then the merged row origin.
        int last = -1;
        for (int axis = 0; axis < kNumGridAxes; ++axis) {
          const int d = op.map[axis];
          if (d == kReplicate || d >= r - 1) continue;
          if (d < last) return std::nullopt;
          last = d;
        }
        if (op.fmap != kReplicate && op.fmap < r - 1 && op.fmap != j) return std::nullopt;
        for (int axis = 0; axis < kNumGridAxes; ++axis) {
          if (op.map[axis] != kReplicate) op.map[axis] = new_dim(op.map[axis], rank);
        }
        if (op.fmap != kReplicate) op.fmap = new_dim(op.fmap, rank);
      }
      if (op.kind == BlockOpKind::kMatMul) {
        // A batched product is a rank-2 one per batch: with B batched, one batch per tile;
        // with B of rank 2 (one B for every batch), A's merged rows times B.
        const Shape& ta = orig.ops[op.operands[0]].tile;
        const Shape& tb = orig.ops[op.operands[1]].tile;
        if (tb.size() > 2 && (!unit_batch(ta) || !unit_batch(tb))) return std::nullopt;
      }
      if (op.kind == BlockOpKind::kReduce || op.kind == BlockOpKind::kRms) {
        // Over dim r−2 of a tile one element deep in dims 0..r−3 is over the merged dim.
        const Shape& operand = orig.ops[op.operands[0]].tile;
        if (op.dim < r - 2 || (op.dim == r - 2 && !unit_batch(operand))) return std::nullopt;
        op.dim = op.dim == r - 1 ? 1 : 0;
      }
      op.tile = merged(op.tile);
    }
  }
  return out;
}

}  // namespace prism::codegen::internal
