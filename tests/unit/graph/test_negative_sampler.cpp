// Training and evaluation negatives: ranges (item side when bipartite), determinism per
// seed whatever the batching or thread count, and the historical / inductive pools checked
// against brute-force scans of the stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "depbloom/core/error.h"
#include "depbloom/graph/negative_sampler.h"
#include "graph_test_util.h"

namespace depbloom::graph {
namespace {

using testing::random_stream;
using testing::StreamShape;

StreamShape bipartite_shape() {
  StreamShape shape;
  shape.bipartite = true;
  shape.num_users = 30;
  shape.num_nodes = 90;
  shape.num_events = 3000;
  return shape;
}

TEST(TrainNegativeSampler, BipartiteDrawsItems) {
  const data::EventStream s = random_stream(bipartite_shape(), 31);
  TrainNegativeSampler sampler(s, 7);
  std::vector<int32_t> neg(3000 * 2);
  sampler.sample(0, 3000, 2, 0, neg.data());
  std::set<int32_t> seen(neg.begin(), neg.end());
  EXPECT_GE(*seen.begin(), 30);
  EXPECT_LT(*seen.rbegin(), 90);
  EXPECT_EQ(seen.size(), 60u);  // 6000 draws over 60 items reach all of them
}

TEST(TrainNegativeSampler, NonBipartiteDrawsAllNodes) {
  const data::EventStream s = random_stream({}, 32);
  TrainNegativeSampler sampler(s, 7);
  std::vector<int32_t> neg(2000);
  sampler.sample(0, 2000, 1, 0, neg.data());
  std::set<int32_t> seen(neg.begin(), neg.end());
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), s.num_nodes - 1);
}

TEST(TrainNegativeSampler, FixedByEventWhateverTheBatching) {
  TrainNegativeSampler sampler(DestinationRange{10, 1000}, 3);
  std::vector<int32_t> whole(5000 * 3), pieces(5000 * 3), threads2(5000 * 3);
  testing::with_threads(1, [&] { sampler.sample(100, 5000, 3, 4, whole.data()); });
  testing::with_threads(2, [&] { sampler.sample(100, 5000, 3, 4, threads2.data()); });
  for (int64_t first = 0; first < 5000; first += 600) {
    const int64_t count = std::min<int64_t>(600, 5000 - first);
    sampler.sample(100 + first, count, 3, 4, pieces.data() + first * 3);
  }
  EXPECT_EQ(whole, pieces);
  EXPECT_EQ(whole, threads2);
  for (int64_t i = 0; i < 5000; i += 97) {
    for (int32_t j = 0; j < 3; ++j) EXPECT_EQ(sampler.draw(100 + i, j, 4), whole[i * 3 + j]);
  }
  const std::vector<int64_t> some = {100, 2345, 5099};
  std::vector<int32_t> listed(9);
  sampler.sample_events(some.data(), 3, 3, 4, listed.data());
  for (int64_t r = 0; r < 3; ++r) {
    for (int32_t j = 0; j < 3; ++j) EXPECT_EQ(listed[r * 3 + j], whole[(some[r] - 100) * 3 + j]);
  }
  std::vector<int32_t> other_epoch(5000 * 3), other_seed(5000 * 3);
  sampler.sample(100, 5000, 3, 5, other_epoch.data());
  TrainNegativeSampler(DestinationRange{10, 1000}, 8).sample(100, 5000, 3, 4, other_seed.data());
  EXPECT_NE(whole, other_epoch);
  EXPECT_NE(whole, other_seed);
}

std::vector<int64_t> event_range(int64_t begin, int64_t end) {
  std::vector<int64_t> events(static_cast<size_t>(end - begin));
  std::iota(events.begin(), events.end(), begin);
  return events;
}

// Brute-force pools of event i = (u, v, t) of `s`.
struct Pools {
  std::set<int32_t> now, historical, inductive;
};

Pools scan_pools(const data::EventStream& s, int64_t i, const std::vector<uint8_t>& in_history) {
  Pools p;
  const int32_t u = s.src[static_cast<size_t>(i)];
  const double t = s.ts[static_cast<size_t>(i)];
  for (int64_t e = 0; e < s.num_events(); ++e) {
    const size_t x = static_cast<size_t>(e);
    if (s.src[x] != u) continue;
    if (s.ts[x] == t) p.now.insert(s.dst[x]);
    if (in_history[x]) p.historical.insert(s.dst[x]);
  }
  for (int64_t e = 0; e < s.num_events(); ++e) {
    const size_t x = static_cast<size_t>(e);
    if (s.src[x] == u && s.ts[x] < t && !p.historical.count(s.dst[x])) p.inductive.insert(s.dst[x]);
  }
  return p;
}

