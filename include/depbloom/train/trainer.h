// Trainer: training and evaluation of a Tgnn on a chronologically split event stream, with
// TGL's step semantics and the TGN authors' evaluation protocol. It builds the model, the node
// state, the samplers and the planner, and runs the epoch's loop: its Strategy (strategy.h)
// lays out each rank's steps and reconciles the ranks, the StepRunner (step_runner.h) runs
// each step's stages, the StepPipeline (step_pipeline.h) overlaps them and the Evaluator
// (evaluator.h) validates and tests. Everything per step comes from one step arena that is
// reset each step, so a warm step allocates nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/backend/op_counts.h"
#include "depbloom/core/arena.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/graph/negative_sampler.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/graph/temporal_csr.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/tgnn.h"
#include "depbloom/partition/partition_config.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/evaluator.h"
#include "depbloom/train/metrics.h"
#include "depbloom/train/pipeline.h"
#include "depbloom/train/refine_plan.h"
#include "depbloom/train/schedule.h"
#include "depbloom/train/step.h"
#include "depbloom/train/step_io.h"
#include "depbloom/train/step_pipeline.h"
#include "depbloom/train/step_runner.h"
#include "depbloom/train/step_times.h"
#include "depbloom/train/strategy.h"
#include "depbloom/train/trainer_config.h"

namespace depbloom::train {

// What an epoch's training steps and evaluation batches cost in calls (backend/op_counts.h):
// totals, which reports divide by the steps (EpochResult::batches) and evaluation batches.
struct EpochCalls {
  backend::OpCounts train;  // the training steps (OpLane::step)
  backend::OpCounts side;   // the side thread's deferred writes during them (OpLane::side)
  backend::OpCounts eval;   // the validation passes, the new-node pass's state copies included
  int64_t eval_batches = 0;
  bool by_kind = false;  // run.profile_ops: the reports list the calls per kind
};

struct EpochResult {
  int epoch = 0;
  double loss = 0.0;  // mean over the epoch's batches of TGL's loss
  // Mean over the epoch's batches of this rank's coherence loss (added to the loss it trains
  // on, not to `loss`; 0 without it).
  double coherence_loss = 0.0;
  int64_t events = 0;
  int64_t batches = 0;        // steps
  double memory_rows = 0.0;   // mean distinct (node, time) memory rows per step
  double refined_rows = 0.0;  // mean refined copies per step (refine.micro_batches > 1)
  // Mean host waits for the GPU per training step (backend::host_waits; 0 on the CPU): the
  // loss read alone makes it 1, anything more is a stall to remove.
  double host_waits = 0.0;
  EpochCalls calls;
  double train_seconds = 0.0;
  StepTimeSummary step_seconds;  // each training step's wall time, start to the next's start
  StageTimes stages;
  EvalResult val, val_new;
  double eval_seconds = 0.0;
  int ranks = 1;
  std::string strategy;  // the strategy's name ("single-device" with one rank)
  dist::CommStats comm;  // the epoch's collectives (training; evaluation makes none)
  // With several ranks: the strategy's accounting (the events this rank trained on, the
  // node-state exchanges, and depbloom's window plan).
  StrategyCounts counts;
  // The critical path (pipeline.h): the step loop's wall time, and what the write-back's
  // side thread did (all rows urgent, nothing hidden, with the pipeline off).
  double loop_seconds = 0.0;
  PipelineCounts pipeline;
};

// Called during training with (batches done, batches in the epoch, mean loss so far).
using ProgressFn = std::function<void(int64_t, int64_t, double)>;

class Trainer {
 public:
  // Keeps references to stream and split, which must outlive it.
  Trainer(const data::EventStream& stream, const data::ChronoSplit& split,
          const TrainerConfig& cfg);
  ~Trainer();

  // Resets the node state, trains one pass over this rank's schedule of the training events
  // (its Strategy's), then validates (transductive, and new-node under the tgn protocol).
  // Every rank evaluates in full. epoch counts from 1.
  EpochResult run_epoch(int epoch, const ProgressFn& progress = nullptr);
  // run_epoch's training pass alone (its result without the validation's fields): what
  // --plan's dry run (backend::OpCountOnly) counts a step's calls over.
  EpochResult train_epoch(int epoch, const ProgressFn& progress = nullptr);
  // Test from the current state (the state after validation of the loaded epoch).
  // Returns {transductive, new-node}.
  std::pair<EvalResult, EvalResult> test();
  // Evaluation passes' scored batches also go to `sink` (--eval-only --scores).
  void set_score_sink(ScoreSink sink) { evaluator_->set_score_sink(std::move(sink)); }
  // From a reset node state, evaluation's forward pass over `events` (ascending) in batches
  // of `batch_size`, each batch handed to `each`: the parameters frozen, the writes applied
  // as evaluation applies them (node classification's embedding pass; depbloom-embed's
  // replay to a time, with no `each`).
  void replay(const std::vector<int64_t>& events, int64_t batch_size,
              const Evaluator::BatchFn& each = {});

