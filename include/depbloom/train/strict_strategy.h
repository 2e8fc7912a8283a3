// strict: the strict-dependency data-parallel baseline. Every global step is split into
// contiguous parts, one per rank; one all-reduce of the gradients; after every step (a sync
// point of one-step windows) the memory, last-update and mailbox rows every rank wrote are
// all-gathered (write_gather.h) and applied in event order, so every replica stays the
// 1-rank state. Per step: 1 all-reduce, 1 all-gather (per-rank counts and loss), 6
// all-gather-v.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/train/strategy.h"
#include "depbloom/train/write_gather.h"

namespace depbloom::train {

class StrictStrategy final : public RankedStrategy {
 public:
  explicit StrictStrategy(dist::Communicator& comm) : RankedStrategy(comm) {}
  const char* name() const override { return "strict"; }
  void schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                int64_t max_steps) override;
  double reconcile(const StepWrites& w) override;
  std::vector<double> rehearse_plan(const ScheduledStep& step, const PlannedWrites* planned,
                                    bool memory, const StateLayout& layout) override;
  void rehearse_reconcile(const ScheduledStep& step, bool memory, const StateLayout& layout,
                          Arena& scratch) override;

 private:
  const ExchangedRows* exchange(const ScheduledStep& step, const double* header,
                                const ExchangedRows* mine, const StateLayout& layout, Arena& arena);
  void apply_gathered(const StepWrites& w, const ExchangedRows& rows);

  WriteGather gather_;
  std::vector<double> rehearsed_;  // the header rehearse_plan returned
  std::vector<int64_t> mail_order_;
};

}  // namespace depbloom::train
