// Private helpers shared by the generator's templates (codegen.cc: GEMM + epilogue;
// attention_gen.cc: split-KV attention; pointwise_gen.cc: elementwise + acc_sum, e.g. the
// combine kernel of a split). Not a public header.
#ifndef PRISM_SRC_CODEGEN_GEN_UTIL_H_
#define PRISM_SRC_CODEGEN_GEN_UTIL_H_

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/block/block_instance.h"
#include "prism/codegen/codegen.h"

namespace prism::codegen::internal {

// `s` with every character outside [A-Za-z0-9] replaced by '_'.
std::string Ident(absl::string_view s);

// A float literal that round-trips (the f32 of `v`, as the emulator uses): "4096.0f".
std::string FloatLit(double v);

// "Qt (input)", "#3 (exp)": an op's name (or index) and kind, for messages and comments.
std::string OpLabel(const ConcreteBlockGraph& k, int i);

// Unimplemented("codegen: kernel K, op O: what").
absl::Status OpError(absl::string_view kernel, const ConcreteBlockGraph& k, int op,
                     absl::string_view what);

// The C expression (long long) of the first element's coordinate along tensor dim `dim` of op
// `i`'s tile (an input or output op): grid coordinates of the axes mapped to `dim` linearized
// x-major, then the loop index `it` appended when `with_loop` and the op's fmap is `dim`, times
// the tile extent — exactly the emulator's placement (docs/block_graph.md §2).
// `axes` names the block coordinates (default blockIdx.x/y/z).
std::string TileOrigin(const ConcreteBlockGraph& k, int i, int dim, bool with_loop,
                       const std::array<const char*, 3>& axes = {"blockIdx.x", "blockIdx.y",
                                                                 "blockIdx.z"});

// The device pointer type of a tensor's elements: "prism_dev::f16_t" or "float";
// Unimplemented for other dtypes (the message names the tensor).
absl::StatusOr<std::string> DeviceElemType(const ConcreteTensor& t);

// The head of one forloop iteration over an S-stage cp.async ring (`load_stage(iter, stage)`,
// kStages and kF defined by the kernel): with one stage, load iteration `it` and wait for it;
// else wait until iteration it's group is complete (at most S-2 pending), barrier (every warp
// has finished it-1), and refill the stage of it-1 with iteration it+S-1.
std::string PipelineIterationHead(int64_t stages);

// "t_<name>": the kernel parameter of tensor `t`.
std::string ParamName(const BlockProgram& p, int tensor);

// The kernel parameter list (and the launch's args/written) for every tensor an input or
// output op of `k` touches, in tensor-index order.
absl::Status KernelParams(const BlockProgram& p, const ConcreteBlockGraph& k,
                          absl::string_view kernel, LaunchConfig& launch, std::string& params);

// The two non-GEMM templates. Each generates one kernel (appending its source) or returns
// Unimplemented naming the kernel and the first op it cannot emit; ResourceExhausted when the
// kernel needs more shared memory than options allow.
absl::StatusOr<LaunchConfig> GenerateAttentionKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source);
absl::StatusOr<LaunchConfig> GeneratePointwiseKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source);

// Which template a block graph is for: kPointwise when it has no matmul, kAttention when a
// matmul's result is exponentiated inside the forloop (S = Q·K, E = exp(S)), else kGemm.
enum class Template { kGemm, kAttention, kPointwise };
Template ChooseTemplate(const ConcreteBlockGraph& k);

}  // namespace prism::codegen::internal

#endif  // PRISM_SRC_CODEGEN_GEN_UTIL_H_
