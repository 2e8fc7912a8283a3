// Internal: exp, sigmoid and tanh for the CPU kernels. The float versions are written in
// plain arithmetic (no libm calls) so that `omp simd` loops vectorise; glibc's expf/tanhf
// are scalar calls, and tanhf alone cost more than the rest of a GRU cell. Accuracy: a few
// ulp of float. The double versions are the libm functions (the reference precision).
#pragma once

#include <cmath>
#include <cstdint>

namespace depbloom::ops::cpu {

// exp(x) for float: x = n ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to r^7
// (truncation below 2^-24 relative), times 2^n built in the exponent bits. Inputs are
// clamped to [-87, 88] so that 2^n stays a normal float: exp(-87) ~ 1.6e-38 stands in for
// anything smaller and exp(88) ~ 1.7e38 for anything larger (no inf, no denormals).
//
// The bounds live in cpu_math.cpp, out of the compiler's sight: with literal bounds GCC
// folds the whole computation for the clamped branch (partial redundancy elimination),
// leaving a branch with trapping float math that it then refuses to vectorise.
extern const float kExpFastLowest;   // -87
extern const float kExpFastHighest;  // 88
inline float exp_fast(float in) {
  const float low = in < kExpFastLowest ? kExpFastLowest : in;
  const float x = in > kExpFastHighest ? kExpFastHighest : low;
  // Round x / ln2 to the nearest integer with the 1.5 * 2^23 trick: t's low mantissa bits
  // then hold n itself, read without a float->int conversion (undefined for NaN).
  const float shifter = 12582912.0f;
  const float t = x * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  const uint32_t n_bits = __builtin_bit_cast(uint32_t, t) - __builtin_bit_cast(uint32_t, shifter);
  // ln2 split in two so that n * ln2_hi is exact.
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n as exponent bits; NaN input reaches here as NaN in r, so p carries it out.
  return p * __builtin_bit_cast(float, (n_bits + 127u) << 23);
}

inline double exp_fast(double x) {
  return std::exp(x);
}

template <class T>
T sigmoid_fast(T x) {
  return T(1) / (T(1) + exp_fast(-x));
}

// tanh for float: 1 - 2 / (exp(2|x|) + 1) with the sign restored; near 0, where that
// cancels, the odd Taylor series (error below x^9 / 40 for |x| < 1/16).
inline float tanh_fast(float x) {
  const float a = std::fabs(x);
  const float far = 1.0f - 2.0f / (exp_fast(2.0f * a) + 1.0f);
  const float a2 = a * a;
  const float near =
      a * (1.0f + a2 * (-1.0f / 3.0f + a2 * (2.0f / 15.0f + a2 * (-17.0f / 315.0f))));
  // Chosen with bit masks, not `?:`: GCC would sink `far` (a division) into a branch and
  // then no longer vectorise the loop.
  const uint32_t use_near = a < 0.0625f ? ~0u : 0u;
  const uint32_t bits = (__builtin_bit_cast(uint32_t, near) & use_near) |
                        (__builtin_bit_cast(uint32_t, far) & ~use_near);
  return std::copysign(__builtin_bit_cast(float, bits), x);
}

inline double tanh_fast(double x) {
  return std::tanh(x);
}

}  // namespace depbloom::ops::cpu
