// Link-prediction evaluation metrics: average precision and ROC-AUC over a whole split
// (matching sklearn), their per-batch means (what TGN/TGL/PyG print), and MRR against k
// sampled negatives (TGB convention). Pure host code on float scores; no model knowledge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace depbloom {

// Both computed from one descending sort. Equal scores form one threshold, as in sklearn:
//   AP  = sum_n (R_n - R_{n-1}) * P_n over distinct thresholds (step-wise, no interpolation),
//   AUC = trapezoid under the ROC over distinct thresholds (= Mann-Whitney U / (P*N), a
//         positive tied with a negative counting one half).
struct RankMetrics {
  double ap = 0.0;
  double auc = 0.0;
};

// labels: nonzero = positive. Throws (runtime) on a NaN score, and when the input has no
// positive or no negative: AP and AUC are undefined there and we never report a NaN.
// `order` is scratch (resized to n; keep one around to avoid allocating per call).
RankMetrics rank_metrics(const float* scores, const uint8_t* labels, size_t n,
                         std::vector<uint32_t>& order);
double average_precision(const float* scores, const uint8_t* labels, size_t n);
double roc_auc(const float* scores, const uint8_t* labels, size_t n);

// Mean reciprocal rank. neg is row-major [n_pos, k]: row i holds the k negatives scored
// against positive i. The rank of a positive among its 1+k scores follows TGB: the mean
// of the optimistic and pessimistic ranks, rank = 1 + #(neg > pos) + 0.5 * #(neg == pos).
// Throws (runtime) on a NaN score, n_pos == 0 or k == 0.
double mean_reciprocal_rank(const float* pos, const float* neg, size_t n_pos, size_t k);

// Collects the scores of one split batch by batch. After reserve(total, max_batch) adding
// batches within those sizes does not allocate. Reports the whole-split AP/AUC and the
// mean over batches of each batch's AP/AUC; batches without a positive or without a
// negative are left out of the per-batch means (counted in skipped_batches()).
class SplitMetrics {
 public:
  void reserve(size_t total_scores, size_t max_batch_scores);
  void clear();  // keeps the capacity

  // One batch: n_pos positive scores and n_neg negative scores (the TGN layout).
  void add_batch(const float* pos, size_t n_pos, const float* neg, size_t n_neg);
  // One batch of scores with labels (nonzero = positive).
  void add_labelled(const float* scores, const uint8_t* labels, size_t n);

  size_t size() const { return scores_.size(); }
  const std::vector<float>& scores() const { return scores_; }
  const std::vector<uint8_t>& labels() const { return labels_; }
  size_t batches() const { return batches_; }
  size_t skipped_batches() const { return skipped_; }

  // Over every score added so far; throws as rank_metrics does.
  RankMetrics whole_split();
  // Mean over the batches that had both classes; throws (runtime) if there were none.
  RankMetrics batch_mean() const;

 private:
  void score_last_batch(size_t begin);

  std::vector<float> scores_;
  std::vector<uint8_t> labels_;
  std::vector<uint32_t> order_;  // sort scratch
  double ap_sum_ = 0.0;
  double auc_sum_ = 0.0;
  size_t batches_ = 0;
  size_t scored_ = 0;
  size_t skipped_ = 0;
};

}  // namespace depbloom
