// IEEE binary16 (f16) and bfloat16 rounding for the reference interpreter's device mode and
// the block emulator: round-to-nearest-even, overflow to ±inf, subnormals kept (f16), NaN kept.
//
//   double y = RoundToF16(0.1);    // 0.0999755859375
//   uint16_t bits = F16Bits(1.0);  // 0x3c00
#ifndef PRISM_BASE_FLOAT16_H_
#define PRISM_BASE_FLOAT16_H_

#include <cstdint>

namespace prism {

// The f16 bit pattern nearest to `x` (ties to even), rounded directly from double (one
// rounding, no double rounding through f32).
uint16_t F16Bits(double x);
// The value of an f16 bit pattern.
double F16Value(uint16_t bits);
// x rounded to the nearest f16 value.
inline double RoundToF16(double x) { return F16Value(F16Bits(x)); }

// Same for bfloat16 (8 exponent bits, 7 mantissa bits).
uint16_t BF16Bits(double x);
double BF16Value(uint16_t bits);
inline double RoundToBF16(double x) { return BF16Value(BF16Bits(x)); }

// x rounded to the nearest f32 value.
inline double RoundToF32(double x) { return static_cast<double>(static_cast<float>(x)); }

}  // namespace prism

#endif  // PRISM_BASE_FLOAT16_H_
