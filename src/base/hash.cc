#include "prism/base/hash.h"

#include <cstring>

namespace prism {

StableHasher& StableHasher::Add(double v) {
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(v));
  std::memcpy(&bits, &v, sizeof(bits));
  return Add(bits);
}

StableHasher& StableHasher::Add(absl::string_view s) {
  Add(static_cast<uint64_t>(s.size()));
  return Add(StableHashBytes(s));
}

uint64_t StableHashBytes(absl::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV prime
  }
  return Mix64(h);
}

std::string HashToHex(uint64_t hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[i] = kDigits[hash & 0xf];
    hash >>= 4;
  }
  return out;
}

}  // namespace prism
