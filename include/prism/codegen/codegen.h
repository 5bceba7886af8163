// CUDA code generation: a concrete block program (an instance of a validated sGraph,
// block_instance.h) → self-contained CUDA C++ source, a launch description (JSON) and a small
// C++ host wrapper header (DESIGN.md §6, docs/codegen.md).
//
//   PRISM_ASSIGN_OR_RETURN(BlockProgram p, Instantiate(g, {{"g", 192}, {"F", 32}, {"T", 128},
//                                                          {"S", 3}}));
//   PRISM_ASSIGN_OR_RETURN(GeneratedCode code, GenerateCuda(p));
//   // code.source → kernel.cu, code.launch_json → launch.json, code.host_header → host.h
//
// One __global__ function per block-graph kernel (extern "C", named
// `prism_<program>_<kernel><suffix>`), from one of three templates, chosen per kernel:
//   - GEMM + epilogue (a matmul, not exponentiated): rank-2 f16 loop tiles streamed through
//     shared memory with 16-byte cp.async in an S-stage pipeline (rows padded by 16 bytes);
//     matmul of two loop tiles closed by acc_sum on tensor cores (mma.sync m16n8k16, f16 →
//     f32; M padded to 16, warps split K, and N when K is short); acc_sumsq_last(x) /
//     acc_sum_last(square(x)) of a matmul's A tile fused into the A-fragment loads; matmuls of
//     different N tiles may share the A tile; after the loop inv_rms, unary (exp silu gelu
//     relu sqrt rsqrt square neg recip scale) and binary (add sub mul div, broadcasting) ops
//     per output element in f32, and acc_sum(matmul) · (loop-invariant B tile read from
//     global memory; lora's (X·A)·B), rounded to f16 at the store. A chained loop matmul
//     (X·A)·B with X·A [M, 16] and B a loop-invariant [16, N] tile (lora's split and
//     in-loop forms): X·A per k16 chunk on tensor cores, rounded to f16 as the A operand of
//     ·B, B's fragments held in registers. Split-K kernel 1: outputs of accumulators
//     (acc_sum of a matmul, Σx²) may be f32 tensors, stored unrounded (the partials that the
//     pointwise combine kernel sums). Over 192 f32 accumulator registers per thread →
//     ResourceExhausted (they would spill).
//   - attention (a matmul S = Q·K whose result is exponentiated inside the loop: the
//     split-KV partial kernel of gqa / qknorm_gqa): rank-3 [heads, rows, cols] f16 tiles,
//     loop-invariant Q kept as mma fragments, K/V streamed through the cp.async ring; S and
//     E·V on tensor cores with a running row maximum so that no f16 operand overflows (the
//     stored acc_sum(E·V) and acc_sum_last(E) are the exact-exp block values up to f32
//     rounding); rms(Q) / rms(V) over the last dim as row / column scales; f32 (or f16)
//     partial-result outputs.
//   - pointwise (no matmul: e.g. the combine kernel whose forloop walks partial-result
//     groups): inputs (f16/f32, any rank), elementwise ops, inv_rms and acc_sum, one output
//     element per thread, loads straight from global memory, sums in iteration order. Each
//     graph block is launched as P thread blocks along z (LaunchConfig::grid = (gx, gy, gz·P)).
//     With rms over the last dim (ntrans; no forloop, ≤ 32 rows per block, every rms over the
//     stored tile): P = 1, one pass per rms (row sums of squares: registers, warp shuffles,
//     shared memory), inputs cached in registers (16-byte loads) when they fit.
// And one per concat library kernel (a LibraryKernel whose op is concat, library_gen.cc): a copy
// kernel over the result viewed as [outer, Σ inner_i] (outer: the dims before `dim`; inner_i:
// operand i's dims from `dim` on), 16-byte vectors when every inner_i · bytes is a multiple of
// 16, else elements; 256 threads, ⌈units / 256⌉ blocks capped at 528, grid-stride; no shared
// memory; f16, bf16 and f32; arguments: each operand tensor once in operand order, then the
// result. A result over 2^31 − 1 elements → ResourceExhausted (32-bit indices).
// And one per sum / max / mean / softmax / rms_norm library kernel over any dim (library_gen.cc):
// the operand viewed as [outer, n, inner] (n: the extent of `dim`), each fibre split over
// several threads — a warp per fibre when inner = 1 (row mode), else blocks of C fibre groups ×
// S threads along k (column mode, 16-byte units when inner allows) — whose f32 partials are
// combined in a fixed order (a shuffle butterfly, or a pairwise tree in static shared memory
// reported as reduction_bytes): §3.2's arithmetic, deterministic, but not §3.3's sequential
// order bit for bit (softmax: three passes, rms_norm: two, re-reading the input); 256 threads;
// f16, bf16 and f32; arguments: the operand, then the result. An operand over 2^31 − 1
// elements → ResourceExhausted.
// And one per unary / binary (numpy broadcasting) library kernel (library_ops_gen.cc): one result
// element per thread, 256 threads, grid-stride over ≤ 528 blocks, each operand read through its
// broadcast view, one f32 operation rounded once; and one per matmul library kernel (any ranks
// ≥ 2, batch dims broadcast): 64 × 64 output tiles of 256 threads over a grid (N tiles, M tiles,
// batches) capped at 65535 per axis with grid-stride loops, k in steps of 16 through static
// shared memory, fmaf in increasing k from +0 (the interpreter's device mode exactly). Both
// refuse tensors over 2^31 − 1 elements (ResourceExhausted).
// Anything else (other loop-invariant inputs outside attention,
// reductions, other rms, online accumulators, other after-loop matmuls, ...) →
// Unimplemented naming the kernel, op and what is missing; never wrong code. Output is
// deterministic: the same program and options give byte-identical strings.
#ifndef PRISM_CODEGEN_CODEGEN_H_
#define PRISM_CODEGEN_CODEGEN_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prism/block/block_instance.h"

