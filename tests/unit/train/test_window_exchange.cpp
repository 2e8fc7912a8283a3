// The depbloom window end on hand-made writes (window_exchange.h): memory conflicts (newest
// time wins, a tie to the lower rank), mailbox interleaving across ranks (time order, each
// rank's claim order kept, the lower rank the newer on a tie), claims no rank still holds
// skipped, and one rank's journal: what it sends and the rings it puts back.
#include <gtest/gtest.h>

#include <vector>

#include "depbloom/train/window_exchange.h"

namespace depbloom::train {
namespace {

constexpr int kSlots = 3;

// 4 nodes, memory width 2, mail width 1 (the mail's value names it), 3 ring slots, f64.
model::NodeState small_state() {
  return model::NodeState(4, 2, 1, kSlots, DType::f64);
}

double at(const Tensor& t, int64_t i) {
  return t.data<double>()[i];
}

// A node's ring, oldest first: (mail value, time).
std::vector<std::pair<double, double>> ring(const model::NodeState& s, int node) {
  std::vector<std::pair<double, double>> out;
  const int n = s.mail_count(node);
  for (int j = 0; j < n; ++j) {
    const int64_t flat = node * kSlots + (s.ring_head(node) - n + j + kSlots) % kSlots;
    out.emplace_back(at(s.mail(), flat), at(s.mail_ts(), flat));
  }
  return out;
}

// One mail (value v at time t) to `node`, through the one write path.
void mail(model::NodeState& s, int32_t node, double v, double t, Arena& arena) {
  model::WriteSet w;
  w.mail_node = &node;
  w.mail_count = 1;
  w.mail_rows = Tensor::wrap(&v, Shape(1, 1));
  w.mail_time = Tensor::wrap(&t, Shape(1));
  s.apply(w, model::WriteFilter{}, arena);
}

TEST(WindowMerge, MemoryNewestTimeWinsTiesToTheLowerRank) {
  model::NodeState s = small_state();
  Arena arena(Device::cpu());
  // Rank 0 wrote nodes 0 (t 5) and 1 (t 3); rank 1 wrote nodes 0 (t 7), 1 (t 3) and 2 (t 1).
  std::vector<int32_t> node = {0, 1, 0, 1, 2};
  std::vector<double> rows = {10, 10, 11, 11, 20, 20, 21, 21, 22, 22};
  std::vector<double> time = {5, 3, 7, 3, 1};
  WindowWrites all;
  all.mem_counts = {2, 3};
  all.mem_node = node.data();
  all.mem_rows = Tensor::wrap(rows.data(), Shape(5, 2));
  all.mem_time = Tensor::wrap(time.data(), Shape(5));
  all.mail_nodes = {0, 0};
  std::vector<double> none;
  all.mail_rows = Tensor::wrap(none.data(), Shape(0, 1));
  all.mail_time = Tensor::wrap(none.data(), Shape(0));
  WindowMerger merger;
  EXPECT_EQ(merger.apply(all, s, arena), 3);
  EXPECT_EQ(at(s.memory(), 0), 20);  // node 0: rank 1's, t 7 > 5
  EXPECT_EQ(at(s.last_update(), 0), 7);
  EXPECT_EQ(at(s.memory(), 2), 11);  // node 1: a tie at t 3, rank 0's
  EXPECT_EQ(at(s.memory(), 4), 22);  // node 2: only rank 1 wrote it
  EXPECT_EQ(at(s.last_update(), 2), 1);
  EXPECT_EQ(at(s.memory(), 6), 0);  // node 3: untouched
}

TEST(WindowMerge, MailsInterleaveByTimeAndKeepTheNewest) {
  model::NodeState s = small_state();
  Arena arena(Device::cpu());
  mail(s, 0, 1, 1, arena);  // the window-start ring of node 0: one mail at t 1
  // Node 0: rank 0 sends (2 @ t2, 4 @ t4), rank 1 sends (3 @ t3, 5 @ t4): a tie at t 4.
  // Node 1: rank 0 claimed 5 and holds its last 3 (6 @ t6, 7 @ t7, 8 @ t8); rank 1 one
  // (9 @ t6.5). Node 2: rank 1 alone, in its claim order (an APAN neighbour mail may be older
  // than the root mail claimed before it): 12 @ t9 then 13 @ t8.
  std::vector<int32_t> triples = {0, 2, 2, 1, 5, 3,            // rank 0
                                  0, 2, 2, 1, 1, 1, 2, 2, 2};  // rank 1
  std::vector<double> rows = {2, 4, 6, 7, 8, 3, 5, 9, 12, 13};
  std::vector<double> time = {2, 4, 6, 7, 8, 3, 4, 6.5, 9, 8};
  WindowWrites all;
  all.mem_counts = {0, 0};
  std::vector<double> none;
  all.mem_rows = Tensor::wrap(none.data(), Shape(0, 2));
  all.mem_time = Tensor::wrap(none.data(), Shape(0));
  all.mail_nodes = {2, 3};
  all.mail_triples = triples.data();
  all.mail_rows = Tensor::wrap(rows.data(), Shape(10, 1));
  all.mail_time = Tensor::wrap(time.data(), Shape(10));
  WindowMerger merger;
  merger.apply(all, s, arena);
  // Node 0: 1, then 2 (r0), 3 (r1), 5 (r1), 4 (r0: the lower rank is the newer at t 4).
  using Ring = std::vector<std::pair<double, double>>;
  EXPECT_EQ(ring(s, 0), (Ring{{3, 3}, {5, 4}, {4, 4}}));
  EXPECT_EQ(s.ring_head(0), (1 + 4) % kSlots);
  // Node 1: 2 claims skipped, then 6, 9 (t 6.5), 7, 8: the newest three.
  EXPECT_EQ(ring(s, 1), (Ring{{9, 6.5}, {7, 7}, {8, 8}}));
  EXPECT_EQ(s.ring_head(1), (2 + 4) % kSlots);
  // Node 2: one rank's mails keep its claim order.
  EXPECT_EQ(ring(s, 2), (Ring{{12, 9}, {13, 8}}));
  EXPECT_EQ(s.mail_count(3), 0);
}

TEST(WindowJournal, SendsTheHeldWindowMailsAndRestoresTheStartRings) {
  model::NodeState s = small_state();
  Arena arena(Device::cpu());
  mail(s, 1, 100, 1, arena);  // window start: node 1 holds one mail
  WindowJournal journal(s);
  // The window: node 1 gets 4 mails (its ring wraps), node 2 one, node 3 a memory row.
  auto step = [&](int32_t node, double v, double t, bool memory) {
    model::WriteSet w;
    double row[2] = {v, v}, time = t;
    if (memory) {
      w.mem_node = &node;
      w.mem_count = 1;
      w.mem_rows = Tensor::wrap(row, Shape(1, 2));
      w.mem_time = Tensor::wrap(&time, Shape(1));
    } else {
      w.mail_node = &node;
      w.mail_count = 1;
      w.mail_rows = Tensor::wrap(&v, Shape(1, 1));
      w.mail_time = Tensor::wrap(&time, Shape(1));
    }
    journal.record(w, s, arena);
    s.apply(w, model::WriteFilter{}, arena);
  };
  step(1, 101, 2, false);
  step(2, 200, 2, false);
  step(1, 102, 3, false);
  step(3, 300, 3, true);
  step(1, 103, 4, false);
  step(1, 104, 5, false);
  const WindowContribution c = journal.contribution(s, arena);
  ASSERT_EQ(c.mem_count, 1);
  EXPECT_EQ(c.mem_node[0], 3);
  EXPECT_EQ(at(c.mem_rows, 0), 300);
  EXPECT_EQ(at(c.mem_time, 0), 3);
  ASSERT_EQ(c.mail_nodes, 2);
  EXPECT_EQ(std::vector<int32_t>(c.mail_triples, c.mail_triples + 6),
            (std::vector<int32_t>{1, 4, 3, 2, 1, 1}));
  ASSERT_EQ(c.mails, 4);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(at(c.mail_rows, i), (std::vector<double>{102, 103, 104, 200})[i]) << i;
  journal.restore_rings(s, arena);
  using Ring = std::vector<std::pair<double, double>>;
  EXPECT_EQ(ring(s, 1), (Ring{{100, 1}}));
  EXPECT_EQ(s.ring_head(1), 1);
  EXPECT_EQ(s.mail_count(2), 0);
  // A new window starts from nothing recorded.
  journal.clear();
  const WindowContribution empty = journal.contribution(s, arena);
  EXPECT_EQ(empty.mem_count + empty.mail_nodes + empty.mails, 0);
}

}  // namespace
}  // namespace depbloom::train
