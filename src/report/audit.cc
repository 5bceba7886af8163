// Audits a proof report (report/audit.h).
#include "prism/report/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
#include "prism/base/hash.h"
#include "prism/base/paths.h"
#include "prism/base/rng.h"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/block/sgraph_json.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "prism/ir/text_format.h"
#include "prism/proofcheck/checker.h"
#include "prism/prune/block_family.h"
#include "prism/prune/pruner.h"
#include "prism/report/report.h"
#include "prism/smt/target.h"
#include "report_internal.h"

namespace prism::report {
namespace {

using Json = nlohmann::json;

std::string ShellQuote(absl::string_view s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

// Runs `command` through the shell; stdout, and the exit status (-1 if it could not run).
std::pair<std::string, int> RunCommand(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {"", -1};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// The first answer line of a solver's output: "sat", "unsat", "unknown", "timeout" (nothing
// answered) or the line itself.
std::string Answer(const std::string& out) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line == "sat" || line == "unsat" || line == "unknown") return std::string(line);
    if (absl::StartsWith(line, "(error") || absl::StartsWith(line, "unsupported") ||
        absl::StartsWith(line, "(warning") || absl::StartsWith(line, "WARNING")) {
      continue;  // e.g. a z3-only option that cvc5 does not know
    }
    if (absl::StartsWith(line, "timeout") || absl::StrContains(line, "interrupted")) return "timeout";
    return std::string(line);
  }
  return "timeout";
}

class Auditor {
 public:
  Auditor(const std::string& dir, const AuditOptions& options) : dir_(dir), options_(options) {}

