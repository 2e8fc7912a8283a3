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
  std::vector<int64_t> event_id;  // [E] data row of the event in the source file (0-based;
                                  // header, blank and comment lines not counted)
  std::vector<float> edge_feat;   // [E x edge_dim] row-major, empty when edge_dim == 0
  int64_t edge_dim = 0;
  std::vector<float> node_feat;  // [N x node_dim], empty when node_dim == 0
  int64_t node_dim = 0;
  std::vector<int32_t> label;  // [E] optional (JODIE state-change label), may be empty
  std::vector<int8_t> split;   // [E] optional file-given split: 0 train, 1 val, 2 test
  // TGB's fixed evaluation negatives (data.tgb_negatives): [E x fixed_k] dense destination
  // ids, a row of -1 for events without; empty when fixed_k == 0. Not cached.
  std::vector<int32_t> fixed_negatives;
  int32_t fixed_k = 0;

  int32_t num_nodes = 0;
  bool bipartite = false;
  int32_t num_users = 0;  // when bipartite: ids [0, num_users) are users, the rest items

  // Original ids of each dense id (per id space: for bipartite, users then items).
  std::vector<int64_t> original_id;

  std::string name;    // dataset name for logs
  std::string source;  // path it was loaded from

  int64_t num_events() const { return static_cast<int64_t>(src.size()); }
};

// Checks the invariants above (array sizes, ids in range, time order, finite times, user
// ids before item ids); throws a data error naming the first violation and `stream.source`.
void check_event_stream(const EventStream& stream);

// Keeps the first n events (every per-event array, features included); n <= 0 or
// n >= num_events() keeps everything. Node ids and the id map stay as they were.
void keep_first_events(EventStream& stream, int64_t n);

// What `depbloom-data inspect` and the load log report about a stream.
struct StreamSummary {
  int64_t num_nodes = 0;
  int64_t num_events = 0;
  int64_t num_users = 0;  // bipartite only
  int64_t num_items = 0;  // bipartite only
  bool bipartite = false;
  double t_min = 0;
  double t_max = 0;
  double time_span = 0;  // t_max - t_min
  int64_t unique_timestamps = 0;
  int64_t tied_events = 0;  // events whose timestamp equals the previous event's
  int64_t self_loops = 0;
  int64_t unique_pairs = 0;     // distinct (src, dst)
  int64_t positive_labels = 0;  // label != 0
  int64_t edge_dim = 0;
  int64_t node_dim = 0;
};

StreamSummary summarize(const EventStream& stream);
// One line for logs: "9227 nodes (8227 users + 1000 items), 157474 events, ...".
std::string describe(const StreamSummary& summary);

}  // namespace depbloom::data
