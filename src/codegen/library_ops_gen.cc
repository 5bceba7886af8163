// Library kernels of elementwise ops and matmul (gen_util.h GenerateLibraryElementwise,
// GenerateLibraryMatmul; dispatched from GenerateLibraryKernel in library_gen.cc): one Program
// op on whole tensors of any valid shape, for the shapes the block-graph templates refuse.
// docs/codegen.md, "Library kernels: matmul and elementwise ops".
//
// Broadcast views. An elementwise result (or a matmul's batch) is indexed row-major by e; each
// operand is read through numpy broadcasting (docs/ir_semantics.md §1: aligned at the trailing
// dims, a dim of extent 1 read at index 0). An operand whose aligned shape is the result's is
// read at e itself, one of one element at 0. For the others the result's dims of extent > 1 are
// grouped into runs of consecutive dims along which every such operand is either full or
// broadcast alike; a run is one dim of extent the product of its dims (row-major merging), e is
// decomposed over the runs (compile-time extents: `%` and `/` by constants) and an operand's
// index is the sum over the runs it spans of run index × its stride. [2, 5] ⊕ [5] reads the
// first operand at e and the second at e % 5; [4, 1, 3] ⊕ [2, 1] decomposes e over [4, 2, 3].
//
// Elementwise (unary ops including scale; add, sub, mul, div): one result element per thread
// and grid-stride step; each operand element converted to f32, one f32 expression (§3.2:
// UnaryExpr's, except scale by an f32 constant that overflowed to inf), rounded once to the
// result dtype. The same tensor twice (mul(X, X)) is one parameter and one load. Launch: kThreads threads, ⌈elements / kThreads⌉ blocks capped at
// kMaxBlocks (one wave of 4 blocks on each of the H100's / H200's 132 SMs); no shared memory.
//
// Matmul a[…A, M, K] × b[…B, K, N] → [broadcast(A, B), M, N], f16 and bf16 on the tensor
// cores: a block of kTcThreads threads (4 warps, each a 32 × 32 quarter) computes a kTile ×
// kTile output tile of one batch with mma.sync m16n8k16 (f32 accumulators). Each k step's rows
// of a and b are staged by cp.async in a ring of kTcStages stages of static shared memory as
// 16-bit elements, each row from the aligned 16-byte chunk that holds its first element
// (device_common.cuh's CpAsync16Fill: bytes up to the row's end, zero after; a row past M or K
// all zero), so rows of any length and offset copy by 16 bytes and the k tail adds exact
// zeros. A row's shift (its first element's offset in that chunk) is the same in every k step,
// so each thread computes its fragment elements' positions once per tile (a) or batch (b) and
// builds the fragments from 16-bit shared loads; an operand whose rows are whole 16-byte chunks
// (a: K % 8 == 0, b: N % 8 == 0; base pointers 16-byte aligned, so every batch's rows start at
// chunk boundaries) uses LoadAFragment / LoadBFragment, whose pitches put the 8 rows of a
// fragment in distinct banks. The f32 accumulation order is the tensor cores', not §3.3's, so
// results match the interpreter within the f16 / bf16 tolerance, not bit for bit. 38,912 or
// 43,008 B of static shared memory. One tile form for every M: for decode's few rows (an LM
// head over 32,001 columns at M = 8) it streams W faster than a 16 × 64 form with 4 warps along
// k that was measured and dropped (docs/performance.md, fifteenth session). With
// CodegenOptions::library_matmul_cluster_split and few tiles (ClusterSplit), each tile's k steps
// are split over a cluster of kSplit blocks along z, which sum their f32 tiles through
// distributed shared memory (sm_90; codegen.h).
//
// Matmul of f32 tensors on the CUDA cores: a block of kThreads threads computes a kTile × kTile
// output tile of one batch. Each step stages a kTile × kTileK tile of a
// (k-major, padded to kTile + 1 columns: the k-fastest stores fall in distinct banks) and a
// kTileK × kTile tile of b in static shared memory as f32 (zero outside the operands), then
// thread (ty, tx) = (tid / 16, tid % 16) folds its 4 × 4 outputs (rows ty + 16i, columns
// tx + 16j: a warp's stores are 16-element runs) with acc = fmaf(a, b, acc) over the step's k in
// increasing order; the last step's loop runs only over the K % kTileK valid k. So every output
// is acc = +0; acc = fmaf(a[m, k], b[k, n], acc) for k = 0 … K−1 exactly, §3.3's device order,
// equal to the interpreter bit for bit (f16 / bf16 products are exact in f32, where the
// interpreter's separate multiply and add equals the fma), rounded once at the store.
// Why 64 × 64 (not 32 × 32): 16 accumulators per thread reuse each shared value 4 times (8
// shared loads per 16 fmaf instead of 4 per 4), and every element of a and b is read from global
// memory ⌈N / 64⌉ resp. ⌈M / 64⌉ times instead of twice that; 8,256 B of static shared memory and
// 40–64 registers (NVRTC 13; nvcc 13 sm_90: 48 for 4096³, no spills) leave 4–6 blocks of 256
// threads per SM, each thread with 16 independent fmaf chains. Tiles along N and M are blockIdx.x
// and blockIdx.y, batches blockIdx.z, each a grid-stride loop over a grid capped at kMaxGridDim
// per axis (so no shape exceeds a grid limit). No fast GEMM (no pipelining): a correct
// fallback.
//
// 32-bit indices (unsigned): every operand and the result have at most 2^31 − 1 elements, else
// ResourceExhausted. Elementwise: e < 2^31 and e + gridDim.x · kThreads < 2^31 + 528 · 256 <
// 2^32; an operand index is at most its element count. Matmul: a load's index is formed only
// inside its bounds check (f32: m < M, k < K: batch_a · M·K + m·K + k < |a| ≤ 2^31 − 1,
// likewise b; f16 / bf16: a staged row's start only for a live row, and its chunks, at most 72
// elements past it, are read only up to the row's end, so no byte past |a| or |b|; a row's
// shift is its start mod 8, which a wrapped product keeps, 2^32 being a multiple of 8), a
// store's only for m < M, n < N (z · M·N + m·N + n < |result|); tile origins are below M + 64
// resp. N + 64, k step origins below K + 32, and the grid-stride counters below their bound plus
// 65535: all below 2^32.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gen_util.h"
#include "prism/base/status.h"
#include "prism/ir/program.h"

