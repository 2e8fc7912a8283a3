// StepTimeSummary: quantiles of an epoch's step times, linear between the nearest ranks (the
// median of an even count is the mean of the middle two).
#include "depbloom/train/step_times.h"

#include <algorithm>

namespace depbloom::train {
namespace {

// The q-quantile (q in [0, 1]) of sorted, non-empty values.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double w = at - static_cast<double>(lo);
  return sorted[lo] * (1 - w) + sorted[hi] * w;
}

}  // namespace

StepTimeSummary summarise_step_times(std::vector<double> seconds) {
  StepTimeSummary s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  s.steps = static_cast<int64_t>(seconds.size());
  s.median = quantile(seconds, 0.5);
  s.p10 = quantile(seconds, 0.1);
  s.p90 = quantile(seconds, 0.9);
  s.max = seconds.back();
  return s;
}

}  // namespace depbloom::train
