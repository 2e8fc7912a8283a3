// The cost model: a roofline per GEMM (or a measured step-time curve), bandwidth for the
// other ops' bytes, a launch per op call and a latency per upload, the host's planning rate,
// NCCL's ring collectives with its protocol choice, the wait for the slowest rank; then the
// serial and the pipelined step (cost_model.h).
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

// The stages a step curve measures: the device's work of the step, without planning (host),
// the collectives and the write-back (which grows with the ranks' writes, not the batch).
constexpr Stage kCurveStages[] = {Stage::gather, Stage::memory_update, Stage::refine,  Stage::embed,
                                  Stage::loss,   Stage::backward,      Stage::optimise};

const StepCurve* curve_for(const DeviceProfile& p, const WorkModel& wm) {
  const std::string name = workload_name(wm.model);
  for (const StepCurve& c : p.step_curves)
    if (!name.empty() && c.model == name && !c.points.empty()) return &c;
  return nullptr;
}

// The op calls of one stage other than uploads (at least its GEMM calls).
int64_t launches(const StageWork& w) {
  int64_t gemm_calls = 0;
  for (const GemmShape& g : w.gemms) gemm_calls += g.count;
  return gemm_calls + std::max<int64_t>(0, w.ops - gemm_calls - w.uploads);
}

// One GEMM shape's own seconds, its launches apart: the slower of its FLOPs and its
// operands' bytes, per call.
double gemm_work_seconds(const GemmShape& g, const DeviceProfile& p, int64_t value_bytes) {
  const auto flops = static_cast<double>(gemm_flops(g.m, g.n, g.k));
  const auto bytes = static_cast<double>(value_bytes * (g.m * g.k + g.k * g.n + g.m * g.n));
  return static_cast<double>(g.count) *
         std::max(div(flops, p.gemm_flops), div(bytes, p.memory_bandwidth));
}

// Seconds of one rank's stages in a step (every launch at `launch_factor` x the estimates);
// with a curve, the curve's stages scaled so that they sum to its time at the step's batch
// (each keeps its roofline share).
StageTimes stage_seconds(const StepStageWork& work, const StepWork& step, const DeviceProfile& p,
                         int64_t value_bytes, const StepCurve* curve, double launch_factor) {
  StageTimes t;
  const double upload = p.upload_latency >= 0 ? p.upload_latency : p.op_launch;
  for (int i = 0; i < kStages; ++i) {
    const auto stage = static_cast<Stage>(i);
    const StageWork& w = work[static_cast<size_t>(i)];
    double s = 0;
    for (const GemmShape& g : w.gemms) s += gemm_work_seconds(g, p, value_bytes);
    s += static_cast<double>(launches(w)) * launch_factor * p.op_launch +
         static_cast<double>(w.uploads) * upload;
    if (stage == Stage::sample) {
      const auto planned =
          static_cast<double>((2 + step.negatives) * step.events + step.sampled_slots);
      s += div(planned, p.host_plan_rate * std::max(1, p.host_threads)) +
           div(w.bytes, p.host_to_device);
    } else {
      s += div(w.bytes, p.memory_bandwidth);
    }
    t[stage] = s;
  }
  if (curve == nullptr || step.events == 0) return t;
  double roofline = 0;
  for (const Stage st : kCurveStages) roofline += t[st];
  const double to_curve =
      div(curve_seconds(curve->points, static_cast<double>(step.events)), roofline);
  for (const Stage st : kCurveStages) t[st] *= to_curve;
  return t;
}

// One rank's step: its stages (no collectives), their sum, the share of its writes that are
// urgent.
struct RankStep {
  StageTimes t;
  double total = 0;
  double urgent_share = 1;
};

// One step's three pipelined lanes (host, main, side) of one rank, with the step's shares of
// the collectives.
std::array<double, 3> lanes_of(const RankStep& r, double reduce, double exchange,
                               double urgent_exchange) {
  const StageTimes& t = r.t;
  const double wb_urgent = r.urgent_share * t[Stage::write_back];
  const double wb_deferred = t[Stage::write_back] - wb_urgent;
  double front = 0;
  for (const Stage st : {Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                         Stage::loss, Stage::backward})
    front += t[st];
  const double main = front + std::max(reduce, wb_urgent) + t[Stage::optimise] + urgent_exchange;
  return {t[Stage::sample], main, wb_deferred + (exchange - urgent_exchange)};
}

