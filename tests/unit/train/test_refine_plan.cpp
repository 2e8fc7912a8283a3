// RefinePlanner on a hand-made step: exactly which memory reads get which earlier in-batch
// events (a node's first event gets none; its third gets the second with `last`, the first
// and second with `mean`; negatives and neighbours are refined like roots; events of the
// same micro-batch stay invisible), m larger than the step, the micro-batch cut, and a
// warm plan reusing its storage.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "depbloom/train/refine_plan.h"

namespace depbloom::train {
namespace {

// Nine events among nine nodes, one time unit apart; with m = 3 the micro-batches are
// positions {0,1,2}, {3,4,5}, {6,7,8}. Node 0 has events at 0, 3 and 6; node 1 a self loop
// at 5; node 8 none.
data::EventStream hand_stream() {
  data::EventStream s;
  s.name = s.source = "hand";
  s.num_nodes = 9;
  const int32_t src[] = {0, 2, 4, 0, 3, 1, 0, 7, 5}, dst[] = {1, 3, 5, 2, 6, 1, 3, 4, 2};
  for (int e = 0; e < 9; ++e) {
    s.src.push_back(src[e]), s.dst.push_back(dst[e]), s.ts.push_back(10.0 + e);
    s.event_id.push_back(e);
  }
  for (int32_t n = 0; n < 9; ++n) s.original_id.push_back(n);
  return s;
}

using Earlier = std::vector<std::pair<int64_t, int>>;  // (position, role) ascending

struct Read {
  int32_t node, micro;
  Earlier earlier;  // what the plan must list; empty: no row
  const char* why;
};

// Reads in an order that mixes micro-batches, so the rows must come back in request order.
const std::vector<Read> kReads = {
    {0, 2, {{0, 0}, {3, 0}}, "node 0's third event (source at 0 and 3)"},
    {0, 0, {}, "node 0's first event"},
    {0, 1, {{0, 0}}, "node 0's second event"},
    {2, 1, {{1, 0}}, "dst of event 3: source of event 1"},
    {3, 1, {{1, 1}}, "src of event 4: destination of event 1"},
    {1, 1, {{0, 1}}, "the self loop 5 reads node 1: destination of event 0"},
    {6, 1, {}, "node 6's event 4 is in the same micro-batch"},
    {5, 0, {}, "node 5's event 2 is in the same micro-batch"},
    {3, 2, {{1, 1}, {4, 0}}, "dst of event 6"},
    {7, 2, {}, "node 7's only event is event 7"},
    {4, 2, {{2, 0}}, "dst of event 7"},
    {5, 2, {{2, 1}}, "src of event 8"},
    {2, 2, {{1, 0}, {3, 1}}, "dst of event 8"},
    {6, 2, {{4, 1}}, "a negative in micro-batch 2: node 6's event 4"},
    {8, 1, {}, "a negative without events"},
    {1, 2, {{0, 1}, {5, 1}}, "a neighbour read: event 0 and the self loop 5 once"},
    {0, 2, {{0, 0}, {3, 0}}, "node 0 read twice by micro-batch 2: a row each"},
};

class RefinePlanTest : public ::testing::Test {
 protected:
  data::EventStream stream = hand_stream();
  RefinePlanner planner{stream};
  std::vector<int64_t> events = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int64_t> bounds;
  std::vector<int32_t> node, micro;
  RefinePlan plan;

