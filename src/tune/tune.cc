// The optimizer pipeline (tune.h).
#include "prism/tune/tune.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"
#include "prism/block/block_instance.h"
#include "prism/block/sgraph_json.h"
#include "prism/block/sgraph_printer.h"
#include "prism/codegen/nvrtc.h"
#include "prism/ir/interpreter.h"
#include "prism/prune/block_family.h"
#include "prism/prune/pruner.h"
#include "prism/tune/estimate.h"

// kGeneratorSourceHash: a hash of the generator and tuner sources (src/tune/CMakeLists.txt).
#include "generator_source_hash.inc"

namespace prism::tune {
namespace {

struct Instance {
  Assignment assignment;
  double cost_us = 0;
  std::string key;
  std::string moved;    // the parameters moved from the preferred instance ("" for it)
  std::string variant;  // Candidate::codegen_variant
  InstanceWork work;    // the family's flops and sfu_ops at the assignment
  double estimate_us = 0;  // EstimateInstance of the instance's code (set by take)
  std::string estimate_terms{};  // its Estimate::ToString()
};

// The flops and sfu_ops of an instance check's metrics (0 where absent).
InstanceWork WorkOf(const std::map<std::string, int64_t>& metrics) {
  InstanceWork w;
  if (auto it = metrics.find("flops"); it != metrics.end()) w.flops = it->second;
  if (auto it = metrics.find("sfu_ops"); it != metrics.end()) w.sfu_ops = it->second;
  return w;
}

// The candidate instances of a family (tune.h, step 2): the preferred instance first, then a
// deterministic, stratified sample of the whole proved feasible domain. Every assignment of the
// cross product of the parameters' domains (at most kMaxAssignments, spread over it) that
// instantiates, generates (codegen::GenerateCuda) and passes Pruner::CheckInstance is a
// candidate; candidates are grouped into strata by their grid parameters, and within a stratum
// into sub-strata by (threads, stages), each sub-stratum ordered by the cost lower bound (ties
// by forloop ascending, then a stable hash of the assignment). The stratum's j-th pick takes
// the (j mod 3)-th member of its sub-stratum: successive picks cycle over the three smallest
// feasible forloop counts (the largest tiles that fit, which the lower bound does not
// distinguish). Only the ⌈count/12⌉ (at least 2) strata with the cheapest members are used (the lower
// bound does rank grid sizes: tiny grids leave most SMs idle). The result takes, round-robin
// over those strata (cheapest first), the next sub-stratum's cheapest untaken member, until
// `count` are taken; a stratum's sub-strata are visited along diagonals of the (threads index,
// stages index) table so that its first picks differ in both. For split (multi-kernel)
// families the strata whose first kernel launches at least one block per SM go before the
// others (the lower bound has no wave term there and prefers tiny grids). Generation attempts are
// capped at kMaxGenerate per family (a structure the generator cannot handle fails for all).
// Each taken instance is followed by its codegen variants (CodegenVariants(), when they generate
// distinct code), which count towards `count`.
constexpr int64_t kMaxAssignments = 20000;
// One-kernel instances get the programmatic-dependent-launch variants only up to this cost
// bound: on the H200 (2026-12-01) PDL took ntrans (1.8 µs) to 1.34 µs and left
// rmsnorm_linear (19 µs) unchanged, and each variant takes an instance's place in the budget.
constexpr double kPdlOneKernelMaxCostUs = 2.0;
// From sm_90 on, multi-kernel instances are measured with programmatic dependent launch only:
// on the H200 the PDL twin of a multi-kernel instance was as fast or faster on every row
// measured (seven rows on 2026-12-01 evening, the six split GEMV rows that night), so the
// instance budget goes to more assignments instead of measuring both.
constexpr bool kPdlOnlyMultiKernel = true;
// From sm_90 on, an attention instance that the warpgroup-MMA template fits is measured with
// attention_wgmma only (with PDL when it is multi-kernel): on the H200 the best wgmma candidate
// beat the best other one on all four attention rows by 7-12 % (2026-12-02), and the mma.sync
// variants took two thirds of the instance budget (gqa b=8: 30 of 167 candidates were wgmma),
// so that the sample missed faster wgmma shapes (gqa b=8 x16 y4 z4 F8 T128: 17.7 µs against
// the selected 19.1; docs/performance.md, "Nine experiments and a sampler fix").
constexpr bool kWgmmaOnlyAttention = true;
// Such a family keeps about one sampled instance in twenty (gqa b=8: 26 of 543), so its
// sampling visits up to kMaxAssignmentsWgmma points of the cross product with as many
// generation attempts (gqa b=8: 298 instances; 17.8 s instead of 10.0 for the whole
// `prism optimize --no-gpu` on the 2-core machine).
constexpr int64_t kMaxAssignmentsWgmma = 80000;
constexpr int kMaxGenerate = 8000;
// TuneOptions::tune_budget_s: the time kept for the confirmation round at the end of the
// measuring (18 measurements took 0.6–0.8 s on the H200, docs/performance.md 2026-12-04), and
// the least measuring time a slow compilation leaves (MeasuringDeadline).
constexpr absl::Duration kConfirmReserve = absl::Seconds(3);
constexpr absl::Duration kMinMeasure = absl::Seconds(5);
// Every instance is generated with gemm_defer_chained (it changes only lora's chained
// (X·A)·B split form): ·B once after the loop instead of at every k16 chunk. On the H200
// (2026-12-03, 7 runs each) lora b=1's selection 13.46 → 13.27 µs, b=8's 14.89 → 14.68
// (docs/performance.md).
constexpr bool kDeferChained = true;
// cluster_combine variants are measured only when their clusters have at most this many blocks:
// on the H200 (2026-12-03) split-K GEMM instances with s = 2 ran 0.1-0.5 µs faster folded into
// clusters of two (gated_mlp b=8 g64 s2 F16 T256: 21.47 and 21.66 against 21.95 and 21.90 µs),
// while clusters of four and eight were slower than the two kernels on every row (32 clusters
// of four do not fit at once at one block per SM: a second wave). In the tuner the best
// cluster candidate came within 0.2-2 % of the selection on gated_mlp (docs/performance.md).
constexpr int64_t kMaxTunedClusterBlocks = 2;

struct Sampled {
  std::vector<Instance> instances;
  std::vector<codegen::GeneratedCode> codes;  // parallel
  std::string first_error;                    // the preferred instance's codegen message
};

// What every instance of one Optimize call is generated with, whatever its variant: the
// target's residency (CodegenOptions::balance_residency) and the program's constant inputs
// (TuneOptions::constant_inputs).
struct Fixed {
  codegen::CodegenOptions::Residency residency;
  std::vector<std::string> constant_inputs;
};

// An instantiated program generated with `options` and `fixed` (every instance the tuner
// generates goes through here).
absl::StatusOr<codegen::GeneratedCode> GenerateProgram(
    const BlockProgram& bp, codegen::CodegenOptions options,
    const Fixed& fixed) {
  options.balance_residency = fixed.residency;
  options.constant_inputs = fixed.constant_inputs;
  options.gemm_defer_chained = kDeferChained;
  return codegen::GenerateCuda(bp, options);
}

// A family's instances, instantiated and generated as GenerateProgram does. The last
// assignment's instantiated program is kept: an instance is generated with several codegen
// options in a row (its variants, the wgmma test), and instantiating it (binding and
// validating the graph) cost more than generating the code (perf, 2026-12-04). It only reads
// the graph (Instantiate binds a clone), so one per thread may share a graph.
class InstanceGenerator {
 public:
  InstanceGenerator(const SGraph& g, const Fixed& fixed)
      : g_(g), fixed_(fixed) {}
  const absl::StatusOr<BlockProgram>& Program(const Assignment& a) {
    if (!last_ || last_->first != a) last_.emplace(a, Instantiate(g_, a));
    return last_->second;
  }
  absl::StatusOr<codegen::GeneratedCode> Generate(
      const Assignment& a, const codegen::CodegenOptions& options = codegen::CodegenOptions()) {
    const absl::StatusOr<BlockProgram>& bp = Program(a);
    if (!bp.ok()) return bp.status();
    return GenerateProgram(*bp, options, fixed_);
  }
  // The instance's code with attention_wgmma (and PDL when `pdl`), when the option fits it:
  // it changes only attention kernels, so a source that differs from `without` (the same
  // options but attention_wgmma) is an attention instance wgmma fits.
  std::optional<codegen::GeneratedCode> WgmmaCode(const Assignment& a, bool pdl,
                                                  const std::string& without) {
    codegen::CodegenOptions wg;
    wg.attention_wgmma = true;
    wg.programmatic_dependent_launch = pdl;
    absl::StatusOr<codegen::GeneratedCode> v = Generate(a, wg);
    if (!v.ok() || v->source == without) return std::nullopt;
    return std::move(*v);
  }

