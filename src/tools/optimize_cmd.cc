// `prism optimize FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S]
//  [--gpu N | --no-gpu] [--out DIR] [--top K] [--compile-cache DIR] [--constant-inputs NAMES]
//  [--no-fallback] [--json]`:
// search,
// generate, compile, measure (with a GPU) and select; writes DIR/kernel.cu, launch.json, host.h
// and family.json (tune/tune.h, docs/optimize.md), and the proof report: report.json, report.md,
// report.html, proof.json and smt/*.smt2 (report/report.h, docs/report.md).
#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "commands.h"
#include "format.h"
#include "nlohmann/json.hpp"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/report/dump.h"
#include "prism/report/report.h"
#include "prism/smt/target.h"
#include "prism/tune/recover.h"
#include "prism/tune/tune.h"
#include "program_source.h"

namespace prism::cli {
namespace {

// prism-out/<workload> or prism-out/<file stem>.
std::string DefaultOutDir(const ParsedArgs& args) {
  if (std::optional<std::string> w = args.String("--workload")) return "prism-out/" + *w;
  return "prism-out/" + std::filesystem::path(args.positionals().at(0)).stem().string();
}

// The generated program's name (kernel functions prism_<name>_k0, host.h's namespace):
// <workload>_b<batch> or the file stem, as an identifier.
std::string GeneratedName(const ParsedArgs& args) {
  if (std::optional<std::string> w = args.String("--workload")) {
    return tune::ProgramNameFrom(absl::StrCat(*w, "_b", args.Int("--batch").value_or(1)));
  }
  return tune::ProgramNameFrom(std::filesystem::path(args.positionals().at(0)).stem().string());
}

// ", confirmed <median> µs (median of <n>)" for a finalist of the confirmation round
// (tune.h step 5); "" for the others.
std::string ConfirmText(const std::vector<double>& confirm_us) {
  if (confirm_us.empty()) return "";
  return absl::StrCat(", confirmed ", Significant(tune::Median(confirm_us), 4), " µs (median of ",
                      confirm_us.size(), ")");
}

}  // namespace

const CommandSpec& OptimizeSpec() {
  static const auto* spec = [] {
    auto* s = new CommandSpec{
        .path = "optimize",
        .usage =
            "FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S] "
            "[--gpu N | --no-gpu] [--out DIR] [--top K] [--compile-cache DIR] "
            "[--constant-inputs NAMES] [--no-fallback] [--json]",
        .summary = "Search, generate CUDA, measure and select the fastest kernel for a program.",
        .description =
            "Runs the search (default settings; --budget-s sets its wall-clock budget), takes\n"
            "the cheapest families by the cost model, instantiates each at its preferred\n"
            "instance and a few neighbours, generates CUDA (families the code generator cannot\n"
            "handle yet are skipped and listed), compiles with NVRTC, and selects: with a GPU,\n"
            "the fastest measured candidate whose output matches the reference interpreter (each\n"
            "measured in a child process: CUDA graph replay over input sets rotated past L2);\n"
            "without one (--no-gpu, or no driver or device found), the one with the lowest\n"
            "estimate of its time by the cost model, and says so. Writes DIR/kernel.cu,\n"
            "DIR/launch.json, DIR/host.h and DIR/family.json (default DIR:\n"
            "prism-out/<workload or file stem>), and the proof\n"
            "report: DIR/report.json, report.md, report.html, proof.json and DIR/smt/*.smt2\n"
            "(docs/report.md; re-check it with prism audit DIR). --gpu N fails\n"
            "when device N cannot be used; without --gpu or --no-gpu, GPU 0 is used when\n"
            "present. What no block-graph family generates runs as library kernels (ops on\n"
            "whole tensors, generic and slower; the \"fallback\" line says why) unless\n"
            "--no-fallback is given. docs/optimize.md.",
        .positional = "FILE",
        .max_positional = 1,
        .options = ProgramSourceOptions()};
    s->options.push_back(StringOption("--target", "NAME", "GPU target (prism hw list)", "h200"));
    s->options.push_back(
        IntOption("--budget-s", "S", "wall-clock budget of the search in seconds", 1, 86400, "30"));
    s->options.push_back(
        IntOption("--gpu", "N", "measure on GPU N (an error if it cannot be used)", 0, 63, "0"));
    s->options.push_back(FlagOption("--no-gpu", "select by the cost model; no device is touched"));
    s->options.push_back(
        StringOption("--out", "DIR", "output directory", "prism-out/<workload or file stem>"));
    s->options.push_back(IntOption("--top", "K", "families (that codegen can handle) to try", 1,
                                   100, absl::StrCat(tune::TuneOptions().top_families)));
    s->options.push_back(StringOption("--compile-cache", "DIR",
                                      "reuse cubins compiled before (keyed by source, sm, NVRTC)"));
    s->options.push_back(StringOption("--tune-cache", "DIR",
                                      "reuse the selection measured before (keyed by program, "
                                      "GPU, driver, NVRTC)"));
    s->options.push_back(StringOption(
        "--constant-inputs", "NAMES",
        "inputs (comma-separated) that no kernel before the program in the stream writes, such "
        "as weights: loaded before the wait for the previous kernel (programmatic dependent "
        "launch); a declared input that is written gives wrong results"));
    s->options.push_back(IntOption("--instances", "N", "candidates per family to measure", 1,
                                   1000, "96"));
    s->options.push_back(IntOption("--measure-budget-s", "S",
                                   "wall-clock budget for compiling and measuring candidates in seconds", 1,
                                   3600, "45"));
    s->options.push_back(IntOption("--tune-budget-s", "S",
                                   "wall-clock budget for everything after the search in "
                                   "seconds (0: none)",
                                   0, 3600, "55"));
    s->options.push_back(IntOption("--refine", "R",
                                   "rounds measuring the neighbours of the fastest candidates",
                                   0, 8, "2"));
    s->options.push_back(ChoiceOption("--dump-after", "STAGE",
                                      "print the result of STAGE before the summary (docs/tutorial.md)",
                                      report::DumpStages()));
    s->options.push_back(FlagOption(
        "--no-fallback",
        "fail when no block-graph family generates, instead of running such ops as library "
        "kernels (generic, slower)"));
    s->options.push_back(FlagOption("--json", "print one JSON object instead"));
    return s;
  }();
  return *spec;
}

// Optimizes a one-output `program` (search, tune, files and report in `out_dir`) and prints
// the summary, or with --json fills `json_sink` (prints it when null). `fallback`: why the
// program runs as one library kernel (the no-family error), for the JSON's "fallback" field.
absl::Status OptimizeOne(const Program& program, const std::string& label, const Target& target,
                         const tune::TuneOptions& options, const std::string& out_dir,
                         const ParsedArgs& args, Io& io, absl::Time started,
                         nlohmann::ordered_json* json_sink, absl::string_view fallback = {}) {
  // A part of a cut program, or one output's program, has only some of the constant inputs.
  tune::TuneOptions own = options;
  own.constant_inputs = tune::ConstantInputsOf(program, options.constant_inputs);
  absl::StatusOr<tune::TuneResult> result = tune::Optimize(program, target, own);
  if (io.err_is_terminal) io.err << "\r\033[K" << std::flush;
  PRISM_RETURN_IF_ERROR(result.status());
  const tune::TuneResult& r = *result;
  PRISM_RETURN_IF_ERROR(tune::WriteOutputs(r, label, out_dir));
  // The proof report (report/report.h, docs/report.md): report.{json,md,html}, proof.json, smt/.
  report::ReportOptions report_options;
  report_options.total_s = absl::ToDoubleSeconds(absl::Now() - started);
  PRISM_ASSIGN_OR_RETURN(report::Report rep, report::BuildReport(program, label,
                                                                 target, r, report_options));
  PRISM_RETURN_IF_ERROR(report::WriteReport(rep, out_dir));
  const tune::Candidate& c = r.chosen();
  const search::FamilyResult& fr = r.chosen_family();
  if (std::optional<std::string> stage = args.String("--dump-after")) {
    PRISM_ASSIGN_OR_RETURN(std::string dump, report::DumpAfter(*stage, program, r.search, &r));
    io.out << dump << "\n";
  }

  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["program"] = label;
    j["target"] = target.name;
    j["out"] = out_dir;
    if (!fallback.empty()) j["fallback"] = std::string(fallback);
    j["selection"] = tune::MethodName(r.method);
    if (!r.no_gpu_reason.empty()) j["no_gpu_reason"] = r.no_gpu_reason;
    if (r.device) {
      j["device"] = {{"ordinal", r.device->ordinal},
                     {"name", r.device->name},
                     {"sms", r.device->sms},
                     {"sm", r.device->sm()},
                     {"driver_version", r.device->driver_version}};
    }
    j["nvrtc"] = r.nvrtc_version;
    j["sm"] = r.sm;
    if (!own.constant_inputs.empty()) j["constant_inputs"] = own.constant_inputs;
    j["search_s"] = r.search.elapsed_s;
    j["families"] = r.search.families.size();
    j["selected"] = {{"family", c.family + 1},
                     {"kernels", fr.kernels},
                     {"assignment", AssignmentJson(*fr.graph, c.assignment)},
                     {"cost_us", c.cost_us},
                     {"estimate_us", c.estimate_us},
                     {"estimate_terms", c.estimate_terms}};
    if (!c.codegen_variant.empty()) j["selected"]["codegen_variant"] = c.codegen_variant;
    if (c.measurement) j["selected"]["measured_us"] = c.measurement->median_us;
    if (!c.confirm_us.empty()) j["selected"]["confirm_us"] = c.confirm_us;
    j["codegen_skips"] = nlohmann::ordered_json::array();
    for (const tune::CodegenSkip& s : r.codegen_skips) {
      j["codegen_skips"].push_back(
          {{"family", s.family + 1}, {"cost_us", s.cost_us}, {"message", s.message}});
    }
    j["candidates"] = nlohmann::ordered_json::array();
    for (const tune::Candidate& k : r.candidates) {
      nlohmann::ordered_json e = {
          {"family", k.family + 1},
          {"assignment", AssignmentJson(*r.search.families[k.family].graph, k.assignment)},
          {"cost_us", k.cost_us},
          {"estimate_us", k.estimate_us},
          {"estimate_terms", k.estimate_terms},
          {"compiled", k.compiled},
          {"cache_hit", k.cache_hit}};
      if (!k.codegen_variant.empty()) e["codegen_variant"] = k.codegen_variant;
      if (k.refined_from >= 0) e["refined_from"] = k.refined_from;
      if (!k.compile_error.empty()) e["compile_error"] = k.compile_error;
      if (k.measurement) {
        e["measured_us"] = k.measurement->median_us;
        if (k.measurement->replays > 0) e["replays"] = k.measurement->replays;
        e["input_sets"] = k.measurement->input_sets;
        e["relative_error"] = k.measurement->relative_error;
        e["matches"] = k.measurement->matches;
      }
      if (!k.confirm_us.empty()) e["confirm_us"] = k.confirm_us;
      if (!k.measure_error.empty()) e["measure_error"] = k.measure_error;
      j["candidates"].push_back(e);
    }
    j["report"] = {{"files", {"report.json", "report.md", "report.html", "proof.json"}},
                   {"smt_files", rep.smt_files.size()}};
    if (json_sink != nullptr) {
      *json_sink = std::move(j);
    } else {
      io.out << j.dump(2) << "\n";
    }
    return absl::OkStatus();
  }

