// The CPU loop splitter: every Ranges choice covers [0, n) once, in contiguous ranges, with
// as many ranges as it promises, on two OpenMP threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_parallel.h"

namespace {

using depbloom::ops::cpu::kChunksPerThread;
using depbloom::ops::cpu::parallel_for;
using depbloom::ops::cpu::Ranges;
using depbloom::ops::cpu::split_across_threads;

struct RangesCase {
  Ranges ranges;
  int64_t n;
  int64_t expected_ranges;  // with 2 threads
};

std::vector<std::pair<int64_t, int64_t>> ranges_of(int64_t n, Ranges ranges) {
  std::vector<std::pair<int64_t, int64_t>> seen;
  std::mutex m;
  split_across_threads(n, ranges, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(m);
    seen.emplace_back(begin, end);
  });
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST(CpuParallelTest, EveryRangesChoiceCoversTheItemsOnce) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const RangesCase cases[] = {
      {Ranges::one_per_thread, 1, 1},   {Ranges::one_per_thread, 7, 2},
      {Ranges::one_per_thread, 100, 2}, {Ranges::one_per_item, 1, 1},
      {Ranges::one_per_item, 3, 3},     {Ranges::one_per_item, 16, 16},
      {Ranges::shared, 3, 3},           {Ranges::shared, 100, 2 * kChunksPerThread},
  };
  for (const RangesCase& c : cases) {
    const auto seen = ranges_of(c.n, c.ranges);
    ASSERT_EQ(static_cast<int64_t>(seen.size()), c.expected_ranges) << "n " << c.n;
    int64_t next = 0;
    for (const auto& [begin, end] : seen) {
      EXPECT_EQ(begin, next) << "n " << c.n;  // contiguous, no gap, no overlap
      EXPECT_LT(begin, end) << "n " << c.n;
      next = end;
    }
    EXPECT_EQ(next, c.n);
  }
  omp_set_num_threads(saved);
}

TEST(CpuParallelTest, InsideARegionAndSmallLoopsRunInline) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  int calls = 0;
  parallel_for(100, 1, [&](int64_t begin, int64_t end) {  // 100 rough flops: inline
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 100);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
#pragma omp parallel num_threads(2)
  {
    int inner = 0;
    split_across_threads(50, Ranges::shared, [&](int64_t begin, int64_t end) {
      EXPECT_EQ(end - begin, 50);
      ++inner;
    });
    EXPECT_EQ(inner, 1);
  }
  omp_set_num_threads(saved);
}

}  // namespace
