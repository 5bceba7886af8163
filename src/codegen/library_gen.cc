// Library kernels (gen_util.h GenerateLibraryKernel): a kernel that runs one Program op on
// whole tensors (block_graph.h LibraryKernel). concat and the fibre ops sum, max, mean, softmax
// and rms_norm are generated here; unary, binary and matmul ops in library_ops_gen.cc.
//
// concat(x_0, …, x_{p-1}, dim) is pure data movement. With outer = the product of the dims
// before `dim` and inner_i = the product of x_i's dims from `dim` on, operand i is a row-major
// [outer, inner_i] matrix and the result the [outer, W] matrix (W = Σ inner_i) whose row r is
// the rows r of x_0, …, x_{p-1} one after another. The kernel walks the result's units in order
// — 16-byte vectors (U32x4) when every inner_i · bytes is a multiple of 16, else single
// elements — and copies unit e from its operand: row = e / W, col = e − row·W, the operand i
// with off_i ≤ col < off_i + inner_i (off_i = Σ_{j<i} inner_j, compile-time constants compared
// in order), at row·inner_i + col − off_i. Every tensor is 16-byte aligned (host.h; the runtime
// allocates each one separately), so with the vector condition every row of every operand and
// every part of a result row starts on a 16-byte boundary. Stores are fully coalesced; each
// operand is read in contiguous runs of its row.
//
// Launch: kConcatThreads threads per block, ⌈units / kConcatThreads⌉ blocks capped at
// kConcatMaxBlocks (one wave of 4 blocks on each of the H100's / H200's 132 SMs), a grid-stride
// loop whose every step issues up to kConcatUnroll loads before their stores (kConcatUnroll
// units in flight per thread on large copies); no shared memory. Indices are 32-bit unsigned:
// results of more than 2^31 − 1 elements are refused (ResourceExhausted), which keeps every
// index below 2^31 + kConcatUnroll · (the launch's grid) · kConcatThreads < 2^32.
//
// sum, max, mean, softmax and rms_norm(x, dim) act on the fibres of x along `dim`
// (docs/ir_semantics.md §2). With outer = the product of the dims before `dim`, n = x's extent
// along it and inner = the product of the dims after it, x is a row-major [outer, n, inner]
// array and fibre f = o·inner + i (o < outer, i < inner) the n elements at
// base_f + k·inner, base_f = o·n·inner + i. Each fibre is split over several threads of one
// block, each folding its share in increasing k from the op's identity in f32 (sum +0, max
// −inf with `if (v > a || v != v) a = v`, a NaN kept), and the partials are combined in a fixed
// order (below), so a result is deterministic but is not §3.3's sequential order bit for bit:
// the same f32 arithmetic summed in another order (the emulator stays the sequential
// reference; codegen_gpu_test's bound covers the difference). sum / max / mean store element f
// of the keepdim result ([outer, 1, inner]; mean = sum / f32(n)); softmax reads the fibre three
// times (max m, Σ expf(x − m), then round(expf(x − m) / Σ) stored), rms_norm twice (Σ x² as
// fmaf, then round(x · inv), inv = 1 / sqrtf(Σx² / f32(n) + f32(eps))); between passes the
// statistic is combined over the fibre's threads and broadcast to them.
//
// Layout rule (ChooseFibreLayout; P(x) = the smallest power of two ≥ x, bytes = the dtype's):
// - Row mode, inner = 1 (the fibre is contiguous): one warp per fibre, kFibreRowWarps = 8
//   fibres per 256-thread block, grid ⌈outer / 8⌉; lane l folds units k = l, l + 32, … of its
//   fibre, a unit being V = 16 / bytes elements (one 16-byte load) when n is a multiple of V,
//   else one element (V = 1). Combine: the V partials of a lane pairwise (at h = V/2, …, 1
//   element j < h takes j + h), then a xor butterfly over the warp (offsets 16, 8, 4, 2, 1),
//   lane 0's value broadcast by a shuffle. No shared memory.
// - Column mode, inner > 1: V = 16 / bytes when inner is a multiple of it, else 1; a column
//   group is V fibres adjacent in memory (fibres g·V … g·V + V − 1, one 16-byte unit per k),
//   G = outer·inner / V of them. A block is C groups × S threads along k (C·S = 256, thread
//   (c, s) = threadIdx c + C·s, so a warp's lanes read C adjacent units at each of 32 / C
//   values of k); thread (c, s) folds k = s, s + S, … with V accumulators. With
//   Cw = min(P(G), max(1, 32 / (V·bytes))) — the groups that fill a 32-byte sector, fewer
//   when there are fewer groups — S = min(256 / Cw, P(n), P(⌈kFibreFillThreads / G⌉)),
//   C = 256 / S, grid ⌈G / C⌉: C ≥ Cw keeps a warp row on whole sectors; S fills the GPU
//   (kFibreFillThreads = 132 SMs × 1024 threads) when the groups are few and n is long; S ≤
//   P(n) leaves no block of mostly idle k-threads; no more blocks than ⌈G / C⌉. Combine: the
//   partials into a static shared buffer red[V][256] (red[j][c + C·s]: conflict-free), then a
//   pairwise tree over s (at h = S/2, …, 1 thread (c, s < h) takes (c, s + h), a
//   __syncthreads per step), (c, 0)'s value read by all S threads (and one more
//   __syncthreads before softmax's second combine writes the buffer). With S = 1 no shared
//   memory. The buffer's size (V · 256 · 4 bytes, at most 8 KiB) is the launch's
//   reduction_bytes (static: the launch's dynamic shared memory stays 0), which the resource
//   audit checks against ptxas.
// Every fold loop issues kFibreUnrollVector = 4 (16-byte units) or kFibreUnrollScalar = 8
// (elements) independent loads before folding them. Tensors are 16-byte aligned (host.h: each
// is allocated separately), so with inner % V = 0 (columns) or n % V = 0 (rows) every unit
// address o·n·inner + k·inner + g·V (resp. r·n + k·V) is a multiple of V elements: aligned.
//
// Launch: 256 threads, the grid above, no dynamic shared memory; PDL and name_suffix as for
// concat. 32-bit unsigned indices: an operand of more than 2^31 − 1 elements is refused
// (ResourceExhausted). Then, in units: every real index o·n·inner_u + k·inner_u + i (columns) or
// r·n_u + k (rows) is below 2^31; k0 + u·step < n + 7·256 < 2^32 (k0 < n, u < 8, step ≤ 256);
// k0 + unroll·step likewise; the group g = blockIdx·C + c < G + 256 < 2^32 (an idle group,
// g ≥ G, folds and stores nothing, and its pointers are group 0's); the row r = blockIdx·8 +
// warp < outer + 8 (an idle warp returns before any index).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gen_util.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {

