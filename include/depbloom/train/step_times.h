// Quantiles of a training epoch's step wall times (metrics.jsonl's `step_s`). On a GPU the
// host queues a step's kernels and waits only for its loss, so once warm the time from one
// step's start to the next's is the step's share of the device (or of the host, when the
// host is slower): tools/gpu-bench.sh reads the median as a warm step's time, the first,
// cold steps (allocations, cuBLAS's set-up) and stragglers aside.
#pragma once

#include <cstdint>
#include <vector>

namespace depbloom::train {

struct StepTimeSummary {
  int64_t steps = 0;                             // how many steps were timed (0: the rest is 0)
  double median = 0, p10 = 0, p90 = 0, max = 0;  // seconds
};

// The quantiles of `seconds` (one entry per step), linear between the nearest ranks.
StepTimeSummary summarise_step_times(std::vector<double> seconds);

}  // namespace depbloom::train
