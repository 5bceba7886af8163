// SGraph <-> JSON (format in sgraph_json.h).
#include "prism/block/sgraph_json.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/status.h"
#include "prism/expr/parse.h"

namespace prism {
namespace {

using nlohmann::json;

constexpr absl::string_view kFormat = "prism.sgraph";
constexpr int kVersion = 1;

json ExprJson(const ExprContext& ctx, Expr e) {
  if (ctx.is_const(e)) return ctx.const_value(e);
  return ctx.ToString(e);
}

json ExprsJson(const ExprContext& ctx, absl::Span<const Expr> es) {
  json a = json::array();
  for (Expr e : es) a.push_back(ExprJson(ctx, e));
  return a;
}

// The JSON spelling of a block op: its function for unary/binary/reduce ops.
std::string OpSpelling(const BlockOp& op) {
  switch (op.kind) {
    case BlockOpKind::kUnary:
    case BlockOpKind::kBinary:
    case BlockOpKind::kReduce: return std::string(GetOpInfo(op.fn).name);
    default: return std::string(GetBlockOpInfo(op.kind).name);
  }
}

json OperandJson(const BlockGraph& b, int a) {
  if (a >= 0 && a < static_cast<int>(b.ops.size()) && !b.ops[a].name.empty()) {
    return b.ops[a].name;
  }
  return a;
}

json BlockJson(const SGraph& g, const BlockGraph& b) {
  const ExprContext& ctx = g.ctx();
  json k;
  k["kind"] = "block";
  k["grid"] = ExprsJson(ctx, b.grid);
  k["threads"] = ExprJson(ctx, b.threads);
  k["forloop"] = ExprJson(ctx, b.forloop);
  k["stages"] = ExprJson(ctx, b.stages);
  json ops = json::array();
  for (const BlockOp& op : b.ops) {
    json o;
    if (!op.name.empty()) o["name"] = op.name;
    o["op"] = OpSpelling(op);
    if (!op.operands.empty()) {
      json a = json::array();
      for (int x : op.operands) a.push_back(OperandJson(b, x));
      o["operands"] = a;
    }
    switch (op.kind) {
      case BlockOpKind::kInput:
      case BlockOpKind::kOutput:
        o["tensor"] = op.tensor >= 0 && op.tensor < static_cast<int>(g.tensors().size())
                          ? json(g.tensors()[op.tensor].name)
                          : json(op.tensor);
        o[op.kind == BlockOpKind::kInput ? "imap" : "omap"] = ExprsJson(ctx, op.map);
        if (op.kind == BlockOpKind::kInput) o["fmap"] = ExprJson(ctx, op.fmap);
        break;
      case BlockOpKind::kUnary:
        if (op.fn == OpKind::kScale) o["scalar"] = op.scalar;
        break;
      case BlockOpKind::kReduce: o["dim"] = op.dim; break;
      case BlockOpKind::kRms:
        o["dim"] = op.dim;
        o["eps"] = op.eps;
        break;
      case BlockOpKind::kInvRms:
        o["count"] = op.count.valid() ? ExprJson(ctx, op.count) : json(nullptr);
        o["eps"] = op.eps;
        break;
      case BlockOpKind::kDivCount:
        o["count"] = op.count.valid() ? ExprJson(ctx, op.count) : json(nullptr);
        break;
      default: break;
    }
    ops.push_back(std::move(o));
  }
  k["ops"] = std::move(ops);
  return k;
}

json LibraryJson(const SGraph& g, const LibraryKernel& lk) {
  auto tensor = [&](int t) {
    return t >= 0 && t < static_cast<int>(g.tensors().size()) ? json(g.tensors()[t].name) : json(t);
  };
  json k;
  k["kind"] = "library";
  k["op"] = GetOpInfo(lk.op).name;
  json a = json::array();
  for (int t : lk.operands) a.push_back(tensor(t));
  k["operands"] = a;
  k["result"] = tensor(lk.result);
  const OpAttr attr = GetOpInfo(lk.op).attr;
  if (attr == OpAttr::kDim || attr == OpAttr::kDimEps) k["dim"] = lk.dim;
  if (attr == OpAttr::kDimEps) k["eps"] = lk.eps;
  if (attr == OpAttr::kScalar) k["scalar"] = lk.scalar;
  return k;
}

// ---- parsing
// -------------------------------------------------------------------------------------
class Parser {
 public:
  absl::StatusOr<SGraph> Run(const json& j) {
    if (!j.is_object()) return Error("", "found ", TypeName(j), ", expected an object");
    PRISM_ASSIGN_OR_RETURN(std::string format, String(j, "", "format"));
    if (format != kFormat) {
      return Error("format", "found \"", format, "\", expected \"", kFormat, "\"");
    }
    PRISM_ASSIGN_OR_RETURN(const json* version, Get(j, "", "version"));
    if (!version->is_number_integer() || version->get<int64_t>() != kVersion) {
      return Error("version", "found ", version->dump(), ", expected ", kVersion);
    }
    if (j.contains("name")) {
      PRISM_ASSIGN_OR_RETURN(std::string name, String(j, "", "name"));
      g_.set_name(name);
    }
    PRISM_ASSIGN_OR_RETURN(const json* params, Array(j, "", "params"));
    for (size_t i = 0; i < params->size(); ++i) {
      PRISM_RETURN_IF_ERROR(ParseParam((*params)[i], absl::StrCat("params[", i, "]")));
    }
    PRISM_ASSIGN_OR_RETURN(const json* tensors, Array(j, "", "tensors"));
    for (size_t i = 0; i < tensors->size(); ++i) {
      PRISM_RETURN_IF_ERROR(ParseTensor((*tensors)[i], absl::StrCat("tensors[", i, "]")));
    }
    for (const char* key : {"inputs", "outputs"}) {
      PRISM_ASSIGN_OR_RETURN(const json* list, Array(j, "", key));
      for (size_t i = 0; i < list->size(); ++i) {
        PRISM_ASSIGN_OR_RETURN(int t, TensorRef((*list)[i], absl::StrCat(key, "[", i, "]")));
        (std::string(key) == "inputs" ? g_.mutable_inputs() : g_.mutable_outputs()).push_back(t);
      }
    }
    PRISM_ASSIGN_OR_RETURN(const json* kernels, Array(j, "", "kernels"));
    for (size_t i = 0; i < kernels->size(); ++i) {
      PRISM_RETURN_IF_ERROR(ParseKernel((*kernels)[i], absl::StrCat("kernels[", i, "]")));
    }
    return std::move(g_);
  }

