// The one write-back path, model::NodeState::apply: a step's collected WriteSet applied in
// one go, and the same WriteSet applied as two halves (a filter holds back the writes of
// random nodes, a later apply with the opposite mark applies them) leave the node state bit
// for bit equal (memory, last update, mails, mail times, ring bookkeeping) over a stream of
// steps, with ring wrap-around inside a step, APAN's neighbour deliveries and the TGN
// authors' message times; an explicit identity claim order equals none.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "depbloom/graph/temporal_csr.h"
#include "depbloom/train/batch_plan.h"
#include "depbloom/train/step_io.h"
#include "unit/train/tiny_stream.h"

namespace depbloom::train {
namespace {

constexpr int64_t kDMem = 4;
constexpr int kSlots = 3;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

void expect_same_state(const model::NodeState& a, const model::NodeState& b) {
  EXPECT_TRUE(same_bytes(a.memory(), b.memory()));
  EXPECT_TRUE(same_bytes(a.last_update(), b.last_update()));
  EXPECT_TRUE(same_bytes(a.mail(), b.mail()));
  EXPECT_TRUE(same_bytes(a.mail_ts(), b.mail_ts()));
  EXPECT_EQ(a.ring_heads(), b.ring_heads());
  EXPECT_EQ(a.ring_counts(), b.ring_counts());
}

class WriteSetApply : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(WriteSetApply, HeldBackWritesAppliedLaterGiveTheSameState) {
  const auto [deliver, dt_at_event] = GetParam();
  const data::EventStream stream = dbtraintest::tiny_stream(5, 200, 12, 3);
  const graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  const graph::RecentSampler sampler(csr, 3, 1);
  OwnedTensor edge_feat(DType::f32, Shape(stream.num_events(), 3));
  std::memcpy(edge_feat.view().raw(), stream.edge_feat.data(), edge_feat.view().bytes());
  PlanConfig cfg;
  cfg.hops = 1;
  cfg.neighbours = 3;
  cfg.deliver_to_neighbours = deliver;
  cfg.mail_mask = true;
  cfg.mail_dt_at_event = dt_at_event;
  cfg.skip_empty_mailbox = true;  // rows reordered by stage(): collect must map them back
  BatchPlanner planner(stream, cfg);
  BatchStager stager(cfg, DType::f32);
  const int64_t d_mail = 2 * kDMem + 3;
  model::NodeState whole(stream.num_nodes, kDMem, d_mail, kSlots),
      halves(stream.num_nodes, kDMem, d_mail, kSlots);
  StepArena arena(Device::cpu());
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<int64_t> events(static_cast<size_t>(stream.num_events()));
  std::iota(events.begin(), events.end(), 0);
  std::vector<uint8_t> held(static_cast<size_t>(stream.num_nodes));
  const int64_t batch = 25;
  int64_t held_writes = 0;
  for (int64_t begin = 0; begin < stream.num_events(); begin += batch) {
    arena.reset();
    std::vector<int32_t> negatives(static_cast<size_t>(batch));
    for (auto& n : negatives) n = static_cast<int32_t>(gen() % 12);
    BatchPlan plan;
    planner.plan_batch(plan, events.data() + begin, batch, negatives.data(), 1, 0, &sampler);
    const StagedBatch staged = stager.stage(plan, whole, arena);
    // Random "updated memory" and last-update rows stand for the model's outputs.
    const int64_t rows = plan.memory_rows();
    Tensor updated = arena.device().alloc(DType::f32, Shape(rows, kDMem));
    Tensor last = arena.device().alloc(DType::f32, Shape(rows));
    for (int64_t i = 0; i < rows * kDMem; ++i) updated.data<float>()[i] = u(gen);
    for (int64_t i = 0; i < rows; ++i) last.data<float>()[i] = u(gen);
    const model::WriteSet writes =
        collect(plan, staged, cfg, updated, last, edge_feat.view(), arena);
    EXPECT_EQ(writes.mail_count, plan.writes.mail_count());
    whole.apply(writes, model::WriteFilter{}, arena.device());
    for (auto& h : held) h = static_cast<uint8_t>(gen() % 3 == 0);
    const int64_t now = halves.apply(writes, {held.data(), 0}, arena.device());
    const int64_t later = halves.apply(writes, {held.data(), 1}, arena.device());
    held_writes += later;
    EXPECT_GT(now, 0);
    expect_same_state(whole, halves);
  }
  EXPECT_GT(held_writes, 0);  // the filter held some writes back
}

INSTANTIATE_TEST_SUITE_P(Variants, WriteSetApply,
                         ::testing::Values(std::make_pair(false, false),
                                           std::make_pair(true, false),
                                           std::make_pair(true, true)));

// A later mail of the same node wins a ring slot it wraps onto, in claim order; an explicit
// identity order is the default order; another order gives another state.
TEST(WriteSetApply, ClaimOrderDecidesWhichMailWins) {
  model::NodeState a(3, 1, 1, 2), b(3, 1, 1, 2), c(3, 1, 1, 2);
  Arena arena;
  const int32_t mail_node[] = {1, 1, 1, 2};
  float rows[] = {10, 11, 12, 20}, times[] = {1, 2, 3, 4};
  const int64_t identity[] = {0, 1, 2, 3}, reversed[] = {3, 2, 1, 0};
  model::WriteSet w;
  w.mail_node = mail_node;
  w.mail_count = 4;
  w.mail_rows = Tensor::wrap(rows, Shape(4, 1));
  w.mail_time = Tensor::wrap(times, Shape(4));
  EXPECT_EQ(a.apply(w, {}, arena), 3);  // node 1's third mail overwrote its first
  w.mail_order = identity;
  b.apply(w, {}, arena);
  expect_same_state(a, b);
  EXPECT_EQ(a.mail().data<float>()[2], 12.0f);  // node 1, slot 0: the third mail
  EXPECT_EQ(a.mail().data<float>()[3], 11.0f);  // node 1, slot 1: the second
  w.mail_order = reversed;
  c.apply(w, {}, arena);
  EXPECT_EQ(c.mail().data<float>()[2], 10.0f);
  EXPECT_EQ(c.mail().data<float>()[3], 11.0f);
}

}  // namespace
}  // namespace depbloom::train
