// make_window_plan: per window, the node parts (node_partitioners.h), each event placed
// with the less loaded of its endpoints' parts, a rebalancing pass to the imbalance bound,
// the parts cut into steps, and the window's statistics.
#include "depbloom/partition/window_plan.h"

#include <algorithm>
#include <cmath>

#include "depbloom/core/error.h"
#include "node_partitioners.h"
#include "window_graph.h"

namespace depbloom::partition {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A per-window METIS seed, so windows do not share METIS's random choices (SplitMix64's mix).
uint64_t window_seed(uint64_t seed, size_t window) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (window + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<int32_t> hash_parts(const WindowGraph& g, int ranks) {
  std::vector<int32_t> parts(static_cast<size_t>(g.size()));
  for (size_t v = 0; v < parts.size(); ++v) parts[v] = g.nodes[v] % ranks;
  return parts;
}

std::vector<int32_t> node_parts(const WindowGraph& g, const std::vector<int32_t>& last_part,
                                int ranks, const PartitionConfig& c, uint64_t seed) {
  switch (c.method) {
    case PartitionMethod::hash:
      return hash_parts(g, ranks);
    case PartitionMethod::fennel:
      return fennel_parts(g, last_part, ranks);
    case PartitionMethod::metis:
      return metis_parts(g, last_part, ranks, c.imbalance, seed);
  }
  DB_THROW(runtime, "unknown partition method {}", static_cast<int>(c.method));
}

// Writes the window's node parts into last_part; returns how many nodes changed part.
int64_t record_parts(const WindowGraph& g, const std::vector<int32_t>& parts,
                     std::vector<int32_t>& last_part) {
  int64_t migrated = 0;
  for (size_t v = 0; v < parts.size(); ++v) {
    int32_t& last = last_part[static_cast<size_t>(g.nodes[v])];
    if (last >= 0 && last != parts[v]) ++migrated;
    last = parts[v];
  }
  return migrated;
}

// Each event to its source's or destination's part, whichever has fewer of the window's
// events so far (ties: the source's). Counts the cut events into stats.
std::vector<int32_t> place_events(const data::EventStream& s, const int64_t* rows, int64_t count,
                                  const std::vector<int32_t>& node_part, WindowStats& stats) {
  std::vector<int32_t> event_part(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const auto row = static_cast<size_t>(rows[i]);
    const int32_t ps = node_part[size_t(s.src[row])], pd = node_part[size_t(s.dst[row])];
    if (ps != pd) ++stats.cut_events;
    std::vector<int64_t>& load = stats.part_events;
    const int32_t part = load[size_t(pd)] < load[size_t(ps)] ? pd : ps;
    event_part[size_t(i)] = part;
    ++load[size_t(part)];
  }
  return event_part;
}

// Moves events out of parts above `limit`: first cut events to their other endpoint's part
// while it has room (they stay with one of their nodes), then any event, earliest first, to
// the least loaded part.
void rebalance(std::vector<int32_t>& event_part, std::vector<int64_t>& load,
               const data::EventStream& s, const int64_t* rows,
               const std::vector<int32_t>& node_part, int64_t limit) {
  for (size_t i = 0; i < event_part.size(); ++i) {
    const int32_t part = event_part[i];
    if (load[size_t(part)] <= limit) continue;
    const auto row = static_cast<size_t>(rows[i]);
    const int32_t ps = node_part[size_t(s.src[row])], pd = node_part[size_t(s.dst[row])];
    const int32_t other = part == ps ? pd : ps;
    if (other == part || load[size_t(other)] >= limit) continue;
    --load[size_t(part)], ++load[size_t(other)];
    event_part[i] = other;
  }
  for (size_t i = 0; i < event_part.size(); ++i) {
    const int32_t part = event_part[i];
    if (load[size_t(part)] <= limit) continue;
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    --load[size_t(part)], ++load[size_t(least)];
    event_part[i] = static_cast<int32_t>(least);
  }
}

// The window takes the steps one device would cut it into (ceil(events / batch)), so the
// ranks take as many optimiser steps as strict. The longest part fills them in chunks of
// max(rank_batch, ceil(longest / steps)) events (one device's batches when P = 1; a part
// over W / P, within the imbalance bound, gets slightly larger steps); every other part
// spreads evenly over them (sizes differ by at most one).
void cut_steps(PlanWindow& w, int64_t batch_size, int64_t rank_batch) {
  int64_t longest = 0;
  for (const WindowPart& part : w.parts)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(part.events.size()));
  w.steps = std::max<int64_t>(1, ceil_div(w.events, batch_size));
  const int64_t chunk = std::max(rank_batch, ceil_div(longest, w.steps));
  for (WindowPart& part : w.parts) {
    const auto n = static_cast<int64_t>(part.events.size());
    part.step_offsets.resize(static_cast<size_t>(w.steps) + 1);
    for (int64_t step = 0; step <= w.steps; ++step)
      part.step_offsets[size_t(step)] =
          n == longest ? std::min(n, step * chunk) : step * n / w.steps;
  }
}

