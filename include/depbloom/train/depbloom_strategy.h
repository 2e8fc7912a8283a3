// depbloom: temporally bounded spatial partitioning (DESIGN.md 7.1). The training stream is
// cut into windows (partition/window_plan.h); in each window every rank runs its own
// sub-chain of events (a node part's) against its own replica of the node state, which
// holds its own writes and the other ranks' nodes as of the window start. Gradients are
// all-reduced every step (each rank's loss weighted by its share of the step's global
// events), so the parameters stay identical. At a window end the ranks exchange the newest
// version of every row they wrote and merge them (train/window_exchange.h): the replicas
// are identical again. Per step: 2 all-reduce (gradients; the loss). Per window end, on top:
// 1 all-gather (per-rank sizes) and 6 all-gather-v (write_gather.h: memory node ids, rows,
// times; mailed node triples, mail rows, times).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "depbloom/partition/window_plan.h"
#include "depbloom/train/strategy.h"
#include "depbloom/train/window_exchange.h"
#include "depbloom/train/write_gather.h"

namespace depbloom::train {

// Rank `rank`'s steps of `plan` (views into it), each window's last step an exchange, at
// most max_steps (0: all; the last one then an exchange too); adds the scheduled windows'
// statistics to `counts`.
void window_schedule(Schedule& out, const partition::WindowPlan& plan, int rank, int64_t max_steps,
                     StrategyCounts& counts);

class DepbloomStrategy final : public RankedStrategy {
 public:
  // Keeps references to comm and stream.
  DepbloomStrategy(dist::Communicator& comm, const data::EventStream& stream,
                   const partition::PartitionConfig& partition, uint64_t seed);
  const char* name() const override { return "depbloom"; }
  bool windowed() const override { return true; }
  // Per window, this rank's sub-chain's steps, the window's last step an exchange. The plan
  // is made once per (training events, batch) and kept.
  void schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                int64_t max_steps) override;
  double reconcile(const StepWrites& w) override;
  // The window's planned writes tallied as the journal tallies the real ones.
  std::vector<double> rehearse_plan(const ScheduledStep& step, const PlannedWrites* planned,
                                    bool memory, const StateLayout& layout) override;
  void rehearse_reconcile(const ScheduledStep& step, bool memory, const StateLayout& layout,
                          Arena& scratch) override;

 private:
  double reduce_loss(const ScheduledStep& step, double local_sum);
  const ExchangedRows& gather(const double* header, const ExchangedRows& mine,
                              const StateLayout& layout, Arena& arena);
  void exchange(const StepWrites& w);

  const data::EventStream& stream_;
  partition::PartitionConfig partition_;
  uint64_t seed_;
  partition::WindowPlan plan_;
  bool planned_ = false;
  const int64_t* plan_train_ = nullptr;  // the training list and batch the plan was made for
  size_t plan_size_ = 0;
  int64_t plan_batch_ = 0;

  std::unique_ptr<WindowJournal> journal_;  // made at the first step (needs the state's sizes)
  WindowMerger merger_;
  WriteGather gather_;
  double loss_sum_ = 0;
  std::unique_ptr<WindowTally> tally_;  // the rehearsal's (made at its first step)
  std::vector<double> rehearsed_;       // the header rehearse_plan returned
};

}  // namespace depbloom::train
