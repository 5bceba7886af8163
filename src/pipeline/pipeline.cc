// prism::Optimize and the rest of include/prism/prism.h: the library entry points over tune/
// (search → CUDA → selection), report/ and proofcheck/.
#include "prism/prism.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/report/report.h"
#include "prism/search/search.h"
#include "prism/smt/target.h"
#include "prism/tune/recover.h"
#include "prism/tune/tune.h"

namespace prism {
namespace {

using json = nlohmann::json;

absl::Status ValidateOptions(const OptimizeOptions& o) {
  if (!(o.search_budget_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "OptimizeOptions.search_budget_s must be > 0 seconds, got ", o.search_budget_s));
  }
  if (o.search_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "OptimizeOptions.search_threads must be >= 0 (0: one per core), got ", o.search_threads));
  }
  if (o.top_families < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("OptimizeOptions.top_families must be >= 1, got ", o.top_families));
  }
  if (o.instances_per_family < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "OptimizeOptions.instances_per_family must be >= 1, got ", o.instances_per_family));
  }
  if (o.gpu < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("OptimizeOptions.gpu must be a device ordinal >= 0, got ", o.gpu));
  }
  for (const auto& [field, v] : {std::pair<const char*, double>{"measure_budget_s", o.measure_budget_s},
                                 {"tune_budget_s", o.tune_budget_s}}) {
    if (!(v >= 0) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat("OptimizeOptions.", field,
                                                     " must be >= 0 seconds (0: no limit), got ", v));
    }
  }
  if (o.refine_rounds < 0 || o.refine_rounds > 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "OptimizeOptions.refine_rounds must be in [0, 8], got ", o.refine_rounds));
  }
  return absl::OkStatus();
}

// launch.json (codegen's format "prism.launch" v1) as structs.
absl::StatusOr<std::vector<KernelLaunch>> ParseLaunches(const std::string& launch_json) {
  std::vector<KernelLaunch> out;
  try {
    const json j = json::parse(launch_json);
    for (const json& k : j.at("kernels")) {
      KernelLaunch l;
      l.kernel = k.at("kernel").get<std::string>();
      l.function = k.at("function").get<std::string>();
      for (int i = 0; i < 3; ++i) {
        l.grid[i] = k.at("grid").at(i).get<int64_t>();
        l.block[i] = k.at("block").at(i).get<int64_t>();
      }
      l.dynamic_smem_bytes = k.at("dynamic_smem_bytes").get<int64_t>();
      for (const json& a : k.at("args")) {
        KernelArg arg;
        arg.tensor = a.at("tensor").get<std::string>();
        const std::string dtype = a.at("dtype").get<std::string>();
        std::optional<DType> d = ParseDType(dtype);
        if (!d) return absl::InternalError(absl::StrCat("launch.json: unknown dtype '", dtype, "'"));
        arg.dtype = *d;
        arg.shape = a.at("shape").get<Shape>();
        arg.written = a.at("access").get<std::string>() != "read";
        l.args.push_back(std::move(arg));
      }
      out.push_back(std::move(l));
    }
  } catch (const json::exception& e) {
    return absl::InternalError(absl::StrCat("launch.json does not have the expected form: ", e.what()));
  }
  return out;
}

// family.json's "assignment" object, in its (parameter) order.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseAssignment(
    const std::string& family_json) {
  std::vector<std::pair<std::string, int64_t>> out;
  try {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(family_json);
    for (const auto& [name, value] : j.at("assignment").items()) {
      out.emplace_back(name, value.get<int64_t>());
    }
  } catch (const nlohmann::ordered_json::exception& e) {
    return absl::InternalError(absl::StrCat("family.json does not have the expected form: ", e.what()));
  }
  return out;
}

// Writes `text` to `path` (replacing it). FailedPrecondition "cannot write '<path>': <why>".
absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

const char* Version() { return PRISM_VERSION; }

