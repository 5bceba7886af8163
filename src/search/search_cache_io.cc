// search/: The shape-independent search cache (cache.h): structure templates to and from JSON,
// replay. (searcher.h)
#include "searcher.h"

namespace prism::search::internal {

std::optional<BlockOpKind> Searcher::BlockOpByName(absl::string_view name) {
#define PRISM_BLOCK_OP(e, spelling, cat, arity) \
  if (name == spelling) return BlockOpKind::e;
#include "prism/block/block_ops.def"
#undef PRISM_BLOCK_OP
  return std::nullopt;
}

std::string Searcher::CacheKey() const {
  StableHasher h;
  h.Add(uint64_t{0x5ea4c4});  // format 1
  // The generator's revision: a cache written by an earlier generator may lack structures
  // (2: a root value in the loop phase is also accumulated, Searcher::AccumulateRoot; 3: add
  // and mul of a value with itself; 4: scale ops; 5: div_count for mean; 6: the root
  // accumulation also of a matmul whose A is elementwise ops of inputs; 7: rms and inv_rms
  // with the Program's eps, stored in the templates).
  h.Add(uint64_t{7});
  for (const Node& n : program_.nodes()) {
    h.Add(static_cast<int>(n.op)).Add(static_cast<int>(n.dtype)).Add(n.dim).Add(n.scalar).Add(n.eps);
    h.Add(static_cast<uint64_t>(n.operands.size()));
    for (TensorId o : n.operands) h.Add(o.value());
    h.Add(static_cast<uint64_t>(n.shape.size()));
    for (int64_t d : n.shape) h.Add(d == 1);
  }
  for (const OutputDecl& o : program_.outputs()) h.Add(o.tensor.value());
  for (char ch : target_.name) h.Add(static_cast<int>(ch));
  h.Add(config_.max_kernels).Add(config_.max_grid_dims).Add(config_.max_block_ops).Add(config_.max_accumulators);
  return absl::StrCat("search-", HashToHex(h.Finish()));
}

nlohmann::json Searcher::TemplateJson(const Template& t) const {
  nlohmann::json ops = nlohmann::json::array();
  for (const GenOp& op : t.ops) {
    nlohmann::json j = {{"kind", std::string(GetBlockOpInfo(op.kind).name)}};
    if (op.kind == BlockOpKind::kInput) j["input"] = op.count;
    if (op.kind == BlockOpKind::kUnary || op.kind == BlockOpKind::kBinary || op.kind == BlockOpKind::kReduce) {
      j["fn"] = std::string(GetOpInfo(op.fn).name);
      if (op.fn == OpKind::kScale) j["scalar"] = op.scalar;
    }
    if (op.a >= 0) j["a"] = op.a;
    if (op.b >= 0) j["b"] = op.b;
    if (op.kind == BlockOpKind::kRms || op.kind == BlockOpKind::kInvRms) j["eps"] = op.scalar;
    if (op.kind == BlockOpKind::kInvRms) {
      for (size_t i = 0; i < program_.inputs().size(); ++i) {
        const Shape& sh = program_.node(program_.inputs()[i]).shape;
        if (!sh.empty() && sh.back() == op.count) {
          j["count_of_input"] = i;
          break;
        }
      }
    }
    if (op.kind == BlockOpKind::kDivCount) {
      // The first node whose last dim is the count (its extent at another size).
      for (size_t i = 0; i < program_.nodes().size(); ++i) {
        const Shape& sh = program_.nodes()[i].shape;
        if (!sh.empty() && sh.back() == op.count) {
          j["count_of_node"] = i;
          break;
        }
      }
    }
    ops.push_back(j);
  }
  nlohmann::json imap = nlohmann::json::array();
  for (const auto& a : t.maps.imap) imap.push_back(std::vector<int64_t>(a.begin(), a.end()));
  return {{"ops", ops},
          {"axes", t.maps.axes},
          {"omap", std::vector<int64_t>(t.maps.omap.begin(), t.maps.omap.end())},
          {"imap", imap},
          {"fmap", t.maps.fmap}};
}

std::optional<std::pair<Searcher::Template, std::vector<Value>>> Searcher::TemplateFromJson(
    const nlohmann::json& j) const {
  const size_t inputs = program_.inputs().size();
  Template t;
  std::vector<Value> values;
  const Shape& out_shape = program_.node(program_.outputs()[0].tensor).shape;
  try {
    for (const nlohmann::json& o : j.at("ops")) {
      std::optional<BlockOpKind> kind = BlockOpByName(o.at("kind").get<std::string>());
      if (!kind) return std::nullopt;
      GenOp op;
      op.kind = *kind;
      op.a = o.value("a", -1);
      op.b = o.value("b", -1);
      const int n = static_cast<int>(t.ops.size());
      if ((op.a >= n) || (op.b >= n) || (op.kind != BlockOpKind::kInput && op.a < 0)) return std::nullopt;
      if (o.contains("fn")) {
        std::optional<OpKind> fn = ParseOpName(o.at("fn").get<std::string>());
        if (!fn) return std::nullopt;
        op.fn = *fn;
        if (op.fn == OpKind::kScale) op.scalar = o.at("scalar").get<double>();
      }
      if (op.kind == BlockOpKind::kInput) {
        op.count = o.at("input").get<int64_t>();
        if (op.count < 0 || op.count >= static_cast<int64_t>(inputs)) return std::nullopt;
      }
      if (op.kind == BlockOpKind::kRms || op.kind == BlockOpKind::kInvRms) {
        op.scalar = o.at("eps").get<double>();
      }
      if (op.kind == BlockOpKind::kInvRms) {
        const size_t i = o.at("count_of_input").get<size_t>();
        if (i >= inputs || program_.node(program_.inputs()[i]).shape.empty()) return std::nullopt;
        op.count = program_.node(program_.inputs()[i]).shape.back();
      }
      if (op.kind == BlockOpKind::kDivCount) {
        const size_t i = o.at("count_of_node").get<size_t>();
        if (i >= program_.nodes().size() || program_.nodes()[i].shape.empty()) return std::nullopt;
        op.count = program_.nodes()[i].shape.back();
      }
      std::optional<Value> v = ShapeOf(op, values);
      if (!v) return std::nullopt;
      t.ops.push_back(op);
      values.push_back(*v);
    }
    t.maps.axes = j.at("axes").get<int>();
    const std::vector<int64_t> omap = j.at("omap").get<std::vector<int64_t>>();
    const std::vector<std::vector<int64_t>> imap = j.at("imap").get<std::vector<std::vector<int64_t>>>();
    t.maps.fmap = j.at("fmap").get<std::vector<int64_t>>();
    if (t.maps.axes < 0 || t.maps.axes > kNumGridAxes || omap.size() != kNumGridAxes ||
        imap.size() != inputs || t.maps.fmap.size() != inputs) {
      return std::nullopt;
    }
    for (int a = 0; a < kNumGridAxes; ++a) t.maps.omap[a] = omap[a];
    for (int a = 0; a < t.maps.axes; ++a) {
      if (t.maps.omap[a] < 0 || t.maps.omap[a] >= static_cast<int64_t>(out_shape.size()) ||
          out_shape[t.maps.omap[a]] < 2) {
        return std::nullopt;
      }
    }
    for (size_t i = 0; i < inputs; ++i) {
      const int64_t rank = static_cast<int64_t>(program_.node(program_.inputs()[i]).shape.size());
      if (imap[i].size() != kNumGridAxes || t.maps.fmap[i] < kR || t.maps.fmap[i] >= rank) return std::nullopt;
      std::array<int64_t, kNumGridAxes> row{kR, kR, kR};
      for (int a = 0; a < kNumGridAxes; ++a) {
        if (imap[i][a] < kR || imap[i][a] >= rank) return std::nullopt;
        row[a] = imap[i][a];
      }
      t.maps.imap.push_back(row);
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return std::make_pair(std::move(t), std::move(values));
}

std::optional<Value> Searcher::ShapeOf(const GenOp& op, const std::vector<Value>& values) const {
  Value out;
  if (op.kind == BlockOpKind::kInput) {
    out.shape = program_.node(program_.inputs()[static_cast<size_t>(op.count)]).shape;
    return out;
  }
  const Value& a = values[op.a];
  out.after = a.after || IsAccumulator(op.kind);
  switch (op.kind) {
    case BlockOpKind::kMatMul: {
      if (op.b < 0) return std::nullopt;
      const Value& b = values[op.b];
      if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2]) {
        return std::nullopt;
      }
      out.shape = b.shape.size() > a.shape.size() ? b.shape : a.shape;
      out.shape[out.shape.size() - 2] = a.shape[a.shape.size() - 2];
      out.shape.back() = b.shape.back();
      out.after = out.after || b.after;
      return out;
    }
    case BlockOpKind::kBinary:
      if (op.b < 0) return std::nullopt;
      out.shape = Broadcast(a.shape, values[op.b].shape);
      out.after = out.after || values[op.b].after;
      return out;
    case BlockOpKind::kReduce:
    case BlockOpKind::kAccSumLast:
    case BlockOpKind::kAccSumSqLast:
    case BlockOpKind::kAccMaxLast:
      out.shape = a.shape;
      if (out.shape.empty()) return std::nullopt;
      out.shape.back() = 1;
      return out;
    case BlockOpKind::kUnary:
    case BlockOpKind::kRms:
    case BlockOpKind::kInvRms:
    case BlockOpKind::kDivCount:
    case BlockOpKind::kAccSum:
      out.shape = a.shape;
      return out;
    default:
      return std::nullopt;
  }
}

bool Searcher::ReplayCache() {
  if (config_.cache == nullptr) return false;
  std::optional<nlohmann::json> entry = config_.cache->Get(CacheKey());
  if (!entry || !entry->contains("templates") || !(*entry)["templates"].is_array()) return false;
  result_.cache_hit = true;
  for (const nlohmann::json& tj : (*entry)["templates"]) {
    std::optional<std::pair<Template, std::vector<Value>>> t = TemplateFromJson(tj);
    if (!t) continue;
    absl::Status s = TryMaps(t->first.ops, t->second, t->first.maps);
    (void)s;  // TryMaps only fails on budget, which it records
  }
  return true;
}

absl::Status Searcher::RecordCache() {
  if (config_.cache == nullptr || result_.cache_hit || result_.budget_exhausted) return absl::OkStatus();
  std::vector<bool> keep(templates_.size(), false);
  for (const Candidate& c : candidates_) {
    if (c.template_index == kNoTemplate) continue;  // a library family: nothing to cache
    if (c.proof && c.proof->verdict == equiv::Verdict::kProved) keep[c.template_index] = true;
  }
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < templates_.size(); ++i) {
    if (keep[i]) list.push_back(TemplateJson(templates_[i]));
  }
  nlohmann::json entry = {{"format", "prism.search_cache"},
                          {"version", 1},
                          {"target", target_.name},
                          {"templates", list}};
  return config_.cache->Put(CacheKey(), std::move(entry));
}

}  // namespace prism::search::internal
