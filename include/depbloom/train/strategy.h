// Strategy: how data-parallel ranks share the training stream. It owns the schedule (which
// events each rank runs in each step, and where the ranks sync), combines the ranks'
// gradients, and reconciles node memory and mailboxes at the sync points. The Trainer runs
// the steps it is given; it never talks to the communicator itself. One table registers the
// strategies: it serves the factory, the check of each one's settings, strategy.name's
// choices and the log lines. --plan's forecast runs the same strategies, counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/pipeline.h"
#include "depbloom/train/schedule.h"
#include "depbloom/train/step_io.h"
#include "depbloom/train/strategy_settings.h"
#include "depbloom/train/write_gather.h"

namespace depbloom::train {

// strict's split of a global step: P contiguous parts in rank order, rank r taking events
// [r*B/P, (r+1)*B/P) of the step, so sizes differ by at most one and the parts in rank order
// are the step in event order. (Every random draw is keyed by the event, so a part needs
// nothing else to draw what the whole step would.)
ScheduledStep contiguous_part(const int64_t* events, int64_t count, int rank, int ranks);

// What the write-back stage hands the strategy after a step.
struct StepWrites {
  const ScheduledStep* step = nullptr;
  const PlannedWrites* planned = nullptr;  // the mail kinds of this rank's writes
  model::WriteSet writes;                  // this rank's writes (empty for an empty part)
  model::NodeState* state = nullptr;
  StepArena* arena = nullptr;
  bool memory = true;     // false: the model keeps no node memory, nothing to write
  double local_loss = 0;  // TGL's loss over this rank's events (0 for an empty part)
  // Applies writes to `state` (urgent now, the rest deferred; pipeline.h); null: at once.
  StepWriter* writer = nullptr;
};

// The shape of `state`'s rows, as an exchange gathers them.
StateLayout state_layout(const model::NodeState& state);

// `writes` into w.state through w.writer (staging from w.arena's device arena).
void apply_writes(const StepWrites& w, const model::WriteSet& writes);

// Per-epoch accounting of what the strategy moved.
struct StrategyCounts {
  int64_t local_events = 0;     // events this rank trained on
  int64_t exchanged_rows = 0;   // memory rows every rank wrote and all of them exchanged
  int64_t exchanged_mails = 0;  // mails likewise
  int64_t exchange_bytes = 0;   // the node-state exchanges' gathered bytes (ids included)
  int64_t exchanges = 0;        // sync points where the ranks exchanged node state
  // depbloom's window plan over the epoch's scheduled windows (0 for the other strategies).
  int64_t windows = 0, plan_events = 0, cut_events = 0, window_nodes = 0, migrated_nodes = 0;
  double max_imbalance = 0;
};

// What a strategy is built from: the communicator (not owned), the event stream (the window
// plan's), the run's strategy settings (checked by make_strategy) and its seed.
struct StrategyContext {
  dist::Communicator* comm = nullptr;
  const data::EventStream* stream = nullptr;
  StrategySettings settings;
  uint64_t seed = 0;
};

// What a forecast reads (depbloom-train --plan): the strategy's context (its communicator
// unset: the forecast makes each rank's), the run's sizes and a planner of any rank's step
// (BatchPlan::writes is what the step will write; planning reads no node state, so a whole
// epoch is planned without training).
struct ForecastInput {
  int ranks = 1;
  StrategyContext strategy;
  const std::vector<int64_t>* train = nullptr;
  int64_t batch_size = 0, max_steps = 0;
  model::ParameterStore* parameters = nullptr;  // its gradients: the all-reduce's buffer
  StateLayout layout;                           // the node state's dtype and widths
  bool memory = true;  // false: the model keeps no node state (nothing is exchanged)
  std::function<void(BatchPlan&, const ScheduledStep&)> plan;
  PipelineConfig pipeline;  // the write-back's split (rank 0's)
  // When set, every rank's every non-empty step is planned (with or without memory) and
  // handed here with its rank (the cost model's counts, epoch_work.h).
  std::function<void(int rank, const ScheduledStep&, const BatchPlan&)> observe;
};

// The write-back's counts of rank 0 stepping through `mine` and applying applied(i)'s writes
// at step i: forecast_pipeline's split with the pipeline on, every row urgent with it off.
PipelineCounts forecast_write_back(
    const ForecastInput& in, const Schedule& mine, bool windowed,
    const std::function<void(int64_t, std::vector<const PlannedWrites*>&)>& applied);

// One training epoch's predicted collectives (calls and bytes per kind, as CommStats counts
// them) and strategy accounting (as StrategyCounts counts it on rank 0).
struct EpochForecast {
  int64_t steps = 0, events = 0;
  dist::CommStats comm;
  StrategyCounts counts;
  PipelineCounts pipeline;  // rank 0's write-back rows (pipeline.h; no timings)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  virtual const char* name() const = 0;
  virtual int ranks() const { return 1; }
  // Whether the sync points are window ends whose exchange reads the replica (depbloom):
  // the pipeline's lookahead stops there, and such a step defers no write.
  virtual bool windowed() const { return false; }

