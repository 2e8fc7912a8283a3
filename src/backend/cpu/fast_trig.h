// cos and sin of float arguments for the time encoding, where libm's scalar calls were a
// third of a TGN training step (millions per batch). The float argument is widened to
// double, reduced by a multiple of 2*pi (rounded with the 1.5 * 2^52 trick, which
// vectorises without SSE4.1) and fed to Taylor polynomials on [-pi, pi] whose truncation
// error is below 1e-9, so the result is within 1e-7 of cos/sin of the float argument for
// |x| < 2^40. Branch-free, so `#pragma omp simd` loops vectorise.
#pragma once

namespace depbloom::ops::cpu {

inline double reduce_two_pi(double x) {
  constexpr double kInvTwoPi = 0.15915494309189533577;
  constexpr double kTwoPiHi = 6.28318530717958623200;      // 2*pi rounded to double
  constexpr double kTwoPiLo = 2.44929359829470635445e-16;  // 2*pi - kTwoPiHi
  constexpr double kRound = 6755399441055744.0;            // 1.5 * 2^52
  const double k = (x * kInvTwoPi + kRound) - kRound;      // nearest integer
  return (x - k * kTwoPiHi) - k * kTwoPiLo;
}

inline float fast_cos(float xf) {
  const double r = reduce_two_pi(static_cast<double>(xf));
  const double r2 = r * r;
  // sum_{n=0}^{11} (-1)^n r^(2n) / (2n)!, Horner in r^2.
  double p = 1.0 / 6.2044840173323943936e23;    // 1/24!
  p = p * r2 - 1.0 / 1.1240007277776076800e21;  // 1/22!
  p = p * r2 + 1.0 / 2.4329020081766400000e18;  // 1/20!
  p = p * r2 - 1.0 / 6.4023737057280000000e15;  // 1/18!
  p = p * r2 + 1.0 / 2.0922789888000000000e13;  // 1/16!
  p = p * r2 - 1.0 / 87178291200.0;             // 1/14!
  p = p * r2 + 1.0 / 479001600.0;               // 1/12!
  p = p * r2 - 1.0 / 3628800.0;                 // 1/10!
  p = p * r2 + 1.0 / 40320.0;                   // 1/8!
  p = p * r2 - 1.0 / 720.0;                     // 1/6!
  p = p * r2 + 1.0 / 24.0;                      // 1/4!
  p = p * r2 - 0.5;                             // 1/2!
  return static_cast<float>(p * r2 + 1.0);
}

inline float fast_sin(float xf) {
  const double r = reduce_two_pi(static_cast<double>(xf));
  const double r2 = r * r;
  // r * sum_{n=0}^{11} (-1)^n r^(2n) / (2n+1)!, Horner in r^2.
  double q = -1.0 / 2.5852016738884976640e22;   // 1/23!
  q = q * r2 + 1.0 / 5.1090942171709440000e19;  // 1/21!
  q = q * r2 - 1.0 / 1.2164510040883200000e17;  // 1/19!
  q = q * r2 + 1.0 / 3.5568742809600000000e14;  // 1/17!
  q = q * r2 - 1.0 / 1307674368000.0;           // 1/15!
  q = q * r2 + 1.0 / 6227020800.0;              // 1/13!
  q = q * r2 - 1.0 / 39916800.0;                // 1/11!
  q = q * r2 + 1.0 / 362880.0;                  // 1/9!
  q = q * r2 - 1.0 / 5040.0;                    // 1/7!
  q = q * r2 + 1.0 / 120.0;                     // 1/5!
  q = q * r2 - 1.0 / 6.0;                       // 1/3!
  q = q * r2 + 1.0;
  return static_cast<float>(r * q);
}

}  // namespace depbloom::ops::cpu
