// Fennel (Tsourakakis et al., WSDM 2014) over a window's nodes, restreamed from the previous
// windows (Nishimura and Ugander, KDD 2013): nodes arrive in order of first appearance, and
// a neighbour not yet placed in this window counts in its part from the last window that
// touched it, so stable groups keep their parts and nodes rarely move.
#include <algorithm>
#include <cmath>

#include "node_partitioners.h"

namespace depbloom::partition {
namespace {

// Fennel's exponent: a part of load L costs alpha * L^gamma.
constexpr double kGamma = 1.5;
// Fennel's nu: no part grows past this times the mean load (unless none has room).
constexpr double kLoadCap = 1.1;
// Share of a node's own events credited to the part it had last: moving must gain more.
constexpr double kStayBonus = 0.1;

struct FennelState {
  std::vector<double> load;  // [ranks] vertex weight placed in this window
  double alpha = 0;          // Fennel's sqrt(k) m / n^1.5, in event weights
  double cap = 0;            // kLoadCap x mean load
};

// The neighbours' event weight per part (placed now, or in their last window), plus the
// stay bonus for v's last part.
void part_gains(std::vector<double>& gain, const WindowGraph& g, int32_t v,
                const std::vector<int32_t>& parts, const std::vector<int32_t>& last_part) {
  std::fill(gain.begin(), gain.end(), 0.0);
  for (int64_t i = g.offsets[size_t(v)]; i < g.offsets[size_t(v) + 1]; ++i) {
    const int32_t u = g.neighbours[size_t(i)];
    int32_t part = parts[size_t(u)];
    if (part < 0) part = last_part[size_t(g.nodes[size_t(u)])];
    if (part >= 0) gain[size_t(part)] += double(g.edge_weight[size_t(i)]);
  }
  const int32_t last = last_part[size_t(g.nodes[size_t(v)])];
  if (last >= 0) gain[size_t(last)] += kStayBonus * double(g.vertex_weight[size_t(v)]);
}

// The part with the best gain minus the marginal load cost among those with room, else
// the least loaded; ties to the lower part.
int32_t best_part(const std::vector<double>& gain, const FennelState& s, double weight) {
  int32_t best = -1, least = 0;
  double best_score = 0;
  for (size_t i = 0; i < gain.size(); ++i) {
    const double load = s.load[i];
    if (load < s.load[size_t(least)]) least = static_cast<int32_t>(i);
    if (load + weight > s.cap) continue;
    const double cost = s.alpha * (std::pow(load + weight, kGamma) - std::pow(load, kGamma));
    const double score = gain[i] - cost;
    if (best < 0 || score > best_score) best = static_cast<int32_t>(i), best_score = score;
  }
  return best >= 0 ? best : least;
}

}  // namespace

std::vector<int32_t> fennel_parts(const WindowGraph& g, const std::vector<int32_t>& last_part,
                                  int ranks) {
  std::vector<int32_t> parts(static_cast<size_t>(g.size()), ranks == 1 ? 0 : -1);
  if (ranks == 1 || g.total_vertex_weight == 0) return parts;
  FennelState s;
  s.load.assign(static_cast<size_t>(ranks), 0.0);
  const double total = double(g.total_vertex_weight);
  s.alpha = std::sqrt(double(ranks)) * double(g.total_edge_weight) / std::pow(total, 1.5);
  s.cap = kLoadCap * total / ranks;
  std::vector<double> gain(static_cast<size_t>(ranks));
  for (int32_t v = 0; v < g.size(); ++v) {
    part_gains(gain, g, v, parts, last_part);
    const double weight = double(g.vertex_weight[size_t(v)]);
    const int32_t part = best_part(gain, s, weight);
    parts[size_t(v)] = part;
    s.load[size_t(part)] += weight;
  }
  return parts;
}

}  // namespace depbloom::partition
