// ScoreDump: the evaluator's batches regrouped per event (negatives arrive as K blocks of
// the batch's rows), then written as one .npy per field.
#include "depbloom/cli/score_dump.h"

#include <algorithm>

#include "depbloom/cli/npy_folder.h"
#include "depbloom/core/error.h"

namespace depbloom::cli {

void ScoreDump::add(const train::ScoredBatch& b) {
  if (b.new_nodes) return;
  if (k_ >= 0 && b.k != k_) DB_THROW(runtime, "score dump: {} negatives after {}", b.k, k_);
  k_ = b.k;
  events_.insert(events_.end(), b.events, b.events + b.count);
  pos_.insert(pos_.end(), b.scores, b.scores + b.count);
  neg_dst_.insert(neg_dst_.end(), b.negatives, b.negatives + b.count * b.k);
  const size_t at = neg_.size();
  neg_.resize(at + static_cast<size_t>(b.count * b.k));
  for (int64_t row = 0; row < b.count; ++row)
    for (int32_t j = 0; j < b.k; ++j)
      neg_[at + static_cast<size_t>(row * b.k + j)] = b.scores[b.count + j * b.count + row];
}

void ScoreDump::write(const std::string& dir) const {
  const auto n = static_cast<int64_t>(events_.size());
  std::vector<int64_t> rows, src, dst;
  std::vector<double> time;
  const auto original = [&](int32_t v) {  // streams without an id map keep their ids
    return stream_.original_id.empty() ? int64_t{v} : stream_.original_id[static_cast<size_t>(v)];
  };
  std::vector<int64_t> neg_dst;
  for (int32_t v : neg_dst_) neg_dst.push_back(original(v));
  for (int64_t e : events_) {
    const auto i = static_cast<size_t>(e);
    rows.push_back(stream_.event_id.empty() ? e : stream_.event_id[i]);
    src.push_back(original(stream_.src[i]));
    dst.push_back(original(stream_.dst[i]));
    time.push_back(stream_.ts[i]);
  }
  using data::NpyDtype;
  NpyFolder out(dir);
  out.add_npy("event.npy", NpyDtype::i8, {n}, events_.data());
  out.add_npy("row.npy", NpyDtype::i8, {n}, rows.data());
  out.add_npy("src.npy", NpyDtype::i8, {n}, src.data());
  out.add_npy("dst.npy", NpyDtype::i8, {n}, dst.data());
  out.add_npy("time.npy", NpyDtype::f8, {n}, time.data());
  out.add_npy("pos.npy", NpyDtype::f4, {n}, pos_.data());
  out.add_npy("neg.npy", NpyDtype::f4, {n, std::max(k_, 0)}, neg_.data());
  out.add_npy("neg_dst.npy", NpyDtype::i8, {n, std::max(k_, 0)}, neg_dst.data());
  out.commit();
}

}  // namespace depbloom::cli
