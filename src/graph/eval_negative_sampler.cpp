// Evaluation negatives (random, historical, inductive): per-source pools built once from
// the stream, then each positive draws its k negatives from Philox keyed by its own index,
// so events can be processed in any order and on any number of threads.
#include <omp.h>

#include <algorithm>

#include "depbloom/core/error.h"
#include "depbloom/core/philox.h"
#include "depbloom/graph/negative_sampler.h"

namespace depbloom::graph {
namespace {

// A stream of 32-bit draws for one positive: Philox words taken four at a time.
class DrawStream {
 public:
  DrawStream(const RngKey& key, uint64_t index) : key_(key), index_(index) {}
  uint32_t next() {
    if (word_ == 4) {
      bits_ = philox_draw(key_, index_, lane_++);
      word_ = 0;
    }
    return bits_.v[word_++];
  }
  // Uniform in [0, n), n >= 1.
  int64_t below(int64_t n) {
    if (n <= int64_t{0xFFFFFFFF}) return uniform_below(next(), static_cast<uint32_t>(n));
    const uint64_t wide = (static_cast<uint64_t>(next()) << 32) | next();
    return static_cast<int64_t>(wide % static_cast<uint64_t>(n));
  }

 private:
  RngKey key_;
  uint64_t index_;
  uint32_t lane_ = 0;
  int word_ = 4;
  Philox4 bits_{};
};

bool contains(const int32_t* values, int64_t n, int32_t w) {
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] == w) return true;
  }
  return false;
}

// Moves `take` uniformly chosen entries of candidates to out (without replacement).
int32_t take_without_replacement(std::vector<int32_t>& candidates, int32_t take, DrawStream& draws,
                                 int32_t* out) {
  const int64_t n = static_cast<int64_t>(candidates.size());
  const int32_t taken = static_cast<int32_t>(std::min<int64_t>(take, n));
  for (int32_t m = 0; m < taken; ++m) {  // partial Fisher-Yates
    const int64_t j = m + draws.below(n - m);
    std::swap(candidates[static_cast<size_t>(m)], candidates[static_cast<size_t>(j)]);
    out[m] = candidates[static_cast<size_t>(m)];
  }
  return taken;
}

// tgb: the event's row of the stream's fixed negatives (TGB's evaluation sets).
void copy_fixed(const data::EventStream& s, int64_t event, int32_t k, int32_t* out) {
  const int32_t* row = s.fixed_negatives.data() + static_cast<size_t>(event) * k;
  if (row[0] < 0)
    DB_THROW(data, "eval.negative_strategy tgb: event {} ({} -> {} at t {}) has no TGB negatives",
             event, s.original_id[s.src[event]], s.original_id[s.dst[event]], s.ts[event]);
  std::copy(row, row + k, out);
}

}  // namespace

const NameTable<EvalNegativeStrategy>& eval_negative_strategy_names() {
  static const NameTable<EvalNegativeStrategy> names{
      {EvalNegativeStrategy::random, "random"},
      {EvalNegativeStrategy::historical, "historical"},
      {EvalNegativeStrategy::inductive, "inductive"},
      {EvalNegativeStrategy::tgb, "tgb"}};
  return names;
}

const char* eval_negative_strategy_name(EvalNegativeStrategy strategy) {
  return eval_negative_strategy_names().name(strategy);
}

EvalNegativeSampler::EvalNegativeSampler(const data::EventStream& stream, int64_t history_end,
                                         EvalNegativeStrategy strategy,
                                         int32_t negatives_per_positive, uint64_t seed)
    : stream_(stream),
      strategy_(strategy),
      k_(negatives_per_positive),
      seed_(seed),
      range_(DestinationRange::of(stream)) {
  DB_ASSERT(history_end >= 0 && history_end <= stream.num_events(),
            "history end {} outside [0, {}]", history_end, stream.num_events());
  std::vector<uint8_t> in_history(static_cast<size_t>(stream.num_events()), 0);
  std::fill(in_history.begin(), in_history.begin() + history_end, uint8_t{1});
  init(in_history);
}

EvalNegativeSampler::EvalNegativeSampler(const data::EventStream& stream,
                                         const std::vector<int64_t>& history_events,
                                         EvalNegativeStrategy strategy,
                                         int32_t negatives_per_positive, uint64_t seed)
    : stream_(stream),
      strategy_(strategy),
      k_(negatives_per_positive),
      seed_(seed),
      range_(DestinationRange::of(stream)) {
  std::vector<uint8_t> in_history(static_cast<size_t>(stream.num_events()), 0);
  int64_t before = -1;
  for (int64_t e : history_events) {
    DB_ASSERT(e > before && e < stream.num_events(),
              "history events must ascend inside [0, {}); found {} after {}", stream.num_events(),
              e, before);
    in_history[static_cast<size_t>(e)] = 1;
    before = e;
  }
  init(in_history);
}

