// `prism check`: parse and validate a program; print every tensor's op, dtype and shape, the
// outputs, the work (flops, transcendentals), the minimum bytes moved and the roofline floor
// on a target.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "commands.h"
#include "format.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/ir/analysis.h"
#include "program_source.h"
#include "targets.h"

namespace prism::cli {
namespace {

std::vector<std::string> TargetNames() {
  std::vector<std::string> names;
  for (const TargetSpec& t : BuiltinTargets()) names.push_back(t.name);
  return names;
}

}  // namespace

const CommandSpec& CheckSpec() {
  static const auto* spec = [] {
    auto* s = new CommandSpec{
        .path = "check",
        .usage = "FILE | --workload NAME [--batch B] [--target NAME] [--json]",
        .summary = "Parse and validate a program; print its tensors, work and roofline floor.",
        .description =
            "FILE is .prism text (or a JSON export, if it ends in .json). For each tensor prints\n"
            "its name (an anonymous tensor: its expression), op, dtype and shape; then the\n"
            "outputs, the work (matmul and elementwise flops, transcendental evaluations), the\n"
            "minimum bytes moved (every input read once, every output written once) and the\n"
            "roofline floor: max(bytes / DRAM bandwidth, matmul flops / f16 matmul rate).\n"
            "Errors in FILE are reported as FILE:LINE:COL: ... (exit code 2).",
        .positional = "FILE",
        .max_positional = 1,
        .options = ProgramSourceOptions()};
    s->options.push_back(StringOption(
        "--target", "NAME",
        absl::StrCat("the GPU for the roofline floor: ", absl::StrJoin(TargetNames(), ", ")),
        std::string(kDefaultTarget)));
    s->options.push_back(FlagOption("--json", "print one JSON object instead"));
    return s;
  }();
  return *spec;
}

absl::Status RunCheck(const ParsedArgs& args, Io& io) {
  // Resolve the target first: a typo there is reported without waiting for a large parse.
  PRISM_ASSIGN_OR_RETURN(TargetSpec target,
                         FindTarget(args.String("--target").value_or(std::string(kDefaultTarget))));
  PRISM_ASSIGN_OR_RETURN(LoadedProgram loaded, LoadProgram(args));
  const Program& p = loaded.program;
  const ProgramStats stats = AnalyzeProgram(p);
  const double floor_us =
      RooflineFloorUs(stats, target.dram_bytes_per_s, target.matmul_flops_per_s);
  const double memory_us = stats.min_bytes / target.dram_bytes_per_s * 1e6;
  const double compute_us = stats.matmul_flops / target.matmul_flops_per_s * 1e6;
  const char* bound = memory_us >= compute_us ? "memory" : "compute";

  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["program"] = loaded.label;
    j["structural_hash"] = HashToHex(p.StructuralHash());
    j["tensors"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < p.num_tensors(); ++i) {
      const TensorId id(static_cast<uint32_t>(i));
      const Node& n = p.node(id);
      j["tensors"].push_back({{"id", i},
                              {"name", n.name},
                              {"expr", ExprText(p, id)},
                              {"op", GetOpInfo(n.op).name},
                              {"dtype", DTypeName(n.dtype)},
                              {"shape", n.shape}});
    }
    j["outputs"] = nlohmann::ordered_json::array();
    for (const OutputDecl& o : p.outputs()) {
      const Node& n = p.node(o.tensor);
      j["outputs"].push_back({{"name", ExprText(p, o.tensor)},
                              {"id", o.tensor.value()},
                              {"dtype", DTypeName(n.dtype)},
                              {"shape", n.shape}});
    }
    j["stats"] = {{"matmul_flops", stats.matmul_flops},
                  {"elementwise_flops", stats.elementwise_flops},
                  {"transcendentals", stats.transcendentals},
                  {"total_flops", stats.total_flops()},
                  {"min_bytes", stats.min_bytes}};
    j["target"] = {{"name", target.name},
                   {"gpu", target.gpu},
                   {"dram_bytes_per_s", target.dram_bytes_per_s},
                   {"matmul_flops_per_s", target.matmul_flops_per_s},
                   {"source", target.source}};
    j["roofline"] = {{"floor_us", floor_us},
                     {"memory_us", memory_us},
                     {"compute_us", compute_us},
                     {"bound", bound}};
    io.out << j.dump(2) << "\n";
    return absl::OkStatus();
  }

  std::string text = absl::StrCat("program  ", loaded.label, "\n", "hash     ",
                                  HashToHex(p.StructuralHash()), "\n\n");
  std::vector<std::vector<std::string>> rows = {{"tensor", "op", "dtype", "shape"}};
  for (size_t i = 0; i < p.num_tensors(); ++i) {
    const TensorId id(static_cast<uint32_t>(i));
    const Node& n = p.node(id);
    rows.push_back({ExprText(p, id), std::string(GetOpInfo(n.op).name),
                    std::string(DTypeName(n.dtype)), ShapeToString(n.shape)});
  }
  absl::StrAppend(&text, "tensors (", p.num_tensors(), "):\n", AlignedTable(rows, 2), "\n");
  rows.clear();
  for (const OutputDecl& o : p.outputs()) {
    const Node& n = p.node(o.tensor);
    rows.push_back(
        {ExprText(p, o.tensor), std::string(DTypeName(n.dtype)), ShapeToString(n.shape)});
  }
  absl::StrAppend(&text, "outputs (", p.outputs().size(), "):\n", AlignedTable(rows, 2), "\n");
  rows = {
      {"matmul flops", GroupDigits(stats.matmul_flops), SiQuantity(stats.matmul_flops, "FLOP")},
      {"elementwise flops", GroupDigits(stats.elementwise_flops),
       SiQuantity(stats.elementwise_flops, "FLOP")},
      {"total flops", GroupDigits(stats.total_flops()), SiQuantity(stats.total_flops(), "FLOP")},
      {"transcendentals", GroupDigits(stats.transcendentals),
       SiQuantity(stats.transcendentals, "")},
      {"min bytes moved", GroupDigits(stats.min_bytes), SiQuantity(stats.min_bytes, "B")},
  };
  absl::StrAppend(&text, "work:\n", AlignedTable(rows, 2), "\n");
  absl::StrAppend(&text, "target   ", target.name, ": ", target.gpu, "\n", "         DRAM ",
                  SiQuantity(target.dram_bytes_per_s, "B/s"), ", f16 matmul ",
                  SiQuantity(target.matmul_flops_per_s, "FLOP/s"), "\n",
                  "         source: ", target.source, "\n");
  absl::StrAppend(&text, "floor    ", Significant(floor_us, 4), " µs (", bound, "-bound; memory ",
                  Significant(memory_us, 4), " µs, matmul ", Significant(compute_us, 4), " µs)\n");
  io.out << text;
  return absl::OkStatus();
}

}  // namespace prism::cli
