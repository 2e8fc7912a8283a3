// StepPipeline: the arena swap, the lookahead's marks and plans made ahead, and the side
// thread's prefetch of the next plan.
#include "depbloom/train/step_pipeline.h"

#include <algorithm>

namespace depbloom::train {

StepPipeline::StepPipeline(StepRunner& runner, StepWriter& writer, const Strategy& strategy,
                           const PipelineConfig& cfg, Device device)
    : runner_(runner),
      writer_(writer),
      strategy_(strategy),
      cfg_(cfg),
      arena_(std::make_unique<StepArena>(device)) {
  DB_ASSERT(cfg.horizon >= 1, "pipeline.horizon is {}", cfg.horizon);
  if (cfg.enabled) {
    spare_arena_ = std::make_unique<StepArena>(device);
    ahead_.resize(static_cast<size_t>(cfg.horizon) + 2);
    ahead_step_.assign(ahead_.size(), -1);
  }
  runner_.set_lookahead(this);
}

StepPipeline::~StepPipeline() {
  runner_.set_lookahead(nullptr);
}

Schedule& StepPipeline::reschedule() {
  writer_.flush();
  std::fill(ahead_step_.begin(), ahead_step_.end(), -1);
  return schedule_;
}

// Pipelined, the last step's data and arena stay as they are for its deferred writes, and
// the write-back runs before the optimiser, while the gradient reduction is in flight (it
// reads no parameter).
StepData& StepPipeline::train(const ScheduledStep& step, uint32_t epoch, StageTimes& times) {
  if (overlaps(step)) std::swap(data_, spare_data_), std::swap(arena_, spare_arena_);
  data_.step = &step;
  data_.epoch = epoch;
  data_.pass = Pass::train;
  runner_.run(data_, *arena_, kTrainingStages, &times);
  return data_;
}

StepData& StepPipeline::run(const ScheduledStep& step, uint32_t epoch, Pass pass, StageMask mask) {
  data_.step = &step;
  data_.epoch = epoch;
  data_.pass = pass;
  runner_.run(data_, *arena_, mask);
  return data_;
}

// A step runs pipelined when the pipeline is on and it is one of the schedule's (the
// lookahead reads the steps after it).
bool StepPipeline::overlaps(const ScheduledStep& step) const {
  return cfg_.enabled && step.index >= 0 && step.index < schedule_.size() &&
         &schedule_.step(step.index) == &step;
}

// The step's plan, made ahead by an earlier step's lookahead; else the runner plans it now,
// after the side thread is done (it may be planning: the planner is not shared).
bool StepPipeline::take_plan(StepData& d) {
  if (!overlaps(*d.step)) return false;
  const auto slot = static_cast<size_t>(d.step->index) % ahead_.size();
  if (ahead_step_[slot] == d.step->index && ahead_[slot].epoch == d.epoch) {
    std::swap(d.plan, ahead_[slot]);
    ahead_step_[slot] = -1;
    return true;
  }
  writer_.flush();
  return false;
}

// On the side thread, after its deferred apply: the plan of step prefetch_step_, which no
// step before the next flush reads.
void StepPipeline::prefetch() {
  const ScheduledStep& s = schedule_.step(prefetch_step_);
  const auto slot = static_cast<size_t>(s.index) % ahead_.size();
  runner_.plan_step(ahead_[slot], s, prefetch_epoch_);
  ahead_step_[slot] = s.index;
}

// The nodes the next pipeline.horizon steps read (not past a window end, whose exchange
// reads every row), planned ahead where not yet: their writes now are urgent, the rest
// deferred. A step that a flush point follows at once (a window end, the epoch's last step)
// has nothing to overlap and defers nothing.
void StepPipeline::mark_reads(const ScheduledStep& step, uint32_t epoch) {
  using Mode = StepWriter::Mode;
  writer_.clear_marks();
  if (!overlaps(step)) return writer_.set_mode(Mode::urgent);
  const Schedule::Range next = schedule_.lookahead(step.index, cfg_.horizon);
  if (next.begin == next.end || (strategy_.windowed() && step.sync == SyncPoint::exchange))
    return writer_.set_mode(Mode::sync);
  bool window_end = false;
  for (const ScheduledStep* s = next.begin; s != next.end && !window_end; ++s) {
    if (s->count > 0) {
      const auto slot = static_cast<size_t>(s->index) % ahead_.size();
      BatchPlan& plan = ahead_[slot];
      if (ahead_step_[slot] != s->index || plan.epoch != epoch) {
        runner_.plan_step(plan, *s, epoch);
        ahead_step_[slot] = s->index;
      }
      writer_.mark(plan.mem_node.data(), plan.memory_rows());
    }
    window_end = strategy_.windowed() && s->sync == SyncPoint::exchange;
  }
  writer_.set_mode(Mode::split);
  // Prefetch: the side thread plans the step after the lookahead (not past a window end).
  const int64_t after = step.index + cfg_.horizon + 1;
  if (!window_end && after < schedule_.size() && schedule_.step(after).count > 0) {
    prefetch_step_ = after;
    prefetch_epoch_ = epoch;
    writer_.set_after([this] { prefetch(); });
  }
}

}  // namespace depbloom::train