namespace {

// Optimize; with `library_kernel` the search's one family is the program's single library
// kernel (search::SearchConfig::library_kernel: the program must be one op of its inputs).
absl::StatusOr<Result> OptimizeProgram(const Program& declared, const OptimizeOptions& options,
                                       bool library_kernel) {
  PRISM_RETURN_IF_ERROR(ValidateOptions(options));
  if (declared.outputs().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Optimize takes a program with one output; this one has ", declared.outputs().size(),
        " (OptimizeParts optimizes each output's program alone, as prism optimize does)"));
  }
  PRISM_ASSIGN_OR_RETURN(BroadcastView view, PadBroadcastInputs(declared));
  const Program& program = view.program;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto report_progress = [&](std::string stage, int64_t done = 0, int64_t total = 0) {
    if (options.progress) options.progress(Progress{std::move(stage), elapsed(), done, total});
  };

  // 1. The hardware model.
  PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget(options.target));

  // 2. Search, candidates, CUDA, NVRTC, selection (tune.h).
  tune::TuneOptions tune_options;
  tune_options.search.budget = absl::Seconds(options.search_budget_s);
  tune_options.search.threads = options.search_threads;
  tune_options.search.library_kernel = library_kernel;
  tune_options.top_families = options.top_families;
  tune_options.instances_per_family = options.instances_per_family;
  tune_options.use_gpu = options.gpu_mode != GpuMode::kOff;
  tune_options.require_gpu = options.gpu_mode == GpuMode::kRequire;
  tune_options.gpu = options.gpu;
  tune_options.compile_cache_dir = options.compile_cache_dir;
  tune_options.tune_cache_dir = options.tune_cache_dir;
  tune_options.measure_budget_s = options.measure_budget_s;
  tune_options.tune_budget_s = options.tune_budget_s;
  tune_options.refine_rounds = options.refine_rounds;
  tune_options.constant_inputs = options.constant_inputs;
  tune_options.program_name = options.program_name.empty()
                                  ? tune::ProgramNameFrom(options.program_label)
                                  : options.program_name;
  if (options.progress) {
    tune_options.search.progress = [&](const search::SearchProgress& p) {
      if (std::string_view(p.stage) == "done") {
        report_progress("tune");
      } else {
        report_progress(absl::StrCat("search:", p.stage), p.done, p.total);
      }
    };
  }
  PRISM_ASSIGN_OR_RETURN(tune::TuneResult tuned, tune::Optimize(program, target, tune_options));

  // 3. The files and the summary.
  Result r;
  r.cuda_source = tuned.code.source;
  r.launch_json = tuned.code.launch_json;
  r.host_header = tuned.code.host_header;
  r.family_json = tune::FamilyJson(tuned, options.program_label);
  PRISM_ASSIGN_OR_RETURN(r.kernels, ParseLaunches(r.launch_json));
  PRISM_ASSIGN_OR_RETURN(r.assignment, ParseAssignment(r.family_json));
  r.selection =
      tuned.method == tune::Method::kMeasured ? Selection::kMeasured : Selection::kCostModel;
  r.no_gpu_reason = tuned.no_gpu_reason;
  if (tuned.method == tune::Method::kMeasured && tuned.device) r.device_name = tuned.device->name;
  r.family = tuned.chosen().family + 1;
  r.families_found = static_cast<int>(tuned.search.families.size());
  r.cost_us = tuned.chosen().cost_us;
  r.estimate_us = tuned.chosen().estimate_us;
  r.tune_cache_hit = tuned.tune_cache_hit;
  r.tune_cache_note = tuned.tune_cache_note;
  if (tuned.chosen().measurement) r.measured_us = tuned.chosen().measurement->median_us;
  r.sm = tuned.sm;
  r.nvrtc_version = tuned.nvrtc_version;
  r.search_s = tuned.search.elapsed_s;
  r.padded_inputs = std::move(view.padded);
  for (size_t i = 0; i < tuned.candidates.size(); ++i) {
    const tune::Candidate& k = tuned.candidates[i];
    CandidateSummary c;
    c.family = k.family + 1;
    for (const Param& p : tuned.search.families[k.family].graph->params()) {
      if (auto it = k.assignment.find(p.name); it != k.assignment.end()) {
        c.assignment.emplace_back(p.name, it->second);
      }
    }
    c.codegen_variant = k.codegen_variant;
    c.cost_us = k.cost_us;
    c.estimate_us = k.estimate_us;
    c.estimate_terms = k.estimate_terms;
    c.compiled = k.compiled;
    if (k.measurement) {
      c.measured_us = k.measurement->median_us;
      c.relative_error = k.measurement->relative_error;
      c.matches = k.measurement->matches;
    }
    c.confirm_us = k.confirm_us;
    c.error = !k.compile_error.empty() ? k.compile_error : k.measure_error;
    c.selected = static_cast<int>(i) == tuned.selected;
    r.candidates.push_back(std::move(c));
  }
  for (const tune::CodegenSkip& k : tuned.codegen_skips) {
    r.codegen_skips.push_back(CodegenSkipSummary{k.family + 1, k.cost_us, k.message});
  }

  // 4. The report (and the proof, by proving the chosen family again).
  if (options.build_report) {
    report_progress("report");
    report::ReportOptions report_options;
    report_options.total_s = elapsed();
    PRISM_ASSIGN_OR_RETURN(report::Report rep, report::BuildReport(program, options.program_label,
                                                                   target, tuned, report_options));
    r.report = Report{std::move(rep.json), std::move(rep.markdown), std::move(rep.html),
                      std::move(rep.proof_json), std::move(rep.smt_files)};
  }
  report_progress("done");
  return r;
}

}  // namespace

