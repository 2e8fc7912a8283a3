// Summary statistics of an event stream: sizes, time span, ties, repetition and its
// recency (how often a repeated pair was one of the user's latest partners), activity and
// degree distributions, and a power-law fit of the degrees. Used by `depbloom-data stats`
// and to check that synthetic streams have the shapes of the real ones.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/data/event_stream.h"
#include "depbloom/data/power_law.h"

namespace depbloom::data {

// Quantiles of a count distribution (over the nodes that have at least one count).
struct CountQuantiles {
  int64_t count = 0;  // nodes described
  double mean = 0.0;
  int64_t min = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0, max = 0;
};

struct StreamStats {
  int64_t num_nodes = 0;     // declared id space
  int64_t active_nodes = 0;  // nodes in at least one event
  int64_t num_events = 0;
  bool bipartite = false;
  int64_t num_users = 0;  // bipartite: declared users; else 0
  int64_t num_items = 0;  // bipartite: declared items; else 0

  double t_min = 0.0, t_max = 0.0;
  double span_days = 0.0;  // (t_max - t_min) / 86400: timestamps are taken as seconds
  int64_t ties = 0;        // events whose timestamp equals the previous event's
  int64_t self_loops = 0;

  // A pair is the ordered (src, dst); an event repeats when its pair occurred before.
  int64_t distinct_pairs = 0;
  double repeat_fraction = 0.0;
  // Among repeat events: share whose dst was the src's latest distinct partner, and share
  // whose dst was among the src's 5 latest distinct partners (partners of src as source).
  double repeat_last1_share = 0.0;
  double repeat_last5_share = 0.0;

  CountQuantiles degree;  // total events per node (as src or dst; a self-loop counts twice)
  // Source activity: events per node as src (users when bipartite).
  CountQuantiles activity;
  double activity_one_share = 0.0;      // share of sources with exactly one event
  double activity_top1pct_share = 0.0;  // share of events made by the top 1% of sources
  CountQuantiles popularity;            // events per node as dst (items when bipartite)

  PowerLawFit degree_power_law;  // fit of `degree` (Clauset-Shalizi-Newman)
};

// One pass over the stream plus sorting of per-node counts; memory O(nodes + pairs).
// Throws depbloom::Error (data) on ids outside [0, num_nodes) or arrays of unequal length.
StreamStats compute_stream_stats(const EventStream& stream);

// Human-readable multi-line report.
std::string format_stream_stats(const StreamStats& stats);

}  // namespace depbloom::data
