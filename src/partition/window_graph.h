// WindowGraph: the interaction graph of one window's events, the input of the node
// partitioners. Nodes get local ids in order of first appearance, so the graph (and every
// partition of it) depends only on the window's events. Internal to the partition part.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/data/event_stream.h"

namespace depbloom::partition {

struct WindowGraph {
  std::vector<int32_t> nodes;          // [n] global id of each local node
  std::vector<int64_t> vertex_weight;  // [n] the node's events in the window (self loops once)
  std::vector<int64_t> offsets;        // [n + 1] CSR rows over the neighbours
  std::vector<int32_t> neighbours;     // local ids; both directions, no self loops
  std::vector<int64_t> edge_weight;    // events between the pair, beside each neighbour
  int64_t total_vertex_weight = 0;
  int64_t total_edge_weight = 0;  // each pair once

  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
};

// The graph of stream rows rows[0, count). `local_of` ([num_nodes], all -1) is scratch: it
// maps global to local ids while building and is all -1 again on return.
WindowGraph build_window_graph(const data::EventStream& stream, const int64_t* rows, int64_t count,
                               std::vector<int32_t>& local_of);

}  // namespace depbloom::partition
