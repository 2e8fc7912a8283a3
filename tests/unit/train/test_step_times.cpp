// summarise_step_times: hand-computed quantiles, the order of the input not mattering, and
// the empty epoch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "depbloom/train/step_times.h"

namespace depbloom::train {
namespace {

struct StepTimesCase {
  const char* name;
  std::vector<double> seconds;
  int64_t steps;
  double median, p10, p90, max;
};

// Quantile q of n sorted values sits at rank q (n - 1), linear between the two ranks beside it.
const StepTimesCase kCases[] = {
    {"one", {0.5}, 1, 0.5, 0.5, 0.5, 0.5},
    // ranks: 0.5 at 0.5, 0.1 at 0.1, 0.9 at 0.9 between 1 and 3.
    {"two", {3.0, 1.0}, 2, 2.0, 1.2, 2.8, 3.0},
    // 11 values 0..10 shuffled: quantile q is 10 q exactly.
    {"eleven", {7, 2, 9, 0, 10, 4, 1, 8, 3, 6, 5}, 11, 5.0, 1.0, 9.0, 10.0},
    // a cold first step does not move the median of the warm ones.
    {"cold_first", {9.0, 1.0, 1.0, 1.0, 1.0}, 5, 1.0, 1.0, 5.8, 9.0},
    {"even", {4.0, 1.0, 2.0, 3.0}, 4, 2.5, 1.3, 3.7, 4.0},
};

class StepTimesTest : public ::testing::TestWithParam<StepTimesCase> {};

TEST_P(StepTimesTest, Quantiles) {
  const StepTimesCase& c = GetParam();
  const StepTimeSummary s = summarise_step_times(c.seconds);
  EXPECT_EQ(s.steps, c.steps);
  EXPECT_NEAR(s.median, c.median, 1e-12);
  EXPECT_NEAR(s.p10, c.p10, 1e-12);
  EXPECT_NEAR(s.p90, c.p90, 1e-12);
  EXPECT_NEAR(s.max, c.max, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(StepTimes, StepTimesTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StepTimes, EmptyEpochIsAllZero) {
  const StepTimeSummary s = summarise_step_times({});
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.median, 0.0);
  EXPECT_EQ(s.max, 0.0);
}

}  // namespace
}  // namespace depbloom::train
