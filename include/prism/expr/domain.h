// Domains of symbolic integer parameters: the set of values a family parameter may take.
//
// Four kinds, all bounded (so every domain is finite and has a least and a greatest value):
//   range(lo, hi)            every integer in [lo, hi]
//   pow2(lo, hi)             the powers of two 2^k (k >= 0) in [lo, hi]
//   divisors(n[, lo, hi])    the positive divisors of n (n >= 1), optionally within [lo, hi]
//   {v1, v2, ...}            an explicit non-empty finite set
// The printed forms above are also the parse syntax (Domain::Parse) and a JSON string form.
//
//   PRISM_ASSIGN_OR_RETURN(Domain g, Domain::DivisorsOf(6144));
//   g.Contains(48);              // true
//   g.ToString();                // "divisors(6144)"
//   PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> v, Domain::Parse("pow2(64, 512)")->Enumerate());
//   // v == {64, 128, 256, 512}
#ifndef PRISM_EXPR_DOMAIN_H_
#define PRISM_EXPR_DOMAIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json_fwd.hpp"

namespace prism {

class Domain {
 public:
  enum class Kind { kRange, kPowerOfTwo, kDivisorsOf, kSet };

  // The domain {0}; exists so that Domain is default-constructible (e.g. in containers).
  Domain() = default;

  // [lo, hi]; InvalidArgument if lo > hi.
  static absl::StatusOr<Domain> Range(int64_t lo, int64_t hi);
  // Powers of two in [lo, hi]; InvalidArgument if lo > hi or no power of two lies in [lo, hi].
  static absl::StatusOr<Domain> PowerOfTwo(int64_t lo, int64_t hi);
  // Positive divisors of n within [lo, hi]; InvalidArgument if n < 1 or none lies in [lo, hi].
  static absl::StatusOr<Domain> DivisorsOf(int64_t n);
  static absl::StatusOr<Domain> DivisorsOf(int64_t n, int64_t lo, int64_t hi);
  // An explicit set (duplicates removed, sorted); InvalidArgument if empty.
  static absl::StatusOr<Domain> Set(std::vector<int64_t> values);

  // Parses the printed form (see the file comment), e.g. "divisors(4096, 16, 256)".
  // Errors: InvalidArgument "at offset N: found ..., expected ...", or the factory's error.
  static absl::StatusOr<Domain> Parse(absl::string_view text);

  Kind kind() const { return kind_; }
  // For kRange/kPowerOfTwo/kDivisorsOf: the bounds as given (for kDivisorsOf without bounds,
  // [1, n]). For kSet: the least and greatest element.
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  // kDivisorsOf only: n.
  int64_t divisor_of() const { return n_; }
  // kSet only: the sorted distinct values.
  const std::vector<int64_t>& values() const { return values_; }

  // The least / greatest member (exact, e.g. pow2(3, 100) has Min() 4 and Max() 64).
  int64_t Min() const;
  int64_t Max() const;

  bool Contains(int64_t v) const;
  // Number of members (saturates at INT64_MAX for huge ranges).
  int64_t Size() const;
  // The members in increasing order. InvalidArgument if there are more than `max_count`
  // (a huge range); the message gives the size.
  absl::StatusOr<std::vector<int64_t>> Enumerate(int64_t max_count = int64_t{1} << 24) const;

  // The printed form, e.g. "range(1, 4)", "pow2(64, 512)", "divisors(6144)",
  // "divisors(4096, 16, 256)", "{64, 128, 256, 512}".
  std::string ToString() const;

  // JSON: {"kind": "range", "lo": 1, "hi": 4}, {"kind": "pow2", "lo": 64, "hi": 512},
  // {"kind": "divisors", "of": 6144} (optional "lo", "hi"), {"kind": "set", "values": [...]}.
  // FromJson also accepts the printed form as a JSON string. Errors name the offending key.
  nlohmann::json ToJson() const;
  static absl::StatusOr<Domain> FromJson(const nlohmann::json& j);

  // Structural equality: same kind and same parameters (range(1, 1) != {1}).
  friend bool operator==(const Domain& a, const Domain& b);
  // Stable hash of the kind and parameters.
  uint64_t StableHash() const;

 private:
  Kind kind_ = Kind::kSet;
  int64_t lo_ = 0;
  int64_t hi_ = 0;
  int64_t n_ = 0;
  std::vector<int64_t> values_ = {0};
};

}  // namespace prism

#endif  // PRISM_EXPR_DOMAIN_H_
