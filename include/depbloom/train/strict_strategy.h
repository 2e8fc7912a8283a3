// strict: the strict-dependency data-parallel baseline. Every global step is split into
// contiguous parts, one per rank; one all-reduce of the gradients; after every step (a sync
// point of one-step windows) the memory, last-update and mailbox rows every rank wrote are
// all-gathered and applied in event order, so every replica stays the 1-rank state.
// Per step: 1 all-reduce, 1 all-gather (per-rank counts and loss), 6 all-gather-v.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/train/strategy.h"

namespace depbloom::train {

class StrictStrategy final : public RankedStrategy {
 public:
  explicit StrictStrategy(dist::Communicator& comm) : RankedStrategy(comm) {}
  const char* name() const override { return "strict"; }
  void schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                int64_t max_steps) override;
  double reconcile(const StepWrites& w) override;
  // The collectives and exchanges of an epoch, from every rank's planned writes.
  static EpochForecast forecast(const ForecastInput& in);

 private:
  void exchange_and_apply(const StepWrites& w, int64_t mem_total, int64_t mail_total);

  // Per-rank counts and the gathered host-side node ids and mail order, reused every step.
  std::vector<double> my_counts_, all_counts_;
  std::vector<int64_t> mem_counts_, mail_counts_, scaled_;
  std::vector<int32_t> all_mem_node_, all_mail_node_;
  std::vector<int64_t> mail_order_;
};

}  // namespace depbloom::train
