// The stages of a step, in table order, each reading and writing StepData. A training run
// takes the loss, its gradients and Adam's step, and hands its writes to the strategy; an
// evaluation run scores without dropout and applies its writes itself.
#include "depbloom/train/step_runner.h"

#include <algorithm>
#include <cmath>

#include "depbloom/backend/ops.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/loss.h"

namespace depbloom::train {

const char* stage_name(Stage stage) {
  static constexpr const char* kNames[kStages] = {
      "sample", "gather",   "memory_update", "refine",   "embed",
      "loss",   "backward", "reduce",        "optimise", "write_back"};
  return kNames[static_cast<size_t>(stage)];
}

// The optimiser runs last: the write-back reads no parameter, so a pipelined step's
// non-blocking gradient all-reduce stays in flight through it.
const StepRunner::StageEntry StepRunner::kStageTable[kStages] = {
    {Stage::sample, &StepRunner::sample, &StepRunner::sample},
    {Stage::gather, &StepRunner::gather, &StepRunner::gather},
    {Stage::memory_update, &StepRunner::memory_update, &StepRunner::memory_update},
    {Stage::refine, &StepRunner::refine, &StepRunner::refine},
    {Stage::embed, &StepRunner::embed, &StepRunner::embed},
    {Stage::loss, &StepRunner::loss, &StepRunner::score},
    {Stage::backward, &StepRunner::backward, nullptr},
    {Stage::reduce, &StepRunner::reduce, nullptr},
    {Stage::write_back, &StepRunner::write_back, &StepRunner::apply_writes},
    {Stage::optimise, &StepRunner::optimise, nullptr},
};

StepRunner::StepRunner(const StepParts& parts) : p_(parts), refine_(refine_mode(*parts.cfg)) {
  const TrainerConfig& cfg = *p_.cfg;
  const int64_t most = std::max(cfg.batch_size, cfg.eval_batch_size);
  negatives_.reserve(static_cast<size_t>(most * std::max(1, cfg.eval_negatives)));
}

void StepRunner::run(StepData& d, StepArena& arena, StageMask mask, StageTimes* times) {
  for (const StageEntry& e : kStageTable) {
    if (!mask.has(e.stage)) continue;
    const StageFn fn = d.pass == Pass::train ? e.train : e.evaluate;
    DB_ASSERT(fn != nullptr, "stage {} has no evaluation form", stage_name(e.stage));
    if (times == nullptr) {
      (this->*fn)(d, arena);
      continue;
    }
    Stopwatch watch;
    (this->*fn)(d, arena);
    (*times)[e.stage] += watch.seconds();
  }
}

void StepRunner::plan_step(BatchPlan& out, const ScheduledStep& step, uint32_t epoch) {
  const TrainerConfig& cfg = *p_.cfg;
  DB_ASSERT(step.count > 0 && step.count <= cfg.batch_size, "train step of {} events (batch {})",
            step.count, cfg.batch_size);
  negatives_.resize(static_cast<size_t>(step.count));
  p_.train_negatives->sample_events(step.events, step.count, 1, epoch, negatives_.data());
  p_.planner->plan_batch(out, step.events, step.count, negatives_.data(), 1, epoch,
                         p_.train_sampler, refine_.train_micro_batches);
  if (cfg.model.refine && cfg.model.coherence_weight > 0)
    p_.planner->plan_coherence(out, cfg.seed, cfg.refine_coherence_sample);
}

// An evaluation batch's plan: eval.negatives per event from its split (or the negatives it
// was given), the whole stream's neighbours, epoch 0.
void StepRunner::plan_evaluation(StepData& d) {
  const ScheduledStep& step = *d.step;
  if (d.negatives_k >= 0) {
    p_.planner->plan_batch(d.plan, step.events, step.count, d.negatives, d.negatives_k, 0,
                           p_.eval_sampler, refine_.eval_micro_batches);
    return;
  }
  const int32_t k = p_.cfg->eval_negatives;
  negatives_.resize(static_cast<size_t>(step.count * k));
  p_.eval_negatives->sample_events(d.split, step.events, step.count, negatives_.data());
  p_.planner->plan_batch(d.plan, step.events, step.count, negatives_.data(), k, 0, p_.eval_sampler,
                         refine_.eval_micro_batches);
}

bool StepRunner::overlaps(const StepData& d) const {
  return d.step != nullptr && lookahead_ != nullptr && lookahead_->overlaps(*d.step);
}

// sample: negatives, the plan (no node state) and the staged inputs (node state's rings).
void StepRunner::sample(StepData& d, StepArena& arena) {
  arena.reset();
  if (d.empty()) return;
  if (d.pass == Pass::evaluate) {
    plan_evaluation(d);
  } else if (lookahead_ == nullptr || !lookahead_->take_plan(d)) {
    plan_step(d.plan, *d.step, d.epoch);
  }
  d.staged = p_.stager->stage(d.plan, *p_.state, arena);
  d.staged.in.seed = p_.cfg->seed;
  d.staged.in.epoch = d.epoch;
  if (d.pass == Pass::evaluate) return;
  counts_.memory_rows += d.plan.memory_rows();
  counts_.refined_rows += d.plan.refined_rows();
}

void StepRunner::gather(StepData& d, StepArena& arena) {
  if (d.empty()) return;
  p_.model->gather(d.rows, *p_.state, d.staged.in, arena.device());
}

void StepRunner::memory_update(StepData& d, StepArena& arena) {
  if (d.empty()) return;
  // Room for the refined copies after the U memory rows; the updater fills [0, U).
  const int64_t u = d.staged.in.mem_node.numel(), r = d.plan.refined_rows();
  d.updated = arena.device().alloc(p_.store->dtype(), Shape(u + r, p_.cfg->model.d_input()));
  p_.model->update_memory(d.memory_rows(), d.staged.in, d.rows, d.pass == Pass::train,
                          arena.device());
}

// refine: the copies of rows read after their node's earlier in-batch events (none with one
// micro-batch), and the coherence loss's target for the sampled ones (training plans only
// sample them).
void StepRunner::refine(StepData& d, StepArena& arena) {
  d.coherence_target = Tensor{};
  if (d.empty() || d.plan.refined_rows() == 0) return;
  p_.model->refine(d.updated, d.staged.in, d.rows, p_.edge_feat, arena.device());
  const auto sampled = static_cast<int64_t>(d.plan.coherence.copy.size());
  if (sampled == 0) return;
  d.coherence_target = arena.device().alloc(p_.store->dtype(), Shape(sampled, p_.cfg->model.d_mem));
  p_.model->coherence_target(d.coherence_target, d.updated, d.staged.in, d.rows, p_.edge_feat,
                             arena.device());
}

void StepRunner::embed(StepData& d, StepArena& arena) {
  if (d.empty()) return;
  d.emb = arena.device().alloc(p_.store->dtype(), Shape(d.plan.roots(), p_.cfg->model.d_out()));
  p_.model->embed(d.emb, d.staged.in, d.updated, d.rows, p_.edge_feat, d.pass == Pass::train,
                  arena.device());
}

// loss: TGL's loss, BCE(pos, 1) + BCE(neg, 0), each a mean over this rank's events, and
// beside it the coherence loss (both read with one copy).
void StepRunner::loss(StepData& d, StepArena& arena) {
  d.coherence_loss = 0;
  if (d.empty()) return;
  const DType dtype = p_.store->dtype();
  const int64_t count = d.step->count;
  Arena& dev = arena.device();
  d.logits = dev.alloc(dtype, Shape(2 * count));
  p_.model->predict(d.logits, d.emb, dev);
  d.targets = Tensor(p_.targets.raw(), dtype, Shape(2 * count), p_.cfg->device);
  if (count < p_.cfg->batch_size) {  // a short step: ones then zeros, freshly laid out
    d.targets = dev.alloc(dtype, Shape(2 * count));
    ops::fill(d.targets.rows(0, count), 1.0);
    ops::fill(d.targets.rows(count, 2 * count), 0.0);
  }
  const int64_t parts = d.coherence_target.defined() ? 2 : 1;
  Tensor loss = dev.alloc(dtype, Shape(parts));
  // The task loss's gradient comes in the same pass: this rank's share of the global mean.
  d.d_logits = dev.alloc(dtype, Shape(2 * count));
  model::bce_loss_and_grad(loss.rows(0, 1), d.d_logits, d.logits, d.targets,
                           2.0 * d.step->loss_share);
  if (parts == 2) p_.model->coherence_loss(loss.rows(1, 2), d.updated, d.coherence_target, dev);
  double host[2] = {0, 0};
  if (dtype == DType::f64) {
    ops::copy(Tensor::wrap(host, Shape(parts)), loss);
  } else {
    float f[2] = {0, 0};
    ops::copy(Tensor::wrap(f, Shape(parts)), loss);
    host[0] = f[0], host[1] = f[1];
  }
  d.local_loss = 2.0 * host[0];
  d.coherence_loss = host[1];
  check_finite_loss(d.local_loss + d.coherence_loss, d);
}

// score (evaluation's loss stage): the logits of the positives and every negative, copied to
// the host as floats.
void StepRunner::score(StepData& d, StepArena& arena) {
  const DType dtype = p_.store->dtype();
  const int64_t n = (1 + d.plan.negatives_k) * d.step->count;
  d.logits = arena.device().alloc(dtype, Shape(n));
  p_.model->predict(d.logits, d.emb, arena.device());
  scores_.resize(static_cast<size_t>(n));
  if (dtype == DType::f32) {
    ops::copy(Tensor::wrap(scores_.data(), Shape(n)), d.logits);
    return;
  }
  Tensor host = arena.host().alloc(DType::f64, Shape(n));
  ops::copy(host, d.logits);
  for (int64_t i = 0; i < n; ++i)
    scores_[static_cast<size_t>(i)] = static_cast<float>(host.data<double>()[i]);
}

// backward: the gradient of this rank's share of the global mean loss (the whole of it on
// one device); an empty part still takes part in the reduction, with zero gradients.
void StepRunner::backward(StepData& d, StepArena& arena) {
  p_.store->zero_grad();
  if (d.empty()) return;
  p_.model->backward(d.d_logits, arena.device(), d.step->loss_share);
}

// Pipelined, the reduction only starts here; the write-back runs while it is in flight and
// optimise finishes it (MPI stays on this thread).
void StepRunner::reduce(StepData& d, StepArena& /*arena*/) {
  if (overlaps(d)) return p_.strategy->start_reduce(*p_.store);
  p_.strategy->reduce_gradients(*p_.store);
}

void StepRunner::optimise(StepData& d, StepArena& /*arena*/) {
  if (overlaps(d)) counts_.reduce_wait += p_.strategy->finish_reduce();
  ops::AdamConfig adam;
  adam.lr =
      scheduled_lr(p_.cfg->lr, p_.cfg->batch_size, p_.cfg->lr_schedule, p_.store->adam_steps());
  adam.weight_decay = p_.cfg->weight_decay;
  p_.store->adam_step(adam);
}

model::WriteSet StepRunner::collect_writes(const StepData& d, StepArena& arena) const {
  if (!p_.plan->memory || d.plan.batch() == 0) return model::WriteSet{};
  return collect(d.plan, d.staged, *p_.plan, d.memory_rows(), d.rows.last_update, p_.edge_feat,
                 arena);
}

// write_back: the plan's writes collected from the model's outputs; the strategy applies
// them (and at a sync point exchanges them) and returns the step's global loss.
void StepRunner::write_back(StepData& d, StepArena& arena) {
  const bool memory = p_.plan->memory;
  // An empty part's plan is a previous step's: it writes nothing.
  d.writes = d.empty() ? model::WriteSet{} : collect_writes(d, arena);
  if (lookahead_ != nullptr) {
    lookahead_->mark_reads(*d.step, d.epoch);
  } else {
    p_.writer->clear_marks();
    p_.writer->set_mode(StepWriter::Mode::urgent);
  }
  StepWrites w;
  w.writer = p_.writer;
  w.step = d.step;
  w.planned = &d.plan.writes;
  w.writes = d.writes;
  w.state = p_.state;
  w.arena = &arena;
  w.memory = memory;
  w.local_loss = d.empty() ? 0.0 : d.local_loss;
  d.loss = p_.strategy->reconcile(w);
}

// Evaluation's write-back: memory carries on into the next batch, on this rank alone.
void StepRunner::apply_writes(StepData& d, StepArena& arena) {
  if (!p_.plan->memory) return;
  d.writes = collect_writes(d, arena);
  p_.state->apply(d.writes, model::WriteFilter{}, arena.device());
}

void check_finite_loss(double loss, const StepData& d) {
  if (std::isfinite(loss)) return;
  DB_THROW(runtime,
           "the training loss is {} at epoch {}, batch {} (first event: stream row {}); stopping",
           loss, d.epoch, d.step->index + 1, d.step->first_event);
}

}  // namespace depbloom::train