 private:
  const SGraph& g_;
  const Fixed fixed_;
  std::optional<std::pair<Assignment, absl::StatusOr<BlockProgram>>> last_;
};

// Runs fn(0), ..., fn(n - 1), each on its own thread (fn(0) alone on the caller's when n is 1).
template <typename Fn>
void RunOnThreads(size_t n, const Fn& fn) {
  if (n == 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(n);
  for (size_t k = 0; k < n; ++k) pool.emplace_back(fn, k);
  for (std::thread& t : pool) t.join();
}

// Points of the cross product examined per round of SampleInstances' parallel walk: enough to
// keep the workers busy, few past a stopping point.
constexpr int64_t kPointsPerRound = 256;
// The default number of sampling workers per family on a machine with more cores (the device
// host has 16; a family's walk took 1.1–1.4 s there with 16, docs/performance.md 2026-12-06).
constexpr int kMaxSamplingWorkers = 16;

// `fixed.residency.sms`: the target's SMs (the strata's one-wave test). `preferred_work`: the work
// metrics of the family's preferred instance (the walk's points take theirs from their checks). `threads` (≥ 1) workers
// examine the points of the cross product, each with its own prune::Family and all with
// `checker` (made for the family's graph: the checks are of concrete instances, which need no
// solver); the result does not depend on `threads`.
absl::StatusOr<Sampled> SampleInstances(const prune::InstanceChecker& checker,
                                        const search::FamilyResult& fr,
                                        const InstanceWork& preferred_work, int count, int sm,
                                        const Target& target,
                                        const Fixed& fixed,
                                        int threads) {
  const SGraph& g = *fr.graph;
  Sampled out;
  InstanceGenerator gen(g, fixed);
  // Appends an instance and its code, with the code's estimate (the program is the one `gen`
  // instantiated for the instance's assignment last, which generated `code`).
  auto push = [&](Instance inst, codegen::GeneratedCode code) {
    const absl::StatusOr<BlockProgram>& bp = gen.Program(inst.assignment);
    PRISM_CHECK(bp.ok(), "an instance whose code generated did not instantiate: ",
                bp.status().message());
    const Estimate e = EstimateInstance(target, *bp, code, inst.work);
    inst.estimate_us = e.us;
    inst.estimate_terms = e.ToString();
    out.instances.push_back(std::move(inst));
    out.codes.push_back(std::move(code));
  };
  const std::vector<std::pair<std::string, codegen::CodegenOptions>> variants = CodegenVariants(sm);
  // Asked of the preferred instance, the same for all of a family's instances:
  // kWgmmaOnlyAttention applies to attention families only, and library_matmul_cluster_split
  // changes only matmul library kernels (other families skip generating those variants).
  const absl::StatusOr<BlockProgram>& best_program = gen.Program(fr.best);
  const bool wgmma_family = kWgmmaOnlyAttention && sm >= 90 && best_program.ok() &&
                            codegen::HasAttentionKernel(*best_program);
  const bool library_matmul_family =
      best_program.ok() && codegen::HasLibraryMatmul(*best_program);
  // Appends an instance, then its distinct variants, while fewer than `count` are taken.
  auto take = [&](const Instance& inst, codegen::GeneratedCode code) {
    const bool multi = code.launches.size() > 1;
    // kPdlOnlyMultiKernel: the PDL code in place of the default options, then only the
    // variants that have PDL.
    const bool pdl_only = kPdlOnlyMultiKernel && multi && sm >= 90;
    Instance base = inst;
    if (pdl_only) {
      codegen::CodegenOptions pdl;
      pdl.programmatic_dependent_launch = true;
      absl::StatusOr<codegen::GeneratedCode> v = gen.Generate(inst.assignment, pdl);
      if (v.ok()) {
        code = std::move(*v);
        base.variant = "programmatic_dependent_launch";
      }
    }
    // kWgmmaOnlyAttention: the wgmma code (the attention_wgmma option changes only attention
    // kernels, so a source that differs is an attention instance wgmma fits) in place of the
    // default, and no other variant.
    if (wgmma_family) {
      std::optional<codegen::GeneratedCode> v = gen.WgmmaCode(inst.assignment, pdl_only, code.source);
      if (v) {
        base.variant = pdl_only ? "attention_wgmma,programmatic_dependent_launch"
                                : "attention_wgmma";
        push(std::move(base), std::move(*v));
        return;
      }
    }
    std::set<std::string> sources = {code.source};
    push(std::move(base), std::move(code));
    // Programmatic dependent launch: for multi-kernel instances, and for one-kernel ones whose
    // cost bound is within kPdlOneKernelMaxCostUs (where overlapping the launch with the
    // previous call matters; docs/optimize.md).
    const bool no_pdl = !multi && inst.cost_us > kPdlOneKernelMaxCostUs;
    for (const auto& [name, options] : variants) {
      if (static_cast<int>(out.instances.size()) >= count) break;
      if (no_pdl && options.programmatic_dependent_launch) continue;
      if (pdl_only && !options.programmatic_dependent_launch) continue;
      if (options.library_matmul_cluster_split && !library_matmul_family) continue;
      absl::StatusOr<codegen::GeneratedCode> v = gen.Generate(inst.assignment, options);
      if (!v.ok()) continue;
      if (options.cluster_combine) {
        const std::array<int64_t, 3>& c = v->launches.front().cluster;
        if (c[0] * c[1] * c[2] > kMaxTunedClusterBlocks) continue;
      }
      if (!sources.insert(v->source).second) continue;
      Instance vi = inst;
      vi.variant = name;
      push(std::move(vi), std::move(*v));
    }
  };
  const std::string best_key = AssignmentText(g, fr.best);
  {
    absl::StatusOr<codegen::GeneratedCode> code = gen.Generate(fr.best);
    if (code.ok()) {
      take({fr.best, fr.cost_us, best_key, "", "", preferred_work}, std::move(*code));
    } else {
      out.first_error = std::string(code.status().message());
    }
  }
  // The cross product of the domains.
  std::vector<std::pair<const Param*, std::vector<int64_t>>> axes;
  for (const Param& p : g.params()) {
    if (!fr.best.count(p.name)) continue;
    absl::StatusOr<std::vector<int64_t>> values = g.ctx().var_domain(p.var).Enumerate(4096);
    if (!values.ok() || values->empty()) {
      axes.push_back({&p, {fr.best.at(p.name)}});
    } else {
      axes.push_back({&p, *values});
    }
  }
  // A feasible point whose code generated. The code itself is not kept: the walk examines up
  // to kMaxGenerate points per family, a few tens of KB of source each, of which take()
  // needs `count`; it generates a taken member again (deterministic, and cached by `gen` for
  // its variants).
  struct Member {
    Instance inst;
    int64_t forloop = 0;
    uint64_t tie = 0;
    bool taken = false;
    int64_t blocks = 0;  // thread blocks of the first kernel's launch
    bool wgmma = false;  // an attention instance the attention_wgmma option fits (sm_90)
  };
  bool any_wgmma = false;
  // grid key → (threads, stages) → members
  std::map<std::string, std::map<std::pair<int64_t, int64_t>, std::vector<Member>>> strata;
  // Up to kMaxAssignments points of the cross product (kMaxAssignmentsWgmma once an instance
  // that wgmma fits is found): all of it in odometer order when it is at most kMaxGenerate (every
  // point is generated), else the first of the full-period permutation
  // n → (n·P) mod size (P ≥ 1000003 coprime to the size), a deterministic spread over it.
  // Regression (2026-12-03): with 6 stages, gqa b=8's family without a query-tile axis had
  // 14,976 points; the first 8,000 in odometer order stopped short of the grid sizes that
  // wgmma fits, so its sample was all mma.sync.
  int64_t size = 1;
  for (const auto& axis : axes) size *= static_cast<int64_t>(axis.second.size());
  int64_t step = 1;
  if (size > kMaxGenerate) {
    step = 1000003;
    while (std::gcd(step, size) != 1) step += 2;
  }
  // A point's examination (independent of every other point's): its key, the instance check,
  // and for a feasible instance the code and its stratum.
  struct Point {
    std::string key;
    bool feasible = false;          // passed Pruner::CheckInstance
    absl::Status generated;         // the code generation's status (feasible points)
    std::string grid;
    int64_t threads = 0, stages = 0;
    std::optional<Member> member;   // feasible and generated
  };
  auto point_assignment = [&](int64_t n) {
    Assignment a;
    int64_t rest = static_cast<int64_t>((static_cast<__int128>(n) * step) % size);
    for (size_t d = axes.size(); d-- > 0;) {  // mixed radix, last parameter fastest
      const int64_t radix = static_cast<int64_t>(axes[d].second.size());
      a[axes[d].first->name] = axes[d].second[rest % radix];
      rest /= radix;
    }
    return a;
  };
  // A worker's own family and instantiation cache, made by its thread on first use.
  struct Worker {
    absl::Status status;  // of making them
    std::unique_ptr<ExprContext> ctx;
    std::optional<prune::Family> family;
    std::optional<InstanceGenerator> gen;
  };
  auto make_worker = [&](Worker& w) -> absl::Status {
    w.ctx = std::make_unique<ExprContext>();
    PRISM_ASSIGN_OR_RETURN(prune::Family f, BuildFamily(g, *w.ctx));
    w.family = std::move(f);
    w.gen.emplace(g, fixed);
    return absl::OkStatus();
  };
  auto examine = [&](Worker& w, int64_t n) {
    Point pt;
    const Assignment a = point_assignment(n);
    pt.key = AssignmentText(g, a);
    if (pt.key == best_key) return pt;
    // The instance check first: it is cheaper than instantiating and generating, and a point
    // must pass both.
    absl::StatusOr<prune::InstanceCheck> check = checker.Check(*w.family, a, std::nullopt);
    if (!check.ok() || !check->ok()) return pt;
    pt.feasible = true;
    absl::StatusOr<codegen::GeneratedCode> code = w.gen->Generate(a);
    if (!code.ok()) {
      pt.generated = code.status();
      return pt;
    }
    int64_t forloop = 0;
    for (const auto& [param, values] : axes) {
      if (param->role == ParamRole::kGrid) absl::StrAppend(&pt.grid, param->name, "=", a.at(param->name), " ");
      if (param->role == ParamRole::kThreads) pt.threads = a.at(param->name);
      if (param->role == ParamRole::kStages) pt.stages = a.at(param->name);
      if (param->role == ParamRole::kForloop) forloop = forloop * 4099 + a.at(param->name);
    }
    int64_t blocks = 1;
    for (int64_t d : code->launches.front().grid) blocks *= d;
    const bool wgmma = wgmma_family && w.gen->WgmmaCode(a, false, code->source).has_value();
    pt.member = Member{{a, check->cost_lower_bound_us, pt.key, "", "", WorkOf(check->metrics)}, forloop,
                       StableHasher().Add(absl::string_view(pt.key)).Finish(), false, blocks,
                       wgmma};
    return pt;
  };
  // At most one worker per 64 points of the walk (a family and its plan take a moment to make).
  std::vector<Worker> workers(static_cast<size_t>(
      std::clamp<int64_t>((std::min(size, kMaxAssignmentsWgmma) + 63) / 64, 1, std::max(1, threads))));
  // Rounds of kPointsPerRound points, examined by the workers in parallel (point i of a round
  // by worker i mod threads), then taken in point order under the serial walk's limits, which
  // the points examined so far decide (any_wgmma raises them).
  int generate_attempts = 0;
  bool stop = axes.empty();
  for (int64_t first = 0; first < size && !stop; first += kPointsPerRound) {
    const int64_t round = std::min(kPointsPerRound, size - first);
    std::vector<Point> points(round);
    auto work = [&](size_t k) {
      Worker& w = workers[k];
      if (!w.gen && w.status.ok()) w.status = make_worker(w);
      if (!w.status.ok()) return;
      for (int64_t i = static_cast<int64_t>(k); i < round;
           i += static_cast<int64_t>(workers.size())) {
        points[i] = examine(w, first + i);
      }
    };
    RunOnThreads(workers.size(), work);
    for (const Worker& w : workers) PRISM_RETURN_IF_ERROR(w.status);
    for (int64_t i = 0; i < round; ++i) {
      const int64_t n = first + i;
      if (n >= (any_wgmma ? kMaxAssignmentsWgmma : kMaxAssignments)) {
        stop = true;
        break;
      }
      Point& pt = points[i];
      if (pt.key == best_key) continue;
      if (generate_attempts >= (any_wgmma ? kMaxAssignmentsWgmma : kMaxGenerate)) {
        stop = true;
        break;
      }
      ++generate_attempts;
      if (!pt.feasible) continue;
      if (!pt.generated.ok()) {
        // (out.first_error matters only when the preferred instance failed, and then it is
        // already set.)
        if (out.first_error.empty()) out.first_error = std::string(pt.generated.message());
        continue;
      }
      any_wgmma = any_wgmma || pt.member->wgmma;
      strata[pt.grid][{pt.threads, pt.stages}].push_back(std::move(*pt.member));
    }
  }
  // kWgmmaOnlyAttention: when the warpgroup-MMA template fits some instances of an attention
  // family, only those are sampled (take() measures them with it).
  if (any_wgmma) {
    for (auto sit = strata.begin(); sit != strata.end();) {
      for (auto it = sit->second.begin(); it != sit->second.end();) {
        std::vector<Member>& members = it->second;
        members.erase(std::remove_if(members.begin(), members.end(),
                                     [](const Member& m) { return !m.wgmma; }),
                      members.end());
        it = members.empty() ? sit->second.erase(it) : std::next(it);
      }
      sit = sit->second.empty() ? strata.erase(sit) : std::next(sit);
    }
  }
  // Order each sub-stratum; the strata by their cheapest member.
  struct Stratum {
    double best = 0;
    std::string key;
    std::vector<std::vector<Member>*> subs;
    size_t next_sub = 0;
    std::vector<size_t> taken;  // per sub-stratum
    size_t picks = 0;
    bool under_one_wave = false;  // split families: the first kernel fills < 7/8 of one wave
  };
  std::vector<Stratum> order;
  for (auto& [gkey, subs] : strata) {
    Stratum st;
    st.key = gkey;
    st.best = std::numeric_limits<double>::infinity();
    st.under_one_wave =
        fr.kernels > 1 && fixed.residency.sms > 0 &&
        subs.begin()->second.front().blocks * 8 < fixed.residency.sms * 7;
    // Diagonal order of the (threads, stages) table: (t0,s0), (t1,s1), ..., then (t0,s1), ...
    std::vector<int64_t> ts, ss;
    for (const auto& [k, members] : subs) {
      ts.push_back(k.first);
      ss.push_back(k.second);
    }
    std::sort(ts.begin(), ts.end());
    ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
    std::sort(ss.begin(), ss.end());
    ss.erase(std::unique(ss.begin(), ss.end()), ss.end());
    std::vector<std::pair<std::pair<size_t, size_t>, std::vector<Member>*>> diag;
    for (auto& [k, members] : subs) {
      std::sort(members.begin(), members.end(), [](const Member& x, const Member& y) {
        if (x.inst.cost_us != y.inst.cost_us) return x.inst.cost_us < y.inst.cost_us;
        if (x.forloop != y.forloop) return x.forloop < y.forloop;
        return x.tie != y.tie ? x.tie < y.tie : x.inst.key < y.inst.key;
      });
      st.best = std::min(st.best, members.front().inst.cost_us);
      const size_t ti = std::lower_bound(ts.begin(), ts.end(), k.first) - ts.begin();
      const size_t si = std::lower_bound(ss.begin(), ss.end(), k.second) - ss.begin();
      diag.push_back({{(si + ss.size() - ti % ss.size()) % ss.size(), ti}, &members});
    }
    std::sort(diag.begin(), diag.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& [pos, members] : diag) {
      st.subs.push_back(members);
      st.taken.push_back(0);
    }
    order.push_back(std::move(st));
  }
  // A split (multi-kernel) family exists to spread the reduction over the machine, but its
  // lower bound has no wave term and favours few partials (tiny grids): its strata whose first
  // kernel fills at least 7/8 of one wave (blocks ≥ 7/8 · SMs) go first. Not a whole wave: gqa
  // b=1's fastest instance on the H200 has 128 blocks for 132 SMs (docs/performance.md,
  // 2026-12-01 evening).
  std::stable_sort(order.begin(), order.end(), [](const Stratum& x, const Stratum& y) {
    if (x.under_one_wave != y.under_one_wave) return y.under_one_wave;
    return x.best != y.best ? x.best < y.best : x.key < y.key;
  });
  // The ⌈count / 12⌉ (≥ 2) first strata, and more while they hold fewer members than the
  // budget (kWgmmaOnlyAttention leaves few members per stratum).
  size_t used = std::max<size_t>(2, (static_cast<size_t>(count) + 11) / 12);
  {
    size_t members = 0;
    for (size_t i = 0; i < std::min(used, order.size()); ++i) {
      for (const std::vector<Member>* sub : order[i].subs) members += sub->size();
    }
    while (used < order.size() && members < static_cast<size_t>(count)) {
      for (const std::vector<Member>* sub : order[used].subs) members += sub->size();
      ++used;
    }
  }
  if (order.size() > used) order.resize(used);
  bool progress = true;
  while (static_cast<int>(out.instances.size()) < count && progress) {
    progress = false;
    for (Stratum& st : order) {
      if (static_cast<int>(out.instances.size()) >= count) break;
      for (size_t tries = 0; tries < st.subs.size(); ++tries) {
        const size_t sub = st.next_sub;
        st.next_sub = (st.next_sub + 1) % st.subs.size();
        std::vector<Member>& members = *st.subs[sub];
        if (st.taken[sub] < members.size()) {
          // The stratum's j-th pick takes the sub-stratum's (j mod min(3, size))-th member
          // (cost, then forloop ascending), or the next untaken one.
          size_t at = st.picks % std::min<size_t>(3, members.size());
          while (members[at].taken) at = (at + 1) % members.size();
          Member& m = members[at];
          m.taken = true;
          ++st.taken[sub];
          ++st.picks;
          absl::StatusOr<codegen::GeneratedCode> code = gen.Generate(m.inst.assignment);
          PRISM_CHECK(code.ok(), "a sampled member generated before: ", code.status().message());
          take(m.inst, std::move(*code));
          progress = true;
          break;
        }
      }
    }
  }
  return out;
}

// A family's prune::Family (for Pruner::CheckInstance), built on first use.
struct FamilyCheck {
  std::unique_ptr<ExprContext> ctx;
  std::optional<prune::Family> family;
};
absl::StatusOr<const prune::Family*> FamilyFor(std::map<int, FamilyCheck>& checks, int index,
                                              const SGraph& g) {
  FamilyCheck& fc = checks[index];
  if (!fc.family) {
    fc.ctx = std::make_unique<ExprContext>();
    PRISM_ASSIGN_OR_RETURN(prune::Family f, BuildFamily(g, *fc.ctx));
    fc.family = std::move(f);
  }
  return &*fc.family;
}

// CodegenVariants(sm), then WgmmaLoopVariants(sm): every variant name a candidate can carry.
std::vector<std::pair<std::string, codegen::CodegenOptions>> AllVariants(int sm) {
  std::vector<std::pair<std::string, codegen::CodegenOptions>> v = CodegenVariants(sm);
  for (auto& e : WgmmaLoopVariants(sm)) v.push_back(std::move(e));
  return v;
}

// The options of a codegen variant name ("" = the defaults); nullopt for an unknown name.
std::optional<codegen::CodegenOptions> VariantOptions(
    const std::vector<std::pair<std::string, codegen::CodegenOptions>>& variants,
    const std::string& name) {
  if (name.empty()) return codegen::CodegenOptions();
  for (const auto& [n, o] : variants) {
    if (n == name) return o;
  }
  return std::nullopt;
}

// A feasible instance's cost lower bound, estimate and code (GenerateChecked).
struct Checked {
  double cost_us = 0;
  double estimate_us = 0;
  std::string estimate_terms;  // Estimate::ToString()
  codegen::GeneratedCode code;
};

// `a` of family graph `g` generated with `options` (and `fixed`) when it is a feasible instance
// (Pruner::CheckInstance): its cost lower bound, its estimate on `target` and its code. For the
// refinement rounds and a tuning-cache entry that names no sampled candidate.
absl::StatusOr<Checked> GenerateChecked(prune::Pruner& pruner, const prune::Family& family,
                                        const SGraph& g, const Assignment& a,
                                        const codegen::CodegenOptions& options,
                                        const Target& target,
                                        const Fixed& fixed) {
  PRISM_ASSIGN_OR_RETURN(prune::InstanceCheck check,
                         pruner.CheckInstance(family, a, std::nullopt));
  if (!check.ok()) return absl::FailedPreconditionError("not a feasible instance");
  PRISM_ASSIGN_OR_RETURN(BlockProgram bp, Instantiate(g, a));
  PRISM_ASSIGN_OR_RETURN(codegen::GeneratedCode code, GenerateProgram(bp, options, fixed));
  const Estimate estimate = EstimateInstance(target, bp, code, WorkOf(check.metrics));
  return Checked{check.cost_lower_bound_us, estimate.us, estimate.ToString(), std::move(code)};
}

// The first line of a (long) message.
std::string FirstLine(absl::string_view s) {
  const size_t nl = s.find('\n');
  return std::string(nl == absl::string_view::npos ? s : s.substr(0, nl));
}

}  // namespace

std::vector<std::pair<std::string, codegen::CodegenOptions>> CodegenVariants(int sm) {
  codegen::CodegenOptions w2;
  w2.attention_tiles_per_warp = 2;
  codegen::CodegenOptions n;
  n.gemm_warps_along_n = true;
  // B's tile of a chained matmul (lora) through shared memory (with gemm_defer_chained, which
  // every instance has: kDeferChained); other programs generate it as without, so it adds
  // candidates only where a chained matmul is.
  codegen::CodegenOptions bs;
  bs.gemm_chained_b_smem = true;
  codegen::CodegenOptions bsn = n;
  bsn.gemm_chained_b_smem = true;
  if (sm < 90) {
    return {{"attention_tiles_per_warp=2", w2},
            {"gemm_warps_along_n", n},
            {"gemm_chained_b_smem", bs},
            {"gemm_chained_b_smem,gemm_warps_along_n", bsn}};
  }
  codegen::CodegenOptions pdl;
  pdl.programmatic_dependent_launch = true;
  codegen::CodegenOptions w2_pdl = w2;
  w2_pdl.programmatic_dependent_launch = true;
  codegen::CodegenOptions n_pdl = n;
  n_pdl.programmatic_dependent_launch = true;
  // sm_90a's warpgroup MMA for the attention template (instances it does not fit generate
  // nothing and are skipped).
  codegen::CodegenOptions wg;
  wg.attention_wgmma = true;
  codegen::CodegenOptions wg_pdl = wg;
  wg_pdl.programmatic_dependent_launch = true;
  // Split-K GEMM instances folded into clusters (only those of kMaxTunedClusterBlocks blocks
  // are kept; attention and one-kernel instances fail to generate and are skipped).
  codegen::CodegenOptions c_pdl = pdl;
  c_pdl.cluster_combine = true;
  codegen::CodegenOptions cn_pdl = n_pdl;
  cn_pdl.cluster_combine = true;
  codegen::CodegenOptions bs_pdl = pdl;
  bs_pdl.gemm_chained_b_smem = true;
  codegen::CodegenOptions bsn_pdl = n_pdl;
  bsn_pdl.gemm_chained_b_smem = true;
  // The fallback's matmul split along k over clusters when its tiles are few (only programs
  // with a matmul library kernel are generated with it: SampleInstances).
  codegen::CodegenOptions ls;
  ls.library_matmul_cluster_split = true;
  codegen::CodegenOptions ls_pdl = pdl;
  ls_pdl.library_matmul_cluster_split = true;
  // The same split filling two blocks per SM (twice the bytes in flight per SM; it also splits
  // programs of sms / 2 to sms tiles, which the one-block form leaves whole).
  codegen::CodegenOptions ls2 = ls;
  ls2.library_matmul_split_blocks_per_sm = 2;
  codegen::CodegenOptions ls2_pdl = ls_pdl;
  ls2_pdl.library_matmul_split_blocks_per_sm = 2;
  return {{"attention_tiles_per_warp=2", w2},
          {"programmatic_dependent_launch", pdl},
          {"attention_tiles_per_warp=2,programmatic_dependent_launch", w2_pdl},
          {"attention_wgmma", wg},
          {"attention_wgmma,programmatic_dependent_launch", wg_pdl},
          {"gemm_warps_along_n", n},
          {"gemm_warps_along_n,programmatic_dependent_launch", n_pdl},
          {"cluster_combine,programmatic_dependent_launch", c_pdl},
          {"cluster_combine,gemm_warps_along_n,programmatic_dependent_launch", cn_pdl},
          {"gemm_chained_b_smem,programmatic_dependent_launch", bs_pdl},
          {"gemm_chained_b_smem,gemm_warps_along_n,programmatic_dependent_launch", bsn_pdl},
          {"library_matmul_cluster_split", ls},
          {"library_matmul_cluster_split,programmatic_dependent_launch", ls_pdl},
          {"library_matmul_cluster_split,library_matmul_split_blocks_per_sm=2", ls2},
          {"library_matmul_cluster_split,library_matmul_split_blocks_per_sm=2,"
           "programmatic_dependent_launch",
           ls2_pdl}};
}

std::vector<std::pair<std::string, codegen::CodegenOptions>> WgmmaLoopVariants(int sm) {
  if (sm < 90) return {};
  std::vector<std::pair<std::string, codegen::CodegenOptions>> out;
  for (const bool pdl : {false, true}) {
    codegen::CodegenOptions base;
    base.attention_wgmma = true;
    base.programmatic_dependent_launch = pdl;
    const std::string base_name =
        pdl ? "attention_wgmma,programmatic_dependent_launch" : "attention_wgmma";
    // late loads, split P·V, both.
    for (const int loop : {1, 2, 3}) {
      codegen::CodegenOptions o = base;
      std::string name = base_name;
      if (loop & 1) {
        o.attention_wgmma_late_loads = true;
        absl::StrAppend(&name, ",attention_wgmma_late_loads");
      }
      if (loop & 2) {
        o.attention_wgmma_split_pv = true;
        absl::StrAppend(&name, ",attention_wgmma_split_pv");
      }
      out.emplace_back(std::move(name), o);
    }
  }
  return out;
}

namespace {

// Indices of the `count` (≥ 0) fastest candidates that were measured and matched the
// reference, fastest first (ties in candidate order), leaving out those in `skip`.
std::vector<size_t> FastestMatching(const std::vector<Candidate>& cs, int count,
                                    const std::set<size_t>& skip) {
  std::vector<size_t> ranked;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (cs[i].measurement && cs[i].measurement->matches && !skip.count(i)) ranked.push_back(i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    return cs[a].measurement->median_us < cs[b].measurement->median_us;
  });
  if (ranked.size() > static_cast<size_t>(std::max(0, count))) {
    ranked.resize(static_cast<size_t>(std::max(0, count)));
  }
  return ranked;
}

}  // namespace

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

absl::Time MeasuringDeadline(absl::Time start, double measure_budget_s, absl::Time tune_end,
                             absl::Duration confirm_reserve, absl::Duration min_measure) {
  absl::Time d = measure_budget_s > 0 ? start + absl::Seconds(measure_budget_s)
                                      : absl::InfiniteFuture();
  if (tune_end != absl::InfiniteFuture()) {
    d = std::min(d, std::max(tune_end - confirm_reserve, start + min_measure));
  }
  return d;
}

int PickConfirmed(const std::vector<std::vector<double>>& times) {
  int best = -1;
  double best_us = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i].empty()) continue;
    const double m = Median(times[i]);
    if (best < 0 || m < best_us) {
      best = static_cast<int>(i);
      best_us = m;
    }
  }
  return best;
}