void EvalNegativeSampler::init(const std::vector<uint8_t>& in_history) {
  DB_ASSERT(k_ >= 1, "{} negatives per positive", k_);
  if (strategy_ == EvalNegativeStrategy::tgb && stream_.fixed_k != k_) {
    if (stream_.fixed_k == 0)
      DB_THROW(config, "eval.negative_strategy tgb needs data.tgb_negatives (TGB's negatives)");
    DB_THROW(config,
             "eval.negatives is {}, but TGB's sets hold {} per query; set eval.negatives: {}", k_,
             stream_.fixed_k, stream_.fixed_k);
  }
  DB_ASSERT(range_.size() >= 1, "empty destination range [{}, {})", range_.begin, range_.end);
  out_edges_ = TemporalCsr::build(stream_, -1, CsrDirection::out);
  const int32_t n = out_edges_.num_nodes();
  const size_t nn = static_cast<size_t>(n);
  const int32_t* slot_dst = out_edges_.neighbours();
  const int64_t* slot_event = out_edges_.events();
  const double* slot_ts = out_edges_.times();
  hist_indptr_.assign(nn + 1, 0);
  ind_indptr_.assign(nn + 1, 0);

  // Two passes over sources (count, then fill); a per-thread stamp array marks the
  // destinations already met for the current source.
  for (int pass = 0; pass < 2; ++pass) {
#pragma omp parallel
    {
      std::vector<int32_t> stamp(nn, -1);
#pragma omp for schedule(dynamic, 256)
      for (int32_t u = 0; u < n; ++u) {
        const size_t uu = static_cast<size_t>(u);
        int64_t hist = 0;
        int64_t ind = 0;
        for (int64_t s = out_edges_.begin(u); s < out_edges_.end(u); ++s) {
          const int32_t w = slot_dst[s];
          if (!in_history[static_cast<size_t>(slot_event[s])] ||
              stamp[static_cast<size_t>(w)] == u) {
            continue;
          }
          stamp[static_cast<size_t>(w)] = u;
          if (pass == 1) hist_dst_[static_cast<size_t>(hist_indptr_[uu] + hist)] = w;
          ++hist;
        }
        // In time order, so each destination enters with the time it was first met.
        for (int64_t s = out_edges_.begin(u); s < out_edges_.end(u); ++s) {
          const int32_t w = slot_dst[s];
          if (stamp[static_cast<size_t>(w)] == u) continue;  // in the history or met already
          stamp[static_cast<size_t>(w)] = u;
          if (pass == 1) {
            const size_t at = static_cast<size_t>(ind_indptr_[uu] + ind);
            ind_dst_[at] = w;
            ind_first_ts_[at] = slot_ts[s];
          }
          ++ind;
        }
        if (pass == 0) {
          hist_indptr_[uu + 1] = hist;
          ind_indptr_[uu + 1] = ind;
        } else {
          std::sort(hist_dst_.begin() + hist_indptr_[uu], hist_dst_.begin() + hist_indptr_[uu + 1]);
        }
      }
    }
    if (pass == 0) {
      for (size_t u = 0; u < nn; ++u) {
        hist_indptr_[u + 1] += hist_indptr_[u];
        ind_indptr_[u + 1] += ind_indptr_[u];
      }
      hist_dst_.resize(static_cast<size_t>(hist_indptr_[nn]));
      ind_dst_.resize(static_cast<size_t>(ind_indptr_[nn]));
      ind_first_ts_.resize(static_cast<size_t>(ind_indptr_[nn]));
    }
  }
}

void EvalNegativeSampler::sample(uint32_t split, int64_t first_event, int64_t count,
                                 int32_t* out) const {
  DB_ASSERT(first_event >= 0 && count >= 0 && first_event + count <= stream_.num_events(),
            "negatives for events [{}, {}) of a stream of {}", first_event, first_event + count,
            stream_.num_events());
  // tgb: a copy, on this thread (its error must not leave an OpenMP region).
  if (strategy_ == EvalNegativeStrategy::tgb) {
    for (int64_t i = 0; i < count; ++i) copy_fixed(stream_, first_event + i, k_, out + i * k_);
    return;
  }
#pragma omp parallel if (count >= 64)
  {
    std::vector<int32_t> scratch;  // per thread, reused for every event it handles
#pragma omp for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      sample_one(split, first_event + i, scratch, out + i * k_);
    }
  }
}

