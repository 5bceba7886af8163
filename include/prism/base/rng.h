// A seeded, deterministic, platform-independent random number generator (xoshiro256**,
// seeded through splitmix64). Unlike the std:: distributions, every method here produces the
// same sequence on every standard library, so seeded tests and random inputs are reproducible.
//
//   Rng rng(/*seed=*/42);
//   double x = rng.Normal();          // N(0, 1)
//   int64_t k = rng.UniformInt(0, 9); // inclusive bounds
#ifndef PRISM_BASE_RNG_H_
#define PRISM_BASE_RNG_H_

#include <cstdint>

namespace prism {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  // Next raw 64 random bits.
  uint64_t Next();
  // Uniform in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform in [lo, hi); requires lo < hi.
  double Uniform(double lo, double hi);
  // Uniform integer in [lo, hi] (inclusive), unbiased; requires lo <= hi.
  int64_t UniformInt(int64_t lo, int64_t hi);
  // Standard normal N(0, 1) (Box–Muller; deterministic across platforms up to libm's
  // log/cos/sin, which are correctly rounded on glibc for these ranges).
  double Normal();
  // A new generator whose stream is independent of this one's (for per-worker streams).
  Rng Fork();

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace prism

#endif  // PRISM_BASE_RNG_H_
