// BatchPlan: on a hand-made stream, plan_batch lists exactly the roots, the memory rows read
// (node, time), the sampled slots' rows and the writes (node, event, time) a step makes,
// from the events alone (it takes no node state); planning twice gives the same plan; and a
// Trainer's schedule lookahead yields the plans its steps then run (uniform sampling and
// dropout included).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "depbloom/graph/negative_sampler.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/graph/temporal_csr.h"
#include "depbloom/model/node_state.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/step_io.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace depbloom::train {
namespace {

// Six nodes, five events; events 2 and 3 share a timestamp.
data::EventStream hand_stream() {
  data::EventStream s;
  s.name = s.source = "hand";
  s.num_nodes = 6;
  const int32_t src[] = {0, 2, 0, 2, 0}, dst[] = {1, 1, 3, 3, 1};
  const double ts[] = {10, 11, 12, 12, 13};
  for (int e = 0; e < 5; ++e) {
    s.src.push_back(src[e]), s.dst.push_back(dst[e]), s.ts.push_back(ts[e]);
    s.event_id.push_back(e);
  }
  for (int32_t n = 0; n < 6; ++n) s.original_id.push_back(n);
  return s;
}

TEST(BatchPlan, ListsTheRowsReadAndTheWritesOfAHandMadeStep) {
  const data::EventStream stream = hand_stream();
  const graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  const graph::RecentSampler sampler(csr, 2, 1);
  PlanConfig cfg;
  cfg.hops = 1;
  cfg.neighbours = 2;
  BatchPlanner planner(stream, cfg);
  const int64_t events[] = {2, 3, 4};
  const int32_t negatives[] = {5, 1, 4};
  BatchPlan p;
  planner.plan_batch(p, events, 3, negatives, 1, 7, &sampler);

  EXPECT_EQ(p.events, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(p.micro_bounds, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(p.epoch, 7u);
  // Roots: sources, destinations, negatives; times relative to the first event (t = 10).
  EXPECT_EQ(p.root_node, (std::vector<int32_t>{0, 2, 0, 3, 3, 1, 5, 1, 4}));
  EXPECT_EQ(p.root_time, (std::vector<double>{2, 2, 3, 2, 2, 3, 2, 2, 3}));
  // Rows read: the roots' distinct (node, time), then their neighbours' (node, edge time):
  // 0@12 sees 1 (event 0); 2@12 sees 1 (event 1); 0@13 sees 3 (event 2) and 1 (event 0);
  // 3@12 sees nothing (both its events are at 12); 1@13 sees 2 (event 1) and 0 (event 0).
  EXPECT_EQ(p.mem_node, (std::vector<int32_t>{0, 2, 0, 3, 1, 5, 1, 4, 1, 1, 2, 0}));
  EXPECT_EQ(p.mem_time, (std::vector<double>{2, 2, 3, 2, 3, 2, 2, 3, 0, 1, 1, 0}));
  EXPECT_EQ(p.root_row, (std::vector<int32_t>{0, 1, 2, 3, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p.slot_row[0], (std::vector<int32_t>{8, -1, 9, -1, 3, 8, -1, -1, -1, -1, 10, 11, -1, -1,
                                                 10, 11, -1, -1}));
  // Writes: each endpoint's memory at its last event in the step, and every endpoint's mail.
  const PlannedWrites& w = p.writes;
  EXPECT_EQ(w.mem_node, (std::vector<int32_t>{0, 3, 2, 1}));
  EXPECT_EQ(w.mem_row, (std::vector<int32_t>{2, 3, 1, 4}));
  EXPECT_EQ(w.mem_event, (std::vector<int64_t>{4, 3, 3, 4}));
  EXPECT_EQ(w.mem_time, (std::vector<double>{3, 2, 2, 3}));
  EXPECT_EQ(w.mail_node, (std::vector<int32_t>{0, 3, 2, 3, 0, 1}));
  EXPECT_EQ(w.mail_row, (std::vector<int32_t>{0, 3, 1, 3, 2, 4}));
  EXPECT_EQ(w.mail_other, (std::vector<int32_t>{3, 0, 3, 1, 4, 2}));
  EXPECT_EQ(w.mail_event, (std::vector<int64_t>{2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(w.mail_time, (std::vector<double>{2, 2, 2, 2, 3, 3}));
  EXPECT_EQ(w.root_mails, 6);
  EXPECT_EQ(w.src_nbr_mails + w.dst_nbr_mails, 0);

  // With neighbour delivery every endpoint's mail also goes to its sampled neighbours.
  cfg.deliver_to_neighbours = true;
  BatchPlanner delivering(stream, cfg);
  BatchPlan q;
  delivering.plan_batch(q, events, 3, negatives, 1, 7, &sampler);
  EXPECT_EQ(q.writes.src_nbr_mails, 4);  // 0@12: 1; 2@12: 1; 0@13: 3, 1
  EXPECT_EQ(q.writes.dst_nbr_mails, 2);  // 3@12: none (twice); 1@13: 2, 0
  EXPECT_EQ(std::vector<int32_t>(q.writes.mail_node.begin() + 6, q.writes.mail_node.end()),
            (std::vector<int32_t>{1, 1, 3, 1, 2, 0}));

  // Planning again (fresh or reused plan) gives the same plan.
  BatchPlan again = q;
  delivering.plan_batch(again, events, 3, negatives, 1, 7, &sampler);
  EXPECT_TRUE(same_plan(again, q));
  EXPECT_FALSE(same_plan(again, p));
}

// The lookahead of the schedule: before step i runs, the plans of steps i+1 and i+2 are made
// from the events alone; each step then runs exactly the plan made for it.
// Refinement's dt runs from a copy's latest earlier in-batch event to its read, never negative:
// a neighbour's row at an older edge time is read by a later micro-batch after that event.
// Events 1..4 in 4 micro-batches: node 1's event 1 (t = 11) is in micro-batch 0; row 1@10 (the
// edge of event 0) is read as a neighbour of 0@12 (micro-batch 1, start 12) and of 0@13
// (micro-batch 3, start 13); row 1@11 as a neighbour of 2@12 (micro-batch 2); row 1@13 as
// event 4's destination.
// Events 1..4 of the hand-made stream in `micro_batches` micro-batches (one event each by
// default), negatives node 4.
PlanConfig refined_hand_config(bool refine_bases) {
  PlanConfig cfg;
  cfg.hops = 1;
  cfg.neighbours = 2;
  cfg.refine_bases = refine_bases;
  return cfg;
}

BatchPlan refined_hand_plan(bool refine_bases, int32_t micro_batches = 4) {
  static const data::EventStream stream = hand_stream();
  static const graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  static const graph::RecentSampler sampler(csr, 2, 1);
  const PlanConfig cfg = refined_hand_config(refine_bases);
  const int64_t events[] = {1, 2, 3, 4};
  const int32_t negatives[] = {4, 4, 4, 4};
  BatchPlan p;
  BatchPlanner(stream, cfg).plan_batch(p, events, 4, negatives, 1, 0, &sampler, micro_batches);
  return p;
}

TEST(BatchPlan, RefinedCopiesDtRunsFromTheLatestEarlierEventToTheRead) {
  const BatchPlan p = refined_hand_plan(false);
  ASSERT_EQ(p.micro_bounds, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  std::map<double, std::vector<double>> node1_dt;  // node 1's copies by row time (t0 = 10)
  for (int64_t c = 0; c < p.refined_rows(); ++c) {
    const auto row = static_cast<size_t>(p.refine.row[static_cast<size_t>(c)]);
    EXPECT_GE(p.refine.dt[static_cast<size_t>(c)], 0.0) << "copy " << c;
    if (p.mem_node[row] == 1)
      node1_dt[p.mem_time[row]].push_back(p.refine.dt[static_cast<size_t>(c)]);
  }
  for (auto& [t, dts] : node1_dt) std::sort(dts.begin(), dts.end());
  EXPECT_EQ(node1_dt[0.0], (std::vector<double>{1, 2}));  // read at 12 and at 13
  EXPECT_EQ(node1_dt[1.0], (std::vector<double>{1}));     // read at 12
  EXPECT_EQ(node1_dt[3.0], (std::vector<double>{2}));     // its own time, 13
}

// The updater start's base rows (PlanConfig::refine_bases): each copy names its row among
// the distinct ones, listed in first-copy order; row 1@10 (two copies, above) is listed once.
// Without the option nothing is listed.
TEST(BatchPlan, RefinedCopiesListTheirDistinctBaseRows) {
  const BatchPlan without = refined_hand_plan(false);
  ASSERT_GT(without.refined_rows(), 0);
  EXPECT_TRUE(without.refine.base.empty() && without.refine.base_of.empty());
  const BatchPlan p = refined_hand_plan(true);
  ASSERT_EQ(p.refine.base_of.size(), p.refine.row.size());
  std::set<int32_t> distinct(p.refine.row.begin(), p.refine.row.end());
  EXPECT_EQ(p.refine.base.size(), distinct.size());
  EXPECT_LT(p.refine.base.size(), p.refine.row.size()) << "no base row has two copies";
  int32_t next = 0;
  for (size_t c = 0; c < p.refine.row.size(); ++c) {
    const int32_t b = p.refine.base_of[c];
    ASSERT_TRUE(b >= 0 && b < static_cast<int32_t>(p.refine.base.size())) << c;
    EXPECT_EQ(p.refine.base[static_cast<size_t>(b)], p.refine.row[c]) << c;
    EXPECT_LE(b, next) << "base rows out of first-copy order at copy " << c;
    if (b == next) ++next;
  }
}

// The copies' gaps are listed once each, ascending, and every copy points at its own value.
TEST(BatchPlan, RefinedCopiesListTheirDistinctGaps) {
  const BatchPlan p = refined_hand_plan(false);
  ASSERT_GT(p.refined_rows(), 0);
  ASSERT_EQ(p.refine.dt_of.size(), p.refine.dt.size());
  const std::set<double> distinct(p.refine.dt.begin(), p.refine.dt.end());
  EXPECT_EQ(std::vector<double>(distinct.begin(), distinct.end()), p.refine.dts);
  EXPECT_LT(p.refine.dts.size(), p.refine.dt.size()) << "no gap is shared by two copies";
  for (size_t c = 0; c < p.refine.dt.size(); ++c) {
    const int32_t g = p.refine.dt_of[c];
    ASSERT_TRUE(g >= 0 && g < static_cast<int32_t>(p.refine.dts.size())) << c;
    EXPECT_EQ(p.refine.dts[static_cast<size_t>(g)], p.refine.dt[c]) << c;
  }
}

// Each hop lists the rows its slots read once, in first-read order, and nothing else (the
// refined copies' base rows and roots no slot reads are not listed).
TEST(BatchPlan, SlotReadsListEachRowTheSlotsReadOnce) {
  for (const bool refined : {false, true}) {
    SCOPED_TRACE(refined ? "refined" : "unrefined");
    const BatchPlan p = refined_hand_plan(false, refined ? 4 : 1);
    ASSERT_EQ(p.refined_rows() > 0, refined);
    const auto& slots = p.slot_row[0];
    const auto& read = p.slot_read[0];
    const auto& read_of = p.slot_read_of[0];
    ASSERT_EQ(read_of.size(), slots.size());
    std::set<int32_t> want;
    for (int32_t row : slots)
      if (row >= 0) want.insert(row);
    EXPECT_EQ(std::set<int32_t>(read.begin(), read.end()), want);
    EXPECT_EQ(read.size(), want.size()) << "a row listed twice";
    EXPECT_LT(read.size(), static_cast<size_t>(p.memory_rows() + p.refined_rows()));
    int32_t next = 0;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (slots[s] < 0) {
        EXPECT_EQ(read_of[s], -1) << s;
        continue;
      }
      ASSERT_TRUE(read_of[s] >= 0 && read_of[s] <= next) << "out of first-read order at " << s;
      EXPECT_EQ(read[static_cast<size_t>(read_of[s])], slots[s]) << s;
      if (read_of[s] == next) ++next;
    }
  }
}

// The stager hands the model exactly the plan's lists: base rows only when they were planned
// (the updater start), the distinct gaps and the slot reads always.
TEST(BatchPlan, StagedRefinedInputsHaveThePlansListLengths) {
  for (const bool refine_bases : {false, true}) {
    SCOPED_TRACE(refine_bases ? "base rows planned" : "no base rows");
    const BatchPlan p = refined_hand_plan(refine_bases);
    ASSERT_GT(p.refined_rows(), 0);
    const model::NodeState state(6, 4, 2 * 4 + 1, 1);
    BatchStager stager(refined_hand_config(refine_bases), DType::f32);
    StepArena arena(Device::cpu());
    const model::TgnnInputs in = stager.stage(p, state, arena).in;
    EXPECT_EQ(in.refine.row.numel(), p.refined_rows());
    EXPECT_EQ(in.refine.base.numel(), static_cast<int64_t>(p.refine.base.size()));
    EXPECT_EQ(in.refine.base_of.numel(), static_cast<int64_t>(p.refine.base_of.size()));
    EXPECT_EQ(in.refine.dts.numel(), static_cast<int64_t>(p.refine.dts.size()));
    EXPECT_EQ(in.refine.dt_of.numel(), p.refined_rows());
    EXPECT_EQ(in.slot_read[0].numel(), static_cast<int64_t>(p.slot_read[0].size()));
    EXPECT_EQ(in.slot_read_of[0].numel(), static_cast<int64_t>(p.slot_row[0].size()));
  }
}

TEST(BatchPlan, LookaheadPlansAreThePlansTheStepsRun) {
  const data::EventStream stream = dbtraintest::tiny_stream(9, 240, 24, 3);
  const data::ChronoSplit split = dbtraintest::tiny_split(stream, 160, 200);
  TrainerConfig cfg;
  cfg.model.d_mem = 8;
  cfg.model.d_mem_time = 4;
  cfg.model.d_emb = 8;
  cfg.model.d_gnn_time = 4;
  cfg.model.neighbours = 3;
  cfg.model.layers = 2;
  cfg.uniform_sampling = true;
  cfg.batch_size = 16;
  cfg.eval_batch_size = 16;
  Trainer trainer(stream, split, cfg);
  const Schedule& schedule = trainer.schedule_epoch();
  ASSERT_EQ(schedule.size(), 10);
  std::map<int64_t, BatchPlan> predicted;
  for (int64_t i = 0; i < schedule.size(); ++i) {
    const Schedule::Range ahead = schedule.lookahead(i, 2);
    for (const ScheduledStep* s = ahead.begin; s != ahead.end; ++s)
      if (predicted.count(s->index) == 0) trainer.plan_step(predicted[s->index], *s, 1);
    trainer.train_step(schedule.step(i), 1);
    if (i == 0) continue;  // nothing looked ahead to step 0
    ASSERT_EQ(predicted.count(i), 1u) << "step " << i;
    EXPECT_TRUE(same_plan(trainer.last_plan(), predicted[i])) << "step " << i;
    EXPECT_GT(trainer.last_plan().memory_rows(), 0);
  }
}

// The sample stage uses the process's OpenMP team (negatives and neighbour sampling split
// their rows across it): the whole plan of a step must not depend on the team's size, or
// the strict-equals-one-device and step-runner traces would move with run.threads.
TEST(BatchPlan, APlanIsTheSameForAnyThreadCount) {
  const data::EventStream stream = dbtraintest::tiny_stream(5, 4000, 300, 0);
  const graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  const graph::UniformSampler sampler(csr, 10, 2, 99);  // draws: keyed, not per thread
  const graph::TrainNegativeSampler negatives(stream, 17);
  PlanConfig cfg;
  cfg.hops = 2;
  cfg.neighbours = 10;
  cfg.deliver_to_neighbours = true;
  BatchPlanner planner(stream, cfg);
  std::vector<int64_t> events(1800);  // 5,400 hop-0 roots: above the parallel threshold
  std::iota(events.begin(), events.end(), int64_t{2000});
  const auto count = static_cast<int64_t>(events.size());
  const auto plan_with = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<int32_t> drawn(events.size());
    negatives.sample_events(events.data(), count, 1, 3, drawn.data());
    BatchPlan p;
    planner.plan_batch(p, events.data(), count, drawn.data(), 1, 3, &sampler);
    omp_set_num_threads(before);
    return p;
  };
  const BatchPlan one = plan_with(1);
  const graph::Block& deep = one.blocks.hop(1);
  EXPECT_GT(std::count(deep.mask, deep.mask + deep.num_slots(), uint8_t{1}), 1000);
  for (int threads : {2, 3}) EXPECT_TRUE(same_plan(plan_with(threads), one)) << threads;
}

}  // namespace
}  // namespace depbloom::train
