// The write half of critical-path pipelining (DESIGN.md 7.3). StepWriter applies a step's
// writes in two parts: the rows of nodes the next steps read (marked urgent from the
// schedule's lookahead) at once, the rest on a side thread while the next step computes.
// The side thread makes no MPI call and touches only the deferred nodes' rows and rings,
// which no step reads before the next flush(); flush() is called before the next step's
// write-back and before anything else reads or exchanges node state. Off, it is the plain
// NodeState::apply. It does not decide what is urgent: the Trainer marks the reads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/model/node_state.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/schedule.h"

namespace depbloom::train {

struct PipelineConfig {
  bool enabled = false;
  int32_t horizon = 2;  // steps of lookahead: a row read within them is urgent (>= 1)
};

// What the writer did over an epoch. Rows are memory rows plus mail slots, as
// NodeState::apply counts them. A step that a flush point follows at once (a window end,
// the epoch's last step) has nothing to overlap: its rows are applied at once and counted
// apart, so the deferred share is over the rows that had a next step to overlap.
struct PipelineCounts {
  int64_t urgent_rows = 0;    // read within the horizon (every row with the pipeline off)
  int64_t deferred_rows = 0;  // applied on the side thread
  int64_t sync_rows = 0;      // written just before a flush point, applied at once
  int64_t deferred_applies = 0;
  int64_t prefetched_plans = 0;  // lookahead plans the side thread made after an apply
  double side_busy = 0;          // seconds the side thread worked (applies and plans)
  double side_wait = 0;          // seconds the main thread waited for it in flush()
  // Per overlapped stage: the side thread's seconds, and those the main thread did not wait
  // for (a job's wait is charged to its last part first: the planning, then the apply).
  double apply_busy = 0, apply_hidden = 0, prefetch_busy = 0, prefetch_hidden = 0;
  double deferred_share() const {
    const int64_t all = urgent_rows + deferred_rows;
    return all > 0 ? static_cast<double>(deferred_rows) / static_cast<double>(all) : 0.0;
  }
  // Side-thread work that ran while the main thread went on: busy time not waited for.
  double hidden() const { return side_busy > side_wait ? side_busy - side_wait : 0.0; }
};

class StepWriter {
 public:
  // `side_thread`: defer writes to a side thread (the pipeline on a CPU run); else every
  // write is applied at once. num_nodes sizes the urgency marks.
  StepWriter(int64_t num_nodes, bool side_thread);
  ~StepWriter();
  StepWriter(const StepWriter&) = delete;
  StepWriter& operator=(const StepWriter&) = delete;

  // How the next apply() goes: all at once as urgent rows (the pipeline off), all at once
  // before a flush point (sync rows), or split by the marks (urgent, the rest deferred).
  enum class Mode : uint8_t { urgent, sync, split };
  void set_mode(Mode mode) { mode_ = side_ || mode != Mode::split ? mode : Mode::urgent; }
  // Marks nodes urgent for the next apply(); clear_marks() flushes first and unmarks all.
  void mark(const int32_t* nodes, int64_t n);
  void clear_marks();
  // Work the side thread runs after the next deferred apply (planning a later step ahead),
  // which must touch nothing the main thread uses before the next flush(). A callable of one
  // pointer is stored without allocating.
  void set_after(std::function<void()> fn) { after_ = std::move(fn); }

  // `writes` into `state`: urgent ones now (staging from `arena`), the rest handed to the
  // side thread, which reads `writes` (its node ids and tensors must stay valid until the next
  // flush) and stages from its own arena. Flushes first.
  void apply(const model::WriteSet& writes, model::NodeState& state, Arena& arena);
  // Waits for the side thread's apply (none pending: returns at once); rethrows its error.
  void flush();

  const PipelineCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = PipelineCounts{}; }

 private:
  void side_loop();

  bool side_ = false;
  Mode mode_ = Mode::urgent;
  std::vector<uint8_t> mark_;  // [N] 1: read within the horizon (urgent)
  std::vector<int32_t> marked_;
  PipelineCounts counts_;
  // The one pending deferred apply, and the side thread's own staging arena.
  model::WriteSet job_;
  model::NodeState* job_state_ = nullptr;
  std::function<void()> after_, job_after_;
  Arena side_arena_;
  int64_t job_rows_ = 0;
  double job_apply_s_ = 0, job_after_s_ = 0;
  std::exception_ptr job_error_;
  bool pending_ = false, stop_ = false;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::thread thread_;
};

// What StepWriter will count at one rank over its steps `mine` with the pipeline on, from
// plans alone (depbloom-train --plan): at step i the writes of the plans applied(i, out)
// lists, by node, urgent when one of the next `horizon` steps of `mine` reads the node (not
// past a window end when `windowed`), sync at a step with no next step or at a window end,
// else deferred; memory rows one per node, mails min(claims, mail_slots) per node.
using PlanFn = std::function<void(BatchPlan&, const ScheduledStep&)>;
PipelineCounts forecast_pipeline(
    const Schedule& mine, bool windowed, int32_t horizon, int mail_slots, int64_t num_nodes,
    const PlanFn& plan,
    const std::function<void(int64_t, std::vector<const PlannedWrites*>&)>& applied);

}  // namespace depbloom::train
