// Internals of the synthetic generator, shared by its stages (synth_*.cpp): the calibrated
// profile of each shape, the counter-based random source and the stage functions.
// Not a public header: only src/data includes it.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "depbloom/core/philox.h"
#include "depbloom/data/synth.h"

namespace depbloom::data::synth {

// Sub-streams of RngPurpose::synth; a stage never shares draws with another.
enum class Stream : uint32_t { degrees = 1, split = 2, sequences = 3, assign = 4, features = 5 };

// Sequential draws from Philox keyed by (seed, stream, lane): a stage that gives each
// source its own lane draws the same numbers whatever the thread that runs it.
class SynthRng {
 public:
  SynthRng(uint64_t seed, Stream stream, uint32_t lane)
      : key_{seed, static_cast<uint32_t>(RngPurpose::synth) | (static_cast<uint32_t>(stream) << 8),
             0},
        lane_(lane) {}
  uint32_t next_u32() {
    if (pos_ == 4) {
      buf_ = philox_draw(key_, counter_++, lane_);
      pos_ = 0;
    }
    return buf_.v[pos_++];
  }
  double uniform() {  // [0, 1)
    const uint32_t a = next_u32();
    return uniform_double(a, next_u32());
  }
  double open_uniform() {
    return (std::floor(uniform() * 9007199254740992.0) + 0.5) / 9007199254740992.0;
  }
  double normal() {  // Box-Muller; one of the pair is dropped to keep the draw count simple
    const double r = std::sqrt(-2.0 * std::log(open_uniform()));
    return r * std::cos(6.283185307179586 * uniform());
  }
  uint32_t below(uint32_t n) { return uniform_below(next_u32(), n); }

 private:
  RngKey key_;
  uint32_t lane_;
  uint64_t counter_ = 0;
  Philox4 buf_{};
  int pos_ = 4;
};

// The calibrated description of a shape (counts at scale 1). See profiles in synth.cpp
// for where each number comes from.
struct Profile {
  bool bipartite = true;
  int64_t users = 0, items = 0;  // bipartite
  int64_t nodes = 0;             // one node type
  int64_t events = 0;
  double span_days = 0;
  double repeat_fraction = 0;
  // Bipartite: quantile function of user activity as (u, value) knots, log-linear between;
  // item popularity as a Pareto tail with this CCDF exponent.
  std::vector<std::pair<double, double>> activity_knots;
  double item_pareto = 2.0;
  // One node type: total degree from a broken power law, exponent body_alpha below the knee
  // and alpha above it; the knee is solved for the mean degree 2E/N.
  double degree_alpha = 2.8, degree_body_alpha = 1.5;
  // Per-event probability of a new partner for a source of activity a:
  // q(a) = c (f + (1 - f) / (1 + (a / novelty_a0)^novelty_gamma)) with f = novelty_floor,
  // c solved for the repeat fraction.
  double novelty_a0 = 1.0, novelty_gamma = 0.0, novelty_floor = 0.0;
  // A repeat goes to the latest partner with probability stay_last, else to the r-th latest
  // (r >= 1) with P(r) ~ r^-rank_exponent.
  double stay_last = 0.8, rank_exponent = 1.6;
  // Gaps between a source's events: short (within a session) with probability short_same
  // after an event with the same partner, short_switch otherwise; both log-normal (seconds).
  double short_same = 0.8, short_switch = 0.45;
  double short_median = 150, short_sigma = 1.4;
  double long_median = 86400, long_sigma = 1.3;
  double growth = 0.0;  // sources start later with density ~ t^growth (activity grows)
};

const Profile& profile_of(SynthShape shape);

// Stage 1. Degrees: per-source event counts and per-destination capacities (events each
// destination will receive), both summing to the event count.
struct Degrees {
  int64_t num_nodes = 0;
  std::vector<int32_t> source_node;  // node of each source
  std::vector<int64_t> activity;     // events of each source
  std::vector<int64_t> capacity;     // [num_nodes] events each node receives as dst
  bool one_type = false;  // any node may be a destination (else only those with capacity)
};
Degrees make_degrees(const Profile& p, int64_t users, int64_t items, int64_t nodes, int64_t events,
                     uint64_t seed);

// Integers floor(c x_k) (at least 1) with c chosen and the remainder spread over the largest
// fractional parts so that they sum to `total` exactly.
std::vector<int64_t> integerise(const std::vector<double>& x, int64_t total);

// Stage 2. Per source: the partner index of each event (0, 1, ... in order of first use)
// and its time in seconds; events of source s at [offset[s], offset[s+1]).
struct Sequences {
  std::vector<int64_t> offset;       // [S + 1]
  std::vector<int32_t> partner;      // [E] index among the source's distinct partners
  std::vector<int64_t> time;         // [E] whole seconds
  std::vector<int64_t> slot_offset;  // [S + 1] distinct partners of source s
  std::vector<int64_t> slot_size;    // events per (source, partner index)
};
Sequences make_sequences(const Profile& p, const Degrees& d, int64_t max_partners,
                         double span_seconds, uint64_t seed);

// Stage 3. A destination node for every (source, partner index) slot: drawn in proportion
// to remaining capacity among the nodes that can still take the slot's events, never the
// source itself or one of its partners. Returns [slots] node ids.
std::vector<int32_t> assign_partners(const Degrees& d, const Sequences& seq, uint64_t seed);

}  // namespace depbloom::data::synth
