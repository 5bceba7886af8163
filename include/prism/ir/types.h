// Element types and shapes of Program tensors, with numpy trailing-dim broadcasting.
//
//   Shape s{16, 4096};                    // rank 2
//   auto b = BroadcastShapes({16, 1}, {4096});   // [16, 4096]
//   absl::string_view n = DTypeName(DType::kF16);  // "f16"
#ifndef PRISM_IR_TYPES_H_
#define PRISM_IR_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism {

enum class DType : uint8_t { kF16, kBF16, kF32 };

// "f16", "bf16", "f32".
absl::string_view DTypeName(DType dtype);
// Inverse of DTypeName; nullopt for anything else.
std::optional<DType> ParseDType(absl::string_view name);
// Bytes per element: 2, 2, 4.
int DTypeBytes(DType dtype);
// Rounds a value to the nearest representable value of `dtype` (ties to even).
double RoundToDType(double x, DType dtype);

// Limits every Program obeys (validated, with a clear error, at construction).
inline constexpr int kMaxRank = 4;
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;  // each dim in [1, 2^31 - 1]

// A static shape: rank 1..kMaxRank, each dim ≥ 1. (Validation happens in the Program
// builder; a Shape itself is a plain value.)
using Shape = std::vector<int64_t>;

// "[16, 4096]".
std::string ShapeToString(const Shape& shape);
// Product of dims (number of elements); requires a validated shape (no overflow possible
// for rank ≤ 4 and dims < 2^31 … except products over 2^63, which are checked: returns
// nullopt on overflow).
std::optional<int64_t> NumElements(const Shape& shape);

// numpy broadcasting of two shapes, aligned at the trailing dim: each pair of dims must be
// equal or one of them 1. InvalidArgument names both shapes and the first bad dim pair.
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Normalizes an axis for a tensor of `rank`: -rank ≤ dim < rank → [0, rank). InvalidArgument
// ("dim 2 is out of range for rank 2: expected -2..1") otherwise.
absl::StatusOr<int> NormalizeDim(int64_t dim, int rank);

}  // namespace prism

#endif  // PRISM_IR_TYPES_H_
