// Evaluator: the TGN authors' evaluation protocol over a split's events, in batches of
// eval.batch_size that the step runner's evaluation pass runs (no dropout; the writes
// applied, so memory carries on from batch to batch and from training into validation and
// test), scored into AP and AUC per batch and over the whole split, and MRR with several
// negatives. The new-node passes run on a backup of the memory taken before the
// transductive pass and are undone afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "depbloom/model/node_state.h"
#include "depbloom/train/metrics.h"
#include "depbloom/train/step_pipeline.h"
#include "depbloom/train/trainer_config.h"

namespace depbloom::train {

struct EvalResult {
  bool valid = false;  // false when the split had no events to score
  int64_t events = 0;
  int64_t batches = 0;
  RankMetrics whole;       // over every score of the split
  RankMetrics batch_mean;  // mean of per-batch values (what TGN, TGL and PyG print)
  double mrr = -1.0;       // with eval.negatives > 1
  double seconds = 0.0;
};

// One scored evaluation batch, as --eval-only --scores dumps it: the logits of the batch's
// positives, then of negative j of every event (block j, row b), K = eval.negatives.
struct ScoredBatch {
  const int64_t* events = nullptr;  // stream rows, ascending
  int64_t count = 0;
  const float* scores = nullptr;  // [(1 + k) * count]
  int32_t k = 0;
  bool new_nodes = false;  // the new-node pass (from the state before the transductive one)
  const int32_t* negatives = nullptr;  // [count * k] event-major: the negatives' dense ids
};
using ScoreSink = std::function<void(const ScoredBatch&)>;

class Evaluator {
 public:
  // Runs its batches through `steps` (whose runner scores them) on `state`; backs `state` up
  // into two states of its own. Keeps references to all of them.
  Evaluator(StepPipeline& steps, const StepRunner& runner, model::NodeState& state,
            const TrainerConfig& cfg, size_t eval_events);

  // What forward() hands on after each batch: the batch's first position in its event list,
  // its event count and its stage outputs (emb: the roots' embeddings, sources first).
  using BatchFn = std::function<void(int64_t begin, int64_t count, const StepData& d)>;
  // The evaluation pass over `events` (stream rows, ascending) with `split_id`'s negatives in
  // batches of `batch_size`, each batch's writes applied, every batch handed to `each`.
  void forward(const std::vector<int64_t>& events, uint32_t split_id, int64_t batch_size,
               const BatchFn& each);
  // One scored pass (forward in batches of eval.batch_size) over `events`.
  EvalResult evaluate(const std::vector<int64_t>& events, uint32_t split_id);
  // The transductive pass over `all`, then (when new_nodes and `fresh` is not empty) the
  // new-node pass over `fresh` from the state before it; the state ends as `all` left it.
  std::pair<EvalResult, EvalResult> evaluate_both(const std::vector<int64_t>& all,
                                                  const std::vector<int64_t>& fresh,
                                                  uint32_t split_id);
  // Every later scored batch also goes to `sink` (none: an empty function).
  void set_score_sink(ScoreSink sink) { sink_ = std::move(sink); }

 private:
  void score_batch(const int64_t* events, int64_t count);

  StepPipeline& steps_;
  const StepRunner& runner_;
  model::NodeState& state_;
  const TrainerConfig& cfg_;
  std::unique_ptr<model::NodeState> before_, after_;
  SplitMetrics metrics_;
  std::vector<float> neg_scores_;
  double rr_sum_ = 0;
  ScoreSink sink_;
  bool new_node_pass_ = false;
};

}  // namespace depbloom::train
