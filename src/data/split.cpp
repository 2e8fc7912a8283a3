// Chronological splits. The tgn protocol follows the TGN authors' utils/data_processing.py
// get_data(): split times at the 0.70/0.85 timestamp quantiles, new nodes drawn from the
// nodes seen after val_time, their events removed from training, and "new node" val/test
// events touching any node absent from training. The draw uses Philox, not Python's RNG.
#include "depbloom/data/split.h"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "depbloom/core/error.h"
#include "depbloom/core/philox.h"

namespace depbloom::data {
namespace {

void check_sorted(const EventStream& s) {
  for (size_t e = 1; e < s.ts.size(); ++e) {
    if (s.ts[e] < s.ts[e - 1]) DB_THROW(data, "{}: events are not sorted by time", s.source);
  }
}

void tgn_split(const EventStream& s, const SplitSpec& spec, ChronoSplit& out) {
  const int64_t n_events = s.num_events();
  out.val_time = timestamp_quantile(s.ts, spec.val_quantile);
  out.test_time = timestamp_quantile(s.ts, spec.test_quantile);

  // Nodes of the stream, and those seen after val_time: the candidates for held-out nodes.
  std::vector<uint8_t> present(s.num_nodes, 0), late(s.num_nodes, 0);
  for (int64_t e = 0; e < n_events; ++e) {
    present[s.src[e]] = present[s.dst[e]] = 1;
    if (s.ts[e] > out.val_time) late[s.src[e]] = late[s.dst[e]] = 1;
  }
  int64_t n_total = 0;
  std::vector<int32_t> candidates;
  for (int32_t v = 0; v < s.num_nodes; ++v) {
    n_total += present[v];
    if (late[v]) candidates.push_back(v);
  }
  // int(0.1 * n_total_unique_nodes), as TGN computes the sample size.
  int64_t k = static_cast<int64_t>(spec.new_node_fraction * static_cast<double>(n_total));
  if (k > static_cast<int64_t>(candidates.size())) {
    spdlog::warn(
        "data: {} new nodes asked for, only {} nodes appear after the validation "
        "start; holding out all of them",
        k, candidates.size());
    k = static_cast<int64_t>(candidates.size());
  }
  // Partial Fisher-Yates over the sorted candidates: draw i picks among the m - i left.
  const RngKey key{spec.seed, static_cast<uint32_t>(RngPurpose::new_nodes), 0};
  const uint32_t m = static_cast<uint32_t>(candidates.size());
  for (uint32_t i = 0; i < static_cast<uint32_t>(k); ++i) {
    const uint32_t j = i + uniform_below(philox_u32(key, i, 0), m - i);
    std::swap(candidates[i], candidates[j]);
  }
  out.held_out_nodes.assign(candidates.begin(), candidates.begin() + k);
  std::sort(out.held_out_nodes.begin(), out.held_out_nodes.end());
  std::vector<uint8_t> held(s.num_nodes, 0);
  for (int32_t v : out.held_out_nodes) held[v] = 1;

  std::vector<uint8_t> in_train(s.num_nodes, 0);
  for (int64_t e = 0; e < n_events; ++e) {
    const double t = s.ts[e];
    if (t <= out.val_time) {
      if (held[s.src[e]] || held[s.dst[e]]) {
        ++out.removed_from_train;
      } else {
        out.train.push_back(e);
        in_train[s.src[e]] = in_train[s.dst[e]] = 1;
      }
    } else if (t <= out.test_time) {
      out.val.push_back(e);
    } else {
      out.test.push_back(e);
    }
  }
  out.is_new_node.assign(s.num_nodes, 0);
  for (int32_t v = 0; v < s.num_nodes; ++v) out.is_new_node[v] = present[v] && !in_train[v];
  auto touches_new = [&](int64_t e) {
    return out.is_new_node[s.src[e]] || out.is_new_node[s.dst[e]];
  };
  for (int64_t e : out.val) {
    if (touches_new(e)) out.new_node_val.push_back(e);
  }
  for (int64_t e : out.test) {
    if (touches_new(e)) out.new_node_test.push_back(e);
  }
}

// TGB's split (LinkPropPredDataset.generate_splits): the same quantile times, no node held out, no
// new-node pass (TGB reports transductive link prediction only).
void tgb_split(const EventStream& s, const SplitSpec& spec, ChronoSplit& out) {
  out.val_time = timestamp_quantile(s.ts, spec.val_quantile);
  out.test_time = timestamp_quantile(s.ts, spec.test_quantile);
  for (int64_t e = 0; e < s.num_events(); ++e) {
    const double t = s.ts[e];
    (t <= out.val_time ? out.train : t <= out.test_time ? out.val : out.test).push_back(e);
  }
}

void range_into(std::vector<int64_t>& out, int64_t begin, int64_t end) {
  for (int64_t e = begin; e < end; ++e) out.push_back(e);
}

void tgl_split(const EventStream& s, const SplitSpec& spec, ChronoSplit& out) {
  const int64_t n = s.num_events();
  // floor(E * 0.70) and floor(E * 0.85); the epsilon keeps 0.7 * 100 from rounding to 69.
  const double train_share = 1.0 - spec.val_fraction - spec.test_fraction;
  const int64_t val_begin = static_cast<int64_t>(std::floor(n * train_share + 1e-9));
  const int64_t test_begin =
      static_cast<int64_t>(std::floor(n * (1.0 - spec.test_fraction) + 1e-9));
  range_into(out.train, 0, val_begin);
  range_into(out.val, val_begin, test_begin);
  range_into(out.test, test_begin, n);
  out.val_time = val_begin < n ? s.ts[val_begin] : s.ts.back();
  out.test_time = test_begin < n ? s.ts[test_begin] : s.ts.back();
}

void file_split(const EventStream& s, ChronoSplit& out) {
  if (s.split.empty()) {
    DB_THROW(config,
             "data.protocol: file needs a split column in {} (TGL's ext_roll, or "
             "data.columns.split)",
             s.source);
  }
  std::vector<int64_t>* parts[] = {&out.train, &out.val, &out.test};
  for (int64_t e = 0; e < s.num_events(); ++e) parts[s.split[e]]->push_back(e);
  out.val_time = out.val.empty() ? s.ts.back() : s.ts[out.val.front()];
  out.test_time = out.test.empty() ? s.ts.back() : s.ts[out.test.front()];
  const bool chronological =
      (out.train.empty() || out.val.empty() || s.ts[out.train.back()] <= s.ts[out.val.front()]) &&
      (out.val.empty() || out.test.empty() || s.ts[out.val.back()] <= s.ts[out.test.front()]);
  if (!chronological) {
    spdlog::warn(
        "data: the split column of {} is not chronological (some evaluation events "
        "precede training ones)",
        s.source);
  }
}

}  // namespace

const NameTable<SplitProtocol>& split_protocol_names() {
  static const NameTable<SplitProtocol> names{{SplitProtocol::tgn, "tgn"},
                                              {SplitProtocol::tgl, "tgl"},
                                              {SplitProtocol::file, "file"},
                                              {SplitProtocol::tgb, "tgb"}};
  return names;
}

const char* split_protocol_name(SplitProtocol protocol) {
  return split_protocol_names().name(protocol);
}

double timestamp_quantile(const std::vector<double>& a, double q) {
  DB_ASSERT(!a.empty(), "quantile of no timestamps");
  const int64_t n = static_cast<int64_t>(a.size());
  // NumPy's 'linear' method: virtual index (n-1)*q, clipped, then _lerp(previous, next).
  const double virtual_index = static_cast<double>(n - 1) * q;
  int64_t previous = 0, next = 0;
  if (virtual_index >= static_cast<double>(n - 1)) {
    previous = next = n - 1;
  } else if (virtual_index > 0) {
    previous = static_cast<int64_t>(std::floor(virtual_index));
    next = previous + 1;
  }
  const double gamma = virtual_index - static_cast<double>(previous);
  const double lo = a[previous], hi = a[next];
  const double diff = hi - lo;
  // NumPy interpolates from the nearer end for accuracy (t >= 0.5 counts from hi).
  return gamma >= 0.5 ? hi - diff * (1.0 - gamma) : lo + diff * gamma;
}

ChronoSplit make_split(const EventStream& stream, const SplitSpec& spec) {
  if (stream.num_events() == 0) DB_THROW(data, "{}: cannot split an empty stream", stream.source);
  if (!(spec.val_quantile >= 0 && spec.val_quantile <= spec.test_quantile &&
        spec.test_quantile <= 1)) {
    DB_THROW(config, "data.split: need 0 <= val_quantile ({}) <= test_quantile ({}) <= 1",
             spec.val_quantile, spec.test_quantile);
  }
  if (!(spec.new_node_fraction >= 0 && spec.new_node_fraction <= 1)) {
    DB_THROW(config, "data.split: new_node_fraction {} is outside [0, 1]", spec.new_node_fraction);
  }
  if (!(spec.val_fraction >= 0 && spec.test_fraction >= 0 &&
        spec.val_fraction + spec.test_fraction <= 1)) {
    DB_THROW(config,
             "data.split: val_fraction {} and test_fraction {} must be >= 0 and sum to "
             "at most 1",
             spec.val_fraction, spec.test_fraction);
  }
  check_sorted(stream);
  ChronoSplit out;
  out.protocol = spec.protocol;
  switch (spec.protocol) {
    case SplitProtocol::tgn:
      tgn_split(stream, spec, out);
      break;
    case SplitProtocol::tgl:
      tgl_split(stream, spec, out);
      break;
    case SplitProtocol::file:
      file_split(stream, out);
      break;
    case SplitProtocol::tgb:
      tgb_split(stream, spec, out);
      break;
  }
  return out;
}

}  // namespace depbloom::data
