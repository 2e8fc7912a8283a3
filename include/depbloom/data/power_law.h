// Discrete power-law fit in the manner of Clauset, Shalizi and Newman (SIAM Review, 2009):
// for each candidate x_min the exact discrete maximum-likelihood exponent, and the x_min
// whose fitted tail is closest to the data in Kolmogorov-Smirnov distance.
#pragma once

#include <cstdint>
#include <vector>

namespace depbloom::data {

struct PowerLawFit {
  double alpha = 0.0;   // exponent of p(x) ~ x^-alpha for x >= x_min; 0 when no fit
  int64_t x_min = 0;    // smallest value of the power-law tail
  double ks = 0.0;      // KS distance between the tail's empirical and fitted CDFs
  int64_t n_tail = 0;   // values >= x_min
  double alpha_se = 0;  // standard error (alpha - 1) / sqrt(n_tail)
};

// Hurwitz zeta: sum_{k >= 0} (k + q)^-s for s > 1, q > 0.
double hurwitz_zeta(double s, double q);

// Exact discrete MLE of alpha for the values >= x_min (maximises
// -n ln zeta(alpha, x_min) - alpha sum ln x). `values` need not be sorted.
double discrete_power_law_mle(const std::vector<int64_t>& values, int64_t x_min);

// Full fit: x_min scanned over the distinct values that leave at least `min_tail` values in
// the tail. Values < 1 are ignored. Returns alpha = 0 when fewer than min_tail values exist.
PowerLawFit fit_discrete_power_law(const std::vector<int64_t>& values, int64_t min_tail = 10);

}  // namespace depbloom::data