PlanWindow plan_window(const data::EventStream& s, const int64_t* rows, int64_t count,
                       const WindowPlan& plan, uint64_t seed, std::vector<int32_t>& last_part,
                       std::vector<int32_t>& local_of) {
  PlanWindow w;
  w.events = count;
  const WindowGraph g = build_window_graph(s, rows, count, local_of);
  const std::vector<int32_t> parts = node_parts(g, last_part, plan.ranks, plan.config, seed);
  w.stats.nodes = g.size();
  w.stats.migrated_nodes = record_parts(g, parts, last_part);
  w.stats.part_events.assign(static_cast<size_t>(plan.ranks), 0);
  std::vector<int32_t> event_part = place_events(s, rows, count, last_part, w.stats);
  const int64_t limit = part_event_limit(count, plan.ranks, plan.config.imbalance);
  rebalance(event_part, w.stats.part_events, s, rows, last_part, limit);
  w.parts.resize(static_cast<size_t>(plan.ranks));
  for (int64_t i = 0; i < count; ++i)
    w.parts[size_t(event_part[size_t(i)])].events.push_back(rows[i]);
  const int64_t most = *std::max_element(w.stats.part_events.begin(), w.stats.part_events.end());
  w.stats.imbalance = double(most) * plan.ranks / double(count);
  cut_steps(w, plan.batch_size, plan.rank_batch);
  return w;
}

}  // namespace

int64_t part_event_limit(int64_t events, int ranks, double imbalance) {
  // The small slack keeps 1.05 x 2400 at 2520 despite rounding.
  const auto bound = static_cast<int64_t>(std::floor(imbalance * double(events) / ranks + 1e-9));
  return std::max(bound, ceil_div(events, ranks));
}

WindowPlan make_window_plan(const data::EventStream& stream, const std::vector<int64_t>& train,
                            int ranks, int64_t batch_size, const PartitionConfig& config,
                            uint64_t seed) {
  // `config` passed check_partition_config once, with the run's other strategy settings.
  DB_ASSERT(ranks >= 1 && batch_size >= 1 && config.window_steps >= 1,
            "window plan: ranks {}, batch {} and window steps {} must be >= 1", ranks, batch_size,
            config.window_steps);
  WindowPlan plan;
  plan.ranks = ranks;
  plan.batch_size = batch_size;
  plan.rank_batch = ceil_div(batch_size, ranks);
  plan.window_events = config.window_steps * batch_size;
  plan.config = config;
  std::vector<int32_t> last_part(static_cast<size_t>(stream.num_nodes), -1);
  std::vector<int32_t> local_of(static_cast<size_t>(stream.num_nodes), -1);
  const auto total = static_cast<int64_t>(train.size());
  for (int64_t begin = 0; begin < total; begin += plan.window_events) {
    const int64_t count = std::min(plan.window_events, total - begin);
    const uint64_t metis_seed = window_seed(seed, plan.windows.size());
    plan.windows.push_back(
        plan_window(stream, train.data() + begin, count, plan, metis_seed, last_part, local_of));
    plan.windows.back().begin = begin;
  }
  return plan;
}

PlanTotals WindowPlan::totals() const {
  PlanTotals t;
  for (const PlanWindow& w : windows) {
    t.events += w.events;
    t.steps += w.steps;
    t.cut_events += w.stats.cut_events;
    t.nodes += w.stats.nodes;
    t.migrated_nodes += w.stats.migrated_nodes;
    t.max_imbalance = std::max(t.max_imbalance, w.stats.imbalance);
  }
  return t;
}

}  // namespace depbloom::partition
