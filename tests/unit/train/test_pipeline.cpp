// Critical-path pipelining on one device (pipeline.enabled): the pipelined trainer gives the
// serial one's loss trace, validation metrics and node state bit for bit (TGN, APAN with
// neighbour delivery, JODIE, TGN with 4 micro-batches and the coherence loss; horizons 1
// and 2; two epochs), and the urgent/deferred split
// behaves at its extremes with horizon 1: a stream whose nodes all repeat every step defers
// nothing, one whose written nodes are never read by the next step defers every row that
// has a next step (and both still equal the serial run).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/data/split.h"
#include "depbloom/train/run_log.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

using depbloom::Tensor;
using depbloom::data::ChronoSplit;
using depbloom::data::EventStream;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::train::BatchPlan;
using depbloom::train::EpochResult;
using depbloom::train::Trainer;
using depbloom::train::TrainerConfig;

enum class Model { tgn, apan, jodie };

TrainerConfig config(Model m, bool pipeline, int horizon, int64_t batch) {
  TrainerConfig c;
  c.model.d_mem = 8;
  c.model.d_mem_time = 4;
  c.model.d_emb = 8;
  c.model.d_gnn_time = 4;
  c.model.heads = 2;
  c.model.memory_heads = 2;
  c.model.neighbours = 4;
  c.model.dropout = 0.1;
  if (m == Model::apan) {
    c.model.memory = MemoryKind::transformer;
    c.model.embedding = EmbeddingKind::identity;
    c.model.mailbox = 3;
    c.deliver_to_neighbours = true;
  } else if (m == Model::jodie) {
    c.model.memory = MemoryKind::rnn;
    c.model.embedding = EmbeddingKind::jodie;
  }
  c.batch_size = batch;
  c.eval_batch_size = batch;
  c.lr = 1e-2;
  c.seed = 3;
  c.pipeline.enabled = pipeline;
  c.pipeline.horizon = horizon;
  return c;
}

struct TrainedRun {
  std::vector<double> trace;
  std::vector<EpochResult> epochs;
  std::vector<uint8_t> memory, mail;
};

TrainedRun train(const EventStream& s, const ChronoSplit& split, const TrainerConfig& cfg,
                 int epochs) {
  Trainer t(s, split, cfg);
  TrainedRun r;
  for (int e = 1; e <= epochs; ++e) r.epochs.push_back(t.run_epoch(e));
  r.trace = t.loss_trace();
  const Tensor& mem = t.state().memory();
  const Tensor& mail = t.state().mail();
  r.memory.assign(static_cast<const uint8_t*>(mem.raw()),
                  static_cast<const uint8_t*>(mem.raw()) + mem.bytes());
  r.mail.assign(static_cast<const uint8_t*>(mail.raw()),
                static_cast<const uint8_t*>(mail.raw()) + mail.bytes());
  return r;
}

// `on` equals `off` string for string: losses, validation metrics, node state.
void expect_same_run(const TrainedRun& on, const TrainedRun& off) {
  ASSERT_EQ(on.trace.size(), off.trace.size());
  for (size_t i = 0; i < on.trace.size(); ++i) EXPECT_EQ(on.trace[i], off.trace[i]) << "step " << i;
  for (size_t e = 0; e < on.epochs.size(); ++e) {
    EXPECT_EQ(on.epochs[e].loss, off.epochs[e].loss);
    EXPECT_EQ(on.epochs[e].val.whole.ap, off.epochs[e].val.whole.ap) << "epoch " << e + 1;
    EXPECT_EQ(on.epochs[e].val.whole.auc, off.epochs[e].val.whole.auc);
    EXPECT_EQ(on.epochs[e].val_new.whole.ap, off.epochs[e].val_new.whole.ap);
  }
  EXPECT_TRUE(on.memory == off.memory) << "node memory differs";
  EXPECT_TRUE(on.mail == off.mail) << "mailboxes differ";
}

