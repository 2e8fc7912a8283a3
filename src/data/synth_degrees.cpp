// Stage 1 of the generator: how many events each source makes and each destination gets.
// Values come from stratified draws of the profile's quantile function (one draw per
// stratum of width 1/N) so that a small scale keeps the shape of the large one.
#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"
#include "synth_internal.h"

namespace depbloom::data::synth {
namespace {

// Log-linear interpolation between (u, value) knots; u in [0, 1].
double knot_quantile(const std::vector<std::pair<double, double>>& knots, double u) {
  for (size_t k = 1; k < knots.size(); ++k) {
    if (u <= knots[k].first) {
      const auto& [u0, v0] = knots[k - 1];
      const auto& [u1, v1] = knots[k];
      const double w = (u - u0) / (u1 - u0);
      return std::exp(std::log(v0) + w * (std::log(v1) - std::log(v0)));
    }
  }
  return knots.back().second;
}

// A broken power law on [1, inf): density x^-b below the knee k, k^(a-b) x^-a above it.
struct BrokenPowerLaw {
  double a, b, k;
  double body_mass() const { return (1.0 - std::pow(k, 1.0 - b)) / (b - 1.0); }
  double tail_mass() const { return std::pow(k, 1.0 - b) / (a - 1.0); }
  double mean() const {
    const double body = (std::pow(k, 2.0 - b) - 1.0) / (2.0 - b);
    const double tail = std::pow(k, 2.0 - b) / (a - 2.0);
    return (body + tail) / (body_mass() + tail_mass());
  }
  double quantile(double u) const {
    const double z = body_mass() + tail_mass();
    if (u * z < body_mass()) return std::pow(1.0 - u * z * (b - 1.0), 1.0 / (1.0 - b));
    const double survival = (1.0 - u) * z;  // = k^(a-b) x^(1-a) / (a-1)
    return std::pow(survival * (a - 1.0) * std::pow(k, b - a), 1.0 / (1.0 - a));
  }
};

// The knee that gives the wanted mean (the mean grows with the knee).
BrokenPowerLaw solve_knee(double a, double b, double mean) {
  BrokenPowerLaw law{a, b, 1.0};
  if (law.mean() >= mean) return law;
  double lo = 1.0, hi = 2.0;
  while (BrokenPowerLaw{a, b, hi}.mean() < mean) hi *= 2.0;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (BrokenPowerLaw{a, b, mid}.mean() < mean ? lo : hi) = mid;
  }
  law.k = 0.5 * (lo + hi);
  return law;
}

// One stratified draw per stratum: u_k in [k/N, (k+1)/N), kept below 1 - 0.5/N so that an
// unbounded quantile function cannot produce one absurd value.
template <typename Quantile>
std::vector<double> stratified(int64_t n, SynthRng& rng, Quantile quantile) {
  std::vector<double> x(n);
  const double cap = 1.0 - 0.5 / static_cast<double>(n);
  for (int64_t k = 0; k < n; ++k) {
    const double u = (static_cast<double>(k) + rng.uniform()) / static_cast<double>(n);
    x[k] = quantile(std::min(u, cap));
  }
  return x;
}

}  // namespace

std::vector<int64_t> integerise(const std::vector<double>& x, int64_t total) {
  const int64_t n = static_cast<int64_t>(x.size());
  DB_ASSERT(total >= n, "cannot give {} values at least 1 with a total of {}", n, total);
  auto sum_at = [&](double c) {
    int64_t s = 0;
    for (double v : x) s += std::max<int64_t>(1, static_cast<int64_t>(std::floor(c * v)));
    return s;
  };
  // Largest c whose floors do not exceed the total (the sum is monotone in c).
  double lo = 0.0, hi = 1.0;
  while (sum_at(hi) <= total) hi *= 2.0;
  for (int it = 0; it < 100 && hi - lo > 1e-15 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (sum_at(mid) <= total ? lo : hi) = mid;
  }
  std::vector<int64_t> out(n);
  std::vector<std::pair<double, int64_t>> frac;
  int64_t sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double v = lo * x[k];
    out[k] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(v)));
    sum += out[k];
    if (v >= 1.0) frac.emplace_back(v - std::floor(v), k);
  }
  // Values at the floor of 1 stay 1: raising them would change the share of one-event users.
  int64_t rest = total - sum;
  DB_ASSERT(rest >= 0 && rest <= static_cast<int64_t>(frac.size()),
            "integerise left {} units for {} candidates", rest, frac.size());
  std::nth_element(frac.begin(), frac.begin() + rest, frac.end(), [](const auto& l, const auto& r) {
    return l.first != r.first ? l.first > r.first : l.second < r.second;
  });
  for (int64_t j = 0; j < rest; ++j) ++out[frac[j].second];
  return out;
}

Degrees make_degrees(const Profile& p, int64_t users, int64_t items, int64_t nodes, int64_t events,
                     uint64_t seed) {
  Degrees d;
  SynthRng rng(seed, Stream::degrees, 0);
  if (p.bipartite) {
    d.num_nodes = users + items;
    d.activity = integerise(
        stratified(users, rng, [&](double u) { return knot_quantile(p.activity_knots, u); }),
        events);
    d.source_node.resize(users);
    for (int64_t k = 0; k < users; ++k) d.source_node[k] = static_cast<int32_t>(k);
    // Pareto: P(X > x) = x^-item_pareto for x >= 1.
    const std::vector<int64_t> cap = integerise(
        stratified(items, rng, [&](double u) { return std::pow(1.0 - u, -1.0 / p.item_pareto); }),
        events);
    d.capacity.assign(d.num_nodes, 0);
    std::copy(cap.begin(), cap.end(), d.capacity.begin() + users);
    return d;
  }

  // One node type: total degrees (summing to 2E) split into sent and received events.
  d.num_nodes = nodes;
  d.one_type = true;
  const double mean = 2.0 * static_cast<double>(events) / static_cast<double>(nodes);
  // floor() loses half a unit on average; the knee is solved for the mean before it.
  const BrokenPowerLaw law = solve_knee(p.degree_alpha, p.degree_body_alpha, mean + 0.5);
  const std::vector<int64_t> degree =
      integerise(stratified(nodes, rng, [&](double u) { return law.quantile(u); }), 2 * events);

  // A node's share of sent events is arcsine distributed (sin^2 of a uniform): most nodes
  // mostly send or mostly receive, as on talk pages.
  SynthRng split(seed, Stream::split, 0);
  std::vector<int64_t> out(nodes);
  int64_t sent = 0;
  for (int64_t v = 0; v < nodes; ++v) {
    const double s = std::pow(std::sin(1.5707963267948966 * split.uniform()), 2.0);
    out[v] = std::min(degree[v], static_cast<int64_t>(std::floor(s * degree[v] + split.uniform())));
    sent += out[v];
  }
  // Correct the total to exactly E one unit at a time at random nodes that have room.
  while (sent != events) {
    const int64_t v = split.below(static_cast<uint32_t>(nodes));
    if (sent < events && out[v] < degree[v]) {
      ++out[v];
      ++sent;
    } else if (sent > events && out[v] > 0) {
      --out[v];
      --sent;
    }
  }
  d.capacity.resize(nodes);
  for (int64_t v = 0; v < nodes; ++v) {
    d.capacity[v] = degree[v] - out[v];
    if (out[v] > 0) {
      d.source_node.push_back(static_cast<int32_t>(v));
      d.activity.push_back(out[v]);
    }
  }
  return d;
}

}  // namespace depbloom::data::synth
