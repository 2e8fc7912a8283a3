// The real data that ships with the project: the JODIE Wikipedia file (CRLF, item ids
// already offset) must load to 9,227 nodes and 157,474 events, and CollegeMsg (SNAP) to
// 1,899 nodes and 59,835 events, with the published statistics; both through the cache too.
#include <gtest/gtest.h>

#include "data_test_util.h"
#include "depbloom/core/timer.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"

namespace depbloom::data::testing {
namespace {

TEST(RealData, WikipediaLoadsTo9227NodesAnd157474Events) {
  TempDir dir;
  LoadOptions o;
  o.cache_dir = dir.file("cache");
  EXPECT_EQ(detect_format(kWiki).format, "jodie");
  const EventStream s = load_events(kWiki, o);
  EXPECT_EQ(s.num_nodes, 9227);
  EXPECT_EQ(s.num_events(), 157474);
  EXPECT_TRUE(s.bipartite);
  EXPECT_EQ(s.num_users, 8227);
  check_event_stream(s);
  const StreamSummary m = summarize(s);
  EXPECT_EQ(m.num_items, 1000);
  EXPECT_EQ(m.unique_pairs, 18257);
  EXPECT_EQ(m.unique_timestamps, 152757);
  EXPECT_EQ(m.positive_labels, 217);
  EXPECT_EQ(m.self_loops, 0);
  EXPECT_EQ(m.t_min, 0);
  EXPECT_EQ(m.t_max, 2678373);
  // Users 0..8226 and pages 8227..9226 were already dense: the remap keeps every id.
  for (int32_t v = 0; v < s.num_nodes; ++v) ASSERT_EQ(s.original_id[v], v);
  // The file is sorted, so event_id is the row.
  EXPECT_EQ(s.event_id.back(), 157473);

  Stopwatch watch;
  const EventStream cached = load_events(kWiki, o);
  const double ms = watch.seconds() * 1e3;
  expect_same_stream(s, cached);
  std::printf("[ info     ] cached WIKI load: %.2f ms\n", ms);
}

TEST(RealData, WikipediaTgnSplitMatchesNumpyQuantiles) {
  LoadOptions o;
  o.use_cache = false;
  const EventStream s = load_events(kWiki, o);
  SplitSpec spec;
  spec.seed = 2020;
  const ChronoSplit sp = make_split(s, spec);
  // np.quantile(ts, [0.70, 0.85]) on this file (NumPy 2.4).
  EXPECT_EQ(sp.val_time, 1862652.1);
  EXPECT_EQ(sp.test_time, 2218288.5999999996);
  EXPECT_EQ(sp.val.size(), 23621u);
  EXPECT_EQ(sp.test.size(), 23621u);
  EXPECT_EQ(static_cast<int64_t>(sp.train.size()) + sp.removed_from_train, 110232);
  EXPECT_EQ(sp.held_out_nodes.size(), 922u);  // int(0.1 * 9227)
  EXPECT_GT(sp.new_node_val.size(), 0u);
  EXPECT_LT(sp.new_node_val.size(), sp.val.size());
}

TEST(RealData, CollegeMsgLoadsAsSnap) {
  LoadOptions o;
  o.use_cache = false;
  EXPECT_EQ(detect_format(kCollegeMsg).format, "snap");
  const EventStream s = load_events(kCollegeMsg, o);
  EXPECT_EQ(s.num_events(), 59835);
  EXPECT_EQ(s.num_nodes, 1899);
  EXPECT_FALSE(s.bipartite);
  const StreamSummary m = summarize(s);
  EXPECT_EQ(m.self_loops, 0);
  EXPECT_EQ(m.unique_pairs, 20296);
  EXPECT_EQ(m.t_min, 1082040961);
  EXPECT_EQ(m.t_max, 1098777142);
}

}  // namespace
}  // namespace depbloom::data::testing
