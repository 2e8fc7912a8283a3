// EventStream: a temporal interaction stream in structure-of-arrays form, sorted by time.
// Node ids are dense int32 in [0, num_nodes); for bipartite streams users come first
// ([0, num_users)) and items after them. Edge/node features are optional float32 matrices.
// Loaders build it; the graph part and the trainer only read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace depbloom::data {

struct EventStream {
  std::vector<int32_t> src;       // [E] dense source id
  std::vector<int32_t> dst;       // [E] dense destination id
  std::vector<double> ts;         // [E] timestamp, non-decreasing
  std::vector<int64_t> event_id;  // [E] row of this event in the source file (0-based)
  std::vector<float> edge_feat;   // [E x edge_dim] row-major, empty when edge_dim == 0
  int64_t edge_dim = 0;
  std::vector<float> node_feat;   // [N x node_dim], empty when node_dim == 0
  int64_t node_dim = 0;
  std::vector<int32_t> label;     // [E] optional (JODIE state-change label), may be empty
  std::vector<int8_t> split;      // [E] optional file-given split: 0 train, 1 val, 2 test

  int32_t num_nodes = 0;
  bool bipartite = false;
  int32_t num_users = 0;  // when bipartite: ids [0, num_users) are users, the rest items

  // Original ids of each dense id (per id space: for bipartite, users then items).
  std::vector<int64_t> original_id;

  std::string name;    // dataset name for logs
  std::string source;  // path it was loaded from

  int64_t num_events() const { return static_cast<int64_t>(src.size()); }
};

}  // namespace depbloom::data