  std::string text = absl::StrCat("program   ", label, "\ntarget    ", target.name, "\n");
  if (r.device) {
    absl::StrAppend(&text, "device    GPU ", r.device->ordinal, ": ", r.device->name, " (sm_",
                    r.device->sm(), ", ", r.device->sms, " SMs, driver ", r.device->driver_version,
                    ")\n");
  } else {
    absl::StrAppend(&text, "device    none (", r.no_gpu_reason, ")\n");
  }
  absl::StrAppend(&text, "search    ", r.search.families.size(), " families in ",
                  Significant(r.search.elapsed_s, 3), " s\n");
  absl::StrAppend(&text, "candidates ", r.candidates.size(), " generated");
  if (!r.codegen_skips.empty()) {
    absl::StrAppend(&text, ", ", r.codegen_skips.size(), " families skipped by codegen");
  }
  absl::StrAppend(&text, "\n");
  // Skips grouped by message (first occurrence order); --json lists each one.
  for (const auto& [message, families] : tune::GroupSkipsByMessage(r.codegen_skips)) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < families.size() && i < 5; ++i)
      ids.push_back(absl::StrCat("#", families[i]));
    if (families.size() > 5) ids.push_back("...");
    absl::StrAppend(&text, "  skipped ", families.size(), " (", absl::StrJoin(ids, " "),
                    "): ", message, "\n");
  }
  if (r.method == tune::Method::kMeasured) {
    for (const tune::Candidate& k : r.candidates) {
      absl::StrAppend(&text, "  #", k.family + 1, " ",
                      tune::CandidateText(*r.search.families[k.family].graph, k), "  cost ",
                      Significant(k.cost_us, 4), " µs  ");
      if (k.measurement) {
        absl::StrAppend(&text, "measured ", Significant(k.measurement->median_us, 4), " µs, ",
                        k.measurement->matches ? "matches" : "DIFFERS from",
                        " the reference (rel. error ",
                        Significant(k.measurement->relative_error, 3), ")",
                        ConfirmText(k.confirm_us), "\n");
      } else if (!k.compile_error.empty()) {
        absl::StrAppend(&text, "did not compile: ", k.compile_error, "\n");
      } else {
        absl::StrAppend(&text, "not measured: ", k.measure_error, "\n");
      }
    }
  }
  absl::StrAppend(&text, "\nselected  family #", c.family + 1, " (", fr.kernels, " kernel",
                  fr.kernels == 1 ? "" : "s", ") at ", tune::CandidateText(*fr.graph, c),
                  "\n          cost lower bound ", Significant(c.cost_us, 4), " µs, estimate ",
                  Significant(c.estimate_us, 4), " µs");
  if (c.measurement) {
    absl::StrAppend(&text, ", measured ", Significant(c.measurement->median_us, 4),
                    " µs (CUDA graph over ", c.measurement->input_sets,
                    " input sets; matches the reference, rel. error ",
                    Significant(c.measurement->relative_error, 3), ")",
                    ConfirmText(c.confirm_us));
  }
  absl::StrAppend(&text, "\n");
  if (r.method == tune::Method::kCostModel) {
    if (!c.estimate_terms.empty()) absl::StrAppend(&text, "          estimate  ", c.estimate_terms, "\n");
    absl::StrAppend(
        &text, "          selected by the cost model's estimate, not measured (no GPU: ",
        r.no_gpu_reason, ")",
        r.sm > 0 ? absl::StrCat("; compiles with NVRTC ", r.nvrtc_version, " for sm_", r.sm)
                 : "; not compiled (built without NVRTC)",
        "\n");
  }
  if (!own.constant_inputs.empty()) {
    absl::StrAppend(&text, "constant  ", absl::StrJoin(own.constant_inputs, ", "),
                    ": read before the wait for the previous kernel (programmatic dependent "
                    "launch); no kernel before this program in the stream may write ",
                    own.constant_inputs.size() == 1 ? "it" : "them", "\n");
  }
  absl::StrAppend(&text, "wrote     ", out_dir, "/{kernel.cu, launch.json, host.h, family.json}\n");
  absl::StrAppend(&text, "report    ", out_dir, "/{report.json, report.md, report.html, proof.json}, ",
                  rep.smt_files.size(), " SMT file", rep.smt_files.size() == 1 ? "" : "s", " in ",
                  out_dir, "/smt (check with: prism audit ", out_dir, ")\n");
  io.out << text;
  return absl::OkStatus();
}

