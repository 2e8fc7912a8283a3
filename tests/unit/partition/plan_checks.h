// Checks every WindowPlan must pass, shared by the partition tests: the windows tile the
// training events, each event lies in exactly one part, parts are in time order, and the
// steps are cut as window_plan.h says. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/partition/window_plan.h"

namespace dbpartitiontest {

// The steps of one part: [steps + 1] offsets from 0 to its size, each step at most `chunk`
// events; the longest part in full chunks until it runs out.
inline void expect_steps(const depbloom::partition::WindowPart& part, int64_t steps, int64_t chunk,
                         bool longest) {
  const auto n = static_cast<int64_t>(part.events.size());
  ASSERT_EQ(part.step_offsets.size(), static_cast<size_t>(steps) + 1);
  EXPECT_EQ(part.step_offsets.front(), 0);
  EXPECT_EQ(part.step_offsets.back(), n);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t size = part.step_offsets[size_t(s) + 1] - part.step_offsets[size_t(s)];
    EXPECT_GE(size, 0);
    EXPECT_LE(size, chunk);
    if (longest) {
      EXPECT_EQ(size, std::min(chunk, n - part.step_offsets[size_t(s)]));
    }
  }
}

inline void expect_valid_plan(const depbloom::partition::WindowPlan& plan,
                              const depbloom::data::EventStream& stream,
                              const std::vector<int64_t>& train) {
  int64_t next = 0;
  std::vector<int64_t> seen;
  for (size_t w = 0; w < plan.windows.size(); ++w) {
    const auto& window = plan.windows[w];
    SCOPED_TRACE(testing::Message() << "window " << w);
    EXPECT_EQ(window.begin, next);
    EXPECT_EQ(window.events, w + 1 < plan.windows.size()
                                 ? plan.window_events
                                 : static_cast<int64_t>(train.size()) - window.begin);
    next += window.events;
    ASSERT_EQ(window.parts.size(), static_cast<size_t>(plan.ranks));
    std::vector<int64_t> in_window;
    int64_t longest = 0;
    for (size_t p = 0; p < window.parts.size(); ++p) {
      const auto& events = window.parts[p].events;
      EXPECT_EQ(window.stats.part_events[p], static_cast<int64_t>(events.size()));
      EXPECT_LE(window.stats.part_events[p], depbloom::partition::part_event_limit(
                                                 window.events, plan.ranks, plan.config.imbalance));
      for (size_t i = 1; i < events.size(); ++i) {
        EXPECT_LT(events[i - 1], events[i]);
        EXPECT_LE(stream.ts[size_t(events[i - 1])], stream.ts[size_t(events[i])]);
      }
      in_window.insert(in_window.end(), events.begin(), events.end());
      longest = std::max<int64_t>(longest, static_cast<int64_t>(events.size()));
    }
    // One device's step count; the longest part's chunk within the imbalance bound.
    EXPECT_EQ(window.steps,
              std::max<int64_t>(1, (window.events + plan.batch_size - 1) / plan.batch_size));
    const int64_t chunk = std::max(plan.rank_batch, (longest + window.steps - 1) / window.steps);
    EXPECT_LE(chunk,
              std::max(plan.rank_batch, depbloom::partition::part_event_limit(
                                            plan.window_events, plan.ranks, plan.config.imbalance) /
                                                plan.config.window_steps +
                                            1));
    for (const auto& part : window.parts)
      expect_steps(part, window.steps, chunk, static_cast<int64_t>(part.events.size()) == longest);
    // The window's events are exactly its stretch of the training list: steps never cross
    // a window end.
    std::sort(in_window.begin(), in_window.end());
    ASSERT_LE(window.begin + window.events, static_cast<int64_t>(train.size()));
    EXPECT_TRUE(std::equal(in_window.begin(), in_window.end(), train.begin() + window.begin,
                           train.begin() + window.begin + window.events));
    EXPECT_EQ(static_cast<int64_t>(in_window.size()), window.events);
    seen.insert(seen.end(), in_window.begin(), in_window.end());
  }
  EXPECT_EQ(seen, train) << "every training event in exactly one part of one window";
}

}  // namespace dbpartitiontest
