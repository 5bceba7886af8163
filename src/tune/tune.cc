// The optimizer pipeline (tune.h).
#include "prism/tune/tune.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/block/sgraph_json.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "prism/prune/block_family.h"
#include "prism/prune/pruner.h"

namespace prism::tune {
namespace {

// A stable textual key of an assignment (parameter-declaration order).
std::string AssignmentKey(const SGraph& g, const Assignment& a) {
  std::vector<std::string> parts;
  for (const Param& p : g.params()) {
    auto it = a.find(p.name);
    if (it != a.end()) parts.push_back(absl::StrCat(p.name, "=", it->second));
  }
  return absl::StrJoin(parts, " ");
}

struct Instance {
  Assignment assignment;
  double cost_us = 0;
  std::string key;
  std::string moved;  // the parameters moved from the preferred instance ("" for it)
};

// The family's preferred instance followed by its feasible neighbours, cheapest cost lower
// bound first: every assignment that moves one or two parameters by one or two steps along
// their domains, kept when it instantiates and passes Pruner::CheckInstance.
absl::StatusOr<std::vector<Instance>> CandidateInstances(prune::Pruner& pruner,
                                                         const search::FamilyResult& fr) {
  const SGraph& g = *fr.graph;
  ExprContext fctx;
  PRISM_ASSIGN_OR_RETURN(prune::Family family, BuildFamily(g, fctx));
  std::vector<Instance> out;
  out.push_back({fr.best, fr.cost_us, AssignmentKey(g, fr.best), ""});
  // Per parameter: the values one and two steps away from the preferred one.
  std::vector<std::pair<std::string, std::vector<int64_t>>> moves;
  for (const Param& p : g.params()) {
    auto it = fr.best.find(p.name);
    if (it == fr.best.end()) continue;
    absl::StatusOr<std::vector<int64_t>> values = g.ctx().var_domain(p.var).Enumerate(4096);
    if (!values.ok()) continue;
    auto pos = std::find(values->begin(), values->end(), it->second);
    if (pos == values->end()) continue;
    const int64_t i = pos - values->begin(), n = static_cast<int64_t>(values->size());
    std::vector<int64_t> near;
    for (int64_t d : {-2, -1, 1, 2}) {
      if (i + d >= 0 && i + d < n) near.push_back((*values)[i + d]);
    }
    moves.push_back({p.name, near});
  }
  std::vector<Assignment> tries;
  for (size_t a = 0; a < moves.size(); ++a) {
    for (int64_t va : moves[a].second) {
      Assignment one = fr.best;
      one[moves[a].first] = va;
      tries.push_back(one);
      for (size_t b = a + 1; b < moves.size(); ++b) {
        for (int64_t vb : moves[b].second) {
          Assignment two = one;
          two[moves[b].first] = vb;
          tries.push_back(two);
        }
      }
    }
  }
  std::vector<Instance> neighbours;
  for (const Assignment& a : tries) {
    if (!Instantiate(g, a).ok()) continue;
    absl::StatusOr<prune::InstanceCheck> check = pruner.CheckInstance(family, a, std::nullopt);
    if (!check.ok() || !check->ok()) continue;
    neighbours.push_back({a, check->cost_lower_bound_us, AssignmentKey(g, a), ""});
  }
  std::stable_sort(neighbours.begin(), neighbours.end(), [](const Instance& a, const Instance& b) {
    return a.cost_us != b.cost_us ? a.cost_us < b.cost_us : a.key < b.key;
  });
  // Tag each with the set of parameters it moves (for the diversity pass in Optimize).
  for (Instance& n : neighbours) {
    for (const Param& p : g.params()) {
      auto x = n.assignment.find(p.name);
      auto y = fr.best.find(p.name);
      if (x != n.assignment.end() && y != fr.best.end() && x->second != y->second) {
        absl::StrAppend(&n.moved, p.name, ",");
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

// The first line of a (long) message.
std::string FirstLine(absl::string_view s) {
  const size_t nl = s.find('\n');
  return std::string(nl == absl::string_view::npos ? s : s.substr(0, nl));
}

}  // namespace

const char* MethodName(Method method) {
  return method == Method::kMeasured ? "measured" : "cost model";
}

absl::StatusOr<TuneResult> Optimize(const Program& program, const Target& target,
                                    const TuneOptions& options) {
  if (options.top_families < 1 || options.instances_per_family < 1) {
    return absl::InvalidArgumentError("top_families and instances_per_family must be at least 1");
  }
  TuneResult r;
  // The device first (a child process: the parent never initializes CUDA).
  if (options.use_gpu) {
    absl::StatusOr<runtime::DeviceInfo> dev = runtime::QueryDevice(options.gpu);
    if (dev.ok()) {
      r.device = *dev;
    } else if (options.require_gpu) {
      return absl::UnavailableError(
          absl::StrCat("--gpu ", options.gpu, ": ", dev.status().message()));
    } else {
      r.no_gpu_reason = std::string(dev.status().message());
    }
  } else {
    r.no_gpu_reason = "--no-gpu";
  }
  PRISM_ASSIGN_OR_RETURN(r.search, search::Search(program, options.search, target));
  if (r.search.families.empty()) {
    return absl::FailedPreconditionError("the search found no family for this program");
  }
  PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target));
  std::vector<codegen::GeneratedCode> codes;  // parallel to r.candidates
  int families_used = 0;
  for (size_t f = 0; f < r.search.families.size() && families_used < options.top_families; ++f) {
    const search::FamilyResult& fr = r.search.families[f];
    PRISM_ASSIGN_OR_RETURN(std::vector<Instance> instances, CandidateInstances(pruner, fr));
    int generated = 0;
    std::string first_error;
    // Two passes: the preferred instance and the cheapest GENERATED neighbour of each
    // distinct set of moved parameters (lower-bound ties, common when it is
    // launch-dominated, would otherwise fill every slot with one parameter's variations);
    // then the remaining neighbours cheapest first.
    // At most 8 × instances_per_family generation attempts per family (a structure that the
    // generator cannot handle fails for every instance).
    std::vector<bool> tried(instances.size(), false);
    std::vector<std::string> moved_done;
    int attempts = 0;
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t k = 0; k < instances.size(); ++k) {
        if (generated >= options.instances_per_family) break;
        if (attempts >= 8 * options.instances_per_family) break;
        const Instance& inst = instances[k];
        if (tried[k]) continue;
        if (pass == 0 && k > 0 &&
            std::find(moved_done.begin(), moved_done.end(), inst.moved) != moved_done.end()) {
          continue;
        }
        tried[k] = true;
        ++attempts;
        Candidate c;
        c.family = static_cast<int>(f);
        c.assignment = inst.assignment;
        c.cost_us = inst.cost_us;
        absl::StatusOr<BlockProgram> bp = Instantiate(*fr.graph, inst.assignment);
        absl::StatusOr<codegen::GeneratedCode> code =
            bp.ok() ? codegen::GenerateCuda(*bp)
                    : absl::StatusOr<codegen::GeneratedCode>(bp.status());
        if (!code.ok()) {
          if (first_error.empty()) first_error = std::string(code.status().message());
          continue;  // only generated candidates are kept
        }
        ++generated;
        moved_done.push_back(inst.moved);
        r.candidates.push_back(std::move(c));
        codes.push_back(std::move(*code));
      }
    }
    if (generated > 0) {
      ++families_used;
    } else {
      r.codegen_skips.push_back({static_cast<int>(f), fr.cost_us, first_error});
    }
  }
  if (r.candidates.empty()) {
    std::vector<std::string> why;
    for (const CodegenSkip& s : r.codegen_skips) {
      why.push_back(absl::StrCat("#", s.family + 1, " (cost ", s.cost_us, " µs): ", s.message));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("no family can be generated as CUDA yet: ", r.codegen_skips.size(),
                     r.codegen_skips.size() == 1 ? " family" : " families", " tried; ",
                     absl::StrJoin(why, "; ")));
  }
  if (codegen::NvrtcAvailable()) {
    absl::StatusOr<std::string> v = codegen::NvrtcVersion();
    if (v.ok()) r.nvrtc_version = *v;
  }
  runtime::CompileCache cache(options.compile_cache_dir);
  // Candidate order by the cost model (stable: build order breaks ties).
  std::vector<size_t> by_cost(r.candidates.size());
  for (size_t i = 0; i < by_cost.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
    return r.candidates[a].cost_us < r.candidates[b].cost_us;
  });

