// Parallel, deterministic TemporalCsr construction by a counting sort over nodes. Events
// arrive time-sorted, so writing each node's slots in event order already yields lists
// sorted by (time, event index): no comparison sort is needed.
#include "depbloom/graph/temporal_csr.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"

namespace depbloom::graph {
namespace {

// Events per chunk below which more chunks cost more than they save.
constexpr int64_t kMinEventsPerChunk = 1024;
// Cap on the per-chunk count tables (chunks x nodes x 8 bytes).
constexpr int64_t kMaxCountTableEntries = int64_t{1} << 26;

// Position of the first invalid selected event, or count when all are valid. Selected
// events must be in range and ascending, with ids in range and times non-decreasing.
int64_t first_invalid_event(const int32_t* src, const int32_t* dst, const double* ts, int64_t total,
                            const int64_t* ids, int64_t count, int32_t num_nodes) {
  int64_t first_bad = count;
#pragma omp parallel for schedule(static) reduction(min : first_bad)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t e = ids != nullptr ? ids[i] : i;
    const int64_t before = i == 0 ? -1 : (ids != nullptr ? ids[i - 1] : i - 1);
    bool ok = e > before && e < total;
    if (ok) {
      ok = src[e] >= 0 && src[e] < num_nodes && dst[e] >= 0 && dst[e] < num_nodes &&
           !std::isnan(ts[e]) && (before < 0 || ts[e] >= ts[before]);
    }
    if (!ok) first_bad = std::min(first_bad, i);
  }
  return first_bad;
}

void check_stream_arrays(const data::EventStream& stream) {
  DB_ASSERT(stream.dst.size() == stream.src.size() && stream.ts.size() == stream.src.size(),
            "event stream arrays differ in length (src {}, dst {}, ts {})", stream.src.size(),
            stream.dst.size(), stream.ts.size());
}

}  // namespace

TemporalCsr TemporalCsr::build(const data::EventStream& stream, int64_t num_events,
                               CsrDirection direction) {
  check_stream_arrays(stream);
  const int64_t total = stream.num_events();
  if (num_events < 0) num_events = total;
  DB_ASSERT(num_events <= total, "CSR prefix of {} events, the stream has {}", num_events, total);
  return build_from(stream.src.data(), stream.dst.data(), stream.ts.data(), total, nullptr,
                    num_events, stream.num_nodes, direction);
}

TemporalCsr TemporalCsr::build(const data::EventStream& stream, const std::vector<int64_t>& events,
                               CsrDirection direction) {
  check_stream_arrays(stream);
  return build_from(stream.src.data(), stream.dst.data(), stream.ts.data(), stream.num_events(),
                    events.data(), static_cast<int64_t>(events.size()), stream.num_nodes,
                    direction);
}

TemporalCsr TemporalCsr::build(const int32_t* src, const int32_t* dst, const double* ts,
                               int64_t num_events, int32_t num_nodes, CsrDirection direction) {
  return build_from(src, dst, ts, num_events, nullptr, num_events, num_nodes, direction);
}

namespace {

[[noreturn]] void throw_invalid_event(const int32_t* src, const int32_t* dst, const double* ts,
                                      int64_t total, const int64_t* ids, int64_t bad,
                                      int32_t num_nodes) {
  const int64_t e = ids != nullptr ? ids[bad] : bad;
  if (e < 0 || e >= total || (ids != nullptr && bad > 0 && e <= ids[bad - 1])) {
    DB_THROW(data, "event list for the temporal CSR: entry {} is {}, not ascending in [0, {})", bad,
             e, total);
  }
  DB_THROW(data,
           "event {} (src {}, dst {}, ts {}) cannot enter the temporal CSR: ids must lie in "
           "[0, {}) and timestamps must be non-decreasing and not NaN",
           e, src[e], dst[e], ts[e], num_nodes);
}

// From the chunks' slot counts per node, cursor[c * n + v]: indptr (every node's first slot)
// and, in cursor, each chunk's offset inside each node's list. Returns the largest degree.
int64_t offsets_from_counts(std::vector<int64_t>& indptr, std::vector<int64_t>& cursor,
                            int64_t chunks, int32_t num_nodes) {
  const auto n = static_cast<size_t>(num_nodes);
  indptr.assign(n + 1, 0);
  int64_t max_degree = 0;
#pragma omp parallel for schedule(static) reduction(max : max_degree)
  for (int64_t v = 0; v < num_nodes; ++v) {
    int64_t degree = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t& entry = cursor[static_cast<size_t>(c) * n + static_cast<size_t>(v)];
      const int64_t count = entry;
      entry = degree;  // offset of chunk c inside v's list, made absolute by indptr
      degree += count;
    }
    indptr[static_cast<size_t>(v) + 1] = degree;
    max_degree = std::max(max_degree, degree);
  }
  for (size_t v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
  return max_degree;
}

}  // namespace

