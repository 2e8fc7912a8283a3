// Trainer: epochs, steps, evaluation passes and checkpoints around the Tgnn.
#include "depbloom/train/trainer.h"

#include <algorithm>
#include <cmath>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/runtime.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/dropout.h"  // bce_loss_forward, bce_loss_backward

namespace depbloom::train {
namespace {

constexpr uint32_t kSplitVal = 1, kSplitTest = 2;

std::unique_ptr<graph::NeighbourSampler> make_sampler(const graph::TemporalCsr& csr,
                                                      const TrainerConfig& cfg, int32_t hops) {
  if (hops == 0) return nullptr;
  const int32_t k = cfg.model.neighbours;
  if (cfg.uniform_sampling) return std::make_unique<graph::UniformSampler>(csr, k, hops, cfg.seed);
  return std::make_unique<graph::RecentSampler>(csr, k, hops);
}

}  // namespace

Trainer::Trainer(const data::EventStream& stream, const data::ChronoSplit& split,
                 const TrainerConfig& cfg)
    : stream_(stream), split_(split), cfg_(cfg), arena_(cfg.device) {
  DB_ASSERT(cfg.dtype == DType::f32 || cfg.device.is_cpu(), "f64 training runs on the CPU only");
  if (split.train.empty()) DB_THROW(data, "{}: the training split is empty", stream.source);
  cfg_.model.d_edge = stream.edge_dim;
  if (cfg_.standardise_time && cfg_.model.embedding == model::EmbeddingKind::jodie) {
    // Mean and standard deviation of each training event's endpoints' time since their
    // previous training event (the stream's start for a first one), as the TGN authors'
    // JODIE normalises its projection's input.
    std::vector<double> last(static_cast<size_t>(stream.num_nodes), stream.ts.front());
    double sum = 0, sum_sq = 0;
    for (int64_t e : split.train)
      for (int32_t v : {stream.src[static_cast<size_t>(e)], stream.dst[static_cast<size_t>(e)]}) {
        const double t = stream.ts[static_cast<size_t>(e)];
        const double gap = t - last[static_cast<size_t>(v)];
        last[static_cast<size_t>(v)] = t;
        sum += gap, sum_sq += gap * gap;
      }
    const double n = 2.0 * static_cast<double>(split.train.size());
    const double mean = sum / n;
    cfg_.model.time_shift = mean;
    cfg_.model.time_scale = std::max(1e-12, std::sqrt(std::max(0.0, sum_sq / n - mean * mean)));
  }
  store_ = std::make_unique<model::ParameterStore>(cfg.dtype, cfg.device);
  model_ = std::make_unique<model::Tgnn>(*store_, cfg_.model);
  store_->finalize();
  store_->initialize(cfg.seed);
  model_->bind();
  strategy_ = make_strategy(cfg.strategy, cfg.comm);
  strategy_->sync_parameters(*store_);

  const auto& m = cfg_.model;
  const bool memory = m.memory != model::MemoryKind::none;
  const int64_t d_mem = memory ? m.d_mem : 1;
  const int slots = memory ? m.mailbox : 1;
  const int64_t d_mail = memory ? m.d_mail() : 1;
  state_ = std::make_unique<model::NodeState>(stream.num_nodes, d_mem, d_mail, slots, cfg.dtype,
                                              cfg.device);
  backup_a_ = std::make_unique<model::NodeState>(stream.num_nodes, d_mem, d_mail, slots, cfg.dtype,
                                                 cfg.device);
  backup_b_ = std::make_unique<model::NodeState>(stream.num_nodes, d_mem, d_mail, slots, cfg.dtype,
                                                 cfg.device);

  PlannerConfig pc;
  pc.hops = m.hops();
  pc.neighbours = m.neighbours;
  pc.deliver_to_neighbours = cfg.deliver_to_neighbours && memory;
  pc.prop_time = cfg.prop_time;
  pc.memory = memory;
  pc.mail_mask = m.memory == model::MemoryKind::transformer;
  pc.jodie = m.embedding == model::EmbeddingKind::jodie;
  pc.mail_dt_at_event = m.mail_dt_at_event;
  pc.skip_empty_mailbox = m.skip_empty_mailbox;
  const int32_t hops = std::max<int32_t>(pc.hops, pc.deliver_to_neighbours ? 1 : 0);
  // TGN's protocol samples training neighbours from the training events only (the held-out
  // nodes stay unseen) and evaluation neighbours from the whole stream.
  train_csr_ = graph::TemporalCsr::build(stream, split.train);
  full_csr_ = graph::TemporalCsr::build(stream);
  train_sampler_ = make_sampler(train_csr_, cfg_, hops);
  eval_sampler_ = make_sampler(full_csr_, cfg_, hops);
  planner_ =
      std::make_unique<BatchPlanner>(stream, train_sampler_.get(), pc, cfg.dtype, cfg.device);
  train_negatives_ = std::make_unique<graph::TrainNegativeSampler>(stream, cfg.seed);
  eval_negatives_ = std::make_unique<graph::EvalNegativeSampler>(
      stream, split.train, cfg.eval_strategy, cfg.eval_negatives, cfg.seed);

  if (stream.edge_dim > 0) {
    const Shape shape(stream.num_events(), stream.edge_dim);
    edge_feat_ = OwnedTensor(cfg.dtype, shape, cfg.device);
    if (cfg.dtype == DType::f32) {
      ops::copy(edge_feat_, Tensor::wrap(const_cast<float*>(stream.edge_feat.data()), shape));
    } else {
      std::vector<double> wide(stream.edge_feat.begin(), stream.edge_feat.end());
      ops::copy(edge_feat_, Tensor::wrap(wide.data(), shape));
    }
  }
  const int64_t b = cfg.batch_size;
  std::vector<double> t(static_cast<size_t>(2 * b), 0.0);
  std::fill(t.begin(), t.begin() + b, 1.0);
  targets_ = OwnedTensor(cfg.dtype, Shape(2 * b), cfg.device);
  if (cfg.dtype == DType::f64) {
    ops::copy(targets_, Tensor::wrap(t.data(), Shape(2 * b)));
  } else {
    std::vector<float> f(t.begin(), t.end());
    ops::copy(targets_, Tensor::wrap(f.data(), Shape(2 * b)));
  }
  const int64_t most = std::max(cfg.batch_size, cfg.eval_batch_size);
  negatives_.reserve(static_cast<size_t>(most * std::max(1, cfg.eval_negatives)));
  const size_t eval_events = split.val.size() + split.test.size();
  metrics_.reserve(eval_events * (1 + static_cast<size_t>(cfg.eval_negatives)),
                   static_cast<size_t>(most * (1 + cfg.eval_negatives)));
}

Trainer::~Trainer() = default;

double Trainer::step_loss(const int64_t* events, int64_t count, int epoch, bool with_gradients) {
  return forward_backward(events, count, epoch, with_gradients, 2.0);
}

double Trainer::forward_backward(const int64_t* events, int64_t count, int epoch,
                                 bool with_gradients, double dloss) {
  DB_ASSERT(count > 0 && count <= cfg_.batch_size, "train step of {} events (batch size {})", count,
            cfg_.batch_size);
  const auto ep = static_cast<uint32_t>(epoch);
  arena_.reset();
  Stopwatch watch;
  negatives_.resize(static_cast<size_t>(count));
  train_negatives_->sample_events(events, count, 1, ep, negatives_.data());
  planner_->set_sampler(train_sampler_.get());
  planner_->plan(events, count, negatives_.data(), 1, ep, *state_);
  model::TgnnInputs in = planner_->stage(arena_);
  memory_rows_ += planner_->memory_rows();
  in.seed = cfg_.seed;
  in.epoch = ep;
  stages_.sample += watch.seconds();

  watch.restart();
  const DType dtype = store_->dtype();
  Tensor logits = arena_.alloc(dtype, Shape(2 * count));
  model_->forward(arena_, in, *state_, edge_feat_.view(), true, logits);
  // TGL's loss: BCE(pos, 1) + BCE(neg, 0), each a mean over the batch's events.
  Tensor targets = Tensor(targets_.view().raw(), dtype, Shape(2 * count), cfg_.device);
  if (count < cfg_.batch_size) {  // a short last batch: ones then zeros, freshly laid out
    targets = arena_.alloc(dtype, Shape(2 * count));
    ops::fill(targets.rows(0, count), 1.0);
    ops::fill(targets.rows(count, 2 * count), 0.0);
  }
  Tensor loss = arena_.alloc(dtype, Shape(1));
  model::bce_loss_forward(loss, logits, targets);
  double host_loss = 0;
  if (dtype == DType::f64) {
    ops::copy(Tensor::wrap(&host_loss, Shape(1)), loss);
  } else {
    float f = 0;
    ops::copy(Tensor::wrap(&f, Shape(1)), loss);
    host_loss = f;
  }
  host_loss *= 2.0;
  stages_.forward += watch.seconds();
  if (!std::isfinite(host_loss))
    DB_THROW(runtime,
             "the training loss is {} at epoch {}, batch {} (first event: stream row {}); "
             "stopping",
             host_loss, epoch, batch_index_, events[0]);
  if (!with_gradients) return host_loss;

  watch.restart();
  store_->zero_grad();
  Tensor d_logits = arena_.alloc(dtype, Shape(2 * count));
  model::bce_loss_backward(d_logits, logits, targets, dloss);
  model_->backward(arena_, d_logits);
  stages_.backward += watch.seconds();
  return host_loss;
}

double Trainer::train_step(const int64_t* events, int64_t count, int epoch) {
  DB_ASSERT(count > 0 && count <= cfg_.batch_size, "train step of {} events (batch size {})", count,
            cfg_.batch_size);
  const Slice mine = strategy_->slice(events, count);
  double local_loss = 0;
  if (mine.count > 0) {
    // The gradient of this rank's share of the global mean (the whole of it on one device).
    local_loss = forward_backward(mine.events, mine.count, epoch, true, 2.0 * mine.loss_share);
  } else {  // an empty slice still takes part in the reduction, with zero gradients
    arena_.reset();
    store_->zero_grad();
  }
  Stopwatch watch;
  strategy_->reduce_gradients(*store_);
  ops::AdamConfig adam;
  adam.lr = cfg_.lr;
  adam.weight_decay = cfg_.weight_decay;
  store_->adam_step(adam);
  stages_.optimiser += watch.seconds();

  watch.restart();
  StepOutputs out;
  out.planner = planner_.get();
  out.arena = &arena_;
  out.state = state_.get();
  out.updated = model_->updated_memory();
  out.edge_feat = edge_feat_.view();
  out.row_last_update = model_->row_last_update();
  out.memory = cfg_.model.memory != model::MemoryKind::none;
  out.global_count = count;
  out.local_count = mine.count;
  out.local_loss = local_loss;
  const double loss = strategy_->reconcile(out);
  stages_.write_back += watch.seconds();
  // Each rank checked its own slice's loss; this is the global one (the same on every rank).
  if (!std::isfinite(loss))
    DB_THROW(runtime,
             "the training loss is {} at epoch {}, batch {} (first event: stream row {}); "
             "stopping",
             loss, epoch, batch_index_, events[0]);
  loss_trace_.push_back(loss);
  return loss;
}

EpochResult Trainer::run_epoch(int epoch, const ProgressFn& progress) {
  EpochResult r;
  r.epoch = epoch;
  r.strategy = strategy_->name();
  stages_ = StageTimes{};
  model_->times() = model::TgnnTimes{};
  memory_rows_ = 0;
  strategy_->begin_epoch();
  state_->reset();
  if (cfg_.comm != nullptr) cfg_.comm->reset_stats();
  Stopwatch watch;
  const auto& train = split_.train;
  const auto total = static_cast<int64_t>(train.size());
  int64_t batches = (total + cfg_.batch_size - 1) / cfg_.batch_size;
  if (cfg_.max_batches > 0) batches = std::min(batches, cfg_.max_batches);
  loss_trace_.reserve(loss_trace_.size() + static_cast<size_t>(batches));
  double loss_sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t begin = b * cfg_.batch_size;
    const int64_t count = std::min(cfg_.batch_size, total - begin);
    batch_index_ = b + 1;
    loss_sum += train_step(train.data() + begin, count, epoch);
    r.events += count;
    if (progress) progress(b + 1, batches, loss_sum / static_cast<double>(b + 1));
  }
  if (cfg_.device.is_cuda()) backend::synchronize(cfg_.device.index);
  r.batches = batches;
  r.loss = batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0;
  r.train_seconds = watch.seconds();
  r.stages = stages_;
  const model::TgnnTimes& t = model_->times();
  r.stages.gather = t.gather;
  r.stages.memory_update = t.memory_update;
  r.stages.forward -= t.gather + t.memory_update;
  r.memory_rows =
      batches > 0 ? static_cast<double>(memory_rows_) / static_cast<double>(batches) : 0;
  if (cfg_.comm != nullptr) {
    r.ranks = cfg_.comm->size();
    r.comm = cfg_.comm->stats();
    r.local_events = strategy_->counts().local_events;
    r.exchanged_rows = strategy_->counts().exchanged_rows;
    r.exchanged_mails = strategy_->counts().exchanged_mails;
  }

