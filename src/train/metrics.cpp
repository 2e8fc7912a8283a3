// AP, ROC-AUC, MRR and the per-split accumulator. One sort by descending score, then a
// sweep over groups of equal scores so that ties are one threshold, exactly as sklearn.
#include "depbloom/train/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "depbloom/core/error.h"

namespace depbloom {
namespace {

void check_finite_order(const float* scores, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    // Infinities still order correctly; only NaN has no place in a ranking.
    if (std::isnan(scores[i])) DB_THROW(runtime, "{}: score {} of {} is NaN", what, i, n);
  }
}

}  // namespace

RankMetrics rank_metrics(const float* scores, const uint8_t* labels, size_t n,
                         std::vector<uint32_t>& order) {
  DB_ASSERT(n <= std::numeric_limits<uint32_t>::max(), "{} scores exceed the 32-bit index", n);
  check_finite_order(scores, n, "rank metrics");
  int64_t n_pos = 0;
  for (size_t i = 0; i < n; ++i) n_pos += labels[i] != 0;
  const int64_t n_neg = static_cast<int64_t>(n) - n_pos;
  if (n_pos == 0 || n_neg == 0)
    DB_THROW(runtime, "AP/AUC undefined: {} positives and {} negatives", n_pos, n_neg);

  order.resize(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(),
            [scores](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });

  // Sweep the thresholds from the highest score down; tp/fp count everything at or above.
  int64_t tp = 0, fp = 0, tp_prev = 0, fp_prev = 0;
  double ap = 0.0, area = 0.0;
  size_t i = 0;
  while (i < n) {
    const float s = scores[order[i]];
    for (; i < n && scores[order[i]] == s; ++i) {
      if (labels[order[i]] != 0)
        ++tp;
      else
        ++fp;
    }
    // Recall step times the precision at this threshold.
    ap += static_cast<double>(tp - tp_prev) * (static_cast<double>(tp) / (tp + fp));
    // Trapezoid between consecutive ROC points (in counts; normalised below).
    area += static_cast<double>(fp - fp_prev) * 0.5 * static_cast<double>(tp + tp_prev);
    tp_prev = tp;
    fp_prev = fp;
  }
  RankMetrics m;
  m.ap = ap / static_cast<double>(n_pos);
  m.auc = area / (static_cast<double>(n_pos) * static_cast<double>(n_neg));
  return m;
}

double average_precision(const float* scores, const uint8_t* labels, size_t n) {
  std::vector<uint32_t> order;
  return rank_metrics(scores, labels, n, order).ap;
}

double roc_auc(const float* scores, const uint8_t* labels, size_t n) {
  std::vector<uint32_t> order;
  return rank_metrics(scores, labels, n, order).auc;
}

double mean_reciprocal_rank(const float* pos, const float* neg, size_t n_pos, size_t k) {
  if (n_pos == 0 || k == 0)
    DB_THROW(runtime, "MRR needs positives and negatives ({}, {})", n_pos, k);
  check_finite_order(pos, n_pos, "MRR positives");
  check_finite_order(neg, n_pos * k, "MRR negatives");
  double sum = 0.0;
  for (size_t i = 0; i < n_pos; ++i) {
    const float p = pos[i];
    const float* row = neg + i * k;
    size_t greater = 0, equal = 0;
    for (size_t j = 0; j < k; ++j) {
      greater += row[j] > p;
      equal += row[j] == p;
    }
    sum += 1.0 / (1.0 + static_cast<double>(greater) + 0.5 * static_cast<double>(equal));
  }
  return sum / static_cast<double>(n_pos);
}

void SplitMetrics::reserve(size_t total_scores, size_t max_batch_scores) {
  scores_.reserve(total_scores);
  labels_.reserve(total_scores);
  order_.reserve(max_batch_scores);
}

void SplitMetrics::clear() {
  scores_.clear();
  labels_.clear();
  ap_sum_ = auc_sum_ = 0.0;
  batches_ = scored_ = skipped_ = 0;
}

void SplitMetrics::add_batch(const float* pos, size_t n_pos, const float* neg, size_t n_neg) {
  const size_t begin = scores_.size();
  scores_.insert(scores_.end(), pos, pos + n_pos);
  scores_.insert(scores_.end(), neg, neg + n_neg);
  labels_.insert(labels_.end(), n_pos, uint8_t{1});
  labels_.insert(labels_.end(), n_neg, uint8_t{0});
  score_last_batch(begin);
}

void SplitMetrics::add_labelled(const float* scores, const uint8_t* labels, size_t n) {
  const size_t begin = scores_.size();
  scores_.insert(scores_.end(), scores, scores + n);
  for (size_t i = 0; i < n; ++i) labels_.push_back(labels[i] != 0 ? 1 : 0);
  score_last_batch(begin);
}

void SplitMetrics::score_last_batch(size_t begin) {
  const size_t n = scores_.size() - begin;
  ++batches_;
  check_finite_order(scores_.data() + begin, n, "evaluation batch");
  size_t n_pos = 0;
  for (size_t i = begin; i < scores_.size(); ++i) n_pos += labels_[i];
  // The per-batch mean of the reference code cannot score a one-class batch; leave it out.
  if (n_pos == 0 || n_pos == n) {
    ++skipped_;
    return;
  }
  const RankMetrics m = rank_metrics(scores_.data() + begin, labels_.data() + begin, n, order_);
  ap_sum_ += m.ap;
  auc_sum_ += m.auc;
  ++scored_;
}

RankMetrics SplitMetrics::whole_split() {
  // The whole split is sorted once at report time; growing the scratch here is fine.
  return rank_metrics(scores_.data(), labels_.data(), scores_.size(), order_);
}

RankMetrics SplitMetrics::batch_mean() const {
  if (scored_ == 0)
    DB_THROW(runtime, "no batch with both positives and negatives among {} batches", batches_);
  RankMetrics m;
  m.ap = ap_sum_ / static_cast<double>(scored_);
  m.auc = auc_sum_ / static_cast<double>(scored_);
  return m;
}

}  // namespace depbloom
