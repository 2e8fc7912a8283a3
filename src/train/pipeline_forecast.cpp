// forecast_pipeline: StepWriter's urgent/deferred/sync split of an epoch, from the plans.
#include <algorithm>

#include "depbloom/train/pipeline.h"
#include "depbloom/train/strategy.h"

namespace depbloom::train {

PipelineCounts forecast_pipeline(
    const Schedule& mine, bool windowed, int32_t horizon, int mail_slots, int64_t num_nodes,
    const PlanFn& plan,
    const std::function<void(int64_t, std::vector<const PlannedWrites*>&)>& applied) {
  PipelineCounts c;
  const auto n = static_cast<size_t>(num_nodes);
  std::vector<uint8_t> read(n, 0);
  std::vector<int32_t> claims(n, 0), marked, touched;
  std::vector<const PlannedWrites*> writes;
  BatchPlan ahead;
  for (int64_t i = 0; i < mine.size(); ++i) {
    const ScheduledStep& step = mine.step(i);
    const Schedule::Range next = mine.lookahead(i, horizon);
    const bool sync = next.begin == next.end || (windowed && step.sync == SyncPoint::exchange);
    if (!sync)
      for (const ScheduledStep* s = next.begin; s != next.end; ++s) {
        if (s->count > 0) {
          plan(ahead, *s);
          for (const int32_t v : ahead.mem_node)
            if (read[static_cast<size_t>(v)] == 0)
              read[static_cast<size_t>(v)] = 1, marked.push_back(v);
        }
        if (windowed && s->sync == SyncPoint::exchange) break;
      }
    writes.clear();
    applied(i, writes);
    const auto add = [&](int32_t v, int64_t rows) {
      (sync                                ? c.sync_rows
       : read[static_cast<size_t>(v)] != 0 ? c.urgent_rows
                                           : c.deferred_rows) += rows;
    };
    for (const PlannedWrites* w : writes) {
      for (const int32_t v : w->mem_node)
        if (claims[static_cast<size_t>(v)]++ == 0) touched.push_back(v);
    }
    for (const int32_t v : touched) add(v, 1), claims[static_cast<size_t>(v)] = 0;
    touched.clear();
    for (const PlannedWrites* w : writes)
      for (const int32_t v : w->mail_node)
        if (claims[static_cast<size_t>(v)]++ == 0) touched.push_back(v);
    for (const int32_t v : touched)
      add(v, std::min(claims[static_cast<size_t>(v)], mail_slots)),
          claims[static_cast<size_t>(v)] = 0;
    touched.clear();
    for (const int32_t v : marked) read[static_cast<size_t>(v)] = 0;
    marked.clear();
  }
  return c;
}

PipelineCounts forecast_write_back(
    const ForecastInput& in, const Schedule& mine, bool windowed,
    const std::function<void(int64_t, std::vector<const PlannedWrites*>&)>& applied) {
  if (!in.memory) return PipelineCounts{};
  PipelineCounts c = forecast_pipeline(mine, windowed, in.pipeline.horizon, in.layout.mail_slots,
                                       in.strategy.stream->num_nodes, in.plan, applied);
  if (!in.pipeline.enabled) {
    c.urgent_rows += c.deferred_rows + c.sync_rows;
    c.deferred_rows = c.sync_rows = 0;
  }
  return c;
}

}  // namespace depbloom::train