TemporalCsr TemporalCsr::build_from(const int32_t* src, const int32_t* dst, const double* ts,
                                    int64_t total, const int64_t* ids, int64_t num_events,
                                    int32_t num_nodes, CsrDirection direction) {
  DB_ASSERT(num_nodes >= 0 && num_events >= 0 && num_events <= total,
            "bad sizes: {} nodes, {} of {} events", num_nodes, num_events, total);
  const int64_t bad = first_invalid_event(src, dst, ts, total, ids, num_events, num_nodes);
  if (bad < num_events) throw_invalid_event(src, dst, ts, total, ids, bad, num_nodes);
  auto event_at = [ids](int64_t i) { return ids != nullptr ? ids[i] : i; };

  TemporalCsr csr;
  csr.num_nodes_ = num_nodes;
  csr.num_events_ = num_events;
  csr.direction_ = direction;
  const bool both = direction == CsrDirection::undirected;
  const size_t n = static_cast<size_t>(num_nodes);

  // Chunk c owns a contiguous range of events. Its slots for node v follow the slots of all
  // earlier chunks for v, so the result is the same for every chunk count.
  int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>(omp_get_max_threads(), num_events / kMinEventsPerChunk));
  chunks = std::max<int64_t>(1, std::min(chunks, kMaxCountTableEntries / (num_nodes + 1)));
  auto chunk_begin = [&](int64_t c) { return num_events * c / chunks; };

  // cursor[c * n + v]: first the number of slots chunk c adds to v, later where it writes.
  std::vector<int64_t> cursor(static_cast<size_t>(chunks) * n, 0);
#pragma omp parallel for schedule(static, 1) num_threads(static_cast <int>(chunks))
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t* count = cursor.data() + static_cast<size_t>(c) * n;
    for (int64_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) {
      const int64_t e = event_at(i);
      ++count[src[e]];
      if (both && dst[e] != src[e]) ++count[dst[e]];
    }
  }

  csr.max_degree_ = offsets_from_counts(csr.indptr_, cursor, chunks, num_nodes);

  const int64_t slots = csr.indptr_[n];
  csr.slot_nbr_.resize(static_cast<size_t>(slots));
  csr.slot_event_.resize(static_cast<size_t>(slots));
  csr.slot_ts_.resize(static_cast<size_t>(slots));
  if (both) csr.slot_twin_.resize(static_cast<size_t>(slots));

  int32_t* nbr = csr.slot_nbr_.data();
  int64_t* event = csr.slot_event_.data();
  double* time = csr.slot_ts_.data();
  int64_t* twin = csr.slot_twin_.data();
  const int64_t* indptr = csr.indptr_.data();
#pragma omp parallel for schedule(static, 1) num_threads(static_cast <int>(chunks))
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t* next = cursor.data() + static_cast<size_t>(c) * n;
    for (int64_t i = chunk_begin(c); i < chunk_begin(c + 1); ++i) {
      const int64_t e = event_at(i);
      const int32_t s = src[e];
      const int32_t d = dst[e];
      const int64_t slot = indptr[s] + next[s]++;
      nbr[slot] = d;
      event[slot] = e;
      time[slot] = ts[e];
      if (both) {
        const int64_t back = d != s ? indptr[d] + next[d]++ : slot;
        nbr[back] = s;
        event[back] = e;
        time[back] = ts[e];
        twin[slot] = back;
        twin[back] = slot;
      }
    }
  }
  return csr;
}

int64_t TemporalCsr::earlier_end(int32_t v, double t) const {
  const int64_t b = begin(v);
  return b + lower_bound_time(slot_ts_.data() + b, end(v) - b, t);
}

}  // namespace depbloom::graph
