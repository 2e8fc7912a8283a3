// Evaluation passes: each batch run by the step runner's evaluation pass, then scored.
#include "depbloom/train/evaluator.h"

#include <algorithm>

#include "depbloom/core/timer.h"

namespace depbloom::train {

Evaluator::Evaluator(StepPipeline& steps, const StepRunner& runner, model::NodeState& state,
                     const TrainerConfig& cfg, size_t eval_events)
    : steps_(steps), runner_(runner), state_(state), cfg_(cfg) {
  const auto like = [&] {
    return std::make_unique<model::NodeState>(state.num_nodes(), state.memory_dim(),
                                              state.mail_dim(), state.mail_slots(), state.dtype(),
                                              state.device());
  };
  before_ = like();
  after_ = like();
  const int64_t most = std::max(cfg.batch_size, cfg.eval_batch_size);
  metrics_.reserve(eval_events * (1 + static_cast<size_t>(cfg.eval_negatives)),
                   static_cast<size_t>(most * (1 + cfg.eval_negatives)));
}

// The runner's scores of the last batch into the split's metrics.
void Evaluator::score_batch(const int64_t* events, int64_t count) {
  const int32_t k = cfg_.eval_negatives;
  const float* scores = runner_.scores().data();
  if (sink_)
    sink_({events, count, scores, k, new_node_pass_, steps_.current().plan.negatives.data()});
  metrics_.add_batch(scores, static_cast<size_t>(count), scores + count,
                     static_cast<size_t>(k * count));
  if (k <= 1) return;
  // MRR wants [B, K]: negative j of event b sits at block j, row b.
  neg_scores_.resize(static_cast<size_t>(k * count));
  for (int64_t b = 0; b < count; ++b)
    for (int32_t j = 0; j < k; ++j)
      neg_scores_[static_cast<size_t>(b * k + j)] = scores[count + j * count + b];
  rr_sum_ += mean_reciprocal_rank(scores, neg_scores_.data(), static_cast<size_t>(count),
                                  static_cast<size_t>(k)) *
             static_cast<double>(count);
}

void Evaluator::forward(const std::vector<int64_t>& events, uint32_t split_id, int64_t batch_size,
                        const BatchFn& each) {
  const auto total = static_cast<int64_t>(events.size());
  for (int64_t begin = 0; begin < total; begin += batch_size) {
    ScheduledStep batch;
    batch.index = -1;
    batch.events = events.data() + begin;
    batch.count = batch.global_count = std::min(batch_size, total - begin);
    batch.first_event = batch.events[0];
    steps_.current().split = split_id;
    StepData& d = steps_.run(batch, 0, Pass::evaluate, kEvaluationStages);
    if (each) each(begin, batch.count, d);
    d.step = nullptr;  // `batch` ends here
  }
}

EvalResult Evaluator::evaluate(const std::vector<int64_t>& events, uint32_t split_id) {
  EvalResult r;
  if (events.empty()) return r;
  Stopwatch watch;
  const auto total = static_cast<int64_t>(events.size());
  metrics_.clear();
  rr_sum_ = 0;
  forward(events, split_id, cfg_.eval_batch_size,
          [&](int64_t begin, int64_t count, const StepData&) {
            score_batch(events.data() + begin, count);
          });
  r.valid = true;
  r.events = total;
  r.batches = (total + cfg_.eval_batch_size - 1) / cfg_.eval_batch_size;
  r.whole = metrics_.whole_split();
  r.batch_mean = metrics_.batch_mean();
  if (cfg_.eval_negatives > 1) r.mrr = rr_sum_ / static_cast<double>(total);
  r.seconds = watch.seconds();
  return r;
}

std::pair<EvalResult, EvalResult> Evaluator::evaluate_both(const std::vector<int64_t>& all,
                                                           const std::vector<int64_t>& fresh,
                                                           uint32_t split_id) {
  EvalResult whole, fresh_result;
  const bool new_nodes = cfg_.new_nodes && !fresh.empty();
  if (new_nodes) before_->copy_from(state_);
  whole = evaluate(all, split_id);
  if (new_nodes) {
    after_->copy_from(state_);
    state_.copy_from(*before_);
    new_node_pass_ = true;
    fresh_result = evaluate(fresh, split_id);
    new_node_pass_ = false;
    state_.copy_from(*after_);
  }
  return {whole, fresh_result};
}

}  // namespace depbloom::train
