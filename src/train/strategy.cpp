// The strategy table, single-device training, and the schedule every global-step strategy
// shares: the training events cut into global steps of batch_size events.
#include "depbloom/train/strategy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "depbloom/core/error.h"
#include "depbloom/core/timer.h"
#include "depbloom/train/depbloom_strategy.h"
#include "depbloom/train/strict_strategy.h"

namespace depbloom::train {

Schedule::Range Schedule::lookahead(int64_t i, int64_t k) const {
  const int64_t begin = std::min(i + 1, size()),
                end = std::min(i + 1 + std::max<int64_t>(k, 0), size());
  return {steps_.data() + begin, steps_.data() + end};
}

ScheduledStep contiguous_part(const int64_t* events, int64_t count, int rank, int ranks) {
  DB_ASSERT(ranks >= 1 && rank >= 0 && rank < ranks && count >= 0, "part {} of {} ranks", rank,
            ranks);
  const int64_t lo = rank * count / ranks, hi = (rank + 1) * count / ranks;
  ScheduledStep s;
  s.events = events + lo;
  s.count = hi - lo;
  s.global_count = count;
  s.first_event = count > 0 ? events[0] : -1;
  // One rank: count / count is exactly 1, so the step's loss gradient stays TGL's 2.0.
  s.loss_share = count > 0 ? static_cast<double>(s.count) / static_cast<double>(count) : 0.0;
  return s;
}

namespace {

// Global steps of batch_size consecutive training events, each cut into `ranks` contiguous
// parts, this rank's part scheduled, followed by `sync`.
void contiguous_schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                         int64_t max_steps, int rank, int ranks, SyncPoint sync) {
  out.clear();
  const auto total = static_cast<int64_t>(train.size());
  int64_t steps = (total + batch_size - 1) / batch_size;
  if (max_steps > 0) steps = std::min(steps, max_steps);
  for (int64_t b = 0; b < steps; ++b) {
    const int64_t begin = b * batch_size;
    const int64_t count = std::min(batch_size, total - begin);
    ScheduledStep s = contiguous_part(train.data() + begin, count, rank, ranks);
    s.index = b;
    s.sync = sync;
    out.add(s);
  }
}

std::unique_ptr<Strategy> make_strict(const StrategyContext& ctx) {
  return std::make_unique<StrictStrategy>(*ctx.comm);
}

std::unique_ptr<Strategy> make_depbloom(const StrategyContext& ctx) {
  DB_ASSERT(ctx.stream != nullptr, "the depbloom strategy needs the event stream");
  return std::make_unique<DepbloomStrategy>(*ctx.comm, *ctx.stream, ctx.settings.partition,
                                            ctx.seed);
}

void check_depbloom(const StrategySettings& settings) {
  partition::check_partition_config(settings.partition);
}

}  // namespace

void SingleDeviceStrategy::schedule(Schedule& out, const std::vector<int64_t>& train,
                                    int64_t batch_size, int64_t max_steps) {
  contiguous_schedule(out, train, batch_size, max_steps, 0, 1, SyncPoint::none);
}

StateLayout state_layout(const model::NodeState& state) {
  return {state.dtype(), state.memory_dim(), state.mail_dim(), state.mail_slots()};
}

void apply_writes(const StepWrites& w, const model::WriteSet& writes) {
  if (w.writer != nullptr) {
    w.writer->apply(writes, *w.state, w.arena->device());
  } else {
    w.state->apply(writes, model::WriteFilter{}, w.arena->device());
  }
}

double SingleDeviceStrategy::reconcile(const StepWrites& w) {
  if (w.memory) apply_writes(w, w.writes);
  counts_.local_events += w.step->count;
  return w.local_loss;
}

void RankedStrategy::sync_parameters(model::ParameterStore& store) {
  // The same seed gives every rank the same parameters; rank 0's win regardless.
  comm_.broadcast(store.values(), 0);
}

void RankedStrategy::reduce_gradients(model::ParameterStore& store) {
  comm_.all_reduce(store.grads(), dist::ReduceOp::sum);
}

void RankedStrategy::start_reduce(model::ParameterStore& store) {
  pending_reduce_ = comm_.iall_reduce(store.grads(), dist::ReduceOp::sum);
}

double RankedStrategy::finish_reduce() {
  Stopwatch watch;
  pending_reduce_.wait();
  return watch.seconds();
}

void StrictStrategy::schedule(Schedule& out, const std::vector<int64_t>& train, int64_t batch_size,
                              int64_t max_steps) {
  contiguous_schedule(out, train, batch_size, max_steps, comm_.rank(), comm_.size(),
                      SyncPoint::exchange);
}

const std::vector<StrategyEntry>& strategy_table() {
  static const std::vector<StrategyEntry> table = {
      {"strict",
       "each step split into one contiguous part per rank, gradients all-reduced and the "
       "written memory and mails all-gathered after every step",
       &make_strict, nullptr},
      {"depbloom",
       "the stream cut into windows of partition.window_steps steps, each window's events "
       "split by a node partition (partition.method) into one sub-chain per rank; gradients "
       "all-reduced every step, node state exchanged and merged at window ends",
       &make_depbloom, &check_depbloom},
  };
  return table;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& e : strategy_table()) names.emplace_back(e.name);
  return names;
}

const StrategyEntry& strategy_entry(const std::string& name) {
  for (const auto& e : strategy_table())
    if (name == e.name) return e;
  DB_THROW(config, "strategy.name: unknown strategy '{}' (one of: {})", name,
           fmt::join(strategy_names(), ", "));
}

void check_strategy_settings(const StrategySettings& settings) {
  strategy_entry(settings.name);
  for (const auto& e : strategy_table())
    if (e.check != nullptr) e.check(settings);
}

std::unique_ptr<Strategy> make_strategy(const StrategyContext& ctx) {
  check_strategy_settings(ctx.settings);
  const StrategyEntry& entry = strategy_entry(ctx.settings.name);
  // With one rank there is nothing to split or exchange: every strategy is the single-device
  // step (the P = 1 rule), and makes no collective. One rank over an mpi or nccl
  // communicator (named in the config) still runs the strategy, collectives included: the
  // same numbers, and a smoke test of that communicator.
  const dist::Communicator* comm = ctx.comm;
  if (comm == nullptr || (comm->size() <= 1 && comm->kind() == dist::CommunicatorKind::local))
    return std::make_unique<SingleDeviceStrategy>();
  return entry.make(ctx);
}

}  // namespace depbloom::train