absl::Status OptimizeOrSplit(const Program& program, const std::string& label,
                             const Target& target, const tune::TuneOptions& options,
                             const std::string& out_dir, const ParsedArgs& args, Io& io,
                             absl::Time started, nlohmann::ordered_json* json_sink,
                             tune::CutDepth depth);

// The two parts of `cut` (a tune::Recovery of kind kCut: parts[0] computes the cut tensor,
// parts[1] the output from it), each optimized (and cut again) and proved on its own in
// DIR/<name>, then DIR/split.json. The summary's "split" line starts with cut.why, after a
// "fallback" line when the fallback made the cut (`no_family`: the error that started it).
// With --json the sink gets {"split_at", "fallback" (with the fallback), "parts"}.
absl::Status OptimizeCut(const Program& program, const std::string& label,
                         const Target& target, const tune::TuneOptions& options,
                         const std::string& out_dir, const ParsedArgs& args, Io& io,
                         nlohmann::ordered_json* json_sink, const tune::Recovery& cut_step,
                         const absl::Status& no_family) {
  const std::string& name = cut_step.names[0];
  const std::string& output = cut_step.names[1];
  const Node& cut = program.node(cut_step.cut);
  const bool json = args.Flag("--json");
  if (!json) {
    if (cut_step.fallback) io.out << "fallback  the program is cut: " << no_family.message() << "\n";
    io.out << "split     " << cut_step.why << "; " << name << " " << DTypeName(cut.dtype)
           << ShapeToString(cut.shape)
           << (cut.loc.line > 0 ? absl::StrCat(" (line ", cut.loc.line, ")") : "")
           << " is computed by a first program and " << output
           << " from it by a second, each optimized and proved alone\n";
  }
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (size_t i = 0; i < 2; ++i) {
    const Program& part = cut_step.parts[i];
    const std::string& part_name = cut_step.names[i];
    if (!json) io.out << "\npart      " << i + 1 << " of 2: " << part_name << "\n";
    tune::TuneOptions one = options;
    one.program_name = tune::ProgramNameFrom(absl::StrCat(options.program_name, "_", part_name));
    nlohmann::ordered_json j;
    const absl::Status ps =
        OptimizeOrSplit(part, absl::StrCat(label, " part ", part_name), target, one,
                        absl::StrCat(out_dir, "/", part_name), args, io, absl::Now(),
                        json ? &j : nullptr, cut_step.depth);
    if (!ps.ok()) {
      return absl::Status(ps.code(), absl::StrCat("part ", part_name, ": ", ps.message()));
    }
    if (json) parts.push_back(std::move(j));
  }
  // DIR/split.json: the parts in launch order, with the tensors each reads and writes.
  PRISM_RETURN_IF_ERROR(WriteFile(JoinPath(out_dir, "split.json"), cut_step.manifest));
  if (!json) {
    io.out << "\nwrote     " << out_dir << "/split.json (the parts in launch order: " << name
           << " first, then " << output << " from it)\n";
  }
  if (json) {
    nlohmann::ordered_json j;
    j["split_at"] = name;
    if (cut_step.fallback) j["fallback"] = std::string(no_family.message());
    j["parts"] = std::move(parts);
    if (json_sink != nullptr) {
      *json_sink = std::move(j);
    } else {
      io.out << j.dump(2) << "\n";
    }
  }
  return absl::OkStatus();
}

