// StepPipeline: critical-path pipelining (DESIGN.md 7.3) around the StepRunner. It owns this
// rank's schedule of the epoch, the step data and arena the runner works in, and with
// pipeline.enabled a second pair that steps alternate with, so that the side thread's
// deferred writes (views into the last step's data) outlive the next step. Before a step's
// writes it marks the nodes the next pipeline.horizon steps read (their rows are urgent, the
// rest deferred to the StepWriter's side thread), planning those steps ahead where not yet,
// and has the side thread plan the step after them. Off, it runs each step as is.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "depbloom/train/pipeline.h"
#include "depbloom/train/schedule.h"
#include "depbloom/train/step_runner.h"
#include "depbloom/train/strategy.h"

namespace depbloom::train {

class StepPipeline final : public StepLookahead {
 public:
  // Lends itself to `runner` as its lookahead; every argument outlives it.
  StepPipeline(StepRunner& runner, StepWriter& writer, const Strategy& strategy,
               const PipelineConfig& cfg, Device device);
  ~StepPipeline() override;
  StepPipeline(const StepPipeline&) = delete;
  StepPipeline& operator=(const StepPipeline&) = delete;

  // The schedule to fill for a new epoch: the deferred writes flushed (they may point into
  // the old schedule's plans) and the plans made ahead forgotten.
  Schedule& reschedule();
  const Schedule& schedule() const { return schedule_; }

  // One training step, every stage; a step of the schedule runs pipelined when the pipeline
  // is on. Returns its data (valid until the next step).
  StepData& train(const ScheduledStep& step, uint32_t epoch, StageTimes& times);
  // The stages of `mask` over `step` for `pass` in the current data and arena, untimed and
  // never pipelined: evaluation batches and step_loss.
  StepData& run(const ScheduledStep& step, uint32_t epoch, Pass pass, StageMask mask);

  StepData& current() { return data_; }
  const StepData& current() const { return data_; }
  StepArena& arena() { return *arena_; }
  const StepArena& arena() const { return *arena_; }

  bool overlaps(const ScheduledStep& step) const override;
  bool take_plan(StepData& d) override;
  void mark_reads(const ScheduledStep& step, uint32_t epoch) override;

 private:
  void prefetch();

  StepRunner& runner_;
  StepWriter& writer_;
  const Strategy& strategy_;
  PipelineConfig cfg_;
  Schedule schedule_;
  std::unique_ptr<StepArena> arena_, spare_arena_;
  StepData data_, spare_data_;
  // The lookahead: plans of the steps after the current one, slot j % (horizon + 2) holding
  // step ahead_step_[slot] of the epoch (-1: none). The side thread plans step i + horizon
  // + 1 during step i + 1 into the slot step i left (step i + 1's is in use).
  std::vector<BatchPlan> ahead_;
  std::vector<int64_t> ahead_step_;
  int64_t prefetch_step_ = -1;
  uint32_t prefetch_epoch_ = 0;
};

}  // namespace depbloom::train
