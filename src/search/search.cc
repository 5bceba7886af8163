// search/: Search() and the Searcher pipeline: argument checks, the target e-graph, the op
// vocabulary. (searcher.h)
#include "searcher.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/ir/types.h"

namespace prism::search::internal {

absl::StatusOr<SearchResult> Searcher::Run() {
  const absl::Time start = absl::Now();
  start_ = start;
  deadline_ = start + config_.budget;
  if (program_.outputs().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "search supports programs with one output; this one has ", program_.outputs().size(),
        " (search each output's program alone: OutputCone in prism/ir/program.h, as prism "
        "optimize does)"));
  }
  if (config_.max_kernels < 1 || config_.max_kernels > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_kernels = ", config_.max_kernels,
        ": expected 1 (one block graph) or 2 (also the split-reduction forms)"));
  }
  if (config_.max_grid_dims < 0 || config_.max_grid_dims > kNumGridAxes) {
    return absl::InvalidArgumentError(absl::StrCat("max_grid_dims = ", config_.max_grid_dims,
                                                   ": expected 0..", kNumGridAxes));
  }
  if (config_.library_kernel && !RunsAsOneLibraryKernel(program_)) {
    const Node& out = program_.node(program_.outputs()[0].tensor);
    return absl::InvalidArgumentError(absl::StrCat(
        "SearchConfig.library_kernel is set, but output ", out.name,
        out.op == OpKind::kInput ? " is an input"
                                 : absl::StrCat(" (", GetOpInfo(out.op).name,
                                                ") reads a computed tensor"),
        ": a library kernel runs one op of the program's inputs (cut the program first: "
        "SplitForFallback)"));
  }
  // The theories load (errors surface before any work); workers make their own pruners.
  PRISM_RETURN_IF_ERROR(prune::Pruner::Create(target_).status());
  if (std::optional<SGraph> lib = LibraryGraph()) {
    // No generation: the library op's one family (the cache has nothing to add).
    result_.funnel.generated = result_.funnel.structures = result_.funnel.map_validated = 1;
    Queue(*std::move(lib), kNoTemplate);
  } else if (!ReplayCache()) {
    PRISM_RETURN_IF_ERROR(BuildTarget());
    CollectVocabulary();
    std::vector<GenOp> ops;
    std::vector<Value> values;
    for (size_t i = 0; i < program_.inputs().size(); ++i) {
      const Node& n = program_.node(program_.inputs()[i]);
      std::optional<EClassId> c = index_->FindNode(Symbol(n.name), Payload(), {});
      if (!c) {
        return absl::InvalidArgumentError(absl::StrCat("input ", n.name, " is not used by the output"));
      }
      ops.push_back(GenOp{BlockOpKind::kInput, OpKind::kInput, -1, -1, static_cast<int64_t>(i)});
      canon_.push_back(Canonical(ops));
      values.push_back(Value{*c, false, n.shape});
    }
    if (RootProducible()) PRISM_RETURN_IF_ERROR(Extend(ops, values, 0));
  }
  const absl::Time generated = absl::Now();
  PRISM_RETURN_IF_ERROR(ProveAll());
  const absl::Time proved = absl::Now();
  PRISM_RETURN_IF_ERROR(PruneAndRank());
  PRISM_RETURN_IF_ERROR(RecordCache());
  result_.generate_s = absl::ToDoubleSeconds(generated - start);
  result_.prove_s = absl::ToDoubleSeconds(proved - generated);
  result_.prune_s = absl::ToDoubleSeconds(absl::Now() - proved);
  std::stable_sort(result_.families.begin(), result_.families.end(),
                   [](const FamilyResult& x, const FamilyResult& y) { return x.rank_us < y.rank_us; });
  result_.funnel.survivors = static_cast<int64_t>(result_.families.size());
  result_.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
  Report("done", 0, 0, /*force=*/true);
  return std::move(result_);
}

