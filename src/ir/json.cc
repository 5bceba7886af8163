// JSON export/import of a Program (include/prism/ir/json.h).
//
// Export writes every tensor in Program order with its name, op, operands (indices into
// "tensors"), attributes, dtype and shape (inferred ones included, for tools); import checks
// every field with the JSON path in the message, feeds a ProgramBuilder in "tensors" order, and
// finally checks any dtype/shape given for a computed tensor against the inferred one.
//
//   nlohmann::json j = ProgramToJson(p);
//   absl::StatusOr<Program> q = ProgramFromJson(j);   // *q == p, comments aside
#include "prism/ir/json.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/status.h"

namespace prism {
namespace {

using nlohmann::json;

constexpr absl::string_view kFormat = "prism.program";
constexpr int kVersion = 1;

absl::Status PathError(absl::string_view path, absl::string_view found,
                       absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(path.empty() ? "(root)" : path, ": found ", found, ", expected ", expected));
}

// A short description of a JSON value for "found ...": scalars verbatim (truncated), containers
// by kind only (printing them would recurse through arbitrarily deep input).
std::string DescribeValue(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array())
    return absl::StrCat("an array of ", v.size(), " element", v.size() == 1 ? "" : "s");
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = absl::StrCat(s.substr(0, 57), "...");
  return s;
}