// OptimizeOne; when that fails, what tune::Recover decides, as prism::OptimizeParts does: a
// cut at an op that no block op runs, at a matmul that reads a wide matmul, or the fallback
// (docs/optimize.md): a program that is one op of its inputs runs as that op's library kernel
// (the "fallback" line, then OptimizeOne with search.library_kernel), a larger one is cut at
// search::SplitForFallback; not with --no-fallback. Each part is optimized (and cut again) and
// proved on its own in DIR/<part name>. With --json the sink gets {"split_at", "parts"} for a
// cut.
absl::Status OptimizeOrSplit(const Program& program, const std::string& label,
                             const Target& target, const tune::TuneOptions& options,
                             const std::string& out_dir, const ParsedArgs& args, Io& io,
                             absl::Time started, nlohmann::ordered_json* json_sink,
                             tune::CutDepth depth) {
  const absl::Status st =
      OptimizeOne(program, label, target, options, out_dir, args, io, started, json_sink);
  if (st.ok()) return st;
  PRISM_ASSIGN_OR_RETURN(
      tune::Recovery next,
      tune::Recover(program, st, label, depth, /*fallback=*/!args.Flag("--no-fallback")));
  switch (next.kind) {
    case tune::Recovery::Kind::kFail:
      return next.error;
    case tune::Recovery::Kind::kLibraryKernel: {
      const Node& out = program.node(program.outputs()[0].tensor);
      if (!args.Flag("--json")) {
        io.out << "fallback  " << out.name << " (" << GetOpInfo(out.op).name
               << ") runs as one library kernel: " << st.message() << "\n";
      }
      tune::TuneOptions lib = options;
      lib.search.library_kernel = true;
      const absl::Status ls = OptimizeOne(program, label, target, lib, out_dir, args, io,
                                          started, json_sink, st.message());
      return ls.ok() ? ls : tune::LibraryKernelError(st, ls);
    }
    case tune::Recovery::Kind::kCut:
      return OptimizeCut(program, label, target, options, out_dir, args, io, json_sink, next, st);
  }
  return absl::InternalError("OptimizeOrSplit: unknown recovery kind");
}

