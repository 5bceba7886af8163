// Builds and writes proof reports (report/report.h; the schema is docs/report.md).
#include "prism/report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "prism/block/sgraph_json.h"
#include "prism/block/sgraph_printer.h"
#include "prism/equiv/lower.h"
#include "prism/equiv/lower_sgraph.h"
#include "prism/equiv/proof_json.h"
#include "prism/equiv/rules.h"
#include "prism/ir/text_format.h"
#include "prism/prune/pruner.h"
#include "report_internal.h"

#ifndef PRISM_VERSION
#define PRISM_VERSION "unknown"
#endif

namespace prism::report {
namespace internal {

std::string Num(double v) {
  if (!std::isfinite(v)) return "n/a";
  return absl::StrFormat("%.4g", v);
}

const char* SelectedBy(tune::Method method) {
  return method == tune::Method::kMeasured ? "selected by measurement" : "selected by the cost model's estimate";
}

std::string HtmlEscape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string SmtFileName(size_t index, absl::string_view family, absl::string_view query) {
  std::string safe;
  for (char c : family) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    safe.push_back(ok ? c : '_');
  }
  return absl::StrFormat("%03d-%s.%s.smt2", static_cast<int>(index + 1), safe, query);
}

absl::StatusOr<std::vector<TheoryFile>> TheoryFiles(const std::string& theory_dir,
                                                    const std::string& target) {
  namespace fs = std::filesystem;
  std::vector<std::string> rel = {"resources.smt2", "cost.smt2", "hardware/" + target + ".smt2"};
  for (const char* sub : {"equiv", "rules"}) {
    std::error_code ec;
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(fs::path(theory_dir) / sub, ec)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".rules" || ext == ".smt2")) {
        names.push_back(absl::StrCat(sub, "/", e.path().filename().string()));
      }
    }
    if (ec) {
      return absl::NotFoundError(absl::StrCat("cannot list '", (fs::path(theory_dir) / sub).string(),
                                              "': ", ec.message()));
    }
    std::sort(names.begin(), names.end());
    rel.insert(rel.end(), names.begin(), names.end());
  }
  std::vector<TheoryFile> out;
  for (const std::string& r : rel) {
    PRISM_ASSIGN_OR_RETURN(std::string bytes, ReadFile(JoinPath(theory_dir, r)));
    out.push_back({r, HashToHex(StableHashBytes(bytes))});
  }
  return out;
}

absl::StatusOr<std::string> DefaultTheoryDir(const std::string& given) {
  if (!given.empty()) return given;
  PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
  return JoinPath(root, "smt_theories");
}

absl::StatusOr<ProofData> ProveChosen(const Program& program, const SGraph& graph) {
  ExprContext ctx;
  PRISM_ASSIGN_OR_RETURN(equiv::RuleSet rules, equiv::LoadDefaultRules(ctx));
  PRISM_ASSIGN_OR_RETURN(std::vector<equiv::ProveResult> proofs,
                         equiv::ProveSGraph(ctx, graph, program, rules, equiv::SGraphProveOptions()));
  if (proofs.empty() || proofs[0].verdict != equiv::Verdict::kProved || !proofs[0].proof) {
    return absl::InternalError(absl::StrCat(
        "the chosen family does not prove again: ",
        proofs.empty() ? "no output" : proofs[0].reason));
  }
  const equiv::Explanation& e = *proofs[0].proof;
  ProofData d;
  d.proof_json = equiv::ProofToJson(e, equiv::ProgramEnv(program, &ctx), rules, &ctx).dump(2) + "\n";
  d.start = e.start.ToString(&ctx);
  d.goal = e.goal.ToString(&ctx);
  d.rules_used = e.RulesUsed();
  for (const equiv::ProofStep& s : e.steps) {
    ChainStep c;
    c.rule = std::string(s.rule.name());
    c.direction = std::string(equiv::DirectionName(s.direction));
    c.kind = s.kind == equiv::Justification::Kind::kRule       ? "rule"
             : s.kind == equiv::Justification::Kind::kAnalysis ? "analysis"
                                                               : "given";
    c.position = s.position;
    const std::optional<uint32_t> a = s.before.At(s.position);
    const std::optional<uint32_t> b = s.after.At(s.position);
    c.from = a ? s.before.ToString(*a, &ctx) : s.before.ToString(&ctx);
    c.to = b ? s.after.ToString(*b, &ctx) : s.after.ToString(&ctx);
    d.steps.push_back(std::move(c));
  }
  return d;
}

}  // namespace internal

