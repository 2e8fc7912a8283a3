// From file rows to an EventStream. Ids are remapped per id space in increasing original-id
// order, so ids that are already dense (or dense after an offset, like the shipped WIKI
// items) keep their order; one id space whose sources and destinations never meet is
// treated as bipartite, with sources first.
#include "event_builder.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <spdlog/spdlog.h>

#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"

namespace depbloom::data::detail {
namespace {

// A lookup table beats sorting when the id range is not much larger than the id count.
bool dense_range(uint64_t range, size_t count) {
  return range < 4 * uint64_t{count} + 1024;
}

std::vector<int64_t> distinct_sorted(const std::vector<int64_t>& ids) {
  if (ids.empty()) return {};
  auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
  const int64_t base = *lo;
  const uint64_t range = static_cast<uint64_t>(*hi) - static_cast<uint64_t>(base);
  std::vector<int64_t> out;
  if (dense_range(range, ids.size())) {
    std::vector<uint8_t> seen(range + 1, 0);
    for (int64_t id : ids) seen[static_cast<uint64_t>(id - base)] = 1;
    for (uint64_t k = 0; k <= range; ++k) {
      if (seen[k]) out.push_back(base + static_cast<int64_t>(k));
    }
    return out;
  }
  out = ids;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// out[e] = offset + position of ids[e] in `keys` (sorted, and holding every id).
void rank_into(const std::vector<int64_t>& ids, const std::vector<int64_t>& keys, int64_t offset,
               std::vector<int32_t>& out) {
  out.resize(ids.size());
  if (keys.empty()) return;
  const int64_t base = keys.front();
  const uint64_t range = static_cast<uint64_t>(keys.back()) - static_cast<uint64_t>(base);
  if (dense_range(range, ids.size())) {
    std::vector<int32_t> table(range + 1, -1);
    for (size_t k = 0; k < keys.size(); ++k) {
      table[static_cast<uint64_t>(keys[k] - base)] = static_cast<int32_t>(offset + k);
    }
    for (size_t e = 0; e < ids.size(); ++e) out[e] = table[static_cast<uint64_t>(ids[e] - base)];
    return;
  }
  for (size_t e = 0; e < ids.size(); ++e) {
    out[e] = static_cast<int32_t>(
        offset + (std::lower_bound(keys.begin(), keys.end(), ids[e]) - keys.begin()));
  }
}

bool disjoint(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return false;
    a[i] < b[j] ? ++i : ++j;
  }
  return true;
}

template <typename T>
void gather(std::vector<T>& v, const std::vector<int64_t>& order, int64_t width = 1) {
  if (v.empty()) return;
  std::vector<T> out(order.size() * static_cast<size_t>(width));
  for (size_t k = 0; k < order.size(); ++k) {
    std::copy_n(v.begin() + order[k] * width, width, out.begin() + static_cast<int64_t>(k) * width);
  }
  v.swap(out);
}

// Reorders (or subsets) every per-event array of `raw` to the events listed in `order`.
void select_events(RawEvents& raw, std::vector<int64_t>& event_id,
                   const std::vector<int64_t>& order) {
  gather(raw.src, order);
  gather(raw.dst, order);
  gather(raw.ts, order);
  gather(raw.label, order);
  gather(raw.split, order);
  gather(raw.feature_row, order);
  gather(raw.line, order);
  gather(raw.edge_feat, order, raw.edge_dim);
  gather(event_id, order);
}

void check_node_count(size_t n, const std::string& file) {
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    DB_THROW(data, "{}: {} distinct node ids do not fit 32-bit dense ids", file, n);
  }
}

void drop_self_loops_of(RawEvents& raw, std::vector<int64_t>& event_id) {
  std::vector<int64_t> keep;
  keep.reserve(event_id.size());
  for (int64_t e = 0; e < raw.size(); ++e) {
    if (raw.src[e] != raw.dst[e]) keep.push_back(e);
  }
  const int64_t dropped = raw.size() - static_cast<int64_t>(keep.size());
  if (dropped > 0) {
    spdlog::info("{}: dropped {} self-loops (data.drop_self_loops)", raw.file, dropped);
    select_events(raw, event_id, keep);
  }
  if (raw.src.empty()) DB_THROW(data, "{}: no events are left without self-loops", raw.file);
}

// Count the events that arrive below an earlier timestamp, then sort stably.
void sort_by_time(RawEvents& raw, std::vector<int64_t>& event_id) {
  int64_t out_of_order = 0;
  double latest = -std::numeric_limits<double>::infinity();
  for (double t : raw.ts) {
    if (t < latest) ++out_of_order;
    latest = std::max(latest, t);
  }
  if (out_of_order == 0) return;
  spdlog::warn("{}: {} of {} events were out of time order; sorted them stably by time", raw.file,
               out_of_order, raw.size());
  std::vector<int64_t> order(event_id.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return raw.ts[a] < raw.ts[b]; });
  select_events(raw, event_id, order);
}