std::vector<Assignment> NeighborAssignments(const SGraph& graph, const Assignment& a,
                                            const std::function<bool(const Assignment&)>& accept,
                                            int max_steps) {
  std::vector<Assignment> out;
  for (const Param& p : graph.params()) {
    auto at = a.find(p.name);
    if (at == a.end()) continue;
    absl::StatusOr<std::vector<int64_t>> values = graph.ctx().var_domain(p.var).Enumerate(4096);
    if (!values.ok()) continue;
    const auto pos = std::find(values->begin(), values->end(), at->second);
    if (pos == values->end()) continue;
    const int64_t here = pos - values->begin();
    for (int dir : {-1, 1}) {
      for (int step = 1; step <= max_steps; ++step) {
        const int64_t j = here + dir * step;
        if (j < 0 || j >= static_cast<int64_t>(values->size())) break;
        Assignment n = a;
        n[p.name] = (*values)[j];
        if (accept(n)) {
          out.push_back(std::move(n));
          break;
        }
      }
    }
  }
  return out;
}

std::string CandidateText(const SGraph& graph, const Candidate& c) {
  std::string s =
      graph.params().empty() ? std::string("(no parameters)") : AssignmentText(graph, c.assignment);
  if (!c.codegen_variant.empty()) absl::StrAppend(&s, " [", c.codegen_variant, "]");
  return s;
}