namespace prism::codegen::internal {
namespace {
// Apart from library_gen.cc's helpers: both files are one translation unit in unity builds.
namespace library_ops {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 4;
constexpr int64_t kTile = 64;            // matmul output tile: kTile × kTile
constexpr int64_t kTileK = 16;           // k per shared-memory step
constexpr int64_t kPer = kTile / 16;     // outputs per thread along m and along n (4)
constexpr int64_t kMaxGridDim = 65535;   // gridDim.y and gridDim.z limit (x capped alike)
// The tensor-core matmul (f16 / bf16): 4 warps, each a 32 × 32 quarter of the kTile × kTile
// tile; k steps of kTcTileK; the shared tiles' pitches in elements (conflict-free fragments).
constexpr int64_t kTcThreads = 128;
constexpr int64_t kTcTileK = 32;
constexpr int64_t kTcStages = 4;
constexpr int64_t kTcPitchA = kTcTileK + 8;  // 80 B: the 8 rows of a fragment hit 8 bank quads
constexpr int64_t kTcPitchB = kTile + 8;     // 144 B
// 176 B: b's rows when they are not whole chunks (9 chunks staged); the B fragment's rows 2t
// (t = 0..3) start 24 banks apart.
constexpr int64_t kTcPitchB9 = 88;
// library_matmul_cluster_split: at most 8 blocks per cluster (the portable size) per block an
// SM may hold (library_matmul_split_blocks_per_sm: 16, the non-portable maximum, at two), each
// with at least 4 k steps; the f32 tile each block writes for the reduction has rows kRedPitch
// floats apart (the float2 writes of a half-warp's 4 fragment rows fall in distinct banks).
constexpr int64_t kMaxSplit = 8;
constexpr int64_t kMinSplitSteps = 4;
constexpr int64_t kRedPitch = kTile + 8;
static_assert(kTile * kRedPitch * 4 <= kTcStages * (kTile * kTcPitchA + kTcTileK * kTcPitchB) * 2,
              "the reduction tile aliases the stages");
constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

int64_t Elements(const Shape& s) {  // saturating at kMaxElements + 1 (every dim ≥ 1)
  int64_t n = 1;
  for (int64_t d : s) n = n > kMaxElements / d ? kMaxElements + 1 : n * d;
  return n;
}

// §1 broadcasting of two shapes, or nullopt when an aligned pair differs and neither is 1.
std::optional<Shape> Broadcast(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = std::max(x, y);
  }
  return out;
}

// `s` padded on the left with 1s to rank r (≥ its rank).
Shape Aligned(const Shape& s, size_t r) {
  Shape out(r - s.size(), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// Parameters: each distinct operand tensor once in operand order (const), then the result.
std::string Params(const BlockProgram& p, const LibraryKernel& lk, const std::string& elem,
                   LaunchConfig& launch) {
  std::vector<std::string> params;
  for (int t : lk.operands) {
    if (std::find(launch.args.begin(), launch.args.end(), t) != launch.args.end()) continue;
    launch.args.push_back(t);
    launch.written.push_back(false);
    params.push_back(absl::StrCat("const ", elem, "* __restrict__ ", ParamName(p, t)));
  }
  launch.args.push_back(lk.result);
  launch.written.push_back(true);
  params.push_back(absl::StrCat(elem, "* __restrict__ ", ParamName(p, lk.result)));
  return absl::StrJoin(params, ", ");
}

// The checks both generators share: operand count, indices, the result not an operand, ranks
// of at least `min_rank`, no empty dim, one dtype; then the dtype's device spelling in `elem`.
// InvalidArgument / Unimplemented as gen_util.h says.
absl::Status CheckOperands(const BlockProgram& p, const std::string& kname,
                           const LibraryKernel& lk, size_t arity, size_t min_rank,
                           std::string& elem) {
  const std::string op_name(GetOpInfo(lk.op).name);
  auto malformed = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("codegen: kernel ", kname, ": ", op_name, ": ", what));
  };
  const int nt = static_cast<int>(p.tensors.size());
  if (lk.operands.size() != arity) {
    return malformed(absl::StrCat("takes ", arity, arity == 1 ? " operand" : " operands",
                                  ", found ", lk.operands.size()));
  }
  for (int t : lk.operands) {
    if (t < 0 || t >= nt) return malformed(absl::StrCat("operand index ", t, " is out of range"));
  }
  if (lk.result < 0 || lk.result >= nt) {
    return malformed(absl::StrCat("result index ", lk.result, " is out of range"));
  }
  for (int t : lk.operands) {
    if (t == lk.result) {
      return malformed(absl::StrCat("the result ", p.tensors[t].name, " is also ",
                                    arity == 1 ? "the operand" : "an operand"));
    }
  }
  const ConcreteTensor& first = p.tensors[lk.operands[0]];
  for (int t : lk.operands) {
    const ConcreteTensor& x = p.tensors[t];
    if (x.shape.size() < min_rank) {
      return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " has rank ", x.shape.size(),
                                    min_rank > 1 ? absl::StrCat(" (at least ", min_rank, ")")
                                                 : std::string()));
    }
    for (int64_t d : x.shape) {
      if (d < 1) return malformed(absl::StrCat(x.name, " ", LibraryShapeText(x.shape), " has an empty dim"));
    }
    if (x.dtype != first.dtype) {
      return malformed(absl::StrCat(x.name, " is ", DTypeName(x.dtype), " but ", first.name,
                                    " is ", DTypeName(first.dtype)));
    }
  }
  absl::StatusOr<std::string> e = DeviceElemType(first);
  if (!e.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("codegen: kernel ", kname, ": ", e.status().message()));
  }
  elem = *e;
  return absl::OkStatus();
}

// The result's dtype and shape against what §2 gives (`want`): InvalidArgument "the result Y is
// f16 [4, 5], expected f16 [4, 6]".
absl::Status CheckResult(const BlockProgram& p, const std::string& kname, const LibraryKernel& lk,
                         const Shape& want) {
  const ConcreteTensor& out = p.tensors[lk.result];
  const DType dtype = p.tensors[lk.operands[0]].dtype;
  if (out.dtype == dtype && out.shape == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "codegen: kernel ", kname, ": ", GetOpInfo(lk.op).name, ": the result ", out.name, " is ",
      DTypeName(out.dtype), " ", LibraryShapeText(out.shape), ", expected ", DTypeName(dtype), " ",
      LibraryShapeText(want)));
}

// The broadcast view (file comment) of `shape` (the result, or a matmul's batch dims) read by
// operands of shapes `operands` (each of rank ≤ the shape's).
struct BroadcastView {
  // The runs: extents, outer to inner; full[o][j]: operand o spans run j.
  std::vector<int64_t> runs;
  std::vector<std::vector<bool>> full;
  std::vector<int> kind;  // per operand: 0 read at the index itself, 1 at 0, 2 through the runs
};

BroadcastView MakeView(const Shape& shape, const std::vector<Shape>& operands) {
  BroadcastView v;
  const size_t r = shape.size();
  std::vector<Shape> aligned;
  for (const Shape& s : operands) {
    aligned.push_back(Aligned(s, r));
    v.kind.push_back(aligned.back() == shape ? 0 : Elements(s) == 1 ? 1 : 2);
  }
  v.full.resize(operands.size());
  std::vector<bool> last;
  for (size_t d = 0; d < r; ++d) {
    if (shape[d] == 1) continue;
    std::vector<bool> pattern;
    for (size_t o = 0; o < operands.size(); ++o) {
      if (v.kind[o] == 2) pattern.push_back(aligned[o][d] != 1);
    }
    if (!v.runs.empty() && pattern == last) {  // the same run
      v.runs.back() *= shape[d];
      continue;
    }
    v.runs.push_back(shape[d]);
    size_t i = 0;  // into pattern (kind-2 operands only)
    for (size_t o = 0; o < operands.size(); ++o) {
      v.full[o].push_back(v.kind[o] == 2 ? bool(pattern[i++]) : false);
    }
    last = pattern;
  }
  return v;
}

bool NeedsRuns(const BroadcastView& v) {
  return std::find(v.kind.begin(), v.kind.end(), 2) != v.kind.end();
}