  watch.restart();
  const bool new_nodes = cfg_.new_nodes && !split_.new_node_val.empty();
  if (new_nodes) backup_a_->copy_from(*state_);
  r.val = evaluate(split_.val, kSplitVal);
  if (new_nodes) {
    backup_b_->copy_from(*state_);
    state_->copy_from(*backup_a_);
    r.val_new = evaluate(split_.new_node_val, kSplitVal);
    state_->copy_from(*backup_b_);
  }
  r.eval_seconds = watch.seconds();
  return r;
}

std::pair<EvalResult, EvalResult> Trainer::test() {
  EvalResult all, fresh;
  const bool new_nodes = cfg_.new_nodes && !split_.new_node_test.empty();
  if (new_nodes) backup_a_->copy_from(*state_);
  all = evaluate(split_.test, kSplitTest);
  if (new_nodes) {
    backup_b_->copy_from(*state_);
    state_->copy_from(*backup_a_);
    fresh = evaluate(split_.new_node_test, kSplitTest);
    state_->copy_from(*backup_b_);
  }
  return {all, fresh};
}

EvalResult Trainer::evaluate(const std::vector<int64_t>& events, uint32_t split_id) {
  EvalResult r;
  if (events.empty()) return r;
  Stopwatch watch;
  const int32_t k = cfg_.eval_negatives;
  const int64_t total = static_cast<int64_t>(events.size());
  const DType dtype = store_->dtype();
  metrics_.clear();
  double rr_sum = 0;
  planner_->set_sampler(eval_sampler_.get());
  for (int64_t begin = 0; begin < total; begin += cfg_.eval_batch_size) {
    const int64_t count = std::min(cfg_.eval_batch_size, total - begin);
    const int64_t* batch = events.data() + begin;
    arena_.reset();
    negatives_.resize(static_cast<size_t>(count * k));
    eval_negatives_->sample_events(split_id, batch, count, negatives_.data());
    planner_->plan(batch, count, negatives_.data(), k, 0, *state_);
    model::TgnnInputs in = planner_->stage(arena_);
    in.seed = cfg_.seed;
    const int64_t n = (1 + k) * count;
    Tensor logits = arena_.alloc(dtype, Shape(n));
    model_->forward(arena_, in, *state_, edge_feat_.view(), false, logits);
    scores_.resize(static_cast<size_t>(n));
    if (dtype == DType::f32) {
      ops::copy(Tensor::wrap(scores_.data(), Shape(n)), logits);
    } else {
      Tensor host = arena_.alloc(DType::f64, Shape(n));
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
      rr_sum += mean_reciprocal_rank(scores_.data(), neg_scores_.data(), static_cast<size_t>(count),
                                     static_cast<size_t>(k)) *
                static_cast<double>(count);
    }
    planner_->write_back(arena_, *state_, model_->updated_memory(), edge_feat_.view(),
                         model_->row_last_update());
  }
  planner_->set_sampler(train_sampler_.get());
  r.valid = true;
  r.events = total;
  r.whole = metrics_.whole_split();
  r.batch_mean = metrics_.batch_mean();
  if (k > 1) r.mrr = rr_sum / static_cast<double>(total);
  r.seconds = watch.seconds();
  return r;
}

}  // namespace depbloom::train