// Dense node ids: users then items when the two id sets are apart, else one shared range.
void number_nodes(const RawEvents& raw, EventStream& s) {
  std::vector<int64_t> users = distinct_sorted(raw.src);
  std::vector<int64_t> items = distinct_sorted(raw.dst);
  if (raw.two_id_spaces || disjoint(users, items)) {
    check_node_count(users.size() + items.size(), raw.file);
    s.bipartite = true;
    s.num_users = static_cast<int32_t>(users.size());
    rank_into(raw.src, users, 0, s.src);
    rank_into(raw.dst, items, static_cast<int64_t>(users.size()), s.dst);
    s.original_id = std::move(users);
    s.original_id.insert(s.original_id.end(), items.begin(), items.end());
  } else {
    std::vector<int64_t> all;
    all.reserve(users.size() + items.size());
    std::set_union(users.begin(), users.end(), items.begin(), items.end(), std::back_inserter(all));
    check_node_count(all.size(), raw.file);
    rank_into(raw.src, all, 0, s.src);
    rank_into(raw.dst, all, 0, s.dst);
    s.original_id = std::move(all);
  }
  s.num_nodes = static_cast<int32_t>(s.original_id.size());
}

void attach_node_features(const RawEvents& raw, const FeatureTable& t, EventStream& s) {
  s.node_dim = t.dim;
  s.node_feat.resize(static_cast<size_t>(s.num_nodes) * static_cast<size_t>(t.dim));
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    const int64_t row = raw.two_id_spaces ? v : s.original_id[v];
    if (row >= t.rows) {
      const int64_t needed =
          raw.two_id_spaces ? s.num_nodes
                            : *std::max_element(s.original_id.begin(), s.original_id.end()) + 1;
      DB_THROW(data, "{}: has no row for node {} of {}: {} rows of node features, {} needed",
               t.file, s.original_id[v], raw.file, t.rows, needed);
    }
    std::copy_n(t.values.begin() + row * t.dim, t.dim, s.node_feat.begin() + int64_t{v} * t.dim);
  }
}

}  // namespace

FeatureTable read_feature_table(const std::string& path, const char* what) {
  NpyArray a = NpyArray::open(path);
  a.expect_ndim(2, what);
  if (a.dtype() != NpyDtype::f4 && a.dtype() != NpyDtype::f8) {
    DB_THROW(data, "{}: {} must be float32 or float64, not '{}'", path, what, npy_descr(a.dtype()));
  }
  FeatureTable t;
  t.values = a.to_float32();
  t.rows = a.shape()[0];
  t.dim = a.shape()[1];
  t.file = path;
  return t;
}

void attach_edge_features(RawEvents& raw, const FeatureTable& table) {
  if (table.file.empty()) return;
  if (raw.edge_dim > 0) {
    DB_THROW(data, "{}: the file has edge features in its rows and {} gives more; use one",
             raw.file, table.file);
  }
  const int64_t n = raw.size();
  const bool by_idx = !raw.feature_row.empty();
  if (!by_idx && table.rows != n) {
    DB_THROW(data, "{}: {} rows of edge features for {} events in {}", table.file, table.rows, n,
             raw.file);
  }
  raw.edge_dim = table.dim;
  raw.edge_feat.resize(static_cast<size_t>(n * table.dim));
  for (int64_t e = 0; e < n; ++e) {
    const int64_t r = by_idx ? raw.feature_row[e] : e;
    if (r >= table.rows) {
      DB_THROW(data, "{}:{}: idx {} has no row in {} ({} rows)", raw.file, raw.line[e], r,
               table.file, table.rows);
    }
    std::copy_n(table.values.begin() + r * table.dim, table.dim,
                raw.edge_feat.begin() + e * table.dim);
  }
}

EventStream build_event_stream(RawEvents raw, bool drop_self_loops,
                               const FeatureTable* node_features) {
  std::vector<int64_t> event_id(static_cast<size_t>(raw.size()));
  std::iota(event_id.begin(), event_id.end(), 0);
  if (drop_self_loops && !raw.two_id_spaces) drop_self_loops_of(raw, event_id);
  sort_by_time(raw, event_id);
  EventStream s;
  number_nodes(raw, s);
  if (node_features != nullptr && !node_features->file.empty())
    attach_node_features(raw, *node_features, s);
  s.ts = std::move(raw.ts);
  s.event_id = std::move(event_id);
  s.edge_feat = std::move(raw.edge_feat);
  s.edge_dim = raw.edge_dim;
  s.label = std::move(raw.label);
  s.split = std::move(raw.split);
  s.source = raw.file;
  return s;
}

}  // namespace depbloom::data::detail
