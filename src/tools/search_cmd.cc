// `prism search FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S]
//  [--max-block-ops N] [--max-kernels N] [--threads N] [--no-prune] [--verify] [--top K]
//  [--dump-after STAGE] [--json]`: runs the two-level search (search/search.h) and prints the
// surviving families best-first by the cost model, with the funnel that led to them;
// --dump-after prints one stage's result first (report/dump.h). On a terminal, a progress
// line on stderr.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "commands.h"
#include "format.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/ir/interpreter.h"
#include "prism/ir/tensor.h"
#include "prism/block/block_instance.h"
#include "prism/block/emulator.h"
#include "prism/block/sgraph_json.h"
#include "prism/block/sgraph_printer.h"
#include "prism/report/dump.h"
#include "prism/search/search.h"
#include "prism/smt/target.h"
#include "program_source.h"

namespace prism::cli {
namespace {

constexpr int64_t kDefaultTop = 5;

// The parameters of `g` with their domains, in declaration order.
nlohmann::ordered_json ParamsJson(const SGraph& g) {
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const Param& p : g.params()) {
    params.push_back({{"name", p.name},
                      {"role", std::string(ParamRoleName(p.role))},
                      {"domain", g.ctx().var_domain(p.var).ToString()}});
  }
  return params;
}

// One progress line (overwritten in place): stage, time, rates and counts.
std::string ProgressLine(const search::SearchProgress& p) {
  std::string s = absl::StrCat("\r\033[K[", p.stage, "] ", Significant(p.elapsed_s, 3), " s  ");
  if (std::string_view(p.stage) == "generate") {
    const double rate = p.elapsed_s > 0 ? static_cast<double>(p.generated) / p.elapsed_s : 0;
    absl::StrAppend(&s, "states ", GroupDigits(static_cast<double>(p.generated)), " (",
                    SiQuantity(rate, "/s"), ")  structures ", p.structures, "  candidates ",
                    p.candidates);
  } else {
    absl::StrAppend(&s, p.done, "/", p.total, " families");
  }
  return s;
}

// Emulates the best family at its preferred instance on seeded inputs and compares it with
// the reference interpreter in f64 (not device mode: that rounds every intermediate, e.g.
// attention scores, to f16, and its own error can exceed the tolerance on large rows), with
// the output dtype's default tolerance. Internal error if they disagree.
absl::StatusOr<nlohmann::ordered_json> VerifyBest(const Program& program,
                                                  const search::FamilyResult& best, uint64_t seed) {
  const std::vector<Tensor> inputs = RandomInputs(program, seed);
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> want, Evaluate(program, inputs, EvalMode::kF64));
  PRISM_ASSIGN_OR_RETURN(BlockProgram inst, Instantiate(*best.graph, best.best));
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> got, Emulate(inst, inputs));
  const Tolerance tol = DefaultTolerance(want[0].dtype);
  const double ratio = ReferenceToleranceRatio(got[0], want[0], tol);
  const double rel = RelativeError(got[0], want[0]);
  if (!(ratio <= 1)) {
    return absl::InternalError(absl::StrCat(
        "the best family disagrees with the reference interpreter on seed ", seed,
        " (relative error ", rel, ", tolerance ratio ", ratio, "); please report this"));
  }
  nlohmann::ordered_json j;
  j["seed"] = seed;
  j["relative_error"] = rel;
  j["tolerance_ratio"] = ratio;
  return j;
}

}  // namespace