// The code that decomposes index `e` over the runs into p0, p1, … (outer to inner), `indent`
// before each line; empty when no operand reads through the runs.
std::string Decompose(const BroadcastView& v, const std::string& e, const std::string& indent) {
  if (!NeedsRuns(v)) return "";
  const size_t n = v.runs.size();
  if (n == 1) return absl::StrCat(indent, "const unsigned p0 = ", e, ";\n");
  std::string s = absl::StrCat(indent, "unsigned r = ", e, ";\n");
  for (size_t j = n - 1; j >= 1; --j) {
    if (j == 1) {
      absl::StrAppend(&s, indent, "const unsigned p1 = r % ", v.runs[1], "u, p0 = r / ",
                      v.runs[1], "u;\n");
    } else {
      absl::StrAppend(&s, indent, "const unsigned p", j, " = r % ", v.runs[j], "u;\n", indent,
                      "r /= ", v.runs[j], "u;\n");
    }
  }
  return s;
}

// Operand o's index: `e` (kind 0), "0" (kind 1), else Σ over its runs of p_j · stride_j.
std::string OperandIndex(const BroadcastView& v, size_t o, const std::string& e) {
  if (v.kind[o] == 0) return e;
  if (v.kind[o] == 1) return "0";
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (size_t j = v.runs.size(); j-- > 0;) {
    if (!v.full[o][j]) continue;
    terms.push_back(stride == 1 ? absl::StrCat("p", j) : absl::StrCat("p", j, " * ", stride, "u"));
    stride *= v.runs[j];
  }
  std::reverse(terms.begin(), terms.end());
  return absl::StrJoin(terms, " + ");
}

// "as [4, 2, 3]: A [4, 1, 3] at p0 * 3u + p2, B at e": the view for the kernel's comment.
std::string ViewSummary(const BroadcastView& v, const std::vector<std::string>& names,
                        const std::string& e) {
  std::vector<std::string> parts;
  for (size_t o = 0; o < names.size(); ++o) {
    parts.push_back(absl::StrCat(names[o], " at ", OperandIndex(v, o, e)));
  }
  std::string runs = NeedsRuns(v) ? absl::StrCat("runs ", LibraryShapeText(v.runs), ", ") : "";
  return absl::StrCat(runs, absl::StrJoin(parts, ", "));
}

std::string ToF32Of(DType dtype, const std::string& load) {
  const Half16* h = Half16Of(dtype);
  return h != nullptr ? absl::StrCat("prism_dev::", h->to_f32, "(", load, ")") : load;
}
std::string FromF32Of(DType dtype, const std::string& v) {
  const Half16* h = Half16Of(dtype);
  return h != nullptr ? absl::StrCat("prism_dev::", h->from_f32, "(", v, ")") : v;
}

// The f32 expression of unary op `lk` on f32 value `x` (§2, §3.2).
std::string UnaryOf(const LibraryKernel& lk, const std::string& x) {
  if (lk.op == OpKind::kScale && std::isinf(static_cast<float>(lk.scalar))) {  // f32(c) = ±inf
    return absl::StrCat(lk.scalar < 0 ? "-" : "", "__int_as_float(0x7f800000) * ", x);
  }
  ConcreteBlockOp op;
  op.kind = BlockOpKind::kUnary;
  op.fn = lk.op;
  op.scalar = lk.scalar;
  return UnaryExpr(op, x);
}

absl::StatusOr<LaunchConfig> Elementwise(const BlockProgram& p, const std::string& kname,
                                         const LibraryKernel& lk, const CodegenOptions& options,
                                         std::string& source) {
  const OpInfo& info = GetOpInfo(lk.op);
  const bool binary = info.category == OpCategory::kBinary;
  std::string elem;
  PRISM_RETURN_IF_ERROR(CheckOperands(p, kname, lk, binary ? 2 : 1, 1, elem));
  const std::string op_name(info.name);
  const ConcreteTensor& a = p.tensors[lk.operands[0]];
  const ConcreteTensor& out = p.tensors[lk.result];
  Shape want = a.shape;
  if (binary) {
    const ConcreteTensor& b = p.tensors[lk.operands[1]];
    std::optional<Shape> s = Broadcast(a.shape, b.shape);
    if (!s) {
      return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname, ": ", op_name,
                                                     ": ", a.name, " ", LibraryShapeText(a.shape),
                                                     " and ", b.name, " ", LibraryShapeText(b.shape),
                                                     " do not broadcast"));
    }
    want = *s;
  }
  PRISM_RETURN_IF_ERROR(CheckResult(p, kname, lk, want));
  if (lk.op == OpKind::kScale && !std::isfinite(lk.scalar)) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname, ": scale: c ",
                                                   lk.scalar, " is not finite"));
  }
  // Operands have at most the result's elements (broadcasting only widens).
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, absl::StrCat(op_name, " result"), out));

  const int64_t elements = Elements(out.shape);
  const int64_t blocks =
      std::clamp<int64_t>((elements + kThreads - 1) / kThreads, 1, kMaxBlocks);
  LaunchConfig launch = LibraryLaunch(p, kname, options, {blocks, 1, 1}, kThreads);
  const std::string params = Params(p, lk, elem, launch);

  // The same tensor twice is read once (same tensor, same shape, same index).
  const bool same = binary && lk.operands[1] == lk.operands[0];
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for (size_t o = 0; o < (same ? 1 : lk.operands.size()); ++o) {
    shapes.push_back(p.tensors[lk.operands[o]].shape);
    names.push_back(p.tensors[lk.operands[o]].name);
  }
  const BroadcastView v = MakeView(out.shape, shapes);

  std::vector<std::string> operand_text;
  for (int t : lk.operands) {
    operand_text.push_back(absl::StrCat(p.tensors[t].name, " ", DTypeName(p.tensors[t].dtype), " ",
                                        LibraryShapeText(p.tensors[t].shape)));
  }
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname, ": library kernel ", op_name, "(",
                  absl::StrJoin(operand_text, ", "));
  if (lk.op == OpKind::kScale) absl::StrAppend(&s, ", c ", FloatLit(lk.scalar));
  absl::StrAppend(&s, ") -> ", out.name, " ", DTypeName(out.dtype), " ", LibraryShapeText(out.shape),
                  "; ", elements, " element(s) e, ", ViewSummary(v, names, "e"),
                  "; one per thread and step; grid ", blocks, ", ", kThreads,
                  " threads, grid-stride\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", kThreads, ") ",
                  launch.function, "(", params, ") {\n");
  absl::StrAppend(&s, KernelPrologue(options));
  absl::StrAppend(&s, "  constexpr unsigned kElements = ", elements, "u;\n");
  absl::StrAppend(&s, "  for (unsigned e = blockIdx.x * ", kThreads,
                  "u + threadIdx.x; e < kElements; e += gridDim.x * ", kThreads, "u) {\n");
  absl::StrAppend(&s, Decompose(v, "e", "    "));
  const char* const vars[] = {"a", "b"};
  for (size_t o = 0; o < names.size(); ++o) {
    absl::StrAppend(&s, "    const float ", vars[o], " = ",
                    ToF32Of(a.dtype, absl::StrCat(ParamName(p, lk.operands[o]), "[",
                                                  OperandIndex(v, o, "e"), "]")),
                    ";\n");
  }
  std::string value;
  if (binary) {
    const char* sym = lk.op == OpKind::kAdd   ? " + "
                      : lk.op == OpKind::kSub ? " - "
                      : lk.op == OpKind::kMul ? " * "
                                              : " / ";
    value = absl::StrCat("a", sym, same ? "a" : "b");
  } else {
    value = UnaryOf(lk, "a");
  }
  absl::StrAppend(&s, "    ", ParamName(p, lk.result), "[e] = ", FromF32Of(out.dtype, value),
                  ";\n  }\n}\n");
  source += s;
  return launch;
}

