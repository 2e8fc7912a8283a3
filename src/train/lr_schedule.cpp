// Learning-rate scaling and warm-up (lr_schedule.h).
#include "depbloom/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace depbloom::train {

double lr_scale(const LrSchedule& s, int64_t global_batch) {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(s.reference_batch);
  switch (s.scaling) {
    case LrScaling::none:
      return 1.0;
    case LrScaling::sqrt:
      return std::sqrt(ratio);
    case LrScaling::linear:
      return ratio;
  }
  return 1.0;
}

double scheduled_lr(double lr, int64_t global_batch, const LrSchedule& s, int64_t step) {
  double warm = 1.0;
  if (s.warmup_steps > 0)
    warm = std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps));
  return lr * lr_scale(s, global_batch) * warm;
}

}  // namespace depbloom::train
