// TemporalCsr against a brute-force scan of the events: slot lists, prefixes, directions,
// chunked parallel builds, the time search, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "depbloom/core/error.h"
#include "depbloom/graph/temporal_csr.h"
#include "graph_test_util.h"

namespace depbloom::graph {
namespace {

using testing::Interaction;
using testing::random_stream;
using testing::scan_interactions;
using testing::StreamShape;

void expect_matches_scan(const TemporalCsr& csr, const data::EventStream& s, int64_t prefix,
                         bool undirected) {
  ASSERT_EQ(csr.num_nodes(), s.num_nodes);
  ASSERT_EQ(csr.num_events(), prefix);
  int64_t slots = 0;
  int64_t max_degree = 0;
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    const std::vector<Interaction> expected = scan_interactions(s, v, prefix, undirected);
    ASSERT_EQ(csr.degree(v), static_cast<int64_t>(expected.size())) << "node " << v;
    for (size_t j = 0; j < expected.size(); ++j) {
      const int64_t slot = csr.begin(v) + static_cast<int64_t>(j);
      const Interaction got{csr.neighbours()[slot], csr.events()[slot], csr.times()[slot]};
      ASSERT_EQ(got, expected[j]) << "node " << v << " slot " << j;
    }
    slots += csr.degree(v);
    max_degree = std::max(max_degree, csr.degree(v));
  }
  EXPECT_EQ(csr.num_slots(), slots);
  if (slots > 0) {
    ASSERT_EQ(csr.twins() != nullptr, undirected);
  }
  if (undirected) {
    // The twin of a slot of v is the same event in the list of v's neighbour.
    for (int32_t v = 0; v < s.num_nodes; ++v) {
      for (int64_t slot = csr.begin(v); slot < csr.end(v); ++slot) {
        const int64_t twin = csr.twins()[slot];
        const int32_t other = csr.neighbours()[slot];
        ASSERT_GE(twin, csr.begin(other));
        ASSERT_LT(twin, csr.end(other));
        ASSERT_EQ(csr.events()[twin], csr.events()[slot]);
        ASSERT_EQ(csr.neighbours()[twin], v);
        ASSERT_EQ(csr.twins()[twin], slot);
      }
    }
  }
  EXPECT_EQ(csr.max_degree(), max_degree);
}

TEST(TemporalCsr, UndirectedMatchesEventScan) {
  const data::EventStream s = random_stream({}, 1);
  expect_matches_scan(TemporalCsr::build(s), s, s.num_events(), true);
}

TEST(TemporalCsr, OutDirectionMatchesEventScan) {
  const data::EventStream s = random_stream({}, 2);
  expect_matches_scan(TemporalCsr::build(s, -1, CsrDirection::out), s, s.num_events(), false);
}

TEST(TemporalCsr, PrefixHoldsOnlyEarlyEvents) {
  const data::EventStream s = random_stream({}, 3);
  for (int64_t prefix : {int64_t{0}, int64_t{1}, int64_t{777}, s.num_events()}) {
    expect_matches_scan(TemporalCsr::build(s, prefix), s, prefix, true);
  }
}

TEST(TemporalCsr, EventSubsetKeepsStreamIndices) {
  const data::EventStream s = random_stream({}, 8);
  std::vector<int64_t> events;
  data::EventStream kept;  // the same events as a stream of their own
  kept.num_nodes = s.num_nodes;
  for (int64_t e = 0; e < s.num_events(); e += 1 + e % 3) {
    events.push_back(e);
    kept.src.push_back(s.src[static_cast<size_t>(e)]);
    kept.dst.push_back(s.dst[static_cast<size_t>(e)]);
    kept.ts.push_back(s.ts[static_cast<size_t>(e)]);
  }
  const TemporalCsr subset = TemporalCsr::build(s, events);
  const TemporalCsr whole = TemporalCsr::build(kept);
  EXPECT_EQ(subset.num_events(), static_cast<int64_t>(events.size()));
  ASSERT_EQ(subset.num_slots(), whole.num_slots());
  for (int64_t slot = 0; slot < whole.num_slots(); ++slot) {
    ASSERT_EQ(subset.neighbours()[slot], whole.neighbours()[slot]);
    ASSERT_EQ(subset.events()[slot], events[static_cast<size_t>(whole.events()[slot])]);
    ASSERT_EQ(subset.times()[slot], whole.times()[slot]);
  }
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{3, 3}, std::vector<int64_t>{5, 2}, std::vector<int64_t>{-1},
        std::vector<int64_t>{s.num_events()}}) {
    EXPECT_THROW(TemporalCsr::build(s, bad), Error);
  }
}

TEST(TemporalCsr, BipartiteMatchesEventScan) {
  StreamShape shape;
  shape.bipartite = true;
  shape.num_nodes = 40;
  shape.num_users = 25;
  const data::EventStream s = random_stream(shape, 4);
  expect_matches_scan(TemporalCsr::build(s), s, s.num_events(), true);
}

