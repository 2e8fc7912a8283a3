// The cost model's terms beyond the roofline (issue 32), each with exact values on hand-made
// plans: a measured step-time curve interpolated in the batch, host planning over several
// cores, NCCL's protocol choice by message size, a latency per upload, and the wait at each
// step's collective for the slowest rank.
#include <gtest/gtest.h>

#include <vector>

#include "depbloom/costmodel/cost_model.h"

namespace dbtraintest {
namespace {

using namespace depbloom::costmodel;
using depbloom::dist::CollectiveKind;
using depbloom::train::Stage;

depbloom::model::TgnnConfig small_tgn() {
  depbloom::model::TgnnConfig m;
  m.d_mem = 4, m.d_mem_time = 3, m.d_edge = 3, m.d_emb = 4, m.d_gnn_time = 3;
  m.neighbours = 3, m.heads = 2;
  return m;
}

WorkModel tgn_model() {
  WorkModel wm;
  wm.model = small_tgn();
  wm.parameters = 1000;
  return wm;
}

// Only the host's planning costs anything: (2 + K) B roots + slots at 1 per second.
DeviceProfile planning_only() {
  DeviceProfile p;
  p.name = "planning";
  p.host_plan_rate = 1;
  return p;
}

// `ranks` ranks, 3 steps; rank r's step i has 10 + 5r + i events and 300 slots, so it plans
// 3 (10 + 5r + i) + 300 roots and slots. Step 1 ends at an exchange.
EpochWork uneven_work(int ranks) {
  EpochWork w;
  w.ranks = ranks;
  w.steps = 3;
  for (int64_t i = 0; i < 3; ++i)
    for (int r = 0; r < ranks; ++r) {
      StepWork s;
      s.events = 10 + 5 * r + i, s.negatives = 1, s.memory_rows = 30, s.updated_rows = 20;
      s.sampled_slots = 300, s.written_rows = 12, s.written_mails = 20, s.urgent_rows = 4;
      s.applied_rows = 12, s.applied_mails = 20, s.exchange = i == 1;
      w.work.push_back(s);
    }
  return w;
}

struct CurveCase {
  const char* name;
  std::vector<StepTimePoint> points;
  double batch, seconds;
};

class CurveTest : public ::testing::TestWithParam<CurveCase> {};

TEST_P(CurveTest, InterpolatesInTheBatch) {
  EXPECT_DOUBLE_EQ(curve_seconds(GetParam().points, GetParam().batch), GetParam().seconds);
}

const std::vector<StepTimePoint> kThree = {{600, 2.0}, {1200, 3.0}, {2400, 7.0}};

INSTANTIATE_TEST_SUITE_P(Points, CurveTest,
                         ::testing::Values(CurveCase{"below_first_clamps", kThree, 75, 2.0},
                                           CurveCase{"at_first", kThree, 600, 2.0},
                                           CurveCase{"between_first_two", kThree, 900, 2.5},
                                           CurveCase{"at_middle", kThree, 1200, 3.0},
                                           CurveCase{"between_last_two", kThree, 1500, 4.0},
                                           CurveCase{"above_last_extrapolates", kThree, 3000, 9.0},
                                           CurveCase{
                                               "one_point_proportional", {{100, 1.0}}, 250, 2.5},
                                           CurveCase{"one_point_below", {{100, 1.0}}, 50, 1.0},
                                           CurveCase{"no_points", {}, 100, 0.0}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CostTerms, WorkloadNames) {
  using depbloom::model::EmbeddingKind;
  using depbloom::model::MemoryKind;
  depbloom::model::TgnnConfig m;
  const struct {
    MemoryKind memory;
    EmbeddingKind embedding;
    const char* name;
  } cases[] = {{MemoryKind::gru, EmbeddingKind::attention, "tgn"},
               {MemoryKind::rnn, EmbeddingKind::jodie, "jodie"},
               {MemoryKind::transformer, EmbeddingKind::identity, "apan"},
               {MemoryKind::none, EmbeddingKind::attention, "tgat"},
               {MemoryKind::gru, EmbeddingKind::identity, ""}};
  for (const auto& c : cases) {
    m.memory = c.memory, m.embedding = c.embedding;
    EXPECT_EQ(workload_name(m), c.name);
  }
}

// With a curve for the model, each step's device stages (gather..optimise) sum to the curve
// at its batch, in the roofline's proportions; planning and the write-back keep their prices.
TEST(CostTerms, AStepCurveSetsTheDeviceStages) {
  DeviceProfile roof;
  roof.gemm_flops = 1e9, roof.memory_bandwidth = 1e10, roof.op_launch = 1e-6;
  roof.host_plan_rate = 1e6;
  DeviceProfile measured = roof;
  measured.step_curves = {{"jodie", {{1, 5.0}}}, {"tgn", {{10, 1.0}, {12, 2.0}}}};
  const EpochWork w = uneven_work(1);  // batches 10, 11, 12: 1, 1.5 and 2 s
  const CostPrediction a = predict_epoch(w, tgn_model(), roof);
  const CostPrediction b = predict_epoch(w, tgn_model(), measured);
  const Stage device[] = {Stage::gather, Stage::memory_update, Stage::refine,  Stage::embed,
                          Stage::loss,   Stage::backward,      Stage::optimise};
  double sum_b = 0;
  for (const Stage s : device) sum_b += b.stages[s];
  EXPECT_NEAR(sum_b, 4.5, 1e-12);
  // Within a step each stage keeps its roofline share (a one-step epoch: batch 10, 1 s).
  EpochWork first = w;
  first.steps = 1, first.work.resize(1);
  const CostPrediction c = predict_epoch(first, tgn_model(), roof);
  const CostPrediction d = predict_epoch(first, tgn_model(), measured);
  double sum_c = 0;
  for (const Stage s : device) sum_c += c.stages[s];
  for (const Stage s : device) EXPECT_NEAR(d.stages[s], c.stages[s] / sum_c, 1e-12);
  for (const Stage s : {Stage::sample, Stage::reduce, Stage::write_back})
    EXPECT_EQ(a.stages[s], b.stages[s]);
  // No curve for the model: the roofline.
  WorkModel apan = tgn_model();
  apan.model.memory = depbloom::model::MemoryKind::transformer;
  apan.model.embedding = depbloom::model::EmbeddingKind::identity;
  EXPECT_EQ(predict_epoch(w, apan, measured).serial, predict_epoch(w, apan, roof).serial);
}

// Planning: roots and slots over the rate per core times host_threads; each of the 16
// uploads at the upload latency (a launch when the profile has none).
TEST(CostTerms, HostThreadsAndUploadLatency) {
  const EpochWork w = uneven_work(1);  // 3 x 33 + 900 = 999 roots and slots, 48 uploads
  DeviceProfile p = planning_only();
  p.host_plan_rate = 1e6;
  EXPECT_DOUBLE_EQ(predict_epoch(w, tgn_model(), p).stages[Stage::sample], 999e-6);
  p.host_threads = 3;
  EXPECT_DOUBLE_EQ(predict_epoch(w, tgn_model(), p).stages[Stage::sample], 333e-6);
  p.op_launch = 1e-6;
  EXPECT_DOUBLE_EQ(predict_epoch(w, tgn_model(), p).stages[Stage::sample], 333e-6 + 48e-6);
  p.upload_latency = 10e-6;
  EXPECT_DOUBLE_EQ(predict_epoch(w, tgn_model(), p).stages[Stage::sample], 333e-6 + 480e-6);
}

// The dry run's counts replace the per-layer estimates' total: counted at twice the
// estimated mean, every stage's launches take twice as long (uploads and planning keep their
// prices); a device with its own memory prices the counted CUDA launches instead.
TEST(CostTerms, CountedLaunchesScaleTheEstimates) {
  DeviceProfile p;
  p.op_launch = 1e-6, p.upload_latency = 1e-3, p.host_plan_rate = 1e6;
  const EpochWork w = uneven_work(1);
  WorkModel wm = tgn_model();
  EXPECT_EQ(launch_scale(w, wm, p), 1.0);
  const CostPrediction estimated = predict_epoch(w, wm, p);
  const double uploads = 3 * 16 * 1e-3, planning = 999e-6;
  const double launches = estimated.serial - uploads - planning;  // 1 us each, 3 steps
  wm.counted_op_calls = 2 * launches / 3 / 1e-6;
  wm.counted_launches = 3 * launches / 3 / 1e-6;
  EXPECT_NEAR(launch_scale(w, wm, p), 2.0, 1e-12);
  const CostPrediction counted = predict_epoch(w, wm, p);
  EXPECT_NEAR(counted.serial, 2 * launches + uploads + planning, 1e-12);
  EXPECT_NEAR(counted.launch_scale, 2.0, 1e-12);
  for (const Stage s : {Stage::gather, Stage::embed, Stage::backward, Stage::write_back})
    EXPECT_NEAR(counted.stages[s], 2 * estimated.stages[s], 1e-12) << static_cast<int>(s);
  p.host_to_device = 1e10;
  EXPECT_NEAR(launch_scale(w, wm, p), 3.0, 1e-12);
}

// NCCL picks the protocol of the shorter time: LL (its latencies, a quarter of the bandwidth)
// for small messages, Simple for large. All-reduce over 8 ranks: 14 steps, factor 1.75.
TEST(CostTerms, ProtocolFollowsTheMessageSize) {
  LinkCost link{1e9, 8e-6, 3e-6};  // Simple: 8 + 14 x 3 = 50 us + 1.75 bytes / 1e9
  EXPECT_DOUBLE_EQ(link_call_seconds(link, 1000, 14, 1.75), 50e-6 + 1.75e-6);
  link.ll_latency = 4e-6, link.ll_hop_latency = 0.5e-6, link.ll_bandwidth_share = 0.25;
  // LL: 4 + 14 x 0.5 = 11 us + 1.75 bytes / 2.5e8. Equal at 39 us / (7e-9 - 1.75e-9 s per
  // byte): 7,429 bytes.
  const struct {
    double bytes, seconds;
  } cases[] = {{8, 11e-6 + 56e-9},    {1000, 11e-6 + 7e-6},     {7000, 11e-6 + 49e-6},
               {8000, 50e-6 + 14e-6}, {10000, 50e-6 + 17.5e-6}, {1e6, 50e-6 + 1.75e-3}};
  for (const auto& c : cases)
    EXPECT_NEAR(link_call_seconds(link, c.bytes, 14, 1.75), c.seconds, 1e-15) << c.bytes;
  // The gradients' all-reduces (10,000 bytes: Simple) are told apart from the losses' (8
  // bytes: LL); priced at the mean size (5,004 bytes) all four would take LL.
  DeviceProfile p;
  p.all_reduce = link;
  depbloom::dist::CommStats comm;
  for (int i = 0; i < 2; ++i) {
    comm.add(CollectiveKind::all_reduce, 10000, true);
    comm.add(CollectiveKind::all_reduce, 8, false);
  }
  EXPECT_NEAR(all_reduce_seconds(comm, 8, p, 10000), 2 * 67.5e-6 + 2 * (11e-6 + 56e-9), 1e-15);
  EXPECT_NEAR(all_reduce_seconds(comm, 8, p), 4 * (11e-6 + 1.75 * 5004 / 2.5e8), 1e-15);
  // Counts of another shape (calls larger than the gradients): every call at the mean.
  EXPECT_NEAR(all_reduce_seconds(comm, 8, p, 4000), all_reduce_seconds(comm, 8, p), 1e-15);
}

// Every step ends at a collective: the ranks' mean stages plus the wait for the slowest
// (max - mean), in write_back at the exchange step, in reduce at the others. Rank 1 plans
// 15 more roots than rank 0 in every step: a wait of 7.5 s per step.
TEST(CostTerms, WaitForTheSlowestRank) {
  const CostPrediction m = predict_epoch(uneven_work(2), tgn_model(), planning_only());
  EXPECT_DOUBLE_EQ(m.sync_wait, 22.5);
  EXPECT_DOUBLE_EQ(m.stages[Stage::sample], 1021.5);   // (999 + 1044) / 2
  EXPECT_DOUBLE_EQ(m.stages[Stage::reduce], 15.0);     // steps 0 and 2
  EXPECT_DOUBLE_EQ(m.stages[Stage::write_back], 7.5);  // step 1, the exchange
  EXPECT_DOUBLE_EQ(m.serial, 1044.0);                  // the slower rank's planning
  EXPECT_DOUBLE_EQ(m.pipelined, 1044.0);
  EXPECT_EQ(m.bound, Stage::sample);
  // One rank waits for nobody.
  const CostPrediction one = predict_epoch(uneven_work(1), tgn_model(), planning_only());
  EXPECT_EQ(one.sync_wait, 0.0);
  EXPECT_DOUBLE_EQ(one.serial, 999.0);
}

}  // namespace
}  // namespace dbtraintest
