// The cost model: a roofline per GEMM, bandwidth for the other ops' bytes, a launch per op
// call, the host's planning rate, and alpha-beta collectives; then the serial and the
// pipelined step (cost_model.h).
#include "depbloom/costmodel/cost_model.h"

#include <algorithm>

namespace depbloom::costmodel {
using train::kStages;
using train::Stage;
using train::StageTimes;
namespace {

double div(double x, double rate) {
  return rate > 0 ? x / rate : 0.0;
}

// Seconds of one rank's stages in a step.
StageTimes stage_seconds(const StepStageWork& work, const StepWork& step, const DeviceProfile& p,
                         int64_t value_bytes) {
  StageTimes t;
  for (int i = 0; i < kStages; ++i) {
    const auto stage = static_cast<Stage>(i);
    const StageWork& w = work[static_cast<size_t>(i)];
    double s = 0;
    for (const GemmShape& g : w.gemms) s += gemm_seconds(g, p, value_bytes);
    int64_t gemm_calls = 0;
    for (const GemmShape& g : w.gemms) gemm_calls += g.count;
    s += static_cast<double>(std::max<int64_t>(0, w.ops - gemm_calls)) * p.op_launch;
    if (stage == Stage::sample) {
      const auto planned =
          static_cast<double>((2 + step.negatives) * step.events + step.sampled_slots);
      s += div(planned, p.host_plan_rate) + div(w.bytes, p.host_to_device);
    } else {
      s += div(w.bytes, p.memory_bandwidth);
    }
    t[stage] = s;
  }
  return t;
}

double local_compute(const StageTimes& t) {
  double s = 0;
  for (const Stage st : {Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                         Stage::loss, Stage::backward, Stage::optimise, Stage::write_back})
    s += t[st];
  return s;
}

}  // namespace

double gemm_seconds(const GemmShape& g, const DeviceProfile& p, int64_t value_bytes) {
  const auto count = static_cast<double>(g.count);
  const auto flops = static_cast<double>(gemm_flops(g.m, g.n, g.k));
  const auto bytes = static_cast<double>(value_bytes * (g.m * g.k + g.k * g.n + g.m * g.n));
  return count * (std::max(div(flops, p.gemm_flops), div(bytes, p.memory_bandwidth)) + p.op_launch);
}

double all_reduce_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p) {
  if (ranks <= 1) return 0;
  const dist::CollectiveCounts& c = comm[dist::CollectiveKind::all_reduce];
  const double factor = 2.0 * (ranks - 1) / ranks;
  const double call = p.all_reduce.latency + 2.0 * (ranks - 1) * p.all_reduce.hop_latency;
  return static_cast<double>(c.calls) * call +
         div(static_cast<double>(c.bytes) * factor, p.all_reduce.bandwidth);
}

double exchange_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p) {
  if (ranks <= 1) return 0;
  const double factor = static_cast<double>(ranks - 1) / ranks;
  double s = 0;
  for (const dist::CollectiveKind k :
       {dist::CollectiveKind::all_gather, dist::CollectiveKind::all_gather_v}) {
    const dist::CollectiveCounts& c = comm[k];
    const double call = p.all_gather.latency + (ranks - 1) * p.all_gather.hop_latency;
    s += static_cast<double>(c.calls) * call +
         div(static_cast<double>(c.bytes) * factor, p.all_gather.bandwidth);
  }
  return s;
}

StepFlops epoch_flops(const EpochWork& work, const WorkModel& wm) {
  StepFlops total;
  StepStageWork stage_work;
  for (const StepWork& sw : work.work) {
    step_stage_work(stage_work, wm, sw);
    const StepFlops f = step_flops(stage_work);
    total.forward += f.forward, total.backward += f.backward;
  }
  return total;
}

CostPrediction predict_epoch(const EpochWork& work, const WorkModel& wm, const DeviceProfile& p) {
  CostPrediction out;
  out.profile = p.name;
  const double steps = std::max<double>(1.0, static_cast<double>(work.steps));
  const double reduce = all_reduce_seconds(work.comm, work.ranks, p) / steps;
  const double exchange = exchange_seconds(work.comm, work.ranks, p) / steps;
  out.collectives = (reduce + exchange) * static_cast<double>(work.steps);
  const double urgent_exchange = work.urgent_exchange_share * exchange;
  // For the bound: seconds each lane (host, main, side) is the step's longest, and the main
  // lane's stages in those steps.
  std::array<double, 3> lanes{};
  StageTimes main_stages;
  StepStageWork stage_work;
  for (int64_t i = 0; i < work.steps; ++i) {
    StageTimes step_t;
    double slowest = -1, urgent_share = 1;
    for (int r = 0; r < work.ranks; ++r) {
      const StepWork& sw = work.at(i, r);
      step_stage_work(stage_work, wm, sw);
      const StepFlops f = step_flops(stage_work);
      out.flops.forward += f.forward, out.flops.backward += f.backward;
      const StageTimes t = stage_seconds(stage_work, sw, p, wm.value_bytes);
      const double local = local_compute(t) + t[Stage::sample];
      if (local > slowest) {
        slowest = local, step_t = t;
        urgent_share = sw.written_rows > 0 ? static_cast<double>(sw.urgent_rows) /
                                                 static_cast<double>(sw.written_rows)
                                           : 1.0;
      }
    }
    step_t[Stage::reduce] += reduce;
    const double wb_local = step_t[Stage::write_back];
    step_t[Stage::write_back] += exchange;
    for (int s = 0; s < kStages; ++s)
      out.stages.seconds[static_cast<size_t>(s)] += step_t.seconds[static_cast<size_t>(s)];
    double serial = 0;
    for (const double s : step_t.seconds) serial += s;
    out.serial += serial;

    // The pipelined lanes.
    const double host = step_t[Stage::sample];
    const double wb_urgent = urgent_share * wb_local, wb_deferred = wb_local - wb_urgent;
    double front = 0;
    for (const Stage st : {Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                           Stage::loss, Stage::backward})
      front += step_t[st];
    const double main =
        front + std::max(reduce, wb_urgent) + step_t[Stage::optimise] + urgent_exchange;
    const double side = wb_deferred + (exchange - urgent_exchange);
    const double step_pipelined = std::max({host, main, side});
    out.pipelined += step_pipelined;
    if (step_pipelined == main) {
      lanes[1] += main;
      for (const Stage st : {Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                             Stage::loss, Stage::backward, Stage::optimise})
        main_stages[st] += step_t[st];
      main_stages[reduce >= wb_urgent ? Stage::reduce : Stage::write_back] +=
          std::max(reduce, wb_urgent);
      main_stages[Stage::write_back] += urgent_exchange;
    } else {
      lanes[step_pipelined == host ? 0 : 2] += step_pipelined;
    }
  }
  // The lane that is longest over the epoch bounds it; in the main lane, its largest stage.
  const size_t lane =
      static_cast<size_t>(std::max_element(lanes.begin(), lanes.end()) - lanes.begin());
  const auto& c = main_stages.seconds;
  out.bound = lane == 0   ? Stage::sample
              : lane == 2 ? Stage::write_back
                          : static_cast<Stage>(std::max_element(c.begin(), c.end()) - c.begin());
  return out;
}

}  // namespace depbloom::costmodel
