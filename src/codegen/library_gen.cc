// Library kernels (gen_util.h GenerateLibraryKernel): a kernel that runs one Program op on
// whole tensors (block_graph.h LibraryKernel). concat and the fibre ops sum, max, mean, softmax
// and rms_norm are generated; any other op is Unimplemented.
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
// base_f + k·inner, base_f = o·n·inner + i. One thread per fibre folds it sequentially in
// increasing k from +0 in f32 (max: from x_0, a NaN kept), which is §3.2 / §3.3's device
// order exactly, so the result equals the interpreter's device mode up to expf. sum / max / mean
// store element f of the keepdim result ([outer, 1, inner]); softmax reads the fibre three
// times (max, Σ expf(x − m), then expf(x − m) / Σ stored), rms_norm twice (Σ x² as fmaf, then
// x · (1 / sqrtf(Σx² / n + eps)) stored). Threads of a warp hold consecutive fibres, so with
// inner ≥ 32 every load and store of a warp is one contiguous run; with inner = 1 (the last
// dim) a warp's 32 loads of one step hit 32 rows n elements apart — uncoalesced, served by L1
// sector by sector, and only outer threads in all: the price of keeping §3.3's sequential order
// without shared memory (a warp-wide tree would reorder the sum).
//
// Launch: kFibreThreads threads per block, ⌈outer·inner / kFibreThreads⌉ blocks, one fibre per
// thread (no grid-stride loop); no shared memory. 32-bit unsigned indices: an operand of more
// than 2^31 − 1 elements is refused (ResourceExhausted); every index is then below 2^31 and the
// fibre index below ⌈2^31 / 256⌉ · 256 < 2^32.
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
// Both kernels index with 32 bits.
constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