 private:
  template <typename... Args>
  static absl::Status Error(absl::string_view path, const Args&... args) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.empty() ? "" : absl::StrCat(path, ": "), args...));
  }
  static std::string Join(absl::string_view path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }
  static std::string TypeName(const json& j) { return j.type_name(); }

  static absl::StatusOr<const json*> Get(const json& j, absl::string_view path,
                                         absl::string_view key) {
    if (!j.is_object()) return Error(path, "found ", TypeName(j), ", expected an object");
    auto it = j.find(std::string(key));
    if (it == j.end()) return Error(Join(path, key), "missing, expected a value");
    return &*it;
  }
  static absl::StatusOr<std::string> String(const json& j, absl::string_view path,
                                            absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    if (!v->is_string()) {
      return Error(Join(path, key), "found ", TypeName(*v), ", expected a string");
    }
    return v->get<std::string>();
  }
  static absl::StatusOr<const json*> Array(const json& j, absl::string_view path,
                                           absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    if (!v->is_array()) {
      return Error(Join(path, key), "found ", TypeName(*v), ", expected an array");
    }
    return v;
  }
  static absl::StatusOr<int64_t> Int(const json& j, absl::string_view path, absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    if (!v->is_number_integer()) {
      return Error(Join(path, key), "found ", v->dump(), ", expected an integer");
    }
    return v->get<int64_t>();
  }
  static absl::StatusOr<double> Number(const json& j, absl::string_view path,
                                       absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    if (!v->is_number()) return Error(Join(path, key), "found ", v->dump(), ", expected a number");
    return v->get<double>();
  }

  absl::StatusOr<Expr> ParseExprJson(const json& v, absl::string_view path) {
    if (v.is_number_integer()) return g_.Const(v.get<int64_t>());
    if (!v.is_string()) {
      return Error(path, "found ", v.dump(), ", expected an integer or an expression string");
    }
    absl::StatusOr<Expr> e = ParseIntExpr(g_.ctx(), v.get<std::string>());
    if (!e.ok()) return Error(path, e.status().message());
    return *e;
  }
  absl::StatusOr<Expr> ExprAt(const json& j, absl::string_view path, absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Get(j, path, key));
    return ParseExprJson(*v, Join(path, key));
  }
  template <size_t N>
  absl::StatusOr<std::array<Expr, N>> ExprArray(const json& j, absl::string_view path,
                                                absl::string_view key) {
    PRISM_ASSIGN_OR_RETURN(const json* v, Array(j, path, key));
    if (v->size() != N) {
      return Error(Join(path, key), "found ", v->size(), " entries, expected ", N);
    }
    std::array<Expr, N> out;
    for (size_t i = 0; i < N; ++i) {
      PRISM_ASSIGN_OR_RETURN(out[i],
                             ParseExprJson((*v)[i], absl::StrCat(Join(path, key), "[", i, "]")));
    }
    return out;
  }

  absl::Status ParseParam(const json& j, const std::string& path) {
    PRISM_ASSIGN_OR_RETURN(std::string name, String(j, path, "name"));
    PRISM_ASSIGN_OR_RETURN(std::string role_name, String(j, path, "role"));
    std::optional<ParamRole> role = ParseParamRole(role_name);
    if (!role.has_value()) {
      return Error(Join(path, "role"), "found \"", role_name,
                   "\", expected grid, forloop, threads, stages, map or size");
    }
    PRISM_ASSIGN_OR_RETURN(const json* dj, Get(j, path, "domain"));
    absl::StatusOr<Domain> domain = Domain::FromJson(*dj);
    if (!domain.ok()) return Error(Join(path, "domain"), domain.status().message());
    absl::StatusOr<Expr> var = g_.AddParam(name, *role, *domain);
    if (!var.ok()) return Error(Join(path, "name"), var.status().message());
    return absl::OkStatus();
  }

  absl::Status ParseTensor(const json& j, const std::string& path) {
    PRISM_ASSIGN_OR_RETURN(std::string name, String(j, path, "name"));
    PRISM_ASSIGN_OR_RETURN(std::string dtype_name, String(j, path, "dtype"));
    std::optional<DType> dtype = ParseDType(dtype_name);
    if (!dtype.has_value()) {
      return Error(Join(path, "dtype"), "found \"", dtype_name, "\", expected f16, bf16 or f32");
    }
    PRISM_ASSIGN_OR_RETURN(const json* shape, Array(j, path, "shape"));
    std::vector<Expr> dims;
    for (size_t i = 0; i < shape->size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(
          Expr d, ParseExprJson((*shape)[i], absl::StrCat(Join(path, "shape"), "[", i, "]")));
      dims.push_back(d);
    }
    if (g_.FindTensor(name).has_value()) {
      return Error(Join(path, "name"), "tensor '", name, "' is declared twice");
    }
    g_.AddTensor(name, *dtype, std::move(dims));
    return absl::OkStatus();
  }

  absl::StatusOr<int> TensorRef(const json& v, absl::string_view path) {
    if (v.is_number_integer()) {
      const int64_t t = v.get<int64_t>();
      if (t < 0 || t >= static_cast<int64_t>(g_.tensors().size())) {
        return Error(path, "tensor index ", t, " is out of range");
      }
      return static_cast<int>(t);
    }
    if (!v.is_string()) return Error(path, "found ", v.dump(), ", expected a tensor name");
    std::optional<int> t = g_.FindTensor(v.get<std::string>());
    if (!t.has_value()) {
      return Error(path, "unknown tensor '", v.get<std::string>(), "', expected a declared tensor");
    }
    return *t;
  }

  absl::Status ParseKernel(const json& j, const std::string& path) {
    Kernel kernel;
    if (j.is_object() && j.contains("name")) {
      PRISM_ASSIGN_OR_RETURN(kernel.name, String(j, path, "name"));
    }
    PRISM_ASSIGN_OR_RETURN(std::string kind, String(j, path, "kind"));
    if (kind == "library") {
      PRISM_ASSIGN_OR_RETURN(LibraryKernel lk, ParseLibrary(j, path));
      kernel.body = std::move(lk);
    } else if (kind == "block") {
      PRISM_ASSIGN_OR_RETURN(BlockGraph b, ParseBlock(j, path));
      kernel.body = std::move(b);
    } else {
      return Error(Join(path, "kind"), "found \"", kind, "\", expected \"block\" or \"library\"");
    }
    g_.AddKernel(std::move(kernel));
    return absl::OkStatus();
  }

  absl::StatusOr<LibraryKernel> ParseLibrary(const json& j, const std::string& path) {
    LibraryKernel lk;
    PRISM_ASSIGN_OR_RETURN(std::string op, String(j, path, "op"));
    std::optional<OpKind> kind = ParseOpName(op);
    if (!kind.has_value() || *kind == OpKind::kInput) {
      return Error(Join(path, "op"), "found \"", op, "\", expected a Program op (not input)");
    }
    lk.op = *kind;
    PRISM_ASSIGN_OR_RETURN(const json* operands, Array(j, path, "operands"));
    for (size_t i = 0; i < operands->size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(
          int t, TensorRef((*operands)[i], absl::StrCat(Join(path, "operands"), "[", i, "]")));
      lk.operands.push_back(t);
    }
    PRISM_ASSIGN_OR_RETURN(const json* result, Get(j, path, "result"));
    PRISM_ASSIGN_OR_RETURN(lk.result, TensorRef(*result, Join(path, "result")));
    if (j.contains("dim")) {
      PRISM_ASSIGN_OR_RETURN(lk.dim, Int(j, path, "dim"));
    }
    if (j.contains("eps")) {
      PRISM_ASSIGN_OR_RETURN(lk.eps, Number(j, path, "eps"));
    }
    if (j.contains("scalar")) {
      PRISM_ASSIGN_OR_RETURN(lk.scalar, Number(j, path, "scalar"));
    }
    return lk;
  }

  absl::StatusOr<BlockGraph> ParseBlock(const json& j, const std::string& path) {
    BlockGraph b;
    PRISM_ASSIGN_OR_RETURN(b.grid, ExprArray<kNumGridAxes>(j, path, "grid"));
    PRISM_ASSIGN_OR_RETURN(b.threads, ExprAt(j, path, "threads"));
    PRISM_ASSIGN_OR_RETURN(b.forloop, ExprAt(j, path, "forloop"));
    PRISM_ASSIGN_OR_RETURN(b.stages, ExprAt(j, path, "stages"));
    PRISM_ASSIGN_OR_RETURN(const json* ops, Array(j, path, "ops"));
    for (size_t i = 0; i < ops->size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(BlockOp op,
                             ParseOp(b, (*ops)[i], absl::StrCat(Join(path, "ops"), "[", i, "]")));
      b.ops.push_back(std::move(op));
    }
    return b;
  }

  absl::StatusOr<BlockOp> ParseOp(const BlockGraph& b, const json& j, const std::string& path) {
    BlockOp op;
    if (j.is_object() && j.contains("name")) {
      PRISM_ASSIGN_OR_RETURN(op.name, String(j, path, "name"));
    }
    PRISM_ASSIGN_OR_RETURN(std::string spelled, String(j, path, "op"));
    bool found = false;
    for (const BlockOpInfo& info : AllBlockOps()) {
      if (info.kind == BlockOpKind::kUnary || info.kind == BlockOpKind::kBinary ||
          info.kind == BlockOpKind::kReduce) {
        continue;
      }
      if (info.name == spelled) {
        op.kind = info.kind;
        found = true;
      }
    }
    if (!found) {
      std::optional<OpKind> fn = ParseOpName(spelled);
      const OpCategory cat = fn.has_value() ? GetOpInfo(*fn).category : OpCategory::kSource;
      if (cat == OpCategory::kUnary) {
        op.kind = BlockOpKind::kUnary;
      } else if (cat == OpCategory::kBinary) {
        op.kind = BlockOpKind::kBinary;
      } else if (fn == OpKind::kSum || fn == OpKind::kMax) {
        op.kind = BlockOpKind::kReduce;
      } else {
        return Error(Join(path, "op"), "found \"", spelled,
                     "\", expected a block op or a unary/binary/reduce function");
      }
      op.fn = *fn;
    }
    if (j.contains("operands")) {
      PRISM_ASSIGN_OR_RETURN(const json* operands, Array(j, path, "operands"));
      for (size_t i = 0; i < operands->size(); ++i) {
        const json& v = (*operands)[i];
        const std::string p = absl::StrCat(Join(path, "operands"), "[", i, "]");
        if (v.is_number_integer()) {
          op.operands.push_back(static_cast<int>(v.get<int64_t>()));
        } else if (v.is_string()) {
          std::optional<int> a = b.FindOp(v.get<std::string>());
          if (!a.has_value()) {
            return Error(p, "unknown op '", v.get<std::string>(),
                         "', expected the name of an earlier op of the kernel");
          }
          op.operands.push_back(*a);
        } else {
          return Error(p, "found ", v.dump(), ", expected an op name or index");
        }
      }
    }
    if (op.kind == BlockOpKind::kInput || op.kind == BlockOpKind::kOutput) {
      PRISM_ASSIGN_OR_RETURN(const json* t, Get(j, path, "tensor"));
      PRISM_ASSIGN_OR_RETURN(op.tensor, TensorRef(*t, Join(path, "tensor")));
      const bool input = op.kind == BlockOpKind::kInput;
      PRISM_ASSIGN_OR_RETURN(op.map, ExprArray<kNumGridAxes>(j, path, input ? "imap" : "omap"));
      if (input) {
        PRISM_ASSIGN_OR_RETURN(op.fmap, ExprAt(j, path, "fmap"));
      }
    }
    if (op.kind == BlockOpKind::kUnary && op.fn == OpKind::kScale) {
      PRISM_ASSIGN_OR_RETURN(op.scalar, Number(j, path, "scalar"));
    }
    if (op.kind == BlockOpKind::kReduce || op.kind == BlockOpKind::kRms) {
      PRISM_ASSIGN_OR_RETURN(op.dim, Int(j, path, "dim"));
    }
    if (op.kind == BlockOpKind::kInvRms || op.kind == BlockOpKind::kDivCount) {
      PRISM_ASSIGN_OR_RETURN(op.count, ExprAt(j, path, "count"));
    }
    if ((op.kind == BlockOpKind::kRms || op.kind == BlockOpKind::kInvRms) && j.contains("eps")) {
      PRISM_ASSIGN_OR_RETURN(op.eps, Number(j, path, "eps"));
    }
    return op;
  }

  SGraph g_;
};

}  // namespace