// The main lane's stages of one rank's step (for the bound).
void add_main_stages(StageTimes& into, const RankStep& r, double reduce, double urgent_exchange) {
  for (const Stage st : {Stage::gather, Stage::memory_update, Stage::refine, Stage::embed,
                         Stage::loss, Stage::backward, Stage::optimise})
    into[st] += r.t[st];
  const double wb_urgent = r.urgent_share * r.t[Stage::write_back];
  into[reduce >= wb_urgent ? Stage::reduce : Stage::write_back] += std::max(reduce, wb_urgent);
  into[Stage::write_back] += urgent_exchange;
}

}  // namespace

std::string workload_name(const model::TgnnConfig& m) {
  using model::EmbeddingKind;
  using model::MemoryKind;
  if (m.memory == MemoryKind::gru && m.embedding == EmbeddingKind::attention) return "tgn";
  if (m.memory == MemoryKind::rnn && m.embedding == EmbeddingKind::jodie) return "jodie";
  if (m.memory == MemoryKind::transformer && m.embedding == EmbeddingKind::identity) return "apan";
  if (m.memory == MemoryKind::none && m.embedding == EmbeddingKind::attention) return "tgat";
  return "";
}

double curve_seconds(const std::vector<StepTimePoint>& points, double batch) {
  if (points.empty()) return 0;
  const StepTimePoint& first = points.front();
  if (batch <= first.batch) return first.device_seconds;
  if (points.size() == 1) return first.device_seconds * batch / first.batch;
  size_t hi = 1;
  while (hi + 1 < points.size() && points[hi].batch < batch) ++hi;
  const StepTimePoint& a = points[hi - 1];
  const StepTimePoint& b = points[hi];
  const double slope = (b.device_seconds - a.device_seconds) / (b.batch - a.batch);
  return a.device_seconds + slope * (batch - a.batch);
}

double link_call_seconds(const LinkCost& link, double bytes, double steps, double factor) {
  const double simple =
      link.latency + steps * link.hop_latency + div(bytes * factor, link.bandwidth);
  if (!(link.ll_bandwidth_share > 0)) return simple;
  const double ll = link.ll_latency + steps * link.ll_hop_latency +
                    div(bytes * factor, link.bandwidth * link.ll_bandwidth_share);
  return std::min(simple, ll);
}

double gemm_seconds(const GemmShape& g, const DeviceProfile& p, int64_t value_bytes) {
  return gemm_work_seconds(g, p, value_bytes) + static_cast<double>(g.count) * p.op_launch;
}

double all_reduce_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p,
                          int64_t gradient_bytes) {
  if (ranks <= 1) return 0;
  const dist::CollectiveCounts& c = comm[dist::CollectiveKind::all_reduce];
  const double steps = 2.0 * (ranks - 1), factor = steps / ranks;
  // As many calls of the gradients' size as the bytes hold, provided the rest are smaller
  // (else the counts are not of that shape: every call at the mean size).
  int64_t large = gradient_bytes > 0 ? std::min(c.calls, c.bytes / gradient_bytes) : 0;
  int64_t small = c.calls - large, small_bytes = c.bytes - large * gradient_bytes;
  if (small == 0 ? small_bytes != 0 : small_bytes > small * gradient_bytes)
    large = 0, small = c.calls, small_bytes = c.bytes;
  double s = 0;
  if (large > 0)
    s += static_cast<double>(large) *
         link_call_seconds(p.all_reduce, static_cast<double>(gradient_bytes), steps, factor);
  if (small > 0)
    s += static_cast<double>(small) *
         link_call_seconds(p.all_reduce, static_cast<double>(small_bytes) / small, steps, factor);
  return s;
}

double exchange_seconds(const dist::CommStats& comm, int ranks, const DeviceProfile& p) {
  if (ranks <= 1) return 0;
  const double steps = ranks - 1.0, factor = steps / ranks;
  double s = 0;
  for (const dist::CollectiveKind k :
       {dist::CollectiveKind::all_gather, dist::CollectiveKind::all_gather_v}) {
    const dist::CollectiveCounts& c = comm[k];
    if (c.calls == 0) continue;
    const double mean = static_cast<double>(c.bytes) / static_cast<double>(c.calls);
    s += static_cast<double>(c.calls) * link_call_seconds(p.all_gather, mean, steps, factor);
  }
  return s;
}

