// The cost model (issue 19): GEMM FLOPs of known shapes and of layers counted by hand; the
// counts of whole steps equal the FLOPs the backend's GEMMs were asked for (TGN in both
// attention styles and read modes, JODIE, APAN, TGN with refinement); the collector's
// replay of the mailboxes gives the updater rows the trainer ran; and on hand-made plans:
// no exchange time without cross-rank writes, twice the link bandwidth halves only the
// collective terms, the pipelined epoch never exceeds the serial one, and exact seconds.
#include <gtest/gtest.h>

#include <vector>

#include "depbloom/backend/runtime.h"
#include "depbloom/costmodel/cost_model.h"
#include "depbloom/costmodel/epoch_work.h"
#include "depbloom/train/trainer.h"
#include "unit/train/tiny_stream.h"

namespace dbtraintest {
namespace {

using namespace depbloom::train;
using namespace depbloom::costmodel;
using depbloom::DType;
using depbloom::model::AttentionStyle;
using depbloom::model::EmbeddingKind;
using depbloom::model::MemoryKind;
using depbloom::model::NeighbourReads;
using depbloom::model::RefineStart;

depbloom::model::TgnnConfig small_tgn() {
  depbloom::model::TgnnConfig m;
  m.d_mem = 4, m.d_mem_time = 3, m.d_edge = 3, m.d_emb = 4, m.d_gnn_time = 3;
  m.neighbours = 3, m.heads = 2;
  return m;
}

StageWork& at(StepStageWork& w, Stage s) {
  return w[static_cast<size_t>(s)];
}

TEST(CostModel, GemmFlopsOfAKnownShape) {
  EXPECT_EQ(gemm_flops(3, 5, 7), 210);
  EXPECT_EQ(gemm_flops(GemmShape{100, 200, 300, 2}), 2 * 2 * 100 * 200 * 300);
  StageWork s;
  s.gemms = {{2, 3, 4, 1}, {1, 1, 1, 5}};
  EXPECT_EQ(s.flops(), 48 + 10);
}

TEST(CostModel, LayerSumsMatchHandCounts) {
  WorkModel wm;
  wm.model = small_tgn();  // GRU memory, one tgn attention layer
  StepWork step;
  step.events = 8, step.negatives = 1, step.memory_rows = 20, step.updated_rows = 5;
  step.slot_reads[0] = 16;  // the rows the slots read
  StepStageWork w;
  step_stage_work(w, wm, step);
  // GRU over 5 rows: mail 2*4+3 = 11 plus time 3 is 14 wide, 12 gate rows:
  // x W_ih^T [5,12,14] and h W_hh^T [5,12,4].
  EXPECT_EQ(at(w, Stage::memory_update).flops(), 2 * 5 * 12 * 14 + 2 * 5 * 12 * 4);
  // Link predictor, B = 8, (1+K)B = 16 pairs, width 4: src [8,4,4], dst [16,4,4], out [16,1,4].
  EXPECT_EQ(at(w, Stage::loss).flops(), 2 * 8 * 4 * 4 + 2 * 16 * 4 * 4 + 2 * 16 * 1 * 4);
  // Attention: 24 roots, 72 slots; the 16 rows they read < 72 slots: table mode, over those
  // 16 rows. A = round_up(4+3, 2) = 8.
  const int64_t q = 2 * 24 * 8 * 7, table = 2 * (2 * 16 * 8 * 4), rest = 2 * (2 * 72 * 8 * 6);
  const int64_t merge = 2 * 24 * 8 * 8 + 2 * 24 * 4 * 12 + 2 * 24 * 4 * 4;
  EXPECT_EQ(at(w, Stage::embed).flops(), q + table + rest + merge);
  EXPECT_EQ(at(w, Stage::refine).flops(), 0);
  EXPECT_EQ(at(w, Stage::gather).flops(), 0);
  const StepFlops f = step_flops(w);
  EXPECT_EQ(f.forward, at(w, Stage::memory_update).flops() + at(w, Stage::loss).flops() +
                           at(w, Stage::embed).flops());
  EXPECT_EQ(f.backward, at(w, Stage::backward).flops());
}

struct FlopCase {
  const char* name;
  MemoryKind memory;
  EmbeddingKind embedding;
  AttentionStyle style;
  NeighbourReads reads;
  int mailbox;
  int32_t micro_batches;
  RefineAggregate aggregate;
  RefineStart start = RefineStart::identity;
};

void PrintTo(const FlopCase& c, std::ostream* os) {
  *os << c.name;
}

TrainerConfig flop_config(const FlopCase& c) {
  TrainerConfig cfg;
  cfg.model = small_tgn();
  cfg.model.d_edge = 0;  // the trainer sets the stream's
  cfg.model.memory = c.memory;
  cfg.model.embedding = c.embedding;
  cfg.model.attention_style = c.style;
  cfg.model.neighbour_reads = c.reads;
  cfg.model.mailbox = c.mailbox;
  cfg.model.memory_heads = 2;
  cfg.model.refine_hidden = 5;
  cfg.batch_size = 12;
  cfg.eval_batch_size = 12;
  cfg.lr = 1e-2;
  cfg.seed = 5;
  cfg.dtype = DType::f32;
  cfg.refine_micro_batches = c.micro_batches;
  cfg.refine_aggregate = c.aggregate;
  cfg.model.refine_start = c.start;
  return cfg;
}

class StepFlopsTest : public ::testing::TestWithParam<FlopCase> {};

// Every training step's counted FLOPs equal what the backend's GEMMs were asked for, and the
// collector (fed by the one-rank forecast) replays the trainer's updater rows exactly.
TEST_P(StepFlopsTest, CountsEqualTheGemmsTheStepRan) {
  const auto stream = tiny_stream();
  const auto split = tiny_split(stream);
  const TrainerConfig cfg = flop_config(GetParam());
  Trainer trainer(stream, split, cfg);
  const PlanConfig& pc = trainer.plan_settings();
  EpochWorkCollector collector(1, stream.num_nodes, pc.memory, pc.memory && pc.skip_empty_mailbox);
  const EpochForecast f = trainer.forecast_epoch(
      1,
      [&](int rank, const ScheduledStep& s, const BatchPlan& p) { collector.observe(rank, s, p); });
  const EpochWork work = collector.finish(f.comm);
  WorkModel wm;
  wm.model = trainer.config().model;
  wm.refine_mean = cfg.refine_aggregate == RefineAggregate::mean;
  const Schedule& steps = trainer.schedule_epoch();
  ASSERT_EQ(steps.size(), work.steps);
  StepStageWork counted;
  for (int64_t i = 0; i < steps.size(); ++i) {
    const int64_t before = depbloom::backend::gemm_flops_issued();
    trainer.train_step(steps.step(i), 1);
    const int64_t ran = depbloom::backend::gemm_flops_issued() - before;
    const BatchPlan& plan = trainer.last_plan();
    const int64_t with_mail = trainer.last_step().staged.in.mem_with_mail;
    const StepWork& sw = work.at(i, 0);
    EXPECT_EQ(sw.memory_rows, plan.memory_rows()) << "step " << i;
    EXPECT_EQ(sw.updated_rows, with_mail < 0 ? plan.memory_rows() : with_mail) << "step " << i;
    EXPECT_EQ(sw.refined_rows, plan.refined_rows()) << "step " << i;
    step_stage_work(counted, wm, sw);
    EXPECT_EQ(step_flops(counted).total(), ran) << "step " << i;
    EXPECT_GT(ran, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, StepFlopsTest,
    ::testing::Values(
        FlopCase{"tgn_table", MemoryKind::gru, EmbeddingKind::attention, AttentionStyle::tgn,
                 NeighbourReads::table, 1, 1, RefineAggregate::last},
        FlopCase{"tgn_slots", MemoryKind::gru, EmbeddingKind::attention, AttentionStyle::tgn,
                 NeighbourReads::slots, 1, 1, RefineAggregate::last},
        FlopCase{"tgl_auto", MemoryKind::gru, EmbeddingKind::attention, AttentionStyle::tgl,
                 NeighbourReads::automatic, 1, 1, RefineAggregate::last},
        FlopCase{"tgat", MemoryKind::none, EmbeddingKind::attention, AttentionStyle::tgn,
                 NeighbourReads::automatic, 1, 1, RefineAggregate::last},
        FlopCase{"jodie", MemoryKind::rnn, EmbeddingKind::jodie, AttentionStyle::tgn,
                 NeighbourReads::automatic, 1, 1, RefineAggregate::last},
        FlopCase{"apan", MemoryKind::transformer, EmbeddingKind::identity, AttentionStyle::tgn,
                 NeighbourReads::automatic, 3, 1, RefineAggregate::last},
        FlopCase{"tgn_refine_mean", MemoryKind::gru, EmbeddingKind::attention, AttentionStyle::tgn,
                 NeighbourReads::automatic, 1, 4, RefineAggregate::mean},
        FlopCase{"tgn_start_updater", MemoryKind::gru, EmbeddingKind::attention,
                 AttentionStyle::tgn, NeighbourReads::automatic, 1, 4, RefineAggregate::last,
                 RefineStart::updater},
        FlopCase{"jodie_start_updater", MemoryKind::rnn, EmbeddingKind::jodie, AttentionStyle::tgn,
                 NeighbourReads::automatic, 1, 4, RefineAggregate::mean, RefineStart::updater},
        FlopCase{"apan_start_updater", MemoryKind::transformer, EmbeddingKind::identity,
                 AttentionStyle::tgn, NeighbourReads::automatic, 3, 4, RefineAggregate::last,
                 RefineStart::updater}),
    [](const auto& info) { return std::string(info.param.name); });

// A hand-made plan: B events, these memory rows' nodes, writes and mails.
BatchPlan hand_plan(int64_t events, std::vector<int32_t> reads, std::vector<int32_t> writes,
                    std::vector<int32_t> mails) {
  BatchPlan p;
  p.events.assign(static_cast<size_t>(events), 0);
  p.mem_node = std::move(reads);
  p.writes.mem_node = std::move(writes);
  p.writes.root_mails = static_cast<int64_t>(mails.size());
  p.writes.mail_node = std::move(mails);
  return p;
}

// Two ranks, a window of two steps then one: which rows hold mail on each replica (own
// mails at once, the other rank's only after the sync point), the urgent writes, what a
// sync point applies, and the share of exchanged rows the next step reads.
TEST(CostModel, CollectorReplaysEachReplica) {
  EpochWorkCollector c(2, 6, true, true);
  auto step = [](int64_t i, bool sync) {
    ScheduledStep s;
    s.index = i;
    s.sync = sync ? SyncPoint::exchange : SyncPoint::none;
    return s;
  };
  c.observe(0, step(0, false), hand_plan(2, {0, 1}, {0, 1}, {0, 1}));
  c.observe(1, step(0, false), hand_plan(2, {2, 3}, {2, 3}, {2, 3}));
  c.observe(0, step(1, true), hand_plan(2, {0, 2, 4}, {0, 4}, {0, 4}));
  c.observe(1, step(1, true), hand_plan(1, {1, 3}, {3}, {3, 5}));
  c.observe(0, step(2, true), hand_plan(1, {1, 2}, {}, {}));
  c.observe(1, step(2, true), hand_plan(1, {4, 5}, {}, {}));
  const EpochWork w = c.finish(depbloom::dist::CommStats{});
  ASSERT_EQ(w.steps, 3);
  const int64_t updated[3][2] = {{0, 0}, {1, 1}, {2, 2}};
  const int64_t urgent[3][2] = {{1, 1}, {0, 0}, {0, 0}};
  for (int64_t i = 0; i < 3; ++i)
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(w.at(i, r).updated_rows, updated[i][r]) << i << " " << r;
      EXPECT_EQ(w.at(i, r).urgent_rows, urgent[i][r]) << i << " " << r;
    }
  EXPECT_EQ(w.at(0, 0).applied_rows, 2);  // its own, no sync point
  EXPECT_EQ(w.at(1, 0).applied_rows, 7);  // the window's rows of both ranks
  EXPECT_EQ(w.at(1, 1).applied_mails, 8);
  // Exchanged at step 1: nodes 0..4; step 2 reads 1, 2 and 4 of them.
  EXPECT_DOUBLE_EQ(w.urgent_exchange_share, 0.6);
}

// A profile with round numbers; latency 0 so that bandwidth alone prices the links.
DeviceProfile round_profile() {
  DeviceProfile p;
  p.name = "round";
  p.gemm_flops = 1e9;
  p.memory_bandwidth = 1e10;
  p.op_launch = 1e-6;
  p.host_plan_rate = 1e6;
  p.all_reduce = {1e9, 0};
  p.all_gather = {1e9, 0};
  return p;
}

// Two ranks, three steps of uneven work; `gathers` adds an exchange after every step.
EpochWork two_rank_work(bool gathers) {
  EpochWork w;
  w.ranks = 2;
  w.steps = 3;
  for (int64_t i = 0; i < 3; ++i)
    for (int r = 0; r < 2; ++r) {
      StepWork s;
      s.events = 10 + 5 * r + i, s.negatives = 1, s.memory_rows = 30 + 3 * r;
      s.updated_rows = 20 + r, s.sampled_slots = 300;
      s.written_rows = 12, s.written_mails = 20, s.urgent_rows = 4 + r;
      s.applied_rows = 12, s.applied_mails = 20;
      w.work.push_back(s);
    }
  using depbloom::dist::CollectiveKind;
  for (int64_t i = 0; i < 3; ++i) {
    w.comm.add(CollectiveKind::all_reduce, 4000000, false);
    if (gathers) w.comm.add(CollectiveKind::all_gather_v, 600000, false);
  }
  w.urgent_exchange_share = 0.25;
  return w;
}

WorkModel tgn_work_model() {
  WorkModel wm;
  wm.model = small_tgn();
  wm.parameters = 1000;
  return wm;
}

TEST(CostModel, NoCrossRankWritesNoExchangeTime) {
  const DeviceProfile p = round_profile();
  const EpochWork local = two_rank_work(false), exchanging = two_rank_work(true);
  EXPECT_EQ(exchange_seconds(local.comm, 2, p), 0.0);
  const CostPrediction a = predict_epoch(local, tgn_work_model(), p);
  const CostPrediction b = predict_epoch(exchanging, tgn_work_model(), p);
  // 3 all-reduces of 4 MB over 2 ranks: 3 * 4e6 * 2 * (1/2) / 1e9 s.
  EXPECT_DOUBLE_EQ(a.collectives, 0.012);
  // 3 all-gather-v of 0.6 MB: (1/2) * 1.8e6 / 1e9 s more, all of it in write_back.
  EXPECT_DOUBLE_EQ(b.collectives - a.collectives, 0.0009);
  EXPECT_NEAR(b.stages[Stage::write_back] - a.stages[Stage::write_back], 0.0009, 1e-15);
  for (const Stage s : {Stage::sample, Stage::gather, Stage::memory_update, Stage::embed,
                        Stage::loss, Stage::backward, Stage::reduce, Stage::optimise})
    EXPECT_EQ(a.stages[s], b.stages[s]) << stage_name(s);
}

TEST(CostModel, TwiceTheLinkBandwidthHalvesOnlyTheCollectives) {
  DeviceProfile slow = round_profile(), fast = round_profile();
  fast.all_reduce.bandwidth *= 2, fast.all_gather.bandwidth *= 2;
  const EpochWork w = two_rank_work(true);
  const CostPrediction a = predict_epoch(w, tgn_work_model(), slow);
  const CostPrediction b = predict_epoch(w, tgn_work_model(), fast);
  EXPECT_DOUBLE_EQ(b.collectives, a.collectives / 2);
  EXPECT_DOUBLE_EQ(all_reduce_seconds(w.comm, 2, fast), all_reduce_seconds(w.comm, 2, slow) / 2);
  EXPECT_DOUBLE_EQ(exchange_seconds(w.comm, 2, fast), exchange_seconds(w.comm, 2, slow) / 2);
  for (const Stage s : {Stage::sample, Stage::gather, Stage::memory_update, Stage::refine,
                        Stage::embed, Stage::loss, Stage::backward, Stage::optimise})
    EXPECT_EQ(a.stages[s], b.stages[s]) << stage_name(s);
  EXPECT_NEAR(a.serial - b.serial, a.collectives / 2, 1e-12);
  EXPECT_EQ(a.flops.total(), b.flops.total());
}

TEST(CostModel, PipelinedNeverLongerThanSerial) {
  for (const double link : {1e6, 1e8, 1e10})
    for (const double host : {1e3, 1e6, 1e9})
      for (const bool gathers : {false, true}) {
        DeviceProfile p = round_profile();
        p.all_reduce.bandwidth = p.all_gather.bandwidth = link;
        p.all_reduce.latency = p.all_gather.latency = 5e-6;
        p.host_plan_rate = host;
        const CostPrediction m = predict_epoch(two_rank_work(gathers), tgn_work_model(), p);
        EXPECT_LE(m.pipelined, m.serial) << link << " " << host;
        EXPECT_GT(m.pipelined, 0.0);
        double sum = 0;
        for (const double s : m.stages.seconds) sum += s;
        EXPECT_NEAR(sum, m.serial, 1e-12 * m.serial);
      }
  // A slow host bounds the pipelined step: it takes the slower rank's planning time exactly,
  // rank 1's (2 + 1) x (15 + 16 + 17) roots and 3 x 300 slots at 1 per second and its 3 x 16
  // uploads at 1 us; the sample stage holds the ranks' mean, rank 0 planning 3 x 33 + 900.
  DeviceProfile p = round_profile();
  p.host_plan_rate = 1;
  const CostPrediction m = predict_epoch(two_rank_work(true), tgn_work_model(), p);
  EXPECT_EQ(m.bound, Stage::sample);
  EXPECT_NEAR(m.pipelined, 1044 + 48e-6, 1e-9);
  EXPECT_NEAR(m.stages[Stage::sample], (1044 + 999) / 2.0 + 48e-6, 1e-9);
}

TEST(CostModel, ExactSecondsOfHandMadePlans) {
  const DeviceProfile p = round_profile();
  // [100, 200] = [100, 300] x [300, 200]: 1.2e7 FLOPs at 1e9/s beat 440,000 bytes at 1e10/s.
  EXPECT_DOUBLE_EQ(gemm_seconds({100, 200, 300, 1}, p, 4), 0.012 + 1e-6);
  // [1000, 1] x [1, 1000]: 2e6 FLOPs (2 ms) but 4,008,000 bytes (0.4008 ms)... FLOPs win;
  // at a tenth of the bandwidth the bytes do.
  DeviceProfile narrow = p;
  narrow.memory_bandwidth = 1e9;
  EXPECT_DOUBLE_EQ(gemm_seconds({1000, 1000, 1, 2}, narrow, 4), 2 * (4.008e-3 + 1e-6));
  // Empty steps on one rank: Adam over 1000 parameters (8 passes of 4 bytes, 2 ops) and
  // the all-reduce's op call, nothing else.
  EpochWork idle;
  idle.steps = 4;
  idle.work.resize(4);
  const CostPrediction m = predict_epoch(idle, tgn_work_model(), p);
  EXPECT_DOUBLE_EQ(m.stages[Stage::optimise], 4 * (32000 / 1e10 + 2e-6));
  EXPECT_DOUBLE_EQ(m.stages[Stage::reduce], 4 * 1e-6);
  EXPECT_DOUBLE_EQ(m.serial, m.stages[Stage::optimise] + m.stages[Stage::reduce]);
  EXPECT_EQ(m.flops.total(), 0);
  // NCCL's ring latency over 4 ranks: 2 us + 2 (4-1) x 1 us per all-reduce call, 2 us +
  // (4-1) x 1 us per all-gather-v call; 3 calls each, plus the bandwidth terms.
  DeviceProfile ring = p;
  ring.all_reduce = {1e9, 2e-6, 1e-6};
  ring.all_gather = {1e9, 2e-6, 1e-6};
  const EpochWork w = two_rank_work(true);
  EXPECT_DOUBLE_EQ(all_reduce_seconds(w.comm, 4, ring), 3 * 8e-6 + 12e6 * 1.5 / 1e9);
  EXPECT_DOUBLE_EQ(exchange_seconds(w.comm, 4, ring), 3 * 5e-6 + 1.8e6 * 0.75 / 1e9);
  EXPECT_EQ(all_reduce_seconds(w.comm, 1, ring), 0.0);
}

}  // namespace
}  // namespace dbtraintest
