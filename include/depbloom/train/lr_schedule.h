// The learning rate of each optimiser step: the configured rate scaled to the global batch
// (large-batch training's usual rules) and warmed up linearly over the first steps.
#pragma once

#include <cstdint>

namespace depbloom::train {

// How the rate grows with the global batch B over the reference batch B0: not at all,
// with sqrt(B / B0) (Adam's usual rule) or with B / B0 (Goyal et al.'s for SGD).
enum class LrScaling { none, sqrt, linear };

struct LrSchedule {
  LrScaling scaling = LrScaling::none;
  int64_t reference_batch = 600;  // B0: the batch the configured rate was tuned at
  int64_t warmup_steps = 0;       // 0: no warm-up
};

// The factor f(global_batch / reference_batch) of `s.scaling`.
double lr_scale(const LrSchedule& s, int64_t global_batch);

// The rate of optimiser step t (0-based, counted since the run started, resumes included):
// lr x f(B / B0) x min(1, (t + 1) / warmup_steps).
double scheduled_lr(double lr, int64_t global_batch, const LrSchedule& s, int64_t step);

}  // namespace depbloom::train