void EvalNegativeSampler::sample_events(uint32_t split, const int64_t* events, int64_t count,
                                        int32_t* out) const {
  DB_ASSERT(count >= 0, "negative event count {}", count);
  for (int64_t i = 0; i < count; ++i) {
    DB_ASSERT(events[i] >= 0 && events[i] < stream_.num_events(),
              "negatives for event {} of a stream of {}", events[i], stream_.num_events());
  }
  if (strategy_ == EvalNegativeStrategy::tgb) {
    for (int64_t i = 0; i < count; ++i) copy_fixed(stream_, events[i], k_, out + i * k_);
    return;
  }
#pragma omp parallel if (count >= 64)
  {
    std::vector<int32_t> scratch;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < count; ++i) sample_one(split, events[i], scratch, out + i * k_);
  }
}

std::vector<int32_t> EvalNegativeSampler::sample_split(uint32_t split,
                                                       const std::vector<int64_t>& events) const {
  std::vector<int32_t> out(events.size() * static_cast<size_t>(k_));
  sample_events(split, events.data(), static_cast<int64_t>(events.size()), out.data());
  return out;
}

void EvalNegativeSampler::sample_one(uint32_t split, int64_t event, std::vector<int32_t>& scratch,
                                     int32_t* out) const {
  const size_t e = static_cast<size_t>(event);
  const int32_t u = stream_.src[e];
  const double t = stream_.ts[e];
  DrawStream draws(RngKey{seed_, static_cast<uint32_t>(RngPurpose::negative_eval), split},
                   static_cast<uint64_t>(event));

  // now(u, t): the destinations of u's events at exactly t, contiguous in its slots.
  const double* slot_ts = out_edges_.times();
  const int64_t now_begin = out_edges_.earlier_end(u, t);
  const int64_t now_end =
      std::upper_bound(slot_ts + now_begin, slot_ts + out_edges_.end(u), t) - slot_ts;
  const int32_t* now = out_edges_.neighbours() + now_begin;
  const int64_t now_count = now_end - now_begin;
  int32_t picked = 0;  // out[0, picked) are chosen
  auto eligible = [&](int32_t w) {
    return !contains(now, now_count, w) && !contains(out, picked, w);
  };

  if (strategy_ != EvalNegativeStrategy::random) {
    const int32_t* pool = nullptr;
    int64_t pool_size = 0;
    if (strategy_ == EvalNegativeStrategy::historical) {
      pool = hist_dst_.data() + hist_indptr_[static_cast<size_t>(u)];
      pool_size = hist_indptr_[static_cast<size_t>(u) + 1] - hist_indptr_[static_cast<size_t>(u)];
    } else {
      const int64_t b = ind_indptr_[static_cast<size_t>(u)];
      pool = ind_dst_.data() + b;
      pool_size = lower_bound_time(ind_first_ts_.data() + b,
                                   ind_indptr_[static_cast<size_t>(u) + 1] - b, t);
    }
    const int32_t want = (k_ + 1) / 2;
    // Rejection works while eligible entries are plentiful; small pools, or a run of
    // rejections, switch to an exact draw from the list of eligible entries.
    const int64_t max_attempts = 16 * int64_t{want} + 64;
    if (pool_size > 4 * int64_t{want} + 16) {
      for (int64_t attempt = 0; attempt < max_attempts && picked < want; ++attempt) {
        const int32_t w = pool[draws.below(pool_size)];
        if (eligible(w)) out[picked++] = w;
      }
    }
    if (picked < want && pool_size > 0) {
      scratch.clear();
      for (int64_t p = 0; p < pool_size; ++p) {
        if (eligible(pool[p])) scratch.push_back(pool[p]);
      }
      picked += take_without_replacement(scratch, want - picked, draws, out + picked);
    }
  }

  // The rest: uniform over the destination range, same two-step scheme.
  const int64_t range_size = range_.size();
  const int64_t max_attempts = 16 * int64_t{k_ - picked} + 64;
  for (int64_t attempt = 0; attempt < max_attempts && picked < k_; ++attempt) {
    const int32_t w = range_.begin + static_cast<int32_t>(draws.below(range_size));
    if (eligible(w)) out[picked++] = w;
  }
  if (picked < k_) {
    scratch.clear();
    for (int32_t w = range_.begin; w < range_.end; ++w) {
      if (eligible(w)) scratch.push_back(w);
    }
    picked += take_without_replacement(scratch, k_ - picked, draws, out + picked);
  }
  // Fewer eligible destinations than k (toy graphs): repeat uniform ones.
  while (picked < k_) {
    out[picked++] = range_.begin + static_cast<int32_t>(draws.below(range_size));
  }
}

}  // namespace depbloom::graph