std::vector<std::pair<std::string, std::vector<int>>> GroupSkipsByMessage(
    const std::vector<CodegenSkip>& skips) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const CodegenSkip& s : skips) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == s.message; });
    if (it == groups.end()) it = groups.insert(groups.end(), {s.message, {}});
    it->second.push_back(s.family + 1);
  }
  return groups;
}

std::string ProgramNameFrom(absl::string_view label) {
  std::string n;
  for (char c : label) {
    n.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_');
  }
  if (n.empty()) return "program";
  if (absl::ascii_isdigit(static_cast<unsigned char>(n[0]))) n = "p_" + n;
  if (n.size() > 64) n.resize(64);
  return n;
}

const char* MethodName(Method method) {
  return method == Method::kMeasured ? "measured" : "cost model";
}

// SampleInstances of the `n` families from `first` on, each on its own thread with `threads`
// (≥ 1) workers: up to n·threads threads at first, as one family's walk is often most of the
// work (gqa b=8: 5 of 5.5 s), which its workers then have to themselves. The families' graphs
// are distinct objects (FamilyResult owns its graph), which SampleInstances only reads.
// Results in family order; they do not depend on `threads`.
// `pruner` makes each family's InstanceChecker here, on the caller's thread.
std::vector<absl::StatusOr<Sampled>> SampleFamilies(
    prune::Pruner& pruner, const std::vector<search::FamilyResult>& families, size_t first,
    size_t n, int count, int sm, const Target& target,
    const Fixed& fixed, int threads) {
  std::vector<absl::StatusOr<Sampled>> out(n, absl::UnknownError("not sampled"));
  std::vector<prune::InstanceChecker> checkers(n);
  std::vector<InstanceWork> preferred_work(n);
  for (size_t k = 0; k < n; ++k) {
    ExprContext ctx;  // the checker keeps no expression
    absl::StatusOr<prune::Family> family = BuildFamily(*families[first + k].graph, ctx);
    absl::StatusOr<prune::InstanceChecker> checker =
        family.ok() ? pruner.MakeChecker(*family) : family.status();
    if (checker.ok()) {
      absl::StatusOr<prune::InstanceCheck> check =
          checker->Check(*family, families[first + k].best, std::nullopt);
      if (check.ok()) preferred_work[k] = WorkOf(check->metrics);
      checkers[k] = *std::move(checker);
    } else {
      out[k] = checker.status();
    }
  }
  RunOnThreads(n, [&](size_t k) {
    if (absl::IsUnknown(out[k].status())) {
      out[k] = SampleInstances(checkers[k], families[first + k], preferred_work[k], count, sm,
                               target, fixed, threads);
    }
  });
  return out;
}

