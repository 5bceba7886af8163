// Private helpers shared by the generator's templates (codegen.cc: GEMM + epilogue;
// attention_gen.cc: split-KV attention; pointwise_gen.cc: elementwise + acc_sum, e.g. the
// combine kernel of a split; library_gen.cc, library_ops_gen.cc: library kernels). Not a
// public header.
#ifndef PRISM_SRC_CODEGEN_GEN_UTIL_H_
#define PRISM_SRC_CODEGEN_GEN_UTIL_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

// How many times each op of `k` is an operand (by op index).
std::vector<int> UseCounts(const ConcreteBlockGraph& k);

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

// The f32 C expression of unary block op `op` (exp, silu, gelu, relu, sqrt, rsqrt, square, neg,
// recip, scale) applied to the f32 expression `x`.
std::string UnaryExpr(const ConcreteBlockOp& op, const std::string& x);

// The device pointer type of a tensor's elements: "prism_dev::f16_t", "prism_dev::bf16_t" or
// "float"; Unimplemented for other dtypes (the message names the tensor).
absl::StatusOr<std::string> DeviceElemType(const ConcreteTensor& t);

// The device-code spellings of one 16-bit float format (device_common.cuh): element type,
// conversions to and from f32 (round to nearest even), the packing of two f32 values, the
// mma.sync m16n8k16 function, a cluster load, the template flag of HalfToF32-based templates
// and the PTX type name. Both formats share the fragment layouts: a kernel differs only here.
struct Half16 {
  DType dtype;
  const char* type;        // "f16_t", "bf16_t"
  const char* to_f32;      // "F16ToF32", "BF16ToF32"
  const char* from_f32;    // "F32ToF16", "F32ToBF16"
  const char* pack2;       // "PackF16x2", "PackBF16x2"
  const char* mma;         // "MmaM16N8K16", "MmaM16N8K16BF16"
  const char* ld_cluster;  // "LdClusterF16", "LdClusterBF16"
  const char* is_bf16;     // "false", "true": the kBF16 argument of LoadAFragment etc.
  const char* ptx;         // "f16", "bf16"
};
// The spellings of f16 or bf16; nullptr for any other dtype.
const Half16* Half16Of(DType dtype);
// `load` (an element of tensor t) as f32: "F16ToF32(load)", "BF16ToF32(load)", or load (f32).
std::string ToF32(const ConcreteTensor& t, const std::string& load);
// The f32 expression `v` rounded to t's dtype: "F32ToF16(v)", "F32ToBF16(v)", or v (f32).
std::string FromF32(const ConcreteTensor& t, const std::string& v);
// The one 16-bit float format of the inputs of kernel `k` (f16 when it has none); Unimplemented
// when they mix f16 and bf16 or one is neither (f32), naming the op: "codegen: kernel k0, op v0
// (input): X is f32; matmul kernels read f16 or bf16 inputs only".
absl::StatusOr<const Half16*> KernelHalf16(const BlockProgram& p, const ConcreteBlockGraph& k,
                                           absl::string_view kernel);

// The head of one forloop iteration over an S-stage cp.async ring (`load_stage(iter, stage)`,
// kStages and kF defined by the kernel): with one stage, load iteration `it` and wait for it;
// else wait until iteration it's group is complete (at most S-2 pending), barrier (every warp
// has finished it-1), and refill the stage of it-1 with iteration it+S-1. With
// `fence_async_proxy` each thread makes its landed cp.async writes visible to the async proxy
// (FenceProxyAsyncShared) before the barrier: stages that wgmma reads by descriptor. With two
// or more stages and `refill` false the head ends at the barrier and the caller emits
// PipelineRefill() where it wants the refill.
std::string PipelineIterationHead(int64_t stages, bool fence_async_proxy = false,
                                  bool refill = true);

