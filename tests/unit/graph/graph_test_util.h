// Shared pieces of the graph tests: random event streams (tied timestamps and self loops
// included) and the brute-force event scans the CSR and samplers are checked against.
#pragma once

#include <omp.h>

#include <cstdint>
#include <random>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::graph::testing {

struct StreamShape {
  int32_t num_nodes = 50;
  int64_t num_events = 2000;
  bool bipartite = false;
  int32_t num_users = 0;      // bipartite only
  double tie_fraction = 0.3;  // share of events at the previous event's time
  double self_loop_fraction = 0.05;
};

inline data::EventStream random_stream(const StreamShape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  data::EventStream s;
  s.num_nodes = shape.num_nodes;
  s.bipartite = shape.bipartite;
  s.num_users = shape.bipartite ? shape.num_users : 0;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> step(1, 5);
  double t = 10.0;
  for (int64_t e = 0; e < shape.num_events; ++e) {
    if (e > 0 && unit(rng) >= shape.tie_fraction) t += step(rng);
    int32_t a, b;
    if (shape.bipartite) {
      a = std::uniform_int_distribution<int32_t>(0, shape.num_users - 1)(rng);
      b = std::uniform_int_distribution<int32_t>(shape.num_users, shape.num_nodes - 1)(rng);
    } else {
      std::uniform_int_distribution<int32_t> node(0, shape.num_nodes - 1);
      a = node(rng);
      b = unit(rng) < shape.self_loop_fraction ? a : node(rng);
    }
    s.src.push_back(a);
    s.dst.push_back(b);
    s.ts.push_back(t);
    s.event_id.push_back(e);
  }
  return s;
}

// One interaction of a node as the brute-force scan sees it.
struct Interaction {
  int32_t nbr;
  int64_t event;
  double ts;
  bool operator==(const Interaction& o) const {
    return nbr == o.nbr && event == o.event && ts == o.ts;
  }
};

// Interactions of v among events [0, prefix), in event order. A self loop counts once.
inline std::vector<Interaction> scan_interactions(const data::EventStream& s, int32_t v,
                                                  int64_t prefix, bool undirected) {
  std::vector<Interaction> out;
  for (int64_t e = 0; e < prefix; ++e) {
    const size_t i = static_cast<size_t>(e);
    if (s.src[i] == v) {
      out.push_back({s.dst[i], e, s.ts[i]});
    } else if (undirected && s.dst[i] == v) {
      out.push_back({s.src[i], e, s.ts[i]});
    }
  }
  return out;
}

// The k most recent interactions of v strictly before t, most recent first.
inline std::vector<Interaction> scan_recent(const data::EventStream& s, int32_t v, double t,
                                            int32_t k) {
  std::vector<Interaction> all = scan_interactions(s, v, s.num_events(), true);
  std::vector<Interaction> out;
  for (auto it = all.rbegin(); it != all.rend() && static_cast<int32_t>(out.size()) < k; ++it) {
    if (it->ts < t) out.push_back(*it);
  }
  return out;
}

// Runs fn with `threads` OpenMP threads, restoring the previous setting.
template <class Fn>
void with_threads(int threads, Fn&& fn) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  fn();
  omp_set_num_threads(before);
}

}  // namespace depbloom::graph::testing
