// Row-major index arithmetic shared by the refuter and the rule checker (private to equiv).
#ifndef PRISM_SRC_EQUIV_INDEX_MATH_H_
#define PRISM_SRC_EQUIV_INDEX_MATH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism::equiv::internal {

// The multi-index of flat offset `flat` in a row-major tensor of `shape` (every extent ≥ 1).
inline std::vector<int64_t> Unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

// The flat row-major offset of multi-index `idx` in `shape` (same rank, idx[i] < shape[i]).
inline int64_t Flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return flat;
}

}  // namespace prism::equiv::internal

#endif  // PRISM_SRC_EQUIV_INDEX_MATH_H_