std::optional<SGraph> Searcher::LibraryGraph() const {
  const Node& out = program_.node(program_.outputs()[0].tensor);
  if (!RunsAsOneLibraryKernel(program_)) return std::nullopt;
  if (!config_.library_kernel && !RunsAsLibraryKernel(program_, out)) return std::nullopt;
  SGraph g("candidate");
  std::vector<int> index(program_.nodes().size(), -1);
  for (TensorId t : program_.inputs()) {
    const Node& n = program_.node(t);
    index[t.value()] = g.AddInput(n.name, n.dtype, n.shape);
  }
  LibraryKernel lk;
  lk.op = out.op;
  for (TensorId t : out.operands) lk.operands.push_back(index[t.value()]);
  lk.result = g.AddOutput(out.name, out.dtype, out.shape);
  lk.dim = out.dim;
  lk.scalar = out.scalar;
  lk.eps = out.eps;
  g.AddLibraryKernel("k0", lk);
  return g;
}

absl::Status Searcher::BuildTarget() {
  PRISM_ASSIGN_OR_RETURN(rules_, equiv::LoadDefaultRules(ctx_));
  PRISM_ASSIGN_OR_RETURN(equiv::Term goal, equiv::LowerProgramOutput(program_, 0));
  graph_ = std::make_unique<equiv::EGraph>(
      &ctx_, std::make_unique<equiv::TensorAnalysis>(equiv::ProgramEnv(program_, &ctx_)));
  const EClassId root = graph_->AddTerm(goal);
  equiv::Runner(graph_.get()).Run(rules_.rewrites());
  root_ = graph_->Find(root);
  ComputeDepths();
  index_ = std::make_unique<equiv::SubtermIndex>(graph_.get());
  return absl::OkStatus();
}

void Searcher::CollectVocabulary() {
  bool mean = false;  // the Program has mean: sum and div_count join the vocabulary
  bool concat = false;  // the Program has concat: add joins it (below)
  for (const Node& n : program_.nodes()) {
    const OpInfo& info = GetOpInfo(n.op);
    if (n.op == OpKind::kMatMul) matmul_ = true;
    if (info.category == OpCategory::kUnary && n.op != OpKind::kScale) unary_.insert(n.op);
    if (n.op == OpKind::kScale) scales_.insert(n.scalar);
    if (info.category == OpCategory::kBinary) {
      binary_.insert(n.op);
      if (n.operands.size() == 2 && n.operands[0] == n.operands[1]) self_binary_.insert(n.op);
    }
    if (n.op == OpKind::kSum) sum_ = true;
    if (n.op == OpKind::kMax) max_ = true;
    if (n.op == OpKind::kRmsNorm) {
      rms_ = true;
      rms_eps_.insert(n.eps);
    }
    if (n.op == OpKind::kMean) sum_ = mean = true;
    if (n.op == OpKind::kConcat) concat = true;
    if (n.op == OpKind::kSoftmax) {
      unary_.insert(OpKind::kExp);
      binary_.insert(OpKind::kDiv);
      sum_ = true;
    }
  }
  if (rms_) binary_.insert(OpKind::kMul);
  // A matmul of concats is a sum of matmuls (rule matmul-concat: [A ‖ C]·[B ; D] = A·B + C·D):
  // with a concat in the Program, add joins the vocabulary, so that such a sum can be built.
  // Before 2026-12-05 [X ‖ Z]·[W1 ; W2] had no family.
  if (concat) binary_.insert(OpKind::kAdd);
  if (mean) {
    for (const Node& n : program_.nodes()) {
      if (!n.shape.empty() && n.shape.back() > 1) div_counts_.insert(n.shape.back());
      // mean-def's count: the reduced dim's size, 1 included (mean over a dim of one element
      // had no family, 2026-12-05).
      if (n.op == OpKind::kMean && n.operands.size() == 1) {
        const Shape& x = program_.node(n.operands[0]).shape;
        const absl::StatusOr<int> d = NormalizeDim(n.dim, static_cast<int>(x.size()));
        if (d.ok()) div_counts_.insert(x[*d]);
      }
    }
  }
  for (TensorId in : program_.inputs()) {
    const Shape& s = program_.node(in).shape;
    if (!s.empty()) counts_.insert(s.back());
  }
}