void check_eval_row(const data::EventStream& s, const EvalNegativeSampler& sampler,
                    const int32_t* row, int64_t i, const std::vector<uint8_t>& in_history) {
  const int32_t k = sampler.negatives_per_positive();
  const Pools p = scan_pools(s, i, in_history);
  std::set<int32_t> distinct(row, row + k);
  ASSERT_EQ(static_cast<int32_t>(distinct.size()), k) << "event " << i;
  for (int32_t j = 0; j < k; ++j) {
    ASSERT_GE(row[j], sampler.range().begin);
    ASSERT_LT(row[j], sampler.range().end);
    ASSERT_FALSE(p.now.count(row[j]))
        << "event " << i << " negative " << row[j] << " is a positive";
  }
  if (sampler.strategy() == EvalNegativeStrategy::random) return;
  const std::set<int32_t>& pool =
      sampler.strategy() == EvalNegativeStrategy::historical ? p.historical : p.inductive;
  int32_t eligible = 0;
  for (int32_t w : pool) eligible += p.now.count(w) ? 0 : 1;
  const int32_t from_pool = std::min((k + 1) / 2, eligible);
  for (int32_t j = 0; j < from_pool; ++j) {
    ASSERT_TRUE(pool.count(row[j]))
        << "event " << i << " slot " << j << ": " << row[j] << " is not in the "
        << eval_negative_strategy_name(sampler.strategy()) << " pool";
  }
}

class EvalNegatives : public ::testing::TestWithParam<EvalNegativeStrategy> {};

TEST_P(EvalNegatives, FollowTheirDefinition) {
  const data::EventStream s = random_stream(bipartite_shape(), 33);
  const int64_t history_end = 2000;
  const std::vector<int64_t> test = event_range(history_end, s.num_events());
  std::vector<uint8_t> prefix(static_cast<size_t>(s.num_events()), 0);
  std::fill(prefix.begin(), prefix.begin() + history_end, uint8_t{1});
  for (int32_t k : {1, 4, 9}) {
    EvalNegativeSampler sampler(s, history_end, GetParam(), k, 11);
    const std::vector<int32_t> neg = sampler.sample_split(1, test);
    for (size_t r = 0; r < test.size(); ++r) {
      check_eval_row(s, sampler, neg.data() + r * static_cast<size_t>(k), test[r], prefix);
    }
  }
}

TEST_P(EvalNegatives, HistoryCanSkipEvents) {
  // A split that drops some early events from training (TGN's held-out nodes): those count
  // as seen-but-not-trained, like the events after the history.
  const data::EventStream s = random_stream(bipartite_shape(), 36);
  std::vector<int64_t> train;
  std::vector<uint8_t> in_history(static_cast<size_t>(s.num_events()), 0);
  for (int64_t e = 0; e < 2000; ++e) {
    if (s.src[static_cast<size_t>(e)] % 5 == 0) continue;
    train.push_back(e);
    in_history[static_cast<size_t>(e)] = 1;
  }
  EvalNegativeSampler sampler(s, train, GetParam(), 6, 12);
  const std::vector<int64_t> test = event_range(2000, s.num_events());
  const std::vector<int32_t> neg = sampler.sample_split(2, test);
  for (size_t r = 0; r < test.size(); ++r) {
    check_eval_row(s, sampler, neg.data() + r * 6, test[r], in_history);
  }
  // A list that is a prefix gives the prefix sampler's negatives.
  EXPECT_EQ(EvalNegativeSampler(s, event_range(0, 2000), GetParam(), 6, 12).sample_split(2, test),
            EvalNegativeSampler(s, 2000, GetParam(), 6, 12).sample_split(2, test));
}