TEST(TemporalCsr, SameResultForAnyThreadCount) {
  StreamShape shape;
  shape.num_nodes = 300;
  shape.num_events = 20000;  // enough events for several build chunks
  const data::EventStream s = random_stream(shape, 5);
  TemporalCsr one, two, three;
  testing::with_threads(1, [&] { one = TemporalCsr::build(s); });
  testing::with_threads(2, [&] { two = TemporalCsr::build(s); });
  testing::with_threads(3, [&] { three = TemporalCsr::build(s); });
  expect_matches_scan(two, s, s.num_events(), true);
  for (const TemporalCsr* other : {&two, &three}) {
    ASSERT_EQ(other->num_slots(), one.num_slots());
    EXPECT_TRUE(std::equal(one.indptr(), one.indptr() + s.num_nodes + 1, other->indptr()));
    EXPECT_TRUE(
        std::equal(one.neighbours(), one.neighbours() + one.num_slots(), other->neighbours()));
    EXPECT_TRUE(std::equal(one.events(), one.events() + one.num_slots(), other->events()));
    EXPECT_TRUE(std::equal(one.times(), one.times() + one.num_slots(), other->times()));
  }
}

TEST(TemporalCsr, SelfLoopIsOneSlot) {
  data::EventStream s;
  s.num_nodes = 2;
  s.src = {0, 1};
  s.dst = {0, 0};
  s.ts = {1.0, 2.0};
  const TemporalCsr csr = TemporalCsr::build(s);
  EXPECT_EQ(csr.degree(0), 2);  // the self loop once, then the event from node 1
  EXPECT_EQ(csr.degree(1), 1);
  EXPECT_EQ(csr.neighbours()[csr.begin(0)], 0);
  EXPECT_EQ(csr.neighbours()[csr.begin(0) + 1], 1);
}

TEST(TemporalCsr, EarlierEndIsStrict) {
  const data::EventStream s = random_stream({}, 6);
  const TemporalCsr csr = TemporalCsr::build(s);
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    const std::vector<Interaction> all = scan_interactions(s, v, s.num_events(), true);
    std::vector<double> queries = {-1.0, 1e18};
    for (const Interaction& it : all) {
      queries.push_back(it.ts);
      queries.push_back(it.ts + 0.5);
    }
    for (double t : queries) {
      const int64_t expected =
          std::count_if(all.begin(), all.end(), [&](const Interaction& it) { return it.ts < t; });
      ASSERT_EQ(csr.earlier_end(v, t) - csr.begin(v), expected) << "node " << v << " t " << t;
    }
  }
}

TEST(TemporalCsr, TimeSearchesMatchStd) {
  std::mt19937 rng(7);
  for (int n = 0; n < 70; ++n) {
    std::vector<double> ts(static_cast<size_t>(n));
    for (double& x : ts) x = static_cast<double>(rng() % 20);
    std::sort(ts.begin(), ts.end());
    for (double t = -1.0; t <= 21.0; t += 0.5) {
      const int64_t expected = std::lower_bound(ts.begin(), ts.end(), t) - ts.begin();
      ASSERT_EQ(lower_bound_time(ts.data(), n, t), expected) << "n " << n << " t " << t;
      for (int64_t hint = 0; hint <= n; ++hint) {
        ASSERT_EQ(lower_bound_time_from(ts.data(), n, t, hint), expected)
            << "n " << n << " t " << t << " hint " << hint;
      }
    }
  }
}

void expect_data_error(const data::EventStream& s) {
  try {
    TemporalCsr::build(s);
    FAIL() << "bad stream accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data);
    EXPECT_NE(std::string(e.what()).find("event 1"), std::string::npos) << e.what();
  }
}

TEST(TemporalCsr, RejectsBadEvents) {
  data::EventStream good;
  good.num_nodes = 3;
  good.src = {0, 1, 2};
  good.dst = {1, 2, 0};
  good.ts = {1.0, 2.0, 3.0};
  EXPECT_NO_THROW(TemporalCsr::build(good));

  data::EventStream unsorted = good;
  unsorted.ts[1] = 0.5;
  expect_data_error(unsorted);
  data::EventStream nan = good;
  nan.ts[1] = std::numeric_limits<double>::quiet_NaN();
  expect_data_error(nan);
  data::EventStream big_id = good;
  big_id.dst[1] = 3;
  expect_data_error(big_id);
  data::EventStream negative_id = good;
  negative_id.src[1] = -1;
  expect_data_error(negative_id);
}

TEST(TemporalCsr, EmptyStream) {
  data::EventStream s;
  s.num_nodes = 4;
  const TemporalCsr csr = TemporalCsr::build(s);
  EXPECT_EQ(csr.num_slots(), 0);
  for (int32_t v = 0; v < 4; ++v) EXPECT_EQ(csr.earlier_end(v, 1.0), csr.begin(v));
}

}  // namespace
}  // namespace depbloom::graph
