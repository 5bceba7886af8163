#include "prism/ir/types.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prism/base/check.h"
#include "prism/base/float16.h"

namespace prism {

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
  }
  PRISM_UNREACHABLE("bad dtype ", static_cast<int>(dtype));
}

std::optional<DType> ParseDType(absl::string_view name) {
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  if (name == "f32") return DType::kF32;
  return std::nullopt;
}

int DTypeBytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

double RoundToDType(double x, DType dtype) {
  switch (dtype) {
    case DType::kF16: return RoundToF16(x);
    case DType::kBF16: return RoundToBF16(x);
    case DType::kF32: return RoundToF32(x);
  }
  PRISM_UNREACHABLE("bad dtype ", static_cast<int>(dtype));
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::optional<int64_t> NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // i counts from the trailing dim.
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot broadcast ", ShapeToString(a), " with ", ShapeToString(b), ": found dims ", da,
          " and ", db, " at position -", i + 1, ", expected equal dims or one of them 1"));
    }
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<int> NormalizeDim(int64_t dim, int rank) {
  if (dim < -rank || dim >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("dim ", dim, " is out of range for rank ", rank,
                                                   ": expected ", -rank, "..", rank - 1));
  }
  return static_cast<int>(dim < 0 ? dim + rank : dim);
}

}  // namespace prism
