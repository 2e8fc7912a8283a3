// BatchPlanner's refinement step (DESIGN.md 7.2): which memory rows each micro-batch reads,
// which of them get a refined copy, and the reads redirected to those copies. Like the rest
// of planning it reads no node state.
#include "depbloom/train/batch_plan.h"

namespace depbloom::train {

// Each root belongs to its event's micro-batch (root i is event i % count), each sampled
// slot to its hop-0 root's. A distinct (row, micro-batch) read is one request; a request whose
// node had earlier in-batch events gets copy c, and its reads then name row U + c.
void BatchPlanner::plan_refine(BatchPlan& p, int32_t micro_batches) {
  const int64_t count = p.batch(), u = p.memory_rows();
  cut_micro_batches(count, micro_batches, p.micro_bounds);
  const auto m = static_cast<int64_t>(p.micro_bounds.size()) - 1;
  micro_of_event_.resize(static_cast<size_t>(count));
  for (int64_t j = 0; j < m; ++j)
    for (int64_t b = p.micro_bounds[static_cast<size_t>(j)];
         b < p.micro_bounds[static_cast<size_t>(j + 1)]; ++b)
      micro_of_event_[static_cast<size_t>(b)] = static_cast<int32_t>(j);
  pair_req_.assign(static_cast<size_t>(u * m), -1);
  req_node_.clear(), req_micro_.clear(), req_row_.clear();
  auto request = [&](int32_t row, int32_t micro) {
    int32_t& q = pair_req_[static_cast<size_t>(row * m + micro)];
    if (q >= 0) return;
    q = static_cast<int32_t>(req_row_.size());
    req_node_.push_back(p.mem_node[static_cast<size_t>(row)]);
    req_micro_.push_back(micro), req_row_.push_back(row);
  };
  const auto micro_of_root = [&](int64_t root) {
    return micro_of_event_[static_cast<size_t>(root % count)];
  };
  for (size_t r = 0; r < p.root_row.size(); ++r)
    request(p.root_row[r], micro_of_root(static_cast<int64_t>(r)));
  int64_t span = 1;  // hop-l slot s descends from hop-0 root s / k^(l+1)
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    span *= p.blocks.hop(l).k;
    const auto& rows = p.slot_row[static_cast<size_t>(l)];
    for (size_t s = 0; s < rows.size(); ++s)
      if (rows[s] >= 0) request(rows[s], micro_of_root(static_cast<int64_t>(s) / span));
  }
  if (!refine_planner_) refine_planner_ = std::make_unique<RefinePlanner>(stream_);
  refine_planner_->plan(p.refine, p.events.data(), count, p.micro_bounds, req_node_.data(),
                        req_micro_.data(), static_cast<int64_t>(req_row_.size()),
                        cfg_.refine_aggregate);
  // Copies in the refine plan's row order; dt from the row's own time (t0-relative).
  req_copy_.assign(req_row_.size(), -1);
  const int64_t copies = p.refine.rows();
  p.refine_row.resize(static_cast<size_t>(copies));
  p.refine_dt.resize(static_cast<size_t>(copies));
  for (int64_t c = 0; c < copies; ++c) {
    const auto q = static_cast<size_t>(p.refine.request[static_cast<size_t>(c)]);
    req_copy_[q] = static_cast<int32_t>(c);
    const int32_t row = req_row_[q];
    p.refine_row[static_cast<size_t>(c)] = row;
    p.refine_dt[static_cast<size_t>(c)] =
        p.mem_time[static_cast<size_t>(row)] + t0_ - p.refine.latest_time[static_cast<size_t>(c)];
  }
  if (copies == 0) return;
  auto redirect = [&](int32_t& row, int32_t micro) {
    const int32_t c =
        req_copy_[static_cast<size_t>(pair_req_[static_cast<size_t>(row * m + micro)])];
    if (c >= 0) row = static_cast<int32_t>(u + c);
  };
  for (size_t r = 0; r < p.root_row.size(); ++r)
    redirect(p.root_row[r], micro_of_root(static_cast<int64_t>(r)));
  span = 1;
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    span *= p.blocks.hop(l).k;
    auto& rows = p.slot_row[static_cast<size_t>(l)];
    for (size_t s = 0; s < rows.size(); ++s)
      if (rows[s] >= 0) redirect(rows[s], micro_of_root(static_cast<int64_t>(s) / span));
  }
}

}  // namespace depbloom::train
