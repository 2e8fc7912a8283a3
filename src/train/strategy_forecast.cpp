// forecast_strategy: an epoch of a strategy over P ranks, rehearsed in one process. Each
// rank's own strategy, made from the table entry over a CountingCommunicator, schedules its
// steps; every step, every rank's planned writes go through the strategy's rehearsal of
// reconcile() (its own collectives, over placeholder rows), after the gradient reduction the
// step runner makes. What rank 0's communicator and strategy then hold is the forecast.
#include <memory>

#include "depbloom/dist/counting_communicator.h"
#include "depbloom/train/strategy.h"

namespace depbloom::train {
namespace {

// One rank of the rehearsal: its communicator, its strategy and its steps.
struct RehearsedRank {
  std::unique_ptr<dist::CountingCommunicator> comm;
  std::unique_ptr<Strategy> strategy;
  Schedule schedule;
};

std::vector<RehearsedRank> rehearsed_ranks(const StrategyEntry& entry, const ForecastInput& in) {
  std::vector<RehearsedRank> ranks(static_cast<size_t>(in.ranks));
  for (int r = 0; r < in.ranks; ++r) {
    RehearsedRank& rank = ranks[static_cast<size_t>(r)];
    rank.comm = std::make_unique<dist::CountingCommunicator>(r, in.ranks);
    StrategyContext ctx = in.strategy;
    ctx.comm = rank.comm.get();
    rank.strategy = entry.make(ctx);
    rank.strategy->begin_epoch();
    rank.strategy->schedule(rank.schedule, *in.train, in.batch_size, in.max_steps);
    DB_ASSERT(rank.schedule.size() == ranks[0].schedule.size(),
              "{}: rank {} schedules {} steps, rank 0 {}", entry.name, r, rank.schedule.size(),
              ranks[0].schedule.size());
  }
  return ranks;
}

// The write-back's applied writes at step i: a windowed strategy's writer applies its own, the
// others every rank's, gathered at each step's exchange.
PipelineCounts rehearsed_write_back(const ForecastInput& in, std::vector<RehearsedRank>& ranks) {
  const bool windowed = ranks[0].strategy->windowed();
  const int applied_ranks = windowed ? 1 : in.ranks;
  std::vector<BatchPlan> plans(static_cast<size_t>(applied_ranks));
  return forecast_write_back(
      in, ranks[0].schedule, windowed, [&](int64_t i, std::vector<const PlannedWrites*>& out) {
        for (int r = 0; r < applied_ranks; ++r) {
          const ScheduledStep& step = ranks[static_cast<size_t>(r)].schedule.step(i);
          if (step.count == 0) continue;
          in.plan(plans[static_cast<size_t>(r)], step);
          out.push_back(&plans[static_cast<size_t>(r)].writes);
        }
      });
}

}  // namespace

EpochForecast forecast_strategy(const StrategyEntry& entry, const ForecastInput& in) {
  DB_ASSERT(in.ranks > 1, "{}: a forecast over {} ranks", entry.name, in.ranks);
  std::vector<RehearsedRank> ranks = rehearsed_ranks(entry, in);
  Arena scratch(Device::cpu());
  BatchPlan plan;
  std::vector<double> headers;
  const int64_t steps = ranks[0].schedule.size();
  for (int64_t i = 0; i < steps; ++i) {
    headers.clear();
    for (int r = 0; r < in.ranks; ++r) {
      const ScheduledStep& step = ranks[static_cast<size_t>(r)].schedule.step(i);
      const PlannedWrites* planned = nullptr;
      if (step.count > 0 && (in.memory || in.observe)) {
        in.plan(plan, step);
        if (in.observe) in.observe(r, step, plan);
        planned = &plan.writes;
      }
      const std::vector<double> header = ranks[static_cast<size_t>(r)].strategy->rehearse_plan(
          step, planned, in.memory, in.layout);
      headers.insert(headers.end(), header.begin(), header.end());
    }
    for (RehearsedRank& rank : ranks) {
      rank.comm->answer_gathers(headers);
      // As the step runner reduces: non-blocking with the pipeline on.
      if (in.pipeline.enabled) {
        rank.strategy->start_reduce(*in.parameters);
        rank.strategy->finish_reduce();
      } else {
        rank.strategy->reduce_gradients(*in.parameters);
      }
      rank.strategy->rehearse_reconcile(rank.schedule.step(i), in.memory, in.layout, scratch);
      scratch.reset();
    }
  }
  EpochForecast f;
  for (int64_t i = 0; i < steps; ++i) f.events += ranks[0].schedule.step(i).global_count;
  f.steps = steps;
  f.comm = ranks[0].comm->stats();
  f.comm.wait_seconds = 0;  // not part of a forecast
  f.counts = ranks[0].strategy->counts();
  f.pipeline = rehearsed_write_back(in, ranks);
  return f;
}

}  // namespace depbloom::train
