// Trainer: construction (model, node state, samplers, planner, the step runner and its
// pipeline), the epoch loop over the strategy's schedule, and the test passes.
#include "depbloom/train/trainer.h"

#include <algorithm>
#include <cmath>

#include "depbloom/backend/op_counts.h"
#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/memory_model.h"

namespace depbloom::train {
namespace {

constexpr uint32_t kSplitVal = 1, kSplitTest = 2;
// The replay's evaluation negatives are drawn (the pass scores them) but nothing reads them.
constexpr uint32_t kSplitReplay = 3;

std::unique_ptr<graph::NeighbourSampler> make_sampler(const graph::TemporalCsr& csr,
                                                      const TrainerConfig& cfg, int32_t hops) {
  if (hops == 0) return nullptr;
  const int32_t k = cfg.model.neighbours;
  if (cfg.uniform_sampling) return std::make_unique<graph::UniformSampler>(csr, k, hops, cfg.seed);
  return std::make_unique<graph::RecentSampler>(csr, k, hops);
}

PlanConfig plan_config(const TrainerConfig& cfg) {
  const auto& m = cfg.model;
  const model::MemoryPlanFlags flags = model::memory_model(m.memory).plan;
  PlanConfig pc;
  pc.hops = m.hops();
  pc.neighbours = m.neighbours;
  pc.deliver_to_neighbours = cfg.deliver_to_neighbours && flags.memory;
  pc.prop_time = cfg.prop_time;
  pc.memory = flags.memory;
  pc.mail_mask = flags.mail_mask;
  pc.jodie = m.embedding == model::EmbeddingKind::jodie;
  pc.mail_dt_at_event = m.mail_dt_at_event;
  pc.skip_empty_mailbox = m.skip_empty_mailbox;
  pc.refine_aggregate = cfg.refine_aggregate;
  pc.refine_mail_dt = m.refine_start == model::RefineStart::updater && m.mail_dt_at_event;
  pc.refine_bases = m.refine_start == model::RefineStart::updater;
  return pc;
}

std::unique_ptr<model::NodeState> make_state(const data::EventStream& stream,
                                             const TrainerConfig& cfg) {
  const auto& m = cfg.model;
  const bool memory = m.memory != model::MemoryKind::none;
  return std::make_unique<model::NodeState>(stream.num_nodes, memory ? m.d_mem : 1,
                                            memory ? m.d_mail() : 1, memory ? m.mailbox : 1,
                                            cfg.dtype, cfg.device);
}

}  // namespace

Trainer::Trainer(const data::EventStream& stream, const data::ChronoSplit& split,
                 const TrainerConfig& cfg)
    : stream_(stream), split_(split), cfg_(cfg) {
  DB_ASSERT(cfg.dtype == DType::f32 || cfg.device.is_cpu(), "f64 training runs on the CPU only");
  if (split.train.empty()) DB_THROW(data, "{}: the training split is empty", stream.source);
  cfg_.model.d_edge = stream.edge_dim;
  DB_ASSERT(cfg.refine_micro_batches >= 1, "refine: {} micro-batches", cfg.refine_micro_batches);
  DB_ASSERT(cfg.refine_coherence_sample > 0 && cfg.refine_coherence_sample <= 1,
            "refine: a coherence sample of {} (must be in (0, 1])", cfg.refine_coherence_sample);
  cfg_.model.refine = refine_mode(cfg).on;
  if (cfg_.standardise_time && cfg_.model.embedding == model::EmbeddingKind::jodie)
    standardise_time();
  store_ = std::make_unique<model::ParameterStore>(cfg.dtype, cfg.device);
  model_ = std::make_unique<model::Tgnn>(*store_, cfg_.model);
  store_->finalize();
  store_->initialize(cfg.seed);
  strategy_ = make_strategy(strategy_context());
  strategy_->sync_parameters(*store_);
  state_ = make_state(stream, cfg_);

  plan_cfg_ = plan_config(cfg_);
  // TGN's protocol samples training neighbours from the training events only (the held-out
  // nodes stay unseen) and evaluation neighbours from the whole stream.
  train_csr_ = graph::TemporalCsr::build(stream, split.train);
  full_csr_ = graph::TemporalCsr::build(stream);
  train_sampler_ = make_sampler(train_csr_, cfg_, plan_cfg_.sampled_hops());
  eval_sampler_ = make_sampler(full_csr_, cfg_, plan_cfg_.sampled_hops());
  planner_ = std::make_unique<BatchPlanner>(stream, plan_cfg_);
  stager_ = std::make_unique<BatchStager>(plan_cfg_, cfg.dtype);
  train_negatives_ = std::make_unique<graph::TrainNegativeSampler>(stream, cfg.seed);
  eval_negatives_ = std::make_unique<graph::EvalNegativeSampler>(
      stream, split.train, cfg.eval_strategy, cfg.eval_negatives, cfg.seed);

  if (stream.edge_dim > 0) {
    const Shape shape(stream.num_events() + cfg.spare_events, stream.edge_dim);
    edge_feat_ = OwnedTensor(cfg.dtype, shape, cfg.device);
    copy_edge_rows(0, stream.num_events());
  }
  make_targets();
  // The side thread only on a CPU run: a CUDA step's writes stay on its stream.
  writer_ =
      std::make_unique<StepWriter>(stream.num_nodes, cfg.pipeline.enabled && cfg.device.is_cpu());
  runner_ = std::make_unique<StepRunner>(step_parts());
  steps_ = std::make_unique<StepPipeline>(*runner_, *writer_, *strategy_, cfg.pipeline, cfg.device);
  evaluator_ = std::make_unique<Evaluator>(*steps_, *runner_, *state_, cfg_,
                                           split.val.size() + split.test.size());
}

StepParts Trainer::step_parts() {
  StepParts p;
  p.cfg = &cfg_;
  p.plan = &plan_cfg_;
  p.store = store_.get();
  p.model = model_.get();
  p.state = state_.get();
  p.planner = planner_.get();
  p.stager = stager_.get();
  p.train_sampler = train_sampler_.get();
  p.eval_sampler = eval_sampler_.get();
  p.train_negatives = train_negatives_.get();
  p.eval_negatives = eval_negatives_.get();
  p.strategy = strategy_.get();
  p.writer = writer_.get();
  p.edge_feat = edge_feat_.view();
  p.targets = targets_.view();
  return p;
}

Trainer::~Trainer() = default;

// JODIE's projection input as the TGN authors normalise it: the mean and standard deviation
// of each training event's endpoints' time since their previous training event (the
// stream's start for a first one).
void Trainer::standardise_time() {
  std::vector<double> last(static_cast<size_t>(stream_.num_nodes), stream_.ts.front());
  double sum = 0, sum_sq = 0;
  for (int64_t e : split_.train)
    for (int32_t v : {stream_.src[static_cast<size_t>(e)], stream_.dst[static_cast<size_t>(e)]}) {
      const double t = stream_.ts[static_cast<size_t>(e)];
      const double gap = t - last[static_cast<size_t>(v)];
      last[static_cast<size_t>(v)] = t;
      sum += gap, sum_sq += gap * gap;
    }
  const double n = 2.0 * static_cast<double>(split_.train.size());
  const double mean = sum / n;
  cfg_.model.time_shift = mean;
  cfg_.model.time_scale = std::max(1e-12, std::sqrt(std::max(0.0, sum_sq / n - mean * mean)));
}

// TGL's targets for a full step: ones (positives) then zeros (negatives).
void Trainer::make_targets() {
  const int64_t b = cfg_.batch_size;
  std::vector<double> t(static_cast<size_t>(2 * b), 0.0);
  std::fill(t.begin(), t.begin() + b, 1.0);
  targets_ = OwnedTensor(cfg_.dtype, Shape(2 * b), cfg_.device);
  if (cfg_.dtype == DType::f64) {
    ops::copy(targets_, Tensor::wrap(t.data(), Shape(2 * b)));
  } else {
    std::vector<float> f(t.begin(), t.end());
    ops::copy(targets_, Tensor::wrap(f.data(), Shape(2 * b)));
  }
}

const Schedule& Trainer::schedule_epoch() {
  Schedule& schedule = steps_->reschedule();
  strategy_->schedule(schedule, split_.train, cfg_.batch_size, cfg_.max_batches);
  return schedule;
}

void Trainer::plan_step(BatchPlan& out, const ScheduledStep& step, int epoch) {
  runner_->plan_step(out, step, static_cast<uint32_t>(epoch));
}

double Trainer::train_step(const ScheduledStep& step, int epoch) {
  const StepData& d = steps_->train(step, static_cast<uint32_t>(epoch), stages_);
  // Each rank checked its own events' loss; this is the global one (the same on every rank).
  check_finite_loss(d.loss, d);
  loss_trace_.push_back(d.loss);
  coherence_sum_ += d.empty() ? 0.0 : d.coherence_loss;
  return d.loss;
}

double Trainer::step_loss(const int64_t* events, int64_t count, int epoch, bool with_gradients) {
  writer_->flush();
  const ScheduledStep step = contiguous_part(events, count, 0, 1);
  const StageMask mask = with_gradients ? kForwardStages.with(Stage::backward) : kForwardStages;
  StepData& d = steps_->run(step, static_cast<uint32_t>(epoch), Pass::train, mask);
  const double loss = d.local_loss + d.coherence_loss;
  d.step = nullptr;
  return loss;
}

const model::WriteSet& Trainer::step_writes() {
  StepData& d = steps_->current();
  d.writes = runner_->collect_writes(d, steps_->arena());
  return d.writes;
}

StrategyContext Trainer::strategy_context() const {
  StrategyContext ctx;
  ctx.comm = cfg_.comm;
  ctx.stream = &stream_;
  ctx.settings = cfg_.strategy;
  ctx.seed = cfg_.seed;
  return ctx;
}

EpochForecast Trainer::forecast_epoch(
    int ranks, std::function<void(int, const ScheduledStep&, const BatchPlan&)> observe) {
  ForecastInput in;
  in.ranks = ranks;
  in.strategy = strategy_context();
  in.train = &split_.train;
  in.batch_size = cfg_.batch_size;
  in.max_steps = cfg_.max_batches;
  in.parameters = store_.get();
  in.layout = state_layout(*state_);
  in.memory = plan_cfg_.memory;
  in.plan = [this](BatchPlan& out, const ScheduledStep& step) { plan_step(out, step, 1); };
  in.pipeline = cfg_.pipeline;
  in.observe = std::move(observe);
  if (ranks > 1) return forecast_strategy(strategy_entry(cfg_.strategy.name), in);
  EpochForecast f;  // one device: its steps, nothing exchanged
  Schedule steps;
  SingleDeviceStrategy().schedule(steps, split_.train, cfg_.batch_size, cfg_.max_batches);
  BatchPlan plan;
  for (int64_t i = 0; i < steps.size(); ++i) {
    f.steps += 1, f.events += steps.step(i).count;
    if (!in.observe) continue;
    in.plan(plan, steps.step(i));
    in.observe(0, steps.step(i), plan);
  }
  f.pipeline =
      forecast_write_back(in, steps, false, [&](int64_t i, std::vector<const PlannedWrites*>& out) {
        if (steps.step(i).count == 0) return;
        in.plan(plan, steps.step(i));
        out.push_back(&plan.writes);
      });
  return f;
}

EpochResult Trainer::run_epoch(int epoch, const ProgressFn& progress) {
  EpochResult r = train_epoch(epoch, progress);
  Stopwatch watch;
  const backend::OpCounts calls_before = backend::op_counts();
  std::tie(r.val, r.val_new) =
      evaluator_->evaluate_both(split_.val, split_.new_node_val, kSplitVal);
  r.calls.eval = backend::op_counts() - calls_before;
  r.calls.eval_batches = r.val.batches + r.val_new.batches;
  r.eval_seconds = watch.seconds();
  return r;
}

EpochResult Trainer::train_epoch(int epoch, const ProgressFn& progress) {
  EpochResult r;
  r.epoch = epoch;
  r.strategy = strategy_->name();
  stages_ = StageTimes{};
  runner_->reset_counts();
  coherence_sum_ = 0;
  writer_->reset_counts();
  strategy_->begin_epoch();
  writer_->flush();
  state_->reset();
  if (cfg_.comm != nullptr) cfg_.comm->reset_stats();
  Stopwatch watch;
  const Schedule& steps = schedule_epoch();
  const int64_t n = steps.size();
  loss_trace_.reserve(loss_trace_.size() + static_cast<size_t>(n));
  double loss_sum = 0;
  const int64_t waits_before = backend::host_waits();
  const backend::OpCounts calls_before = backend::op_counts();
  const backend::OpCounts side_before = backend::op_counts(backend::OpLane::side);
  step_seconds_.clear();
  step_seconds_.reserve(static_cast<size_t>(n));
  Stopwatch loop;
  for (int64_t i = 0; i < n; ++i) {
    Stopwatch step;
    loss_sum += train_step(steps.step(i), epoch);
    step_seconds_.push_back(step.seconds());
    r.events += steps.step(i).global_count;
    if (progress) progress(i + 1, n, loss_sum / static_cast<double>(i + 1));
  }
  writer_->flush();  // evaluation and checkpoints read every row
  r.loop_seconds = loop.seconds();
  r.calls.train = backend::op_counts() - calls_before;
  r.calls.side = backend::op_counts(backend::OpLane::side) - side_before;
  r.calls.by_kind = cfg_.profile_ops;
  r.pipeline = writer_->counts();
  const auto waits = static_cast<double>(backend::host_waits() - waits_before);
  r.host_waits = n > 0 ? waits / static_cast<double>(n) : 0.0;
  if (cfg_.device.is_cuda()) backend::synchronize(cfg_.device.index);
  r.batches = n;
  r.loss = n > 0 ? loss_sum / static_cast<double>(n) : 0.0;
  r.train_seconds = watch.seconds();
  r.step_seconds = summarise_step_times(step_seconds_);
  r.stages = stages_;
  const StepCounts& counted = runner_->counts();
  r.memory_rows = n > 0 ? static_cast<double>(counted.memory_rows) / static_cast<double>(n) : 0;
  r.refined_rows = n > 0 ? static_cast<double>(counted.refined_rows) / static_cast<double>(n) : 0;
  r.coherence_loss = n > 0 ? coherence_sum_ / static_cast<double>(n) : 0;
  if (cfg_.comm != nullptr) {
    r.ranks = cfg_.comm->size();
    r.comm = cfg_.comm->stats();
    r.comm.wait_seconds += counted.reduce_wait;  // the non-blocking reductions' waits
    r.counts = strategy_->counts();
  }
  return r;
}

std::pair<EvalResult, EvalResult> Trainer::test() {
  writer_->flush();
  return evaluator_->evaluate_both(split_.test, split_.new_node_test, kSplitTest);
}

void Trainer::replay(const std::vector<int64_t>& events, int64_t batch_size,
                     const Evaluator::BatchFn& each) {
  writer_->flush();
  state_->reset();
  evaluator_->forward(events, kSplitReplay, batch_size, each);
  writer_->flush();  // the last batch's writes, before anyone reads the state
}

}  // namespace depbloom::train
