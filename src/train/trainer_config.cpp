// The settings derived from a TrainerConfig.
#include "depbloom/train/trainer_config.h"

#include <algorithm>

namespace depbloom::train {

RefineMode refine_mode(const TrainerConfig& cfg) {
  RefineMode r;
  const int32_t m = cfg.refine_micro_batches;
  r.on = m > 1;
  r.train_micro_batches = m;
  if (!r.on) return r;
  const int64_t micro = std::max<int64_t>(1, cfg.batch_size / m);
  r.eval_micro_batches = static_cast<int32_t>(std::max<int64_t>(1, cfg.eval_batch_size / micro));
  return r;
}

}  // namespace depbloom::train
