// Trainer: training and evaluation of a Tgnn on a chronologically split event stream, with
// TGL's step semantics and the TGN authors' evaluation protocol (memory carries from
// training into validation and test; the new-node passes run on a backed-up memory that is
// restored afterwards). How ranks share a batch is its Strategy's business (strategy.h).
// Everything per batch comes from one arena that is reset each step, so a warm step
// allocates nothing.
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
#include "depbloom/train/batch_planner.h"
#include "depbloom/train/checkpoint.h"
#include "depbloom/train/metrics.h"
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
  // comm->size() ranks (not owned; must outlive the trainer). Null or one rank:
  // single-device training, unchanged, whatever the strategy.
  std::string strategy = "strict";
  dist::Communicator* comm = nullptr;
};

struct EvalResult {
  bool valid = false;  // false when the split had no events to score
  int64_t events = 0;
  RankMetrics whole;       // over every score of the split
  RankMetrics batch_mean;  // mean of per-batch values (what TGN, TGL and PyG print)
  double mrr = -1.0;       // with eval.negatives > 1
  double seconds = 0.0;
};

// Seconds per stage of the training steps of one epoch. forward is the embedding, the
// predictor and the loss; gather and memory_update are the parts before it.
struct StageTimes {
  double sample = 0, gather = 0, memory_update = 0, forward = 0, backward = 0, optimiser = 0,
         write_back = 0;
};

struct EpochResult {
  int epoch = 0;
  double loss = 0.0;  // mean over the epoch's batches of TGL's loss
  int64_t events = 0;
  int64_t batches = 0;
  double memory_rows = 0.0;  // mean distinct (node, time) memory rows per batch
  double train_seconds = 0.0;
  StageTimes stages;
  EvalResult val, val_new;
  double eval_seconds = 0.0;
  int ranks = 1;
  std::string strategy;  // the strategy's name ("single-device" with one rank)
  dist::CommStats comm;  // the epoch's collectives (training; evaluation makes none)
  // With several ranks: the events this rank trained on (its slices), and the memory rows
  // and mails every rank wrote and all of them exchanged.
  int64_t local_events = 0, exchanged_rows = 0, exchanged_mails = 0;
};

// Called during training with (batches done, batches in the epoch, mean loss so far).
using ProgressFn = std::function<void(int64_t, int64_t, double)>;

class Trainer {
 public:
  // Keeps references to stream and split, which must outlive it.
  Trainer(const data::EventStream& stream, const data::ChronoSplit& split,
          const TrainerConfig& cfg);
  ~Trainer();

  // The strategy (strategy.h) gives each rank its slice of every global batch, reduces the
  // gradients (each rank's loss scaled by its share of the batch, so the sum is the 1-rank
  // gradient), and reconciles the node state after every rank took the same Adam step.
  // Evaluation runs in full on every rank. train_step and the loss trace report the global
  // loss.
  //
  // Resets the node state, trains one pass over the training events, then validates
  // (transductive, and new-node under the tgn protocol). epoch counts from 1.
  EpochResult run_epoch(int epoch, const ProgressFn& progress = nullptr);
  // Test from the current state (the state after validation of the loaded epoch).
  // Returns {transductive, new-node}.
  std::pair<EvalResult, EvalResult> test();

  // One training step on the global batch events[0, count) (negatives and dropout drawn
  // for `epoch`, keyed by the events): this rank's slice forward, loss, backward, gradient
  // reduction, Adam, reconciled write-back. Returns TGL's loss
  // (BCE of the positives plus BCE of the negatives, each a mean). run_epoch calls it.
  double train_step(const int64_t* events, int64_t count, int epoch);
  // The same step's loss without changing anything but the gradients (which it fills when
  // with_gradients): for gradient checks.
  double step_loss(const int64_t* events, int64_t count, int epoch, bool with_gradients);

  // Parameters, Adam state, node state and the epoch, for checkpoints and resume.
  Checkpoint save(int64_t epoch, const std::string& config_text) const;
  void load(const Checkpoint& ckpt);  // data error naming the file when it does not fit

  const std::vector<double>& loss_trace() const { return loss_trace_; }
  model::ParameterStore& parameters() { return *store_; }
  model::NodeState& state() { return *state_; }
  const Arena& arena() const { return arena_; }
  int64_t parameter_count() const { return store_->numel(); }

 private:
  EvalResult evaluate(const std::vector<int64_t>& events, uint32_t split_id);
  double forward_backward(const int64_t* events, int64_t count, int epoch, bool with_gradients,
                          double dloss);

  const data::EventStream& stream_;
  const data::ChronoSplit& split_;
  TrainerConfig cfg_;
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<model::ParameterStore> store_;
  std::unique_ptr<model::Tgnn> model_;
  std::unique_ptr<model::NodeState> state_, backup_a_, backup_b_;
  graph::TemporalCsr train_csr_, full_csr_;
  std::unique_ptr<graph::NeighbourSampler> train_sampler_, eval_sampler_;
  std::unique_ptr<BatchPlanner> planner_;
  std::unique_ptr<graph::TrainNegativeSampler> train_negatives_;
  std::unique_ptr<graph::EvalNegativeSampler> eval_negatives_;
  OwnedTensor edge_feat_;  // [E, d_edge] in the model's dtype on the device
  OwnedTensor targets_;    // [2 * batch] ones then zeros
  Arena arena_;
  std::vector<int32_t> negatives_;
  std::vector<float> scores_, neg_scores_;
  SplitMetrics metrics_;
  std::vector<double> loss_trace_;
  StageTimes stages_;
  int64_t memory_rows_ = 0;
  int64_t batch_index_ = 0;  // 1-based batch of the running epoch, for error messages
};

}  // namespace depbloom::train
