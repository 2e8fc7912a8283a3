// BatchPlanner's refinement step (DESIGN.md 7.2): which memory rows each micro-batch reads,
// which of them get a refined copy, and the reads redirected to those copies. Like the rest
// of planning it reads no node state.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "depbloom/core/philox.h"
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
  // Copies in the refine plan's row order. dt is the time from the latest earlier event to
  // the read: the row's own time, or for a neighbour's row at an older edge time (which may
  // precede that event) the start of the reading micro-batch, so it is never negative.
  req_copy_.assign(req_row_.size(), -1);
  const int64_t copies = p.refine.rows();
  p.refine.row.resize(static_cast<size_t>(copies));
  p.refine.dt.resize(static_cast<size_t>(copies));
  for (int64_t c = 0; c < copies; ++c) {
    const auto q = static_cast<size_t>(p.refine.request[static_cast<size_t>(c)]);
    req_copy_[q] = static_cast<int32_t>(c);
    const int32_t row = req_row_[q];
    p.refine.row[static_cast<size_t>(c)] = row;
    const auto start = static_cast<size_t>(p.micro_bounds[static_cast<size_t>(req_micro_[q])]);
    const double read = std::max(p.mem_time[static_cast<size_t>(row)] + t0_,
                                 stream_.ts[static_cast<size_t>(p.events[start])]);
    p.refine.dt[static_cast<size_t>(c)] = read - p.refine.latest_time[static_cast<size_t>(c)];
  }
  if (copies == 0) return;
  plan_refine_gaps(p);
  if (cfg_.refine_mail_dt) plan_refine_mail_dt(p);
  if (cfg_.refine_bases) plan_refine_bases(p);
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

// As the coherence target's mail time for its last mail: the latest earlier event's time less
// the previous earlier event's (the first's less the node's last update, on the device).
void BatchPlanner::plan_refine_mail_dt(BatchPlan& p) const {
  const RefinePlan& rp = p.refine;
  const auto& mail_time = p.writes.mail_time;
  const auto time_of = [&](int64_t i) {
    const int64_t mail =
        2 * rp.event_pos[static_cast<size_t>(i)] + rp.event_role[static_cast<size_t>(i)];
    return mail_time[static_cast<size_t>(mail)];
  };
  p.refine.mail_dt.resize(static_cast<size_t>(rp.rows()));
  p.refine.first.resize(static_cast<size_t>(rp.rows()));
  for (int64_t c = 0; c < rp.rows(); ++c) {
    const auto at = static_cast<size_t>(c);
    const int64_t latest = rp.begin[at] + rp.count[at] - 1;
    const bool first = rp.count[at] == 1;
    p.refine.mail_dt[at] = first ? time_of(latest) : time_of(latest) - time_of(latest - 1);
    p.refine.first[at] = first ? 1.0 : 0.0;
  }
}

// A copy is kept with probability `sample`, its draw keyed by its node, its time and its
// latest earlier event (what it is), so the subset does not depend on the batch layout or the
// ranks. Sorting by earlier-event count makes each round's copies a prefix.
void BatchPlanner::plan_coherence(BatchPlan& p, uint64_t seed, double sample) const {
  p.coherence.copy.clear(), p.coherence.round.clear();
  p.coherence.mail.clear(), p.coherence.dt.clear();
  const RefinePlan& rp = p.refine;
  const RngKey key{seed, static_cast<uint32_t>(RngPurpose::coherence), p.epoch};
  for (int64_t c = 0; c < p.refined_rows(); ++c) {
    const auto at = static_cast<size_t>(c);
    const auto row = static_cast<size_t>(p.refine.row[at]);
    uint64_t bits;
    std::memcpy(&bits, &p.mem_time[row], sizeof bits);
    const auto latest = static_cast<uint64_t>(p.events[static_cast<size_t>(rp.latest[at])]);
    const uint64_t index =
        mix64(static_cast<uint64_t>(p.mem_node[row]) ^ mix64(bits) ^ mix64(latest + 1));
    const Philox4 draw = philox_draw(key, index, 0);
    if (uniform_double(draw.v[0], draw.v[1]) < sample)
      p.coherence.copy.push_back(static_cast<int32_t>(c));
  }
  std::sort(p.coherence.copy.begin(), p.coherence.copy.end(), [&](int32_t a, int32_t b) {
    const int32_t ca = rp.count[static_cast<size_t>(a)], cb = rp.count[static_cast<size_t>(b)];
    return ca != cb ? ca > cb : a < b;
  });
  const auto& mail_time = p.writes.mail_time;
  const auto mail_of = [&](int64_t i) {
    return 2 * rp.event_pos[static_cast<size_t>(i)] + rp.event_role[static_cast<size_t>(i)];
  };
  int64_t active = static_cast<int64_t>(p.coherence.copy.size());
  p.coherence.round.push_back(0);
  for (int32_t round = 0; active > 0; ++round) {
    while (active > 0 &&
           rp.count[static_cast<size_t>(p.coherence.copy[static_cast<size_t>(active - 1)])] <=
               round)
      --active;
    for (int64_t j = 0; j < active; ++j) {
      const auto c = static_cast<size_t>(p.coherence.copy[static_cast<size_t>(j)]);
      const int64_t at = rp.begin[c] + round;
      const int64_t mail = mail_of(at);
      const double t = mail_time[static_cast<size_t>(mail)];
      double dt;
      if (cfg_.mail_dt_at_event) {  // the mail's age as of its event: since the previous one
        dt = round == 0 ? t : t - mail_time[static_cast<size_t>(mail_of(at - 1))];
      } else if (round + 1 < rp.count[c]) {  // read at the node's next event
        dt = mail_time[static_cast<size_t>(mail_of(at + 1))] - t;
      } else {  // the latest: read when the copy is (its refine dt)
        dt = p.refine.dt[c];
      }
      p.coherence.mail.push_back(mail);
      p.coherence.dt.push_back(dt);
    }
    if (active > 0) p.coherence.round.push_back(static_cast<int64_t>(p.coherence.mail.size()));
  }
}

// Each copy's base row among the distinct ones, listed in the order of their first copy.
void BatchPlanner::plan_refine_bases(BatchPlan& p) {
  list_distinct(p.refine.row, p.memory_rows(), p.refine.base, p.refine.base_of);
}

// The distinct gaps, ascending, by sorting the copies on theirs (ties in copy order).
void BatchPlanner::plan_refine_gaps(BatchPlan& p) {
  const std::vector<double>& dt = p.refine.dt;
  copy_order_.resize(dt.size());
  std::iota(copy_order_.begin(), copy_order_.end(), 0);
  std::sort(copy_order_.begin(), copy_order_.end(), [&](int32_t a, int32_t b) {
    const double x = dt[static_cast<size_t>(a)], y = dt[static_cast<size_t>(b)];
    return x < y || (x == y && a < b);
  });
  p.refine.dts.clear();
  p.refine.dt_of.resize(dt.size());
  for (const int32_t c : copy_order_) {
    const double v = dt[static_cast<size_t>(c)];
    if (p.refine.dts.empty() || p.refine.dts.back() != v) p.refine.dts.push_back(v);
    p.refine.dt_of[static_cast<size_t>(c)] = static_cast<int32_t>(p.refine.dts.size() - 1);
  }
}

}  // namespace depbloom::train
