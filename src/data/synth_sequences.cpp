// Stage 2 of the generator: each source's own history. Its first event opens a partner;
// later ones open a new partner with probability q(activity) or go back to a recent one
// (the latest with high probability), and events with the same partner cluster in sessions.
#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"
#include "synth_internal.h"

namespace depbloom::data::synth {
namespace {

double novelty_shape(const Profile& p, int64_t a) {
  if (p.novelty_gamma == 0.0) return 1.0;
  const double fall =
      1.0 / (1.0 + std::pow(static_cast<double>(a) / p.novelty_a0, p.novelty_gamma));
  return p.novelty_floor + (1.0 - p.novelty_floor) * fall;
}

constexpr double kMaxNovelty = 0.95;

// The constant c in q(a) = c * shape(a) for which the expected number of new pairs is
// `new_pairs` (every source's first event is new; the rest are new with probability q).
double solve_novelty(const Profile& p, const std::vector<int64_t>& activity, int64_t pairs) {
  const double wanted = static_cast<double>(pairs - static_cast<int64_t>(activity.size()));
  if (wanted <= 0.0) return 0.0;
  auto expected = [&](double c) {
    double s = 0.0;
    for (int64_t a : activity)
      s += static_cast<double>(a - 1) * std::min(kMaxNovelty, c * novelty_shape(p, a));
    return s;
  };
  double lo = 0.0, hi = 1.0;
  while (expected(hi) < wanted && hi < 1e12) hi *= 2.0;
  for (int it = 0; it < 80; ++it) {
    const double mid = 0.5 * (lo + hi);
    (expected(mid) < wanted ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Rank r in [1, d - 1] with P(r) ~ r^-s, by inverting a continuous Pareto on [1, d)
// (log-uniform when s = 1).
int64_t draw_rank(SynthRng& rng, int64_t d, double s) {
  const double u = rng.uniform();
  double x;
  if (std::abs(s - 1.0) < 1e-9) {
    x = std::pow(static_cast<double>(d), u);
  } else {
    const double top = std::pow(static_cast<double>(d), 1.0 - s);
    x = std::pow(1.0 - u * (1.0 - top), 1.0 / (1.0 - s));
  }
  return std::clamp<int64_t>(static_cast<int64_t>(x), 1, d - 1);
}

// One source: partner indices into partner[0..a) and times into time[0..a); returns the
// number of distinct partners. `recent` is scratch: distinct partners, most recent last.
int64_t one_source(const Profile& p, int64_t a, double q, int64_t max_partners, double span,
                   SynthRng& rng, int32_t* partner, int64_t* time, std::vector<int32_t>& recent,
                   std::vector<double>& gap) {
  recent.clear();
  recent.push_back(0);
  partner[0] = 0;
  int64_t d = 1;
  for (int64_t k = 1; k < a; ++k) {
    if (d < max_partners && rng.uniform() < q) {
      partner[k] = static_cast<int32_t>(d);
      recent.push_back(static_cast<int32_t>(d));
      ++d;
      continue;
    }
    int64_t rank = 0;  // 0 = the latest partner
    if (d > 1 && rng.uniform() >= p.stay_last) rank = draw_rank(rng, d, p.rank_exponent);
    const size_t at = recent.size() - 1 - static_cast<size_t>(rank);
    const int32_t j = recent[at];
    recent.erase(recent.begin() + static_cast<std::ptrdiff_t>(at));
    recent.push_back(j);
    partner[k] = j;
  }

  // Gaps: short inside a session (mostly when the partner stays the same), long between.
  gap.assign(a, 0.0);
  double short_sum = 0.0, long_sum = 0.0;
  for (int64_t k = 1; k < a; ++k) {
    const bool same = partner[k] == partner[k - 1];
    const bool in_session = rng.uniform() < (same ? p.short_same : p.short_switch);
    const double median = in_session ? p.short_median : p.long_median;
    const double sigma = in_session ? p.short_sigma : p.long_sigma;
    const double g = median * std::exp(sigma * rng.normal());
    gap[k] = in_session ? g : -g;  // the sign marks long gaps until they are rescaled
    (in_session ? short_sum : long_sum) += g;
  }
  // A history longer than the span is squeezed into a random 60-95% of it, long gaps first.
  double long_scale = 1.0, all_scale = 1.0;
  const double length = short_sum + long_sum;
  if (length > span) {
    const double target = span * (0.6 + 0.35 * rng.uniform());
    if (short_sum < target && long_sum > 0.0) {
      long_scale = (target - short_sum) / long_sum;
    } else {
      long_scale = 0.0;
      all_scale = target / short_sum;
    }
  }
  const double used = std::min(span, (short_sum + long_scale * long_sum) * all_scale);
  double t = (span - used) * std::pow(rng.uniform(), 1.0 / (1.0 + p.growth));
  for (int64_t k = 0; k < a; ++k) {
    const double g = gap[k] >= 0.0 ? gap[k] * all_scale : -gap[k] * long_scale * all_scale;
    t = std::min(span, t + g);
    time[k] = static_cast<int64_t>(std::floor(t));
  }
  return d;
}

}  // namespace

Sequences make_sequences(const Profile& p, const Degrees& d, int64_t max_partners,
                         double span_seconds, uint64_t seed) {
  const int64_t sources = static_cast<int64_t>(d.activity.size());
  Sequences seq;
  seq.offset.assign(sources + 1, 0);
  for (int64_t s = 0; s < sources; ++s) seq.offset[s + 1] = seq.offset[s] + d.activity[s];
  const int64_t events = seq.offset[sources];
  const int64_t pairs = std::llround((1.0 - p.repeat_fraction) * static_cast<double>(events));
  const double c = solve_novelty(p, d.activity, pairs);

  seq.partner.resize(events);
  seq.time.resize(events);
  std::vector<int64_t> distinct(sources);
  // Each source draws from its own lane, so the result does not depend on the schedule.
#pragma omp parallel
  {
    std::vector<int32_t> recent;
    std::vector<double> gap;
#pragma omp for schedule(dynamic, 256)
    for (int64_t s = 0; s < sources; ++s) {
      const int64_t a = d.activity[s];
      const double q = std::min(kMaxNovelty, c * novelty_shape(p, a));
      SynthRng rng(seed, Stream::sequences, static_cast<uint32_t>(s));
      distinct[s] = one_source(p, a, q, max_partners, span_seconds, rng,
                               &seq.partner[seq.offset[s]], &seq.time[seq.offset[s]], recent, gap);
    }
  }

  seq.slot_offset.assign(sources + 1, 0);
  for (int64_t s = 0; s < sources; ++s) seq.slot_offset[s + 1] = seq.slot_offset[s] + distinct[s];
  seq.slot_size.assign(seq.slot_offset[sources], 0);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t s = 0; s < sources; ++s) {
    for (int64_t k = seq.offset[s]; k < seq.offset[s + 1]; ++k)
      ++seq.slot_size[seq.slot_offset[s] + seq.partner[k]];
  }
  return seq;
}

}  // namespace depbloom::data::synth