  void run(RefineAggregate aggregate, int32_t m = 3) {
    cut_micro_batches(static_cast<int64_t>(events.size()), m, bounds);
    node.clear(), micro.clear();
    for (const Read& r : kReads) node.push_back(r.node), micro.push_back(r.micro);
    planner.plan(plan, events.data(), static_cast<int64_t>(events.size()), bounds, node.data(),
                 micro.data(), static_cast<int64_t>(node.size()), aggregate);
  }
  // The position and role of term t's message.
  int64_t pos_of(int64_t t) const { return plan.msg_pos[static_cast<size_t>(plan.term_msg[t])]; }
  int8_t role_of(int64_t t) const { return plan.msg_role[static_cast<size_t>(plan.term_msg[t])]; }
  Earlier earlier_of(int64_t row) const {
    Earlier e;
    for (int64_t i = plan.begin[row]; i < plan.begin[row] + plan.count[row]; ++i)
      e.emplace_back(plan.event_pos[static_cast<size_t>(i)],
                     plan.event_role[static_cast<size_t>(i)]);
    return e;
  }
};

TEST_F(RefinePlanTest, ListsExactlyTheEarlierInBatchEventsOfEachRead) {
  run(RefineAggregate::last);
  ASSERT_EQ(bounds, (std::vector<int64_t>{0, 3, 6, 9}));
  int64_t row = 0;
  for (size_t i = 0; i < kReads.size(); ++i) {
    const Read& r = kReads[i];
    SCOPED_TRACE(testing::Message() << "read " << i << ": " << r.why);
    if (r.earlier.empty()) continue;
    ASSERT_LT(row, plan.rows());
    EXPECT_EQ(plan.request[row], static_cast<int64_t>(i));
    EXPECT_EQ(earlier_of(row), r.earlier);
    EXPECT_EQ(plan.latest[row], r.earlier.back().first);
    EXPECT_EQ(plan.latest_time[row], 10.0 + static_cast<double>(r.earlier.back().first));
    ++row;
  }
  EXPECT_EQ(row, plan.rows()) << "rows beyond the reads with earlier events";
}

TEST_F(RefinePlanTest, LastTakesTheLatestEarlierEvent) {
  run(RefineAggregate::last);
  ASSERT_EQ(plan.terms(), plan.rows());
  for (int64_t t = 0; t < plan.terms(); ++t) {
    const int32_t row = plan.term_row[t];
    EXPECT_EQ(row, t);
    EXPECT_EQ(pos_of(t), plan.latest[row]);
    EXPECT_EQ(role_of(t), earlier_of(row).back().second);
    EXPECT_EQ(plan.term_weight[t], 1.0);
  }
  // Node 0's third event (read 0, row 0) gets its second: event 3, as its source.
  EXPECT_EQ(pos_of(0), 3);
  EXPECT_EQ(role_of(0), 0);
}

TEST_F(RefinePlanTest, MeanWeighsEveryEarlierEventEqually) {
  run(RefineAggregate::mean);
  int64_t t = 0;
  for (int64_t row = 0; row < plan.rows(); ++row) {
    const Earlier e = earlier_of(row);
    for (const auto& [pos, role] : e) {
      ASSERT_LT(t, plan.terms());
      EXPECT_EQ(plan.term_row[t], row);
      EXPECT_EQ(pos_of(t), pos);
      EXPECT_EQ(role_of(t), role);
      EXPECT_DOUBLE_EQ(plan.term_weight[t], 1.0 / static_cast<double>(e.size()));
      ++t;
    }
  }
  EXPECT_EQ(t, plan.terms());
  // Node 0's third event: its first and second events, half each.
  EXPECT_EQ(pos_of(0), 0);
  EXPECT_EQ(pos_of(1), 3);
  EXPECT_EQ(plan.term_weight[0], 0.5);
  EXPECT_EQ(plan.term_row[1], 0);
}

// Three events and m = 8: three micro-batches of one event, so each event sees all earlier
// ones. Node 0: 0 -> 1, 1 -> 0, 0 -> 2.
TEST_F(RefinePlanTest, MoreMicroBatchesThanEvents) {
  stream.src = {0, 1, 0};
  stream.dst = {1, 0, 2};
  stream.ts = {5, 6, 7};
  events = {0, 1, 2};
  cut_micro_batches(3, 8, bounds);
  ASSERT_EQ(bounds, (std::vector<int64_t>{0, 1, 2, 3}));
  node = {0, 0, 0, 2, 1};
  micro = {0, 1, 2, 2, 2};
  planner.plan(plan, events.data(), 3, bounds, node.data(), micro.data(), 5, RefineAggregate::mean);
  ASSERT_EQ(plan.rows(), 3);
  EXPECT_EQ(plan.request, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(earlier_of(0), (Earlier{{0, 0}}));
  EXPECT_EQ(earlier_of(1), (Earlier{{0, 0}, {1, 1}}));
  EXPECT_EQ(earlier_of(2), (Earlier{{0, 1}, {1, 0}}));
  EXPECT_EQ(plan.latest_time[1], 6.0);
}

TEST_F(RefinePlanTest, OneMicroBatchRefinesNothing) {
  cut_micro_batches(9, 1, bounds);
  ASSERT_EQ(bounds, (std::vector<int64_t>{0, 9}));
  // The table's nodes, every read in the one micro-batch.
  for (const Read& r : kReads) node.push_back(r.node), micro.push_back(0);
  planner.plan(plan, events.data(), 9, bounds, node.data(), micro.data(),
               static_cast<int64_t>(node.size()), RefineAggregate::mean);
  EXPECT_EQ(plan.rows(), 0);
  EXPECT_EQ(plan.terms(), 0);
  EXPECT_EQ(plan.event_pos.size(), 17u);  // 18 endpoints, the self loop once
}

TEST_F(RefinePlanTest, RejectsReadsOutsideTheCut) {
  cut_micro_batches(9, 3, bounds);
  const int32_t bad_micro[] = {3}, bad_node[] = {9}, ok_node[] = {0}, ok_micro[] = {0};
  EXPECT_ANY_THROW(
      planner.plan(plan, events.data(), 9, bounds, ok_node, bad_micro, 1, RefineAggregate::last));
  EXPECT_ANY_THROW(
      planner.plan(plan, events.data(), 9, bounds, bad_node, ok_micro, 1, RefineAggregate::last));
  const std::vector<int64_t> short_bounds = {0, 3, 6};
  EXPECT_ANY_THROW(planner.plan(plan, events.data(), 9, short_bounds, ok_node, ok_micro, 1,
                                RefineAggregate::last));
}

// Each mail is one message, listed once in the order of its first term and named by every
// term that aggregates it.
TEST_F(RefinePlanTest, MessagesAreListedOnceAndSharedByTheirTerms) {
  for (RefineAggregate aggregate : {RefineAggregate::last, RefineAggregate::mean}) {
    run(aggregate);
    std::set<std::pair<int64_t, int8_t>> seen;
    int32_t next = 0;
    for (int64_t t = 0; t < plan.terms(); ++t) {
      const int32_t msg = plan.term_msg[t];
      ASSERT_TRUE(msg >= 0 && msg < plan.messages()) << t;
      EXPECT_LE(msg, next) << "messages out of first-term order at term " << t;
      if (msg == next) ++next;
      seen.insert({pos_of(t), role_of(t)});
    }
    EXPECT_EQ(next, plan.messages());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), plan.messages()) << "a mail listed twice";
    EXPECT_LT(plan.messages(), plan.terms()) << "the fixture shares no message";
  }
}

// Planning the same step again (and a smaller one in between) gives the same plan in the
// same storage: nothing is reallocated once warm.
TEST_F(RefinePlanTest, AWarmPlanReusesItsStorage) {
  run(RefineAggregate::mean);
  const RefinePlan first = plan;
  const auto* rows_at = plan.request.data();
  const auto* terms_at = plan.term_weight.data();
  const auto* events_at = plan.event_pos.data();
  const int32_t one_node[] = {0}, one_micro[] = {1};
  planner.plan(plan, events.data(), 9, bounds, one_node, one_micro, 1, RefineAggregate::last);
  EXPECT_EQ(plan.rows(), 1);
  run(RefineAggregate::mean);
  EXPECT_EQ(plan.request, first.request);
  EXPECT_EQ(plan.term_msg, first.term_msg);
  EXPECT_EQ(plan.msg_pos, first.msg_pos);
  EXPECT_EQ(plan.event_pos, first.event_pos);
  EXPECT_EQ(plan.request.data(), rows_at);
  EXPECT_EQ(plan.term_weight.data(), terms_at);
  EXPECT_EQ(plan.event_pos.data(), events_at);
}

TEST(CutMicroBatches, EqualSizesEarlierOnesTakingTheRemainder) {
  const struct {
    int64_t count;
    int32_t m;
    std::vector<int64_t> bounds;
  } cases[] = {
      {10, 4, {0, 3, 6, 8, 10}},
      {9, 3, {0, 3, 6, 9}},
      {7, 2, {0, 4, 7}},
      {5, 1, {0, 5}},
      {3, 8, {0, 1, 2, 3}},
      {1, 4, {0, 1}},
      {0, 4, {0, 0}},
      {4800, 8, {0, 600, 1200, 1800, 2400, 3000, 3600, 4200, 4800}},
  };
  std::vector<int64_t> bounds;
  for (const auto& c : cases) {
    cut_micro_batches(c.count, c.m, bounds);
    EXPECT_EQ(bounds, c.bounds) << c.count << " events, m = " << c.m;
  }
  EXPECT_ANY_THROW(cut_micro_batches(5, 0, bounds));
}

}  // namespace
}  // namespace depbloom::train