absl::Status CheckConstantInputs(const Program& program,
                                 const std::vector<std::string>& constant_inputs) {
  std::vector<std::string> names;
  for (TensorId t : program.inputs()) names.push_back(program.node(t).name);
  std::set<std::string> seen;
  for (const std::string& c : constant_inputs) {
    if (std::find(names.begin(), names.end(), c) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("constant input '", c, "' is not an input of the program (inputs: ",
                       absl::StrJoin(names, ", "), ")"));
    }
    if (!seen.insert(c).second) {
      return absl::InvalidArgumentError(absl::StrCat("constant input '", c, "' is named twice"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ConstantInputsOf(const Program& program,
                                          const std::vector<std::string>& constant_inputs) {
  std::vector<std::string> out;
  for (const std::string& c : constant_inputs) {
    for (TensorId t : program.inputs()) {
      if (program.node(t).name == c) out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<TuneResult> Optimize(const Program& program, const Target& target,
                                    const TuneOptions& options) {
  if (options.top_families < 1 || options.instances_per_family < 1) {
    return absl::InvalidArgumentError("top_families and instances_per_family must be at least 1");
  }
  if (!options.program_name.empty()) {
    const std::string& n = options.program_name;
    bool ident = n.size() <= 64 && !absl::ascii_isdigit(static_cast<unsigned char>(n[0]));
    for (char c : n) ident = ident && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ident) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program_name '", n,
          "' is not an identifier: use letters, digits and '_', not starting with a digit, at "
          "most 64 characters"));
    }
  }
  PRISM_RETURN_IF_ERROR(CheckConstantInputs(program, options.constant_inputs));
  TuneResult r;
  // The device first (a child process: the parent never initializes CUDA).
  if (options.use_gpu && options.fake_device) {
    r.device = *options.fake_device;
  } else if (options.use_gpu) {
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
  if (r.search.families.empty() && r.search.budget_exhausted) {
    // Not "no family": the search stopped before it could tell.
    return absl::DeadlineExceededError(absl::StrFormat(
        "the search found no family for this program within its budget of %g s, which ran "
        "out: give it more (prism optimize --budget-s, OptimizeOptions.search_budget_s)",
        absl::ToDoubleSeconds(options.search.budget)));
  }
  if (r.search.families.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the search found no family for this program", search::NoFamilyReason(program, r.search)));
  }
  // The generated names follow the sGraph's (Instantiate copies it into the BlockProgram).
  if (!options.program_name.empty()) {
    for (search::FamilyResult& f : r.search.families) f.graph->set_name(options.program_name);
  }
  PRISM_ASSIGN_OR_RETURN(prune::Pruner pruner, prune::Pruner::Create(target));
  const absl::Time candidates_start = absl::Now();
  const absl::Time tune_end = options.tune_budget_s > 0
                                  ? candidates_start + absl::Seconds(options.tune_budget_s)
                                  : absl::InfiniteFuture();
  auto seconds_since = [](absl::Time t) { return absl::ToDoubleSeconds(absl::Now() - t); };
  // Every instance is generated with its blocks spread evenly over the target's SMs
  // (CodegenOptions::balance_residency).
  // The constant inputs' early loads (CodegenOptions::constant_inputs) likewise.
  const Fixed fixed = {{target.sms, target.smem_per_sm, target.smem_reserved_per_block},
                       options.constant_inputs};
  std::vector<codegen::GeneratedCode> codes;  // parallel to r.candidates
  int families_used = 0;
  const int sm = r.device ? r.device->sm() : static_cast<int>(target.compute_capability);
  // The sampling's workers per family: the search's thread count (0: one per core, at most
  // kMaxSamplingWorkers). Each holds a family and an instantiation cache; the instance
  // checks share one InstanceChecker (until 2026-12-07 each worker held a solver of about
  // 30 MB: `prism optimize --workload gqa --batch 1 --no-gpu` peaked at 517 MB with 8
  // workers, 269 MB serially).
  const int workers =
      options.search.threads > 0
          ? options.search.threads
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1,
                       kMaxSamplingWorkers);
  // The families are sampled in rounds of as many as are still wanted (top_families less those
  // with candidates), the round's families in parallel (SampleFamilies), and taken in family
  // order: the candidates of a serial walk, in its order.
  for (size_t next = 0;
       next < r.search.families.size() && families_used < options.top_families;) {
    const size_t round = std::min(static_cast<size_t>(options.top_families - families_used),
                                  r.search.families.size() - next);
    std::vector<absl::StatusOr<Sampled>> sampled =
        SampleFamilies(pruner, r.search.families, next, round, options.instances_per_family, sm,
                       target, fixed, workers);
    for (size_t k = 0; k < round; ++k) {
      const size_t f = next + k;
      PRISM_RETURN_IF_ERROR(sampled[k].status());
      Sampled& s = *sampled[k];
      const int generated = static_cast<int>(s.instances.size());
      for (int i = 0; i < generated; ++i) {
        Candidate c;
        c.family = static_cast<int>(f);
        c.assignment = s.instances[i].assignment;
        c.codegen_variant = s.instances[i].variant;
        c.cost_us = s.instances[i].cost_us;
        c.estimate_us = s.instances[i].estimate_us;
        c.estimate_terms = std::move(s.instances[i].estimate_terms);
        r.candidates.push_back(std::move(c));
        codes.push_back(std::move(s.codes[i]));
      }
      if (generated > 0) {
        ++families_used;
      } else {
        r.codegen_skips.push_back({static_cast<int>(f), r.search.families[f].cost_us,
                                   s.first_error});
      }
    }
    next += round;
  }
  if (r.candidates.empty()) {
    // Each distinct reason once, with the families it stopped ("#1-#4, #7"); the per-family
    // costs stay in codegen_skips.
    std::vector<std::string> why;
    for (const auto& [message, families] : GroupSkipsByMessage(r.codegen_skips)) {
      std::vector<std::string> runs;
      for (size_t i = 0; i < families.size();) {
        size_t j = i;
        while (j + 1 < families.size() && families[j + 1] == families[j] + 1) ++j;
        runs.push_back(j == i ? absl::StrCat("#", families[i])
                              : absl::StrCat("#", families[i], "-#", families[j]));
        i = j + 1;
      }
      why.push_back(absl::StrCat(message, " (", families.size() == 1 ? "family " : "families ",
                                 absl::StrJoin(runs, ", "), ")"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("no family can be generated as CUDA yet: ", r.codegen_skips.size(),
                     r.codegen_skips.size() == 1 ? " family" : " families", " tried; ",
                     absl::StrJoin(why, "; "), search::ChainedMatmulHint(program),
                     std::any_of(r.codegen_skips.begin(), r.codegen_skips.end(),
                                 [](const CodegenSkip& s) {
                                   return absl::StrContains(s.message, "16-byte chunks");
                                 })
                         ? search::RowAlignmentHint(program)
                         : ""));
  }
  r.times.candidates_s = seconds_since(candidates_start);
  if (codegen::NvrtcAvailable()) {
    absl::StatusOr<std::string> v = codegen::NvrtcVersion();
    if (v.ok()) r.nvrtc_version = *v;
  }
  runtime::CompileCache cache(options.compile_cache_dir);
  // Candidate order by the estimate, ties by the cost lower bound (stable: build order breaks
  // the rest). The lower bound alone ranked badly: its first candidate measured 2.2× the
  // fastest in geometric mean over the twelve rows, the estimate's 1.04× (estimate.h).
  std::vector<size_t> by_cost(r.candidates.size());
  for (size_t i = 0; i < by_cost.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
    const Candidate& x = r.candidates[a];
    const Candidate& y = r.candidates[b];
    if (x.estimate_us != y.estimate_us) return x.estimate_us < y.estimate_us;
    return x.cost_us < y.cost_us;
  });

  if (!r.device) {
    r.method = Method::kCostModel;
    if (r.nvrtc_version.empty()) {
      r.selected = static_cast<int>(by_cost[0]);
    } else {
      r.sm = static_cast<int>(target.compute_capability);
      const absl::Time compile_start = absl::Now();
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
      r.times.compile_s = seconds_since(compile_start);
      if (r.selected < 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("no candidate compiled with NVRTC: ", first_error));
      }
    }
    r.code = std::move(codes[r.selected]);
    return r;
  }

  // With a GPU: the tuning cache first; else compile everything (in parallel), then measure
  // each in a child process.
  r.method = Method::kMeasured;
  r.sm = r.device->sm();
  const TuneCache tune_cache(options.tune_cache_dir);
  if (!options.tune_cache_dir.empty()) {
    r.tune_cache_key = TuneCache::Key(program, *r.device, r.nvrtc_version, target.name, options);
    absl::StatusOr<std::optional<TuneCacheEntry>> entry = tune_cache.Lookup(r.tune_cache_key);
    if (!entry.ok()) {
      r.tune_cache_note = std::string(entry.status().message());
    } else if (entry->has_value()) {
      const TuneCacheEntry& e = **entry;
      int hit = -1;
      for (size_t i = 0; i < r.candidates.size() && hit < 0; ++i) {
        if (r.candidates[i].family == e.family && r.candidates[i].assignment == e.assignment &&
            r.candidates[i].codegen_variant == e.codegen_variant) {
          hit = static_cast<int>(i);
        }
      }
      // A refinement round's selection is not among the sampled candidates: regenerate it
      // from its assignment (same checks as a refinement round) and append it.
      if (hit < 0 && e.family >= 0 && e.family < static_cast<int>(r.search.families.size())) {
        const SGraph& g = *r.search.families[e.family].graph;
        std::map<int, FamilyCheck> checks;
        const std::optional<codegen::CodegenOptions> vopt =
            VariantOptions(AllVariants(r.sm), e.codegen_variant);
        const absl::StatusOr<const prune::Family*> fam = FamilyFor(checks, e.family, g);
        absl::StatusOr<Checked> made =
            vopt && fam.ok()
                ? GenerateChecked(pruner, **fam, g, e.assignment, *vopt, target, fixed)
                             : absl::NotFoundError("unknown variant or family");
        if (made.ok()) {
          Candidate c;
          c.family = e.family;
          c.assignment = e.assignment;
          c.codegen_variant = e.codegen_variant;
          c.cost_us = made->cost_us;
          c.estimate_us = made->estimate_us;
          c.estimate_terms = made->estimate_terms;
          r.candidates.push_back(std::move(c));
          codes.push_back(std::move(made->code));
          hit = static_cast<int>(r.candidates.size()) - 1;
        }
      }
      if (hit >= 0) {
        runtime::Measurement m;
        m.median_us = e.median_us;
        m.relative_error = e.relative_error;
        m.input_sets = e.input_sets;
        m.matches = true;
        r.candidates[hit].measurement = m;
        r.selected = hit;
        r.tune_cache_hit = true;
        r.code = std::move(codes[hit]);
        return r;
      }
      r.tune_cache_note = absl::StrCat(
          "stale tuning-cache entry '", tune_cache.PathOf(r.tune_cache_key), "': family #",
          e.family + 1, " instance", e.codegen_variant.empty() ? "" : " [",
          e.codegen_variant, e.codegen_variant.empty() ? "" : "]",
          " is neither a candidate nor a feasible instance of that family");
    }
  }
  const std::vector<Tensor> inputs = RandomInputs(program, options.seed);
  PRISM_ASSIGN_OR_RETURN(std::vector<Tensor> reference,
                         Evaluate(program, inputs, EvalMode::kF64));
  runtime::MeasureOptions mopt = options.measure;
  if (r.device->l2_bytes > 0) mopt.l2_bytes = r.device->l2_bytes;
  std::vector<std::string> failures;
  std::vector<std::string> cubins;  // parallel to r.candidates
  absl::Time deadline = absl::InfiniteFuture();
  std::string spent;  // a candidate's measure_error when the deadline cut it
  // Compiles and measures the candidates `order` in one child (runtime::CompileAndMeasureInChild:
  // NVRTC in this process would break cuInit in the measuring children; a fresh child after a
  // fault), starting none after the deadline; updates r.selected. The first call sets the
  // deadline from its start; later calls (refinement rounds) run within it.
  auto compile_and_measure = [&](const std::vector<size_t>& order, bool first) -> absl::Status {
    const absl::Time start = absl::Now();
    if (first) {
      const bool confirming = options.confirm_top >= 2 && options.confirm_rounds > 0;
      deadline = MeasuringDeadline(
          start, options.measure_budget_s, tune_end,
          confirming ? std::min(absl::Seconds(options.confirm_budget_s), kConfirmReserve)
                     : absl::ZeroDuration(),
          kMinMeasure);
      spent = options.measure_budget_s > 0 &&
                      deadline == start + absl::Seconds(options.measure_budget_s)
                  ? absl::StrCat("the measuring budget of ", options.measure_budget_s,
                                 " s was spent")
                  : absl::StrCat("the tuning budget of ", options.tune_budget_s, " s was spent");
    }
    std::vector<BlockProgram> programs;
    programs.reserve(order.size());
    for (size_t i : order) {
      const Candidate& c = r.candidates[i];
      PRISM_ASSIGN_OR_RETURN(BlockProgram bp,
                             Instantiate(*r.search.families[c.family].graph, c.assignment));
      programs.push_back(std::move(bp));
    }
    std::vector<runtime::CompileMeasureJob> jobs;
    for (size_t k = 0; k < order.size(); ++k) {
      jobs.push_back({&codes[order[k]].source, &codes[order[k]].launches, &programs[k]});
    }
    runtime::MeasureOptions sweep = mopt;
    sweep.early_stop_factor = options.early_stop_factor;
    PRISM_ASSIGN_OR_RETURN(
        std::vector<runtime::CompiledMeasurement> results,
        runtime::CompileAndMeasureInChild(r.device->ordinal, cache, r.sm, jobs, inputs, reference,
                                          sweep, deadline, options.compile_threads));
    cubins.resize(r.candidates.size());
    double waited = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      const size_t i = order[k];
      Candidate& c = r.candidates[i];
      runtime::CompiledMeasurement& res = results[k];
      waited += res.compile_wait_s;
      if (absl::IsDeadlineExceeded(res.measured.status())) {
        c.measure_error = spent;
        continue;
      }
      if (!res.compiled.ok()) {
        c.compile_error = FirstLine(res.compiled.status().message());
        failures.push_back(absl::StrCat("compile: ", c.compile_error));
        continue;
      }
      c.compiled = true;
      c.cache_hit = res.compiled->cache_hit;
      cubins[i] = std::move(res.compiled->cubin);
      const absl::StatusOr<runtime::Measurement>& m = res.measured;
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
    if (first) {
      r.times.compile_s = waited;
      r.times.measure_s = std::max(0.0, seconds_since(start) - waited);
    }
    return absl::OkStatus();
  };
  // Measuring order: round-robin over the families (each family's candidates in sample order,
  // strata's best first), so that a budget cut leaves every tried family measured, not only
  // the first ones.
  std::vector<size_t> measure_order;
  {
    std::vector<std::vector<size_t>> by_family;
    std::map<int, size_t> slot;
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      auto [it, added] = slot.emplace(r.candidates[i].family, by_family.size());
      if (added) by_family.emplace_back();
      by_family[it->second].push_back(i);
    }
    for (size_t k = 0; measure_order.size() < r.candidates.size(); ++k) {
      for (const std::vector<size_t>& f : by_family) {
        if (k < f.size()) measure_order.push_back(f[k]);
      }
    }
  }
  PRISM_RETURN_IF_ERROR(compile_and_measure(measure_order, /*first=*/true));
  // Refinement rounds (tune.h step 4).
  const absl::Time refine_start = absl::Now();
  {
    const std::vector<std::pair<std::string, codegen::CodegenOptions>> variants =
        AllVariants(r.sm);
    std::map<int, FamilyCheck> checks;  // family index → its prune::Family
    std::set<std::string> known;        // family | assignment | variant of every candidate
    auto key_of = [&](int family, const Assignment& a, const std::string& variant) {
      return absl::StrCat(family, "|", AssignmentText(*r.search.families[family].graph, a), "|",
                          variant);
    };
    for (const Candidate& c : r.candidates) known.insert(key_of(c.family, c.assignment, c.codegen_variant));
    // Appends the candidate made from candidate `from` (its family) at `a` with `variant` and
    // its cost and code to `added`'s round.
    auto append = [&](size_t from, const Assignment& a, const std::string& variant,
                      Checked made, std::vector<size_t>& added) {
      Candidate c;
      c.family = r.candidates[from].family;
      c.assignment = a;
      c.codegen_variant = variant;
      c.cost_us = made.cost_us;
      c.estimate_us = made.estimate_us;
      c.estimate_terms = std::move(made.estimate_terms);
      c.refined_from = static_cast<int>(from);
      r.candidates.push_back(std::move(c));
      codes.push_back(std::move(made.code));
      added.push_back(r.candidates.size() - 1);
    };
    // Variant round (tune.h step 4): the refine_top fastest matching candidates, each again
    // with PDL when it is a one-kernel instance without it, and with every loop reordering of
    // WgmmaLoopVariants when it is a wgmma attention instance (same family and assignment),
    // compiled and measured before the neighbours are.
    if (options.refine_rounds > 0 && r.selected >= 0 && absl::Now() < deadline) {
      std::vector<size_t> added;
      for (size_t from : FastestMatching(r.candidates, options.refine_top, {})) {
        const Candidate base = r.candidates[from];
        const SGraph& g = *r.search.families[base.family].graph;
        // The PDL twin of a one-kernel candidate (step 2 gives one-kernel instances PDL only
        // up to kPdlOneKernelMaxCostUs): launched with programmatic dependent launch, it
        // overlaps its launch with the previous call's end.
        if (r.sm >= 90 && codes[from].launches.size() == 1 &&
            !absl::StrContains(base.codegen_variant, "programmatic_dependent_launch")) {
          const std::string name =
              base.codegen_variant.empty()
                  ? std::string("programmatic_dependent_launch")
                  : absl::StrCat(base.codegen_variant, ",programmatic_dependent_launch");
          const std::optional<codegen::CodegenOptions> vopt = VariantOptions(variants, name);
          if (vopt && known.insert(key_of(base.family, base.assignment, name)).second) {
            PRISM_ASSIGN_OR_RETURN(const prune::Family* fam, FamilyFor(checks, base.family, g));
            absl::StatusOr<Checked> m =
                GenerateChecked(pruner, *fam, g, base.assignment, *vopt, target, fixed);
            if (m.ok()) append(from, base.assignment, name, *std::move(m), added);
          }
        }
        if (base.codegen_variant.empty()) continue;
        for (const auto& [name, vopt] : WgmmaLoopVariants(r.sm)) {
          if (!absl::StartsWith(name, absl::StrCat(base.codegen_variant, ",attention_wgmma_"))) {
            continue;
          }
          if (!known.insert(key_of(base.family, base.assignment, name)).second) continue;
          PRISM_ASSIGN_OR_RETURN(const prune::Family* fam, FamilyFor(checks, base.family, g));
          absl::StatusOr<Checked> m =
              GenerateChecked(pruner, *fam, g, base.assignment, vopt, target, fixed);
          if (m.ok()) append(from, base.assignment, name, *std::move(m), added);
        }
      }
      if (!added.empty()) PRISM_RETURN_IF_ERROR(compile_and_measure(added, /*first=*/false));
    }
    std::set<size_t> refined;
    for (int round = 0; round < options.refine_rounds && r.selected >= 0; ++round) {
      if (absl::Now() >= deadline) break;
      const int best_before = r.selected;
      const std::vector<size_t> ranked = FastestMatching(r.candidates, options.refine_top, refined);
      std::vector<size_t> added;
      for (size_t from : ranked) {
        refined.insert(from);
        const Candidate base = r.candidates[from];
        const SGraph& g = *r.search.families[base.family].graph;
        std::optional<codegen::CodegenOptions> vopt = VariantOptions(variants, base.codegen_variant);
        if (!vopt) continue;
        PRISM_ASSIGN_OR_RETURN(const prune::Family* fam, FamilyFor(checks, base.family, g));
        std::map<std::string, Checked> made;
        auto accept = [&](const Assignment& n) {
          if (known.count(key_of(base.family, n, base.codegen_variant))) return false;
          absl::StatusOr<Checked> m =
              GenerateChecked(pruner, *fam, g, n, *vopt, target, fixed);
          if (!m.ok()) return false;
          made[AssignmentText(g, n)] = *std::move(m);
          return true;
        };
        for (const Assignment& n : NeighborAssignments(g, base.assignment, accept)) {
          if (added.size() >= static_cast<size_t>(std::max(0, options.refine_max))) break;
          const std::string text = AssignmentText(g, n);
          if (!known.insert(key_of(base.family, n, base.codegen_variant)).second) continue;
          append(from, n, base.codegen_variant, std::move(made.at(text)), added);
        }
      }
      if (added.empty()) break;
      PRISM_RETURN_IF_ERROR(compile_and_measure(added, /*first=*/false));
      if (r.selected == best_before) break;
    }
  }
  if (options.refine_rounds > 0) r.times.refine_s = seconds_since(refine_start);
  if (r.selected < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no candidate matched the reference on the GPU: ", absl::StrJoin(failures, "; ")));
  }
  // Confirmation (tune.h step 5): the finalists measured again, interleaved.
  const absl::Time confirm_start = absl::Now();
  const absl::Time confirm_end =
      std::min(confirm_start + absl::Seconds(options.confirm_budget_s), tune_end);
  if (options.confirm_top >= 2 && options.confirm_rounds > 0 && confirm_end > confirm_start) {
    const std::vector<size_t> finalists = FastestMatching(r.candidates, options.confirm_top, {});
    if (finalists.size() >= 2) {
      std::vector<BlockProgram> programs;
      for (size_t i : finalists) {
        PRISM_ASSIGN_OR_RETURN(
            BlockProgram bp,
            Instantiate(*r.search.families[r.candidates[i].family].graph, r.candidates[i].assignment));
        programs.push_back(std::move(bp));
      }
      runtime::MeasureOptions confirm = mopt;
      confirm.early_stop_factor = 0;  // every finalist in full
      std::vector<runtime::MeasureJob> jobs;
      for (int round = 0; round < options.confirm_rounds; ++round) {
        for (size_t k = 0; k < finalists.size(); ++k) {
          jobs.push_back({&cubins[finalists[k]], &codes[finalists[k]].launches, &programs[k]});
        }
      }
      PRISM_ASSIGN_OR_RETURN(
          std::vector<absl::StatusOr<runtime::Measurement>> measured,
          runtime::MeasureAllInChild(r.device->ordinal, jobs, inputs, reference, confirm,
                                     confirm_end));
      std::vector<std::vector<double>> times(finalists.size());
      for (size_t j = 0; j < measured.size(); ++j) {
        const absl::StatusOr<runtime::Measurement>& m = measured[j];
        if (m.ok() && m->matches) times[j % finalists.size()].push_back(m->median_us);
      }
      for (size_t k = 0; k < finalists.size(); ++k) r.candidates[finalists[k]].confirm_us = times[k];
      const int pick = PickConfirmed(times);
      if (pick >= 0) r.selected = static_cast<int>(finalists[static_cast<size_t>(pick)]);
      r.times.confirm_s = seconds_since(confirm_start);
    }
  }
  if (!options.tune_cache_dir.empty()) {
    const Candidate& c = r.candidates[r.selected];
    TuneCacheEntry e;
    e.family = c.family;
    e.assignment = c.assignment;
    e.codegen_variant = c.codegen_variant;
    e.median_us = c.confirm_us.empty() ? c.measurement->median_us : Median(c.confirm_us);
    e.relative_error = c.measurement->relative_error;
    e.input_sets = c.measurement->input_sets;
    absl::Status st = tune_cache.Store(r.tune_cache_key, e);
    if (!st.ok()) r.tune_cache_note = std::string(st.message());
  }
  r.code = std::move(codes[r.selected]);
  return r;
}

// ---- tuning cache ---------------------------------------------------------------------------

TuneCache::TuneCache(std::string dir) : dir_(std::move(dir)) {}

std::string TuneCache::PathOf(const std::string& key) const {
  return (std::filesystem::path(dir_) / (key + ".json")).string();
}

std::string TuneCache::Key(const Program& program, const runtime::DeviceInfo& device,
                           absl::string_view nvrtc_version, absl::string_view target_name,
                           const TuneOptions& options) {
  StableHasher h;
  // The format version, then the hash of the generator's and the tuner's sources at build
  // time (cmake/PrismSourceHash.cmake): an entry measured on code that this build no longer
  // generates, or on candidates it no longer tries, is never reused.
  h.Add(absl::string_view("prism.tune-cache/3"));
  h.Add(absl::string_view(kGeneratorSourceHash));
  h.Add(program.StructuralHash());
  h.Add(absl::string_view(device.name));
  h.Add(device.driver_version);
  h.Add(nvrtc_version);
  h.Add(target_name);
  h.Add(options.top_families);
  h.Add(options.instances_per_family);
  h.Add(options.seed);
  h.Add(options.refine_rounds);
  h.Add(options.refine_top);
  h.Add(options.refine_max);
  h.Add(options.confirm_top);
  h.Add(options.confirm_rounds);
  // The constant inputs change the generated code (in any order: the same set).
  std::vector<std::string> constant = options.constant_inputs;
  std::sort(constant.begin(), constant.end());
  h.Add(static_cast<int>(constant.size()));
  for (const std::string& c : constant) h.Add(absl::string_view(c));
  return absl::StrFormat("%016x", h.Finish());
}

absl::StatusOr<std::optional<TuneCacheEntry>> TuneCache::Lookup(const std::string& key) const {
  if (dir_.empty()) return std::optional<TuneCacheEntry>();
  const std::string path = PathOf(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<TuneCacheEntry>();
  std::ostringstream ss;
  ss << in.rdbuf();
  auto corrupt = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("corrupt tuning-cache entry '", path, "': ", why));
  };
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return corrupt("not a JSON object");
  if (j.value("format", "") != "prism.tune-cache" || j.value("version", 0) != 1) {
    return corrupt("not format prism.tune-cache version 1");
  }
  if (j.value("key", "") != key) return corrupt("its key differs from the file name");
  for (const char* f : {"family", "assignment", "median_us", "relative_error", "input_sets"}) {
    if (!j.contains(f)) return corrupt(absl::StrCat("no field '", f, "'"));
  }
  if (!j["family"].is_number_integer() || !j["assignment"].is_object() ||
      !j["median_us"].is_number() || !j["relative_error"].is_number() ||
      !j["input_sets"].is_number_integer()) {
    return corrupt("a field has the wrong type");
  }
  TuneCacheEntry e;
  e.family = j["family"].get<int>();
  for (const auto& [name, v] : j["assignment"].items()) {
    if (!v.is_number_integer()) return corrupt("a field has the wrong type");
    e.assignment[name] = v.get<int64_t>();
  }
  if (j.contains("codegen_variant")) {
    if (!j["codegen_variant"].is_string()) return corrupt("a field has the wrong type");
    e.codegen_variant = j["codegen_variant"].get<std::string>();
  }
  e.median_us = j["median_us"].get<double>();
  e.relative_error = j["relative_error"].get<double>();
  e.input_sets = j["input_sets"].get<int>();
  return std::optional<TuneCacheEntry>(std::move(e));
}

absl::Status TuneCache::Store(const std::string& key, const TuneCacheEntry& e) const {
  if (dir_.empty()) return absl::OkStatus();
  const std::string path = PathOf(key);
  nlohmann::ordered_json j;
  j["format"] = "prism.tune-cache";
  j["version"] = 1;
  j["key"] = key;
  j["family"] = e.family;
  nlohmann::ordered_json a = nlohmann::ordered_json::object();
  for (const auto& [name, v] : e.assignment) a[name] = v;
  j["assignment"] = a;
  if (!e.codegen_variant.empty()) j["codegen_variant"] = e.codegen_variant;
  j["median_us"] = e.median_us;
  j["relative_error"] = e.relative_error;
  j["input_sets"] = e.input_sets;
  const std::string text = j.dump(1) + "\n";
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::string tmp = absl::StrCat(path, ".tmp", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) ||
        !out.flush()) {
      return absl::InternalError(
          absl::StrCat("cannot write the tuning cache '", path, "': ", std::strerror(errno)));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::InternalError(
        absl::StrCat("cannot write the tuning cache '", path, "': rename failed"));
  }
  return absl::OkStatus();
}

bool IsNoFamilyError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         (absl::StartsWith(status.message(), "the search found no family for this program") ||
          absl::StartsWith(status.message(), "no family can be generated as CUDA yet"));
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
  if (!c.codegen_variant.empty()) j["codegen_variant"] = c.codegen_variant;
  j["selection"] = MethodName(r.method);
  if (c.measurement) j["measured_us"] = c.measurement->median_us;
  if (!c.confirm_us.empty()) j["confirm_us"] = c.confirm_us;
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
