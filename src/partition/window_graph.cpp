// Builds a window's interaction graph: first-appearance local ids, vertex weights, and the
// pairs' event counts as a symmetric CSR (what METIS takes and Fennel walks).
#include "window_graph.h"

#include <algorithm>

namespace depbloom::partition {
namespace {

int32_t local_id(int32_t node, WindowGraph& g, std::vector<int32_t>& local_of) {
  int32_t& id = local_of[static_cast<size_t>(node)];
  if (id < 0) {
    id = g.size();
    g.nodes.push_back(node);
    g.vertex_weight.push_back(0);
  }
  return id;
}

// The symmetric CSR of the sorted, de-duplicated pairs (a < b) and their counts.
void fill_adjacency(WindowGraph& g, const std::vector<uint64_t>& pairs) {
  std::vector<std::pair<int32_t, int32_t>> edges;  // (a, b), one per distinct pair
  std::vector<int64_t> weights;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i > 0 && pairs[i] == pairs[i - 1]) {
      ++weights.back();
      continue;
    }
    edges.emplace_back(static_cast<int32_t>(pairs[i] >> 32), static_cast<int32_t>(pairs[i]));
    weights.push_back(1);
  }
  const size_t n = g.nodes.size();
  g.offsets.assign(n + 1, 0);
  for (const auto& [a, b] : edges) ++g.offsets[size_t(a) + 1], ++g.offsets[size_t(b) + 1];
  for (size_t v = 0; v < n; ++v) g.offsets[v + 1] += g.offsets[v];
  g.neighbours.resize(static_cast<size_t>(g.offsets[n]));
  g.edge_weight.resize(g.neighbours.size());
  std::vector<int64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (size_t e = 0; e < edges.size(); ++e) {
    const auto [a, b] = edges[e];
    const auto at_a = static_cast<size_t>(fill[size_t(a)]++);
    const auto at_b = static_cast<size_t>(fill[size_t(b)]++);
    g.neighbours[at_a] = b, g.edge_weight[at_a] = weights[e];
    g.neighbours[at_b] = a, g.edge_weight[at_b] = weights[e];
    g.total_edge_weight += weights[e];
  }
}

}  // namespace

WindowGraph build_window_graph(const data::EventStream& stream, const int64_t* rows, int64_t count,
                               std::vector<int32_t>& local_of) {
  WindowGraph g;
  std::vector<uint64_t> pairs;  // (low local id << 32) | high local id, one per event
  pairs.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const auto row = static_cast<size_t>(rows[i]);
    const int32_t a = local_id(stream.src[row], g, local_of);
    const int32_t b = local_id(stream.dst[row], g, local_of);
    ++g.vertex_weight[size_t(a)];
    if (a == b) continue;
    ++g.vertex_weight[size_t(b)];
    const auto lo = static_cast<uint64_t>(std::min(a, b)),
               hi = static_cast<uint64_t>(std::max(a, b));
    pairs.push_back(lo << 32 | hi);
  }
  std::sort(pairs.begin(), pairs.end());
  fill_adjacency(g, pairs);
  for (int64_t w : g.vertex_weight) g.total_vertex_weight += w;
  for (int32_t node : g.nodes) local_of[static_cast<size_t>(node)] = -1;
  return g;
}

}  // namespace depbloom::partition
