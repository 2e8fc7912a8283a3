// keep_first_events (data.max_events): every per-event array is cut to the same prefix,
// features by rows; nothing happens for n <= 0 or n >= the stream's length.
#include <gtest/gtest.h>

#include "depbloom/data/event_stream.h"

namespace {

using depbloom::data::EventStream;

EventStream five_events() {
  EventStream s;
  s.src = {0, 1, 2, 0, 1};
  s.dst = {3, 3, 4, 4, 3};
  s.ts = {1, 2, 2, 5, 9};
  s.event_id = {0, 1, 2, 3, 4};
  s.edge_dim = 2;
  s.edge_feat = {0, 1, 10, 11, 20, 21, 30, 31, 40, 41};
  s.label = {0, 1, 0, 0, 1};
  s.split = {0, 0, 1, 2, 2};
  s.num_nodes = 5;
  return s;
}

TEST(KeepFirstEvents, CutsEveryPerEventArray) {
  EventStream s = five_events();
  depbloom::data::keep_first_events(s, 3);
  EXPECT_EQ(s.num_events(), 3);
  EXPECT_EQ(s.dst, (std::vector<int32_t>{3, 3, 4}));
  EXPECT_EQ(s.ts, (std::vector<double>{1, 2, 2}));
  EXPECT_EQ(s.event_id.size(), 3u);
  EXPECT_EQ(s.edge_feat, (std::vector<float>{0, 1, 10, 11, 20, 21}));
  EXPECT_EQ(s.label, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(s.split, (std::vector<int8_t>{0, 0, 1}));
  EXPECT_EQ(s.num_nodes, 5);
  depbloom::data::check_event_stream(s);
}

TEST(KeepFirstEvents, ZeroOrTooManyKeepsAll) {
  for (int64_t n : {int64_t{0}, int64_t{-1}, int64_t{5}, int64_t{99}}) {
    EventStream s = five_events();
    depbloom::data::keep_first_events(s, n);
    EXPECT_EQ(s.num_events(), 5) << n;
    EXPECT_EQ(s.edge_feat.size(), 10u) << n;
  }
}

}  // namespace