// The refill of PipelineIterationHead (stages ≥ 2): iteration it+S-1 into the stage of it-1,
// and its commit; `note`, when not empty, a comment on the load's line.
std::string PipelineRefill(absl::string_view note = "");

// The first statement of every kernel body: "  prism_dev::PdlPrologue();  // ...\n" with
// options.programmatic_dependent_launch, else "".
std::string KernelPrologue(const CodegenOptions& options);

// "t_<name>": the kernel parameter of tensor `t`.
std::string ParamName(const BlockProgram& p, int tensor);

// The kernel parameter list (and the launch's args/written) for every tensor an input or
// output op of `k` touches, in tensor-index order.
absl::Status KernelParams(const BlockProgram& p, const ConcreteBlockGraph& k,
                          absl::string_view kernel, LaunchConfig& launch, std::string& params);

// The same for the union of several graphs' tensors (a kernel with a combine kernel folded
// in), leaving out the tensors in `exclude` (kept in shared memory).
absl::Status KernelParams(const BlockProgram& p, const std::vector<const ConcreteBlockGraph*>& ks,
                          const std::set<int>& exclude, absl::string_view kernel,
                          LaunchConfig& launch, std::string& params);

// A pointwise combine kernel folded into the kernel before it (CodegenOptions::cluster_combine):
// the producer's blocks along its split axis (z for split-KV attention, y for the split-K GEMM
// forms) form one cluster; the partial tiles it would store stay in its shared memory, and the
// cluster evaluates the combine's elements reading them there.
struct FusedCombine {
  int producer = -1, combine = -1;  // kernel indices (combine = producer + 1)
  int axis = 2;                     // the split grid axis: 2 (z) or 1 (y)
  int64_t cluster = 1;              // the producer's grid along `axis`: blocks per cluster
  // The cluster dims: `cluster` along `axis`, 1 elsewhere.
  std::array<int64_t, 3> ClusterDims() const {
    std::array<int64_t, 3> d = {1, 1, 1};
    d[axis] = cluster;
    return d;
  }
  // Tensor → the producer's output op that writes it (every output of the producer).
  std::map<int, int> tensors;
  // Tensor → byte offset of its tile (row-major, the output op's tile) in the fused region.
  std::map<int, int64_t> offset;
  int64_t bytes = 0;  // the fused region's size (each tile padded to 16 bytes)
};

// The fusion of kernels `producer` and `producer + 1`, or Unimplemented naming the first
// condition of CodegenOptions::cluster_combine that fails ("codegen: cluster_combine: kernels
// a, b: ...").
absl::StatusOr<FusedCombine> MatchClusterCombine(const BlockProgram& p, int producer);

// The code, placed at the end of the producer's body (every producer output already written to
// its tile at `region` + offset, a `unsigned char*` shared-memory expression), that syncs the
// cluster, evaluates the combine kernel's elements of graph block (blockIdx.x, blockIdx.y, 0)
// (axis z) or (blockIdx.x, 0, blockIdx.z) (axis y) spread over the cluster's ranks (`threads` per block) and syncs again. Unimplemented when the
// combine kernel uses anything beyond inputs, elementwise ops, inv_rms and acc_sum.
absl::StatusOr<std::string> GenerateCombineTail(const BlockProgram& p, const FusedCombine& f,
                                                int64_t threads, const std::string& region,
                                                const CodegenOptions& options);