json SGraphToJson(const SGraph& graph) {
  const ExprContext& ctx = graph.ctx();
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["name"] = graph.name();
  json params = json::array();
  for (const Param& p : graph.params()) {
    params.push_back({{"name", p.name},
                      {"role", ParamRoleName(p.role)},
                      {"domain", ctx.var_domain(p.var).ToString()}});
  }
  j["params"] = std::move(params);
  json tensors = json::array();
  for (const SGraphTensor& t : graph.tensors()) {
    tensors.push_back(
        {{"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"shape", ExprsJson(ctx, t.shape)}});
  }
  j["tensors"] = std::move(tensors);
  auto names = [&](const std::vector<int>& ids) {
    json a = json::array();
    for (int t : ids) {
      a.push_back(t >= 0 && t < static_cast<int>(graph.tensors().size())
                      ? json(graph.tensors()[t].name)
                      : json(t));
    }
    return a;
  };
  j["inputs"] = names(graph.inputs());
  j["outputs"] = names(graph.outputs());
  json kernels = json::array();
  for (const Kernel& k : graph.kernels()) {
    json kj = k.is_block() ? BlockJson(graph, k.block()) : LibraryJson(graph, k.library());
    if (!k.name.empty()) kj["name"] = k.name;
    kernels.push_back(std::move(kj));
  }
  j["kernels"] = std::move(kernels);
  return j;
}

absl::StatusOr<SGraph> SGraphFromJson(const json& j) { return Parser().Run(j); }

absl::StatusOr<SGraph> SGraphFromJsonText(absl::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed JSON: ", e.what()));
  }
  return SGraphFromJson(j);
}

nlohmann::ordered_json AssignmentJson(const SGraph& graph, const Assignment& a) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Param& p : graph.params()) {
    auto it = a.find(p.name);
    if (it != a.end()) j[p.name] = it->second;
  }
  return j;
}

}  // namespace prism