const CommandSpec& SearchSpec() {
  static const auto* spec = [] {
    auto* s = new CommandSpec{
        .path = "search",
        .usage = "FILE | --workload NAME [--batch B] [--target NAME] [--budget-s S] "
                 "[--max-block-ops N] [--max-kernels N] [--threads N] [--no-prune] [--cache DIR] "
                 "[--verify] [--seed S] [--top K] [--dump-after STAGE] [--json]",
        .summary = "Search sGraph families for a program; print the survivors best-first.",
        .description =
            "Generates block-graph structures from the program's op vocabulary (every op's\n"
            "abstract expression must be part of the saturated target), resolves their maps,\n"
            "proves each candidate equivalent to the program for all parameter values, and\n"
            "decides each proved family with Z3 against the running incumbent. Prints the\n"
            "funnel (generated, pruned_abstract, structures, mapped, proved, pruned_by_rule,\n"
            "survivors) and the surviving families, cheapest first by the ranking model (the\n"
            "cost lower bound with each kernel's launch at its measured typical cost), each with\n"
            "its parameters and the instance the cost model prefers.\n"
            "Candidates are one block graph with up to two grid axes, and (with --max-kernels 2)\n"
            "its split-reduction form: a grid axis over the forloop's dims and a second kernel\n"
            "that reduces the partial results (split-K, split-KV). docs/search.md.\n"
            "--verify emulates the best family at its preferred instance on the CPU and compares\n"
            "it with the reference interpreter. On a terminal, progress goes to stderr.",
        .positional = "FILE",
        .max_positional = 1,
        .options = ProgramSourceOptions()};
    s->options.push_back(StringOption("--target", "NAME", "GPU target (prism hw list)", "h200"));
    s->options.push_back(
        IntOption("--budget-s", "S", "wall-clock budget of the search in seconds", 1, 3600, "30"));
    s->options.push_back(IntOption("--max-block-ops", "N",
                                   "compute ops and accumulators per kernel (inputs and the store not counted)", 1, 16,
                                   "11"));
    s->options.push_back(IntOption("--max-kernels", "N",
                                   "1: one block graph; 2: also split-reduction forms", 1, 2, "2"));
    s->options.push_back(IntOption("--threads", "N", "proving and pruning workers (0: one per core)",
                                   0, 256, "0"));
    s->options.push_back(FlagOption("--no-prune", "keep every proved family (no SMT decisions)"));
    s->options.push_back(StringOption(
        "--cache", "DIR",
        "reuse the structures found for this program at other sizes (and record them)"));
    s->options.push_back(FlagOption(
        "--verify", "emulate the best family on seeded inputs and compare with the reference"));
    s->options.push_back(IntOption("--seed", "S", "inputs of --verify", 0, INT64_MAX, "1"));
    s->options.push_back(IntOption("--top", "K", "families to print in text output", 1, 1000,
                                   absl::StrCat(kDefaultTop)));
    s->options.push_back(ChoiceOption("--dump-after", "STAGE",
                                      "print the result of STAGE before the summary (docs/tutorial.md)",
                                      {"program", "generate", "prove", "prune"}));
    s->options.push_back(FlagOption("--json", "print one JSON object instead"));
    return s;
  }();
  return *spec;
}

