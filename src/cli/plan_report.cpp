// depbloom-train --plan: the strategy's forecast of one training epoch, logged and printed
// as one JSON line (train_command.cpp calls it instead of training).
#include "depbloom/cli/plan_report.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "depbloom/backend/op_counts.h"
#include "depbloom/core/timer.h"
#include "depbloom/costmodel/epoch_work.h"
#include "depbloom/partition/partition_config.h"
#include "depbloom/train/run_log.h"

namespace depbloom::cli {
using nlohmann::json;

namespace {

// --plan's calls per step: one training epoch of this process's trainer (one rank) run dry
// (backend::OpCountOnly: every op checked and counted, none computed), so the counts are the
// real step's, exactly, from the same code; host waits happen only as a GPU runs the step.
// The work model takes both lanes' op calls and launches per step for the cost model.
json plan_calls_json(train::Trainer& trainer, costmodel::WorkModel& wm) {
  train::EpochResult dry;
  {
    backend::OpCountOnly count_only;
    dry = trainer.train_epoch(1);
  }
  if (dry.batches > 0) {
    const auto steps = static_cast<double>(dry.batches);
    const backend::OpCounts& train = dry.calls.train;
    const backend::OpCounts& side = dry.calls.side;
    wm.counted_op_calls = static_cast<double>(train.total_calls() + side.total_calls()) / steps;
    wm.counted_launches = static_cast<double>(train.cuda_launches() + side.cuda_launches()) / steps;
  }
  json j = train::calls_json(dry.calls, dry.batches);
  spdlog::info(
      "plan: one device's training step (dry run over {} steps): {:.1f} op calls ({:.1f} "
      "kernel launches on CUDA), {:.1f} uploads",
      dry.batches, j["op_calls_per_step"].get<double>(), j["cuda_launches_per_step"].get<double>(),
      j["uploads_per_step"].get<double>());
  return j;
}

costmodel::WorkModel work_model(const train::Trainer& trainer) {
  costmodel::WorkModel wm;
  wm.model = trainer.config().model;
  wm.refine_mean = trainer.config().refine_aggregate == train::RefineAggregate::mean;
  wm.value_bytes = static_cast<int64_t>(dtype_size(trainer.config().dtype));
  wm.parameters = trainer.parameter_count();
  return wm;
}

// The plan's work counts, summed over every rank's steps.
json work_json(const costmodel::EpochWork& w) {
  costmodel::StepWork sum;
  for (const costmodel::StepWork& s : w.work) {
    sum.events += s.events, sum.memory_rows += s.memory_rows, sum.updated_rows += s.updated_rows;
    sum.refined_rows += s.refined_rows, sum.refine_terms += s.refine_terms;
    sum.refine_messages += s.refine_messages, sum.refine_bases += s.refine_bases;
    sum.refine_gaps += s.refine_gaps;
    sum.sampled_slots += s.sampled_slots, sum.written_rows += s.written_rows;
    for (size_t h = 0; h < s.slot_reads.size(); ++h) sum.slot_reads[h] += s.slot_reads[h];
    sum.written_mails += s.written_mails, sum.urgent_rows += s.urgent_rows;
  }
  return {{"events", sum.events},
          {"memory_rows", sum.memory_rows},
          {"updated_rows", sum.updated_rows},
          {"refined_rows", sum.refined_rows},
          {"refine_terms", sum.refine_terms},
          {"refine_messages", sum.refine_messages},
          {"refine_bases", sum.refine_bases},
          {"refine_gaps", sum.refine_gaps},
          {"sampled_slots", sum.sampled_slots},
          {"slot_reads", sum.slot_reads},
          {"written_rows", sum.written_rows},
          {"written_mails", sum.written_mails},
          {"urgent_rows", sum.urgent_rows},
          {"urgent_exchange_share", w.urgent_exchange_share}};
}

// --profile: the cost model's epoch, every number labelled modelled.
json model_json(const costmodel::EpochWork& work, const costmodel::WorkModel& wm,
                const costmodel::DeviceProfile& profile) {
  const costmodel::CostPrediction m = costmodel::predict_epoch(work, wm, profile);
  json stages = json::object();
  for (int i = 0; i < train::kStages; ++i)
    stages[train::stage_name(static_cast<train::Stage>(i))] =
        m.stages.seconds[static_cast<size_t>(i)];
  spdlog::info(
      "plan (modelled on {}): epoch {:.3f} s serial, {:.3f} s pipelined, bound by {}; "
      "collectives {:.3f} s; op calls as counted ({:.3f} x the layers' estimates)",
      profile.name, m.serial, m.pipelined, train::stage_name(m.bound), m.collectives,
      m.launch_scale);
  return {{"profile", profile.name},
          {"label", "modelled"},
          {"launch_scale", m.launch_scale},  // counted op calls (launches) / the estimates'
          {"stages", stages},
          {"collectives", m.collectives},
          {"sync_wait", m.sync_wait},  // in the stages: the ranks' wait for the slowest
          {"epoch_seconds", {{"serial", m.serial}, {"pipelined", m.pipelined}}},
          {"bound", train::stage_name(m.bound)}};
}

}  // namespace

void print_plan(train::Trainer& trainer, const train::TrainerConfig& tc, int ranks,
                const std::optional<costmodel::DeviceProfile>& profile) {
  Stopwatch watch;
  const train::PlanConfig& pc = trainer.plan_settings();
  costmodel::EpochWorkCollector collector(ranks, trainer.stream().num_nodes, pc.memory,
                                          pc.memory && pc.skip_empty_mailbox);
  const train::EpochForecast f = trainer.forecast_epoch(
      ranks, [&](int rank, const train::ScheduledStep& step, const train::BatchPlan& plan) {
        collector.observe(rank, step, plan);
      });
  train::EpochResult r;
  r.ranks = ranks;
  r.strategy = ranks > 1 ? tc.strategy.name : "single-device";
  r.comm = f.comm;
  r.counts = f.counts;
  const train::StrategyCounts& c = f.counts;
  spdlog::info("plan: strategy {} over {} ranks, batch {}: {} steps, {} events per epoch{}",
               r.strategy, ranks, tc.batch_size, f.steps, f.events, comm_text(r));
  if (c.windows > 0)
    spdlog::info(
        "plan: {} windows of {} steps ({}); cut fraction {:.4f}, max imbalance {:.3f}, "
        "{} migrated nodes ({:.1f}% of window nodes)",
        c.windows, tc.strategy.partition.window_steps,
        partition::partition_method_name(tc.strategy.partition.method),
        c.plan_events > 0 ? double(c.cut_events) / double(c.plan_events) : 0.0, c.max_imbalance,
        c.migrated_nodes,
        c.window_nodes > 0 ? 100.0 * double(c.migrated_nodes) / double(c.window_nodes) : 0.0);
  const train::PipelineCounts& p = f.pipeline;
  spdlog::info("plan: write-back rows (pipeline {}, horizon {}): urgent {}, deferred {}, sync {}",
               tc.pipeline.enabled ? "on" : "off", tc.pipeline.horizon, p.urgent_rows,
               p.deferred_rows, p.sync_rows);
  if (ranks > 1)
    spdlog::info("plan: {} node-state exchanges: {} memory rows, {} mails, {:.2f} MB", c.exchanges,
                 c.exchanged_rows, c.exchanged_mails, static_cast<double>(c.exchange_bytes) / 1e6);
  const costmodel::EpochWork work = collector.finish(f.comm);
  costmodel::WorkModel wm = work_model(trainer);
  const costmodel::StepFlops flops = costmodel::epoch_flops(work, wm);
  json plan = {
      {"strategy", r.strategy},
      {"ranks", ranks},
      {"batch_size", tc.batch_size},
      {"steps", f.steps},
      {"events", f.events},
      {"seconds", watch.seconds()},
      {"comm", train::comm_json(r)},
      {"write_back",
       {{"pipeline", tc.pipeline.enabled},
        {"horizon", tc.pipeline.horizon},
        {"urgent_rows", p.urgent_rows},
        {"deferred_rows", p.deferred_rows},
        {"sync_rows", p.sync_rows}}},
      {"work", work_json(work)},
      {"flops",
       {{"forward", flops.forward}, {"backward", flops.backward}, {"total", flops.total()}}}};
  spdlog::info("plan: {:.3f} GFLOP of training GEMMs per epoch over {} ranks ({:.3f} forward)",
               static_cast<double>(flops.total()) / 1e9, ranks,
               static_cast<double>(flops.forward) / 1e9);
  plan["calls"] = plan_calls_json(trainer, wm);
  // The dry run carves every step's arena tensors as the real one does (untouched, so it
  // costs no memory): the Buffers' peak is what one device at this batch holds.
  plan["peak_bytes"] = train::peak_bytes_json();
  if (profile) plan["model"] = model_json(work, wm, *profile);
  const json line = {{"plan", plan}};
  std::printf("%s\n", line.dump().c_str());
}

}  // namespace depbloom::cli