  // depbloom-stream (docs/streaming.md). The stream grew after construction (its vectors may
  // have moved): the evaluation neighbour lists are rebuilt over its first `graph_events`
  // rows and their edge features copied in (at most config().spare_events past the
  // stream's rows at construction). Rows past graph_events may be scored, never sampled.
  void grow_stream(int64_t graph_events);
  // One evaluation forward pass over `rows` (stream rows, ascending) as one batch, from the
  // current state, with the given negatives (k per row, row-major) in place of the split's:
  // its logits (positives, then k blocks of rows, as ScoredBatch); its writes applied when
  // `apply`. The same computation as an evaluation batch with those negatives.
  const std::vector<float>& stream_batch(const std::vector<int64_t>& rows,
                                         const std::vector<int32_t>& negatives, int32_t k,
                                         bool apply);

  // What one training epoch of this config's strategy over `ranks` ranks will exchange: its
  // collectives and accounting, from the planned steps of every rank (no training; every
  // rank's strategy over a counting communicator, forecast_strategy; negatives and
  // neighbours as epoch 1 draws them). One rank: no collectives.
  // `observe` (ForecastInput::observe) gets every rank's planned steps.
  EpochForecast forecast_epoch(
      int ranks, std::function<void(int, const ScheduledStep&, const BatchPlan&)> observe = {});
  // This rank's steps of an epoch, as run_epoch runs them (the lookahead's source).
  const Schedule& schedule_epoch();
  // One training step: the stages of step.h in order, negatives and dropout drawn for
  // `epoch`, keyed by the events. Returns the step's global loss (TGL's: BCE of the
  // positives plus BCE of the negatives, each a mean), also appended to loss_trace().
  double train_step(const ScheduledStep& step, int epoch);
  // The plan the sample stage makes for `step` (reads no node state): the lookahead's.
  void plan_step(BatchPlan& out, const ScheduledStep& step, int epoch);
  const BatchPlan& last_plan() const { return steps_->current().plan; }
  // The last step's stage outputs (embeddings, logits), valid until the next step: for tests.
  const StepData& last_step() const { return steps_->current(); }
  // Waits for the deferred writes of the last step (pipeline.enabled): call before reading
  // the node state after train_step (run_epoch does at the epoch's end).
  void flush_writes() { writer_->flush(); }
  // The write-back's counts since the epoch began (run_epoch resets them).
  const PipelineCounts& pipeline_counts() const { return writer_->counts(); }
  // The writes this rank's last step collected (valid until the next step): what a deferred
  // write-back would apply.
  const model::WriteSet& last_writes() const { return steps_->current().writes; }
  // One device's loss of the step on events[0, count), changing nothing but the gradients
  // (which it fills when with_gradients): for gradient checks.
  double step_loss(const int64_t* events, int64_t count, int epoch, bool with_gradients);
  // The writes of the last step_loss, collected from its outputs (valid until the next
  // step; empty when the model keeps no memory): what a rank running that step would apply.
  // The depbloom strategy's one-process reference applies them to its per-rank replicas.
  const model::WriteSet& step_writes();

  // Parameters, Adam state, node state and the epoch, for checkpoints and resume.
  Checkpoint save(int64_t epoch, const std::string& config_text) const;
  void load(const Checkpoint& ckpt);  // data error naming the file when it does not fit

  const TrainerConfig& config() const { return cfg_; }
  const PlanConfig& plan_settings() const { return plan_cfg_; }
  const data::EventStream& stream() const { return stream_; }
  const Strategy& strategy() const { return *strategy_; }
  const std::vector<double>& loss_trace() const { return loss_trace_; }
  model::ParameterStore& parameters() { return *store_; }
  // The node state, the deferred writes flushed first.
  model::NodeState& state() {
    writer_->flush();
    return *state_;
  }
  const Arena& arena() const { return steps_->arena().device(); }
  int64_t parameter_count() const { return store_->numel(); }

 private:
  void make_targets();
  void copy_edge_rows(int64_t begin, int64_t end);  // the stream's edge features -> edge_feat_
  void standardise_time();
  StepParts step_parts();
  StrategyContext strategy_context() const;  // the strategy's, and each forecast rank's

  const data::EventStream& stream_;
  const data::ChronoSplit& split_;
  TrainerConfig cfg_;
  PlanConfig plan_cfg_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<model::ParameterStore> store_;
  std::unique_ptr<model::Tgnn> model_;
  std::unique_ptr<model::NodeState> state_;
  graph::TemporalCsr train_csr_, full_csr_;
  std::unique_ptr<graph::NeighbourSampler> train_sampler_, eval_sampler_;
  std::unique_ptr<BatchPlanner> planner_;
  std::unique_ptr<BatchStager> stager_;
  std::unique_ptr<graph::TrainNegativeSampler> train_negatives_;
  std::unique_ptr<graph::EvalNegativeSampler> eval_negatives_;
  OwnedTensor edge_feat_;  // [E + spare_events, d_edge] in the model's dtype on the device
  int64_t edge_rows_ = 0;  // the rows of edge_feat_ filled (grow_stream)
  OwnedTensor targets_;    // [2 * batch] ones then zeros
  std::unique_ptr<StepRunner> runner_;
  std::unique_ptr<StepPipeline> steps_;
  std::unique_ptr<Evaluator> evaluator_;
  // Declared last, so destroyed first: its side thread may be planning into steps_.
  std::unique_ptr<StepWriter> writer_;
  std::vector<double> loss_trace_;
  std::vector<double> step_seconds_;  // this epoch's, reserved before its loop
  StageTimes stages_;
  double coherence_sum_ = 0;
};

}  // namespace depbloom::train
