// The strict strategy's write-back halves: BatchPlanner::collect_writes followed by
// apply_writes must leave a node state bit for bit where write_back leaves it (memory, last
// update, mails, mail times and ring bookkeeping), with ring wrap-around inside a batch,
// APAN's neighbour deliveries and the TGN authors' message times included. (Slices of a
// batch on several ranks: tests/mpi/test_strict_training.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/graph/temporal_csr.h"
#include "depbloom/train/batch_planner.h"
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

struct Fixture {
  data::EventStream stream = dbtraintest::tiny_stream(5, 200, 12, 3);
  graph::TemporalCsr csr = graph::TemporalCsr::build(stream);
  graph::RecentSampler sampler{csr, 3, 1};
  OwnedTensor edge_feat{DType::f32, Shape(stream.num_events(), 3)};
  std::mt19937 gen{7};

  Fixture() {
    std::memcpy(edge_feat.view().raw(), stream.edge_feat.data(), edge_feat.view().bytes());
  }

  // Random "updated memory" and last-update rows for the planned batch.
  void fake_outputs(Arena& arena, int64_t rows, Tensor& updated, Tensor& last) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    updated = arena.alloc(DType::f32, Shape(rows, kDMem));
    last = arena.alloc(DType::f32, Shape(rows));
    for (int64_t i = 0; i < rows * kDMem; ++i) updated.data<float>()[i] = u(gen);
    for (int64_t i = 0; i < rows; ++i) last.data<float>()[i] = u(gen);
  }
};

PlannerConfig planner_config(bool deliver, bool dt_at_event) {
  PlannerConfig pc;
  pc.hops = 1;
  pc.neighbours = 3;
  pc.deliver_to_neighbours = deliver;
  pc.mail_mask = true;
  pc.mail_dt_at_event = dt_at_event;
  return pc;
}

class StrictWrites : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(StrictWrites, CollectThenApplyIsWriteBack) {
  Fixture f;
  const auto [deliver, dt_at_event] = GetParam();
  const PlannerConfig pc = planner_config(deliver, dt_at_event);
  BatchPlanner planner(f.stream, &f.sampler, pc, DType::f32, Device::cpu());
  const int64_t d_mail = 2 * kDMem + 3;
  model::NodeState a(f.stream.num_nodes, kDMem, d_mail, kSlots),
      b(f.stream.num_nodes, kDMem, d_mail, kSlots);
  Arena arena;
  std::vector<int64_t> events(static_cast<size_t>(f.stream.num_events()));
  for (size_t e = 0; e < events.size(); ++e) events[e] = static_cast<int64_t>(e);
  const int64_t batch = 25;
  for (int64_t begin = 0; begin < f.stream.num_events(); begin += batch) {
    arena.reset();
    std::vector<int32_t> negatives(static_cast<size_t>(batch));
    for (auto& n : negatives) n = static_cast<int32_t>(f.gen() % 12);
    planner.plan(events.data() + begin, batch, negatives.data(), 1, 0, a);
    Tensor updated, last;
    f.fake_outputs(arena, planner.memory_rows(), updated, last);
    const Tensor rlu = dt_at_event ? last : Tensor{};
    planner.write_back(arena, a, updated, f.edge_feat.view(), rlu);
    BatchPlanner::Writes w = planner.collect_writes(arena, b, updated, f.edge_feat.view(), rlu);
    EXPECT_EQ(w.root_mails, 2 * batch);
    planner.apply_writes(arena, b, w.mem_node, w.mem_count, w.mem_rows, w.mem_time, w.mail_node,
                         nullptr, w.mail_count(), w.mail_rows, w.mail_time);
    expect_same_state(a, b);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, StrictWrites,
                         ::testing::Values(std::make_pair(false, false),
                                           std::make_pair(true, false),
                                           std::make_pair(true, true)));

}  // namespace
}  // namespace depbloom::train