  if (!r.device) {
    r.method = Method::kCostModel;
    if (r.nvrtc_version.empty()) {
      r.selected = static_cast<int>(by_cost[0]);
    } else {
      r.sm = static_cast<int>(target.compute_capability);
      std::string first_error;
      for (size_t i : by_cost) {
        absl::StatusOr<runtime::CachedCompile> cc =
            runtime::CompileCached(cache, codes[i].source, r.sm);
        if (cc.ok()) {
          r.candidates[i].compiled = true;
          r.candidates[i].cache_hit = cc->cache_hit;
          r.selected = static_cast<int>(i);
          break;
        }
        r.candidates[i].compile_error = FirstLine(cc.status().message());
        if (first_error.empty()) first_error = r.candidates[i].compile_error;
      }
      if (r.selected < 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("no candidate compiled with NVRTC: ", first_error));
      }
    }
    r.code = std::move(codes[r.selected]);
    return r;
  }

  // With a GPU: compile everything (in parallel), then measure each in a child process.
  r.method = Method::kMeasured;
  r.sm = r.device->sm();
  // In a child: NVRTC in this process would break cuInit in the measuring children.
  std::vector<std::string> sources;
  for (const codegen::GeneratedCode& c : codes) sources.push_back(c.source);
  PRISM_ASSIGN_OR_RETURN(std::vector<absl::StatusOr<runtime::CachedCompile>> compiled,
                         runtime::CompileInChild(cache, sources, r.sm));
  std::vector<std::string> cubins(r.candidates.size());
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    r.candidates[i].compiled = compiled[i].ok();
    if (compiled[i].ok()) {
      cubins[i] = std::move(compiled[i]->cubin);
      r.candidates[i].cache_hit = compiled[i]->cache_hit;
    } else {
      r.candidates[i].compile_error = FirstLine(compiled[i].status().message());
    }
  }
  const std::vector<Tensor> inputs = RandomInputs(program, options.seed);
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> reference,
                         Evaluate(program, inputs, EvalMode::kF64));
  runtime::MeasureOptions mopt = options.measure;
  if (r.device->l2_bytes > 0) mopt.l2_bytes = r.device->l2_bytes;
  std::vector<std::string> failures;
  for (size_t i : by_cost) {
    Candidate& c = r.candidates[i];
    if (!c.compiled) {
      failures.push_back(absl::StrCat("compile: ", c.compile_error));
      continue;
    }
    absl::StatusOr<BlockProgram> bp = Instantiate(*r.search.families[c.family].graph, c.assignment);
    if (!bp.ok()) return bp.status();
    absl::StatusOr<runtime::Measurement> m = runtime::MeasureInChild(
        r.device->ordinal, cubins[i], codes[i].launches, *bp, inputs, reference, mopt);
    if (!m.ok()) {
      c.measure_error = std::string(m.status().message());
      failures.push_back(c.measure_error);
      continue;
    }
    c.measurement = *m;
    if (!m->matches) {
      failures.push_back(absl::StrCat("output differs from the reference (relative error ",
                                      m->relative_error, ")"));
      continue;
    }
    if (r.selected < 0 || m->median_us < r.candidates[r.selected].measurement->median_us) {
      r.selected = static_cast<int>(i);
    }
  }
  if (r.selected < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no candidate matched the reference on the GPU: ", absl::StrJoin(failures, "; ")));
  }
  r.code = std::move(codes[r.selected]);
  return r;
}

