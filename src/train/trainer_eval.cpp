// Evaluation passes: each batch planned, staged, gathered, updated, embedded and scored
// like a training step without gradients, then written back so memory carries on.
#include <algorithm>

#include "depbloom/backend/ops.h"
#include "depbloom/core/timer.h"
#include "depbloom/train/trainer.h"

namespace depbloom::train {

// Evaluation cuts its batches into micro-batches of the training micro-batch's size (at
// least one), so that a row sees as much of its batch as in training.
int32_t Trainer::eval_micro_batches() const {
  const int32_t m = cfg_.refine_micro_batches;
  if (m <= 1) return 1;
  const int64_t micro = std::max<int64_t>(1, cfg_.batch_size / m);
  return static_cast<int32_t>(std::max<int64_t>(1, cfg_.eval_batch_size / micro));
}

void Trainer::evaluate_batch(const int64_t* batch, int64_t count, uint32_t split_id) {
  const int32_t k = cfg_.eval_negatives;
  const DType dtype = store_->dtype();
  Arena& arena = arena_->device();
  StepData& d = data_;
  arena_->reset();
  negatives_.resize(static_cast<size_t>(count * k));
  eval_negatives_->sample_events(split_id, batch, count, negatives_.data());
  planner_->plan_batch(d.plan, batch, count, negatives_.data(), k, 0, eval_sampler_.get(),
                       eval_micro_batches());
  d.staged = stager_->stage(d.plan, *state_, *arena_);
  d.staged.in.seed = cfg_.seed;
  const model::TgnnInputs& in = d.staged.in;
  model_->gather(d.rows, *state_, in, arena);
  d.updated =
      arena.alloc(dtype, Shape(in.mem_node.numel() + d.plan.refined_rows(), cfg_.model.d_input()));
  model_->update_memory(d.memory_rows(), in, d.rows, false, arena);
  if (d.plan.refined_rows() > 0) model_->refine(d.updated, in, d.rows, edge_feat_.view(), arena);
  d.emb = arena.alloc(dtype, Shape(d.plan.roots(), cfg_.model.d_out()));
  model_->embed(d.emb, in, d.updated, d.rows, edge_feat_.view(), false, arena);
  const int64_t n = (1 + k) * count;
  Tensor logits = arena.alloc(dtype, Shape(n));
  model_->predict(logits, d.emb, arena);
  scores_.resize(static_cast<size_t>(n));
  if (dtype == DType::f32) {
    ops::copy(Tensor::wrap(scores_.data(), Shape(n)), logits);
  } else {
    Tensor host = arena_->host().alloc(DType::f64, Shape(n));
    ops::copy(host, logits);
    for (int64_t i = 0; i < n; ++i)
      scores_[static_cast<size_t>(i)] = static_cast<float>(host.data<double>()[i]);
  }
  metrics_.add_batch(scores_.data(), static_cast<size_t>(count), scores_.data() + count,
                     static_cast<size_t>(k * count));
  if (k > 1) {  // MRR wants [B, K]: negative j of event b sits at block j, row b
    neg_scores_.resize(static_cast<size_t>(k * count));
    for (int64_t b = 0; b < count; ++b)
      for (int32_t j = 0; j < k; ++j)
        neg_scores_[static_cast<size_t>(b * k + j)] =
            scores_[static_cast<size_t>(count + j * count + b)];
    rr_sum_ += mean_reciprocal_rank(scores_.data(), neg_scores_.data(), static_cast<size_t>(count),
                                    static_cast<size_t>(k)) *
               static_cast<double>(count);
  }
  if (!plan_cfg_.memory) return;
  const model::WriteSet writes = collect(d.plan, d.staged, plan_cfg_, d.memory_rows(),
                                         d.rows.last_update, edge_feat_.view(), *arena_);
  state_->apply(writes, model::WriteFilter{}, arena);
}

EvalResult Trainer::evaluate(const std::vector<int64_t>& events, uint32_t split_id) {
  EvalResult r;
  if (events.empty()) return r;
  Stopwatch watch;
  const auto total = static_cast<int64_t>(events.size());
  metrics_.clear();
  rr_sum_ = 0;
  for (int64_t begin = 0; begin < total; begin += cfg_.eval_batch_size)
    evaluate_batch(events.data() + begin, std::min(cfg_.eval_batch_size, total - begin), split_id);
  r.valid = true;
  r.events = total;
  r.whole = metrics_.whole_split();
  r.batch_mean = metrics_.batch_mean();
  if (cfg_.eval_negatives > 1) r.mrr = rr_sum_ / static_cast<double>(total);
  r.seconds = watch.seconds();
  return r;
}

}  // namespace depbloom::train