  absl::StatusOr<AuditResult> Run() {
    namespace fs = std::filesystem;
    result_.dir = dir_;
    result_.solver = options_.solver;
    if (options_.solver != "z3" && options_.solver != "cvc5") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown solver '", options_.solver, "'; expected z3 or cvc5"));
    }
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) {
      return absl::NotFoundError(absl::StrCat(
          "audit: '", dir_, "' is not a directory (give the --out directory of prism optimize)"));
    }
    const std::string path = JoinPath(dir_, "report.json");
    if (!fs::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat(
          "audit: '", path, "' is missing (the directory holds no report: run prism optimize --out ",
          dir_, ")"));
    }
    PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    try {
      report_ = Json::parse(text);
    } catch (const Json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON: ", e.what()));
    }
    PRISM_RETURN_IF_ERROR(CheckHeader(path));
    PRISM_ASSIGN_OR_RETURN(theory_dir_, internal::DefaultTheoryDir(options_.theory_dir));
    PRISM_RETURN_IF_ERROR(FindSolver());
    PRISM_RETURN_IF_ERROR(CheckTheories());
    PRISM_RETURN_IF_ERROR(CheckProof());
    PRISM_RETURN_IF_ERROR(CheckPruned(path));
    PRISM_RETURN_IF_ERROR(CheckMembers(path));
    return result_;
  }

 private:
  void Disagree(std::string message) { result_.disagreements.push_back(std::move(message)); }

  // The field at `key` of `obj` with the expected JSON type, or InvalidArgument naming it.
  absl::StatusOr<const Json*> Field(const Json& obj, const std::string& where, const char* key,
                                    Json::value_t type) const {
    const std::string report = JoinPath(dir_, "report.json");
    if (!obj.is_object() || !obj.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(report, ": ", where, key, ": missing"));
    }
    const Json& v = obj.at(key);
    const bool number_ok = type == Json::value_t::number_float && v.is_number();
    const bool int_ok = type == Json::value_t::number_unsigned && v.is_number_integer();
    if (v.type() != type && !number_ok && !int_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(report, ": ", where, key, ": expected ", Json(type).type_name(), ", found ",
                       v.type_name()));
    }
    return &v;
  }

  absl::Status CheckHeader(const std::string& path) {
    if (!report_.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object"));
    }
    const std::string format = report_.value("format", std::string());
    if (format != kReportFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": format is '", format, "', expected '", kReportFormat, "'"));
    }
    if (!report_.contains("version") || !report_["version"].is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": version: missing or not an integer"));
    }
    const int64_t version = report_["version"].get<int64_t>();
    if (version != kReportVersion) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": schema version ", version, " is not supported (this prism reads version ",
          kReportVersion, "); regenerate the report with this prism's 'prism optimize'"));
    }
    return absl::OkStatus();
  }

  absl::Status FindSolver() {
    binary_ = options_.solver_binary.empty() ? options_.solver : options_.solver_binary;
    const auto [out, code] = RunCommand(absl::StrCat(ShellQuote(binary_), " --version 2>&1"));
    if (code != 0) {
      return absl::NotFoundError(absl::StrCat(
          "solver '", binary_, "' not found: '", binary_, " --version' failed (",
          absl::StripAsciiWhitespace(out), "); install it (Debian: apt-get install ",
          options_.solver, ") or pass its path"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckTheories() {
    PRISM_ASSIGN_OR_RETURN(const Json* files, Field(report_, "", "theory_files", Json::value_t::array));
    for (size_t i = 0; i < files->size(); ++i) {
      const std::string where = absl::StrCat("theory_files[", i, "].");
      PRISM_ASSIGN_OR_RETURN(const Json* p, Field((*files)[i], where, "path", Json::value_t::string));
      PRISM_ASSIGN_OR_RETURN(const Json* h, Field((*files)[i], where, "hash", Json::value_t::string));
      absl::StatusOr<std::string> bytes = ReadFile(JoinPath(theory_dir_, p->get<std::string>()));
      if (!bytes.ok()) {
        Disagree(absl::StrCat("theory file ", p->get<std::string>(), ": cannot be read in ",
                              theory_dir_, " (", bytes.status().message(), ")"));
        continue;
      }
      const std::string now = HashToHex(StableHashBytes(*bytes));
      if (now != h->get<std::string>()) {
        Disagree(absl::StrCat("theory file ", p->get<std::string>(), " has hash ", now,
                              ", but the report was made with hash ", h->get<std::string>(),
                              " (the theories changed since the report was made)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckProof() {
    PRISM_ASSIGN_OR_RETURN(const Json* proof, Field(report_, "", "proof", Json::value_t::object));
    PRISM_ASSIGN_OR_RETURN(const Json* hash, Field(*proof, "proof.", "hash", Json::value_t::string));
    PRISM_ASSIGN_OR_RETURN(const Json* start, Field(*proof, "proof.", "start", Json::value_t::string));
    PRISM_ASSIGN_OR_RETURN(const Json* goal, Field(*proof, "proof.", "goal", Json::value_t::string));
    const std::string file = JoinPath(dir_, "proof.json");
    absl::StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) {
      Disagree(absl::StrCat("proof.json: missing (", text.status().message(), ")"));
      return absl::OkStatus();
    }
    PRISM_ASSIGN_OR_RETURN(std::vector<proofcheck::RuleFile> rules,
                           proofcheck::ReadRuleDirectory(JoinPath(theory_dir_, "equiv")));
    absl::StatusOr<proofcheck::ProofSummary> summary = proofcheck::CheckProof(*text, rules);
    if (!summary.ok()) {
      Disagree(absl::StrCat("proof.json: proof rejected: ", summary.status().message()));
    } else {
      result_.proof_steps = summary->steps;
      if (summary->start != start->get<std::string>() || summary->goal != goal->get<std::string>()) {
        Disagree("proof.json: proves a different pair of terms than the report's proof.start and proof.goal");
      }
    }
    const std::string now = HashToHex(StableHashBytes(*text));
    if (now != hash->get<std::string>()) {
      Disagree(absl::StrCat("proof.json: hash ", now, " differs from the report's ",
                            hash->get<std::string>(), " (the proof was edited after the report was made)"));
    }
    return absl::OkStatus();
  }

  // The rule kinds of the theory directory (hard / dominance), by name.
  absl::Status LoadRuleKinds(const std::string& target_name) {
    PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget(target_name));
    target_ = target;
    prune::PrunerOptions o;
    o.theory_dir = theory_dir_;
    PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target, o));
    for (const prune::RuleInfo& r : pruner.rules()) dominance_[r.name] = r.kind == prune::RuleInfo::Kind::kDominance;
    return absl::OkStatus();
  }

  std::string SolverCommand(const std::string& file) const {
    if (options_.solver == "z3") {
      return absl::StrCat(ShellQuote(binary_), " -T:", options_.solver_timeout_s, " ", ShellQuote(file),
                          " 2>&1");
    }
    return absl::StrCat(ShellQuote(binary_), " --lang=smt2 --tlimit=", options_.solver_timeout_s * 1000,
                        " ", ShellQuote(file), " 2>&1");
  }

  // Runs the solver on `text` (cvc5: without z3-only options, through a temporary file).
  std::string Solve(const std::string& file, const std::string& text) {
    if (options_.solver == "z3") return Answer(RunCommand(SolverCommand(file)).first);
    // cvc5 wants a logic before the first declaration (after the options) and rejects z3's
    // own options.
    std::string filtered;
    bool logic = false;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StrContains(line, "(set-option :smt.")) continue;
      if (!logic && absl::StartsWith(line, "(") && !absl::StartsWith(line, "(set-option")) {
        absl::StrAppend(&filtered, "(set-logic ALL)\n");
        logic = true;
      }
      absl::StrAppend(&filtered, line, "\n");
    }
    char name[] = "/tmp/prism_audit_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) return "timeout";
    close(fd);
    if (!WriteFile(name, filtered).ok()) return "timeout";
    const std::string a = Answer(RunCommand(SolverCommand(name)).first);
    unlink(name);
    return a;
  }

  // answers_[i]: the solver's answer on pruned[i]'s SMT file ("" when it has none or it cannot
  // be read). The solver runs are independent processes, run a few at a time.
  void SolveAll(const Json& pruned) {
    answers_.assign(pruned.size(), "");
    std::vector<std::pair<size_t, std::string>> jobs;  // (index, file)
    for (size_t i = 0; i < pruned.size(); ++i) {
      const Json& e = pruned[i];
      if (e.is_object() && e.contains("smt_file") && e["smt_file"].is_string()) {
        jobs.push_back({i, JoinPath(dir_, e["smt_file"].get<std::string>())});
      }
    }
    std::atomic<size_t> next{0};
    const auto work = [&] {
      for (size_t k = next++; k < jobs.size(); k = next++) {
        absl::StatusOr<std::string> text = ReadFile(jobs[k].second);
        if (text.ok()) answers_[jobs[k].first] = Solve(jobs[k].second, *text);
      }
    };
    const size_t threads =
        std::min<size_t>(jobs.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }

  absl::Status CheckPruned(const std::string& path) {
    PRISM_ASSIGN_OR_RETURN(const Json* target, Field(report_, "", "target", Json::value_t::object));
    PRISM_ASSIGN_OR_RETURN(const Json* tname, Field(*target, "target.", "name", Json::value_t::string));
    PRISM_RETURN_IF_ERROR(LoadRuleKinds(tname->get<std::string>()));
    PRISM_ASSIGN_OR_RETURN(const Json* pruned, Field(report_, "", "pruned", Json::value_t::array));
    PRISM_ASSIGN_OR_RETURN(const Json* funnel, Field(report_, "", "funnel", Json::value_t::object));
    PRISM_ASSIGN_OR_RETURN(const Json* by_rule, Field(*funnel, "funnel.", "pruned_by_rule", Json::value_t::object));
    SolveAll(*pruned);
    std::map<std::string, int64_t> counts;
    std::set<std::string> listed;
    for (size_t i = 0; i < pruned->size(); ++i) {
      const Json& e = (*pruned)[i];
      const std::string where = absl::StrCat("pruned[", i, "].");
      PRISM_ASSIGN_OR_RETURN(const Json* fam, Field(e, where, "family", Json::value_t::string));
      PRISM_ASSIGN_OR_RETURN(const Json* verdict, Field(e, where, "verdict", Json::value_t::string));
      PRISM_ASSIGN_OR_RETURN(const Json* rules, Field(e, where, "rules", Json::value_t::array));
      const std::string label = absl::StrCat("pruned family #", i + 1, " (", fam->get<std::string>(), ")");
      const std::string v = verdict->get<std::string>();
      std::vector<std::string> core;
      for (const Json& r : *rules) {
        if (!r.is_string()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", where, "rules: expected strings"));
        core.push_back(r.get<std::string>());
      }
      if (v == "no_feasible_instance") {
        ++counts["no_feasible_instance"];
        continue;
      }
      for (const std::string& r : core) {
        ++counts[r];
        ++result_.per_rule[r].families;
      }
      bool has_dominance = false, unknown_rule = false;
      for (const std::string& r : core) {
        if (absl::StartsWith(r, "constraint.")) continue;
        auto it = dominance_.find(r);
        if (it == dominance_.end()) {
          unknown_rule = true;
          Disagree(absl::StrCat(label, ": deciding rule '", r, "' is not a rule of ", theory_dir_, "/rules"));
        } else {
          has_dominance = has_dominance || it->second;
        }
      }
      if (v != "infeasible" && v != "dominated") {
        Disagree(absl::StrCat(label, ": verdict '", v,
                              "' is not a pruning verdict (expected infeasible, dominated or no_feasible_instance)"));
      } else if (!unknown_rule && v == "infeasible" && has_dominance) {
        Disagree(absl::StrCat(label, ": verdict 'infeasible' but its deciding rules include a dominance rule"));
      } else if (!unknown_rule && v == "dominated" && !has_dominance) {
        Disagree(absl::StrCat(label, ": verdict 'dominated' but none of its deciding rules is a dominance rule"));
      }
      if (!e.contains("smt_file")) {
        Disagree(absl::StrCat(label, ": no deciding SMT file is listed"));
        continue;
      }
      PRISM_ASSIGN_OR_RETURN(const Json* smt_file, Field(e, where, "smt_file", Json::value_t::string));
      PRISM_ASSIGN_OR_RETURN(const Json* smt_hash, Field(e, where, "smt_hash", Json::value_t::string));
      PRISM_ASSIGN_OR_RETURN(const Json* expected, Field(e, where, "expected", Json::value_t::string));
      const std::string rel = smt_file->get<std::string>();
      listed.insert(rel);
      ++result_.smt_files;
      const auto per_rule = [&](int64_t RuleAudit::*field) {
        for (const std::string& r : core) ++(result_.per_rule[r].*field);
      };
      const std::string file = JoinPath(dir_, rel);
      absl::StatusOr<std::string> text = ReadFile(file);
      if (!text.ok()) {
        Disagree(absl::StrCat(rel, ": missing (the deciding query of ", label, ")"));
        per_rule(&RuleAudit::smt_disagree);
        continue;
      }
      bool consistent = true;
      const std::string now = HashToHex(StableHashBytes(*text));
      if (now != smt_hash->get<std::string>()) {
        Disagree(absl::StrCat(rel, ": hash ", now, " differs from the report's ", smt_hash->get<std::string>(),
                              " (the query was edited after the report was made)"));
        consistent = false;
      }
      const size_t at = text->find("; decision: ");
      const std::string decision =
          at == std::string::npos ? "" : text->substr(at + 12, text->find('\n', at) - at - 12);
      if (!absl::StartsWith(decision, v)) {
        Disagree(absl::StrCat(rel, ": its header says '", decision, "', but the report's verdict for ",
                              label, " is '", v, "'"));
        consistent = false;
      }
      for (const std::string& r : core) {
        if (!absl::StrContains(*text, absl::StrCat(":named ", r, ")"))) {
          Disagree(absl::StrCat(rel, ": deciding rule '", r, "' is not an assertion of the query"));
          consistent = false;
        }
      }
      const std::string answer = answers_[i];
      if (answer == "unknown" || answer == "timeout") {
        ++result_.smt_unknown;
        per_rule(&RuleAudit::smt_unknown);
        result_.notes.push_back(absl::StrCat(rel, ": ", options_.solver, " answered ", answer,
                                             " (confirms nothing)"));
        continue;
      }
      if (answer != expected->get<std::string>()) {
        Disagree(absl::StrCat(rel, ": the report says ", expected->get<std::string>(), ", ",
                              options_.solver, " answers ", answer));
        per_rule(&RuleAudit::smt_disagree);
        continue;
      }
      if (expected->get<std::string>() != "unsat") {
        Disagree(absl::StrCat(rel, ": expected answer '", expected->get<std::string>(),
                              "' does not prune (a pruning query must be unsat)"));
        consistent = false;
      }
      if (consistent) {
        ++result_.smt_agree;
        per_rule(&RuleAudit::smt_agree);
      } else {
        per_rule(&RuleAudit::smt_disagree);
      }
    }
    std::map<std::string, int64_t> claimed;
    for (const auto& [rule, n] : by_rule->items()) {
      if (!n.is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": funnel.pruned_by_rule.", rule, ": expected an integer"));
      }
      claimed[rule] = n.get<int64_t>();
    }
    if (claimed != counts) {
      std::vector<std::string> diff;
      std::set<std::string> keys;
      for (const auto& [k, n] : claimed) keys.insert(k);
      for (const auto& [k, n] : counts) keys.insert(k);
      for (const std::string& k : keys) {
        const int64_t a = claimed.count(k) ? claimed.at(k) : 0, b = counts.count(k) ? counts.at(k) : 0;
        if (a != b) diff.push_back(absl::StrCat(k, ": ", a, " claimed, ", b, " listed"));
      }
      Disagree(absl::StrCat("funnel.pruned_by_rule does not match the pruned families listed (",
                            absl::StrJoin(diff, "; "), ")"));
    }
    // Queries in smt/ that the report does not list.
    std::error_code ec;
    std::vector<std::string> extra;
    for (const auto& f : std::filesystem::directory_iterator(JoinPath(dir_, "smt"), ec)) {
      const std::string rel = "smt/" + f.path().filename().string();
      if (f.path().extension() == ".smt2" && !listed.count(rel)) extra.push_back(rel);
    }
    std::sort(extra.begin(), extra.end());
    for (const std::string& x : extra) result_.notes.push_back(absl::StrCat(x, ": not listed in the report (ignored)"));
    return absl::OkStatus();
  }

  absl::Status CheckMembers(const std::string& path) {
    const Json& pruned = report_.at("pruned");
    std::vector<size_t> order;
    for (size_t i = 0; i < pruned.size(); ++i) {
      if (pruned[i].value("verdict", "") != "no_feasible_instance") order.push_back(i);
    }
    Rng rng(options_.seed);
    for (size_t i = order.size(); i > 1; --i) {  // Fisher–Yates, seeded
      std::swap(order[i - 1], order[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(i) - 1))]);
    }
    order.resize(std::min(order.size(), static_cast<size_t>(std::max(0, options_.sample_families))));
    std::sort(order.begin(), order.end());
    if (order.empty()) return absl::OkStatus();
    PRISM_ASSIGN_OR_RETURN(const Json* prog, Field(report_, "", "program", Json::value_t::object));
    PRISM_ASSIGN_OR_RETURN(const Json* ptext, Field(*prog, "program.", "text", Json::value_t::string));
    absl::StatusOr<Program> program = ParseProgram(ptext->get<std::string>(), "report.json program.text");
    if (!program.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": program.text: ", program.status().message()));
    }
    std::vector<Tensor> inputs = RandomInputs(*program, options_.seed);
    std::optional<std::vector<Tensor>> want;
    prune::PrunerOptions popts;
    popts.theory_dir = theory_dir_;
    PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(*target_, popts));
    for (size_t i : order) {
      const Json& e = pruned[i];
      const std::string name = e.value("family", "");
      const std::string label = absl::StrCat("pruned family #", i + 1, " (", name, ")");
      if (!e.contains("sgraph")) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": pruned[", i, "].sgraph: missing"));
      }
      absl::StatusOr<SGraph> graph = SGraphFromJson(e.at("sgraph"));
      if (!graph.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": pruned[", i, "].sgraph: ", graph.status().message()));
      }
      ExprContext ctx;
      absl::StatusOr<prune::Family> family = BuildFamily(*graph, ctx);
      if (!family.ok()) {
        Disagree(absl::StrCat(label, ": its sGraph does not build a family: ", family.status().message()));
        continue;
      }
      if (family->name() != name) {
        Disagree(absl::StrCat(label, ": its sGraph builds family '", family->name(), "'"));
        continue;
      }
      ++result_.families_sampled;
      std::vector<std::string> core = e.value("rules", std::vector<std::string>());
      std::optional<double> incumbent;
      if (e.value("verdict", "") == "dominated") {
        PRISM_ASSIGN_OR_RETURN(const Json* inc, Field(e, absl::StrCat("pruned[", i, "]."), "incumbent_us",
                                                      Json::value_t::number_float));
        incumbent = inc->get<double>();
      }
      for (int m = 0; m < options_.members_per_family; ++m) {
        Assignment a;
        for (const prune::Parameter& p : family->parameters()) {
          absl::StatusOr<std::vector<int64_t>> values = p.domain.Enumerate(1 << 20);
          if (!values.ok() || values->empty()) {
            return absl::InvalidArgumentError(absl::StrCat(label, ": parameter ", p.name, ": domain ",
                                                           p.domain.ToString(), " cannot be sampled"));
          }
          a[p.name] = (*values)[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(values->size()) - 1))];
        }
        std::vector<std::string> parts;
        for (const prune::Parameter& p : family->parameters()) parts.push_back(absl::StrCat(p.name, "=", a[p.name]));
        const std::string member = absl::StrJoin(parts, " ");
        PRISM_ASSIGN_OR_RETURN(prune::InstanceCheck check, pruner.CheckInstance(*family, a, incumbent));
        ++result_.members_checked;
        std::vector<std::string> hit;
        for (const std::string& r : core) {
          ++result_.per_rule[r].members;
          if (std::find(check.violated.begin(), check.violated.end(), r) != check.violated.end()) {
            hit.push_back(r);
            ++result_.per_rule[r].members_violating;
          }
        }
        if (hit.empty()) {
          Disagree(absl::StrCat(label, ": member ", member, " violates none of its deciding rules (",
                                absl::StrJoin(core, ", "), "); it violates: ",
                                check.violated.empty() ? "nothing" : absl::StrJoin(check.violated, ", ")));
        }
        // Emulate members that instantiate and are small: a proved family computes the
        // program at every member.
        const int64_t flops = check.metrics.count("flops") ? check.metrics.at("flops") : 0;
        if (static_cast<double>(flops) > options_.emulate_max_flops) continue;
        absl::StatusOr<BlockProgram> inst = Instantiate(*graph, a);
        if (!inst.ok()) continue;
        absl::StatusOr<std::vector<Tensor>> got = Emulate(*inst, inputs);
        if (!got.ok()) continue;
        if (!want) {
          PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> w, Evaluate(*program, inputs, EvalMode::kF64));
          want = std::move(w);
        }
        ++result_.members_emulated;
        if (!WithinDefaultTolerance((*got)[0], (*want)[0])) {
          Disagree(absl::StrCat(label, ": member ", member,
                                " differs from the reference interpreter in the emulator (relative error ",
                                RelativeError((*got)[0], (*want)[0]), ")"));
        }
      }
    }
    return absl::OkStatus();
  }

  const std::string dir_;
  const AuditOptions& options_;
  Json report_;
  std::string theory_dir_;
  std::string binary_;
  std::optional<Target> target_;
  std::map<std::string, bool> dominance_;
  std::vector<std::string> answers_;
  AuditResult result_;
};

}  // namespace

absl::StatusOr<AuditResult> Audit(const std::string& dir, const AuditOptions& options) {
  return Auditor(dir, options).Run();
}

}  // namespace prism::report