namespace {

using internal::HtmlEscape;
using internal::Num;
using internal::ChainStep;
using internal::ProofData;
using internal::ProveChosen;
using json = nlohmann::ordered_json;

std::string PositionText(const std::vector<int>& p) { return absl::StrCat("[", absl::StrJoin(p, ", "), "]"); }

// (label, count, kind) rows of the funnel chart; kind: "stage", "prune", "tune".
struct FunnelRow {
  std::string label;
  int64_t count;
  std::string kind;
};

std::vector<FunnelRow> FunnelRows(const tune::TuneResult& r) {
  const search::Funnel& f = r.search.funnel;
  std::vector<FunnelRow> rows = {
      {"generated (op sequences)", f.generated, "stage"},
      {"pruned by abstract expression", f.pruned_abstract, "prune"},
      {"complete structures", f.structures, "stage"},
      {"mapped candidates", f.mapped, "stage"},
      {"not proved", f.unproved, "prune"},
      {"proved", f.proved, "stage"},
  };
  // A family can be cut by several rules at once (its unsat core), so the per-rule rows may
  // add up to more than the pruned families.
  if (r.search.funnel.proved > 0) {
    rows.push_back({"pruned families (SMT)", static_cast<int64_t>(r.search.pruned.size()), "prune"});
  }
  for (const auto& [rule, n] : f.pruned_by_rule) rows.push_back({"  by " + rule, n, "prune"});
  rows.push_back({"survivors", f.survivors, "stage"});
  int64_t measured = 0;
  for (const tune::Candidate& c : r.candidates) measured += c.measurement ? 1 : 0;
  rows.push_back({"instantiated (candidates)", static_cast<int64_t>(r.candidates.size()), "tune"});
  rows.push_back({"measured", measured, "tune"});
  return rows;
}

std::string FunnelSvg(const std::vector<FunnelRow>& rows) {
  const int row_h = 24, label_w = 300, bar_w = 400;
  const int h = static_cast<int>(rows.size()) * row_h + 10;
  int64_t max = 1;
  for (const FunnelRow& r : rows) max = std::max(max, r.count);
  std::string svg = absl::StrFormat(
      "<svg id=\"funnel\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "role=\"img\" aria-label=\"pruning funnel (log scale)\">\n",
      label_w + bar_w + 120, h);
  for (size_t i = 0; i < rows.size(); ++i) {
    const FunnelRow& r = rows[i];
    const int y = static_cast<int>(i) * row_h + 5;
    const double frac = r.count <= 0 ? 0.0
                                     : std::log10(static_cast<double>(r.count) + 1) /
                                           std::log10(static_cast<double>(max) + 1);
    const int w = r.count <= 0 ? 0 : std::max(2, static_cast<int>(std::lround(frac * bar_w)));
    const char* color = r.kind == "prune" ? "#c0392b" : r.kind == "tune" ? "#27ae60" : "#2e6fb7";
    absl::StrAppendFormat(&svg,
                          "  <text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"fl\">%s</text>\n"
                          "  <rect class=\"bar %s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                          "fill=\"%s\"/>\n"
                          "  <text x=\"%d\" y=\"%d\" class=\"fc\">%d</text>\n",
                          label_w - 8, y + 16, HtmlEscape(r.label), r.kind, label_w, y + 3, w,
                          row_h - 6, color, label_w + w + 6, y + 16, r.count);
  }
  svg += "</svg>\n";
  return svg;
}

struct Stage {
  std::string name;
  double seconds;
};

// The search's three stages, then the tuner's steps that ran (tune::StepTimes), then, with a
// total, what is left of it ("other": the device query, the reference evaluation, writing);
// without step times (a result built by hand), one stage for everything after the search.
std::vector<Stage> Stages(const tune::TuneResult& r, const ReportOptions& o) {
  std::vector<Stage> s = {{"generate", r.search.generate_s},
                          {"prove", r.search.prove_s},
                          {"rank and prune", r.search.prune_s}};
  const tune::StepTimes& t = r.times;
  double steps = 0;
  for (const auto& [name, seconds] :
       std::initializer_list<std::pair<const char*, double>>{{"instantiate and codegen", t.candidates_s},
                                                              {"compile", t.compile_s},
                                                              {"measure", t.measure_s},
                                                              {"refine", t.refine_s},
                                                              {"confirm", t.confirm_s}}) {
    if (seconds < 0) continue;
    s.push_back({name, seconds});
    steps += seconds;
  }
  if (o.total_s < 0) return s;
  const double rest = std::max(0.0, o.total_s - r.search.elapsed_s - steps);
  s.push_back({t.candidates_s < 0 ? "instantiate, codegen, compile, measure" : "other", rest});
  return s;
}

std::string TimelineSvg(const std::vector<Stage>& stages) {
  const int w = 760, bar_h = 28;
  double total = 0;
  for (const Stage& s : stages) total += s.seconds;
  // Colours distinct from the funnel's (the screenshot test finds the funnel by its colours).
  const char* colors[] = {"#5b9bd5", "#8e44ad", "#e67e22", "#16a085",
                          "#f1c40f", "#7f8c8d", "#d35400", "#1abc9c", "#34495e"};
  std::string svg = absl::StrFormat(
      "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "role=\"img\" aria-label=\"stage timeline\">\n",
      w, bar_h + 24 * static_cast<int>(stages.size()) + 16);
  double x = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const double sw = total > 0 ? stages[i].seconds / total * w : 0;
    absl::StrAppendFormat(&svg,
                          "  <rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                          x, std::max(sw, 1.0), bar_h, colors[i % 9]);
    const int ly = bar_h + 20 + 24 * static_cast<int>(i);
    absl::StrAppendFormat(&svg,
                          "  <rect x=\"0\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n"
                          "  <text x=\"20\" y=\"%d\" class=\"fl\">%s: %s s (starts at %s s)</text>\n",
                          ly - 12, colors[i % 9], ly, HtmlEscape(stages[i].name),
                          Num(stages[i].seconds), Num(total > 0 ? x / w * total : 0));
    x += sw;
  }
  svg += "</svg>\n";
  return svg;
}

const char* kCss = R"(body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;
text-align:left;vertical-align:top;font-size:.9em}th{background:#f0f0f0}
pre,code{font-family:monospace;font-size:.85em}pre{background:#f7f7f7;padding:.6em;overflow-x:auto}
ol.chain li{margin-bottom:.5em}ol.chain code{word-break:break-all}
.fl{font-size:12px;fill:#222}.fc{font-size:12px;fill:#444}
)";

}  // namespace

absl::StatusOr<Report> BuildReport(const Program& program, const std::string& program_label,
                                   const Target& target, const tune::TuneResult& result,
                                   const ReportOptions& options) {
  if (result.selected < 0 || result.selected >= static_cast<int>(result.candidates.size())) {
    return absl::FailedPreconditionError("the result has no selected candidate to report on");
  }
  const tune::Candidate& chosen = result.chosen();
  const search::FamilyResult& fam = result.chosen_family();
  PRISM_ASSIGN_OR_RETURN(std::string theory_dir, internal::DefaultTheoryDir(options.theory_dir));
  PRISM_ASSIGN_OR_RETURN(std::vector<internal::TheoryFile> theory_files,
                         internal::TheoryFiles(theory_dir, target.name));
  prune::PrunerOptions popts;
  popts.theory_dir = theory_dir;
  PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target, popts));
  PRISM_ASSIGN_OR_RETURN(ProofData proof, ProveChosen(program, *fam.graph));

  Report rep;
  rep.proof_json = proof.proof_json;
  const std::string program_text = PrintProgram(program);

  // ---- report.json -----------------------------------------------------------------------
  json j;
  j["format"] = kReportFormat;
  j["version"] = kReportVersion;
  j["tool"] = {{"name", "prism"}, {"version", PRISM_VERSION}};
  j["program"] = {{"label", program_label},
                  {"structural_hash", HashToHex(program.StructuralHash())},
                  {"text", program_text}};
  j["target"] = {{"name", target.name}, {"display_name", target.display_name}};
  json sel = {{"method", tune::MethodName(result.method)},
              {"family", chosen.family + 1},
              {"kernels", fam.kernels},
              {"assignment", AssignmentJson(*fam.graph, chosen.assignment)},
              {"cost_us", chosen.cost_us},
              {"estimate_us", chosen.estimate_us},
              {"estimate_terms", chosen.estimate_terms},
              {"rank_us", fam.rank_us}};
  if (!chosen.codegen_variant.empty()) sel["codegen_variant"] = chosen.codegen_variant;
  if (!result.no_gpu_reason.empty()) sel["no_gpu_reason"] = result.no_gpu_reason;
  if (chosen.measurement) sel["measured_us"] = chosen.measurement->median_us;
  j["selection"] = sel;
  json kernels = json::array();
  for (const codegen::LaunchConfig& l : result.code.launches) {
    kernels.push_back({{"kernel", l.kernel},
                       {"function", l.function},
                       {"grid", l.grid},
                       {"threads", l.threads},
                       {"dynamic_smem_bytes", l.dynamic_smem_bytes},
                       {"stage_bytes", l.stage_bytes},
                       {"accumulator_regs", l.accumulator_regs}});
  }
  j["kernels"] = {{"source_file", "kernel.cu"},
                  {"source_hash", HashToHex(StableHashBytes(result.code.source))},
                  {"sgraph_text", SGraphToString(*fam.graph)},
                  {"launches", kernels}};
  json chain = json::array();
  for (size_t i = 0; i < proof.steps.size(); ++i) {
    const ChainStep& s = proof.steps[i];
    chain.push_back({{"step", i + 1},
                     {"kind", s.kind},
                     {"rule", s.rule},
                     {"direction", s.direction},
                     {"position", s.position},
                     {"from", s.from},
                     {"to", s.to}});
  }
  j["proof"] = {{"file", "proof.json"},
                {"hash", HashToHex(StableHashBytes(rep.proof_json))},
                {"check", "prism check-proof proof.json"},
                {"start", proof.start},
                {"goal", proof.goal},
                {"rules_used", proof.rules_used},
                {"steps", chain}};
  const search::Funnel& f = result.search.funnel;
  int64_t measured = 0;
  for (const tune::Candidate& c : result.candidates) measured += c.measurement ? 1 : 0;
  j["funnel"] = {{"generated", f.generated},
                 {"pruned_abstract", f.pruned_abstract},
                 {"revisited", f.revisited},
                 {"pruned_bound", f.pruned_bound},
                 {"structures", f.structures},
                 {"map_validated", f.map_validated},
                 {"split_built", f.split_built},
                 {"mapped", f.mapped},
                 {"proved", f.proved},
                 {"unproved", f.unproved},
                 {"refuted", f.refuted},
                 {"pruned_families", result.search.pruned.size()},
                 {"pruned_by_rule", f.pruned_by_rule},
                 {"survivors", f.survivors},
                 {"instantiated", result.candidates.size()},
                 {"measured", measured}};
  if (result.search.incumbent_us) j["funnel"]["incumbent_us"] = *result.search.incumbent_us;
  json rules = json::array();
  std::map<std::string, std::string> rule_hash;
  for (const internal::TheoryFile& t : theory_files) rule_hash[t.path] = t.hash;
  for (const prune::RuleInfo& r : pruner.rules()) {
    rules.push_back({{"name", r.name},
                     {"kind", r.kind == prune::RuleInfo::Kind::kHard ? "hard" : "dominance"},
                     {"file", absl::StrCat("rules/", r.name, ".smt2")},
                     {"soundness", r.soundness},
                     {"families_pruned", f.pruned_by_rule.count(r.name) ? f.pruned_by_rule.at(r.name) : 0}});
  }
  j["rules"] = rules;
  json pruned = json::array();
  for (size_t i = 0; i < result.search.pruned.size(); ++i) {
    const search::PrunedFamily& p = result.search.pruned[i];
    json e = {{"index", i + 1},
              {"family", p.name},
              {"kernels", p.kernels},
              {"verdict", p.verdict},
              {"rules", p.rules},
              {"decision", p.decision}};
    if (p.cost_us >= 0) e["cost_us"] = p.cost_us;
    if (p.verdict == "dominated") e["incumbent_us"] = p.incumbent_us;
    if (!p.smt2.empty()) {
      const std::string file = internal::SmtFileName(i, p.name, p.smt_query);
      e["smt_file"] = "smt/" + file;
      e["smt_hash"] = HashToHex(StableHashBytes(p.smt2));
      e["expected"] = "unsat";
      rep.smt_files.push_back({file, p.smt2});
    }
    e["sgraph"] = SGraphToJson(*p.graph);
    pruned.push_back(std::move(e));
  }
  j["pruned"] = pruned;
  json cands = json::array();
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const tune::Candidate& c = result.candidates[i];
    json e = {{"family", c.family + 1},
              {"assignment", AssignmentJson(*result.search.families[c.family].graph, c.assignment)},
              {"cost_us", c.cost_us},
              {"estimate_us", c.estimate_us},
              {"estimate_terms", c.estimate_terms},
              {"selected", static_cast<int>(i) == result.selected}};
    if (!c.codegen_variant.empty()) e["codegen_variant"] = c.codegen_variant;
    if (c.refined_from >= 0) e["refined_from"] = c.refined_from;
    if (c.measurement) {
      e["measured_us"] = c.measurement->median_us;
      if (c.measurement->replays > 0) e["replays"] = c.measurement->replays;
      e["relative_error"] = c.measurement->relative_error;
      e["matches"] = c.measurement->matches;
    }
    if (!c.confirm_us.empty()) e["confirm_us"] = c.confirm_us;
    if (!c.measure_error.empty()) e["measure_error"] = c.measure_error;
    cands.push_back(std::move(e));
  }
  j["candidates"] = cands;
  json tf = json::array();
  for (const internal::TheoryFile& t : theory_files) tf.push_back({{"path", t.path}, {"hash", t.hash}});
  j["theory_files"] = tf;
  json env = {{"nvrtc", result.nvrtc_version}, {"sm", result.sm}};
  json compiled = json::array();
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    if (result.candidates[i].compiled) compiled.push_back(i + 1);
  }
  env["compiled_candidates"] = compiled;
  if (result.device) {
    env["device"] = {{"ordinal", result.device->ordinal},
                     {"name", result.device->name},
                     {"sm", result.device->sm()},
                     {"sms", result.device->sms},
                     {"driver_version", result.device->driver_version}};
  }
  j["environment"] = env;
  const std::vector<Stage> stages = Stages(result, options);
  json timings = {{"search_s", result.search.elapsed_s}};
  for (const Stage& s : stages) timings["stages"].push_back({{"stage", s.name}, {"seconds", s.seconds}});
  if (options.total_s >= 0) timings["total_s"] = options.total_s;
  j["timings"] = timings;
  rep.json = j.dump(2) + "\n";

  // ---- report.md -------------------------------------------------------------------------
  std::string md = absl::StrCat("# prism report: ", program_label, "\n\n");
  absl::StrAppend(&md, "- tool: prism ", PRISM_VERSION, "\n- target: ", target.name, " (",
                  target.display_name, ")\n- program hash: ", HashToHex(program.StructuralHash()),
                  "\n- schema: ", kReportFormat, " version ", kReportVersion,
                  " (docs/report.md)\n\n");
  absl::StrAppend(&md, "## Input program\n\n```\n", program_text, "```\n\n");
  absl::StrAppend(&md, "## Chosen kernels\n\nFamily #", chosen.family + 1, " (", fam.kernels,
                  fam.kernels == 1 ? " kernel" : " kernels", ") at `",
                  tune::CandidateText(*fam.graph, chosen), "`, ",
                  internal::SelectedBy(result.method));
  if (!result.no_gpu_reason.empty()) absl::StrAppend(&md, " (no GPU: ", result.no_gpu_reason, ")");
  absl::StrAppend(&md, "; cost lower bound ", Num(chosen.cost_us), " µs, estimate ",
                  Num(chosen.estimate_us), " µs",
                  chosen.estimate_terms.empty() ? "" : absl::StrCat(" (`", chosen.estimate_terms, "`)"));
  if (chosen.measurement) absl::StrAppend(&md, ", measured ", Num(chosen.measurement->median_us), " µs");
  absl::StrAppend(&md, ".\n\n| kernel | function | grid | threads | dynamic smem (B) |\n|---|---|---|---|---|\n");
  for (const codegen::LaunchConfig& l : result.code.launches) {
    absl::StrAppend(&md, "| ", l.kernel, " | `", l.function, "` | (", absl::StrJoin(l.grid, ", "),
                    ") | ", l.threads, " | ", l.dynamic_smem_bytes, " |\n");
  }
  absl::StrAppend(&md, "\nCUDA source: `kernel.cu` (hash ", HashToHex(StableHashBytes(result.code.source)),
                  "). The family:\n\n```\n", SGraphToString(*fam.graph), "```\n\n");
  absl::StrAppend(&md, "## Equivalence proof\n\n", proof.steps.size(),
                  " steps; `prism check-proof proof.json` replays them against the rule files.\n\n",
                  "- start: `", proof.start, "`\n- goal: `", proof.goal, "`\n\n");
  for (size_t i = 0; i < proof.steps.size(); ++i) {
    const ChainStep& s = proof.steps[i];
    absl::StrAppend(&md, i + 1, ". `", s.rule, "` ", s.direction, " at ", PositionText(s.position),
                    ": `", s.from, "` → `", s.to, "`\n");
  }
  absl::StrAppend(&md, "\n## Pruning funnel\n\n| stage | count |\n|---|---|\n");
  const std::vector<FunnelRow> rows = FunnelRows(result);
  for (const FunnelRow& r : rows) absl::StrAppend(&md, "| ", r.label, " | ", r.count, " |\n");
  if (result.search.incumbent_us) {
    absl::StrAppend(&md, "\nDominance incumbent: ", Num(*result.search.incumbent_us), " µs.\n");
  }
  absl::StrAppend(&md, "\n## Pruned families\n\n", result.search.pruned.size(),
                  " families were pruned; each SMT file is re-checked by `z3 FILE` (answer: unsat).\n\n");
  if (!result.search.pruned.empty()) {
    absl::StrAppend(&md, "| # | family | verdict | deciding rules | SMT file |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < result.search.pruned.size(); ++i) {
      const search::PrunedFamily& p = result.search.pruned[i];
      absl::StrAppend(&md, "| ", i + 1, " | ", p.name, " | ", p.verdict, " | ",
                      absl::StrJoin(p.rules, ", "), " | ",
                      p.smt2.empty() ? "-" : "smt/" + internal::SmtFileName(i, p.name, p.smt_query),
                      " |\n");
    }
  }
  absl::StrAppend(&md, "\n## Measured times vs the cost model\n\n| # | family | assignment | cost lower bound (µs) | estimate (µs) | measured (µs) |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const tune::Candidate& c = result.candidates[i];
    absl::StrAppend(&md, "| ", i + 1, static_cast<int>(i) == result.selected ? " (selected)" : "",
                    " | ", c.family + 1, " | ", tune::CandidateText(*result.search.families[c.family].graph, c),
                    " | ", Num(c.cost_us), " | ", Num(c.estimate_us), " | ",
                    c.measurement ? Num(c.measurement->median_us)
                                  : (c.measure_error.empty() ? "not measured" : c.measure_error),
                    " |\n");
  }
  absl::StrAppend(&md, "\n## Versions\n\n- prism ", PRISM_VERSION, "\n\n| theory file | hash |\n|---|---|\n");
  for (const internal::TheoryFile& t : theory_files) absl::StrAppend(&md, "| ", t.path, " | ", t.hash, " |\n");
  absl::StrAppend(&md, "\n## Environment\n\n- NVRTC: ",
                  result.nvrtc_version.empty() ? "none" : result.nvrtc_version,
                  result.sm > 0 ? absl::StrCat(", compiled for sm_", result.sm) : "", "\n- device: ",
                  result.device ? result.device->name : "none", "\n");
  rep.markdown = md;

  // ---- report.html -----------------------------------------------------------------------
  std::string h = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>prism report: ",
      HtmlEscape(program_label), "</title>\n<style>\n", kCss, "</style>\n</head>\n<body>\n");
  absl::StrAppend(&h, "<h1>prism report: ", HtmlEscape(program_label), "</h1>\n<p>prism ",
                  PRISM_VERSION, " · target ", HtmlEscape(target.name), " (",
                  HtmlEscape(target.display_name), ") · program hash ",
                  HashToHex(program.StructuralHash()), "</p>\n");
  absl::StrAppend(&h, "<h2>Pruning funnel</h2>\n<p>Bars on a log scale; red: removed, green: tuning.</p>\n",
                  FunnelSvg(rows));
  absl::StrAppend(&h, "<h2>Stage timeline</h2>\n", TimelineSvg(stages));
  absl::StrAppend(&h, "<h2>Input program</h2>\n<pre>", HtmlEscape(program_text), "</pre>\n");
  absl::StrAppend(&h, "<h2>Chosen kernels</h2>\n<p>Family #", chosen.family + 1, " at <code>",
                  HtmlEscape(tune::CandidateText(*fam.graph, chosen)), "</code>, ",
                  internal::SelectedBy(result.method), "; cost lower bound ", Num(chosen.cost_us),
                  " µs, estimate ", Num(chosen.estimate_us), " µs", chosen.measurement ? absl::StrCat(", measured ", Num(chosen.measurement->median_us), " µs") : "",
                  ".</p>\n<table><tr><th>kernel</th><th>function</th><th>grid</th><th>threads</th>"
                  "<th>dynamic smem (B)</th></tr>\n");
  for (const codegen::LaunchConfig& l : result.code.launches) {
    absl::StrAppend(&h, "<tr><td>", HtmlEscape(l.kernel), "</td><td><code>", HtmlEscape(l.function),
                    "</code></td><td>(", absl::StrJoin(l.grid, ", "), ")</td><td>", l.threads,
                    "</td><td>", l.dynamic_smem_bytes, "</td></tr>\n");
  }
  absl::StrAppend(&h, "</table>\n<pre>", HtmlEscape(SGraphToString(*fam.graph)), "</pre>\n");
  absl::StrAppend(&h, "<h2>Equivalence proof</h2>\n<p>", proof.steps.size(),
                  " steps; <code>prism check-proof proof.json</code> replays them.</p>\n<p>start: <code>",
                  HtmlEscape(proof.start), "</code><br>goal: <code>", HtmlEscape(proof.goal),
                  "</code></p>\n<ol class=\"chain\">\n");
  for (const ChainStep& s : proof.steps) {
    absl::StrAppend(&h, "<li><b>", HtmlEscape(s.rule), "</b> ", s.direction, " at ",
                    PositionText(s.position), ": <code>", HtmlEscape(s.from), "</code> → <code>",
                    HtmlEscape(s.to), "</code></li>\n");
  }
  absl::StrAppend(&h, "</ol>\n<h2>Pruned families</h2>\n<table><tr><th>#</th><th>family</th>"
                      "<th>verdict</th><th>deciding rules</th><th>SMT file</th></tr>\n");
  for (size_t i = 0; i < result.search.pruned.size(); ++i) {
    const search::PrunedFamily& p = result.search.pruned[i];
    absl::StrAppend(&h, "<tr><td>", i + 1, "</td><td>", HtmlEscape(p.name), "</td><td>", p.verdict,
                    "</td><td>", HtmlEscape(absl::StrJoin(p.rules, ", ")), "</td><td>",
                    p.smt2.empty() ? "-" : HtmlEscape("smt/" + internal::SmtFileName(i, p.name, p.smt_query)),
                    "</td></tr>\n");
  }
  absl::StrAppend(&h, "</table>\n<h2>Measured times vs the cost model</h2>\n<table><tr><th>#</th>"
                      "<th>family</th><th>assignment</th><th>cost lower bound (µs)</th>"
                      "<th>estimate (µs)</th><th>measured (µs)</th></tr>\n");
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const tune::Candidate& c = result.candidates[i];
    absl::StrAppend(&h, "<tr><td>", i + 1, static_cast<int>(i) == result.selected ? " (selected)" : "",
                    "</td><td>", c.family + 1, "</td><td>",
                    HtmlEscape(tune::CandidateText(*result.search.families[c.family].graph, c)),
                    "</td><td>", Num(c.cost_us), "</td><td>", Num(c.estimate_us), "</td><td>",
                    c.measurement ? Num(c.measurement->median_us)
                                  : HtmlEscape(c.measure_error.empty() ? "not measured" : c.measure_error),
                    "</td></tr>\n");
  }
  absl::StrAppend(&h, "</table>\n<h2>Versions</h2>\n<table><tr><th>theory file</th><th>hash</th></tr>\n");
  for (const internal::TheoryFile& t : theory_files) {
    absl::StrAppend(&h, "<tr><td>", HtmlEscape(t.path), "</td><td><code>", t.hash, "</code></td></tr>\n");
  }
  absl::StrAppend(&h, "</table>\n<h2>Environment</h2>\n<p>NVRTC: ",
                  HtmlEscape(result.nvrtc_version.empty() ? "none" : result.nvrtc_version),
                  result.sm > 0 ? absl::StrCat(", compiled for sm_", result.sm) : "", "; device: ",
                  HtmlEscape(result.device ? result.device->name : "none"), "</p>\n</body>\n</html>\n");
  rep.html = h;
  return rep;
}

absl::Status WriteReport(const Report& report, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "smt", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the output directory '", dir, "': ", ec.message()));
  }
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(dir) / "smt", ec)) {
    if (e.path().extension() == ".smt2") fs::remove(e.path(), ec);
  }
  const auto write = [&](const std::string& path, const std::string& text) -> absl::Status {
    absl::Status s = WriteFile(path, text);
    if (!s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("cannot write '", path, "': ", s.message()));
    }
    return absl::OkStatus();
  };
  PRISM_RETURN_IF_ERROR(write(JoinPath(dir, "report.json"), report.json));
  PRISM_RETURN_IF_ERROR(write(JoinPath(dir, "report.md"), report.markdown));
  PRISM_RETURN_IF_ERROR(write(JoinPath(dir, "report.html"), report.html));
  PRISM_RETURN_IF_ERROR(write(JoinPath(dir, "proof.json"), report.proof_json));
  for (const auto& [name, text] : report.smt_files) {
    PRISM_RETURN_IF_ERROR(write(JoinPath(JoinPath(dir, "smt"), name), text));
  }
  return absl::OkStatus();
}

}  // namespace prism::report