// Rejects keys outside `allowed`.
absl::Status CheckKeys(const json& object, absl::string_view path,
                       const std::vector<absl::string_view>& allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (absl::string_view key : allowed) known = known || it.key() == key;
    if (!known) {
      return PathError(absl::StrCat(path, path.empty() ? "" : ".", it.key()), "an unknown key",
                       absl::StrCat("one of ", absl::StrJoin(allowed, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> GetInt(const json& v, absl::string_view path, absl::string_view what) {
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() &&
       v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return PathError(path, DescribeValue(v), what);
  }
  return v.get<int64_t>();
}

absl::StatusOr<double> GetNumber(const json& v, absl::string_view path) {
  if (!v.is_number()) return PathError(path, DescribeValue(v), "a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) return PathError(path, DescribeValue(v), "a finite number");
  return d;
}

absl::StatusOr<std::string> GetString(const json& v, absl::string_view path,
                                      absl::string_view what) {
  if (!v.is_string()) return PathError(path, DescribeValue(v), what);
  return v.get<std::string>();
}

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

absl::StatusOr<Shape> GetShape(const json& v, absl::string_view path) {
  if (!v.is_array()) return PathError(path, DescribeValue(v), "an array of 1 to 4 dimensions");
  if (v.empty() || v.size() > static_cast<size_t>(kMaxRank)) {
    return PathError(path, absl::StrCat(v.size(), " dimensions"),
                     absl::StrCat("1 to ", kMaxRank, " dimensions"));
  }
  Shape shape;
  const std::string range = absl::StrCat("a dimension in 1..", kMaxDim);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = absl::StrCat(path, "[", i, "]");
    PRISM_ASSIGN_OR_RETURN(const int64_t d, GetInt(v.at(i), p, range));
    if (d < 1 || d > kMaxDim) return PathError(p, absl::StrCat(d), range);
    shape.push_back(d);
  }
  return shape;
}

// One element of "tensors" → a Node with operands as raw indices (checked against `count`).
absl::StatusOr<Node> TensorFromJson(const json& t, const std::string& path, size_t count) {
  if (!t.is_object()) return PathError(path, DescribeValue(t), "an object");
  PRISM_RETURN_IF_ERROR(
      CheckKeys(t, path, {"name", "op", "operands", "dim", "scalar", "eps", "dtype", "shape"}));
  Node node;
  if (t.contains("name")) {
    PRISM_ASSIGN_OR_RETURN(node.name,
                           GetString(t.at("name"), path + ".name", "a string (\"\" = anonymous)"));
  }
  std::vector<absl::string_view> op_names;
  for (const OpInfo& info : AllOps()) op_names.push_back(info.name);
  const std::string op_list = absl::StrCat("one of ", absl::StrJoin(op_names, ", "));
  if (!t.contains("op")) return PathError(path + ".op", "nothing", op_list);
  PRISM_ASSIGN_OR_RETURN(const std::string op_name, GetString(t.at("op"), path + ".op", op_list));
  const std::optional<OpKind> op = ParseOpName(op_name);
  if (!op.has_value()) return PathError(path + ".op", Quoted(op_name), op_list);
  node.op = *op;
  const OpInfo& info = GetOpInfo(*op);

  // Type: declared for inputs; for computed tensors optional and checked after Build().
  if (info.kind == OpKind::kInput) {
    for (absl::string_view key : {"dtype", "shape"}) {
      if (!t.contains(key)) {
        return PathError(absl::StrCat(path, ".", key), "nothing",
                         key == "dtype" ? "the dtype of the input" : "the shape of the input");
      }
    }
  }
  if (t.contains("dtype")) {
    const std::string p = path + ".dtype";
    PRISM_ASSIGN_OR_RETURN(const std::string name,
                           GetString(t.at("dtype"), p, "one of \"f16\", \"bf16\", \"f32\""));
    const std::optional<DType> dtype = ParseDType(name);
    if (!dtype.has_value()) return PathError(p, Quoted(name), "one of \"f16\", \"bf16\", \"f32\"");
    node.dtype = *dtype;
  }
  if (t.contains("shape")) {
    PRISM_ASSIGN_OR_RETURN(node.shape, GetShape(t.at("shape"), path + ".shape"));
  }

  // Operands.
  const std::string usage_arity = info.arity < 0 ? "at least 2" : absl::StrCat(info.arity);
  if (info.arity == 0) {
    if (t.contains("operands") && !(t.at("operands").is_array() && t.at("operands").empty())) {
      return PathError(path + ".operands", DescribeValue(t.at("operands")),
                       absl::StrCat("no operands (", info.name, " has none)"));
    }
  } else {
    if (!t.contains("operands")) {
      return PathError(path + ".operands", "nothing",
                       absl::StrCat("an array of ", usage_arity, " tensor indices"));
    }
    const json& ops = t.at("operands");
    const std::string p = path + ".operands";
    if (!ops.is_array()) {
      return PathError(p, DescribeValue(ops),
                       absl::StrCat("an array of ", usage_arity, " tensor indices"));
    }
    if ((info.arity >= 0 && ops.size() != static_cast<size_t>(info.arity)) ||
        (info.arity < 0 && ops.size() < 2)) {
      return PathError(p, absl::StrCat(ops.size(), " operand", ops.size() == 1 ? "" : "s"),
                       absl::StrCat(usage_arity, " for ", info.name));
    }
    const std::string range =
        count == 0 ? "a tensor index" : absl::StrCat("a tensor index in 0..", count - 1);
    for (size_t k = 0; k < ops.size(); ++k) {
      const std::string pk = absl::StrCat(p, "[", k, "]");
      PRISM_ASSIGN_OR_RETURN(const int64_t index, GetInt(ops.at(k), pk, range));
      if (index < 0 || static_cast<uint64_t>(index) >= count) {
        return PathError(pk, absl::StrCat(index), range);
      }
      node.operands.push_back(TensorId(static_cast<uint32_t>(index)));
    }
  }

  // Attributes.
  const bool wants_dim = info.attr == OpAttr::kDim || info.attr == OpAttr::kDimEps;
  const bool wants_scalar = info.attr == OpAttr::kScalar;
  const bool wants_eps = info.attr == OpAttr::kDimEps;
  auto unexpected = [&](absl::string_view key) {
    return PathError(absl::StrCat(path, ".", key), DescribeValue(t.at(std::string(key))),
                     absl::StrCat("no \"", key, "\" (", info.name, " takes no ", key, ")"));
  };
  if (t.contains("dim")) {
    if (!wants_dim) return unexpected("dim");
    PRISM_ASSIGN_OR_RETURN(node.dim, GetInt(t.at("dim"), path + ".dim", "an integer dim"));
  } else if (wants_dim) {
    return PathError(path + ".dim", "nothing", absl::StrCat("the dim of ", info.name));
  }
  if (t.contains("scalar")) {
    if (!wants_scalar) return unexpected("scalar");
    PRISM_ASSIGN_OR_RETURN(node.scalar, GetNumber(t.at("scalar"), path + ".scalar"));
  } else if (wants_scalar) {
    return PathError(path + ".scalar", "nothing", absl::StrCat("the constant of ", info.name));
  }
  if (t.contains("eps")) {
    if (!wants_eps) return unexpected("eps");
    PRISM_ASSIGN_OR_RETURN(node.eps, GetNumber(t.at("eps"), path + ".eps"));
  }
  return node;
}

absl::StatusOr<Program> FromJsonImpl(const json& j) {
  if (!j.is_object()) {
    return PathError("", DescribeValue(j),
                     "an object with keys \"format\", \"version\", \"tensors\", \"outputs\"");
  }
  PRISM_RETURN_IF_ERROR(CheckKeys(j, "", {"format", "version", "tensors", "outputs"}));
  auto found = [&](const char* key) {
    return j.contains(key) ? DescribeValue(j.at(key)) : std::string("nothing");
  };
  if (!j.contains("format") || !j.at("format").is_string() ||
      j.at("format").get<std::string>() != kFormat) {
    return PathError("format", found("format"), Quoted(kFormat));
  }
  if (!j.contains("version") || !j.at("version").is_number_integer() ||
      j.at("version").get<int64_t>() != kVersion) {
    return PathError("version", found("version"), absl::StrCat(kVersion));
  }
  if (!j.contains("tensors") || !j.at("tensors").is_array()) {
    return PathError("tensors", found("tensors"), "an array of tensors");
  }
  if (!j.contains("outputs") || !j.at("outputs").is_array()) {
    return PathError("outputs", found("outputs"), "an array of output names or tensor indices");
  }
  const json& tensors = j.at("tensors");
  const size_t count = tensors.size();

  // The dtype/shape given for each computed tensor, checked after Build().
  struct Declared {
    std::optional<DType> dtype;
    std::optional<Shape> shape;
  };
  ProgramBuilder builder;
  std::vector<Declared> declared(count);
  absl::flat_hash_map<std::string, uint32_t> by_name;
  for (size_t i = 0; i < count; ++i) {
    PRISM_ASSIGN_OR_RETURN(Node node,
                           TensorFromJson(tensors.at(i), absl::StrCat("tensors[", i, "]"), count));
    if (!node.name.empty()) by_name.emplace(node.name, static_cast<uint32_t>(i));
    if (node.op != OpKind::kInput) {
      if (tensors.at(i).contains("dtype")) declared[i].dtype = node.dtype;
      if (tensors.at(i).contains("shape")) declared[i].shape = node.shape;
    }
    builder.AddNode(std::move(node));
  }

  const json& outputs = j.at("outputs");
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string p = absl::StrCat("outputs[", k, "]");
    const json& o = outputs.at(k);
    const std::string expected = count == 0
                                     ? "a tensor name or index"
                                     : absl::StrCat("a tensor name or an index in 0..", count - 1);
    if (o.is_string()) {
      auto it = by_name.find(o.get<std::string>());
      if (it == by_name.end()) {
        return PathError(p, DescribeValue(o),
                         absl::StrCat("the name of a tensor (", expected, ")"));
      }
      builder.Output(TensorId(it->second));
    } else if (o.is_number_integer()) {
      PRISM_ASSIGN_OR_RETURN(const int64_t index, GetInt(o, p, expected));
      if (index < 0 || static_cast<uint64_t>(index) >= count) {
        return PathError(p, DescribeValue(o), expected);
      }
      builder.Output(TensorId(static_cast<uint32_t>(index)));
    } else {
      return PathError(p, DescribeValue(o), expected);
    }
  }

  PRISM_ASSIGN_OR_RETURN(Program program, std::move(builder).Build());
  for (size_t i = 0; i < count; ++i) {
    const Declared& d = declared[i];
    const Node& actual = program.node(program.builder_to_program()[i]);
    if (d.dtype.has_value() && *d.dtype != actual.dtype) {
      return PathError(absl::StrCat("tensors[", i, "].dtype"), Quoted(DTypeName(*d.dtype)),
                       absl::StrCat(Quoted(DTypeName(actual.dtype)), " (the inferred dtype)"));
    }
    if (d.shape.has_value() && *d.shape != actual.shape) {
      return PathError(absl::StrCat("tensors[", i, "].shape"), ShapeToString(*d.shape),
                       absl::StrCat(ShapeToString(actual.shape), " (the inferred shape)"));
    }
  }
  return program;
}

}  // namespace

json ProgramToJson(const Program& program) {
  json tensors = json::array();
  for (const Node& node : program.nodes()) {
    const OpInfo& info = GetOpInfo(node.op);
    json t = json::object();
    t["name"] = node.name;
    t["op"] = std::string(info.name);
    if (node.op != OpKind::kInput) {
      json ops = json::array();
      for (TensorId o : node.operands) ops.push_back(o.value());
      t["operands"] = std::move(ops);
    }
    switch (info.attr) {
      case OpAttr::kNone: break;
      case OpAttr::kDim: t["dim"] = node.dim; break;
      case OpAttr::kScalar: t["scalar"] = node.scalar; break;
      case OpAttr::kDimEps:
        t["dim"] = node.dim;
        t["eps"] = node.eps;
        break;
    }
    t["dtype"] = std::string(DTypeName(node.dtype));
    t["shape"] = node.shape;
    tensors.push_back(std::move(t));
  }
  json outputs = json::array();
  for (const OutputDecl& out : program.outputs()) {
    const Node& node = program.node(out.tensor);
    if (node.name.empty()) {
      outputs.push_back(out.tensor.value());
    } else {
      outputs.push_back(node.name);
    }
  }
  json j = json::object();
  j["format"] = std::string(kFormat);
  j["version"] = kVersion;
  j["tensors"] = std::move(tensors);
  j["outputs"] = std::move(outputs);
  return j;
}

absl::StatusOr<Program> ProgramFromJson(const json& j) {
  try {
    return FromJsonImpl(j);
  } catch (const json::exception& e) {
    // Not expected (every access is type-checked first); never let it escape.
    return absl::InternalError(absl::StrCat("unexpected JSON error: ", e.what()));
  }
}

absl::StatusOr<Program> ProgramFromJsonText(absl::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the byte where parsing failed (size + 1 at the end).
    const size_t end = std::min<size_t>(e.byte, text.size() + 1);
    int line = 1, column = 1;
    for (size_t i = 0; i + 1 < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error while parsing value - invalid literal; last read: 'x'". Keep the part
    // after the position.
    absl::string_view what = e.what();
    if (const size_t colon = what.find(": "); colon != absl::string_view::npos) {
      what.remove_prefix(colon + 2);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        line, ":", column, ": found malformed JSON, expected a JSON document (", what, ")"));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("found malformed JSON, expected a JSON document (", e.what(), ")"));
  }
  return ProgramFromJson(j);
}

}  // namespace prism