absl::StatusOr<Result> Optimize(const Program& declared, const OptimizeOptions& options) {
  return OptimizeProgram(declared, options, /*library_kernel=*/false);
}

absl::Status WriteResult(const Result& result, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the output directory '", dir, "': ", ec ? ec.message() : "not a directory"));
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"kernel.cu", &result.cuda_source},
      {"launch.json", &result.launch_json},
      {"host.h", &result.host_header},
      {"family.json", &result.family_json}};
  for (const auto& [name, text] : files) PRISM_RETURN_IF_ERROR(WriteText(JoinPath(dir, name), *text));
  if (result.report.json.empty()) return absl::OkStatus();
  const Report& rep = result.report;
  return report::WriteReport(
      report::Report{rep.json, rep.markdown, rep.html, rep.proof_json, rep.smt_files}, dir);
}

namespace {

// `depth`: the cuts above this part (chained-matmul and library-op / fallback cuts).
absl::StatusOr<Plan> OptimizePartsAt(const Program& program, const OptimizeOptions& options,
                                     std::string name, tune::CutDepth depth);

// One part (`kind` "output" or "part", named `name`) of the program `options` describe:
// labelled "<label> <kind> <name>", kernels prism_<program name>_<name>_..., errors prefixed
// "<kind> <name>: ".
absl::StatusOr<Plan> OptimizeSubpart(const Program& part, const OptimizeOptions& options,
                                     const char* kind, const std::string& name,
                                     tune::CutDepth depth) {
  OptimizeOptions one = options;
  one.constant_inputs = tune::ConstantInputsOf(part, options.constant_inputs);
  one.program_label = absl::StrCat(options.program_label, " ", kind, " ", name);
  one.program_name = tune::ProgramNameFrom(absl::StrCat(
      options.program_name.empty() ? tune::ProgramNameFrom(options.program_label)
                                   : options.program_name,
      "_", name));
  absl::StatusOr<Plan> plan = OptimizePartsAt(part, one, name, depth);
  if (!plan.ok()) {
    return absl::Status(plan.status().code(),
                        absl::StrCat(kind, " ", name, ": ", plan.status().message()));
  }
  return plan;
}

absl::StatusOr<Plan> OptimizePartsAt(const Program& program, const OptimizeOptions& options,
                                     std::string name, tune::CutDepth depth) {
  Plan plan;
  plan.name = std::move(name);
  plan.program = program;
  if (program.outputs().size() > 1) {  // one part per output, each its own program (no fusion)
    for (size_t i = 0; i < program.outputs().size(); ++i) {
      PRISM_ASSIGN_OR_RETURN(Program cone, OutputCone(program, i));
      PRISM_ASSIGN_OR_RETURN(
          Plan part, OptimizeSubpart(cone, options, "output",
                                     program.node(program.outputs()[i].tensor).name, depth));
      plan.parts.push_back(std::move(part));
    }
    return plan;
  }
  absl::StatusOr<Result> whole = Optimize(program, options);
  if (whole.ok()) {
    plan.result = *std::move(whole);
    return plan;
  }
  // A cut, the fallback or the error (tune/recover.h; `prism optimize` decides alike).
  PRISM_ASSIGN_OR_RETURN(tune::Recovery next,
                         tune::Recover(program, whole.status(), options.program_label, depth,
                                       options.fallback));
  if (next.fallback) plan.fallback = std::string(whole.status().message());
  switch (next.kind) {
    case tune::Recovery::Kind::kFail:
      return next.error;
    case tune::Recovery::Kind::kLibraryKernel: {
      absl::StatusOr<Result> lib = OptimizeProgram(program, options, /*library_kernel=*/true);
      if (!lib.ok()) return tune::LibraryKernelError(whole.status(), lib.status());
      plan.result = *std::move(lib);
      return plan;
    }
    case tune::Recovery::Kind::kCut:
      for (int i = 0; i < 2; ++i) {
        PRISM_ASSIGN_OR_RETURN(
            Plan part, OptimizeSubpart(next.parts[i], options, "part", next.names[i], next.depth));
        plan.parts.push_back(std::move(part));
      }
      plan.split_json = std::move(next.manifest);
      return plan;
  }
  return absl::InternalError("OptimizePartsAt: unknown recovery kind");
}

}  // namespace

