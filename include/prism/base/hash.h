// Stable hashing: the same value hashes to the same 64 bits on every run, platform and build
// (unlike absl::Hash, which is salted per process). Used for structural hashes that appear in
// caches, reports and file names.
//
//   StableHasher h;
//   h.Add("matmul").Add(int64_t{4096}).Add(other_hash);
//   uint64_t key = h.Finish();
#ifndef PRISM_BASE_HASH_H_
#define PRISM_BASE_HASH_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <type_traits>

namespace prism {

// Mixes 64 bits (the splitmix64 finalizer): a bijection with good avalanche.
constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Combines a running hash with one more 64-bit value; order-sensitive.
constexpr uint64_t HashCombine(uint64_t seed, uint64_t value) {
  return Mix64(seed ^ (Mix64(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

// Incremental, order-sensitive, platform-independent hasher.
class StableHasher {
 public:
  explicit constexpr StableHasher(uint64_t seed = 0x70726973'6d000001ULL) : state_(seed) {}

  StableHasher& Add(uint64_t v) { state_ = HashCombine(state_, v); return *this; }
  StableHasher& Add(int64_t v) { return Add(static_cast<uint64_t>(v)); }
  StableHasher& Add(int v) { return Add(static_cast<uint64_t>(static_cast<int64_t>(v))); }
  StableHasher& Add(uint32_t v) { return Add(static_cast<uint64_t>(v)); }
  StableHasher& Add(bool v) { return Add(static_cast<uint64_t>(v ? 1 : 0)); }
  // Hashes the bit pattern; +0.0 and -0.0 hash differently, NaNs by payload.
  StableHasher& Add(double v);
  // Length-prefixed, so Add("ab").Add("c") differs from Add("a").Add("bc").
  StableHasher& Add(absl::string_view s);
  StableHasher& Add(const char* s) { return Add(absl::string_view(s)); }
  StableHasher& Add(const std::string& s) { return Add(absl::string_view(s)); }

  uint64_t Finish() const { return Mix64(state_); }

 private:
  uint64_t state_;
};

// 16 lowercase hex digits, e.g. for cache keys and report fields.
std::string HashToHex(uint64_t hash);

// Stable hash of a byte string (FNV-1a folded through Mix64).
uint64_t StableHashBytes(absl::string_view bytes);

}  // namespace prism

#endif  // PRISM_BASE_HASH_H_