// Searches a one-output `program` and prints the funnel and families, or with --json fills
// `json_sink` (prints it when null).
absl::Status SearchOne(const Program& program, const std::string& label, const Target& target,
                       const search::SearchConfig& config, const ParsedArgs& args, Io& io,
                       nlohmann::ordered_json* json_sink) {
  PRISM_ASSIGN_OR_RETURN(search::SearchResult r, search::Search(program, config, target));
  const search::Funnel& f = r.funnel;
  std::optional<nlohmann::ordered_json> verified;
  if (args.Flag("--verify")) {
    if (r.families.empty()) {
      return absl::FailedPreconditionError("--verify: the search found no family to verify");
    }
    PRISM_ASSIGN_OR_RETURN(verified, VerifyBest(program, r.families[0],
                                                static_cast<uint64_t>(args.Int("--seed").value_or(1))));
  }

  std::string dump;
  if (std::optional<std::string> stage = args.String("--dump-after")) {
    PRISM_ASSIGN_OR_RETURN(dump, report::DumpAfter(*stage, program, r, nullptr));
    dump += "\n";
  }
  if (args.Flag("--json")) {
    nlohmann::ordered_json j;
    j["program"] = label;
    j["target"] = target.name;
    j["elapsed_s"] = r.elapsed_s;
    j["cache_hit"] = r.cache_hit;
    j["stages_s"] = {{"generate", r.generate_s}, {"prove", r.prove_s}, {"prune", r.prune_s}};
    j["budget_exhausted"] = r.budget_exhausted;
    nlohmann::ordered_json by_rule = nlohmann::ordered_json::object();
    for (const auto& [rule, n] : f.pruned_by_rule) by_rule[rule] = n;
    j["funnel"] = {{"generated", f.generated},   {"pruned_abstract", f.pruned_abstract},
                   {"structures", f.structures}, {"map_validated", f.map_validated},
                   {"split_built", f.split_built}, {"mapped", f.mapped},
                   {"proved", f.proved},         {"unproved", f.unproved},
                   {"refuted", f.refuted},       {"pruned_by_rule", by_rule},
                   {"survivors", f.survivors}};
    if (verified) j["verified"] = *verified;
    j["families"] = nlohmann::ordered_json::array();
    for (const search::FamilyResult& fr : r.families) {
      j["families"].push_back({{"kernels", fr.kernels},
                               {"cost_us", fr.rank_us},
                               {"lower_bound_us", fr.cost_us},
                               {"params", ParamsJson(*fr.graph)},
                               {"assignment", AssignmentJson(*fr.graph, fr.best)},
                               {"proof_steps", fr.proof_steps},
                               {"sgraph", SGraphToJson(*fr.graph)}});
    }
    if (json_sink != nullptr) {
      *json_sink = std::move(j);
    } else {
      io.out << j.dump(2) << "\n";
    }
    return absl::OkStatus();
  }

  std::string text = absl::StrCat(dump, "program  ", label, "\n", "target   ", target.name,
                                  "\n", "elapsed  ", Significant(r.elapsed_s, 3), " s",
                                  r.budget_exhausted ? " (budget exhausted: results partial)" : "",
                                  r.cache_hit ? " (structures from the cache)" : "",
                                  " (generate ", Significant(r.generate_s, 3), " s, prove ",
                                  Significant(r.prove_s, 3), " s, prune ",
                                  Significant(r.prune_s, 3), " s)\n\n");
  std::vector<std::vector<std::string>> rows = {
      {"generated", GroupDigits(static_cast<double>(f.generated))},
      {"pruned (abstract expression)", GroupDigits(static_cast<double>(f.pruned_abstract))},
      {"structures", GroupDigits(static_cast<double>(f.structures))},
      {"maps validated", GroupDigits(static_cast<double>(f.map_validated))},
      {"split forms built", GroupDigits(static_cast<double>(f.split_built))},
      {"mapped", GroupDigits(static_cast<double>(f.mapped))},
      {"proved", GroupDigits(static_cast<double>(f.proved))},
      {"not proved", absl::StrCat(f.unproved, " (", f.refuted, " refuted)")}};
  for (const auto& [rule, n] : f.pruned_by_rule) {
    rows.push_back({absl::StrCat("pruned by ", rule), GroupDigits(static_cast<double>(n))});
  }
  rows.push_back({"survivors", GroupDigits(static_cast<double>(f.survivors))});
  absl::StrAppend(&text, "funnel:\n", AlignedTable(rows, 2), "\n");
  if (verified) {
    absl::StrAppend(&text, "verified: the best family on the CPU emulator matches the reference "
                           "(seed ", (*verified)["seed"].get<uint64_t>(), ", relative error ",
                    Significant((*verified)["relative_error"].get<double>(), 3), ")\n\n");
  }
  const size_t top = static_cast<size_t>(args.Int("--top").value_or(kDefaultTop));
  const size_t shown = std::min(top, r.families.size());
  absl::StrAppend(&text, "families (", r.families.size(), ", best first",
                  shown < r.families.size() ? absl::StrCat(", top ", shown, " shown") : "",
                  "):\n");
  if (r.families.empty()) {
    const std::string hint = search::NoFamilyReason(program, r);  // "; why: what to do"
    if (!hint.empty()) absl::StrAppend(&text, "  (none", hint, ")\n");
  }
  for (size_t i = 0; i < shown; ++i) {
    const search::FamilyResult& fr = r.families[i];
    absl::StrAppend(&text, "\n#", i + 1, "  ", fr.kernels, " kernel", fr.kernels == 1 ? "" : "s",
                    ", cost ", Significant(fr.rank_us, 4), " µs (lower bound ",
                    Significant(fr.cost_us, 4), " µs) at ",
                    fr.graph->params().empty() ? "(no parameters)" : AssignmentText(*fr.graph, fr.best),
                    ", proof ", fr.proof_steps, " steps\n",
                    SGraphToString(*fr.graph));
  }
  io.out << text;
  return absl::OkStatus();
}

absl::Status RunSearch(const ParsedArgs& args, Io& io) {
  // The target first: a typo there is reported before any work.
  PRISM_ASSIGN_OR_RETURN(Target target, LoadTarget(args.String("--target").value_or("h200")));
  PRISM_ASSIGN_OR_RETURN(LoadedProgram loaded, LoadProgram(args));
  if (args.Has("--dump-after") && args.Flag("--json")) {
    return absl::InvalidArgumentError("give at most one of --dump-after or --json");
  }
  search::SearchConfig config;
  config.budget = absl::Seconds(args.Int("--budget-s").value_or(30));
  config.max_block_ops = static_cast<int>(args.Int("--max-block-ops").value_or(11));
  config.prune = !args.Flag("--no-prune");
  config.max_kernels = static_cast<int>(args.Int("--max-kernels").value_or(2));
  config.threads = static_cast<int>(args.Int("--threads").value_or(0));
  std::optional<search::FamilyCache> cache;
  if (std::optional<std::string> dir = args.String("--cache")) {
    cache.emplace(*dir);
    config.cache = &*cache;
  }
  if (io.err_is_terminal) {
    config.progress = [&io](const search::SearchProgress& p) {
      if (std::string_view(p.stage) == "done") {
        io.err << "\r\033[K" << std::flush;
      } else {
        io.err << ProgressLine(p) << std::flush;
      }
    };
  }
  // Several outputs: each output's program alone, as prism optimize does.
  return ForEachOutput(loaded, args.Flag("--json"), "output   ", io,
                       [&](const Program& program, const std::string& label, const std::string&,
                           nlohmann::ordered_json* json_sink) {
                         return SearchOne(program, label, target, config, args, io, json_sink);
                       });
}

}  // namespace prism::cli
