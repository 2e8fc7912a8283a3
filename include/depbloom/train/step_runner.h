// StepRunner: the one place a batch's stages run. Training steps, the gradient checks'
// step_loss and evaluation batches all run the stages of step.h from one table keyed by
// Stage, a StageMask choosing which and StepData::pass choosing each stage's training or
// evaluation form. It owns none of the model's parts (the Trainer builds them and lends
// them in StepParts) and does not pipeline: StepPipeline (step_pipeline.h) wraps it, lending
// it the plans it made ahead and marking the lookahead's reads before a step's writes.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/graph/negative_sampler.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/tgnn.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/pipeline.h"
#include "depbloom/train/step.h"
#include "depbloom/train/step_io.h"
#include "depbloom/train/strategy.h"
#include "depbloom/train/trainer_config.h"

namespace depbloom::train {

// What the stages work with; every pointer is set and outlives the runner.
struct StepParts {
  const TrainerConfig* cfg = nullptr;
  const PlanConfig* plan = nullptr;
  model::ParameterStore* store = nullptr;
  model::Tgnn* model = nullptr;
  model::NodeState* state = nullptr;
  BatchPlanner* planner = nullptr;
  BatchStager* stager = nullptr;
  // TGN's protocol: training neighbours from the training events only, evaluation ones from
  // the whole stream (null when the config samples nothing).
  const graph::NeighbourSampler* train_sampler = nullptr;
  const graph::NeighbourSampler* eval_sampler = nullptr;
  graph::TrainNegativeSampler* train_negatives = nullptr;
  graph::EvalNegativeSampler* eval_negatives = nullptr;
  Strategy* strategy = nullptr;
  StepWriter* writer = nullptr;
  Tensor edge_feat;  // [E, d_edge] on the device, or undefined
  Tensor targets;    // [2 * batch] ones then zeros, on the device
};

// What a pipeline adds to a training step: plans made ahead, the non-blocking gradient
// reduction, and the lookahead's urgency marks before the step's writes are applied.
class StepLookahead {
 public:
  virtual ~StepLookahead() = default;
  // Whether `step` overlaps its neighbours (its reduction is started, then finished later).
  virtual bool overlaps(const ScheduledStep& step) const = 0;
  // Moves a plan made ahead for d's step into d.plan; false: none, the runner plans now.
  virtual bool take_plan(StepData& d) = 0;
  // Marks what the next steps read, so that the writes of `step` split into urgent ones and
  // deferred ones (step_pipeline.h).
  virtual void mark_reads(const ScheduledStep& step, uint32_t epoch) = 0;
};

// What the training stages counted since reset_counts().
struct StepCounts {
  int64_t memory_rows = 0;   // distinct (node, time) memory rows over the steps
  int64_t refined_rows = 0;  // refined copies over the steps
  double reduce_wait = 0;    // seconds finishing the non-blocking gradient reductions
};

class StepRunner {
 public:
  explicit StepRunner(const StepParts& parts);
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // Runs the stages of `mask` in table order over d (d.step, d.epoch and d.pass set by the
  // caller) from `arena`, which the sample stage resets; adds each stage's seconds to *times
  // when given. Evaluation has no backward, reduce or optimise stage.
  void run(StepData& d, StepArena& arena, StageMask mask, StageTimes* times = nullptr);
  // The training plan of `step`: its negatives, neighbours and micro-batches for `epoch`
  // (reads no node state, so the lookahead calls it for later steps).
  void plan_step(BatchPlan& out, const ScheduledStep& step, uint32_t epoch);
  // The writes d's plan makes, collected from its outputs (empty without memory).
  model::WriteSet collect_writes(const StepData& d, StepArena& arena) const;

  void set_lookahead(StepLookahead* lookahead) { lookahead_ = lookahead; }
  // The last evaluation batch's scores: positives [B], then K blocks of negatives [B].
  const std::vector<float>& scores() const { return scores_; }
  const StepCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = StepCounts{}; }

 private:
  using StageFn = void (StepRunner::*)(StepData&, StepArena&);
  struct StageEntry {
    Stage stage;
    StageFn train;
    StageFn evaluate;  // null: not part of an evaluation pass
  };
  static const StageEntry kStageTable[kStages];

  void sample(StepData& d, StepArena& arena);
  void gather(StepData& d, StepArena& arena);
  void memory_update(StepData& d, StepArena& arena);
  void refine(StepData& d, StepArena& arena);
  void embed(StepData& d, StepArena& arena);
  void loss(StepData& d, StepArena& arena);
  void score(StepData& d, StepArena& arena);
  void backward(StepData& d, StepArena& arena);
  void reduce(StepData& d, StepArena& arena);
  void optimise(StepData& d, StepArena& arena);
  void write_back(StepData& d, StepArena& arena);
  void apply_writes(StepData& d, StepArena& arena);

  void plan_evaluation(StepData& d);
  bool overlaps(const StepData& d) const;

  StepParts p_;
  RefineMode refine_;
  StepLookahead* lookahead_ = nullptr;
  std::vector<int32_t> negatives_;
  std::vector<float> scores_;
  StepCounts counts_;
};

// Throws (runtime) naming the epoch, batch and first event when `loss` is not finite.
void check_finite_loss(double loss, const StepData& d);

}  // namespace depbloom::train