std::string FamilyJson(const TuneResult& r, const std::string& program_label) {
  const Candidate& c = r.chosen();
  const search::FamilyResult& fr = r.chosen_family();
  nlohmann::ordered_json j;
  j["program"] = program_label;
  j["family"] = c.family + 1;
  j["kernels"] = fr.kernels;
  j["cost_us"] = c.cost_us;
  nlohmann::ordered_json a = nlohmann::ordered_json::object();
  for (const Param& p : fr.graph->params()) {
    auto it = c.assignment.find(p.name);
    if (it != c.assignment.end()) a[p.name] = it->second;
  }
  j["assignment"] = a;
  j["selection"] = MethodName(r.method);
  if (c.measurement) j["measured_us"] = c.measurement->median_us;
  j["sgraph"] = nlohmann::ordered_json::parse(SGraphToJson(*fr.graph).dump());
  return j.dump(2) + "\n";
}

absl::Status WriteOutputs(const TuneResult& r, const std::string& program_label,
                          const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the output directory '", dir, "': ", ec ? ec.message() : "not a directory"));
  }
  const std::pair<const char*, std::string> files[] = {
      {"kernel.cu", r.code.source},
      {"launch.json", r.code.launch_json},
      {"host.h", r.code.host_header},
      {"family.json", FamilyJson(r, program_label)}};
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) ||
        !out.flush()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace prism::tune
