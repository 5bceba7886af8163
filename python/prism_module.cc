// The Python extension prism._prism (pybind11) over include/prism/prism.h; the package
// python/prism/__init__.py re-exports it (docs/api.md, "Python").
//
//   import prism
//   b = prism.ProgramBuilder()
//   x = b.input("X", "f16", [8, 4096]); w = b.input("W", "f16", [4096, 4096])
//   y = b.matmul(b.rms_norm(x, -1), w); b.set_name(y, "Y"); b.output(y)
//   r = prism.optimize(b.build(), gpu="off")
//   r.kernels[0].grid, r.cuda_source, r.report.json
//
// Every non-OK absl::Status becomes prism.Error (a RuntimeError) whose str() is prism's
// message and whose `code` is the status code's name ("INVALID_ARGUMENT", ...).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/prism.h"

namespace py = pybind11;

namespace prism::python {
namespace {

PyObject* g_error = nullptr;  // prism.Error

[[noreturn]] void Raise(const absl::Status& status) {
  py::object type = py::reinterpret_borrow<py::object>(g_error);
  py::object e = type(std::string(status.message()));
  e.attr("code") = absl::StatusCodeToString(status.code());
  PyErr_SetObject(g_error, e.ptr());
  throw py::error_already_set();
}

template <typename T>
T ValueOrRaise(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

void OkOrRaise(const absl::Status& s) {
  if (!s.ok()) Raise(s);
}

DType DTypeFromName(const std::string& name) {
  std::optional<DType> d = ParseDType(name);
  if (!d) {
    Raise(absl::InvalidArgumentError(
        absl::StrCat("unknown dtype '", name, "': expected one of f16, bf16, f32")));
  }
  return *d;
}

std::string DTypeString(DType d) { return std::string(DTypeName(d)); }

GpuMode GpuModeFromName(const std::string& name) {
  if (name == "auto") return GpuMode::kAuto;
  if (name == "require") return GpuMode::kRequire;
  if (name == "off") return GpuMode::kOff;
  Raise(absl::InvalidArgumentError(
      absl::StrCat("unknown gpu mode '", name, "': expected 'auto', 'require' or 'off'")));
}

// A tensor of a ProgramBuilder (its builder id).
struct Tensor {
  TensorId id;
};

// ProgramBuilder is move-only and consumed by Build(); the Python object keeps one that
// build() replaces, so that a builder can be built once.
struct Builder {
  ProgramBuilder b;
  bool built = false;
  void CheckNotBuilt() const {
    if (built) {
      Raise(absl::FailedPreconditionError(
          "this ProgramBuilder was already built: make a new prism.ProgramBuilder()"));
    }
  }
};

std::vector<std::string> TensorNames(const Program& p, absl::Span<const TensorId> ids) {
  std::vector<std::string> out;
  for (TensorId id : ids) out.push_back(p.DisplayName(id));
  return out;
}

py::dict AssignmentDict(const std::vector<std::pair<std::string, int64_t>>& assignment) {
  py::dict d;  // insertion-ordered: the family's parameter order
  for (const auto& [name, value] : assignment) d[py::str(name)] = value;
  return d;
}

}  // namespace
}  // namespace prism::python

PYBIND11_MODULE(_prism, m) {
  using namespace prism;          // NOLINT: the module mirrors prism.h
  using namespace prism::python;  // NOLINT
  m.doc() = "prism: superoptimizer for tensor programs on NVIDIA GPUs (docs/api.md)";
  g_error = PyErr_NewExceptionWithDoc(
      "prism.Error",
      "An error reported by prism: str(e) is prism's message, e.code the status code name.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::reinterpret_borrow<py::object>(g_error);
  m.attr("__version__") = Version();

  m.def("data_dir", [] { return ValueOrRaise(DataDir()); },
        "The data directory prism uses (smt_theories/): $PRISM_DATA_DIR, the installed "
        "<prefix>/share/prism, or the source tree.");

  // ---- Program building ---------------------------------------------------------------------
  py::class_<Tensor>(m, "Tensor", "A tensor of a ProgramBuilder (opaque; pass it to its ops).")
      .def_property_readonly("id", [](const Tensor& t) { return t.id.value(); })
      .def("__repr__", [](const Tensor& t) { return absl::StrCat("<prism.Tensor ", t.id.value(), ">"); });

  py::class_<Program>(m, "Program", "A validated, immutable tensor program (ir/program.h).")
      .def_property_readonly("text", [](const Program& p) { return PrintProgram(p); },
                             "The program in the .prism text format.")
      .def_property_readonly("inputs", [](const Program& p) { return TensorNames(p, p.inputs()); })
      .def_property_readonly("outputs",
                             [](const Program& p) { return TensorNames(p, p.output_tensors()); })
      .def_property_readonly("num_tensors", &Program::num_tensors)
      .def("shape",
           [](const Program& p, const std::string& name) {
             std::optional<TensorId> id = p.Find(name);
             if (!id) Raise(absl::NotFoundError(absl::StrCat("no tensor named '", name, "' in the program")));
             return p.node(*id).shape;
           },
           py::arg("name"), "The shape of the tensor called `name`.")
      .def("dtype",
           [](const Program& p, const std::string& name) {
             std::optional<TensorId> id = p.Find(name);
             if (!id) Raise(absl::NotFoundError(absl::StrCat("no tensor named '", name, "' in the program")));
             return DTypeString(p.node(*id).dtype);
           },
           py::arg("name"))
      .def_property_readonly(
          "nodes",
          [](const Program& p) {
            py::list out;  // topological order: operands come before their users
            for (size_t i = 0; i < p.num_tensors(); ++i) {
              const TensorId id(static_cast<uint32_t>(i));
              const Node& n = p.node(id);
              const OpInfo& info = GetOpInfo(n.op);
              py::dict d;
              d["name"] = p.DisplayName(id);
              d["op"] = std::string(info.name);
              d["operands"] = TensorNames(p, n.operands);
              if (info.attr == OpAttr::kDim || info.attr == OpAttr::kDimEps) d["dim"] = n.dim;
              if (info.attr == OpAttr::kScalar) d["scalar"] = n.scalar;
              if (info.attr == OpAttr::kDimEps) d["eps"] = n.eps;
              d["dtype"] = DTypeString(n.dtype);
              d["shape"] = n.shape;
              out.append(d);
            }
            return out;
          },
          "Every tensor as a dict {name, op, operands, dim | scalar | eps (per op), dtype, "
          "shape}; anonymous tensors are named '%<id>'.")
      .def("structural_hash", &Program::StructuralHash)
      .def("__str__", [](const Program& p) { return PrintProgram(p); })
      .def("__eq__", [](const Program& a, const Program& b) { return a == b; });

  py::class_<Builder> builder(m, "ProgramBuilder",
                              "Builds a Program; every error is reported by build().");
  builder.def(py::init<>())
      .def("input",
           [](Builder& self, const std::string& name, const std::string& dtype, Shape shape) {
             self.CheckNotBuilt();
             return Tensor{self.b.Input(name, DTypeFromName(dtype), std::move(shape))};
           },
           py::arg("name"), py::arg("dtype"), py::arg("shape"))
      .def("matmul",
           [](Builder& self, Tensor a, Tensor b) {
             self.CheckNotBuilt();
             return Tensor{self.b.MatMul(a.id, b.id)};
           })
      .def("scale",
           [](Builder& self, Tensor x, double c) {
             self.CheckNotBuilt();
             return Tensor{self.b.Scale(x.id, c)};
           },
           py::arg("x"), py::arg("c"))
      .def("rms_norm",
           [](Builder& self, Tensor x, int64_t dim, double eps) {
             self.CheckNotBuilt();
             return Tensor{self.b.RmsNorm(x.id, dim, eps)};
           },
           py::arg("x"), py::arg("dim"), py::arg("eps") = kDefaultRmsEps)
      .def("softmax",
           [](Builder& self, Tensor x, int64_t dim) {
             self.CheckNotBuilt();
             return Tensor{self.b.Softmax(x.id, dim)};
           },
           py::arg("x"), py::arg("dim"))
      .def("concat",
           [](Builder& self, const std::vector<Tensor>& parts, int64_t dim) {
             self.CheckNotBuilt();
             std::vector<TensorId> ids;
             for (const Tensor& t : parts) ids.push_back(t.id);
             return Tensor{self.b.Concat(std::move(ids), dim)};
           },
           py::arg("parts"), py::arg("dim"))
      .def("set_name",
           [](Builder& self, Tensor t, const std::string& name) {
             self.CheckNotBuilt();
             self.b.SetName(t.id, name);
           },
           py::arg("tensor"), py::arg("name"))
      .def("output",
           [](Builder& self, Tensor t) {
             self.CheckNotBuilt();
             self.b.Output(t.id);
           },
           py::arg("tensor"))
      .def("build",
           [](Builder& self) {
             self.CheckNotBuilt();
             self.built = true;
             return ValueOrRaise(std::move(self.b).Build());
           },
           "Validates and returns the Program; prism.Error (code INVALID_ARGUMENT) with the "
           "validator's message otherwise.");
  // The unary, binary and reduction ops by their text-format names (ops.def).
  for (const OpInfo& info : AllOps()) {
    const OpKind kind = info.kind;
    const std::string name(info.name);
    if (info.category == OpCategory::kUnary && info.attr == OpAttr::kNone) {
      builder.def(name.c_str(), [kind](Builder& self, Tensor x) {
        self.CheckNotBuilt();
        return Tensor{self.b.Unary(kind, x.id)};
      });
    } else if (info.category == OpCategory::kBinary) {
      builder.def(name.c_str(), [kind](Builder& self, Tensor a, Tensor b) {
        self.CheckNotBuilt();
        return Tensor{self.b.Binary(kind, a.id, b.id)};
      });
    } else if (info.category == OpCategory::kReduce) {
      builder.def(name.c_str(), [kind](Builder& self, Tensor x, int64_t dim) {
        self.CheckNotBuilt();
        return Tensor{self.b.Reduce(kind, x.id, dim)};
      }, py::arg("x"), py::arg("dim"));
    }
  }

  m.def("parse_program",
        [](const std::string& text, const std::string& filename) {
          return ValueOrRaise(ParseProgram(text, filename));
        },
        py::arg("text"), py::arg("filename") = "",
        "Parses .prism text (docs/ir_semantics.md); errors say FILE:LINE:COL.");
  m.def("workload",
        [](const std::string& name, int batch) { return ValueOrRaise(BuiltinWorkload(name, batch)); },
        py::arg("name"), py::arg("batch") = 1, "A built-in workload (prism workload list).");
  m.def("workload_names", &WorkloadNames);

  // ---- Optimize -----------------------------------------------------------------------------
  py::class_<KernelArg>(m, "KernelArg")
      .def_readonly("tensor", &KernelArg::tensor)
      .def_property_readonly("dtype", [](const KernelArg& a) { return DTypeString(a.dtype); })
      .def_readonly("shape", &KernelArg::shape)
      .def_readonly("written", &KernelArg::written)
      .def("__repr__", [](const KernelArg& a) {
        return absl::StrCat("<prism.KernelArg ", a.tensor, " ", DTypeName(a.dtype), "[",
                            absl::StrJoin(a.shape, ", "), "] ", a.written ? "write" : "read", ">");
      });
  py::class_<KernelLaunch>(m, "KernelLaunch")
      .def_readonly("kernel", &KernelLaunch::kernel)
      .def_readonly("function", &KernelLaunch::function)
      .def_property_readonly("grid", [](const KernelLaunch& k) { return py::make_tuple(k.grid[0], k.grid[1], k.grid[2]); })
      .def_property_readonly("block", [](const KernelLaunch& k) { return py::make_tuple(k.block[0], k.block[1], k.block[2]); })
      .def_readonly("dynamic_smem_bytes", &KernelLaunch::dynamic_smem_bytes)
      .def_readonly("args", &KernelLaunch::args)
      .def("__repr__", [](const KernelLaunch& k) {
        return absl::StrCat("<prism.KernelLaunch ", k.function, " grid=(", absl::StrJoin(k.grid, ", "),
                            ") block=(", absl::StrJoin(k.block, ", "), ") smem=", k.dynamic_smem_bytes, ">");
      });
  py::class_<Report>(m, "Report", "The proof report (report.json, .md, .html, the proof, SMT files).")
      .def_readonly("json", &Report::json)
      .def_readonly("markdown", &Report::markdown)
      .def_readonly("html", &Report::html)
      .def_readonly("proof_json", &Report::proof_json)
      .def_readonly("smt_files", &Report::smt_files);
  py::class_<CandidateSummary>(m, "Candidate", "One instance the tuner generated (prism.h CandidateSummary).")
      .def_readonly("family", &CandidateSummary::family)
      .def_property_readonly("assignment", [](const CandidateSummary& c) { return AssignmentDict(c.assignment); })
      .def_readonly("codegen_variant", &CandidateSummary::codegen_variant)
      .def_readonly("cost_us", &CandidateSummary::cost_us)
      .def_readonly("estimate_us", &CandidateSummary::estimate_us)
      .def_readonly("estimate_terms", &CandidateSummary::estimate_terms)
      .def_readonly("compiled", &CandidateSummary::compiled)
      .def_readonly("measured_us", &CandidateSummary::measured_us)
      .def_readonly("relative_error", &CandidateSummary::relative_error)
      .def_readonly("matches", &CandidateSummary::matches)
      .def_readonly("confirm_us", &CandidateSummary::confirm_us)
      .def_readonly("error", &CandidateSummary::error)
      .def_readonly("selected", &CandidateSummary::selected)
      .def("__repr__", [](const CandidateSummary& c) {
        return absl::StrCat("<prism.Candidate family ", c.family, " cost ", c.cost_us, " us estimate ",
                            c.estimate_us, " us",
                            c.measured_us ? absl::StrCat(" measured ", *c.measured_us, " us") : "",
                            c.selected ? " selected" : "", ">");
      });
  py::class_<CodegenSkipSummary>(m, "CodegenSkip", "A family codegen cannot handle yet (prism.h CodegenSkipSummary).")
      .def_readonly("family", &CodegenSkipSummary::family)
      .def_readonly("cost_us", &CodegenSkipSummary::cost_us)
      .def_readonly("message", &CodegenSkipSummary::message);
  py::class_<Result>(m, "Result", "What prism.optimize selected (prism.h Result).")
      .def_readonly("cuda_source", &Result::cuda_source)
      .def_readonly("launch_json", &Result::launch_json)
      .def_readonly("host_header", &Result::host_header)
      .def_readonly("family_json", &Result::family_json)
      .def_readonly("kernels", &Result::kernels)
      .def_property_readonly("selection", [](const Result& r) {
        return r.selection == Selection::kMeasured ? "measured" : "cost model";
      })
      .def_readonly("no_gpu_reason", &Result::no_gpu_reason)
      .def_readonly("device_name", &Result::device_name)
      .def_readonly("family", &Result::family)
      .def_readonly("families_found", &Result::families_found)
      .def_property_readonly("assignment", [](const Result& r) { return AssignmentDict(r.assignment); })
      .def_readonly("cost_us", &Result::cost_us)
      .def_readonly("estimate_us", &Result::estimate_us)
      .def_readonly("measured_us", &Result::measured_us)
      .def_readonly("sm", &Result::sm)
      .def_readonly("nvrtc_version", &Result::nvrtc_version)
      .def_readonly("search_s", &Result::search_s)
      .def_readonly("tune_cache_hit", &Result::tune_cache_hit)
      .def_readonly("tune_cache_note", &Result::tune_cache_note)
      .def_readonly("padded_inputs", &Result::padded_inputs)
      .def_readonly("candidates", &Result::candidates)
      .def_readonly("codegen_skips", &Result::codegen_skips)
      .def_readonly("report", &Result::report)
      .def("write", [](const Result& r, const std::string& dir) { OkOrRaise(WriteResult(r, dir)); },
           py::arg("dir"), "Writes kernel.cu, launch.json, host.h, family.json (and the report) to dir.");

  // prism.optimize and prism.optimize_parts: the same arguments and progress callback around
  // `call` (Optimize or OptimizeParts). The callback runs on this thread with the GIL
  // re-acquired; its first exception is re-raised after the C++ call returns (the search
  // cannot be interrupted from it).
  const auto binding = [](auto call) {
    return [call](const Program& program, const std::string& target, const std::string& gpu,
                  int gpu_index, double search_budget_s, int search_threads, int top_families,
                  int instances_per_family, const std::string& compile_cache_dir,
                  const std::string& label, bool build_report,
                  std::optional<py::function> progress, const std::string& tune_cache_dir,
                  double measure_budget_s, double tune_budget_s, int refine_rounds,
                  bool fallback, const std::vector<std::string>& constant_inputs) {
      OptimizeOptions o;
      o.target = target;
      o.gpu_mode = GpuModeFromName(gpu);
      o.gpu = gpu_index;
      o.search_budget_s = search_budget_s;
      o.search_threads = search_threads;
      o.top_families = top_families;
      o.instances_per_family = instances_per_family;
      o.compile_cache_dir = compile_cache_dir;
      o.program_label = label;
      o.build_report = build_report;
      o.tune_cache_dir = tune_cache_dir;
      o.measure_budget_s = measure_budget_s;
      o.tune_budget_s = tune_budget_s;
      o.refine_rounds = refine_rounds;
      o.fallback = fallback;
      o.constant_inputs = constant_inputs;
      std::optional<py::error_already_set> callback_error;
      if (progress) {
        o.progress = [&progress, &callback_error](const Progress& p) {
          py::gil_scoped_acquire gil;
          if (callback_error) return;
          try {
            (*progress)(p.stage, p.elapsed_s, p.done, p.total);
          } catch (py::error_already_set& e) {
            callback_error.emplace(std::move(e));
          }
        };
      }
      decltype(call(program, o)) r;
      {
        py::gil_scoped_release release;
        r = call(program, o);
      }
      if (callback_error) throw *callback_error;
      return ValueOrRaise(std::move(r));
    };
  };
  const auto args = [](const char* doc) {
    return std::make_tuple(
        py::arg("program"), py::arg("target") = "h200", py::arg("gpu") = "auto",
        py::arg("gpu_index") = 0, py::arg("search_budget_s") = 30.0,
        py::arg("search_threads") = 0, py::arg("top_families") = OptimizeOptions().top_families,
        py::arg("instances_per_family") = OptimizeOptions().instances_per_family,
        py::arg("compile_cache_dir") = "", py::arg("label") = "program",
        py::arg("build_report") = true, py::arg("progress") = py::none(),
        py::arg("tune_cache_dir") = "",
        py::arg("measure_budget_s") = OptimizeOptions().measure_budget_s,
        py::arg("tune_budget_s") = OptimizeOptions().tune_budget_s,
        py::arg("refine_rounds") = OptimizeOptions().refine_rounds,
        py::arg("fallback") = OptimizeOptions().fallback,
        py::arg("constant_inputs") = std::vector<std::string>(), doc);
  };
  std::apply(
      [&](auto... a) {
        m.def("optimize",
              binding([](const Program& p, const OptimizeOptions& o) { return Optimize(p, o); }),
              a...);
      },
      args("Searches, proves, prunes, generates CUDA and selects a kernel (prism::Optimize). "
           "gpu: 'auto' (GPU gpu_index if usable, else the cost model), 'require' or 'off'. "
           "constant_inputs: names of inputs no earlier kernel in the stream writes (weights), "
           "loaded before the wait for the previous kernel (--constant-inputs). "
           "progress(stage, elapsed_s, done, total) is called while it runs."));

  py::class_<Plan>(m, "Plan",
                   "A program optimized whole (result) or cut in parts launched in order "
                   "(prism.h Plan).")
      .def_readonly("name", &Plan::name)
      .def_readonly("program", &Plan::program)
      .def_readonly("result", &Plan::result)
      .def_readonly("parts", &Plan::parts)
      .def_readonly("split_json", &Plan::split_json)
      .def_readonly("fallback", &Plan::fallback)
      .def("write", [](const Plan& p, const std::string& dir) { OkOrRaise(WritePlan(p, dir)); },
           py::arg("dir"),
           "Writes the plan as prism optimize does: the result's files, or each part in "
           "dir/<part name> and dir/split.json.");
  std::apply(
      [&](auto... a) {
        m.def("optimize_parts", binding([](const Program& p, const OptimizeOptions& o) {
                return OptimizeParts(p, o);
              }),
              a...);
      },
      args("optimize, and a program no family covers (a matmul of a wide matmul: an MLP) cut "
           "in parts, each optimized and proved alone (prism::OptimizeParts). Same arguments."));

  // ---- proofs -------------------------------------------------------------------------------
  py::class_<ProofSummary>(m, "ProofSummary", "What an accepted proof establishes.")
      .def_readonly("version", &ProofSummary::version)
      .def_readonly("start", &ProofSummary::start)
      .def_readonly("goal", &ProofSummary::goal)
      .def_readonly("inputs", &ProofSummary::inputs)
      .def_readonly("axes", &ProofSummary::axes)
      .def_readonly("steps", &ProofSummary::steps)
      .def_readonly("rule_steps", &ProofSummary::rule_steps)
      .def_readonly("rules_used", &ProofSummary::rules_used)
      .def_readonly("rule_files", &ProofSummary::rule_files);
  py::class_<AuditResult>(m, "AuditResult", "What prism.audit confirmed (report/audit.h).")
      .def_readonly("dir", &AuditResult::dir)
      .def_readonly("solver", &AuditResult::solver)
      .def_readonly("proof_steps", &AuditResult::proof_steps)
      .def_readonly("smt_files", &AuditResult::smt_files)
      .def_readonly("smt_agree", &AuditResult::smt_agree)
      .def_readonly("smt_unknown", &AuditResult::smt_unknown)
      .def_readonly("families_sampled", &AuditResult::families_sampled)
      .def_readonly("members_checked", &AuditResult::members_checked)
      .def_readonly("members_emulated", &AuditResult::members_emulated)
      .def_readonly("disagreements", &AuditResult::disagreements)
      .def_readonly("notes", &AuditResult::notes)
      .def_property_readonly("ok", &AuditResult::ok);
  m.def(
      "audit",
      [](const std::string& dir, const std::string& solver, int solver_timeout_s, uint64_t seed,
         int sample_families, int members_per_family) {
        AuditOptions o;
        o.solver = solver;
        o.solver_timeout_s = solver_timeout_s;
        o.seed = seed;
        o.sample_families = sample_families;
        o.members_per_family = members_per_family;
        absl::StatusOr<AuditResult> r;
        {
          py::gil_scoped_release release;
          r = prism::Audit(dir, o);
        }
        return ValueOrRaise(std::move(r));
      },
      py::arg("dir"), py::arg("solver") = "z3", py::arg("solver_timeout_s") = 60,
      py::arg("seed") = 1, py::arg("sample_families") = 8, py::arg("members_per_family") = 4,
      "Re-checks a report written by Result.write (prism audit); disagreements are listed in "
      "the result (ok is False), errors raise prism.Error.");
  m.def("check_proof",
        [](const std::string& proof_json, const std::string& rules_dir) {
          return ValueOrRaise(CheckProof(proof_json, rules_dir));
        },
        py::arg("proof_json"), py::arg("rules_dir") = "",
        "Replays a proof with the independent checker (prism check-proof).");
}
