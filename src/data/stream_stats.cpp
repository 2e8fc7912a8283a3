// compute_stream_stats: one pass over the events with a hash set of seen pairs
// and a 5-slot most-recent-partner list per source, then sorted per-node counts.
#include "depbloom/data/stream_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "depbloom/core/error.h"
#include "pair_set.h"

namespace depbloom::data {
namespace {

constexpr int kRecent = 5;

// Quantiles of the positive entries of `counts`; the p-quantile is the value at rank
// floor(p * (n - 1)) of the ascending order. Leaves the positive entries sorted in `sorted`.
CountQuantiles quantiles_of(const std::vector<int64_t>& counts, std::vector<int64_t>& sorted) {
  sorted.clear();
  for (int64_t c : counts)
    if (c > 0) sorted.push_back(c);
  std::sort(sorted.begin(), sorted.end());
  CountQuantiles q;
  q.count = static_cast<int64_t>(sorted.size());
  if (sorted.empty()) return q;
  double total = 0.0;
  for (int64_t c : sorted) total += static_cast<double>(c);
  q.mean = total / static_cast<double>(sorted.size());
  auto at = [&](double p) {
    return sorted[static_cast<size_t>(std::floor(p * static_cast<double>(sorted.size() - 1)))];
  };
  q.min = sorted.front();
  q.p25 = at(0.25);
  q.p50 = at(0.50);
  q.p75 = at(0.75);
  q.p90 = at(0.90);
  q.p99 = at(0.99);
  q.max = sorted.back();
  return q;
}

void check_shape(const EventStream& s) {
  const size_t e = s.src.size();
  if (s.dst.size() != e || s.ts.size() != e)
    DB_THROW(data, "stream '{}': src/dst/ts have {}/{}/{} entries", s.name, s.src.size(),
             s.dst.size(), s.ts.size());
}

}  // namespace

// The degree distributions: in-degree (popularity), out-degree (activity, with the share of
// one-event sources and of the top 1% sources' events) and total degree with its power law.
void degree_statistics(StreamStats& st, const std::vector<int64_t>& in,
                       const std::vector<int64_t>& out, const std::vector<int64_t>& degree) {
  const int64_t e = st.num_events;
  std::vector<int64_t> sorted;
  st.popularity = quantiles_of(in, sorted);
  st.activity = quantiles_of(out, sorted);
  if (!sorted.empty() && e > 0) {
    const auto ones = std::upper_bound(sorted.begin(), sorted.end(), int64_t{1}) - sorted.begin();
    st.activity_one_share = static_cast<double>(ones) / static_cast<double>(sorted.size());
    const size_t top = std::max<size_t>(
        1, static_cast<size_t>(std::llround(0.01 * static_cast<double>(sorted.size()))));
    double top_events = 0.0;
    for (size_t j = sorted.size() - top; j < sorted.size(); ++j) top_events += sorted[j];
    st.activity_top1pct_share = top_events / static_cast<double>(e);
  }
  st.degree = quantiles_of(degree, sorted);
  st.active_nodes = st.degree.count;
  st.degree_power_law = fit_discrete_power_law(sorted);
}

StreamStats compute_stream_stats(const EventStream& stream) {
  check_shape(stream);
  StreamStats st;
  const int64_t e = stream.num_events();
  st.num_events = e;
  st.bipartite = stream.bipartite;
  int64_t n = stream.num_nodes;
  if (n == 0 && e > 0) {  // a stream built by hand may leave num_nodes unset
    for (int64_t k = 0; k < e; ++k)
      n = std::max<int64_t>(n, std::max(stream.src[k], stream.dst[k]) + 1);
  }
  st.num_nodes = n;
  if (stream.bipartite) {
    st.num_users = stream.num_users;
    st.num_items = n - stream.num_users;
  }

  std::vector<int64_t> degree(n, 0), out(n, 0), in(n, 0);
  // recent[v*5 + k]: v's k-th most recent distinct partner (as source), -1 = none yet.
  std::vector<int32_t> recent(static_cast<size_t>(n) * kRecent, -1);
  PairSet pairs(static_cast<size_t>(e));
  int64_t repeats = 0, last1 = 0, last5 = 0;

  for (int64_t k = 0; k < e; ++k) {
    const int32_t u = stream.src[k], v = stream.dst[k];
    if (u < 0 || u >= n || v < 0 || v >= n)
      DB_THROW(data, "stream '{}': event {} has node ids ({}, {}) outside [0, {})", stream.name, k,
               u, v, n);
    if (k > 0 && stream.ts[k] == stream.ts[k - 1]) ++st.ties;
    if (u == v) ++st.self_loops;
    ++degree[u];
    ++degree[v];
    ++out[u];
    ++in[v];

    int32_t* r = &recent[static_cast<size_t>(u) * kRecent];
    int pos = -1;
    for (int j = 0; j < kRecent; ++j) {
      if (r[j] == v) {
        pos = j;
        break;
      }
    }
    if (pairs.insert_or_find(u, v)) {
      ++repeats;
      if (pos == 0) ++last1;
      if (pos >= 0) ++last5;
    }
    // Move v to the front; when it was not in the list the oldest partner drops out.
    for (int j = (pos >= 0 ? pos : kRecent - 1); j > 0; --j) r[j] = r[j - 1];
    r[0] = v;
  }

  st.distinct_pairs = static_cast<int64_t>(pairs.size());
  if (e > 0) {
    st.t_min = stream.ts.front();
    st.t_max = stream.ts.back();
    st.span_days = (st.t_max - st.t_min) / 86400.0;
    st.repeat_fraction = static_cast<double>(repeats) / static_cast<double>(e);
  }
  if (repeats > 0) {
    st.repeat_last1_share = static_cast<double>(last1) / static_cast<double>(repeats);
    st.repeat_last5_share = static_cast<double>(last5) / static_cast<double>(repeats);
  }

  degree_statistics(st, in, out, degree);
  return st;
}

std::string format_stream_stats(const StreamStats& s) {
  auto q = [](const CountQuantiles& c) {
    return fmt::format(
        "min {} p25 {} median {} p75 {} p90 {} p99 {} max {} (mean {:.2f}, {} nodes)", c.min, c.p25,
        c.p50, c.p75, c.p90, c.p99, c.max, c.mean, c.count);
  };
  std::string out;
  out += fmt::format("nodes            {} ({} in events)\n", s.num_nodes, s.active_nodes);
  if (s.bipartite)
    out += fmt::format("bipartite        yes: {} users, {} items\n", s.num_users, s.num_items);
  else
    out += "bipartite        no\n";
  out += fmt::format("events           {}\n", s.num_events);
  out += fmt::format("time span        {:.2f} days ({} .. {})\n", s.span_days, s.t_min, s.t_max);
  out += fmt::format("ties             {} events share the previous timestamp\n", s.ties);
  out += fmt::format("self-loops       {}\n", s.self_loops);
  out += fmt::format("distinct pairs   {}\n", s.distinct_pairs);
  out += fmt::format("repeat fraction  {:.4f}\n", s.repeat_fraction);
  out += fmt::format("repeats to last partner {:.4f}, to last 5 partners {:.4f}\n",
                     s.repeat_last1_share, s.repeat_last5_share);
  out += fmt::format("degree           {}\n", q(s.degree));
  out += fmt::format("source activity  {}\n", q(s.activity));
  out += fmt::format("                 one event {:.4f}, top 1% make {:.4f} of events\n",
                     s.activity_one_share, s.activity_top1pct_share);
  out += fmt::format("dst popularity   {}\n", q(s.popularity));
  const PowerLawFit& p = s.degree_power_law;
  if (p.n_tail > 0)
    out += fmt::format("degree power law alpha {:.3f} +- {:.3f}, x_min {}, KS {:.4f}, tail {}\n",
                       p.alpha, p.alpha_se, p.x_min, p.ks, p.n_tail);
  else
    out += "degree power law (too few nodes to fit)\n";
  return out;
}

}  // namespace depbloom::data