// The start of a matmul kernel's comment line, both kernels alike: "// kernel k0: library kernel
// matmul(X f16 [7, 6], W f16 [6, 5]) -> Y f16 [7, 5]; 1 batch(es) z of [7, 6] x [6, 5]; 64x64
// tiles (1 x 1), " (with the batch view after the batches when there are several).
std::string MatmulSummary(const BlockProgram& p, const std::string& kname, const LibraryKernel& lk,
                          const BroadcastView& v, int64_t batches, int64_t m, int64_t k,
                          int64_t n) {
  const ConcreteTensor& a = p.tensors[lk.operands[0]];
  const ConcreteTensor& b = p.tensors[lk.operands[1]];
  const ConcreteTensor& out = p.tensors[lk.result];
  return absl::StrCat(
      "// kernel ", kname, ": library kernel matmul(", a.name, " ", DTypeName(a.dtype), " ",
      LibraryShapeText(a.shape), ", ", b.name, " ", DTypeName(b.dtype), " ",
      LibraryShapeText(b.shape), ") -> ", out.name, " ", DTypeName(out.dtype), " ",
      LibraryShapeText(out.shape), "; ", batches, " batch(es) z of [", m, ", ", k, "] x [", k,
      ", ", n, "]",
      batches == 1 ? std::string() : absl::StrCat(", ", ViewSummary(v, {a.name, b.name}, "z")),
      "; ", kTile, "x", kTile, " tiles (", (m + kTile - 1) / kTile, " x ",
      (n + kTile - 1) / kTile, "), ");
}

// A matmul kernel's signature, prologue and shape constants (kM, kN, kK, kTilesM, kTilesN,
// kBatches), the 64 × 64 kernels alike.
std::string MatmulOpening(const LaunchConfig& launch, const std::string& params, int64_t threads,
                          const CodegenOptions& options, int64_t batches, int64_t m, int64_t k,
                          int64_t n) {
  return absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", threads, ") ",
                      launch.function, "(", params, ") {\n", KernelPrologue(options),
                      "  constexpr unsigned kM = ", m, "u, kN = ", n, "u, kK = ", k,
                      "u, kTilesM = ", (m + kTile - 1) / kTile, "u, kTilesN = ",
                      (n + kTile - 1) / kTile, "u, kBatches = ", batches, "u;\n");
}

// Batch z's first element of matmul operand `o` (o = 0: a, 1: b) whose matrices hold `size`
// elements: "<its batch index> * (size)", or "" when it is 0 (one batch, or a broadcast operand).
std::string BatchOffset(const BroadcastView& v, size_t o, int64_t batches,
                        const std::string& size) {
  const std::string i = OperandIndex(v, o, "z");
  if (i == "0" || batches == 1) return "";
  return absl::StrCat(i.find(' ') == std::string::npos ? i : absl::StrCat("(", i, ")"), " * (",
                      size, ")");
}

// The f32 kernel's loops, opened and not closed (three braces to close): batches
// z over blockIdx.z (a, b, y at their batch's offsets through the view), then M tiles over
// blockIdx.y and N tiles over blockIdx.x, each grid-stride, down to the tile origin m0, n0.
std::string MatmulTileLoops(const BlockProgram& p, const LibraryKernel& lk,
                            const BroadcastView& v, int64_t batches, const std::string& elem) {
  auto base = [&](size_t o, const std::string& size) {
    const std::string off = BatchOffset(v, o, batches, size);
    return off.empty() ? off : absl::StrCat(" + ", off);
  };
  std::string s;
  absl::StrAppend(&s, "  for (unsigned z = blockIdx.z; z < kBatches; z += gridDim.z) {\n");
  absl::StrAppend(&s, Decompose(v, "z", "    "));
  absl::StrAppend(&s, "    const ", elem, "* __restrict__ a = ", ParamName(p, lk.operands[0]),
                  base(0, "kM * kK"), ";\n");
  absl::StrAppend(&s, "    const ", elem, "* __restrict__ b = ", ParamName(p, lk.operands[1]),
                  base(1, "kK * kN"), ";\n");
  absl::StrAppend(&s, "    ", elem, "* __restrict__ y = ", ParamName(p, lk.result),
                  batches == 1 ? std::string() : " + z * (kM * kN)", ";\n");
  absl::StrAppend(&s, "    for (unsigned tm = blockIdx.y; tm < kTilesM; tm += gridDim.y) {\n");
  absl::StrAppend(&s, "      for (unsigned tn = blockIdx.x; tn < kTilesN; tn += gridDim.x) {\n");
  absl::StrAppend(&s, "        const unsigned m0 = tm * ", kTile, "u, n0 = tn * ", kTile, "u;\n");
  return s;
}

// CodegenOptions::library_matmul_cluster_split: the blocks of a cluster that share one output
// tile, for `tiles` tiles of `steps` k steps on `sms` SMs holding `per_sm` (1 or 2) blocks each.
// S = min(per_sm · kMaxSplit, ⌊per_sm · sms / tiles⌋, ⌊steps / kMinSplitSteps⌋), then the
// fewest blocks that keep ⌈steps / S⌉ steps each (every block of the cluster gets at least one
// step); 1 (no split) when that is below 2.
int64_t ClusterSplit(int64_t tiles, int64_t steps, int64_t sms, int64_t per_sm) {
  int64_t s = std::min({per_sm * kMaxSplit, per_sm * sms / tiles, steps / kMinSplitSteps});
  if (s < 2) return 1;
  const int64_t per = (steps + s - 1) / s;
  return (steps + per - 1) / per;
}