struct Case {
  const char* name;
  Model model;
  int horizon;
  int32_t micro_batches = 1;  // > 1: refinement with the coherence loss
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class PipelineSameResults : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineSameResults, EqualsSerialTrainingBitForBit) {
  const EventStream s = tiny_stream(23, 240, 120, 3);
  const ChronoSplit split = tiny_split(s, 160, 200);
  const Case& c = GetParam();
  TrainerConfig cfg_off = config(c.model, false, c.horizon, 16);
  cfg_off.refine_micro_batches = c.micro_batches;
  if (c.micro_batches > 1) cfg_off.model.coherence_weight = 0.5;
  TrainerConfig cfg_on = cfg_off;
  cfg_on.pipeline.enabled = true;
  const TrainedRun off = train(s, split, cfg_off, 2);
  const TrainedRun on = train(s, split, cfg_on, 2);
  expect_same_run(on, off);
  for (size_t e = 0; e < on.epochs.size(); ++e) {
    const auto& p = on.epochs[e].pipeline;
    const auto& q = off.epochs[e].pipeline;
    // The same rows are written, only split differently; off, all of them urgent.
    EXPECT_EQ(p.urgent_rows + p.deferred_rows + p.sync_rows, q.urgent_rows);
    EXPECT_EQ(q.deferred_rows + q.sync_rows, 0);
    EXPECT_EQ(q.hidden(), 0.0);
    EXPECT_GT(p.deferred_rows, 0) << "nothing was deferred: the test proves little";
    EXPECT_EQ(p.deferred_applies, on.epochs[e].batches - 1);
    EXPECT_GT(p.prefetched_plans, 0) << "the side thread planned nothing ahead";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PipelineSameResults,
                         ::testing::Values(Case{"tgn_h1", Model::tgn, 1},
                                           Case{"tgn_h2", Model::tgn, 2},
                                           Case{"apan_h2", Model::apan, 2},
                                           Case{"jodie_h1", Model::jodie, 1},
                                           Case{"tgn_refine4_h2", Model::tgn, 2, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

// depbloom-train --plan's write-back rows (forecast_epoch, from plans alone) equal what the
// run then counts, pipeline on (urgent/deferred/sync) and off (all urgent); the epoch's
// metrics line carries the critical path, with nothing hidden when the pipeline is off.
TEST(PipelinePlan, ForecastRowsEqualWhatTheRunCounts) {
  const EventStream s = tiny_stream(23, 240, 120, 3);
  const ChronoSplit split = tiny_split(s, 160, 200);
  for (const Model m : {Model::tgn, Model::apan})
    for (const bool enabled : {true, false}) {
      SCOPED_TRACE(testing::Message() << (m == Model::tgn ? "tgn" : "apan") << " " << enabled);
      Trainer t(s, split, config(m, enabled, 2, 16));
      const auto f = t.forecast_epoch(1).pipeline;
      const EpochResult r = t.run_epoch(1);
      EXPECT_EQ(f.urgent_rows, r.pipeline.urgent_rows);
      EXPECT_EQ(f.deferred_rows, r.pipeline.deferred_rows);
      EXPECT_EQ(f.sync_rows, r.pipeline.sync_rows);
      EXPECT_GT(f.urgent_rows, 0);
      EXPECT_EQ(f.deferred_rows > 0, enabled);
      const auto j = depbloom::train::epoch_json(r)["critical_path"];
      EXPECT_EQ(j["rows"]["deferred"].get<int64_t>(), r.pipeline.deferred_rows);
      EXPECT_GT(j["loop_s"].get<double>(), 0.0);
      if (!enabled) {
        EXPECT_EQ(j["hidden_s"].get<double>(), 0.0);
        EXPECT_EQ(j["busy_s"]["side"].get<double>(), 0.0);
      }
    }
}

// Events from (src, dst) pairs, timestamps 1, 2, ..., 2 random edge features.
EventStream stream_of(const std::vector<std::pair<int32_t, int32_t>>& pairs, int32_t nodes) {
  EventStream s = tiny_stream(5, 0, nodes, 2);
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<float> feat(-1.0f, 1.0f);
  for (size_t e = 0; e < pairs.size(); ++e) {
    s.src.push_back(pairs[e].first);
    s.dst.push_back(pairs[e].second);
    s.ts.push_back(static_cast<double>(e + 1));
    s.event_id.push_back(static_cast<int64_t>(e));
    for (int f = 0; f < 2; ++f) s.edge_feat.push_back(feat(gen));
  }
  return s;
}

// Four nodes, every step of two events touching all of them: every row written is read by
// the next step.
TEST(PipelineStress, NodesRepeatingEveryStepDeferNothing) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int i = 0; i < 30; ++i) {
    pairs.emplace_back(i % 2 == 0 ? 0 : 1, i % 2 == 0 ? 1 : 0);
    pairs.emplace_back(i % 2 == 0 ? 2 : 3, i % 2 == 0 ? 3 : 2);
  }
  const EventStream s = stream_of(pairs, 4);
  const ChronoSplit split = tiny_split(s, 40, 50);
  const TrainedRun off = train(s, split, config(Model::tgn, false, 1, 2), 1);
  const TrainedRun on = train(s, split, config(Model::tgn, true, 1, 2), 1);
  expect_same_run(on, off);
  const auto& p = on.epochs[0].pipeline;
  EXPECT_EQ(p.deferred_rows, 0);
  EXPECT_GT(p.urgent_rows, 0);
  EXPECT_EQ(p.deferred_share(), 0.0);
}

// Every event between two fresh nodes, destinations spread far apart: no step reads a node
// the step before wrote (checked on the plans), so every row with a next step is deferred.
TEST(PipelineStress, NoNodeReadWithinTheHorizonDefersEverything) {
  constexpr int32_t kEvents = 120, kSpread = 60;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int32_t e = 0; e < kEvents; ++e) pairs.emplace_back(e, kEvents + kSpread * e);
  const EventStream s = stream_of(pairs, kEvents + kSpread * kEvents);
  const ChronoSplit split = tiny_split(s, 80, 100);
  const TrainerConfig cfg_on = config(Model::tgn, true, 1, 4);
  {  // The precondition, from the plans the run will use.
    Trainer t(s, split, cfg_on);
    const auto& steps = t.schedule_epoch();
    BatchPlan now, next;
    for (int64_t i = 0; i + 1 < steps.size(); ++i) {
      t.plan_step(now, steps.step(i), 1);
      t.plan_step(next, steps.step(i + 1), 1);
      const std::set<int32_t> reads(next.mem_node.begin(), next.mem_node.end());
      for (const int32_t v : now.writes.mem_node) ASSERT_EQ(reads.count(v), 0u) << "step " << i;
      for (const int32_t v : now.writes.mail_node) ASSERT_EQ(reads.count(v), 0u) << "step " << i;
    }
  }
  const TrainedRun off = train(s, split, config(Model::tgn, false, 1, 4), 1);
  const TrainedRun on = train(s, split, cfg_on, 1);
  expect_same_run(on, off);
  const auto& p = on.epochs[0].pipeline;
  EXPECT_EQ(p.urgent_rows, 0);
  EXPECT_GT(p.deferred_rows, 0);
  EXPECT_GT(p.sync_rows, 0);  // the epoch's last step
  EXPECT_EQ(p.deferred_share(), 1.0);
}

}  // namespace
}  // namespace dbtraintest