constexpr int64_t kConcatThreads = 256;
constexpr int64_t kConcatMaxBlocks = 132 * 4;
constexpr int64_t kConcatUnroll = 4;
constexpr int64_t kFibreThreads = 256;
constexpr int64_t kFibreFillThreads = 132 * 1024;  // threads that fill an H100 / H200
constexpr int64_t kFibreRowWarps = kFibreThreads / 32;  // row mode: fibres per block
constexpr int64_t kFibreUnrollVector = 4;  // loads in flight per thread: 16-byte units
constexpr int64_t kFibreUnrollScalar = 8;  //                             single elements
// Both kernels index with 32 bits.
constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();


// The concat kernel (file comment) of library kernel `kname`.
absl::StatusOr<LaunchConfig> GenerateConcat(const BlockProgram& p, const std::string& kname,
                                            const LibraryKernel& lk, const CodegenOptions& options,
                                            std::string& source) {
  auto malformed = [&kname](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname, ": concat: ", what));
  };
  const int nt = static_cast<int>(p.tensors.size());
  if (lk.operands.size() < 2) {
    return malformed(absl::StrCat("takes at least 2 operands, found ", lk.operands.size()));
  }
  for (int t : lk.operands) {
    if (t < 0 || t >= nt) return malformed(absl::StrCat("operand index ", t, " is out of range"));
    if (t == lk.result) {
      return malformed(absl::StrCat("the result ", p.tensors[t].name, " is also an operand"));
    }
  }
  if (lk.result < 0 || lk.result >= nt) {
    return malformed(absl::StrCat("result index ", lk.result, " is out of range"));
  }
  const ConcreteTensor& out = p.tensors[lk.result];
  const ConcreteTensor& first = p.tensors[lk.operands[0]];
  const int rank = static_cast<int>(first.shape.size());
  if (rank < 1) return malformed(absl::StrCat(first.name, " has rank 0"));
  if (lk.dim < -rank || lk.dim >= rank) {
    return malformed(absl::StrCat("dim ", lk.dim, " is out of range for rank ", rank));
  }
  const int dim = static_cast<int>(lk.dim < 0 ? lk.dim + rank : lk.dim);
  // The result's shape from the operands', checked against the tensor's (docs/ir_semantics.md §2).
  Shape want = first.shape;
  want[dim] = 0;
  for (int t : lk.operands) {
    const ConcreteTensor& x = p.tensors[t];
    if (x.dtype != first.dtype) {
      return malformed(absl::StrCat(x.name, " is ", DTypeName(x.dtype), " but ", first.name,
                                    " is ", DTypeName(first.dtype)));
    }
    if (static_cast<int>(x.shape.size()) != rank) {
      return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " and ", first.name, " ",
                                    LibraryShapeText(first.shape), " differ in rank"));
    }
    for (int d = 0; d < rank; ++d) {
      if (x.shape[d] < 1) {
        return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " has an empty dim"));
      }
      if (d != dim && x.shape[d] != first.shape[d]) {
        return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " and ", first.name, " ",
                                      LibraryShapeText(first.shape), " differ outside dim ", dim));
      }
    }
    want[dim] += x.shape[dim];
  }
  if (out.dtype != first.dtype || out.shape != want) {
    return malformed(absl::StrCat("the result ", out.name, " is ", DTypeName(out.dtype), " ",
                                  LibraryShapeText(out.shape), ", expected ", DTypeName(first.dtype),
                                  " ", LibraryShapeText(want)));
  }
  absl::StatusOr<std::string> elem = DeviceElemType(out);
  if (!elem.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("codegen: kernel ", kname, ": ", elem.status().message()));
  }
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, "concat result", out));

  // [outer, inner_i] views; the vector condition.
  const int64_t bytes = DTypeBytes(out.dtype);
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= out.shape[d];
  std::vector<int64_t> inner;
  bool vec = true;
  for (int t : lk.operands) {
    int64_t n = 1;
    for (int d = dim; d < rank; ++d) n *= p.tensors[t].shape[d];
    inner.push_back(n);
    vec = vec && (n * bytes) % 16 == 0;
  }
  const int64_t per_unit = vec ? 16 / bytes : 1;  // elements per copied unit
  int64_t row = 0;                                // result units per row (W)
  for (int64_t& n : inner) {
    n /= per_unit;
    row += n;
  }
  const int64_t units = outer * row;
  const int64_t blocks =
      std::clamp<int64_t>((units + kConcatThreads - 1) / kConcatThreads, 1, kConcatMaxBlocks);

  LaunchConfig launch = LibraryLaunch(p, kname, options, {blocks, 1, 1}, kConcatThreads);
  // Parameters: each operand tensor once, in operand order, then the result.
  std::vector<std::string> params;
  for (int t : lk.operands) {
    if (std::find(launch.args.begin(), launch.args.end(), t) != launch.args.end()) continue;
    launch.args.push_back(t);
    launch.written.push_back(false);
    params.push_back(absl::StrCat("const ", *elem, "* __restrict__ ", ParamName(p, t)));
  }
  launch.args.push_back(lk.result);
  launch.written.push_back(true);
  params.push_back(absl::StrCat(*elem, "* __restrict__ ", ParamName(p, lk.result)));

  const std::string unit = vec ? "prism_dev::U32x4" : *elem;
  const char* unit_name = vec ? "16-byte vectors" : "elements";
  std::vector<std::string> parts, counts;
  for (size_t i = 0; i < lk.operands.size(); ++i) {
    const ConcreteTensor& x = p.tensors[lk.operands[i]];
    parts.push_back(absl::StrCat(x.name, " ", LibraryShapeText(x.shape)));
    counts.push_back(absl::StrCat(inner[i]));
  }
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname, ": library kernel concat(", absl::StrJoin(parts, ", "),
                  ", dim ", dim, ") -> ", out.name, " ", DTypeName(out.dtype), " ",
                  LibraryShapeText(out.shape), "; ", outer, " row(s) of ", absl::StrJoin(counts, " + "),
                  " = ", row, " ", unit_name, ", ", units, " in all; grid ", blocks, ", ",
                  kConcatThreads, " threads, grid-stride, ", kConcatUnroll,
                  " units in flight per thread and step\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", kConcatThreads, ") ",
                  launch.function, "(", absl::StrJoin(params, ", "), ") {\n");
  absl::StrAppend(&s, KernelPrologue(options));
  absl::StrAppend(&s, "  constexpr unsigned ",
                  outer == 1 ? std::string() : absl::StrCat("kRow = ", row, "u, "), "kUnits = ",
                  units, "u;  // ", unit_name, "\n");
  for (size_t i = 0; i < lk.operands.size(); ++i) {
    absl::StrAppend(&s, "  const ", unit, "* __restrict__ src", i, " = reinterpret_cast<const ",
                    unit, "*>(", ParamName(p, lk.operands[i]), ");  // ", inner[i], " per row\n");
  }
  absl::StrAppend(&s, "  ", unit, "* __restrict__ dst = reinterpret_cast<", unit, "*>(",
                  ParamName(p, lk.result), ");\n");
  absl::StrAppend(&s, "  const unsigned stride = gridDim.x * ", kConcatThreads, "u;\n");
  absl::StrAppend(&s, "  for (unsigned e0 = blockIdx.x * ", kConcatThreads,
                  "u + threadIdx.x; e0 < kUnits; e0 += ", kConcatUnroll, "u * stride) {\n");
  absl::StrAppend(&s, "    ", unit, " v[", kConcatUnroll, "];\n#pragma unroll\n",
                  "    for (int j = 0; j < ", kConcatUnroll, "; ++j) {\n",
                  "      const unsigned e = e0 + j * stride;\n      if (e >= kUnits) break;\n");
  // The operand of column `col` and the unit's index in it.
  if (outer == 1) {
    absl::StrAppend(&s, "      const unsigned col = e;\n");
  } else {
    absl::StrAppend(&s, "      const unsigned r = e / kRow, col = e - r * kRow;\n");
  }
  int64_t off = 0;
  for (size_t i = 0; i < lk.operands.size(); ++i) {
    const bool last = i + 1 == lk.operands.size();
    const std::string c = off == 0 ? std::string("col") : absl::StrCat("col - ", off, "u");
    const std::string index =
        outer == 1 ? c : absl::StrCat("r * ", inner[i], "u + ", off == 0 ? c : "(" + c + ")");
    if (i == 0) {
      absl::StrAppend(&s, "      if (col < ", off + inner[i], "u) {\n");
    } else if (!last) {
      absl::StrAppend(&s, "      } else if (col < ", off + inner[i], "u) {\n");
    } else {
      absl::StrAppend(&s, "      } else {\n");
    }
    absl::StrAppend(&s, "        v[j] = src", i, "[", index, "];\n");
    off += inner[i];
  }
  absl::StrAppend(&s, "      }\n    }\n#pragma unroll\n    for (int j = 0; j < ", kConcatUnroll,
                  "; ++j) {\n      const unsigned e = e0 + j * stride;\n"
                  "      if (e >= kUnits) break;\n      dst[e] = v[j];\n    }\n  }\n}\n");
  source += s;
  return launch;
}


