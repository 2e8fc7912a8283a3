// Discrete power-law fitting (Clauset, Shalizi and Newman 2009): exact discrete MLE of the
// exponent through the Hurwitz zeta, x_min chosen by the smallest KS distance.
#include "depbloom/data/power_law.h"

#include <algorithm>
#include <cmath>

namespace depbloom::data {

double hurwitz_zeta(double s, double q) {
  // Sum the first terms directly until the argument is >= 10, then Euler-Maclaurin with
  // Bernoulli terms up to B8: the remainder is below a^(-s-9), i.e. < 1e-10 relative.
  double sum = 0.0;
  double a = q;
  while (a < 10.0) {
    sum += std::pow(a, -s);
    a += 1.0;
  }
  const double a_s = std::pow(a, -s);
  const double inv_a = 1.0 / a;
  const double inv_a2 = inv_a * inv_a;
  sum += a * a_s / (s - 1.0) + 0.5 * a_s;
  // B_{2j}/(2j)! * s(s+1)...(s+2j-2) * a^(-s-2j+1), j = 1..4.
  double rising = s;           // s (s+1) ... (s+2j-2)
  double power = a_s * inv_a;  // a^(-s-2j+1)
  const double coef[4] = {1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0, -1.0 / 1209600.0};
  for (int j = 0; j < 4; ++j) {
    sum += coef[j] * rising * power;
    rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
    power *= inv_a2;
  }
  return sum;
}

namespace {

// Log-likelihood of the tail (n values >= x_min, sum of logs `log_sum`) at exponent alpha.
double log_likelihood(double alpha, int64_t n, double log_sum, int64_t x_min) {
  return -static_cast<double>(n) * std::log(hurwitz_zeta(alpha, static_cast<double>(x_min))) -
         alpha * log_sum;
}

// The likelihood is concave in alpha (it is an exponential family in alpha), so golden
// section over a wide bracket finds the maximum without derivatives of zeta.
double maximise_alpha(int64_t n, double log_sum, int64_t x_min) {
  double lo = 1.0 + 1e-6, hi = 20.0;
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = log_likelihood(x1, n, log_sum, x_min);
  double f2 = log_likelihood(x2, n, log_sum, x_min);
  while (hi - lo > 1e-7) {
    if (f1 < f2) {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = log_likelihood(x2, n, log_sum, x_min);
    } else {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = log_likelihood(x1, n, log_sum, x_min);
    }
  }
  return 0.5 * (lo + hi);
}

struct DistinctValues {
  std::vector<int64_t> value;       // ascending distinct values >= 1
  std::vector<int64_t> tail_count;  // values >= value[j]
  std::vector<double> tail_log;     // sum of ln x over values >= value[j]
};

DistinctValues tabulate(const std::vector<int64_t>& values) {
  std::vector<int64_t> sorted;
  sorted.reserve(values.size());
  for (int64_t v : values)
    if (v >= 1) sorted.push_back(v);
  std::sort(sorted.begin(), sorted.end());
  DistinctValues d;
  std::vector<int64_t> count;
  for (int64_t v : sorted) {
    if (d.value.empty() || d.value.back() != v) {
      d.value.push_back(v);
      count.push_back(0);
    }
    ++count.back();
  }
  const size_t m = d.value.size();
  d.tail_count.assign(m + 1, 0);
  d.tail_log.assign(m + 1, 0.0);
  for (size_t j = m; j-- > 0;) {
    d.tail_count[j] = d.tail_count[j + 1] + count[j];
    d.tail_log[j] = d.tail_log[j + 1] + count[j] * std::log(static_cast<double>(d.value[j]));
  }
  return d;
}

// KS distance between the empirical CDF of the tail starting at distinct index c and the
// fitted discrete power law. Both CDFs are step functions on the integers; between two data
// values the empirical one is flat while the fitted one rises, so both ends are compared.
double ks_distance(const DistinctValues& d, size_t c, double alpha) {
  const double n = static_cast<double>(d.tail_count[c]);
  const double z_min = hurwitz_zeta(alpha, static_cast<double>(d.value[c]));
  double worst = 0.0;
  double z_here = z_min;  // zeta(alpha, value[j]) = z_min * P(X >= value[j])
  const size_t m = d.value.size();
  for (size_t j = c; j < m; ++j) {
    const double x = static_cast<double>(d.value[j]);
    const double z_next = z_here - std::pow(x, -alpha);  // zeta(alpha, value[j] + 1)
    const double emp = 1.0 - static_cast<double>(d.tail_count[j + 1]) / n;  // F(value[j])
    worst = std::max(worst, std::abs(emp - (1.0 - z_next / z_min)));
    if (j + 1 < m) {
      // Fitted CDF just before the next data value; the empirical one is still `emp`.
      const int64_t gap = d.value[j + 1] - d.value[j];
      double z_at_next = z_next;
      if (gap <= 16) {
        for (int64_t k = d.value[j] + 1; k < d.value[j + 1]; ++k)
          z_at_next -= std::pow(static_cast<double>(k), -alpha);
      } else {
        z_at_next = hurwitz_zeta(alpha, static_cast<double>(d.value[j + 1]));
      }
      worst = std::max(worst, std::abs(emp - (1.0 - z_at_next / z_min)));
      z_here = z_at_next;
    }
  }
  return worst;
}

}  // namespace

double discrete_power_law_mle(const std::vector<int64_t>& values, int64_t x_min) {
  int64_t n = 0;
  double log_sum = 0.0;
  for (int64_t v : values) {
    if (v >= x_min && v >= 1) {
      ++n;
      log_sum += std::log(static_cast<double>(v));
    }
  }
  if (n == 0 || x_min < 1) return 0.0;
  return maximise_alpha(n, log_sum, x_min);
}

PowerLawFit fit_discrete_power_law(const std::vector<int64_t>& values, int64_t min_tail) {
  const DistinctValues d = tabulate(values);
  PowerLawFit best;
  best.ks = 2.0;
  min_tail = std::max<int64_t>(min_tail, 2);
  // The last distinct value is never a candidate: a tail of one value has no shape.
  size_t candidates = 0;
  while (candidates + 1 < d.value.size() && d.tail_count[candidates] >= min_tail) ++candidates;
  // Candidates are independent; the choice among them is made serially afterwards, so the
  // result does not depend on the thread count.
  std::vector<double> alpha(candidates), ks(candidates);
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t c = 0; c < static_cast<int64_t>(candidates); ++c) {
    alpha[c] = maximise_alpha(d.tail_count[c], d.tail_log[c], d.value[c]);
    ks[c] = ks_distance(d, static_cast<size_t>(c), alpha[c]);
  }
  for (size_t c = 0; c < candidates; ++c) {
    if (ks[c] < best.ks) {
      best.alpha = alpha[c];
      best.x_min = d.value[c];
      best.ks = ks[c];
      best.n_tail = d.tail_count[c];
    }
  }
  if (best.n_tail == 0) return PowerLawFit{};
  best.alpha_se = (best.alpha - 1.0) / std::sqrt(static_cast<double>(best.n_tail));
  return best;
}

}  // namespace depbloom::data
