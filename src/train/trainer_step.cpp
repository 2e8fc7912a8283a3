// The stages of a training step, in table order, each reading and writing StepData; one
// step runs them all, timing each; step_loss runs the forward half for gradient checks.
#include <cmath>

#include "depbloom/backend/ops.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/loss.h"
#include "depbloom/train/trainer.h"

namespace depbloom::train {

const char* stage_name(Stage stage) {
  static constexpr const char* kNames[kStages] = {
      "sample", "gather",   "memory_update", "refine",   "embed",
      "loss",   "backward", "reduce",        "optimise", "write_back"};
  return kNames[static_cast<size_t>(stage)];
}

// The optimiser runs last: the write-back reads no parameter, so a pipelined step's
// non-blocking gradient all-reduce stays in flight through it.
const std::array<Trainer::StageEntry, kStages> Trainer::kTrainingStages = {{
    {Stage::sample, &Trainer::sample},
    {Stage::gather, &Trainer::gather},
    {Stage::memory_update, &Trainer::memory_update},
    {Stage::refine, &Trainer::refine},
    {Stage::embed, &Trainer::embed},
    {Stage::loss, &Trainer::loss},
    {Stage::backward, &Trainer::backward},
    {Stage::reduce, &Trainer::reduce},
    {Stage::write_back, &Trainer::write_back},
    {Stage::optimise, &Trainer::optimise},
}};

void Trainer::plan_step(BatchPlan& out, const ScheduledStep& step, int epoch) {
  DB_ASSERT(step.count > 0 && step.count <= cfg_.batch_size, "train step of {} events (batch {})",
            step.count, cfg_.batch_size);
  const auto ep = static_cast<uint32_t>(epoch);
  negatives_.resize(static_cast<size_t>(step.count));
  train_negatives_->sample_events(step.events, step.count, 1, ep, negatives_.data());
  planner_->plan_batch(out, step.events, step.count, negatives_.data(), 1, ep, train_sampler_.get(),
                       cfg_.refine_micro_batches);
  if (cfg_.model.refine && cfg_.model.coherence_weight > 0)
    planner_->plan_coherence(out, cfg_.seed, cfg_.refine_coherence_sample);
}

// Whether `step` runs pipelined: the pipeline is on and the step is one of schedule_'s
// (the lookahead reads the steps after it).
bool Trainer::pipelined(const ScheduledStep& step) const {
  return cfg_.pipeline.enabled && step.index >= 0 && step.index < schedule_.size() &&
         &schedule_.step(step.index) == &step;
}

// The step's plan: made ahead by an earlier step's lookahead, else now.
void Trainer::take_plan(StepData& d) {
  if (pipelined(*d.step)) {
    const auto slot = static_cast<size_t>(d.step->index) % ahead_.size();
    if (ahead_step_[slot] == d.step->index && ahead_[slot].epoch == d.epoch) {
      std::swap(d.plan, ahead_[slot]);
      ahead_step_[slot] = -1;
      return;
    }
    writer_->flush();  // the side thread may be planning: the planner is not shared
  }
  plan_step(d.plan, *d.step, static_cast<int>(d.epoch));
}

// On the side thread, after its deferred apply: the plan of step prefetch_step_, which no
// step before the next flush reads.
void Trainer::prefetch_plan(void* trainer) {
  auto& t = *static_cast<Trainer*>(trainer);
  const ScheduledStep& s = t.schedule_.step(t.prefetch_step_);
  const auto slot = static_cast<size_t>(s.index) % t.ahead_.size();
  t.plan_step(t.ahead_[slot], s, static_cast<int>(t.prefetch_epoch_));
  t.ahead_step_[slot] = s.index;
}

// The nodes the next pipeline.horizon steps read (not past a window end, whose exchange
// reads every row), planned ahead where not yet: their writes now are urgent, the rest
// deferred. A step that a flush point follows at once (a window end, the epoch's last step)
// has nothing to overlap and defers nothing.
void Trainer::mark_lookahead(const ScheduledStep& step) {
  using Mode = StepWriter::Mode;
  writer_->clear_marks();
  if (!pipelined(step)) return writer_->set_mode(Mode::urgent);
  const Schedule::Range next = schedule_.lookahead(step.index, cfg_.pipeline.horizon);
  if (next.begin == next.end || (strategy_->windowed() && step.sync == SyncPoint::exchange))
    return writer_->set_mode(Mode::sync);
  bool window_end = false;
  for (const ScheduledStep* s = next.begin; s != next.end && !window_end; ++s) {
    if (s->count > 0) {
      const auto slot = static_cast<size_t>(s->index) % ahead_.size();
      BatchPlan& plan = ahead_[slot];
      if (ahead_step_[slot] != s->index || plan.epoch != data_.epoch) {
        plan_step(plan, *s, static_cast<int>(data_.epoch));
        ahead_step_[slot] = s->index;
      }
      writer_->mark(plan.mem_node.data(), plan.memory_rows());
    }
    window_end = strategy_->windowed() && s->sync == SyncPoint::exchange;
  }
  writer_->set_mode(Mode::split);
  // Prefetch: the side thread plans the step after the lookahead (not past a window end).
  const int64_t after = step.index + cfg_.pipeline.horizon + 1;
  if (!window_end && after < schedule_.size() && schedule_.step(after).count > 0) {
    prefetch_step_ = after;
    prefetch_epoch_ = data_.epoch;
    writer_->set_after(&Trainer::prefetch_plan, this);
  }
}

// sample: negatives, the plan (no node state) and the staged inputs (node state's rings).
void Trainer::sample(StepData& d) {
  arena_->reset();
  if (d.empty()) return;
  take_plan(d);
  d.staged = stager_->stage(d.plan, *state_, *arena_);
  d.staged.in.seed = cfg_.seed;
  d.staged.in.epoch = d.epoch;
  memory_rows_ += d.plan.memory_rows();
  refined_rows_ += d.plan.refined_rows();
}

void Trainer::gather(StepData& d) {
  if (d.empty()) return;
  model_->gather(d.rows, *state_, d.staged.in, arena_->device());
}

void Trainer::memory_update(StepData& d) {
  if (d.empty()) return;
  // Room for the refined copies after the U memory rows; the updater fills [0, U).
  const int64_t u = d.staged.in.mem_node.numel(), r = d.plan.refined_rows();
  d.updated = arena_->device().alloc(store_->dtype(), Shape(u + r, cfg_.model.d_input()));
  model_->update_memory(d.memory_rows(), d.staged.in, d.rows, true, arena_->device());
}

// refine: the copies of rows read after their node's earlier in-batch events (none with one
// micro-batch), and the coherence loss's target for the sampled ones.
void Trainer::refine(StepData& d) {
  d.coherence_target = Tensor{};
  if (d.empty() || d.plan.refined_rows() == 0) return;
  model_->refine(d.updated, d.staged.in, d.rows, edge_feat_.view(), arena_->device());
  const auto sampled = static_cast<int64_t>(d.plan.coherence_copy.size());
  if (sampled == 0) return;
  d.coherence_target = arena_->device().alloc(store_->dtype(), Shape(sampled, cfg_.model.d_mem));
  model_->coherence_target(d.coherence_target, d.updated, d.staged.in, d.rows, edge_feat_.view(),
                           arena_->device());
}

void Trainer::embed(StepData& d) {
  if (d.empty()) return;
  const int64_t roots = d.plan.roots();
  d.emb = arena_->device().alloc(store_->dtype(), Shape(roots, cfg_.model.d_out()));
  model_->embed(d.emb, d.staged.in, d.updated, d.rows, edge_feat_.view(), true, arena_->device());
}

// loss: TGL's loss, BCE(pos, 1) + BCE(neg, 0), each a mean over this rank's events, and
// beside it the coherence loss (both read with one copy).
void Trainer::loss(StepData& d) {
  d.coherence_loss = 0;
  if (d.empty()) return;
  const DType dtype = store_->dtype();
  const int64_t count = d.step->count;
  Arena& arena = arena_->device();
  d.logits = arena.alloc(dtype, Shape(2 * count));
  model_->predict(d.logits, d.emb, arena);
  d.targets = Tensor(targets_.view().raw(), dtype, Shape(2 * count), cfg_.device);
  if (count < cfg_.batch_size) {  // a short step: ones then zeros, freshly laid out
    d.targets = arena.alloc(dtype, Shape(2 * count));
    ops::fill(d.targets.rows(0, count), 1.0);
    ops::fill(d.targets.rows(count, 2 * count), 0.0);
  }
  const int64_t parts = d.coherence_target.defined() ? 2 : 1;
  Tensor loss = arena.alloc(dtype, Shape(parts));
  model::bce_loss_forward(loss.rows(0, 1), d.logits, d.targets);
  if (parts == 2) model_->coherence_loss(loss.rows(1, 2), d.updated, d.coherence_target, arena);
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
  check_finite(d.local_loss + d.coherence_loss, d);
}

// backward: the gradient of this rank's share of the global mean loss (the whole of it on
// one device); an empty part still takes part in the reduction, with zero gradients.
void Trainer::backward(StepData& d) {
  store_->zero_grad();
  if (d.empty()) return;
  Arena& arena = arena_->device();
  Tensor d_logits = arena.alloc(store_->dtype(), Shape(2 * d.step->count));
  model::bce_loss_backward(d_logits, d.logits, d.targets, 2.0 * d.step->loss_share);
  model_->backward(d_logits, arena, d.step->loss_share);
}

// Pipelined, the reduction only starts here; the write-back runs while it is in flight and
// optimise finishes it (MPI stays on this thread).
void Trainer::reduce(StepData& d) {
  if (d.step != nullptr && pipelined(*d.step)) return strategy_->start_reduce(*store_);
  strategy_->reduce_gradients(*store_);
}

void Trainer::optimise(StepData& d) {
  if (d.step != nullptr && pipelined(*d.step)) reduce_wait_ += strategy_->finish_reduce();
  ops::AdamConfig adam;
  adam.lr = cfg_.lr;
  adam.weight_decay = cfg_.weight_decay;
  store_->adam_step(adam);
}

// write_back: the plan's writes collected from the model's outputs; the strategy applies
// them (and at a sync point exchanges them) and returns the step's global loss.
void Trainer::write_back(StepData& d) {
  const bool memory = plan_cfg_.memory;
  d.writes = model::WriteSet{};
  if (!d.empty() && memory)
    d.writes = collect(d.plan, d.staged, plan_cfg_, d.memory_rows(), d.rows.last_update,
                       edge_feat_.view(), *arena_);
  mark_lookahead(*d.step);
  StepWrites w;
  w.writer = writer_.get();
  w.step = d.step;
  w.planned = &d.plan.writes;
  w.writes = d.writes;
  w.state = state_.get();
  w.arena = arena_.get();
  w.memory = memory;
  w.local_loss = d.empty() ? 0.0 : d.local_loss;
  d.loss = strategy_->reconcile(w);
}

void Trainer::check_finite(double loss, const StepData& d) const {
  if (std::isfinite(loss)) return;
  DB_THROW(runtime,
           "the training loss is {} at epoch {}, batch {} (first event: stream row {}); stopping",
           loss, d.epoch, d.step->index + 1, d.step->first_event);
}

double Trainer::train_step(const ScheduledStep& step, int epoch) {
  // Pipelined, the last step's data and arena stay as they are for its deferred writes, and
  // the write-back runs before the optimiser, while the gradient reduction is in flight (it
  // reads no parameter).
  const bool piped = pipelined(step);
  if (piped) std::swap(data_, spare_data_), std::swap(arena_, spare_arena_);
  data_.step = &step;
  data_.epoch = static_cast<uint32_t>(epoch);
  for (const StageEntry& s : kTrainingStages) {
    Stopwatch watch;
    (this->*s.run)(data_);
    stages_[s.stage] += watch.seconds();
  }
  // Each rank checked its own events' loss; this is the global one (the same on every rank).
  check_finite(data_.loss, data_);
  loss_trace_.push_back(data_.loss);
  coherence_sum_ += data_.empty() ? 0.0 : data_.coherence_loss;
  return data_.loss;
}

double Trainer::step_loss(const int64_t* events, int64_t count, int epoch, bool with_gradients) {
  writer_->flush();
  const ScheduledStep step = contiguous_part(events, count, 0, 1);
  data_.step = &step;
  data_.epoch = static_cast<uint32_t>(epoch);
  for (Stage s : {Stage::sample, Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                  Stage::loss})
    (this->*kTrainingStages[static_cast<size_t>(s)].run)(data_);
  if (with_gradients) backward(data_);
  const double loss = data_.local_loss + data_.coherence_loss;
  data_.step = nullptr;
  return loss;
}

const model::WriteSet& Trainer::step_writes() {
  data_.writes = model::WriteSet{};
  if (plan_cfg_.memory && data_.plan.batch() > 0)
    data_.writes = collect(data_.plan, data_.staged, plan_cfg_, data_.memory_rows(),
                           data_.rows.last_update, edge_feat_.view(), *arena_);
  return data_.writes;
}

}  // namespace depbloom::train
