// WindowPlan on hand-made streams whose parts are known: two separate groups of nodes,
// hash's node mod P, the rebalancing pass and the steps of unequal parts, one rank as one
// device cuts batches, determinism and the config errors.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/partition/window_plan.h"
#include "plan_checks.h"

namespace depbloom::partition {
namespace {

// Events (src, dst) at times 1, 2, 3, ...
data::EventStream stream_of(const std::vector<std::pair<int32_t, int32_t>>& pairs, int32_t nodes) {
  data::EventStream s;
  s.num_nodes = nodes;
  for (size_t e = 0; e < pairs.size(); ++e) {
    s.src.push_back(pairs[e].first);
    s.dst.push_back(pairs[e].second);
    s.ts.push_back(double(e + 1));
    s.event_id.push_back(static_cast<int64_t>(e));
  }
  return s;
}

std::vector<int64_t> all_rows(const data::EventStream& s) {
  std::vector<int64_t> rows(static_cast<size_t>(s.num_events()));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

PartitionConfig config_with(PartitionMethod method, int64_t window_steps, double imbalance) {
  PartitionConfig c;
  c.method = method;
  c.window_steps = window_steps;
  c.imbalance = imbalance;
  return c;
}

// Nodes {0, 1, 2} and {3, 4, 5} never meet: two windows of 4 events, batch 2 on 2 ranks.
const data::EventStream kTwoGroups =
    stream_of({{0, 1}, {3, 4}, {1, 2}, {4, 5}, {0, 2}, {3, 5}, {0, 1}, {3, 4}}, 6);

TEST(WindowPlan, SeparateGroupsGetOnePartEachWithMetisAndFennel) {
  for (PartitionMethod method : {PartitionMethod::metis, PartitionMethod::fennel}) {
    if (method == PartitionMethod::metis && !metis_available()) continue;
    SCOPED_TRACE(partition_method_name(method));
    const std::vector<int64_t> train = all_rows(kTwoGroups);
    const WindowPlan plan =
        make_window_plan(kTwoGroups, train, 2, 2, config_with(method, 2, 1.05), 7);
    dbpartitiontest::expect_valid_plan(plan, kTwoGroups, train);
    ASSERT_EQ(plan.windows.size(), 2u);
    // The part that runs node 0's group in the first window runs it in the second.
    const int first = plan.windows[0].parts[0].events.front() == 0 ? 0 : 1;
    const std::vector<std::vector<int64_t>> expected = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
    for (size_t w = 0; w < 2; ++w) {
      const PlanWindow& window = plan.windows[w];
      EXPECT_EQ(window.parts[size_t(first)].events, expected[2 * w]);
      EXPECT_EQ(window.parts[size_t(1 - first)].events, expected[2 * w + 1]);
      EXPECT_EQ(window.stats.cut_events, 0);
      EXPECT_EQ(window.stats.migrated_nodes, 0);
      EXPECT_EQ(window.stats.nodes, 6);
      EXPECT_DOUBLE_EQ(window.stats.imbalance, 1.0);
      EXPECT_EQ(window.steps, 2);  // 2 events a part, a rank's batch is 1
    }
  }
}

TEST(WindowPlan, HashPutsNodeModRanksAndEventsWithTheLessLoadedEndpoint) {
  const std::vector<int64_t> train = all_rows(kTwoGroups);
  const WindowPlan plan =
      make_window_plan(kTwoGroups, train, 2, 2, config_with(PartitionMethod::hash, 2, 1.05), 7);
  dbpartitiontest::expect_valid_plan(plan, kTwoGroups, train);
  // Every event joins an even and an odd node: all cut. Running counts (part 0, part 1):
  // 0-1 ties -> src's 0; 3-4 ties -> src's 1; 1-2 ties -> src's 1; 4-5: part 0 has fewer.
  const PlanWindow& first = plan.windows[0];
  EXPECT_EQ(first.parts[0].events, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(first.parts[1].events, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(first.stats.cut_events, 4);
  // The second window: 0-2 and 3-5 stay inside a part, 0-1 and 3-4 are cut.
  EXPECT_EQ(plan.windows[1].stats.cut_events, 2);
  EXPECT_EQ(plan.windows[1].stats.migrated_nodes, 0);  // node mod P never moves
  EXPECT_EQ(plan.totals().cut_events, 6);
}

TEST(WindowPlan, RebalancingMovesTheEarliestEventsAndShortPartsSpreadOverTheSteps) {
  // Ten events among even nodes: hash puts them all in part 0; imbalance 1.5 allows 7.
  const data::EventStream s = stream_of(
      {{0, 2}, {2, 4}, {4, 6}, {0, 4}, {2, 6}, {0, 6}, {0, 2}, {2, 4}, {4, 6}, {0, 4}}, 8);
  const std::vector<int64_t> train = all_rows(s);
  const WindowPlan plan =
      make_window_plan(s, train, 2, 2, config_with(PartitionMethod::hash, 5, 1.5), 0);
  dbpartitiontest::expect_valid_plan(plan, s, train);
  ASSERT_EQ(plan.windows.size(), 1u);
  const PlanWindow& w = plan.windows[0];
  EXPECT_EQ(w.parts[0].events, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(w.parts[1].events, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(w.stats.imbalance, 1.4);
  // One device's 5 steps of 2 events: the longest part fills them in chunks of 2 (above a
  // rank's batch of 1, within the imbalance), the other spreads 3 events over them.
  EXPECT_EQ(w.steps, 5);
  EXPECT_EQ(w.parts[0].step_offsets, (std::vector<int64_t>{0, 2, 4, 6, 7, 7}));
  EXPECT_EQ(w.parts[1].step_offsets, (std::vector<int64_t>{0, 0, 1, 1, 2, 3}));
}

TEST(WindowPlan, OneRankCutsBatchesAsOneDevice) {
  const data::EventStream s = stream_of(std::vector<std::pair<int32_t, int32_t>>(25, {0, 1}), 2);
  const std::vector<int64_t> train = all_rows(s);
  const WindowPlan plan =
      make_window_plan(s, train, 1, 4, config_with(PartitionMethod::fennel, 3, 1.05), 0);
  dbpartitiontest::expect_valid_plan(plan, s, train);
  ASSERT_EQ(plan.windows.size(), 3u);  // 12 + 12 + 1 events
  EXPECT_EQ(plan.windows[0].parts[0].step_offsets, (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(plan.windows[2].parts[0].step_offsets, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(plan.totals().steps, 7);  // ceil(25 / 4)
}

TEST(WindowPlan, SameInputsSamePlan) {
  const data::EventStream s = stream_of(
      {{0, 5}, {1, 6}, {2, 5}, {0, 6}, {3, 7}, {1, 5}, {4, 7}, {2, 6}, {3, 5}, {0, 7}, {4, 6}}, 8);
  const std::vector<int64_t> train = all_rows(s);
  for (PartitionMethod method :
       {PartitionMethod::metis, PartitionMethod::fennel, PartitionMethod::hash}) {
    if (method == PartitionMethod::metis && !metis_available()) continue;
    const PartitionConfig c = config_with(method, 2, 1.05);
    const WindowPlan a = make_window_plan(s, train, 3, 3, c, 42);
    const WindowPlan b = make_window_plan(s, train, 3, 3, c, 42);
    ASSERT_EQ(a.windows.size(), b.windows.size());
    for (size_t w = 0; w < a.windows.size(); ++w)
      for (size_t p = 0; p < 3; ++p) {
        EXPECT_EQ(a.windows[w].parts[p].events, b.windows[w].parts[p].events);
        EXPECT_EQ(a.windows[w].parts[p].step_offsets, b.windows[w].parts[p].step_offsets);
      }
    dbpartitiontest::expect_valid_plan(a, s, train);
  }
}

TEST(WindowPlan, BadConfigsAreConfigErrorsNamingTheKey) {
  auto error_of = [&](const PartitionConfig& c) -> std::string {
    try {
      check_partition_config(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::config);
      return e.message();
    }
    return "";
  };
  EXPECT_NE(error_of(config_with(PartitionMethod::hash, 0, 1.05)).find("partition.window_steps"),
            std::string::npos);
  EXPECT_NE(error_of(config_with(PartitionMethod::hash, 8, 0.9)).find("partition.imbalance"),
            std::string::npos);
  const std::string metis = error_of(config_with(PartitionMethod::metis, 8, 1.05));
  if (metis_available())
    EXPECT_EQ(metis, "");
  else
    EXPECT_NE(metis.find("no METIS"), std::string::npos) << metis;
}

TEST(WindowPlan, MethodNamesRoundTrip) {
  for (const std::string& name : partition_method_names().names())
    EXPECT_EQ(partition_method_name(*partition_method_names().parse(name)), name);
  EXPECT_FALSE(partition_method_names().parse("kway").has_value());
}

}  // namespace
}  // namespace depbloom::partition
