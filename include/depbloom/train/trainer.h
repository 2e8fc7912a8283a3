// Trainer: training and evaluation of a Tgnn on a chronologically split event stream, with
// TGL's step semantics and the TGN authors' evaluation protocol (memory carries from
// training into validation and test; the new-node passes run on a backed-up memory that is
// restored afterwards). Its Strategy (strategy.h) lays out each rank's steps and reconciles
// the ranks; a step runs the stages of step.h in order. Everything per step comes from one
// step arena that is reset each step, so a warm step allocates nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
#include "depbloom/train/metrics.h"
#include "depbloom/train/pipeline.h"
#include "depbloom/train/refine_plan.h"
#include "depbloom/train/schedule.h"
#include "depbloom/train/step.h"
#include "depbloom/train/step_io.h"
#include "depbloom/train/strategy.h"

namespace depbloom::train {

struct TrainerConfig {
  model::TgnnConfig model;
  bool uniform_sampling = false;  // else the most recent neighbours
  bool prop_time = false;
  bool deliver_to_neighbours = false;
  // JODIE: standardise the projection's time input by the training gaps (the TGN authors'
  // normalisation) instead of TGL's dt / (t + 1).
  bool standardise_time = true;
  int64_t batch_size = 600;
  int64_t eval_batch_size = 200;  // the TGN authors' evaluation batch
  double lr = 1e-4;
  double weight_decay = 0.0;
  int32_t eval_negatives = 1;
  graph::EvalNegativeStrategy eval_strategy = graph::EvalNegativeStrategy::random;
  bool new_nodes = true;    // run the new-node passes (tgn protocol)
  int64_t max_batches = 0;  // per training epoch; 0: all
  uint64_t seed = 0;
  Device device = Device::cpu();
  DType dtype = DType::f32;  // f64 for gradient checks on the CPU
  // Data-parallel training with `strategy` (strategy.h; one of strategy_names()) over
  // comm->size() ranks (not owned; must outlive the trainer). Null or one local rank:
  // single-device training, unchanged, whatever the strategy.
  std::string strategy = "strict";
  dist::Communicator* comm = nullptr;
  // The temporal windows and the partitioner of the window plan (partition/window_plan.h).
  partition::PartitionConfig partition;
  // Intra-batch refinement (DESIGN.md 7.2): each step cut into this many micro-batches in
  // time order (1: off, and model.refine stays false), the earlier ones' messages combined
  // by `refine_aggregate`.
  int32_t refine_micro_batches = 1;
  RefineAggregate refine_aggregate = RefineAggregate::last;
  // The coherence loss (model.coherence_weight > 0 with refinement): the share of refined
  // copies it is computed on, drawn per copy with the event-keyed RNG.
  double refine_coherence_sample = 0.1;
  // Critical-path pipelining (DESIGN.md 7.3, pipeline.h): off, today's serial step.
  PipelineConfig pipeline;
};

struct EvalResult {
  bool valid = false;  // false when the split had no events to score
  int64_t events = 0;
  RankMetrics whole;       // over every score of the split
  RankMetrics batch_mean;  // mean of per-batch values (what TGN, TGL and PyG print)
  double mrr = -1.0;       // with eval.negatives > 1
  double seconds = 0.0;
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
  double train_seconds = 0.0;
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
  // Test from the current state (the state after validation of the loaded epoch).
  // Returns {transductive, new-node}.
  std::pair<EvalResult, EvalResult> test();

  // What one training epoch of this config's strategy over `ranks` ranks will exchange: its
  // collectives and accounting, from the planned steps of every rank (no training, no
  // communicator; negatives and neighbours as epoch 1 draws them). One rank: no collectives.
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
  const BatchPlan& last_plan() const { return data_.plan; }
  // The last step's stage outputs (embeddings, logits), valid until the next step: for tests.
  const StepData& last_step() const { return data_; }
  // Waits for the deferred writes of the last step (pipeline.enabled): call before reading
  // the node state after train_step (run_epoch does at the epoch's end).
  void flush_writes() { writer_->flush(); }
  // The write-back's counts since the epoch began (run_epoch resets them).
  const PipelineCounts& pipeline_counts() const { return writer_->counts(); }
  // The writes this rank's last step collected (valid until the next step): what a deferred
  // write-back would apply.
  const model::WriteSet& last_writes() const { return data_.writes; }
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
  const Arena& arena() const { return arena_->device(); }
  int64_t parameter_count() const { return store_->numel(); }

 private:
  // The stages (trainer_step.cpp), in the order kTrainingStages lists them.
  void sample(StepData& d);
  void gather(StepData& d);
  void memory_update(StepData& d);
  void refine(StepData& d);
  void embed(StepData& d);
  void loss(StepData& d);
  void backward(StepData& d);
  void reduce(StepData& d);
  void optimise(StepData& d);
  void write_back(StepData& d);
  struct StageEntry {
    Stage stage;
    void (Trainer::*run)(StepData&);
  };
  static const std::array<StageEntry, kStages> kTrainingStages;
  double reduce_wait_ = 0;  // seconds finishing the non-blocking gradient reductions
  void check_finite(double loss, const StepData& d) const;

  EvalResult evaluate(const std::vector<int64_t>& events, uint32_t split_id);
  void evaluate_batch(const int64_t* batch, int64_t count, uint32_t split_id);
  int32_t eval_micro_batches() const;
  void make_targets();
  void standardise_time();

  const data::EventStream& stream_;
  const data::ChronoSplit& split_;
  TrainerConfig cfg_;
  PlanConfig plan_cfg_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<model::ParameterStore> store_;
  std::unique_ptr<model::Tgnn> model_;
  std::unique_ptr<model::NodeState> state_, backup_a_, backup_b_;
  graph::TemporalCsr train_csr_, full_csr_;
  std::unique_ptr<graph::NeighbourSampler> train_sampler_, eval_sampler_;
  std::unique_ptr<BatchPlanner> planner_;
  std::unique_ptr<BatchStager> stager_;
  std::unique_ptr<graph::TrainNegativeSampler> train_negatives_;
  std::unique_ptr<graph::EvalNegativeSampler> eval_negatives_;
  OwnedTensor edge_feat_;  // [E, d_edge] in the model's dtype on the device
  OwnedTensor targets_;    // [2 * batch] ones then zeros
  // With the pipeline on, steps alternate between two arenas and two StepData, so that the
  // side thread's deferred writes (views into the last step's) outlive the next step.
  std::unique_ptr<StepArena> arena_, spare_arena_;
  Schedule schedule_;
  StepData data_, spare_data_;
  // The lookahead: plans of the steps after the current one, slot j % (horizon + 2) holding
  // step ahead_step_[slot] of the epoch (-1: none). The side thread plans step i + horizon
  // + 1 during step i + 1 into the slot step i left (step i + 1's is in use).
  std::vector<BatchPlan> ahead_;
  std::vector<int64_t> ahead_step_;
  std::unique_ptr<StepWriter> writer_;
  bool pipelined(const ScheduledStep& step) const;
  void mark_lookahead(const ScheduledStep& step);
  void take_plan(StepData& d);
  static void prefetch_plan(void* trainer);
  int64_t prefetch_step_ = -1;
  uint32_t prefetch_epoch_ = 0;
  std::vector<int32_t> negatives_;
  std::vector<float> scores_, neg_scores_;
  SplitMetrics metrics_;
  double rr_sum_ = 0;
  std::vector<double> loss_trace_;
  StageTimes stages_;
  int64_t memory_rows_ = 0, refined_rows_ = 0;
  double coherence_sum_ = 0;
};

}  // namespace depbloom::train
