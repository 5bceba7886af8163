#include "prism/base/float16.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace prism {
namespace {

// Rounds |x| (finite, non-negative) to a binary float with `mant_bits` explicit mantissa
// bits and exponent range [emin, emax] (of normal numbers), ties to even, with gradual
// underflow. Returns +inf on overflow.
double RoundBinary(double ax, int mant_bits, int emin, int emax) {
  if (ax == 0.0) return 0.0;
  int e;
  std::frexp(ax, &e);  // ax = f * 2^e, f in [0.5, 1)
  int exp = e - 1;     // ax = 1.xxx * 2^exp
  if (exp < emin) exp = emin;  // subnormal range: fixed quantum
  const double quantum = std::ldexp(1.0, exp - mant_bits);
  const double q = ax / quantum;  // exact (power-of-two scaling)
  double r = std::nearbyint(q);   // default rounding mode: ties to even
  double y = r * quantum;
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant_bits), emax);
  if (y > max_finite) return std::numeric_limits<double>::infinity();
  return y;
}

}  // namespace

uint16_t F16Bits(double x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7e00;
  double ax = std::fabs(x);
  if (std::isinf(ax)) return sign | 0x7c00;
  double r = RoundBinary(ax, 10, -14, 15);
  if (std::isinf(r)) return sign | 0x7c00;
  if (r == 0.0) return sign;
  int e;
  double f = std::frexp(r, &e);  // r = f * 2^e
  int exp = e - 1;
  if (exp < -14) {  // subnormal: r = m * 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(r, 24));
  }
  uint16_t mant = static_cast<uint16_t>(std::ldexp(f * 2.0 - 1.0, 10));
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mant;
}

double F16Value(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  if (exp == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN()
                               : sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

uint16_t BF16Bits(double x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return 0x7fc0;
  double ax = std::fabs(x);
  if (std::isinf(ax)) return sign | 0x7f80;
  double r = RoundBinary(ax, 7, -126, 127);
  if (std::isinf(r)) return sign | 0x7f80;
  // r is exactly representable in f32 and its top 16 bits are the bf16 pattern.
  float fr = static_cast<float>(r);
  uint32_t u;
  std::memcpy(&u, &fr, sizeof(u));
  return sign | static_cast<uint16_t>(u >> 16);
}

double BF16Value(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return static_cast<double>(f);
}

}  // namespace prism