namespace prism::codegen {

struct CodegenOptions {
  // Appended to every kernel's name (to put several variants in one module).
  std::string name_suffix;
  // Upper bound on a kernel's dynamic shared memory (default: sm_90's 227 KiB
  // opt-in limit; sm_80: 163 KiB). An instance that needs more →
  // ResourceExhausted naming the kernel.
  int64_t max_dynamic_smem_bytes = 227 * 1024;
  // Attention template (split-KV partial kernel): m16 row tiles per warp. 0 = auto (1 when
  // the block has at least as many warps as row tiles, extra warps splitting the KV chunk's
  // columns; else tiles / warps); 1 or 2 forces it (2: a warp's two tiles, of one head, share
  // every K and V fragment it loads from shared memory: half the shared-memory traffic per
  // mma, twice the accumulator registers). Instances the choice does not fit → Unimplemented.
  int attention_tiles_per_warp = 0;
  // Attention template: software-pipeline the forloop (S = Q·K of chunk i+1 is issued before
  // the softmax and P·V of chunk i; 32·tiles-per-warp more registers). Needs stages ≥ 3 (else
  // Unimplemented); with 3 stages only one chunk is in flight ahead of the compute.
  bool attention_pipeline = false;
  // Attention template: lazy rescaling. The running row maximum m (log2 units) moves only
  // when some row of the warp's chunk exceeds it by more than 8, so P = exp2(s - m) ≤ 2^8
  // (f16 keeps the same relative precision) and the Dv/2 accumulator multiplications and two
  // exp2 per tile and chunk are skipped (warp-uniform branch) on most chunks. Exact in real arithmetic:
  // the stored sums are still multiplied back by exp(m). Off by default: no measurable gain on
  // the H200 (docs/codegen.md, 2026-12-01).
  bool attention_lazy_rescale = false;
  // Attention template: P = exp2(s·scale − m) computed as f16 pairs (the f32 arguments rounded
  // to f16, one ex2.approx.f16x2 for two scores: half the MUFU work, no separate f32 → f16
  // packing) and Σ P taken on the tensor cores (P times a ones B fragment: the exact row sums
  // of the f16 P that the E·V matmul multiplies). Rounding the argument x to f16 moves it by at
  // most |x|·2^-11, a relative error of at most 0.7·|x|·2^-11 in P: 0.03 % where P ≥ 1/2,
  // 0.3 % at |x| = 8 (P = 2^±8), well inside the 2 % tolerance of f16 outputs. Off by default:
  // no measurable gain on the H200 (docs/codegen.md, 2026-12-01).
  bool attention_exp_f16x2 = false;
  // sm_90a only: the attention template's two matmuls on warpgroup tensor cores
  // (wgmma.mma_async m64nNk16). Each warpgroup (4 warps) owns a 64-row tile of one head (the
  // warp's m16 A fragments of Q, and of P, stay in registers); K and V are read straight from
  // shared memory by matrix descriptor, staged in the 128-byte-swizzled layout (no ldmatrix),
  // and the warpgroups of the block run their softmax while the tensor cores work for the
  // others. Needs Mq a multiple of 64, threads = 128 · (Gt·Mq/64) · ws, the warpgroup's KV
  // columns (Lc / ws) and Dv multiples of 64 and at most 256, no attention_pipeline, one row
  // tile per warp and no cluster_combine; else Unimplemented naming the unmet condition. The
  // generated source #errors unless compiled for sm_90a (CompileWithNvrtc(…, 90) does).
  bool attention_wgmma = false;
  // attention_wgmma's loop, two reorderings (each needs attention_wgmma and no
  // attention_pipeline; else Unimplemented naming the option):
  //  - late loads: the next stage's cp.async loads are issued after the score wgmma is
  //    committed, so it starts right after the chunk's barrier and the load instructions issue
  //    while it runs (needs stages ≥ 2: the stage refilled was read last by the previous
  //    iteration's wgmmas, which it waited for);
  bool attention_wgmma_late_loads = false;
  //  - split P·V: the exponentials of the chunk's first half of columns, their P·V wgmmas
  //    issued, the second half's exponentials while the tensor cores run, then its wgmmas
  //    (needs no attention_exp_f16x2).
  bool attention_wgmma_split_pv = false;
  // sm_90 only: fold the pointwise combine kernel of a split form into the kernel before it,
  // one thread block cluster per combine block, along the producer's split axis: z for the
  // attention template's split-KV partial kernel (clusters (1, 1, gz)), y for the GEMM
  // template's split-K forms (grid (g, s, 1); clusters (1, s, 1)). The blocks of a cluster keep
  // their partial-result tiles in shared memory instead of storing them, meet at a cluster
  // barrier, then evaluate the combine kernel's elements of their combine block together —
  // rank r takes elements r·T + t, r·T + t + c·T, ... (c blocks per cluster) — reading partial
  // i from rank i's shared memory (distributed shared memory), adding in the same iteration
  // order as the combine kernel (so the output is bit-identical to the two-kernel program's),
  // and meet again before exiting. One kernel and no partial tensors in global memory. Applies
  // to a pair (k, k+1) when: k uses the attention or GEMM template, k+1 the pointwise one
  // without rms; k+1's grid is k's with the split axis set to 1 and its forloop walks k's
  // c ∈ [2, 16] blocks along that axis; every k+1 input written by k is read as k wrote it (same
  // tile; the same grid axes on the same dims; the forloop on the dim of k's split axis) and
  // is used by no other kernel or output. c > 8 needs the driver's non-portable cluster sizes
  // (the runtime and host.h ask for them). No pair qualifies → Unimplemented with the reason
  // for the first candidate pair. The generated source compiles only for sm_90 and newer.
  // On the H200 slower than the two kernels with clusters of four or more, 0.1-0.5 µs faster
  // with clusters of two (docs/performance.md, 2026-12-03); the tuner tries it where the
  // clusters have two blocks.
  bool cluster_combine = false;
  // sm_90: programmatic dependent launch. Every kernel starts with
  // griddepcontrol.launch_dependents (the next kernel in the stream may be scheduled now) and
  // griddepcontrol.wait (nothing before the previous grid has completed and its memory is
  // visible), and is launched with the programmatic stream serialization attribute, so that a
  // kernel's launch and block scheduling overlap the previous kernel's tail — within one
  // program and across back-to-back calls — while every read and write still happens after
  // the previous grid. No-ops on older GPUs (the instructions are compiled out below sm_90).
  bool programmatic_dependent_launch = false;
  // Names of program inputs that no kernel launched before the program in the same stream
  // writes — weights, loaded once (tune::OptimizeOptions::constant_inputs, `prism optimize
  // --constant-inputs`). With programmatic_dependent_launch, a GEMM-template kernel with a
  // pipeline (stages > 1) issues the prologue's loads of these inputs' tiles (and of a constant
  // chained B tile in shared memory, gemm_chained_b_smem) before griddepcontrol.wait, one
  // cp.async group per stage, so that they stream in while the previous grid (the previous
  // call's last kernel) finishes; the other inputs' prologue loads follow the wait. Valid only
  // because nothing running before the wait writes them: a name here that an earlier kernel
  // in the stream does write gives wrong results. Names that are not inputs of the program
  // are ignored, and so is the option by other templates, without PDL and with one stage
  // (the source is then byte-identical to an empty list). On an H100, 0.1–0.5 µs faster on
  // five of the six GEMV rows' selections, even on the sixth (docs/performance.md, 2026-12-07,
  // twenty-third session).
  std::vector<std::string> constant_inputs;
  // GEMM template: split the block's warps along N first — the most warps (a power of two
  // dividing the warp count) that leave every matmul at least two n8 tiles per warp — and the
  // rest along K. Default: along K first, along N only while the K tile has fewer 16-wide
  // chunks than warps. Along N each warp loads its own columns of every k16 chunk and no
  // cross-warp sum is needed when all warps are along N; along K the warps share the columns
  // and sum their partials through shared memory after the loop. (On the H200 the faster of
  // the two depends on the tile: rmsnorm_linear's 16 x 192 x 64 tiles, docs/performance.md.)
  // Other templates ignore it.
  bool gemm_warps_along_n = false;
  // GEMM template, a chained loop matmul acc_sum((X·A)·B) (lora's split form): multiply by B
  // once after the forloop instead of at every k16 chunk. The inner X·A [M, 16] is summed in
  // f32 over the block's whole K range (each warp along K its own chunks), rounded to f16 once,
  // and multiplied by B's fragments into the accumulator before the epilogue:
  // Σ_k round(X_k·A_k)·B becomes round(Σ_k X_k·A_k)·B, equal by distributivity up to the f16
  // rounding of X·A (done once, as PyTorch's (x @ a) @ b does, instead of per chunk). Per k16
  // chunk 2 + n8-tiles mma become 2; eight more f32 registers per m16 tile. Other kernels
  // ignore it.
  bool gemm_defer_chained = false;
  // GEMM template with gemm_defer_chained: B's [16, N] tile of a chained matmul comes into
  // shared memory by cp.async in the pipeline's first commit group (after the stages, the
  // reduction buffer and any kept partial tiles: rows of N + 8 f16), and each warp reads its
  // fragments from there after the forloop. Default: scalar global loads packed into
  // registers after the prologue, which every thread waits for before its first iteration —
  // behind the prologue's stages of every block in the DRAM queues, while the later stages
  // are requested only from inside the loop. InvalidArgument without gemm_defer_chained (the
  // in-loop chained matmul needs the fragments at its first k16 chunk). Other kernels ignore
  // it.
  bool gemm_chained_b_smem = false;
  // sm_90, the f16 / bf16 matmul library kernel (the fallback) when its 64 × 64 output tiles
  // are few: the k steps of each tile are split over a thread block cluster of S blocks along
  // z (S = min(8, ⌊sms / tiles⌋, ⌊k steps / 4⌋), then the fewest blocks that keep ⌈steps / S⌉
  // steps each; sms = balance_residency.sms, or 132 when unset). Each block sums its k range
  // into f32 accumulators, writes them into its own shared memory, the cluster meets, and
  // rank r adds rows ⌈64 / S⌉·r … of all S tiles through distributed shared memory in rank
  // order and stores them; the cluster meets again before exiting. One kernel, no workspace,
  // deterministic; the sum's grouping (per k range, then across ranks) differs from the
  // unsplit kernel's, within the f16 / bf16 tolerance. Where S would be 1 (at least sms / 2
  // tiles, or fewer than 8 k steps) the kernel is the unsplit one, byte for byte. The split
  // source compiles only for sm_90 and newer. Other kernels ignore it.
  bool library_matmul_cluster_split = false;
  // With library_matmul_cluster_split: how many of the split kernel's blocks an SM may hold, 1
  // or 2 (else InvalidArgument from GenerateCuda). With 2 the split fills two blocks per SM:
  // S = min(16, ⌊2 · sms / tiles⌋, ⌊k steps / 4⌋) (clusters of more than 8 blocks are launched
  // with the non-portable size permission), so each SM has twice the k steps' bytes in flight
  // (a block's four cp.async stages alone kept the split kernels at 0.66 TB/s on the H100,
  // docs/performance.md, 2026-12-07); it also splits 67 to 132 tiles, which 1 leaves whole.
  // Ignored without library_matmul_cluster_split.
  int library_matmul_split_blocks_per_sm = 1;
  // Spread each kernel's blocks evenly over the GPU's SMs (off while sms == 0). A grid that
  // fits in one wave is not always spread evenly by the block scheduler: on the H200, 256
  // blocks of a kernel that fits three per SM ran in 20.0 µs, and in 16.6 µs when at most two
  // fit (gqa b=8, docs/performance.md). With c = ceil(B / sms) for a grid of B blocks, a kernel
  // that stages tiles in dynamic shared memory, and whose shared memory would let c + 1 of its
  // blocks share an SM, gets its dynamic shared memory raised to
  // smem_per_sm / (c + 1) − smem_reserved_per_block + 1 bytes (unused padding, recorded in
  // LaunchConfig::residency_pad_bytes): no SM can hold more than c of its blocks, and the rest
  // of the SM's shared memory stays free for the next kernel's blocks. Never more than
  // max_dynamic_smem_bytes; kernels without dynamic shared memory (the pointwise template) and
  // cluster launches (cluster_combine: a cluster's blocks must be co-resident in one GPC) are
  // left as they are, and so is a grid of more waves than its occupancy allows (c is then at
  // least that occupancy, so the padding changes nothing). Fill it from the target
  // (smt::Target's sms, smem_per_sm, smem_reserved_per_block).
  struct Residency {
    int64_t sms = 0;
    int64_t smem_per_sm = 0;
    int64_t smem_reserved_per_block = 0;
  };
  Residency balance_residency;
};

// How to launch one generated kernel.
struct LaunchConfig {
  std::string kernel;    // the kernel's name ("k0")
  std::string function;  // the extern "C" __global__ name
  // The launch grid: the graph's (gx, gy, gz), except for pointwise kernels (gx, gy, gz·P) and
  // library kernels (concat and the fibre ops: (blocks, 1, 1), see above).
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t threads = 0;             // blockDim.x (blockDim.y = blockDim.z = 1)
  // Thread block cluster dimensions: {1, 1, 1} (no cluster) unless the kernel has a combine
  // kernel folded in (CodegenOptions::cluster_combine); launch with the cluster attribute.
  std::array<int64_t, 3> cluster = {1, 1, 1};
  // Launch with the programmatic stream serialization attribute
  // (CodegenOptions::programmatic_dependent_launch).
  bool programmatic = false;
  int64_t dynamic_smem_bytes = 0;  // needs cudaFuncAttributeMaxDynamicSharedMemorySize > 48 KiB
  // Of dynamic_smem_bytes, the padding that caps the blocks per SM
  // (CodegenOptions::balance_residency); the kernel uses the rest.
  int64_t residency_pad_bytes = 0;
  // Kernel tensor indices (BlockProgram::tensors) passed as the kernel's
  // pointer arguments, in order; `written[i]` says whether argument i is
  // written (else read only).
  std::vector<int> args;
  std::vector<bool> written;
  // The generator's own accounting, for the resource audit (audit.h).
  int64_t stage_bytes = 0;       // one pipeline stage (padded tiles)
  // After-loop cross-warp reduction buffer (block kernels: dynamic, aliases stages; a fibre
  // library kernel: its static combine buffer, the launch's dynamic shared memory staying 0).
  int64_t reduction_bytes = 0;
  int64_t accumulator_regs = 0;  // f32 accumulator registers per thread
};

struct GeneratedCode {
  std::string source;                  // kernel.cu: self-contained CUDA C++ (NVRTC or nvcc), sm_80+
  std::string launch_json;             // launch.json: {"program", "kernels": [{"function",
                                       // "grid", ...}]}
  std::string host_header;             // host.h: launch helpers; include after kernel.cu in
                                       // an nvcc TU
  std::vector<LaunchConfig> launches;  // one per kernel, in program order
};

// Generates code for every kernel of `program`. Unimplemented (see above),
// ResourceExhausted (shared memory over options.max_dynamic_smem_bytes, or a concat result over
// 2^31 − 1 elements) or InvalidArgument (a malformed program, options.attention_tiles_per_warp
// not 0, 1 or 2, or options.library_matmul_split_blocks_per_sm not 1 or 2).
absl::StatusOr<GeneratedCode> GenerateCuda(const BlockProgram& program,
                                           const CodegenOptions& options = {});

// The text of kernels/prism/device_common.cuh (inlined into every generated
// source).
const std::string& DeviceCommonSource();

// Whether GenerateCuda would emit one of `program`'s kernels with the attention template (a
// block graph whose matmul result is exponentiated inside the forloop: a split-KV partial
// kernel; not the online-softmax forms, which exponentiate S − m), i.e. whether the
// attention_* options can change its code. Depends only on the kernels' op structure, so it
// is the same for every instance of an sGraph family.
bool HasAttentionKernel(const BlockProgram& program);

// Whether one of `program`'s kernels is a matmul library kernel (the fallback), i.e. whether
// library_matmul_cluster_split (and library_matmul_split_blocks_per_sm) can change its code.
// The same for every instance of a family.
bool HasLibraryMatmul(const BlockProgram& program);

}  // namespace prism::codegen

#endif  // PRISM_CODEGEN_CODEGEN_H_