  // This rank's steps of an epoch over `train` (stream rows, ascending) with global steps of
  // batch_size events, at most max_steps of them (0: all; with several ranks the last one
  // is a sync point). Views into `train` or into the strategy. Call after begin_epoch().
  virtual void schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                        int64_t max_steps) = 0;
  // Identical initial parameters on every rank (rank 0's win).
  virtual void sync_parameters(model::ParameterStore& store) { (void)store; }
  // After the backward, before the optimiser: the gradients every rank steps with.
  virtual void reduce_gradients(model::ParameterStore& store) { (void)store; }
  // The same, non-blocking (the pipelined step): started after the backward, finished
  // before the optimiser; in between the caller runs work that reads no gradient (the
  // write-back). finish_reduce returns the seconds it waited.
  virtual void start_reduce(model::ParameterStore& store) { reduce_gradients(store); }
  virtual double finish_reduce() { return 0.0; }
  // After the gradient reduction has started, before the optimiser: the step's writes
  // applied (at an exchange, every rank's, so the replicas agree). Returns the step's
  // global loss.
  virtual double reconcile(const StepWrites& w) = 0;

  // The forecast's rehearsal of reconcile() (forecast_strategy, below): every rank's
  // strategy, over a CountingCommunicator, from the planned writes alone. First every rank's
  // rehearse_plan() of its `step` (planned: null for an empty part or when nothing was
  // planned) returns the header its size all-gather sends after the step (empty: none);
  // then, that all-gather answered from every rank's header, rehearse_reconcile() makes
  // reconcile()'s collectives and accounting, sending placeholder rows from `scratch`.
  virtual std::vector<double> rehearse_plan(const ScheduledStep& step, const PlannedWrites* planned,
                                            bool memory, const StateLayout& layout) {
    (void)step, (void)planned, (void)memory, (void)layout;
    return {};
  }
  virtual void rehearse_reconcile(const ScheduledStep& step, bool memory, const StateLayout& layout,
                                  Arena& scratch) {
    (void)step, (void)memory, (void)layout, (void)scratch;
  }

  void begin_epoch() { counts_ = StrategyCounts{}; }
  const StrategyCounts& counts() const { return counts_; }

 protected:
  Strategy() = default;
  StrategyCounts counts_;
};

// One device: the whole step, no collectives, the writes applied in one go.
class SingleDeviceStrategy final : public Strategy {
 public:
  const char* name() const override { return "single-device"; }
  void schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                int64_t max_steps) override;
  double reconcile(const StepWrites& w) override;
};

// What every strategy over several ranks shares: the communicator, rank 0's initial
// parameters on every rank, and the gradients summed over the ranks (each rank scaled its
// loss by its share of the step's global events, so the sum is the mean's gradient).
class RankedStrategy : public Strategy {
 public:
  int ranks() const override { return comm_.size(); }
  void sync_parameters(model::ParameterStore& store) override;
  void reduce_gradients(model::ParameterStore& store) override;
  void start_reduce(model::ParameterStore& store) override;
  double finish_reduce() override;

 protected:
  explicit RankedStrategy(dist::Communicator& comm) : comm_(comm) {}
  dist::CommHandle pending_reduce_;
  dist::Communicator& comm_;
};

// One registered strategy.
struct StrategyEntry {
  const char* name;
  const char* summary;  // one line: the log's and the config docs' description
  std::unique_ptr<Strategy> (*make)(const StrategyContext& ctx);  // ctx.comm is set
  // Config errors for the settings this strategy reads (null: it reads none).
  void (*check)(const StrategySettings& settings);
};

// Every strategy strategy.name accepts, in the order the docs list them.
const std::vector<StrategyEntry>& strategy_table();
std::vector<std::string> strategy_names();
const StrategyEntry& strategy_entry(const std::string& name);  // config error if unknown

// The strategy ctx.settings.name over ctx.comm (null: one device), its settings checked
// (check_strategy_settings). With one rank on the local communicator every strategy is
// single-device training, exactly; one rank on mpi or nccl runs the strategy with its
// collectives (same numbers).
std::unique_ptr<Strategy> make_strategy(const StrategyContext& ctx);

// One training epoch of `entry`'s strategy over in.ranks > 1 ranks, rehearsed in one
// process: each rank's own strategy, made over a CountingCommunicator, schedules its steps
// and rehearses every reconcile() from its planned writes (Strategy::rehearse_plan), so the
// forecast counts the collectives the run makes, by the same code.
EpochForecast forecast_strategy(const StrategyEntry& entry, const ForecastInput& in);

}  // namespace depbloom::train
