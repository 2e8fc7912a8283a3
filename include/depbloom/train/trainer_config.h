// TrainerConfig: everything a Trainer is built from (the model, the step's sizes, the
// strategy and its communicator, refinement and the pipeline). The cli fills it from the
// config keys (docs/configs.md); tests set it directly.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/core/tensor.h"
#include "depbloom/dist/communicator.h"
#include "depbloom/graph/negative_sampler.h"
#include "depbloom/model/tgnn_config.h"
#include "depbloom/train/lr_schedule.h"
#include "depbloom/train/pipeline.h"
#include "depbloom/train/refine_plan.h"
#include "depbloom/train/strategy_settings.h"

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
  LrSchedule lr_schedule;  // the rate scaled to batch_size and warmed up (lr_schedule.h)
  double weight_decay = 0.0;
  int32_t eval_negatives = 1;
  graph::EvalNegativeStrategy eval_strategy = graph::EvalNegativeStrategy::random;
  bool new_nodes = true;    // run the new-node passes (tgn protocol)
  int64_t max_batches = 0;  // per training epoch; 0: all
  uint64_t seed = 0;
  Device device = Device::cpu();
  DType dtype = DType::f32;  // f64 for gradient checks on the CPU
  // Data-parallel training with strategy.name (strategy.h) and its settings over
  // comm->size() ranks (not owned; must outlive the trainer). Null or one local rank:
  // single-device training, unchanged, whatever the strategy.
  StrategySettings strategy;
  dist::Communicator* comm = nullptr;
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
  // run.profile_ops: the reports list the op calls per step by kind (EpochCalls).
  bool profile_ops = false;
  // depbloom-stream (docs/streaming.md): node-state rows past a checkpoint's, which its load
  // leaves fresh (zero memory, empty mailbox), and edge-feature rows past the stream's
  // events, for events appended to the stream later (grow_stream).
  int64_t spare_nodes = 0;
  int64_t spare_events = 0;
};

// Refinement as refine.micro_batches (m) sets it, derived here only: on iff m > 1 (the model
// declares the refiner's parameters only then), training steps cut into m micro-batches and
// evaluation batches into micro-batches of the training micro-batch's size (at least one),
// so that a row sees as much of its batch as in training.
struct RefineMode {
  bool on = false;
  int32_t train_micro_batches = 1;
  int32_t eval_micro_batches = 1;
};
RefineMode refine_mode(const TrainerConfig& cfg);

}  // namespace depbloom::train