absl::Status RunOptimize(const ParsedArgs& args, Io& io) {
  if (args.Has("--gpu") && args.Flag("--no-gpu")) {
    return absl::InvalidArgumentError("give at most one of --gpu or --no-gpu");
  }
  PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget(args.String("--target").value_or("h200")));
  PRISM_ASSIGN_OR_RETURN(LoadedProgram loaded, LoadProgram(args));
  if (args.Has("--dump-after") && args.Flag("--json")) {
    return absl::InvalidArgumentError("give at most one of --dump-after or --json");
  }
  const std::string out_dir = args.String("--out").value_or(DefaultOutDir(args));
  tune::TuneOptions options;
  options.search.budget = absl::Seconds(args.Int("--budget-s").value_or(30));
  options.top_families = static_cast<int>(args.Int("--top").value_or(options.top_families));
  options.use_gpu = !args.Flag("--no-gpu");
  options.require_gpu = args.Has("--gpu");
  options.gpu = static_cast<int>(args.Int("--gpu").value_or(0));
  options.compile_cache_dir = args.String("--compile-cache").value_or("");
  options.tune_cache_dir = args.String("--tune-cache").value_or("");
  options.instances_per_family = static_cast<int>(args.Int("--instances").value_or(96));
  options.measure_budget_s = static_cast<double>(args.Int("--measure-budget-s").value_or(45));
  options.tune_budget_s = static_cast<double>(args.Int("--tune-budget-s").value_or(55));
  options.refine_rounds = static_cast<int>(args.Int("--refine").value_or(2));
  options.program_name = GeneratedName(args);
  if (std::optional<std::string> names = args.String("--constant-inputs")) {
    std::vector<std::string> inputs;
    for (TensorId t : loaded.program.inputs()) inputs.push_back(loaded.program.node(t).name);
    for (absl::string_view c : absl::StrSplit(*names, ',')) {
      if (c.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--constant-inputs '", *names,
            "': an empty name; give input names separated by commas, e.g. --constant-inputs W,A"));
      }
      if (std::find(inputs.begin(), inputs.end(), c) == inputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--constant-inputs: '", c, "' is not an input of the program (inputs: ",
            absl::StrJoin(inputs, ", "), ")"));
      }
      if (std::find(options.constant_inputs.begin(), options.constant_inputs.end(), c) !=
          options.constant_inputs.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--constant-inputs: '", c, "' is named twice"));
      }
      options.constant_inputs.emplace_back(c);
    }
  }
  if (io.err_is_terminal) {
    options.search.progress = [&io](const search::SearchProgress& p) {
      if (std::string_view(p.stage) == "done") {
        io.err << "\r\033[K[tune] generating, compiling and measuring candidates..." << std::flush;
      } else {
        io.err << "\r\033[K[search " << p.stage << "] " << Significant(p.elapsed_s, 3) << " s"
               << std::flush;
      }
    };
  }
  const absl::Time started = absl::Now();
  // Several outputs: each output's program alone, in DIR/<output>, its kernels named
  // <name>_<output>; no fusion across outputs.
  return ForEachOutput(
      loaded, args.Flag("--json"), "output    ", io,
      [&](const Program& program, const std::string& label, const std::string& output,
          nlohmann::ordered_json* json_sink) {
        if (output.empty()) {
          return OptimizeOrSplit(program, label, target, options, out_dir, args, io, started,
                                 json_sink, tune::CutDepth{});
        }
        tune::TuneOptions one = options;
        one.program_name = tune::ProgramNameFrom(absl::StrCat(options.program_name, "_", output));
        return OptimizeOrSplit(program, label, target, one, absl::StrCat(out_dir, "/", output),
                               args, io, absl::Now(), json_sink, tune::CutDepth{});
      });
}

}  // namespace prism::cli