TEST_P(EvalNegatives, FixedPerSplitAndSeed) {
  const data::EventStream s = random_stream({}, 34);
  const int64_t begin = 1500;
  const int64_t end = s.num_events();
  const std::vector<int64_t> split = event_range(begin, end);
  EvalNegativeSampler sampler(s, begin, GetParam(), 5, 21);
  std::vector<int32_t> whole, two_threads;
  testing::with_threads(1, [&] { whole = sampler.sample_split(2, split); });
  testing::with_threads(2, [&] { two_threads = sampler.sample_split(2, split); });
  EXPECT_EQ(whole, two_threads);
  std::vector<int32_t> pieces(whole.size());
  for (int64_t first = begin; first < end; first += 200) {
    const int64_t count = std::min<int64_t>(200, end - first);
    sampler.sample(2, first, count, pieces.data() + (first - begin) * 5);
  }
  EXPECT_EQ(whole, pieces);
  // A sub-list (e.g. the new-node pass) gets the rows its events get in the whole split.
  const std::vector<int64_t> some = {begin + 3, begin + 40, end - 1};
  const std::vector<int32_t> rows = sampler.sample_split(2, some);
  for (size_t r = 0; r < some.size(); ++r) {
    const auto at = whole.begin() + (some[r] - begin) * 5;
    EXPECT_EQ(std::vector<int32_t>(rows.begin() + static_cast<int64_t>(r) * 5,
                                   rows.begin() + static_cast<int64_t>(r + 1) * 5),
              std::vector<int32_t>(at, at + 5));
  }
  EXPECT_EQ(whole, EvalNegativeSampler(s, begin, GetParam(), 5, 21).sample_split(2, split));
  EXPECT_NE(whole, EvalNegativeSampler(s, begin, GetParam(), 5, 22).sample_split(2, split));
  EXPECT_NE(whole, sampler.sample_split(1, split));
}

INSTANTIATE_TEST_SUITE_P(Strategies, EvalNegatives,
                         ::testing::Values(EvalNegativeStrategy::random,
                                           EvalNegativeStrategy::historical,
                                           EvalNegativeStrategy::inductive),
                         [](const auto& info) {
                           return std::string(eval_negative_strategy_name(info.param));
                         });

TEST(EvalNegativeSampler, HistoricalPoolsAreTheTrainingEdges) {
  const data::EventStream s = random_stream({}, 35);
  const int64_t history_end = 1200;
  EvalNegativeSampler sampler(s, history_end, EvalNegativeStrategy::historical, 3, 1);
  const auto& indptr = sampler.historical_indptr();
  const auto& dst = sampler.historical_destinations();
  for (int32_t u = 0; u < s.num_nodes; ++u) {
    std::set<int32_t> expected;
    for (int64_t e = 0; e < history_end; ++e) {
      if (s.src[static_cast<size_t>(e)] == u) expected.insert(s.dst[static_cast<size_t>(e)]);
    }
    const std::vector<int32_t> got(dst.begin() + indptr[u], dst.begin() + indptr[u + 1]);
    EXPECT_EQ(got, std::vector<int32_t>(expected.begin(), expected.end())) << "source " << u;
  }
}

TEST(EvalNegativeSampler, ToyGraphWithFewerNodesThanNegatives) {
  data::EventStream s;
  s.num_nodes = 3;
  s.src = {0, 1, 2, 0};
  s.dst = {1, 2, 0, 2};
  s.ts = {1.0, 2.0, 3.0, 4.0};
  for (EvalNegativeStrategy strategy :
       {EvalNegativeStrategy::random, EvalNegativeStrategy::historical,
        EvalNegativeStrategy::inductive}) {
    EvalNegativeSampler sampler(s, 2, strategy, 6, 3);
    const std::vector<int32_t> neg = sampler.sample_split(2, {2, 3});
    for (int32_t w : neg) {
      EXPECT_GE(w, 0);
      EXPECT_LT(w, 3);
    }
    // Event 3 = (0, 2): the eligible destinations are 0 and 1, both must come first.
    EXPECT_EQ(std::set<int32_t>(neg.begin() + 6, neg.begin() + 8), (std::set<int32_t>{0, 1}));
  }
}

TEST(EvalNegativeSampler, StrategyNames) {
  const auto& names = eval_negative_strategy_names();
  for (const char* name : {"random", "historical", "inductive"}) {
    ASSERT_TRUE(names.parse(name).has_value()) << name;
    EXPECT_STREQ(eval_negative_strategy_name(*names.parse(name)), name);
  }
  EXPECT_FALSE(names.parse("hist").has_value());
}

}  // namespace
}  // namespace depbloom::graph
