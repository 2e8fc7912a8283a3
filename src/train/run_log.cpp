// The JSON lines of a run's metrics.jsonl and steps.jsonl.
#include "depbloom/train/run_log.h"

#include <fmt/format.h>

#include <fstream>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/core/memory_peak.h"

namespace depbloom::train {

using nlohmann::json;

json eval_json(const EvalResult& r) {
  if (!r.valid) return nullptr;
  json j = {{"events", r.events},
            {"ap", r.whole.ap},
            {"auc", r.whole.auc},
            {"ap_batch_mean", r.batch_mean.ap},
            {"auc_batch_mean", r.batch_mean.auc},
            {"seconds", r.seconds}};
  if (r.mrr >= 0) j["mrr"] = r.mrr;
  return j;
}

json comm_json(const EpochResult& r) {
  json j = {{"ranks", r.ranks},
            {"strategy", r.strategy},
            {"local_events", r.counts.local_events},
            {"exchanged_rows", r.counts.exchanged_rows},
            {"exchanged_mails", r.counts.exchanged_mails},
            {"exchanges", r.counts.exchanges},
            {"exchange_bytes", r.counts.exchange_bytes}};
  if (r.counts.windows > 0) {
    const StrategyCounts& c = r.counts;
    const auto share = [](int64_t a, int64_t b) { return b > 0 ? double(a) / double(b) : 0.0; };
    j["plan"] = {{"windows", c.windows},
                 {"cut_fraction", share(c.cut_events, c.plan_events)},
                 {"max_imbalance", c.max_imbalance},
                 {"migrated_nodes", c.migrated_nodes},
                 {"migrated_fraction", share(c.migrated_nodes, c.window_nodes)}};
  }
  int64_t nonblocking = 0;
  for (int k = 0; k < dist::kNumCollectiveKinds; ++k) {
    const auto kind = static_cast<dist::CollectiveKind>(k);
    const dist::CollectiveCounts& c = r.comm[kind];
    nonblocking += c.nonblocking;
    j[dist::collective_name(kind)] = {
        {"calls", c.calls}, {"nonblocking", c.nonblocking}, {"bytes", c.bytes}};
  }
  j["sync_points"] = r.comm.total_calls() - nonblocking;
  return j;
}

std::string comm_text(const train::EpochResult& r) {
  if (r.ranks <= 1) return "";
  const json j = comm_json(r);
  std::string s = fmt::format("; {} ranks ({}): {} sync points", r.ranks, r.strategy,
                              j["sync_points"].get<int64_t>());
  for (int k = 0; k < dist::kNumCollectiveKinds; ++k) {
    const auto kind = static_cast<dist::CollectiveKind>(k);
    const dist::CollectiveCounts& c = r.comm[kind];
    if (c.calls == 0) continue;
    s += fmt::format(", {} {} x {:.2f} MB", dist::collective_name(kind), c.calls,
                     static_cast<double>(c.bytes) / 1e6);
  }
  return s;
}

json critical_path_json(const EpochResult& r) {
  double main_busy = 0;
  for (const double s : r.stages.seconds) main_busy += s;
  const PipelineCounts& p = r.pipeline;
  return {
      {"loop_s", r.loop_seconds},
      {"busy_s", {{"main", main_busy}, {"side", p.side_busy}}},
      {"hidden_s", p.hidden()},
      {"overlapped",
       {{"deferred_write",
         {{"busy_s", p.apply_busy}, {"hidden_s", p.apply_hidden}, {"applies", p.deferred_applies}}},
        {"prefetch_plan",
         {{"busy_s", p.prefetch_busy},
          {"hidden_s", p.prefetch_hidden},
          {"plans", p.prefetched_plans}}}}},
      {"side_wait_s", p.side_wait},
      {"collective_wait_s", r.comm.wait_seconds},
      {"rows", {{"urgent", p.urgent_rows}, {"deferred", p.deferred_rows}, {"sync", p.sync_rows}}},
      {"deferred_share", p.deferred_share()}};
}

std::string critical_path_text(const EpochResult& r) {
  const json j = critical_path_json(r);
  const PipelineCounts& p = r.pipeline;
  return fmt::format(
      "critical path: step loop {:.2f} s, busy main {:.2f} s / side {:.2f} s, hidden {:.3f} s, "
      "waits side queue {:.3f} s / collectives {:.3f} s; rows urgent {} deferred {} sync {} "
      "(deferred share {:.3f})",
      r.loop_seconds, j["busy_s"]["main"].get<double>(), p.side_busy, p.hidden(), p.side_wait,
      r.comm.wait_seconds, p.urgent_rows, p.deferred_rows, p.sync_rows, p.deferred_share());
}

namespace {

double per(int64_t count, int64_t of) {
  return of > 0 ? static_cast<double>(count) / static_cast<double>(of) : 0.0;
}

}  // namespace

// The most bytes the process's Buffers held at once so far (core/memory.h), per device type.
json peak_bytes_json() {
  return {{"host", host_peak_bytes()}, {"device", device_peak_bytes()}};
}

json calls_json(const EpochCalls& calls, int64_t steps) {
  json j = {{"op_calls_per_step", per(calls.train.total_calls(), steps)},
            {"cuda_launches_per_step", per(calls.train.cuda_launches(), steps)},
            {"uploads_per_step", per(calls.train.uploads, steps)},
            {"side_op_calls_per_step", per(calls.side.total_calls(), steps)},
            {"side_uploads_per_step", per(calls.side.uploads, steps)}};
  if (calls.eval_batches > 0) {
    j["eval_op_calls_per_batch"] = per(calls.eval.total_calls(), calls.eval_batches);
    j["eval_uploads_per_batch"] = per(calls.eval.uploads, calls.eval_batches);
  }
  if (!calls.by_kind) return j;
  json kinds = json::object();
  for (size_t k = 0; k < backend::kOpKinds; ++k) {
    const auto kind = static_cast<backend::OpKind>(k);
    if (calls.train[kind] > 0) kinds[backend::op_kind_name(kind)] = per(calls.train[kind], steps);
  }
  j["by_kind_per_step"] = kinds;
  return j;
}

json epoch_json(const EpochResult& r) {
  json stages = json::object();
  for (int s = 0; s < kStages; ++s)
    stages[stage_name(static_cast<Stage>(s))] = r.stages.seconds[static_cast<size_t>(s)];
  stages["evaluation"] = r.eval_seconds;
  return {{"epoch", r.epoch},
          {"loss", r.loss},
          {"coherence_loss", r.coherence_loss},
          {"train_events", r.events},
          {"train_seconds", r.train_seconds},
          {"events_per_s", static_cast<double>(r.events) / r.train_seconds},
          {"memory_rows_per_batch", r.memory_rows},
          {"refined_rows_per_batch", r.refined_rows},
          {"step_s",
           {{"steps", r.step_seconds.steps},
            {"median", r.step_seconds.median},
            {"p10", r.step_seconds.p10},
            {"p90", r.step_seconds.p90},
            {"max", r.step_seconds.max}}},
          {"peak_bytes", peak_bytes_json()},
          {"host_waits_per_step", r.host_waits},
          {"calls", calls_json(r.calls, r.batches)},
          {"val", eval_json(r.val)},
          {"val_new_nodes", eval_json(r.val_new)},
          {"eval_seconds", r.eval_seconds},
          {"stage_s", stages},
          {"critical_path", critical_path_json(r)},
          {"comm", comm_json(r)}};
}

void append_json_lines(const std::string& file, const std::vector<json>& lines) {
  std::ofstream out(file, std::ios::app);
  for (const json& line : lines) out << line.dump() << "\n";
  if (!out) DB_THROW(runtime, "cannot write {}", file);
}

void append_json_line(const std::string& file, const json& line) {
  append_json_lines(file, {line});
}

}  // namespace depbloom::train
