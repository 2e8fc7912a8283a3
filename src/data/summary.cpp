// EventStream invariants and summary statistics (what the load log and
// `depbloom-data inspect` print).
#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"
#include "depbloom/data/event_stream.h"

namespace depbloom::data {

void check_event_stream(const EventStream& s) {
  const std::string& where = s.source.empty() ? s.name : s.source;
  const size_t n = s.src.size();
  auto sized = [&](size_t got, size_t want, const char* what) {
    if (got != want) DB_THROW(data, "{}: {} has {} entries, expected {}", where, what, got, want);
  };
  sized(s.dst.size(), n, "dst");
  sized(s.ts.size(), n, "ts");
  sized(s.event_id.size(), n, "event_id");
  if (!s.label.empty()) sized(s.label.size(), n, "label");
  if (!s.split.empty()) sized(s.split.size(), n, "split");
  if (s.fixed_k > 0)
    sized(s.fixed_negatives.size(), n * static_cast<size_t>(s.fixed_k), "fixed_negatives");
  if (s.edge_dim < 0 || s.node_dim < 0) DB_THROW(data, "{}: negative feature width", where);
  sized(s.edge_feat.size(), n * static_cast<size_t>(s.edge_dim), "edge_feat");
  sized(s.node_feat.size(), static_cast<size_t>(std::max(s.num_nodes, 0)) * s.node_dim,
        "node_feat");
  if (s.num_nodes < 0) DB_THROW(data, "{}: negative num_nodes", where);
  if (!s.original_id.empty()) sized(s.original_id.size(), s.num_nodes, "original_id");
  if (s.bipartite && (s.num_users < 0 || s.num_users > s.num_nodes)) {
    DB_THROW(data, "{}: num_users {} outside [0, {}]", where, s.num_users, s.num_nodes);
  }
  for (size_t e = 0; e < n; ++e) {
    if (s.src[e] < 0 || s.src[e] >= s.num_nodes || s.dst[e] < 0 || s.dst[e] >= s.num_nodes) {
      DB_THROW(data, "{}: event {} has ids ({}, {}) outside [0, {})", where, e, s.src[e], s.dst[e],
               s.num_nodes);
    }
    if (!std::isfinite(s.ts[e])) DB_THROW(data, "{}: event {} has a non-finite time", where, e);
    if (e > 0 && s.ts[e] < s.ts[e - 1]) {
      DB_THROW(data, "{}: event {} is earlier than event {}", where, e, e - 1);
    }
    if (s.bipartite && (s.src[e] >= s.num_users || s.dst[e] < s.num_users)) {
      DB_THROW(data, "{}: event {} does not go from a user to an item", where, e);
    }
    if (!s.split.empty() && (s.split[e] < 0 || s.split[e] > 2)) {
      DB_THROW(data, "{}: event {} has split {} (0, 1 or 2 expected)", where, e, s.split[e]);
    }
  }
}

StreamSummary summarize(const EventStream& s) {
  StreamSummary out;
  out.num_nodes = s.num_nodes;
  out.num_events = s.num_events();
  out.bipartite = s.bipartite;
  out.num_users = s.bipartite ? s.num_users : 0;
  out.num_items = s.bipartite ? s.num_nodes - s.num_users : 0;
  out.edge_dim = s.edge_dim;
  out.node_dim = s.node_dim;
  if (s.ts.empty()) return out;
  out.t_min = s.ts.front();
  out.t_max = s.ts.back();
  out.time_span = out.t_max - out.t_min;
  out.unique_timestamps = 1;
  for (size_t e = 1; e < s.ts.size(); ++e) {
    if (s.ts[e] == s.ts[e - 1]) {
      ++out.tied_events;
    } else {
      ++out.unique_timestamps;
    }
  }
  std::vector<uint64_t> pairs(s.src.size());
  for (size_t e = 0; e < s.src.size(); ++e) {
    out.self_loops += s.src[e] == s.dst[e];
    pairs[e] = (static_cast<uint64_t>(static_cast<uint32_t>(s.src[e])) << 32) |
               static_cast<uint32_t>(s.dst[e]);
  }
  std::sort(pairs.begin(), pairs.end());
  out.unique_pairs = std::unique(pairs.begin(), pairs.end()) - pairs.begin();
  for (int32_t l : s.label) out.positive_labels += l != 0;
  return out;
}

std::string describe(const StreamSummary& m) {
  std::string nodes = m.bipartite ? fmt::format("{} nodes ({} users + {} items)", m.num_nodes,
                                                m.num_users, m.num_items)
                                  : fmt::format("{} nodes", m.num_nodes);
  return fmt::format(
      "{}, {} events, time {:g}..{:g} (span {:g}), {} distinct timestamps, {} self-loops, "
      "{} distinct pairs, edge features {}, node features {}",
      nodes, m.num_events, m.t_min, m.t_max, m.time_span, m.unique_timestamps, m.self_loops,
      m.unique_pairs, m.edge_dim, m.node_dim);
}

void keep_first_events(EventStream& s, int64_t n) {
  if (n <= 0 || n >= s.num_events()) return;
  const auto un = static_cast<size_t>(n);
  s.src.resize(un), s.dst.resize(un), s.ts.resize(un), s.event_id.resize(un);
  if (s.edge_dim > 0) s.edge_feat.resize(un * static_cast<size_t>(s.edge_dim));
  if (!s.label.empty()) s.label.resize(un);
  if (!s.split.empty()) s.split.resize(un);
  if (s.fixed_k > 0) s.fixed_negatives.resize(un * static_cast<size_t>(s.fixed_k));
}

}  // namespace depbloom::data