// Split-KV attention partials in log-sum-exp form (docs/codegen.md, "Partials in log-sum-exp
// form"). The block semantics of an attention kernel's outputs are N = Σ exp(S)·V and
// Dn = Σ exp(S), and exp(S) overflows f32 once a score exceeds 88.72: the combine's Σ N / Σ Dn
// is then inf / inf = NaN although softmax(S)·V is finite. When the pair is consumed only as
// that ratio, the producer stores N' = N / Dn (a convex combination of V rows) and
// Dn' = log2 Dn (= m + log2 Σ exp(S − m), finite), and the combine evaluates
//   Σ_i N_i / Σ_i Dn_i  =  Σ_i N'_i · 2^(Dn'_i − M) / Σ_i 2^(Dn'_i − M),   M = max_i Dn'_i,
// an identity in the reals whose terms are all at most 1.
struct LsePair {
  int producer = -1;                 // the attention kernel
  int num_out = -1, den_out = -1;    // its output ops storing N and Dn
  int num_tensor = -1, den_tensor = -1;
  struct Reader {
    int kernel = -1;                 // a pointwise (combine) kernel
    int num_in = -1, den_in = -1;    // its loop inputs of N and Dn
    int num_acc = -1, den_acc = -1;  // acc_sum of each, used only by `div`
    int div = -1;                    // num_acc / den_acc
  };
  std::vector<Reader> readers;       // at least one
};

// The (N, Dn) pairs of `p` stored in log-sum-exp form. A pair qualifies when: the attention
// kernel stores N (acc_sum(E·V)) to exactly one tensor and Dn (acc_sum_last(E)) to exactly one
// f32 tensor, by one output op each, and nothing else writes them; neither is a program
// output; each producer block writes its own tile of each; every kernel that reads either is a
// pointwise kernel whose forloop reads both as Σ_it N_it / Σ_it Dn_it (each input feeding only
// its acc_sum, both acc_sums only that division); and in every block and iteration of such a
// reader, the N and Dn tiles it reads were written by one producer block at the same rows
// (Dn's tile one column, broadcast along N's). Any other program keeps the exact-exp form.
std::vector<LsePair> FindLsePairs(const BlockProgram& p);

// The two non-GEMM templates. Each generates one kernel (appending its source) or returns
// Unimplemented naming the kernel and the first op it cannot emit; ResourceExhausted when the
// kernel needs more shared memory than options allow.
// With `fused`, the attention kernel is `fused->producer` and has the combine kernel folded in.
absl::StatusOr<LaunchConfig> GenerateAttentionKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source,
                                                     const FusedCombine* fused = nullptr);
absl::StatusOr<LaunchConfig> GeneratePointwiseKernel(const BlockProgram& p, int kernel,
                                                     const CodegenOptions& options,
                                                     std::string& source);

// Shared by the library-kernel generators (library_gen.cc, library_ops_gen.cc):
// "[d0, d1, ...]".
std::string LibraryShapeText(const Shape& s);
// A library kernel's launch: its function name (prism_<program>_<kernel><suffix>), `grid`,
// `threads` threads, no dynamic shared memory, PDL as the options say; the arguments (and any
// static shared memory in reduction_bytes) are the caller's.
LaunchConfig LibraryLaunch(const BlockProgram& p, const std::string& kname,
                           const CodegenOptions& options, const std::array<int64_t, 3>& grid,
                           int64_t threads);
// ResourceExhausted "codegen: kernel <k>: <what> <name> <shape> has more than 2147483647
// elements (the kernel indexes with 32 bits)" when `t` has more than 2^31 − 1 elements.
absl::Status CheckLibraryIndexable(const std::string& kname, absl::string_view what,
                                   const ConcreteTensor& t);

// A library kernel (`p.kernels[kernel]` holds a LibraryKernel; library_gen.cc), appending its
// source: concat is generated as one copy kernel (docs/codegen.md, "Library kernels: concat");
// sum, max, mean, softmax and rms_norm over any dim (negative: counted from the end) as one
// kernel that splits each fibre over a warp (the last dim) or a column of threads and combines
// the f32 partials in a fixed order (docs/codegen.md, "Library kernels: reductions and norms");
// unary
// and binary ops by GenerateLibraryElementwise, matmul by GenerateLibraryMatmul (below). Errors
// name the kernel: InvalidArgument for a malformed kernel (operands, dim, eps, dtypes or shapes
// that docs/ir_semantics.md §2 rejects, the result among the operands), Unimplemented for a
// dtype other than f16, bf16 and f32, ResourceExhausted for a concat result or fibre-op operand
// of more than 2^31 − 1 elements (32-bit indices). Of the options only name_suffix and
// programmatic_dependent_launch apply; the others are ignored.
absl::StatusOr<LaunchConfig> GenerateLibraryKernel(const BlockProgram& p, int kernel,
                                                   const CodegenOptions& options,
                                                   std::string& source);

