// TGB's fixed negatives onto a stream: map TGB's node ids to dense ids, find each query's
// events by (src, dst, ts), copy the negatives into the stream's [E x K] table.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>
#include <vector>

#include <spdlog/spdlog.h>

#include "depbloom/core/error.h"
#include "depbloom/data/npy.h"
#include "depbloom/data/tgb.h"

namespace depbloom::data {
namespace {

namespace fs = std::filesystem;

// TGB's id of every dense node: the original id, items after the users when the file
// numbers them in a space of their own.
std::unordered_map<int64_t, int32_t> tgb_ids(const EventStream& s, bool two_spaces) {
  int64_t item_offset = 0;
  if (two_spaces && s.bipartite) {
    for (int32_t v = 0; v < s.num_users; ++v)
      item_offset = std::max(item_offset, s.original_id[static_cast<size_t>(v)] + 1);
  }
  std::unordered_map<int64_t, int32_t> ids;
  ids.reserve(static_cast<size_t>(s.num_nodes));
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    const bool item = two_spaces && s.bipartite && v >= s.num_users;
    ids.emplace(s.original_id[static_cast<size_t>(v)] + (item ? item_offset : 0), v);
  }
  return ids;
}

// The events of each (src, dst, ts), by their dense ids and time.
struct EventKey {
  int32_t src, dst;
  double ts;
  bool operator==(const EventKey& o) const { return src == o.src && dst == o.dst && ts == o.ts; }
};
struct EventKeyHash {
  size_t operator()(const EventKey& k) const {
    return std::hash<double>()(k.ts) * 1000003u ^ (static_cast<size_t>(k.src) << 20) ^
           static_cast<size_t>(k.dst);
  }
};
using EventIndex = std::unordered_multimap<EventKey, int64_t, EventKeyHash>;

EventIndex index_events(const EventStream& s) {
  EventIndex index;
  index.reserve(static_cast<size_t>(s.num_events()));
  for (int64_t e = 0; e < s.num_events(); ++e)
    index.emplace(EventKey{s.src[e], s.dst[e], s.ts[e]}, e);
  return index;
}

struct Queries {
  std::vector<int64_t> src, dst, neg;
  std::vector<double> ts;
  int64_t k = 0;
};

Queries read_queries(const fs::path& dir, const std::string& split) {
  auto open = [&](const char* what) {
    return NpyArray::open((dir / (split + "_" + what + ".npy")).string());
  };
  Queries q;
  q.src = open("src").to_int64();
  q.dst = open("dst").to_int64();
  q.ts = open("ts").to_float64();
  const NpyArray neg = open("neg");
  neg.expect_ndim(2, "TGB negatives");
  q.k = neg.shape()[1];
  q.neg = neg.to_int64();
  const size_t n = q.src.size();
  if (q.dst.size() != n || q.ts.size() != n || static_cast<size_t>(neg.shape()[0]) != n)
    DB_THROW(data, "{}: {}_src/dst/ts/neg.npy disagree on the number of queries ({})", dir.string(),
             split, n);
  return q;
}

int32_t dense_id(const std::unordered_map<int64_t, int32_t>& ids, int64_t id,
                 const std::string& where) {
  auto it = ids.find(id);
  if (it == ids.end()) DB_THROW(data, "{}: node {} is not in the stream", where, id);
  return it->second;
}

void attach_split(EventStream& s, const Queries& q, const std::string& file,
                  const std::unordered_map<int64_t, int32_t>& ids, const EventIndex& events) {
  const auto k = static_cast<size_t>(q.k);
  for (size_t r = 0; r < q.src.size(); ++r) {
    const std::string where = fmt::format("{}: row {}", file, r);
    const EventKey key{dense_id(ids, q.src[r], where), dense_id(ids, q.dst[r], where), q.ts[r]};
    auto [first, last] = events.equal_range(key);
    if (first == last)
      DB_THROW(data, "{}: no event ({}, {}, t {}) in {}", where, q.src[r], q.dst[r], q.ts[r],
               s.source);
    for (; first != last; ++first) {
      int32_t* row = s.fixed_negatives.data() + static_cast<size_t>(first->second) * k;
      for (size_t j = 0; j < k; ++j) row[j] = dense_id(ids, q.neg[r * k + j], where);
    }
  }
}

}  // namespace

void attach_tgb_negatives(EventStream& s, const std::string& dir, bool two_spaces) {
  const auto ids = tgb_ids(s, two_spaces);
  const EventIndex events = index_events(s);
  s.fixed_k = 0;
  s.fixed_negatives.clear();
  for (const char* split : {"val", "test"}) {
    const fs::path src = fs::path(dir) / (std::string(split) + "_src.npy");
    std::error_code ec;
    if (!fs::exists(src, ec)) continue;
    const Queries q = read_queries(dir, split);
    const std::string file = (fs::path(dir) / (std::string(split) + "_neg.npy")).string();
    if (q.k < 1 || (s.fixed_k > 0 && q.k != s.fixed_k))
      DB_THROW(data, "{}: {} negatives per query; every split needs the same K >= 1 ({})", file,
               q.k, s.fixed_k);
    if (s.fixed_k == 0) {
      s.fixed_k = static_cast<int32_t>(q.k);
      s.fixed_negatives.assign(static_cast<size_t>(s.num_events()) * q.k, -1);
    }
    attach_split(s, q, file, ids, events);
    spdlog::info("data: {} TGB {} queries with {} negatives each from {}", q.src.size(), split, q.k,
                 dir);
  }
  if (s.fixed_k == 0)
    DB_THROW(data, "{}: holds neither val_src.npy nor test_src.npy (tools/tgb_negatives.py)", dir);
}

}  // namespace depbloom::data
