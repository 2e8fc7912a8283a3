// RefinePlanner: the step's touched nodes get slots and their event lists (one pass to count,
// one to place, so a node's list is in position order); the requests are bucketed by
// micro-batch, and a sweep over the micro-batches counts how many of each node's events are
// already behind: those are exactly a prefix of its list, so a row is (begin, count).
#include "depbloom/train/refine_plan.h"

#include <algorithm>

#include "depbloom/core/error.h"

namespace depbloom::train {

void cut_micro_batches(int64_t count, int32_t m, std::vector<int64_t>& bounds) {
  DB_ASSERT(count >= 0 && m >= 1, "micro-batches: {} events cut into m = {}", count, m);
  const int64_t k = count == 0 ? 1 : std::min<int64_t>(m, count);
  const int64_t base = count / k, extra = count % k;
  bounds.resize(static_cast<size_t>(k + 1));
  bounds[0] = 0;
  for (int64_t j = 0; j < k; ++j)
    bounds[static_cast<size_t>(j + 1)] = bounds[static_cast<size_t>(j)] + base + (j < extra);
}

RefinePlanner::RefinePlanner(const data::EventStream& stream)
    : stream_(stream),
      node_stamp_(static_cast<size_t>(stream.num_nodes), 0),
      node_slot_(static_cast<size_t>(stream.num_nodes), -1) {}

int32_t RefinePlanner::slot_of(int32_t node) const {
  const auto n = static_cast<size_t>(node);
  return node_stamp_[n] == stamp_ ? node_slot_[n] : -1;
}

void RefinePlanner::touch(int32_t node) {
  const auto n = static_cast<size_t>(node);
  if (node_stamp_[n] != stamp_) {
    node_stamp_[n] = stamp_;
    node_slot_[n] = touched_++;
    slot_fill_[static_cast<size_t>(node_slot_[n])] = 0;
  }
  ++slot_fill_[static_cast<size_t>(node_slot_[n])];
}

void RefinePlanner::plan(RefinePlan& out, const int64_t* events, int64_t count,
                         const std::vector<int64_t>& bounds, const int32_t* req_node,
                         const int32_t* req_micro, int64_t requests, RefineAggregate aggregate) {
  const auto micro = static_cast<int64_t>(bounds.size()) - 1;
  DB_ASSERT(micro >= 1 && bounds.front() == 0 && bounds.back() == count &&
                std::is_sorted(bounds.begin(), bounds.end()),
            "refine plan: micro-batch bounds of {} entries do not cut {} events", bounds.size(),
            count);
  if (++stamp_ == 0) {  // the stamps wrapped: forget every node's slot once
    std::fill(node_stamp_.begin(), node_stamp_.end(), 0);
    stamp_ = 1;
  }
  list_events(out, events, count);
  bucket_requests(req_node, req_micro, requests, micro);
  count_earlier(events, bounds, req_node, requests);
  list_rows(out, events, req_node, requests, aggregate);
}

// Each touched node's events in the step, in slots; a self loop is one event of its node.
void RefinePlanner::list_events(RefinePlan& out, const int64_t* events, int64_t count) {
  touched_ = 0;
  slot_fill_.resize(static_cast<size_t>(2 * count));
  for (int64_t p = 0; p < count; ++p) {
    DB_ASSERT(p == 0 || events[p] > events[p - 1], "refine plan: events not ascending at {}", p);
    touch(src_at(events, p));
    if (dst_at(events, p) != src_at(events, p)) touch(dst_at(events, p));
  }
  slot_begin_.resize(static_cast<size_t>(touched_ + 1));
  slot_begin_[0] = 0;
  for (int32_t s = 0; s < touched_; ++s) {
    const auto at = static_cast<size_t>(s);
    slot_begin_[at + 1] = slot_begin_[at] + slot_fill_[at];
    slot_fill_[at] = 0;  // now the number placed
  }
  out.event_pos.resize(static_cast<size_t>(slot_begin_.back()));
  out.event_role.resize(out.event_pos.size());
  auto place = [&](int32_t node, int64_t p, int8_t role) {
    const auto s = static_cast<size_t>(slot_of(node));
    const auto at = static_cast<size_t>(slot_begin_[s] + slot_fill_[s]++);
    out.event_pos[at] = p;
    out.event_role[at] = role;
  };
  for (int64_t p = 0; p < count; ++p) {
    if (dst_at(events, p) != src_at(events, p)) place(src_at(events, p), p, 0);
    place(dst_at(events, p), p, 1);
  }
}

// Requests bucketed by micro-batch (a counting sort, stable in request order).
void RefinePlanner::bucket_requests(const int32_t* req_node, const int32_t* req_micro,
                                    int64_t requests, int64_t micro) {
  micro_start_.assign(static_cast<size_t>(micro + 1), 0);
  for (int64_t i = 0; i < requests; ++i) {
    DB_ASSERT(
        req_micro[i] >= 0 && req_micro[i] < micro && req_node[i] >= 0 &&
            req_node[i] < stream_.num_nodes,
        "refine plan: request {} reads node {} in micro-batch {} ({} nodes, {} micro-batches)", i,
        req_node[i], req_micro[i], stream_.num_nodes, micro);
    ++micro_start_[static_cast<size_t>(req_micro[i]) + 1];
  }
  for (int64_t j = 0; j < micro; ++j)
    micro_start_[static_cast<size_t>(j + 1)] += micro_start_[static_cast<size_t>(j)];
  by_micro_.resize(static_cast<size_t>(requests));
  for (int64_t i = 0; i < requests; ++i)
    by_micro_[static_cast<size_t>(micro_start_[static_cast<size_t>(req_micro[i])]++)] = i;
}

// The sweep: before micro-batch j's requests, micro-batch j-1's events join the counts.
void RefinePlanner::count_earlier(const int64_t* events, const std::vector<int64_t>& bounds,
                                  const int32_t* req_node, int64_t requests) {
  const auto micro = static_cast<int64_t>(bounds.size()) - 1;
  std::fill(slot_fill_.begin(), slot_fill_.begin() + touched_, 0);  // now the number seen
  earlier_.resize(static_cast<size_t>(requests));
  int64_t next = 0;  // into by_micro_, whose buckets now end at micro_start_[j]
  for (int64_t j = 0; j < micro; ++j) {
    if (j > 0) {
      for (int64_t p = bounds[static_cast<size_t>(j - 1)]; p < bounds[static_cast<size_t>(j)];
           ++p) {
        ++slot_fill_[static_cast<size_t>(slot_of(src_at(events, p)))];
        if (dst_at(events, p) != src_at(events, p))
          ++slot_fill_[static_cast<size_t>(slot_of(dst_at(events, p)))];
      }
    }
    for (; next < micro_start_[static_cast<size_t>(j)]; ++next) {
      const int64_t i = by_micro_[static_cast<size_t>(next)];
      const int32_t s = slot_of(req_node[i]);
      earlier_[static_cast<size_t>(i)] = s < 0 ? 0 : slot_fill_[static_cast<size_t>(s)];
    }
  }
}

// Rows and terms in request order.
void RefinePlanner::list_rows(RefinePlan& out, const int64_t* events, const int32_t* req_node,
                              int64_t requests, RefineAggregate aggregate) {
  out.request.clear(), out.begin.clear(), out.count.clear();
  out.latest.clear(), out.latest_time.clear();
  out.term_row.clear(), out.term_msg.clear(), out.term_weight.clear();
  out.msg_pos.clear(), out.msg_role.clear();
  entry_msg_.assign(out.event_pos.size(), -1);
  for (int64_t i = 0; i < requests; ++i) {
    const int32_t c = earlier_[static_cast<size_t>(i)];
    if (c == 0) continue;
    const int64_t b = slot_begin_[static_cast<size_t>(slot_of(req_node[i]))];
    const int64_t last = b + c - 1;
    const auto row = static_cast<int32_t>(out.request.size());
    const int64_t latest = out.event_pos[static_cast<size_t>(last)];
    out.request.push_back(i), out.begin.push_back(b), out.count.push_back(c);
    out.latest.push_back(latest);
    out.latest_time.push_back(stream_.ts[static_cast<size_t>(events[latest])]);
    const int64_t first = aggregate == RefineAggregate::last ? last : b;
    for (int64_t at = first; at <= last; ++at) {
      // An entry of event_pos is one (node, event): one mail, one message.
      int32_t& msg = entry_msg_[static_cast<size_t>(at)];
      if (msg < 0) {
        msg = static_cast<int32_t>(out.msg_pos.size());
        out.msg_pos.push_back(out.event_pos[static_cast<size_t>(at)]);
        out.msg_role.push_back(out.event_role[static_cast<size_t>(at)]);
      }
      out.term_row.push_back(row);
      out.term_msg.push_back(msg);
      out.term_weight.push_back(1.0 / static_cast<double>(last - first + 1));
    }
  }
}

}  // namespace depbloom::train