// The f16 / bf16 matmul on the tensor cores (see the file comment): the same grid and batch
// view as the f32 kernel, kTcThreads threads per kTile × kTile tile (4 warps, each a 32 × 32
// quarter), mma.sync m16n8k16 with f32 accumulators over k steps of kTcTileK. Each step's
// kTile rows of a (kTcTileK elements) and kTcTileK rows of b (kTile elements) are staged by
// cp.async in a ring of kTcStages stages, each row from the aligned 16-byte chunk that holds its
// first element (CpAsync16Fill: up to the row's end, zero after; a row past M or K all zero).
// An operand whose rows are whole 16-byte chunks (a: K % 8 == 0, b: N % 8 == 0; its rows then
// start at chunk boundaries in every batch) is read with the fragment helpers of
// device_common.cuh; otherwise each row's shift is computed once per tile (a) or batch (b) and
// its fragments are built from 16-bit shared loads.
absl::StatusOr<LaunchConfig> TensorCoreMatmul(
    const BlockProgram& p, const std::string& kname, const LibraryKernel& lk,
    const CodegenOptions& options, const Half16& h, const std::string& elem, const Shape& batch,
    const Shape& batch_a, const Shape& batch_b, int64_t m, int64_t k, int64_t n,
    const std::array<int64_t, 3>& grid, int64_t split, std::string& source) {
  const ConcreteTensor& a = p.tensors[lk.operands[0]];
  const ConcreteTensor& b = p.tensors[lk.operands[1]];
  const ConcreteTensor& out = p.tensors[lk.result];
  LaunchConfig launch = LibraryLaunch(p, kname, options, grid, kTcThreads);
  const bool splits = split > 1;
  if (splits) launch.cluster = {1, 1, split};
  const std::string params = Params(p, lk, elem, launch);
  const BroadcastView v = MakeView(batch, {batch_a, batch_b});
  const int64_t batches = Elements(batch);
  const int64_t steps = (k + kTcTileK - 1) / kTcTileK;
  const int64_t per = (steps + split - 1) / split;  // k steps per block of a cluster
  const int64_t red_rows = (kTile + split - 1) / split;  // tile rows each rank adds and stores
  // The step loop's bound and a step's index: the whole k range, or (split) this block's.
  const std::string nsteps = splits ? "ns" : "kSteps";
  auto step_at = [&](const std::string& i) {
    return splits ? absl::StrCat("(sb + ", i, ")") : i;
  };
  const bool vec_a = k % 8 == 0, vec_b = n % 8 == 0;
  // A split kernel with fewer rows than a tile (decode's 1 to 63): a's rows m … 63 are zero in
  // every stage of every tile, so they are zeroed once per tile and never copied, and the warps
  // whose 32 rows are all past M (m ≤ 32) skip the tensor-core steps (their accumulators stay
  // 0). Only when split: in one run on the H100 (2026-12-07, docs/performance.md) it took the
  // split kernels at two blocks per SM 5–16 % faster on three of four programs (3.8 % slower on
  // the fourth), but the unsplit one-block-per-SM kernels of the same programs up to 18 %
  // slower; so the unsplit source stays the one the split falls back to byte for byte.
  const bool dead_rows = splits && m < kTile;
  const int64_t chunks_a = kTcTileK / 8 + (vec_a ? 0 : 1), chunks_b = kTile / 8 + (vec_b ? 0 : 1);
  const int64_t pitch_b = vec_b ? kTcPitchB : kTcPitchB9;
  const int64_t size_a = kTile * kTcPitchA, stage = size_a + kTcTileK * pitch_b;  // elements
  const int64_t smem = kTcStages * stage * 2;
  launch.reduction_bytes = smem;  // the static stages, for the resource audit (audit.cc)
  const std::string pa = ParamName(p, lk.operands[0]), pb = ParamName(p, lk.operands[1]);

  std::string s;
  absl::StrAppend(&s, MatmulSummary(p, kname, lk, v, batches, m, k, n), steps,
                  " k step(s) of ", kTcTileK, " on the tensor cores (mma.sync m16n8k16, f32 "
                  "accumulators); ", a.name, vec_a ? " rows in whole" : " rows in aligned",
                  " 16-byte chunks, ", b.name, vec_b ? " rows in whole" : " rows in aligned",
                  " 16-byte chunks, by cp.async, ", kTcStages, " stages; grid (", grid[0], ", ",
                  grid[1], ", ", grid[2], "), ", kTcThreads, " threads, grid-stride, ", smem,
                  " B static shared memory",
                  splits ? absl::StrCat("; k split over clusters of (1, 1, ", split, ") blocks, ",
                                        per, " step(s) each, summed through distributed shared "
                                        "memory")
                         : std::string(),
                  "\n");
  if (splits) {
    absl::StrAppend(&s, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900\n#error \"",
                    launch.function,
                    ": library_matmul_cluster_split kernels need sm_90 or newer (thread block "
                    "clusters)\"\n#endif\n");
  }
  absl::StrAppend(&s, MatmulOpening(launch, params, kTcThreads, options, batches, m, k, n));
  absl::StrAppend(&s, "  constexpr unsigned kSteps = ", steps, "u;\n");
  if (splits) {
    absl::StrAppend(&s, "  constexpr unsigned kSplit = ", split, "u, kPer = ", per,
                    "u;  // blocks per cluster along z, k steps per block\n",
                    "  const unsigned part = blockIdx.z % kSplit, sb = part * kPer, ns = kSteps - sb < "
                    "kPer ? kSteps - sb : kPer;  // this block's steps sb … sb + ns - 1\n");
  }
  absl::StrAppend(&s, "  // A stage: ", a.name, "'s ", kTile, " m rows (", kTcPitchA,
                  " elements apart), then ", b.name, "'s ", kTcTileK, " k rows (", pitch_b,
                  " apart); a row's element j at its shift + j.\n");
  absl::StrAppend(&s, "  __shared__ __align__(16) ", elem, " st[", kTcStages, "][", stage, "];\n");
  absl::StrAppend(&s, "  const unsigned tid = threadIdx.x, lane = tid % 32u, warp = tid / 32u, "
                  "g = lane / 4u, t = lane % 4u;\n",
                  "  const int wm = static_cast<int>(warp / 2u) * 32, wn = static_cast<int>(warp % 2u) * 32;\n");
  absl::StrAppend(&s, splits ? "  for (unsigned z = blockIdx.z / kSplit; z < kBatches; z += "
                               "gridDim.z / kSplit) {\n"
                             : "  for (unsigned z = blockIdx.z; z < kBatches; z += gridDim.z) {\n");
  absl::StrAppend(&s, Decompose(v, "z", "    "));
  auto offset = [&](size_t o, const std::string& size) {
    const std::string off = BatchOffset(v, o, batches, size);
    return off.empty() ? std::string("0u") : off;
  };
  absl::StrAppend(&s, "    const unsigned oa = ", offset(0, "kM * kK"), ", ob = ",
                  offset(1, "kK * kN"), ";  // the batch's first elements of ", a.name, " and ",
                  b.name, "\n");
  absl::StrAppend(&s, "    ", elem, "* __restrict__ y = ", ParamName(p, lk.result),
                  batches == 1 ? std::string() : " + z * (kM * kN)", ";\n");
  if (!vec_b) {
    // b's fragment rows kk + 2t + {0, 1, 8, 9} (kk = 0, 16): where column wn + g sits.
    absl::StrAppend(&s, "    unsigned fb[8];  // b's rows 2t, 2t+1, 2t+8, 2t+9, then 16 more: "
                    "row × ", pitch_b, " + its shift + wn + g\n#pragma unroll\n",
                    "    for (unsigned q = 0; q < 8u; ++q) {\n",
                    "      const unsigned kr = (q / 4u) * 16u + 2u * t + (q % 2u) + 8u * ((q / 2u) % 2u);\n",
                    "      fb[q] = ", size_a, "u + kr * ", pitch_b,
                    "u + ((ob + kr * kN) & 7u) + static_cast<unsigned>(wn) + g;\n    }\n");
  }
  absl::StrAppend(&s, "    for (unsigned tm = blockIdx.y; tm < kTilesM; tm += gridDim.y) {\n",
                  "      for (unsigned tn = blockIdx.x; tn < kTilesN; tn += gridDim.x) {\n",
                  "        const unsigned m0 = tm * ", kTile, "u, n0 = tn * ", kTile, "u;\n");
  if (!vec_a) {
    absl::StrAppend(&s, "        unsigned fa[2][2];  // a's rows wm + 16i + g + 8h: row × ",
                    kTcPitchA, " + its shift + 2t\n#pragma unroll\n",
                    "        for (unsigned i = 0; i < 2u; ++i)\n#pragma unroll\n",
                    "          for (unsigned hh = 0; hh < 2u; ++hh) {\n",
                    "            const unsigned r = static_cast<unsigned>(wm) + 16u * i + g + 8u * hh;\n",
                    "            fa[i][hh] = r * ", kTcPitchA, "u + ((oa + (m0 + r) * kK) & 7u) + 2u * t;\n",
                    "          }\n");
  }
  if (dead_rows) {
    // Every warp is done with the stages (the barrier at the previous tile's end, and the
    // cluster's second meeting after a split's reduction, which writes over them).
    const int64_t row_chunks = kTcPitchA / 8, dead = (kTile - m) * row_chunks;
    absl::StrAppend(&s, "        // a's rows ", m, " … ", kTile - 1,
                    " (past M) zero in every stage, never copied\n",
                    "        for (unsigned i = tid; i < ", kTcStages * dead, "u; i += ", kTcThreads,
                    "u)\n          *reinterpret_cast<uint4*>(&st[i / ", dead, "u][", m * kTcPitchA,
                    "u + (i % ", dead, "u) * 8u]) = make_uint4(0u, 0u, 0u, 0u);\n");
  }
  absl::StrAppend(&s, "        float acc[2][4][4];\n#pragma unroll\n",
                  "        for (int i = 0; i < 2; ++i)\n#pragma unroll\n",
                  "          for (int j = 0; j < 4; ++j)\n#pragma unroll\n",
                  "            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;\n");
  // Step `step` into stage `stg`: a's rows m0 + r from k = 32·step, b's rows k = 32·step + r from
  // column n0; each chunk filled up to its row's end (0 for a row past M or K).
  auto load = [&](const std::string& step, const std::string& stg, const std::string& ind) {
    std::string f;
    absl::StrAppend(&f, ind, "{  // step ", step, " into stage ", stg, "\n");
    struct Side {
      const char* what;
      int64_t rows, chunks, pitch, base;
      std::string row_start, valid, len, col0, ptr;
    };
    const Side sides[] = {
        {"a", kTile, chunks_a, kTcPitchA, 0, "oa + (m0 + r) * kK", "m0 + r < kM", "kK",
         absl::StrCat(step, " * ", kTcTileK, "u"), pa},
        {"b", kTcTileK, chunks_b, pitch_b, size_a,
         absl::StrCat("ob + (", step, " * ", kTcTileK, "u + r) * kN"),
         absl::StrCat(step, " * ", kTcTileK, "u + r < kK"), "kN", "n0", pb},
    };
    for (const Side& d : sides) {
      const int64_t total = d.rows * d.chunks;
      const int64_t per = (total + kTcThreads - 1) / kTcThreads;
      absl::StrAppend(&f, "#pragma unroll\n", ind, "  for (unsigned l = 0; l < ", per, "u; ++l) {  // ",
                      d.what, ": ", d.rows, " rows of ", d.chunks, " chunks\n");
      absl::StrAppend(&f, ind, "    const unsigned i = tid + l * ", kTcThreads, "u, r = i / ",
                      d.chunks, "u, c = i % ", d.chunks, "u;\n");
      absl::StrAppend(&f, ind, "    const bool live = ", d.valid, ";\n");
      absl::StrAppend(&f, ind, "    const unsigned row = live ? ", d.row_start,
                      " : 0u, e = ((row + ", d.col0, ") & ~7u) + 8u * c, end = live ? row + ",
                      d.len, " : 0u;\n");
      std::string guard;
      if (total % kTcThreads != 0) guard = absl::StrCat("i < ", total, "u");
      if (dead_rows && d.base == 0) guard = guard.empty() ? "live" : absl::StrCat(guard, " && live");
      absl::StrAppend(&f, ind, "    ", guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                      "prism_dev::CpAsync16Fill(&st[", stg, "][",
                      d.base == 0 ? "" : absl::StrCat(d.base, "u + "), "r * ", d.pitch,
                      "u + 8u * c], ", d.ptr, " + (end > e ? e : 0u), end <= e ? 0u : end - e < "
                      "8u ? (end - e) * 2u : 16u);\n");
      absl::StrAppend(&f, ind, "  }\n");
    }
    absl::StrAppend(&f, ind, "}\n");
    return f;
  };
  for (int64_t i = 0; i + 1 < kTcStages; ++i) {  // the prologue: one commit per stage, also empty
    if (splits && i < per) {  // a block's step count is known only at run time
      absl::StrAppend(&s, "        if (", i, "u < ns)\n",
                      load(step_at(absl::StrCat(i, "u")), absl::StrCat(i), "        "));
    } else if (!splits && i < steps) {
      absl::StrAppend(&s, load(absl::StrCat(i, "u"), absl::StrCat(i), "        "));
    }
    absl::StrAppend(&s, "        prism_dev::CpAsyncCommit();\n");
  }
  absl::StrAppend(&s, "        for (unsigned s = 0; s < ", nsteps, "; ++s) {\n",
                  "          prism_dev::CpAsyncWait<", kTcStages - 2, ">();  // step s has landed\n",
                  "          __syncthreads();  // for every thread; and every warp is done with step s - 1's stage\n",
                  "          if (s + ", kTcStages - 1, "u < ", nsteps, ")\n",
                  load(step_at(absl::StrCat("(s + ", kTcStages - 1, "u)")),
                       absl::StrCat("(s + ", kTcStages - 1, "u) % ", kTcStages, "u"), "          "),
                  "          prism_dev::CpAsyncCommit();\n",
                  "          const ", elem, "* sa = st[s % ", kTcStages, "u];\n",
                  vec_b ? absl::StrCat("          const ", elem, "* sb = sa + ", size_a, ";\n")
                        : std::string());
  const bool skip_warps = dead_rows && m <= kTile / 2;
  if (skip_warps) {
    absl::StrAppend(&s, "          if (static_cast<unsigned>(wm) < kM) {  // else rows wm … wm + "
                        "31 are all past M: nothing to add\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n          for (int kk = 0; kk < ", kTcTileK, "; kk += 16) {\n",
                  "            prism_dev::u32_t af[2][4];\n");
  if (vec_a) {
    absl::StrAppend(&s, "            float unused = 0.0f;\n#pragma unroll\n",
                    "            for (int i = 0; i < 2; ++i)\n",
                    "              prism_dev::LoadAFragment<false, ", h.is_bf16, ">(af[i], sa, ",
                    kTcPitchA, ", ", kTile, ", wm + 16 * i, kk, lane, unused, unused);\n");
  } else {
    absl::StrAppend(&s, "#pragma unroll\n            for (int i = 0; i < 2; ++i) {\n",
                    "              const prism_dev::f16_t* p0 = sa + fa[i][0] + kk;\n",
                    "              const prism_dev::f16_t* p1 = sa + fa[i][1] + kk;\n",
                    "              af[i][0] = prism_dev::Pack2(p0[0], p0[1]);  // (g, 2t..2t+1)\n",
                    "              af[i][1] = prism_dev::Pack2(p1[0], p1[1]);  // (g+8, 2t..2t+1)\n",
                    "              af[i][2] = prism_dev::Pack2(p0[8], p0[9]);  // (g, 2t+8..2t+9)\n",
                    "              af[i][3] = prism_dev::Pack2(p1[8], p1[9]);  // (g+8, 2t+8..2t+9)\n",
                    "            }\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n            for (int j = 0; j < 4; ++j) {\n",
                  "              prism_dev::u32_t bf[2];\n");
  if (vec_b) {
    absl::StrAppend(&s, "              prism_dev::LoadBFragment(bf, sb, ", pitch_b,
                    ", kk, wn + 8 * j, lane);\n");
  } else {
    absl::StrAppend(&s, "              const unsigned q = static_cast<unsigned>(kk) / 4u, c = 8u * static_cast<unsigned>(j);  // fb[q..q+3]: this kk's rows\n",
                    "              bf[0] = prism_dev::Pack2(sa[fb[q] + c], sa[fb[q + 1] + c]);  // (2t..2t+1, g)\n",
                    "              bf[1] = prism_dev::Pack2(sa[fb[q + 2] + c], sa[fb[q + 3] + c]);  // (2t+8..2t+9, g)\n");
  }
  absl::StrAppend(&s, "#pragma unroll\n",
                  "              for (int i = 0; i < 2; ++i) prism_dev::", h.mma, "(acc[i][j], af[i], bf);\n",
                  "            }\n          }\n", skip_warps ? "          }\n" : "", "        }\n");
  absl::StrAppend(&s, "        prism_dev::CpAsyncWait<0>();\n",
                  "        __syncthreads();  // every warp is done with the stages before the next tile's loads\n");
  if (splits) {
    // The cluster's sum: each block's f32 tile into its own stages (every cp.async has landed
    // and every warp is done with them: the wait and barrier above), the cluster meets, rank
    // `part` adds its rows (part·⌈64 / kSplit⌉ …) of all kSplit tiles in rank order and stores
    // them, and the cluster meets again so that no block leaves, or overwrites its tile, while
    // another still reads it.
    absl::StrAppend(
        &s, "        float* red = reinterpret_cast<float*>(&st[0][0]);  // ", kTile, " x ",
        kTile, " f32, rows ", kRedPitch, " apart\n#pragma unroll\n",
        "        for (int i = 0; i < 2; ++i)\n#pragma unroll\n",
        "          for (int r = 0; r < 4; r += 2)\n#pragma unroll\n",
        "            for (int j = 0; j < 4; ++j)\n",
        "              *reinterpret_cast<float2*>(&red[(static_cast<unsigned>(wm + 16 * i) + g + "
        "4u * static_cast<unsigned>(r)) * ", kRedPitch,
        "u + static_cast<unsigned>(wn + 8 * j) + 2u * t]) = make_float2(acc[i][j][r], "
        "acc[i][j][r + 1]);\n",
        "        prism_dev::ClusterSync();  // every block's tile is in its shared memory\n",
        "        const prism_dev::u32_t red_s = static_cast<prism_dev::u32_t>(__cvta_generic_to_shared(red));\n",
        "        for (unsigned e = tid; e < ", red_rows * kTile, "u; e += ", kTcThreads,
        "u) {  // this rank's rows part·", red_rows, " …\n",
        "          const unsigned row = part * ", red_rows, "u + e / ", kTile, "u, col = e % ", kTile,
        "u, m = m0 + row, n = n0 + col;\n",
        "          if (row >= ", kTile, "u) break;\n",
        "          if (m >= kM || n >= kN) continue;  // outside Y: nothing to add\n",
        "          const prism_dev::u32_t at = red_s + (row * ", kRedPitch, "u + col) * 4u;\n",
        "          float v = 0.0f;\n#pragma unroll\n",
        "          for (unsigned q = 0; q < kSplit; ++q) v += prism_dev::LdClusterF32(prism_dev::MapShared(at, q));\n",
        "          y[m * kN + n] = ", FromF32Of(out.dtype, "v"), ";\n",
        "        }\n",
        "        prism_dev::ClusterSync();  // every rank is done reading the tiles\n");
    absl::StrAppend(&s, "      }\n    }\n  }\n}\n");
    source += s;
    return launch;
  }
  // The store: fragment element r of acc[i][j] is row g + 8·(r / 2), column 2t + r % 2 of the
  // 16 × 8 tile at (wm + 16i, wn + 8j).
  absl::StrAppend(&s, "#pragma unroll\n",
                  "        for (int i = 0; i < 2; ++i) {\n#pragma unroll\n",
                  "          for (int r = 0; r < 4; r += 2) {\n",
                  "            const unsigned m = m0 + static_cast<unsigned>(wm + 16 * i) + g + 4u * static_cast<unsigned>(r);\n",
                  "            if (m >= kM) continue;\n#pragma unroll\n",
                  "            for (int j = 0; j < 4; ++j) {\n",
                  "              const unsigned n = n0 + static_cast<unsigned>(wn + 8 * j) + 2u * t;\n",
                  "              if (n < kN) y[m * kN + n] = ", FromF32Of(out.dtype, "acc[i][j][r]"), ";\n",
                  "              if (n + 1u < kN) y[m * kN + n + 1u] = ", FromF32Of(out.dtype, "acc[i][j][r + 1]"), ";\n",
                  "            }\n          }\n        }\n");
  absl::StrAppend(&s, "      }\n    }\n  }\n}\n");
  source += s;
  return launch;
}

absl::StatusOr<LaunchConfig> Matmul(const BlockProgram& p, const std::string& kname,
                                    const LibraryKernel& lk, const CodegenOptions& options,
                                    std::string& source) {
  std::string elem;
  PRISM_RETURN_IF_ERROR(CheckOperands(p, kname, lk, 2, 2, elem));
  const ConcreteTensor& a = p.tensors[lk.operands[0]];
  const ConcreteTensor& b = p.tensors[lk.operands[1]];
  const ConcreteTensor& out = p.tensors[lk.result];
  auto malformed = [&kname](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("codegen: kernel ", kname, ": matmul: ", what));
  };
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  if (b.shape[rb - 2] != k) {
    return malformed(absl::StrCat(a.name, " ", LibraryShapeText(a.shape), " and ", b.name, " ",
                                  LibraryShapeText(b.shape), " differ in K (", k, " and ",
                                  b.shape[rb - 2], ")"));
  }
  const Shape batch_a(a.shape.begin(), a.shape.end() - 2);
  const Shape batch_b(b.shape.begin(), b.shape.end() - 2);
  std::optional<Shape> batch = Broadcast(batch_a, batch_b);
  if (!batch) {
    return malformed(absl::StrCat("the batch dims of ", a.name, " ", LibraryShapeText(a.shape), " and ",
                                  b.name, " ", LibraryShapeText(b.shape), " do not broadcast"));
  }
  Shape want = *batch;
  want.push_back(m);
  want.push_back(n);
  PRISM_RETURN_IF_ERROR(CheckResult(p, kname, lk, want));
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, "matmul operand", a));
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, "matmul operand", b));
  PRISM_RETURN_IF_ERROR(CheckLibraryIndexable(kname, "matmul result", out));

  const int64_t batches = Elements(*batch);
  const int64_t tiles_m = (m + kTile - 1) / kTile, tiles_n = (n + kTile - 1) / kTile;
  std::array<int64_t, 3> grid = {std::min(tiles_n, kMaxGridDim), std::min(tiles_m, kMaxGridDim),
                                 std::min(batches, kMaxGridDim)};
  if (const Half16* h = Half16Of(out.dtype); h != nullptr) {
    int64_t split = 1;
    if (options.library_matmul_cluster_split) {
      const int64_t sms = options.balance_residency.sms > 0 ? options.balance_residency.sms : 132;
      split = ClusterSplit(tiles_m * tiles_n * batches, (k + kTcTileK - 1) / kTcTileK, sms,
                           options.library_matmul_split_blocks_per_sm);
      grid[2] *= split;  // at most sms tiles, each grid dim exact
    }
    return TensorCoreMatmul(p, kname, lk, options, *h, elem, *batch, batch_a, batch_b, m, k, n,
                            grid, split, source);
  }
  LaunchConfig launch = LibraryLaunch(p, kname, options, grid, kThreads);
  const std::string params = Params(p, lk, elem, launch);
  const BroadcastView v = MakeView(*batch, {batch_a, batch_b});
  const int64_t full_steps = k / kTileK, tail = k % kTileK;
  const int64_t smem = (kTileK * (kTile + 1) + kTileK * kTile) * 4;
  launch.reduction_bytes = smem;  // the static tiles, for the resource audit (audit.cc)

  std::string s;
  absl::StrAppend(&s, MatmulSummary(p, kname, lk, v, batches, m, k, n), "k in ", full_steps,
                  " step(s) of ", kTileK, tail > 0 ? absl::StrCat(" + ", tail) : std::string(),
                  ", fmaf in increasing k; grid (", grid[0], ", ", grid[1], ", ", grid[2], "), ",
                  kThreads, " threads, grid-stride, ", kPer * kPer, " outputs per thread, ", smem,
                  " B static shared memory\n");
  absl::StrAppend(&s, MatmulOpening(launch, params, kThreads, options, batches, m, k, n));
  absl::StrAppend(&s, "  __shared__ float sa[", kTileK, "][", kTile + 1, "];  // a's tile, sa[k][m]\n",
                  "  __shared__ float sb[", kTileK, "][", kTile, "];  // b's tile, sb[k][n]\n");
  absl::StrAppend(&s, "  const unsigned tid = threadIdx.x, tx = tid % 16u, ty = tid / 16u;\n");
  absl::StrAppend(&s, MatmulTileLoops(p, lk, v, batches, elem));
  absl::StrAppend(&s, "        float acc[", kPer, "][", kPer, "];\n#pragma unroll\n",
                  "        for (int i = 0; i < ", kPer, "; ++i) {\n#pragma unroll\n",
                  "          for (int j = 0; j < ", kPer, "; ++j) acc[i][j] = 0.0f;\n",
                  "        }\n");
  absl::StrAppend(&s, "        for (unsigned k0 = 0; k0 < kK; k0 += ", kTileK, "u) {\n");
  absl::StrAppend(&s, "          __syncthreads();  // every thread is done with the last step's tiles\n");
  absl::StrAppend(&s, "#pragma unroll\n          for (unsigned l = 0; l < ",
                  kTile * kTileK / kThreads, "u; ++l) {\n",
                  "            const unsigned i = tid + l * ", kThreads, "u;\n",
                  "            const unsigned am = m0 + i / ", kTileK, "u, ak = k0 + i % ", kTileK,
                  "u;\n",
                  "            sa[i % ", kTileK, "u][i / ", kTileK, "u] = am < kM && ak < kK ? ",
                  ToF32Of(a.dtype, "a[am * kK + ak]"), " : 0.0f;\n",
                  "            const unsigned bk = k0 + i / ", kTile, "u, bn = n0 + i % ", kTile,
                  "u;\n",
                  "            sb[i / ", kTile, "u][i % ", kTile, "u] = bk < kK && bn < kN ? ",
                  ToF32Of(b.dtype, "b[bk * kN + bn]"), " : 0.0f;\n",
                  "          }\n          __syncthreads();\n");
  auto fold = [&](int64_t count, const std::string& indent) {
    std::string f;
    absl::StrAppend(&f, "#pragma unroll\n", indent, "for (int kk = 0; kk < ", count,
                    "; ++kk) {  // increasing k\n");
    absl::StrAppend(&f, indent, "  float av[", kPer, "], bv[", kPer, "];\n#pragma unroll\n",
                    indent, "  for (int i = 0; i < ", kPer, "; ++i) av[i] = sa[kk][ty + 16 * i];\n",
                    "#pragma unroll\n", indent, "  for (int j = 0; j < ", kPer,
                    "; ++j) bv[j] = sb[kk][tx + 16 * j];\n#pragma unroll\n", indent,
                    "  for (int i = 0; i < ", kPer, "; ++i) {\n#pragma unroll\n", indent,
                    "    for (int j = 0; j < ", kPer,
                    "; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);\n", indent, "  }\n",
                    indent, "}\n");
    return f;
  };
  if (tail == 0) {
    absl::StrAppend(&s, fold(kTileK, "          "));
  } else if (full_steps == 0) {
    absl::StrAppend(&s, fold(tail, "          "));
  } else {
    absl::StrAppend(&s, "          if (k0 + ", kTileK, "u <= kK) {\n", fold(kTileK, "            "),
                    "          } else {  // the last ", tail, " k\n", fold(tail, "            "),
                    "          }\n");
  }
  absl::StrAppend(&s, "        }\n");
  absl::StrAppend(&s, "#pragma unroll\n        for (int i = 0; i < ", kPer, "; ++i) {\n",
                  "          const unsigned m = m0 + ty + 16 * i;\n",
                  "          if (m >= kM) break;\n#pragma unroll\n",
                  "          for (int j = 0; j < ", kPer, "; ++j) {\n",
                  "            const unsigned n = n0 + tx + 16 * j;\n",
                  "            if (n < kN) y[m * kN + n] = ", FromF32Of(out.dtype, "acc[i][j]"),
                  ";\n          }\n        }\n");
  absl::StrAppend(&s, "      }\n    }\n  }\n}\n");
  source += s;
  return launch;
}

}  // namespace library_ops
}  // namespace

absl::StatusOr<LaunchConfig> GenerateLibraryElementwise(const BlockProgram& p, int kernel,
                                                        const CodegenOptions& options,
                                                        std::string& source) {
  const ConcreteKernel& k = p.kernels[kernel];
  return library_ops::Elementwise(p, k.name, k.library(), options, source);
}

absl::StatusOr<LaunchConfig> GenerateLibraryMatmul(const BlockProgram& p, int kernel,
                                                   const CodegenOptions& options,
                                                   std::string& source) {
  const ConcreteKernel& k = p.kernels[kernel];
  return library_ops::Matmul(p, k.name, k.library(), options, source);
}

}  // namespace prism::codegen::internal
