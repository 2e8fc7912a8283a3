// Unit tests of AP, ROC-AUC, MRR and SplitMetrics: hand-computed small cases with ties,
// one-class edge behaviour, NaN rejection, and random inputs against brute-force formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/train/metrics.h"

namespace depbloom {
namespace {

RankMetrics metrics_of(const std::vector<float>& s, const std::vector<uint8_t>& y) {
  std::vector<uint32_t> order;
  return rank_metrics(s.data(), y.data(), s.size(), order);
}

TEST(Metrics, DistinctScores) {
  // Sorted: 0.9+ 0.8- 0.7+ 0.6-.  AP = 1/2 * 1 (at 0.9) + 1/2 * 2/3 (at 0.7) = 5/6.
  // AUC: pos 0.9 beats both negatives, 0.7 beats 0.6 only -> 3 of 4 pairs.
  const RankMetrics m = metrics_of({0.9f, 0.8f, 0.7f, 0.6f}, {1, 0, 1, 0});
  EXPECT_NEAR(m.ap, 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(m.auc, 0.75, 1e-12);
}

TEST(Metrics, TiesAreOneThreshold) {
  // P = 3, N = 2. Thresholds: 0.8 -> tp 1 fp 0 (prec 1), 0.5 -> tp 2 fp 2 (prec 1/2),
  // 0.1 -> tp 3 fp 2 (prec 3/5); each adds recall 1/3: AP = (1 + 1/2 + 3/5) / 3 = 0.7.
  // AUC: 0.8 beats 2 negatives, 0.5 ties both (2 * 1/2), 0.1 beats none -> 3 / 6.
  const RankMetrics m = metrics_of({0.8f, 0.5f, 0.5f, 0.5f, 0.1f}, {1, 1, 0, 0, 1});
  EXPECT_NEAR(m.ap, 0.7, 1e-12);
  EXPECT_NEAR(m.auc, 0.5, 1e-12);
  // Order of the tied entries must not matter.
  const RankMetrics r = metrics_of({0.1f, 0.5f, 0.5f, 0.8f, 0.5f}, {1, 0, 1, 1, 0});
  EXPECT_NEAR(r.ap, 0.7, 1e-12);
  EXPECT_NEAR(r.auc, 0.5, 1e-12);
}

TEST(Metrics, AllScoresEqual) {
  // One threshold holding everything: AP = prevalence = 2/4, AUC = 1/2.
  const RankMetrics m = metrics_of({0.5f, 0.5f, 0.5f, 0.5f}, {1, 0, 0, 1});
  EXPECT_NEAR(m.ap, 0.5, 1e-12);
  EXPECT_NEAR(m.auc, 0.5, 1e-12);
}

TEST(Metrics, PerfectAndReversedRanking) {
  EXPECT_NEAR(average_precision(std::vector<float>{3, 2, 1}.data(),
                                std::vector<uint8_t>{1, 1, 0}.data(), 3),
              1.0, 1e-12);
  // Reversed: 3- 2+ 1+ -> AP = 1/2 * 1/2 + 1/2 * 2/3 = 7/12, AUC = 0.
  const RankMetrics m = metrics_of({3, 2, 1}, {0, 1, 1});
  EXPECT_NEAR(m.ap, 7.0 / 12.0, 1e-12);
  EXPECT_NEAR(m.auc, 0.0, 1e-12);
  EXPECT_NEAR(roc_auc(std::vector<float>{3, 2, 1}.data(), std::vector<uint8_t>{1, 1, 0}.data(), 3),
              1.0, 1e-12);
}

TEST(Metrics, OneClassAndNaNThrow) {
  EXPECT_THROW(metrics_of({0.1f, 0.2f}, {1, 1}), Error);
  EXPECT_THROW(metrics_of({0.1f, 0.2f}, {0, 0}), Error);
  EXPECT_THROW(metrics_of({}, {}), Error);
  EXPECT_THROW(metrics_of({0.1f, std::nanf("")}, {1, 0}), Error);
  // Infinities still rank.
  EXPECT_NEAR(metrics_of({INFINITY, -INFINITY}, {1, 0}).auc, 1.0, 1e-12);
}

TEST(Metrics, MeanReciprocalRankTgbTies) {
  // Row 0: both negatives below 0.9 -> rank 1.  Row 1: 0.7 above, 0.5 tied -> rank
  // 1 + 1 + 0.5 = 2.5.  Row 2: two ties -> rank 1 + 0 + 1 = 2.  MRR = (1 + 0.4 + 0.5) / 3.
  const std::vector<float> pos = {0.9f, 0.5f, 0.3f};
  const std::vector<float> neg = {0.1f, 0.2f, 0.5f, 0.7f, 0.3f, 0.3f};
  EXPECT_NEAR(mean_reciprocal_rank(pos.data(), neg.data(), 3, 2), 1.9 / 3.0, 1e-12);
  EXPECT_THROW(mean_reciprocal_rank(pos.data(), neg.data(), 3, 0), Error);
  const std::vector<float> bad = {0.1f, std::nanf("")};
  EXPECT_THROW(mean_reciprocal_rank(pos.data(), bad.data(), 1, 2), Error);
}

TEST(SplitMetrics, WholeSplitAndBatchMean) {
  SplitMetrics acc;
  acc.reserve(16, 8);
  // Batch 1 is DistinctScores: AP 5/6, AUC 3/4.  Batch 2: 0.4- above 0.2+: AP 1/2, AUC 0.
  // Batch 3 has no negative: skipped by the per-batch mean, kept in the whole split.
  const float p1[] = {0.9f, 0.7f}, n1[] = {0.8f, 0.6f};
  const float p2[] = {0.2f}, n2[] = {0.4f};
  const float p3[] = {0.3f};
  acc.add_batch(p1, 2, n1, 2);
  acc.add_batch(p2, 1, n2, 1);
  acc.add_batch(p3, 1, nullptr, 0);
  EXPECT_EQ(acc.batches(), 3u);
  EXPECT_EQ(acc.skipped_batches(), 1u);
  const RankMetrics mean = acc.batch_mean();
  EXPECT_NEAR(mean.ap, (5.0 / 6.0 + 0.5) / 2.0, 1e-12);
  EXPECT_NEAR(mean.auc, 0.375, 1e-12);
  // Whole split sorted: 0.9+ 0.8- 0.7+ 0.6- 0.4- 0.3+ 0.2+ (P 4, N 3).
  // AP = (1 + 2/3 + 3/6 + 4/7) / 4;  AUC: 0.9 beats 3, 0.7 beats 2, others 0 -> 5/12.
  const RankMetrics all = acc.whole_split();
  EXPECT_NEAR(all.ap, (1.0 + 2.0 / 3.0 + 0.5 + 4.0 / 7.0) / 4.0, 1e-12);
  EXPECT_NEAR(all.auc, 5.0 / 12.0, 1e-12);
}

TEST(SplitMetrics, NoAllocationAfterReserve) {
  SplitMetrics acc;
  acc.reserve(400, 40);
  std::vector<float> pos(20), neg(20);
  for (int i = 0; i < 20; ++i) {
    pos[i] = 0.05f * i;
    neg[i] = 0.03f * i;
  }
  acc.add_batch(pos.data(), 20, neg.data(), 20);
  const size_t before = acc.size();
  // Within the reserved capacity the buffers must not move (no reallocation).
  const float* scores = acc.scores().data();
  const uint8_t* labels = acc.labels().data();
  for (int b = 0; b < 9; ++b) acc.add_batch(pos.data(), 20, neg.data(), 20);
  EXPECT_EQ(acc.size(), before * 10);
  EXPECT_EQ(acc.scores().data(), scores);
  EXPECT_EQ(acc.labels().data(), labels);
  EXPECT_EQ(acc.skipped_batches(), 0u);
  acc.clear();
  EXPECT_EQ(acc.size(), 0u);
  EXPECT_THROW(acc.batch_mean(), Error);
}

TEST(SplitMetrics, NaNInBatchThrowsAndLabelledBatches) {
  SplitMetrics acc;
  const float p[] = {std::nanf("")}, n[] = {0.1f};
  EXPECT_THROW(acc.add_batch(p, 1, n, 1), Error);
  SplitMetrics lab;
  const float s[] = {0.9f, 0.8f, 0.7f, 0.6f};
  const uint8_t y[] = {1, 0, 7, 0};  // any nonzero label is positive
  lab.add_labelled(s, y, 4);
  EXPECT_NEAR(lab.batch_mean().ap, 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(lab.whole_split().auc, 0.75, 1e-12);
}

// Brute force: AUC over all pairs; AP by recounting precision/recall at every distinct score.
RankMetrics brute_force(const std::vector<float>& s, const std::vector<uint8_t>& y) {
  double wins = 0, pos = 0, neg = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    (y[i] ? pos : neg) += 1;
    if (!y[i]) continue;
    for (size_t j = 0; j < s.size(); ++j)
      if (!y[j]) wins += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
  }
  std::vector<float> thresholds = s;
  std::sort(thresholds.rbegin(), thresholds.rend());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  double ap = 0, prev_recall = 0;
  for (float t : thresholds) {
    double tp = 0, fp = 0;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] >= t) (y[i] ? tp : fp) += 1;
    const double recall = tp / pos;
    ap += (recall - prev_recall) * tp / (tp + fp);
    prev_recall = recall;
  }
  return {ap, wins / (pos * neg)};
}

TEST(Metrics, RandomAgainstBruteForce) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 300);
    // Coarse scores on some trials so that ties are common.
    const int levels = trial % 2 == 0 ? 7 : 1 << 20;
    std::vector<float> s(n);
    std::vector<uint8_t> y(n);
    for (int i = 0; i < n; ++i) {
      y[i] = rng() % 3 == 0;
      s[i] = static_cast<float>(rng() % levels) / levels + (y[i] ? 0.1f : 0.0f);
    }
    y[0] = 1;
    y[1] = 0;  // both classes present
    const RankMetrics got = metrics_of(s, y);
    const RankMetrics want = brute_force(s, y);
    ASSERT_NEAR(got.ap, want.ap, 1e-9) << "trial " << trial;
    ASSERT_NEAR(got.auc, want.auc, 1e-9) << "trial " << trial;
  }
}

}  // namespace
}  // namespace depbloom