double launch_scale(const EpochWork& work, const WorkModel& wm, const DeviceProfile& p) {
  const double counted = p.host_to_device > 0 ? wm.counted_launches : wm.counted_op_calls;
  if (!(counted > 0) || work.work.empty()) return 1.0;
  StepStageWork stage_work;
  double estimated = 0;
  for (const StepWork& sw : work.work) {
    step_stage_work(stage_work, wm, sw);
    for (const StageWork& w : stage_work) estimated += static_cast<double>(launches(w));
  }
  estimated /= static_cast<double>(work.work.size());
  return estimated > 0 ? counted / estimated : 1.0;
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
  const double reduce =
      all_reduce_seconds(work.comm, work.ranks, p, wm.parameters * wm.value_bytes) / steps;
  const double exchange = exchange_seconds(work.comm, work.ranks, p) / steps;
  out.collectives = (reduce + exchange) * static_cast<double>(work.steps);
  const double urgent_exchange = work.urgent_exchange_share * exchange;
  const StepCurve* curve = curve_for(p, wm);
  out.launch_scale = launch_scale(work, wm, p);
  // For the bound: seconds each lane (host, main, side) is the step's longest, and the main
  // lane's stages in those steps.
  std::array<double, 3> lanes{};
  StageTimes main_stages;
  StepStageWork stage_work;
  std::vector<RankStep> ranks(static_cast<size_t>(work.ranks));
  for (int64_t i = 0; i < work.steps; ++i) {
    StageTimes step_t;  // the ranks' mean stages, then the wait and the collectives
    double slowest = 0, mean = 0;
    bool exchange_step = false;
    for (int r = 0; r < work.ranks; ++r) {
      const StepWork& sw = work.at(i, r);
      step_stage_work(stage_work, wm, sw);
      const StepFlops f = step_flops(stage_work);
      out.flops.forward += f.forward, out.flops.backward += f.backward;
      RankStep& rs = ranks[static_cast<size_t>(r)];
      rs.t = stage_seconds(stage_work, sw, p, wm.value_bytes, curve, out.launch_scale);
      rs.total = 0;
      for (const double s : rs.t.seconds) rs.total += s;
      rs.urgent_share = sw.written_rows > 0 ? static_cast<double>(sw.urgent_rows) /
                                                  static_cast<double>(sw.written_rows)
                                            : 1.0;
      for (int s = 0; s < kStages; ++s)
        step_t.seconds[static_cast<size_t>(s)] += rs.t.seconds[static_cast<size_t>(s)] / work.ranks;
      slowest = std::max(slowest, rs.total), mean += rs.total / work.ranks;
      exchange_step = exchange_step || sw.exchange;
    }
    // Every rank waits at the step's collective for the slowest: at the exchange where there
    // is one (its blocking all-gather comes first), else at the all-reduce.
    const double wait = std::max(0.0, slowest - mean);
    out.sync_wait += wait;
    step_t[exchange_step ? Stage::write_back : Stage::reduce] += wait;
    step_t[Stage::reduce] += reduce;
    step_t[Stage::write_back] += exchange;
    for (int s = 0; s < kStages; ++s)
      out.stages.seconds[static_cast<size_t>(s)] += step_t.seconds[static_cast<size_t>(s)];
    out.serial += slowest + reduce + exchange;

    // The pipelined step: the longest lane of any rank.
    double step_pipelined = -1;
    size_t lane = 0;
    const RankStep* critical = nullptr;
    for (const RankStep& rs : ranks) {
      const std::array<double, 3> l = lanes_of(rs, reduce, exchange, urgent_exchange);
      for (const size_t k : {1, 0, 2})  // a tie goes to the main lane, then the host's
        if (l[k] > step_pipelined) step_pipelined = l[k], lane = k, critical = &rs;
    }
    out.pipelined += step_pipelined;
    lanes[lane] += step_pipelined;
    if (lane == 1) add_main_stages(main_stages, *critical, reduce, urgent_exchange);
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
