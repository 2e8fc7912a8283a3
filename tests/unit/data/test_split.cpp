// Splits: NumPy's quantiles bit for bit, the TGN protocol's held-out nodes (removed from
// training, drawn deterministically from the nodes seen after val_time) and new-node
// event lists, TGL's 70/15/15 by count, and a file's own split column.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "data_test_util.h"
#include "depbloom/core/error.h"
#include "depbloom/data/loader.h"
#include "depbloom/data/split.h"

namespace depbloom::data::testing {
namespace {

// A non-bipartite stream of `n_events` events over `n_nodes` nodes at times 0, 1, 2, ...;
// node ids grow with time so that some nodes only appear late.
EventStream ramp_stream(int n_nodes, int n_events) {
  EventStream s;
  for (int e = 0; e < n_events; ++e) {
    const int reach = std::max(2, n_nodes * (e + 1) / n_events);
    s.src.push_back((e * 7) % reach);
    s.dst.push_back((e * 13 + 1) % reach);
    s.ts.push_back(e / 2);  // pairs of ties
    s.event_id.push_back(e);
  }
  s.num_nodes = n_nodes;
  s.source = "ramp";
  return s;
}

TEST(Split, QuantilesMatchNumpy) {
  // Expected values printed by NumPy 2.4 np.quantile (method 'linear').
  std::vector<double> ten(10);
  std::iota(ten.begin(), ten.end(), 0.0);
  EXPECT_EQ(timestamp_quantile(ten, 0.70), 6.3);
  EXPECT_EQ(timestamp_quantile(ten, 0.85), 7.6499999999999995);
  const std::vector<double> fib = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55.5};
  EXPECT_EQ(timestamp_quantile(fib, 0.70), 13.0);
  EXPECT_EQ(timestamp_quantile(fib, 0.85), 27.5);
  EXPECT_EQ(timestamp_quantile(fib, 0.33), 2.3000000000000003);
  EXPECT_EQ(timestamp_quantile(fib, 0.0), 0.0);
  EXPECT_EQ(timestamp_quantile(fib, 1.0), 55.5);
  EXPECT_EQ(timestamp_quantile({4.0}, 0.7), 4.0);
}

TEST(Split, TgnProtocolHoldsOutNewNodes) {
  const EventStream s = ramp_stream(200, 3000);
  SplitSpec spec;
  spec.seed = 42;
  const ChronoSplit sp = make_split(s, spec);
  EXPECT_EQ(sp.val_time, timestamp_quantile(s.ts, 0.70));
  EXPECT_EQ(sp.test_time, timestamp_quantile(s.ts, 0.85));
  std::set<int32_t> present, late;
  for (int64_t e = 0; e < s.num_events(); ++e) {
    present.insert({s.src[e], s.dst[e]});
    if (s.ts[e] > sp.val_time) late.insert({s.src[e], s.dst[e]});
  }
  // int(0.1 * n_total_unique_nodes), counting the nodes that occur in events.
  EXPECT_EQ(sp.held_out_nodes.size(), present.size() / 10);
  std::set<int32_t> held(sp.held_out_nodes.begin(), sp.held_out_nodes.end());
  for (int32_t v : held) EXPECT_TRUE(late.count(v)) << v;

  std::set<int32_t> train_nodes;
  for (int64_t e : sp.train) {
    EXPECT_LE(s.ts[e], sp.val_time);
    EXPECT_FALSE(held.count(s.src[e]) || held.count(s.dst[e]));
    train_nodes.insert({s.src[e], s.dst[e]});
  }
  int64_t early = 0;
  for (double t : s.ts) early += t <= sp.val_time;
  EXPECT_EQ(static_cast<int64_t>(sp.train.size()) + sp.removed_from_train, early);
  EXPECT_GT(sp.removed_from_train, 0);
  for (int64_t e : sp.val) EXPECT_TRUE(s.ts[e] > sp.val_time && s.ts[e] <= sp.test_time);
  for (int64_t e : sp.test) EXPECT_GT(s.ts[e], sp.test_time);
  EXPECT_EQ(static_cast<int64_t>(sp.train.size() + sp.val.size() + sp.test.size()) +
                sp.removed_from_train,
            s.num_events());

  // New nodes are all nodes absent from training (held-out ones and late arrivals).
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    EXPECT_EQ(sp.is_new_node[v] != 0, present.count(v) && !train_nodes.count(v)) << v;
  }
  auto touching_new = [&](const std::vector<int64_t>& events) {
    std::vector<int64_t> out;
    for (int64_t e : events) {
      if (!train_nodes.count(s.src[e]) || !train_nodes.count(s.dst[e])) out.push_back(e);
    }
    return out;
  };
  EXPECT_EQ(sp.new_node_val, touching_new(sp.val));
  EXPECT_EQ(sp.new_node_test, touching_new(sp.test));
  EXPECT_FALSE(sp.new_node_test.empty());
}

TEST(Split, TgnDrawDependsOnlyOnTheSeed) {
  const EventStream s = ramp_stream(200, 3000);
  SplitSpec spec;
  spec.seed = 7;
  const ChronoSplit a = make_split(s, spec), b = make_split(s, spec);
  EXPECT_EQ(a.held_out_nodes, b.held_out_nodes);
  EXPECT_EQ(a.train, b.train);
  spec.seed = 8;
  EXPECT_NE(make_split(s, spec).held_out_nodes, a.held_out_nodes);
}

TEST(Split, TglSplitsByEventCount) {
  const EventStream s = ramp_stream(20, 100);
  SplitSpec spec;
  spec.protocol = SplitProtocol::tgl;
  ChronoSplit sp = make_split(s, spec);
  EXPECT_EQ(sp.train.size(), 70u);
  EXPECT_EQ(sp.val.size(), 15u);
  EXPECT_EQ(sp.test.size(), 15u);
  EXPECT_EQ(sp.val.front(), 70);
  EXPECT_EQ(sp.test.front(), 85);
  EXPECT_TRUE(sp.held_out_nodes.empty() && sp.new_node_val.empty() && sp.new_node_test.empty());
  sp = make_split(ramp_stream(5, 7), spec);  // floor(4.9) = 4, floor(5.95) = 5
  EXPECT_EQ(sp.train.size(), 4u);
  EXPECT_EQ(sp.val.size(), 1u);
  EXPECT_EQ(sp.test.size(), 2u);
}

TEST(Split, FileSplitColumnIsUsed) {
  LoadOptions o;
  o.use_cache = false;
  const EventStream s = load_events(kFixtures + "/tgl/edges.csv", o);
  SplitSpec spec;
  spec.protocol = SplitProtocol::file;
  const ChronoSplit sp = make_split(s, spec);
  EXPECT_EQ(sp.train, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(sp.val, (std::vector<int64_t>{3}));
  EXPECT_EQ(sp.test, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(sp.val_time, 15);
  EXPECT_EQ(sp.test_time, 20);
  try {
    make_split(ramp_stream(5, 10), spec);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    EXPECT_NE(e.message().find("file needs a split column"), std::string::npos);
  }
}

TEST(Split, BadSpecsAreConfigErrors) {
  EXPECT_FALSE(split_protocol_names().parse("random").has_value());
  EXPECT_STREQ(split_protocol_name(*split_protocol_names().parse("tgl")), "tgl");
  SplitSpec spec;
  spec.val_quantile = 0.9;
  spec.test_quantile = 0.8;
  EXPECT_THROW(make_split(ramp_stream(5, 10), spec), Error);
  EXPECT_THROW(make_split(EventStream{}, SplitSpec{}), Error);
}

}  // namespace
}  // namespace depbloom::data::testing