// The smallest power of two at least x (x ≥ 1).
int64_t Pow2AtLeast(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// The fibre kernel's layout (file comment, "Layout rule").
struct FibreLayout {
  bool rows = false;         // row mode (inner = 1), else column mode
  int64_t v = 1;             // elements per unit: 16 / bytes, or 1
  int64_t groups = 0;        // column mode: outer · inner / V column groups
  int64_t cw = 1;            // column mode: the sector width in groups, min(P(groups), 32 / (V·bytes))
  int64_t c = 1, s = 1;      // column mode: C groups × S threads along k, C · S = 256
  int64_t blocks = 1;        // the grid
  int64_t unroll = 1;        // loads in flight per thread and step
  int64_t shared_bytes = 0;  // the static shared buffer (column mode with S > 1)
};

FibreLayout ChooseFibreLayout(int64_t outer, int64_t n, int64_t inner, int64_t bytes) {
  FibreLayout l;
  const int64_t per16 = 16 / bytes;
  l.rows = inner == 1;
  l.v = (l.rows ? n : inner) % per16 == 0 ? per16 : 1;
  l.unroll = l.v > 1 ? kFibreUnrollVector : kFibreUnrollScalar;
  if (l.rows) {
    l.blocks = (outer + kFibreRowWarps - 1) / kFibreRowWarps;
    return l;
  }
  l.groups = outer * inner / l.v;
  l.cw = std::min(Pow2AtLeast(l.groups), std::max<int64_t>(1, 32 / (l.v * bytes)));
  l.s = std::min({kFibreThreads / l.cw, Pow2AtLeast(n),
                  Pow2AtLeast((kFibreFillThreads + l.groups - 1) / l.groups)});
  l.c = kFibreThreads / l.s;
  l.blocks = (l.groups + l.c - 1) / l.c;
  l.shared_bytes = l.s > 1 ? l.v * kFibreThreads * 4 : 0;
  return l;
}

// Whether `op` is a fibre op (file comment) and, if so, whether it keeps the extent (softmax,
// rms_norm) rather than reducing it to 1 (sum, max, mean).
bool IsFibreOp(OpKind op) {
  return op == OpKind::kSum || op == OpKind::kMax || op == OpKind::kMean ||
         op == OpKind::kSoftmax || op == OpKind::kRmsNorm;
}

// The fibre kernel (file comment) of library kernel `kname`: sum, max, mean, softmax, rms_norm.
absl::StatusOr<LaunchConfig> GenerateFibreOp(const BlockProgram& p, const std::string& kname,
                                             const LibraryKernel& lk,
                                             const CodegenOptions& options, std::string& source) {
  const std::string op_name(GetOpInfo(lk.op).name);
  auto malformed = [&kname, &op_name](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen: kernel ", kname, ": ", op_name, ": ", what));
  };
  const int nt = static_cast<int>(p.tensors.size());
  if (lk.operands.size() != 1) {
    return malformed(absl::StrCat("takes 1 operand, found ", lk.operands.size()));
  }
  const int xt = lk.operands[0];
  if (xt < 0 || xt >= nt) return malformed(absl::StrCat("operand index ", xt, " is out of range"));
  if (lk.result < 0 || lk.result >= nt) {
    return malformed(absl::StrCat("result index ", lk.result, " is out of range"));
  }
  const ConcreteTensor& x = p.tensors[xt];
  const ConcreteTensor& out = p.tensors[lk.result];
  if (xt == lk.result) return malformed(absl::StrCat("the result ", out.name, " is also the operand"));
  const int rank = static_cast<int>(x.shape.size());
  if (rank < 1) return malformed(absl::StrCat(x.name, " has rank 0"));
  if (lk.dim < -rank || lk.dim >= rank) {
    return malformed(absl::StrCat("dim ", lk.dim, " is out of range for rank ", rank));
  }
  const int dim = static_cast<int>(lk.dim < 0 ? lk.dim + rank : lk.dim);
  for (int64_t d : x.shape) {
    if (d < 1) return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " has an empty dim"));
  }
  const bool reduces = lk.op == OpKind::kSum || lk.op == OpKind::kMax || lk.op == OpKind::kMean;
  Shape want = x.shape;
  if (reduces) want[dim] = 1;
  if (out.dtype != x.dtype || out.shape != want) {
    return malformed(absl::StrCat("the result ", out.name, " is ", DTypeName(out.dtype), " ",
                                  LibraryShapeText(out.shape), ", expected ", DTypeName(x.dtype), " ",
                                  LibraryShapeText(want)));
  }
  if (lk.op == OpKind::kRmsNorm && !(std::isfinite(lk.eps) && lk.eps >= 0)) {
    return malformed(absl::StrCat("eps ", lk.eps, " is not finite and at least 0"));
  }
  absl::StatusOr<std::string> elem = DeviceElemType(x);
  if (!elem.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("codegen: kernel ", kname, ": ", elem.status().message()));
  }
  // The operand is the larger tensor.
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, absl::StrCat(op_name, " operand"), x));

  // The [outer, n, inner] view.
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int d = dim + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t n = x.shape[dim];
  const int64_t fibres = outer * inner;
  const FibreLayout lay = ChooseFibreLayout(outer, n, inner, DTypeBytes(x.dtype));
  const int64_t V = lay.v;

  LaunchConfig launch = LibraryLaunch(p, kname, options, {lay.blocks, 1, 1}, kFibreThreads);
  launch.args = {xt, lk.result};
  launch.written = {false, true};
  launch.reduction_bytes = lay.shared_bytes;  // static here: a library kernel has no dynamic smem
  const std::string xp = ParamName(p, xt), yp = ParamName(p, lk.result);

  const Half16* h = Half16Of(x.dtype);
  const std::string unit = V > 1 ? std::string("prism_dev::U32x4") : *elem;
  auto rounded = [&](const std::string& v) {
    return h != nullptr ? absl::StrCat("prism_dev::", h->from_f32, "(", v, ")") : v;
  };
  // f[0 .. V-1] = the f32 values of unit ld[u], element j of a 16-byte unit in bits 16·(j & 1)
  // of word j / 2 (f16, bf16) or word j (f32).
  auto unpack = [&](const std::string& ind) {
    if (V == 1) {
      const std::string e = h != nullptr ? absl::StrCat("prism_dev::", h->to_f32, "(ld[u])")
                                         : std::string("ld[u]");
      return absl::StrCat(ind, "const float f[1] = {", e, "};\n");
    }
    if (h == nullptr) {
      return absl::StrCat(ind, "const float f[4] = {__uint_as_float(ld[u].x), "
                          "__uint_as_float(ld[u].y), __uint_as_float(ld[u].z), "
                          "__uint_as_float(ld[u].w)};\n");
    }
    return absl::StrCat(ind, "const prism_dev::u32_t w[4] = {ld[u].x, ld[u].y, ld[u].z, ld[u].w};\n",
                        ind, "float f[8];\n#pragma unroll\n", ind,
                        "for (int j = 0; j < 8; ++j) f[j] = prism_dev::", h->to_f32,
                        "(static_cast<prism_dev::", h->type,
                        ">((w[j >> 1] >> (16 * (j & 1))) & 0xffffu));\n");
  };
  // `dst` = the unit of r[0 .. V-1], each rounded to the dtype.
  auto pack = [&](const std::string& dst) {
    if (V == 1) return absl::StrCat(dst, " = ", rounded("r[0]"), ";\n");
    if (h == nullptr) {
      return absl::StrCat(dst, " = prism_dev::U32x4{__float_as_uint(r[0]), __float_as_uint(r[1]), "
                          "__float_as_uint(r[2]), __float_as_uint(r[3])};\n");
    }
    const std::string pk = absl::StrCat("prism_dev::", h->pack2);
    return absl::StrCat(dst, " = prism_dev::U32x4{", pk, "(r[0], r[1]), ", pk, "(r[2], r[3]), ",
                        pk, "(r[4], r[5]), ", pk, "(r[6], r[7])};\n");
  };
  // The fold of the thread's units, by mode: first unit, step, end, the unit's index.
  const bool rows = lay.rows;
  const std::string k_first = rows ? "lane" : "k_first";
  const std::string step = rows ? "32u" : "kS";
  const std::string k_end = rows ? "kUnits" : "kN";
  const std::string at = rows ? "k" : "k * kInnerU";
  // Statistic `name` for element j of a unit: one per fibre of the unit (columns), one for
  // the unit's fibre (rows).
  auto stat = [&](const std::string& name) {
    return rows ? name : absl::StrCat(name, "[j]");
  };
  // The loop over the thread's units in increasing k, kUnroll loads issued before their use;
  // `body` runs per unit with f[0 .. V-1] (and k) in scope.
  auto unit_loop = [&](const std::string& body) {
    return absl::StrCat(
        "  for (unsigned k0 = ", k_first, "; k0 < ", k_end, "; k0 += ", lay.unroll, "u * ", step,
        ") {\n    ", unit, " ld[", lay.unroll, "];\n#pragma unroll\n    for (int u = 0; u < ",
        lay.unroll, "; ++u) {\n      const unsigned k = k0 + u * ", step, ";\n      if (k >= ",
        k_end, ") break;\n      ld[u] = x[", at, "];\n    }\n#pragma unroll\n    for (int u = 0; u < ",
        lay.unroll, "; ++u) {\n      const unsigned k = k0 + u * ", step, ";\n      if (k >= ", k_end,
        ") break;\n", unpack("      "), body, "      (void)k;\n    }\n  }\n");
  };
  // comb(r, b): r = r ⊕ b for sums, the NaN-keeping max for maxima.
  auto comb = [](bool is_max, const std::string& r, const std::string& b) {
    return is_max ? absl::StrCat("if (", b, " > ", r, " || ", b, " != ", b, ") ", r, " = ", b, ";")
                  : absl::StrCat(r, " = ", r, " + ", b, ";");
  };
  std::string s;
  // One fold pass into statistic `name` (declared by the caller): per-thread partials a[j] from
  // `init`, `fold` per element (v = f[j]), then the combine over the fibre's threads and the
  // broadcast; `reuse`: another combine follows (the shared buffer is written again).
  auto fold_pass = [&](const std::string& name, const char* what, const std::string& init,
                       const std::string& fold, bool is_max, bool reuse) {
    absl::StrAppend(&s, "  float ", name, rows ? "" : absl::StrCat("[", V, "]"), ";  // ", what,
                    "\n  {\n    float a[", V, "];\n#pragma unroll\n    for (int j = 0; j < ", V,
                    "; ++j) a[j] = ", init, ";\n");
    std::string loop = unit_loop(absl::StrCat("#pragma unroll\n      for (int j = 0; j < ", V,
                                              "; ++j) {\n        const float v = f[j];\n        ",
                                              fold, "\n      }\n"));
    // Indent the loop into the block.
    for (size_t i = 0; i < loop.size();) {
      size_t e = loop.find('\n', i);
      std::string line = loop.substr(i, e - i);
      absl::StrAppend(&s, line.rfind("#pragma", 0) == 0 ? "" : "  ", line, "\n");
      i = e + 1;
    }
    if (rows) {
      if (V > 1) {
        absl::StrAppend(&s, "#pragma unroll\n    for (int h = ", V / 2,
                        "; h > 0; h /= 2) {  // the unit's partials pairwise\n#pragma unroll\n"
                        "      for (int j = 0; j < h; ++j) ",
                        comb(is_max, "a[j]", "a[j + h]"), "\n    }\n");
      }
      absl::StrAppend(&s, "#pragma unroll\n    for (int off = 16; off > 0; off /= 2) {  // xor "
                      "butterfly over the warp\n      const float b = __shfl_xor_sync(0xffffffffu, "
                      "a[0], off);\n      ", comb(is_max, "a[0]", "b"), "\n    }\n    ", name,
                      " = __shfl_sync(0xffffffffu, a[0], 0);  // lane 0's value\n  }\n");
      return;
    }
    if (lay.s == 1) {
      absl::StrAppend(&s, "#pragma unroll\n    for (int j = 0; j < ", V, "; ++j) ", name,
                      "[j] = a[j];  // one thread per column group\n  }\n");
      return;
    }
    absl::StrAppend(
        &s, "    // pairwise tree over s: at h = kS / 2, ..., 1 thread (c, s < h) takes (c, s + h)\n",
        "#pragma unroll\n    for (int j = 0; j < ", V,
        "; ++j) red[j][threadIdx.x] = a[j];\n    __syncthreads();\n#pragma unroll\n"
        "    for (unsigned h = kS / 2u; h > 0u; h /= 2u) {\n      if (s < h) {\n#pragma unroll\n"
        "        for (int j = 0; j < ", V, "; ++j) {\n          const float b = red[j][threadIdx.x + h * kC];\n          ",
        comb(is_max, "a[j]", "b"), "\n          red[j][threadIdx.x] = a[j];\n        }\n      }\n"
        "      __syncthreads();\n    }\n#pragma unroll\n    for (int j = 0; j < ", V, "; ++j) ",
        name, "[j] = red[j][c];  // (c, 0)'s value\n");
    if (reuse) absl::StrAppend(&s, "    __syncthreads();  // before red is written again\n");
    absl::StrAppend(&s, "  }\n");
  };
  // A store pass: y's unit k from r[j] = `value` (v = f[j]).
  auto store_pass = [&](const std::string& value) {
    const std::string body = absl::StrCat(
        "      float r[", V, "];\n#pragma unroll\n      for (int j = 0; j < ", V,
        "; ++j) {\n        const float v = f[j];\n        r[j] = ", value, ";\n      }\n      ",
        pack(absl::StrCat("y[", at, "]")));
    absl::StrAppend(&s, unit_loop(body));
  };
  // The reduction's result: y's unit of the column group (columns) or element r (rows).
  auto store_result = [&](const std::string& value) {
    if (rows) {
      absl::StrAppend(&s, "  if (lane == 0u) ", yp, "[r] = ", rounded(value), ";\n");
      return;
    }
    absl::StrAppend(&s, "  if (s == 0u && live) {\n    float r[", V,
                    "];\n#pragma unroll\n    for (int j = 0; j < ", V, "; ++j) r[j] = ", value,
                    ";\n    ", pack(V > 1 ? absl::StrCat("reinterpret_cast<", unit, "*>(", yp, ")[g]")
                                         : absl::StrCat(yp, "[g]")),
                    "  }\n");
  };

  // The comment line: the view, the mode and its rule, the launch.
  absl::StrAppend(&s, "// kernel ", kname, ": library kernel ", op_name, "(", x.name, " ",
                  DTypeName(x.dtype), " ", LibraryShapeText(x.shape), ", dim ", dim);
  if (lk.op == OpKind::kRmsNorm) absl::StrAppend(&s, ", eps ", FloatLit(lk.eps));
  absl::StrAppend(&s, ") -> ", out.name, " ", LibraryShapeText(out.shape), "; viewed as [", outer, ", ",
                  n, ", ", inner, "]: ", fibres, " fibre(s) of ", n, " at stride ", inner, "; ");
  const char* units = V > 1 ? "16-byte units of V" : "elements, V";
  if (rows) {
    absl::StrAppend(&s, "row mode: one warp per fibre, ", kFibreRowWarps,
                    " per block, lanes along k in ", units, " = ", V, " (", n / V,
                    " per fibre), xor-butterfly combine; grid ceil(", outer, " / ", kFibreRowWarps,
                    ") = ", lay.blocks);
  } else {
    absl::StrAppend(&s, "column mode: ", units, " = ", V, ", ", lay.groups,
                    " column group(s) of V fibres; S = min(256 / ", lay.cw, ", P(n) ",
                    Pow2AtLeast(n), ", P(ceil(", kFibreFillThreads, " / ", lay.groups, ")) ",
                    Pow2AtLeast((kFibreFillThreads + lay.groups - 1) / lay.groups), ") = ", lay.s,
                    " threads along k, C = 256 / S = ", lay.c, " groups per block",
                    lay.s > 1 ? ", pairwise-tree combine in shared memory" : "",
                    "; grid ceil(", lay.groups, " / ", lay.c, ") = ", lay.blocks);
  }
  absl::StrAppend(&s, ", ", kFibreThreads, " threads, ", lay.unroll,
                  " loads in flight per thread\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", kFibreThreads, ") ",
                  launch.function, "(const ", *elem, "* __restrict__ ", xp, ", ", *elem,
                  "* __restrict__ ", yp, ") {\n");
  absl::StrAppend(&s, KernelPrologue(options));
  auto cast = [&](const std::string& ptr, bool is_const) {
    if (V == 1) return ptr;
    return absl::StrCat("reinterpret_cast<", is_const ? "const " : "", unit, "*>(", ptr, ")");
  };
  std::string base;
  if (rows) {
    absl::StrAppend(&s, "  constexpr unsigned kUnits = ", n / V, "u, kRows = ", outer,
                    "u;  // a fibre: kUnits units of ", V, " element(s)\n");
    absl::StrAppend(&s, "  const unsigned lane = threadIdx.x % 32u, r = blockIdx.x * ",
                    kFibreRowWarps, "u + threadIdx.x / 32u;  // lane of fibre r's warp\n");
    absl::StrAppend(&s, "  if (r >= kRows) return;  // the whole warp\n");
    base = outer == 1 ? std::string() : " + r * kUnits";
  } else {
    absl::StrAppend(&s, "  constexpr unsigned kN = ", n, "u, kInnerU = ", inner / V,
                    "u, kGroups = ", lay.groups, "u, kC = ", lay.c, "u, kS = ", lay.s,
                    "u;  // units of ", V, " element(s)\n");
    absl::StrAppend(&s, "  const unsigned c = threadIdx.x % kC, s = threadIdx.x / kC;  // thread "
                    "(c, s): k = s, s + kS, ...\n");
    absl::StrAppend(&s, "  const unsigned g = blockIdx.x * kC + c;  // the column group: fibres "
                    "g * V ... g * V + V - 1\n");
    absl::StrAppend(&s, "  const bool live = g < kGroups;  // an idle group folds and stores "
                    "nothing\n  const unsigned k_first = live ? s : kN, gp = live ? g : 0u;  // "
                    "gp: the group the pointers use\n");
    if (outer == 1) {
      base = " + gp";
    } else {
      absl::StrAppend(&s, "  const unsigned o = gp / kInnerU, i = gp - o * kInnerU;\n");
      base = " + o * (kN * kInnerU) + i";
    }
    if (lay.s > 1) {
      absl::StrAppend(&s, "  __shared__ float red[", V, "][", kFibreThreads,
                      "];  // partials: red[j][c + kC * s]\n");
    }
  }
  absl::StrAppend(&s, "  const ", unit, "* __restrict__ x = ", cast(xp, true), base, ";\n");
  if (!reduces) {
    absl::StrAppend(&s, "  ", unit, "* __restrict__ y = ", cast(yp, false), base, ";\n");
  }
  const std::string nlit = FloatLit(static_cast<double>(n));
  const std::string kNegInf = "__int_as_float(0xff800000)";  // -inf: the max's identity
  switch (lk.op) {
    case OpKind::kSum:
    case OpKind::kMean:
      fold_pass("acc", "the sum of each fibre", "0.0f", "a[j] = a[j] + v;", false, false);
      store_result(lk.op == OpKind::kMean ? absl::StrCat(stat("acc"), " / ", nlit) : stat("acc"));
      break;
    case OpKind::kMax:
      fold_pass("acc", "the max of each fibre, a NaN kept", kNegInf,
                "if (v > a[j] || v != v) a[j] = v;", true, false);
      store_result(stat("acc"));
      break;
    case OpKind::kSoftmax:
      fold_pass("m", "pass 1: the max of each fibre, a NaN kept", kNegInf,
                "if (v > a[j] || v != v) a[j] = v;", true, true);
      fold_pass("sum", "pass 2: the sum of expf(x - m)", "0.0f",
                absl::StrCat("a[j] = a[j] + expf(v - ", stat("m"), ");"), false, false);
      absl::StrAppend(&s, "  // pass 3: expf(x - m) / sum\n");
      store_pass(absl::StrCat("expf(v - ", stat("m"), ") / ", stat("sum")));
      break;
    case OpKind::kRmsNorm:
      fold_pass("ss", "pass 1: the sum of squares", "0.0f", "a[j] = fmaf(v, v, a[j]);", false,
                false);
      absl::StrAppend(&s, "  // pass 2: x * inv, inv = 1 / sqrt(ss / n + eps)\n");
      if (rows) {
        absl::StrAppend(&s, "  const float inv = 1.0f / sqrtf(ss / ", nlit, " + ",
                        FloatLit(lk.eps), ");\n");
      } else {
        absl::StrAppend(&s, "  float inv[", V, "];\n#pragma unroll\n  for (int j = 0; j < ", V,
                        "; ++j) inv[j] = 1.0f / sqrtf(ss[j] / ", nlit, " + ", FloatLit(lk.eps),
                        ");\n");
      }
      store_pass(absl::StrCat("v * ", stat("inv")));
      break;
    default:
      break;
  }
  absl::StrAppend(&s, "}\n");
  source += s;
  return launch;
}

}  // namespace

