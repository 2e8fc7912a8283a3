// TemporalCsr: per-node interaction lists of an event stream (all of it, a prefix or a
// subset), each sorted by (time, event index), in compressed-sparse-row form. Built once in
// parallel, then read-only: the samplers and the evaluation negatives share it.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::graph {

// Which slots an event (s, d, t, e) adds.
//   undirected: slot (nbr d) in the list of s and slot (nbr s) in the list of d; a self
//               loop (s == d) adds one slot, not two, so a node never sees one event twice.
//   out:        only slot (nbr d) in the list of s (outgoing interactions).
enum class CsrDirection : uint8_t { undirected, out };

class TemporalCsr {
 public:
  TemporalCsr() = default;

  // Lists over events [0, num_events) of `stream`; num_events < 0 means all of them.
  // Throws ErrorKind::data on an id out of range or a NaN or decreasing timestamp.
  static TemporalCsr build(const data::EventStream& stream, int64_t num_events = -1,
                           CsrDirection direction = CsrDirection::undirected);
  // Lists over a subset of the events, given as strictly ascending indices (e.g. the
  // training events of a split that drops some); slots keep the stream's event indices.
  static TemporalCsr build(const data::EventStream& stream, const std::vector<int64_t>& events,
                           CsrDirection direction = CsrDirection::undirected);
  // Same from raw arrays of length num_events (time-sorted, ids in [0, num_nodes)).
  static TemporalCsr build(const int32_t* src, const int32_t* dst, const double* ts,
                           int64_t num_events, int32_t num_nodes,
                           CsrDirection direction = CsrDirection::undirected);

  int32_t num_nodes() const { return num_nodes_; }
  int64_t num_events() const { return num_events_; }  // events in the lists
  int64_t num_slots() const { return static_cast<int64_t>(slot_nbr_.size()); }
  CsrDirection direction() const { return direction_; }
  int64_t max_degree() const { return max_degree_; }

  // Slots of node v are [begin(v), end(v)), oldest first.
  int64_t begin(int32_t v) const { return indptr_[static_cast<size_t>(v)]; }
  int64_t end(int32_t v) const { return indptr_[static_cast<size_t>(v) + 1]; }
  int64_t degree(int32_t v) const { return end(v) - begin(v); }

  const int64_t* indptr() const { return indptr_.data(); }        // [N+1]
  const int32_t* neighbours() const { return slot_nbr_.data(); }  // [slots] other endpoint
  const int64_t* events() const { return slot_event_.data(); }    // [slots] event index
  const double* times() const { return slot_ts_.data(); }         // [slots] event time
  // [slots] undirected only (else nullptr): the slot of the same event in the other
  // endpoint's list (itself for a self loop). A next-hop query (nbr, event time) ends at or
  // just before it, so multi-hop sampling needs no binary search.
  const int64_t* twins() const {
    return direction_ == CsrDirection::undirected ? slot_twin_.data() : nullptr;
  }

  // One past the last slot of v strictly earlier than t: the candidates of a query (v, t)
  // are [begin(v), earlier_end(v, t)).
  int64_t earlier_end(int32_t v, double t) const;

 private:
  int32_t num_nodes_ = 0;
  int64_t num_events_ = 0;
  CsrDirection direction_ = CsrDirection::undirected;
  int64_t max_degree_ = 0;
  std::vector<int64_t> indptr_;
  std::vector<int32_t> slot_nbr_;
  std::vector<int64_t> slot_event_;
  std::vector<double> slot_ts_;
  std::vector<int64_t> slot_twin_;

  // Events are ids[i] for i in [0, num_events), or i itself when ids is nullptr; `total` is
  // the length of the arrays.
  static TemporalCsr build_from(const int32_t* src, const int32_t* dst, const double* ts,
                                int64_t total, const int64_t* ids, int64_t num_events,
                                int32_t num_nodes, CsrDirection direction);
};

// First index in the sorted range ts[0, n) whose value is >= t (n when none): a branch-free
// binary search, the inner step of every temporal query.
inline int64_t lower_bound_time(const double* ts, int64_t n, double t) {
  if (n <= 0) return 0;
  const double* base = ts;
  while (n > 1) {
    const int64_t half = n / 2;
    // The select compiles to a conditional move, so a mispredicted branch never stalls it.
    base = (base[half] < t) ? base + half : base;
    n -= half;
  }
  return (base - ts) + (*base < t ? 1 : 0);
}

// The same answer, found by galloping out from a guess `hint` in [0, n]: a handful of loads
// next to the hint when the answer is near it (time-ordered queries), twice the cost of
// the plain search at worst.
inline int64_t lower_bound_time_from(const double* ts, int64_t n, double t, int64_t hint) {
  if (hint < n && ts[hint] < t) {  // the answer lies after the hint
    int64_t lo = hint + 1;         // everything before lo is earlier than t
    int64_t step = 1;
    while (lo + step <= n && ts[lo + step - 1] < t) {
      lo += step;
      step *= 2;
    }
    const int64_t hi = lo + step - 1 < n ? lo + step - 1 : n;
    return lo + lower_bound_time(ts + lo, hi - lo, t);
  }
  int64_t hi = hint;  // the answer is at most hi
  int64_t step = 1;
  while (hi - step >= 0 && ts[hi - step] >= t) {
    hi -= step;
    step *= 2;
  }
  const int64_t lo = hi - step + 1 > 0 ? hi - step + 1 : 0;
  return lo + lower_bound_time(ts + lo, hi - lo, t);
}

}  // namespace depbloom::graph
