// The six benchmark workloads of ../shared/WORKLOADS.md as `.prism` text in canonical layout.
// The texts are generated here, not read from examples/: the files there are these texts at
// b = 1 and b = 8, regenerated with `prism workload NAME --batch B` and kept identical by
// tests/ir/workloads_test.cc.
#include "prism/ir/workloads.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/ir/text_format.h"

namespace prism {
namespace {

struct InputDecl {
  const char* name;
  // Each dim is a multiple of the batch (Batch(m): m·b) or a constant (Fixed(c)).
  struct Dim {
    int batch_multiplier;
    int64_t constant;
  };
  std::vector<Dim> dims;
};

struct WorkloadDef {
  const char* name;
  const char* description;  // one line, ASCII: @ = matmul, * = elementwise product
  std::vector<InputDecl> inputs;
  const char* output;      // the output tensor's name
  const char* expression;  // its defining expression in the text format
};

constexpr InputDecl::Dim Batch(int multiplier) { return {multiplier, 0}; }
constexpr InputDecl::Dim Fixed(int64_t constant) { return {0, constant}; }

// WORKLOADS.md order. rms(x) = x * rsqrt(mean(x^2, last dim) + 1e-6) is rms_norm(x, -1) with
// the default eps.
const std::vector<WorkloadDef>& Defs() {
  static const auto* defs = new std::vector<WorkloadDef>{
      {"gqa",
       "softmax(Q @ Kt, -1) @ V: grouped-query attention decode, unscaled",
       {{"Q", {Batch(2), Fixed(256), Fixed(64)}},
        {"Kt", {Batch(2), Fixed(64), Fixed(4096)}},
        {"V", {Batch(2), Fixed(4096), Fixed(64)}}},
       "O",
       "matmul(softmax(matmul(Q, Kt), -1), V)"},
      {"qknorm_gqa",
       "softmax(rms(Q) @ Kt, -1) @ rms(V): attention decode with RMS-normed Q and V",
       {{"Q", {Batch(2), Fixed(256), Fixed(64)}},
        {"Kt", {Batch(2), Fixed(64), Fixed(4096)}},
        {"V", {Batch(2), Fixed(4096), Fixed(64)}}},
       "O",
       "matmul(softmax(matmul(rms_norm(Q, -1), Kt), -1), rms_norm(V, -1))"},
      {"rmsnorm_linear",
       "rms(X) @ W: RMS norm followed by a linear layer",
       {{"X", {Batch(2), Fixed(4096)}}, {"W", {Fixed(4096), Fixed(6144)}}},
       "Y",
       "matmul(rms_norm(X, -1), W)"},
      {"gated_mlp",
       "silu(X @ A) * (X @ B): gated MLP (SwiGLU) up-projection",
       {{"X", {Batch(1), Fixed(4096)}},
        {"A", {Fixed(4096), Fixed(4096)}},
        {"B", {Fixed(4096), Fixed(4096)}}},
       "Y",
       "mul(silu(matmul(X, A)), matmul(X, B))"},
      {"lora",
       "X @ W + (X @ A) @ B: linear layer with a rank-16 LoRA adapter",
       {{"X", {Batch(1), Fixed(4096)}},
        {"W", {Fixed(4096), Fixed(4096)}},
        {"A", {Fixed(4096), Fixed(16)}},
        {"B", {Fixed(16), Fixed(4096)}}},
       "Y",
       "add(matmul(X, W), matmul(matmul(X, A), B))"},
      {"ntrans",
       "rms(X + Alpha * (rms(H) - X)): nGPT normalized-transformer residual update",
       {{"X", {Batch(1), Fixed(4096)}},
        {"H", {Batch(1), Fixed(4096)}},
        {"Alpha", {Batch(1), Fixed(4096)}}},
       "Y",
       "rms_norm(add(X, mul(Alpha, sub(rms_norm(H, -1), X))), -1)"},
  };
  return *defs;
}

const WorkloadDef* FindDef(absl::string_view name) {
  for (const WorkloadDef& d : Defs()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadDef& d : Defs()) names.emplace_back(d.name);
  return names;
}

std::string WorkloadDescription(absl::string_view name) {
  const WorkloadDef* def = FindDef(name);
  return def == nullptr ? "" : def->description;
}

absl::StatusOr<std::string> WorkloadText(absl::string_view name, int batch) {
  const WorkloadDef* def = FindDef(name);
  if (def == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "unknown workload '", name, "'; known workloads: ", absl::StrJoin(WorkloadNames(), ", ")));
  }
  if (batch < 1 || batch > kMaxWorkloadBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload batch must be in 1..", kMaxWorkloadBatch, ", found ", batch));
  }
  std::string text =
      absl::StrCat("# ", def->name, " at batch ", batch, " (built-in workload, see WORKLOADS.md)\n",
                   "# ", def->output, " = ", def->description, "\n");
  for (const InputDecl& in : def->inputs) {
    std::vector<int64_t> dims;
    for (const InputDecl::Dim& d : in.dims) {
      dims.push_back(d.batch_multiplier != 0 ? int64_t{d.batch_multiplier} * batch : d.constant);
    }
    absl::StrAppend(&text, in.name, " = input f16[", absl::StrJoin(dims, ", "), "]\n");
  }
  absl::StrAppend(&text, def->output, " = ", def->expression, "\n");
  absl::StrAppend(&text, "output ", def->output, "\n");
  return text;
}

absl::StatusOr<Program> BuiltinWorkload(absl::string_view name, int batch) {
  absl::StatusOr<std::string> text = WorkloadText(name, batch);
  if (!text.ok()) return text.status();
  return ParseProgram(*text, absl::StrCat("<builtin ", name, " b=", batch, ">"));
}

}  // namespace prism