std::optional<EClassId> Searcher::Int(int64_t v) {
  return index_->FindNode(LeafOpFor(Payload::Kind::kInt), Payload::Int(v), {});
}

std::optional<EClassId> Searcher::Node1(absl::string_view op, std::vector<std::optional<EClassId>> kids) {
  std::vector<EClassId> k;
  for (auto& c : kids) {
    if (!c) return std::nullopt;
    k.push_back(*c);
  }
  return index_->FindNode(Symbol(op), Payload(), k);
}

}  // namespace prism::search::internal

namespace prism::search {
namespace {

// " (line N)" for a node parsed from text, "" for one built in code.
std::string LineText(const Node& n) {
  return n.loc.line > 0 ? absl::StrCat(" (line ", n.loc.line, ")") : std::string();
}

}  // namespace

std::string NoFamilyHint(const Program& program) {
  for (const Node& n : program.nodes()) {
    if (n.op == OpKind::kConcat) {
      return absl::StrCat("; concat", LineText(n),
                          " is not a block op: it runs as a kernel of its own "
                          "(prism::OptimizeParts and prism optimize cut the program there: "
                          "search SplitAtLibraryOp)");
    }
  }
  // A reduction over another dim than the last: every block op that reduces (sum, max, rms,
  // the accumulators) reduces the last dim. (Also a dim of one element: the search has no
  // family for sum(X[1, 8], 0) either.)
  for (const Node& n : program.nodes()) {
    const OpCategory cat = GetOpInfo(n.op).category;
    if ((cat != OpCategory::kReduce && cat != OpCategory::kNorm) || n.operands.size() != 1) {
      continue;
    }
    const Node& x = program.node(n.operands[0]);
    const int rank = static_cast<int>(x.shape.size());
    const absl::StatusOr<int> dim = NormalizeDim(n.dim, rank);
    if (!dim.ok() || *dim == rank - 1) continue;
    return absl::StrCat("; ", GetOpInfo(n.op).name, LineText(n), " reduces dim ", n.dim, " of ",
                        DTypeName(x.dtype), ShapeToString(x.shape),
                        ", and block ops reduce the last dim only: it runs as a kernel of its "
                        "own (prism::OptimizeParts and prism optimize cut the program there: "
                        "search SplitAtLibraryOp)");
  }
  for (const Node& n : program.nodes()) {
    if (GetOpInfo(n.op).category != OpCategory::kBinary || n.operands.size() != 2) continue;
    for (TensorId o : n.operands) {
      const Node& x = program.node(o);
      if (x.op != OpKind::kInput || x.shape.size() >= n.shape.size()) continue;
      Shape wanted(n.shape.size() - x.shape.size(), 1);
      wanted.insert(wanted.end(), x.shape.begin(), x.shape.end());
      return absl::StrCat("; ", x.name, " ", DTypeName(x.dtype), ShapeToString(x.shape),
                          " is broadcast against rank ", n.shape.size(), " by ",
                          GetOpInfo(n.op).name, LineText(n), ": declare it as ",
                          DTypeName(x.dtype), ShapeToString(wanted),
                          " (the same elements; the block graph pairs tiles of equal rank)");
    }
  }
  return "";
}

std::string FunnelStopHint(const Funnel& f) {
  if (f.generated == 0) {
    return "; no block op sequence could start it (its ops are outside the block-op vocabulary)";
  }
  if (f.structures == 0) {
    return absl::StrCat("; none of the ", f.generated,
                        " block-op sequences explored completes the program");
  }
  if (f.mapped == 0) {
    return absl::StrCat("; its ", f.structures, " complete structure", f.structures == 1 ? "" : "s",
                        " had no dimension mapping that validates (", f.map_validated,
                        " map choice", f.map_validated == 1 ? "" : "s", " built)");
  }
  if (f.proved == 0) {
    return absl::StrCat("; none of its ", f.mapped, " mapped candidate", f.mapped == 1 ? "" : "s",
                        " was proved equal to the program (", f.refuted,
                        " refuted by random testing, ", f.unproved - f.refuted, " unknown)");
  }
  std::vector<std::string> rules;
  for (const auto& [rule, n] : f.pruned_by_rule) rules.push_back(absl::StrCat(rule, " ", n));
  return absl::StrCat(f.proved == 1 ? "; its one proved family was"
                                     : absl::StrCat("; all ", f.proved, " proved families were"),
                      " pruned (", rules.empty() ? "no rule credited" : absl::StrJoin(rules, ", "),
                      ")");
}

std::string NoFamilyReason(const Program& program, const SearchResult& result) {
  std::string hint = NoFamilyHint(program);
  if (hint.empty() && !result.budget_exhausted) hint = FunnelStopHint(result.funnel);
  return hint;
}

std::optional<ChainedMatmul> FindChainedMatmul(const Program& program) {
  for (size_t k = 0; k < program.nodes().size(); ++k) {
    const Node& n = program.nodes()[k];
    if (n.op != OpKind::kMatMul || n.operands.size() != 2) continue;
    // Down the A operand through elementwise ops to a matmul.
    ChainedMatmul c;
    c.consumer = TensorId(static_cast<uint32_t>(k));
    c.cut = n.operands[0];
    TensorId t = c.cut;
    while (true) {
      const Node& x = program.node(t);
      const OpCategory cat = GetOpInfo(x.op).category;
      if (x.op == OpKind::kMatMul) {
        if (x.shape.empty() || x.shape.back() <= 16) break;  // lora's chained X·A fits
        c.producer = t;
        std::reverse(c.via.begin(), c.via.end());
        return c;
      }
      if ((cat != OpCategory::kUnary && cat != OpCategory::kBinary) || x.operands.empty()) break;
      c.via.push_back(std::string(GetOpInfo(x.op).name));
      // A binary op: follow the operand that is not an input (the first if both are not).
      t = x.operands[0];
      if (x.operands.size() == 2 && program.node(t).op == OpKind::kInput) t = x.operands[1];
    }
  }
  return std::nullopt;
}

std::string ChainedMatmulHint(const Program& program) {
  const std::optional<ChainedMatmul> c = FindChainedMatmul(program);
  if (!c) return "";
  const Node& producer = program.node(c->producer);
  return absl::StrCat(
      "; matmul", LineText(program.node(c->consumer)), " reads the ",
      ShapeToString(producer.shape), " result of matmul", LineText(producer),
      c->via.empty() ? "" : absl::StrCat(" through ", absl::StrJoin(c->via, ", ")),
      ": a kernel would keep that intermediate whole in each block: optimize the two parts as "
      "separate programs, the first with the intermediate as its output and the second with it "
      "as an input (prism::OptimizeParts and prism optimize do: search SplitAtChainedMatmul)");
}

std::string RowAlignmentHint(const Program& program) {
  std::vector<bool> io(program.nodes().size(), false);
  for (TensorId in : program.inputs()) io[in.value()] = true;
  for (const OutputDecl& o : program.outputs()) io[o.tensor.value()] = true;
  std::vector<std::string> odd;
  int64_t multiple = 0;
  for (size_t k = 0; k < io.size(); ++k) {
    const Node& n = program.nodes()[k];
    if (!io[k] || n.shape.empty()) continue;
    const int bytes = DTypeBytes(n.dtype);
    if (n.shape.back() * bytes % 16 == 0) continue;
    odd.push_back(absl::StrCat(n.name.empty() ? "an output" : n.name, " ", DTypeName(n.dtype),
                               ShapeToString(n.shape)));
    multiple = std::max<int64_t>(multiple, 16 / bytes);
  }
  if (odd.empty()) return "";
  return absl::StrCat("; ", absl::StrJoin(odd, ", "),
                      odd.size() == 1 ? " has rows" : " have rows",
                      " that are not whole 16-byte chunks, which the kernels load and store: "
                      "make the last dims multiples of 16 bytes (",
                      multiple, " elements of ", multiple == 8 ? "f16 or bf16" : "f32",
                      "), e.g. by padding with zeros where the program allows");
}

absl::StatusOr<std::optional<ChainedSplit>> SplitAtChainedMatmul(const Program& program) {
  std::optional<ChainedMatmul> chain = FindChainedMatmul(program);
  if (!chain) return std::nullopt;
  std::string name = program.node(chain->cut).name;
  for (int k = 0; name.empty(); ++k) {
    const std::string n = k == 0 ? "H" : absl::StrCat("H", k);
    if (!program.Find(n)) name = n;
  }
  PRISM_ASSIGN_OR_RETURN(ProgramSplit split, SplitAt(program, chain->cut, name));
  ChainedSplit out{*std::move(chain), {std::move(split.first), std::move(split.second)}, {}};
  out.names[0] = name;
  out.names[1] = out.parts[1].node(out.parts[1].outputs()[0].tensor).name;
  return out;
}

namespace {

// The first of `base`, base1, base2, ... that names no tensor of `program`.
std::string FreshName(const Program& program, absl::string_view base) {
  for (int k = 0;; ++k) {
    std::string n = k == 0 ? std::string(base) : absl::StrCat(base, k);
    if (!program.Find(n)) return n;
  }
}

std::string Manifest(const std::string& label, const Program& program, TensorId cut_tensor,
                     const Program (&parts)[2], const std::string (&names)[2]) {
  const Node& cut = program.node(cut_tensor);
  nlohmann::ordered_json j = {
      {"format", "prism.split"},
      {"version", 1},
      {"program", label},
      {"cut", {{"tensor", names[0]}, {"dtype", DTypeName(cut.dtype)}, {"shape", cut.shape}}},
      {"parts", nlohmann::ordered_json::array()}};
  for (int i = 0; i < 2; ++i) {
    const Program& part = parts[i];
    std::vector<std::string> ins, outs;
    for (TensorId t : part.inputs()) ins.push_back(part.node(t).name);
    for (const OutputDecl& o : part.outputs()) outs.push_back(part.node(o.tensor).name);
    j["parts"].push_back({{"dir", names[i]}, {"inputs", ins}, {"outputs", outs}});
  }
  return j.dump(1) + "\n";
}

}  // namespace

bool RunsAsLibraryKernel(const Program& program, const Node& n) {
  if (n.op == OpKind::kConcat) return true;
  const OpCategory cat = GetOpInfo(n.op).category;
  if ((cat != OpCategory::kReduce && cat != OpCategory::kNorm) || n.operands.size() != 1) {
    return false;
  }
  const int rank = static_cast<int>(program.node(n.operands[0]).shape.size());
  const absl::StatusOr<int> dim = NormalizeDim(n.dim, rank);
  return dim.ok() && *dim != rank - 1;
}

std::string LibraryOpText(const Program& program, const Node& n) {
  if (n.op == OpKind::kConcat) return "a concat";
  const int rank = static_cast<int>(program.node(n.operands[0]).shape.size());
  const absl::StatusOr<int> dim = NormalizeDim(n.dim, rank);
  return absl::StrCat("a ", GetOpInfo(n.op).name, " over dim ", dim.ok() ? *dim : n.dim);
}

namespace {

// The output's first operand that is not an input, if any.
std::optional<TensorId> FirstComputedOperand(const Program& program, TensorId t) {
  for (TensorId o : program.node(t).operands) {
    if (program.node(o).op != OpKind::kInput) return o;
  }
  return std::nullopt;
}

// Where a program (one output) is cut at the ops `is_op` picks, as (cut tensor, op): when the
// output is such an op, its first computed operand (nullopt when it has none: one op of
// inputs); otherwise the first such op in program order (nullopt when there is none).
template <typename IsOp>
std::optional<std::pair<TensorId, TensorId>> CutAtOp(const Program& program, IsOp is_op) {
  const TensorId out = program.outputs()[0].tensor;
  if (is_op(program.node(out))) {
    std::optional<TensorId> cut = FirstComputedOperand(program, out);
    if (!cut) return std::nullopt;
    return std::make_pair(*cut, out);
  }
  for (size_t k = 0; k < program.nodes().size(); ++k) {
    if (is_op(program.nodes()[k])) {
      const TensorId t(static_cast<uint32_t>(k));
      return std::make_pair(t, t);
    }
  }
  return std::nullopt;
}

// `program` cut at `cut` (SplitAt), the anonymous cut tensor named the first free of base,
// base1, ...; the second part named after its output.
absl::StatusOr<LibrarySplit> MakeLibrarySplit(const Program& program, TensorId cut, TensorId op,
                                              absl::string_view base) {
  const Node& at = program.node(cut);
  const std::string name = at.name.empty() ? FreshName(program, base) : at.name;
  PRISM_ASSIGN_OR_RETURN(ProgramSplit split, SplitAt(program, cut, name));
  LibrarySplit result{cut, op, {std::move(split.first), std::move(split.second)}, {name, ""}};
  result.names[1] = result.parts[1].node(result.parts[1].outputs()[0].tensor).name;
  return result;
}

}  // namespace

absl::StatusOr<std::optional<LibrarySplit>> SplitAtLibraryOp(const Program& program) {
  if (program.outputs().size() != 1) {
    return absl::InvalidArgumentError("SplitAtLibraryOp: the program must have one output");
  }
  const std::optional<std::pair<TensorId, TensorId>> at =
      CutAtOp(program, [&program](const Node& n) { return RunsAsLibraryKernel(program, n); });
  if (!at) return std::nullopt;  // no such op, or one op of inputs: the search's library kernel
  const char* base = program.node(at->second).op == OpKind::kConcat ? "C" : "R";
  return MakeLibrarySplit(program, at->first, at->second, base);
}

bool RunsAsOneLibraryKernel(const Program& program) {
  if (program.outputs().size() != 1) return false;
  const Node& out = program.node(program.outputs()[0].tensor);
  if (out.op == OpKind::kInput || out.operands.empty()) return false;
  return !FirstComputedOperand(program, program.outputs()[0].tensor).has_value();
}

absl::StatusOr<std::optional<LibrarySplit>> SplitForFallback(const Program& program) {
  if (program.outputs().size() != 1) {
    return absl::InvalidArgumentError("SplitForFallback: the program must have one output");
  }
  const TensorId out = program.outputs()[0].tensor;
  if (program.node(out).op == OpKind::kInput || RunsAsOneLibraryKernel(program)) {
    return std::nullopt;
  }
  // At a matmul; with none, before the output's op (a computed operand exists: the program is
  // not one op of its inputs).
  std::optional<std::pair<TensorId, TensorId>> at =
      CutAtOp(program, [](const Node& n) { return n.op == OpKind::kMatMul; });
  if (!at) {
    const std::optional<TensorId> cut = FirstComputedOperand(program, out);
    if (!cut) return std::nullopt;
    at = std::make_pair(*cut, out);
  }
  return MakeLibrarySplit(program, at->first, at->second, "P");
}

absl::Status LibraryCutLimitError() {
  return absl::FailedPreconditionError(absl::StrCat(
      "the program needs more than ", kMaxLibraryCuts,
      " cuts at ops that run as kernels of their own (concats, reductions or norms over a dim "
      "other than the last, and ops that no block-graph family generates): split it into "
      "smaller programs"));
}

std::string SplitManifest(const std::string& label, const Program& program,
                          const LibrarySplit& split) {
  return Manifest(label, program, split.cut, split.parts, split.names);
}

std::string SplitManifest(const std::string& label, const Program& program,
                          const ChainedSplit& split) {
  return Manifest(label, program, split.chain.cut, split.parts, split.names);
}

absl::StatusOr<SearchResult> Search(const Program& program, const SearchConfig& config,
                                    const Target& target) {
  return internal::Searcher(program, config, target).Run();
}

}  // namespace prism::search
