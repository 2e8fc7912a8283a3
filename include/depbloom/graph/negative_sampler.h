// Negative destinations for link prediction. Training: a fresh uniform node per event and
// epoch. Evaluation: random, historical or inductive negatives (Poursafaei et al., NeurIPS
// 2022), k per positive for MRR, fixed for a split by the seed. Every negative is a pure
// function of (seed, epoch or split, event index, draw number): batch layout, thread count
// and rank never change it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/core/name_table.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/graph/temporal_csr.h"

namespace depbloom::graph {

// The nodes a negative destination is drawn from: the item side [num_users, num_nodes)
// when the stream is bipartite, else every node [0, num_nodes).
struct DestinationRange {
  int32_t begin = 0;
  int32_t end = 0;
  static DestinationRange of(const data::EventStream& stream);
  int32_t size() const { return end - begin; }
};

// Training negatives: negative j of event e in epoch `epoch` is a uniform node of the
// destination range, from Philox keyed by (seed, negative_train, epoch) at index e, lane
// j / 4. It may coincide with the positive destination (as in TGL and TGN training).
class TrainNegativeSampler {
 public:
  TrainNegativeSampler(DestinationRange range, uint64_t seed);
  TrainNegativeSampler(const data::EventStream& stream, uint64_t seed)
      : TrainNegativeSampler(DestinationRange::of(stream), seed) {}

  int32_t draw(int64_t event, int32_t j, uint32_t epoch) const;
  // out[(e - first_event) * per_event + j] = draw(e, j, epoch) for e in [first, first+count).
  void sample(int64_t first_event, int64_t count, int32_t per_event, uint32_t epoch,
              int32_t* out) const;
  // out[i * per_event + j] = draw(events[i], j, epoch): for batches that skip events.
  void sample_events(const int64_t* events, int64_t count, int32_t per_event, uint32_t epoch,
                     int32_t* out) const;
  DestinationRange range() const { return range_; }

 private:
  DestinationRange range_;
  uint64_t seed_;
};

enum class EvalNegativeStrategy : uint8_t { random, historical, inductive, tgb };
// "random" | "historical" | "inductive" | "tgb".
const NameTable<EvalNegativeStrategy>& eval_negative_strategy_names();
const char* eval_negative_strategy_name(EvalNegativeStrategy strategy);

// Evaluation negatives for a positive event i = (u, v, t), as destinations scored against
// u (one-vs-many, so the k negatives of a positive give its reciprocal rank). Definitions:
//   history       the training events: a list of event indices, or events [0, history_end).
//   now(u, t)     destinations w with an event (u, w) at exactly time t (it holds v).
//   hist(u)       destinations w with a history event (u, w)                  [historical]
//   ind(u, t)     destinations w with an event (u, w) strictly before t, and no history
//                 event (u, w): edges seen since, never in training           [inductive]
// The k negatives of event i are distinct and never in now(u, t):
//   random:      k uniform draws from the destination range.
//   historical:  min(ceil(k/2), |hist(u) \ now|) uniform draws without replacement from
//                hist(u) \ now(u, t), then uniform draws from the destination range for the
//                rest (the half-historical, half-random mix of TGB's evaluation sets).
//   inductive:   the same with ind(u, t) in place of hist(u).
//   tgb:         the event's row of stream.fixed_negatives (TGB's fixed sets, as given,
//                data.tgb_negatives); k must equal stream.fixed_k.
// Draws come from Philox keyed by (seed, negative_eval, split) at index i, so the negatives
// of a split are fixed by the seed. When the range has fewer eligible nodes than k, the last
// ones repeat (only on toy graphs). Pool slots come first in each row, random ones after.
class EvalNegativeSampler {
 public:
  // Both keep a reference to `stream`, which must outlive the sampler. History: events
  // [0, history_end), or the strictly ascending indices `history_events` (a split's train).
  EvalNegativeSampler(const data::EventStream& stream, int64_t history_end,
                      EvalNegativeStrategy strategy, int32_t negatives_per_positive, uint64_t seed);
  EvalNegativeSampler(const data::EventStream& stream, const std::vector<int64_t>& history_events,
                      EvalNegativeStrategy strategy, int32_t negatives_per_positive, uint64_t seed);

  // out[(i - first_event) * k + j]: negative j of event i, for i in [first, first+count).
  // `split` (e.g. 1 validation, 2 test) keys the draws.
  void sample(uint32_t split, int64_t first_event, int64_t count, int32_t* out) const;
  // out[i * k + j]: negative j of event events[i]; the same as the contiguous call gives.
  void sample_events(uint32_t split, const int64_t* events, int64_t count, int32_t* out) const;
  // All negatives of the listed events (a split's val or test), row-major [size, k].
  std::vector<int32_t> sample_split(uint32_t split, const std::vector<int64_t>& events) const;

  int32_t negatives_per_positive() const { return k_; }
  EvalNegativeStrategy strategy() const { return strategy_; }
  DestinationRange range() const { return range_; }
  // The pools, for tests and statistics: hist(u) sorted by id, and ind(u, t) for t = +inf
  // in order of first appearance with the time of that first appearance.
  const std::vector<int64_t>& historical_indptr() const { return hist_indptr_; }
  const std::vector<int32_t>& historical_destinations() const { return hist_dst_; }
  const std::vector<int64_t>& inductive_indptr() const { return ind_indptr_; }
  const std::vector<int32_t>& inductive_destinations() const { return ind_dst_; }
  const std::vector<double>& inductive_first_times() const { return ind_first_ts_; }

 private:
  void init(const std::vector<uint8_t>& in_history);  // in_history: [E] 1 = history event
  void sample_one(uint32_t split, int64_t event, std::vector<int32_t>& scratch, int32_t* out) const;

  const data::EventStream& stream_;
  EvalNegativeStrategy strategy_;
  int32_t k_;
  uint64_t seed_;
  DestinationRange range_;
  TemporalCsr out_edges_;             // outgoing interactions of every node, time-sorted
  std::vector<int64_t> hist_indptr_;  // [N+1] into hist_dst_
  std::vector<int32_t> hist_dst_;     // hist(u), sorted by id
  std::vector<int64_t> ind_indptr_;   // [N+1] into ind_dst_ / ind_first_ts_
  std::vector<int32_t> ind_dst_;      // destinations of u never met in the history
  std::vector<double> ind_first_ts_;  // time of their first event, non-decreasing per u
};

}  // namespace depbloom::graph
