// Schedule: one rank's training steps of an epoch, in order, as its Strategy lays them out:
// each step's events (this rank's share of the step's global events), its weight in the
// global mean loss, and the sync point that follows it (none: the rank's writes stay in its
// own replica; exchange: the ranks reconcile their node state). Random access gives the
// lookahead the pipeline needs: the next k steps are known before the current one runs.
#pragma once

#include <cstdint>
#include <vector>

namespace depbloom::train {

enum class SyncPoint : uint8_t {
  none,      // the step's writes go into this rank's replica only
  exchange,  // after the step the ranks exchange what they wrote (a window end)
};

struct ScheduledStep {
  int64_t index = 0;                // the epoch's step, from 0
  const int64_t* events = nullptr;  // this rank's events: stream rows, ascending
  int64_t count = 0;                // 0: the rank still takes part in every collective
  int64_t global_count = 0;         // the step's events over all ranks
  int64_t first_event = 0;          // the step's first global event (for messages)
  double loss_share = 1.0;          // count / global_count: the rank's loss weight
  SyncPoint sync = SyncPoint::none;
};

class Schedule {
 public:
  void clear() { steps_.clear(); }
  void add(const ScheduledStep& step) { steps_.push_back(step); }

  int64_t size() const { return static_cast<int64_t>(steps_.size()); }
  const ScheduledStep& step(int64_t i) const { return steps_[static_cast<size_t>(i)]; }
  // The steps after step i, at most k of them (fewer at the epoch's end): [begin, end).
  struct Range {
    const ScheduledStep* begin;
    const ScheduledStep* end;
  };
  Range lookahead(int64_t i, int64_t k) const;

 private:
  std::vector<ScheduledStep> steps_;
};

}  // namespace depbloom::train
