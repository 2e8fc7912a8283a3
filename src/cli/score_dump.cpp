// ScoreDump: the evaluator's batches regrouped per event (negatives arrive as K blocks of
// the batch's rows), then written as one .npy per field.
#include "depbloom/cli/score_dump.h"

#include <algorithm>

#include "depbloom/cli/npy_folder.h"
#include "depbloom/core/error.h"

namespace depbloom::cli {

void ScoreDump::add(const train::ScoredBatch& b) {
  (b.new_nodes ? new_nodes_ : test_).add(b);
}

void ScoreDump::Pass::add(const train::ScoredBatch& b) {
  if (k >= 0 && b.k != k) DB_THROW(runtime, "score dump: {} negatives after {}", b.k, k);
  k = b.k;
  events.insert(events.end(), b.events, b.events + b.count);
  pos.insert(pos.end(), b.scores, b.scores + b.count);
  neg_dst.insert(neg_dst.end(), b.negatives, b.negatives + b.count * b.k);
  const size_t at = neg.size();
  neg.resize(at + static_cast<size_t>(b.count * b.k));
  for (int64_t row = 0; row < b.count; ++row)
    for (int32_t j = 0; j < b.k; ++j)
      neg[at + static_cast<size_t>(row * b.k + j)] = b.scores[b.count + j * b.count + row];
}

void ScoreDump::write(const std::string& dir) const {
  NpyFolder out(dir);
  write_pass(out, test_, "");
  if (!new_nodes_.events.empty()) write_pass(out, new_nodes_, "new_nodes/");
  out.commit();
}

void ScoreDump::write_pass(NpyFolder& out, const Pass& p, const std::string& prefix) const {
  const auto n = static_cast<int64_t>(p.events.size());
  std::vector<int64_t> rows, src, dst;
  std::vector<double> time;
  const auto original = [&](int32_t v) {  // streams without an id map keep their ids
    return stream_.original_id.empty() ? int64_t{v} : stream_.original_id[static_cast<size_t>(v)];
  };
  std::vector<int64_t> neg_dst;
  for (int32_t v : p.neg_dst) neg_dst.push_back(original(v));
  for (int64_t e : p.events) {
    const auto i = static_cast<size_t>(e);
    rows.push_back(stream_.event_id.empty() ? e : stream_.event_id[i]);
    src.push_back(original(stream_.src[i]));
    dst.push_back(original(stream_.dst[i]));
    time.push_back(stream_.ts[i]);
  }
  using data::NpyDtype;
  const int64_t k = std::max(p.k, 0);
  out.add_npy(prefix + "event.npy", NpyDtype::i8, {n}, p.events.data());
  out.add_npy(prefix + "row.npy", NpyDtype::i8, {n}, rows.data());
  out.add_npy(prefix + "src.npy", NpyDtype::i8, {n}, src.data());
  out.add_npy(prefix + "dst.npy", NpyDtype::i8, {n}, dst.data());
  out.add_npy(prefix + "time.npy", NpyDtype::f8, {n}, time.data());
  out.add_npy(prefix + "pos.npy", NpyDtype::f4, {n}, p.pos.data());
  out.add_npy(prefix + "neg.npy", NpyDtype::f4, {n, k}, p.neg.data());
  out.add_npy(prefix + "neg_dst.npy", NpyDtype::i8, {n, k}, neg_dst.data());
}

}  // namespace depbloom::cli
