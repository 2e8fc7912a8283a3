// WindowPlan: the training events cut into serial temporal windows and, per window, into
// one sub-chain per rank, each cut into the window's steps (DESIGN.md 7.1). A pure function
// of the stream, the training events, the rank count, the batch, the config and the seed,
// so every rank computes the same plan. It decides who runs what; it runs nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/partition/partition_config.h"

namespace depbloom::partition {

// One rank's sub-chain of a window.
struct WindowPart {
  std::vector<int64_t> events;        // stream rows, in time (training) order
  std::vector<int64_t> step_offsets;  // [steps + 1]: step s is events[offsets[s], offsets[s+1])
};

struct WindowStats {
  std::vector<int64_t> part_events;  // [P] events each part runs
  double imbalance = 1.0;            // max part events / mean part events
  int64_t cut_events = 0;            // events whose endpoints lie in different node parts
  int64_t nodes = 0;                 // distinct nodes the window touches
  // Nodes of this window whose part differs from the one they had in the last earlier
  // window that touched them (first appearances do not count).
  int64_t migrated_nodes = 0;
};

struct PlanWindow {
  int64_t begin = 0;              // position of the window's first event in the training list
  int64_t events = 0;             // events in the window (W, the last window fewer)
  int64_t steps = 0;              // steps every rank takes in this window
  std::vector<WindowPart> parts;  // [P]
  WindowStats stats;
};

// Sums over the windows, for logs and the benchmark.
struct PlanTotals {
  int64_t events = 0;
  int64_t steps = 0;
  int64_t cut_events = 0;
  int64_t nodes = 0;  // each window's distinct nodes, summed: what migrated_nodes is out of
  int64_t migrated_nodes = 0;
  double max_imbalance = 1.0;
  double cut_fraction() const { return events > 0 ? double(cut_events) / double(events) : 0.0; }
};

struct WindowPlan {
  int ranks = 1;
  int64_t batch_size = 0;     // global events per step
  int64_t rank_batch = 0;     // ceil(batch_size / ranks): a rank's full step
  int64_t window_events = 0;  // W = window_steps x batch_size
  PartitionConfig config;
  std::vector<PlanWindow> windows;

  PlanTotals totals() const;
};

// Cuts `train` (stream rows, ascending) into windows of W events and each window into
// `ranks` sub-chains with `config.method` (a config check_partition_config accepts); `seed`
// seeds METIS. Each event goes to the part of its source or destination, whichever holds
// fewer of the window's events so far; a rebalancing pass then keeps every part within the
// imbalance bound. A window takes as many steps as one device would (ceil(events /
// batch_size)); the longest sub-chain fills them in chunks of max(rank_batch, ceil(longest /
// steps)) events (the last shorter: one device's batches when P = 1), the others spread
// their events evenly over them.
WindowPlan make_window_plan(const data::EventStream& stream, const std::vector<int64_t>& train,
                            int ranks, int64_t batch_size, const PartitionConfig& config,
                            uint64_t seed);

// The most events any part of a window of `events` may hold: imbalance x mean, but never
// below ceil(mean) (a tiny window cannot do better).
int64_t part_event_limit(int64_t events, int ranks, double imbalance);

}  // namespace depbloom::partition
