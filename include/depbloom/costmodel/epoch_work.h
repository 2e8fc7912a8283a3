// EpochWork: the StepWork of every rank's every step of a training epoch and the epoch's
// collectives, as --plan forecasts them (no training). EpochWorkCollector builds it from
// the plans a strategy's forecast makes (ForecastInput::observe), replaying which nodes hold
// mail on each rank (the updater skips the rest) and which writes the next step reads.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/costmodel/step_work.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/schedule.h"

namespace depbloom::costmodel {

struct EpochWork {
  int ranks = 1;
  int64_t steps = 0;
  std::vector<StepWork> work;  // [step * ranks + rank]
  dist::CommStats comm;        // the epoch's collectives (identical on every rank)
  // Of the rows exchanged at sync points, the share the next step reads: what a pipelined
  // exchange must still send before that step (DESIGN.md 7.3); 1 when nothing is exchanged.
  double urgent_exchange_share = 1.0;

  const StepWork& at(int64_t step, int rank) const {
    return work[static_cast<size_t>(step * ranks + rank)];
  }
  StepWork& at(int64_t step, int rank) { return work[static_cast<size_t>(step * ranks + rank)]; }
};

class EpochWorkCollector {
 public:
  // nodes: the stream's; skip_empty: the updater runs only on rows whose node holds mail.
  EpochWorkCollector(int ranks, int64_t nodes, bool memory, bool skip_empty);

  // One rank's planned step (step.index, step.sync as its schedule has them).
  void observe(int rank, const train::ScheduledStep& step, const train::BatchPlan& plan);
  // The epoch's work with `comm` its collectives. Steps no rank observed stay empty.
  EpochWork finish(const dist::CommStats& comm);

 private:
  struct Seen {
    std::vector<int32_t> reads, writes, mails;  // memory rows' nodes, written nodes, mailed
    bool exchange = false;
  };
  Seen& seen(int64_t step, int rank);

  int ranks_;
  int64_t nodes_;
  bool memory_, skip_empty_;
  EpochWork out_;
  std::vector<Seen> seen_;  // [step * ranks + rank]
};

}  // namespace depbloom::costmodel