absl::StatusOr<Plan> OptimizeParts(const Program& program, const OptimizeOptions& options) {
  PRISM_RETURN_IF_ERROR(tune::CheckConstantInputs(program, options.constant_inputs));
  return OptimizePartsAt(program, options, "", tune::CutDepth{});
}

absl::Status WritePlan(const Plan& plan, const std::string& dir) {
  if (plan.result) return WriteResult(*plan.result, dir);
  for (const Plan& part : plan.parts) {
    PRISM_RETURN_IF_ERROR(WritePlan(part, JoinPath(dir, part.name)));
  }
  if (plan.split_json.empty()) return absl::OkStatus();  // one part per output
  return WriteText(JoinPath(dir, "split.json"), plan.split_json);
}

absl::StatusOr<ProofSummary> CheckProof(absl::string_view proof_json, const std::string& rules_dir) {
  std::string dir = rules_dir;
  if (dir.empty()) {
    PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
    dir = JoinPath(root, "smt_theories/equiv");
  }
  PRISM_ASSIGN_OR_RETURN(std::vector<proofcheck::RuleFile> files, proofcheck::ReadRuleDirectory(dir));
  absl::StatusOr<ProofSummary> s = proofcheck::CheckProof(proof_json, files);
  if (!s.ok()) {
    const bool malformed = absl::StartsWith(s.status().message(), "malformed proof: ");
    return absl::Status(s.status().code(),
                        absl::StrCat(malformed ? "" : "proof rejected: ", s.status().message()));
  }
  return s;
}

absl::StatusOr<AuditResult> Audit(const std::string& dir, const AuditOptions& options) {
  return report::Audit(dir, options);
}

}  // namespace prism