// Library kernels of the elementwise ops (library_ops_gen.cc; docs/codegen.md, "Library kernels:
// matmul and elementwise ops"), with GenerateLibraryKernel's contract: a unary op (scale
// included: `scalar`) or add / sub / mul / div with numpy broadcasting (operands of any rank up
// to the result's) as one kernel of one result element per thread and grid-stride step, each
// operand read through its broadcast view, one f32 operation (§3.2) rounded once to the result
// dtype; arguments: each distinct operand tensor once in operand order, then the result.
// ResourceExhausted for a result of more than 2^31 − 1 elements. Messages name the kernel and
// op: "codegen: kernel k0: add: X [3, 4] and W [4, 3] do not broadcast".
absl::StatusOr<LaunchConfig> GenerateLibraryElementwise(const BlockProgram& p, int kernel,
                                                        const CodegenOptions& options,
                                                        std::string& source);

// A matmul library kernel a[…A, M, K] × b[…B, K, N] → [broadcast(A, B), M, N] (any ranks ≥ 2,
// batch dims broadcast) as one tiled kernel (library_ops_gen.cc): 64 × 64 output tiles of 256
// threads along (x: N, y: M), batches along z, each a grid-stride loop (grid ≤ 65535 per axis);
// k in steps of 16 staged in static shared memory as f32, every output folded as fmaf in
// increasing k from +0 (§3.3: the interpreter's device mode bit for bit), rounded once; no
// dynamic shared memory. ResourceExhausted for an operand or result of more than 2^31 − 1
// elements; otherwise GenerateLibraryKernel's contract.
absl::StatusOr<LaunchConfig> GenerateLibraryMatmul(const BlockProgram& p, int kernel,
                                                   const CodegenOptions& options,
                                                   std::string& source);

// Which template a block graph is for: kPointwise when it has no matmul but after-loop ones
// of acc_sum(loop input) (lora's combine: (Σ_s P1)·B), kAttention when a matmul's result is
// exponentiated inside the forloop (S = Q·K, E = exp(S) or exp(scale(S, c))), else kGemm.
enum class Template { kGemm, kAttention, kPointwise };
Template ChooseTemplate(const ConcreteBlockGraph& k);

// Batched matmuls for the rank-2 templates: `p` with every tensor of rank r ≥ 3 viewed as
// rank 2, its leading r − 1 dims merged into one ([B, M, K] → [B·M, K], the same row-major
// memory), when every tile of such a tensor (and every op tile of rank r) spans one element
// of dims 0..r−3 — the batch is split over the grid — so a tile is a rank-2 block of the merged
// view, and the merged view places it where the emulator does: the grid axes mapped to the
// merged dims, linearized x-major, must map them in dim order, and the forloop must not walk
// dims 0..r−3 (TileOrigin then yields the merged origin). nullopt when `p` has no op tile of
// rank > 2 in a GEMM kernel, a kernel for the attention template (which works on rank-3 tiles), a reduction or
// rms over a merged dim, a forloop over partial-result groups, or any op that breaks these
// conditions: codegen then reports its usual errors. Only for programs with a kernel for the
// GEMM template that has such tiles (the pointwise template handles any rank itself). Library
// kernels are copied unchanged and must be generated from `p` itself: the rank-2 view changes
// the shapes of the tensors they read and write.
std::optional<BlockProgram> SqueezeBatchDims(const BlockProgram& p);

}  // namespace prism::codegen::internal

#endif  // PRISM_SRC_CODEGEN_GEN_UTIL_H_