std::string ShapeText(const Shape& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// A library kernel's launch: its function name (prism_<program>_<kernel><suffix>), a 1-D grid
// of `blocks` blocks of `threads` threads, no shared memory, PDL as the options say; the
// arguments are the caller's.
LaunchConfig LibraryLaunch(const BlockProgram& p, const std::string& kname,
                           const CodegenOptions& options, int64_t blocks, int64_t threads) {
  LaunchConfig launch;
  launch.kernel = kname;
  launch.function = absl::StrCat("prism_", Ident(p.name), "_", Ident(kname), options.name_suffix);
  launch.grid = {blocks, 1, 1};
  launch.threads = threads;
  launch.programmatic = options.programmatic_dependent_launch;
  return launch;
}

// ResourceExhausted "codegen: kernel <k>: <what> <name> <shape> has more than 2147483647
// elements (the kernel indexes with 32 bits)" when `t` has more elements than kMaxElements.
absl::Status CheckIndexable(const std::string& kname, absl::string_view what,
                            const ConcreteTensor& t) {
  int64_t elements = 1;  // saturating (every dim is at least 1)
  for (int64_t d : t.shape) {
    elements = elements > kMaxElements / d ? kMaxElements + 1 : elements * d;
  }
  if (elements <= kMaxElements) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("codegen: kernel ", kname, ": ", what, " ",
                                                   t.name, " ", ShapeText(t.shape),
                                                   " has more than ", kMaxElements,
                                                   " elements (the kernel indexes with 32 bits)"));
}

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
      return malformed(absl::StrCat(x.name, " ", ShapeText(x.shape), " and ", first.name, " ",
                                    ShapeText(first.shape), " differ in rank"));
    }
    for (int d = 0; d < rank; ++d) {
      if (x.shape[d] < 1) {
        return malformed(absl::StrCat(x.name, " ", ShapeText(x.shape), " has an empty dim"));
      }
      if (d != dim && x.shape[d] != first.shape[d]) {
        return malformed(absl::StrCat(x.name, " ", ShapeText(x.shape), " and ", first.name, " ",
                                      ShapeText(first.shape), " differ outside dim ", dim));
      }
    }
    want[dim] += x.shape[dim];
  }
  if (out.dtype != first.dtype || out.shape != want) {
    return malformed(absl::StrCat("the result ", out.name, " is ", DTypeName(out.dtype), " ",
                                  ShapeText(out.shape), ", expected ", DTypeName(first.dtype),
                                  " ", ShapeText(want)));
  }
  absl::StatusOr<std::string> elem = DeviceElemType(out);
  if (!elem.ok()) {
    return absl::UnimplementedError(
        absl::StrCat("codegen: kernel ", kname, ": ", elem.status().message()));
  }
  PRISM_RETURN_IF_ERROR(CheckIndexable(kname, "concat result", out));

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

  LaunchConfig launch = LibraryLaunch(p, kname, options, blocks, kConcatThreads);
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
    parts.push_back(absl::StrCat(x.name, " ", ShapeText(x.shape)));
    counts.push_back(absl::StrCat(inner[i]));
  }
  std::string s;
  absl::StrAppend(&s, "// kernel ", kname, ": library kernel concat(", absl::StrJoin(parts, ", "),
                  ", dim ", dim, ") -> ", out.name, " ", DTypeName(out.dtype), " ",
                  ShapeText(out.shape), "; ", outer, " row(s) of ", absl::StrJoin(counts, " + "),
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
    if (d < 1) return malformed(absl::StrCat(x.name, " ", ShapeText(x.shape), " has an empty dim"));
  }
  const bool reduces = lk.op == OpKind::kSum || lk.op == OpKind::kMax || lk.op == OpKind::kMean;
  Shape want = x.shape;
  if (reduces) want[dim] = 1;
  if (out.dtype != x.dtype || out.shape != want) {
    return malformed(absl::StrCat("the result ", out.name, " is ", DTypeName(out.dtype), " ",
                                  ShapeText(out.shape), ", expected ", DTypeName(x.dtype), " ",
                                  ShapeText(want)));
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
  PRISM_RETURN_IF_ERROR(CheckIndexable(kname, absl::StrCat(op_name, " operand"), x));

  // The [outer, n, inner] view.
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int d = dim + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t n = x.shape[dim];
  const int64_t fibres = outer * inner;
  const int64_t blocks = (fibres + kFibreThreads - 1) / kFibreThreads;

  LaunchConfig launch = LibraryLaunch(p, kname, options, blocks, kFibreThreads);
  launch.args = {xt, lk.result};
  launch.written = {false, true};
  const std::string xp = ParamName(p, xt), yp = ParamName(p, lk.result);

  // Loads and stores of element k of the fibre, in f32.
  const Half16* h = Half16Of(x.dtype);
  const std::string stride = inner == 1 ? std::string() : " * kInner";
  auto load = [&](const std::string& k) {
    const std::string e = k == "0" ? std::string("x[0]") : absl::StrCat("x[", k, stride, "]");
    return h != nullptr ? absl::StrCat("prism_dev::", h->to_f32, "(", e, ")") : e;
  };
  auto rounded = [&](const std::string& v) {
    return h != nullptr ? absl::StrCat("prism_dev::", h->from_f32, "(", v, ")") : v;
  };

  std::string s;
  absl::StrAppend(&s, "// kernel ", kname, ": library kernel ", op_name, "(", x.name, " ",
                  DTypeName(x.dtype), " ", ShapeText(x.shape), ", dim ", dim);
  if (lk.op == OpKind::kRmsNorm) absl::StrAppend(&s, ", eps ", FloatLit(lk.eps));
  absl::StrAppend(&s, ") -> ", out.name, " ", ShapeText(out.shape), "; viewed as [", outer, ", ",
                  n, ", ", inner, "]: ", fibres, " fibre(s) of ", n, " at stride ", inner,
                  ", one thread each, folded in index order; grid ", blocks, ", ", kFibreThreads,
                  " threads\n");
  absl::StrAppend(&s, "extern \"C\" __global__ void __launch_bounds__(", kFibreThreads, ") ",
                  launch.function, "(const ", *elem, "* __restrict__ ", xp, ", ", *elem,
                  "* __restrict__ ", yp, ") {\n");
  absl::StrAppend(&s, KernelPrologue(options));
  absl::StrAppend(&s, "  constexpr unsigned kN = ", n, "u",
                  inner == 1 ? std::string() : absl::StrCat(", kInner = ", inner, "u"),
                  ", kFibres = ", fibres, "u;\n");
  absl::StrAppend(&s, "  const unsigned f = blockIdx.x * ", kFibreThreads,
                  "u + threadIdx.x;  // the fibre\n  if (f >= kFibres) return;\n");
  std::string base;
  if (inner == 1) {
    base = "f * kN";
  } else if (outer == 1) {
    base = "f";
  } else {
    absl::StrAppend(&s, "  const unsigned o = f / kInner, i = f - o * kInner;\n");
    base = "o * (kN * kInner) + i";
  }
  absl::StrAppend(&s, "  const ", *elem, "* __restrict__ x = ", xp, " + ", base, ";\n");
  if (!reduces) {
    absl::StrAppend(&s, "  ", *elem, "* __restrict__ y = ", yp, " + ", base, ";\n");
  }
  const std::string loop = "#pragma unroll 4\n  for (unsigned k = ";
  auto max_pass = [&](const std::string& m) {
    absl::StrAppend(&s, "  float ", m, " = ", load("0"), ";  // max: from x_0, a NaN kept\n",
                    loop, "1; k < kN; ++k) {\n    const float v = ", load("k"), ";\n    if (v > ",
                    m, " || v != v) ", m, " = v;\n  }\n");
  };
  switch (lk.op) {
    case OpKind::kSum:
    case OpKind::kMean:
      absl::StrAppend(&s, "  float acc = 0.0f;\n", loop, "0; k < kN; ++k) acc = acc + ",
                      load("k"), ";\n");
      absl::StrAppend(&s, "  ", yp, "[f] = ",
                      rounded(lk.op == OpKind::kMean
                                  ? absl::StrCat("acc / ", FloatLit(static_cast<double>(n)))
                                  : std::string("acc")),
                      ";\n");
      break;
    case OpKind::kMax:
      max_pass("acc");
      absl::StrAppend(&s, "  ", yp, "[f] = ", rounded("acc"), ";\n");
      break;
    case OpKind::kSoftmax:
      max_pass("m");
      absl::StrAppend(&s, "  float sum = 0.0f;\n", loop, "0; k < kN; ++k) sum = sum + expf(",
                      load("k"), " - m);\n");
      absl::StrAppend(&s, loop, "0; k < kN; ++k) y[k", stride, "] = ",
                      rounded(absl::StrCat("expf(", load("k"), " - m) / sum")), ";\n");
      break;
    case OpKind::kRmsNorm:
      absl::StrAppend(&s, "  float ss = 0.0f;\n", loop, "0; k < kN; ++k) {\n    const float v = ",
                      load("k"), ";\n    ss = fmaf(v, v, ss);\n  }\n");
      absl::StrAppend(&s, "  const float inv = 1.0f / sqrtf(ss / ",
                      FloatLit(static_cast<double>(n)), " + ", FloatLit(lk.eps), ");\n");
      absl::StrAppend(&s, loop, "0; k < kN; ++k) y[k", stride, "] = ",
                      rounded(absl::StrCat(load("k"), " * inv")), ";\n");
      break;
    default:
      break;
  }
  absl::StrAppend(&s, "}\n");
  source += s;
  return launch;
}

}  // namespace

absl::StatusOr<LaunchConfig> GenerateLibraryKernel(const BlockProgram& p, int kernel,
                                                   const CodegenOptions& options,
                                                   std::string& source) {
  const ConcreteKernel& k = p.kernels[kernel];
  const LibraryKernel& lk = k.library();
  if (IsFibreOp(lk.op)) return GenerateFibreOp(p, k.name, lk, options, source);
  if (lk.op != OpKind::kConcat) {
    return absl::UnimplementedError(absl::StrCat("codegen: kernel ", k.name,
                                                 ": library kernels (", GetOpInfo(lk.op).name,
                                                 ") are not supported yet"));
  }
  return GenerateConcat(p, k.name, lk, options, source);
}

}  // namespace prism::codegen::internal