std::string LibraryShapeText(const Shape& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

LaunchConfig LibraryLaunch(const BlockProgram& p, const std::string& kname,
                           const CodegenOptions& options, const std::array<int64_t, 3>& grid,
                           int64_t threads) {
  LaunchConfig launch;
  launch.kernel = kname;
  launch.function = absl::StrCat("prism_", Ident(p.name), "_", Ident(kname), options.name_suffix);
  launch.grid = grid;
  launch.threads = threads;
  launch.programmatic = options.programmatic_dependent_launch;
  return launch;
}

absl::Status CheckLibraryIndexable(const std::string& kname, absl::string_view what,
                                   const ConcreteTensor& t) {
  int64_t elements = 1;  // saturating (every dim is at least 1)
  for (int64_t d : t.shape) {
    elements = elements > kMaxElements / d ? kMaxElements + 1 : elements * d;
  }
  if (elements <= kMaxElements) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "codegen: kernel ", kname, ": ", what, " ", t.name, " ", LibraryShapeText(t.shape),
      " has more than ", kMaxElements, " elements (the kernel indexes with 32 bits)"));
}

absl::StatusOr<LaunchConfig> GenerateLibraryKernel(const BlockProgram& p, int kernel,
                                                   const CodegenOptions& options,
                                                   std::string& source) {
  const ConcreteKernel& k = p.kernels[kernel];
  const LibraryKernel& lk = k.library();
  if (IsFibreOp(lk.op)) return GenerateFibreOp(p, k.name, lk, options, source);
  const OpCategory category = GetOpInfo(lk.op).category;
  if (category == OpCategory::kUnary || category == OpCategory::kBinary) {
    return GenerateLibraryElementwise(p, kernel, options, source);
  }
  if (lk.op == OpKind::kMatMul) return GenerateLibraryMatmul(p, kernel, options, source);
  if (lk.op != OpKind::kConcat) {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", k.name,
                                                 ": library kernels (", GetOpInfo(lk.op).name,
                                                 ") are not supported yet"));
  }
  return GenerateConcat(p, k.name, lk, options, source);
}

}  // namespace prism::codegen::internal
