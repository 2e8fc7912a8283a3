// Stage 3 of the generator: which node each (source, partner index) slot is. Slots are
// taken from the heaviest down; each goes to a node drawn in proportion to its remaining
// capacity among the nodes whose remainder still holds the slot's events, so popular
// destinations attract new partners and every capacity is met exactly when it can be.
#include <algorithm>
#include <functional>
#include <queue>

#include "depbloom/core/error.h"
#include "pair_set.h"
#include "synth_internal.h"

namespace depbloom::data::synth {
namespace {

// Weighted sampling with updates: a Fenwick tree over blocks of 64 weights, then a scan
// inside the block. The block tree is small enough to stay in cache, where a tree over
// millions of single weights would miss on nearly every level.
class BlockSampler {
 public:
  explicit BlockSampler(size_t n) : weight_(n, 0), tree_((n + kBlock - 1) / kBlock + 1, 0) {
    while (top_ * 2 < tree_.size()) top_ *= 2;
  }
  int64_t weight(size_t i) const { return weight_[i]; }
  int64_t total() const { return total_; }
  void set(size_t i, int64_t w) {
    const int64_t delta = w - weight_[i];
    weight_[i] = w;
    total_ += delta;
    for (size_t b = i / kBlock + 1; b < tree_.size(); b += b & (~b + 1)) tree_[b] += delta;
  }
  // The entry holding mass x of the total, 0 <= x < total().
  size_t find(int64_t x) const {
    size_t block = 0;
    for (size_t step = top_; step > 0; step >>= 1) {
      if (block + step < tree_.size() && tree_[block + step] <= x) {
        block += step;
        x -= tree_[block];
      }
    }
    size_t i = block * kBlock;
    while (i + 1 < weight_.size() && weight_[i] <= x) x -= weight_[i++];
    return i;
  }

 private:
  static constexpr size_t kBlock = 64;
  std::vector<int64_t> weight_;
  std::vector<int64_t> tree_;  // Fenwick over block sums, 1-based
  size_t top_ = 1;
  int64_t total_ = 0;
};

// Who is already a partner of a source. A source's slots are contiguous, so for the many
// sources with few partners a scan of its own slots (one cache line) beats a probe into a
// hash set of all pairs; only sources with many partners use the set.
class PartnerSets {
 public:
  PartnerSets(const Degrees& d, const Sequences& seq)
      : source_node_(d.source_node),
        slot_offset_(seq.slot_offset),
        node_(seq.slot_size.size(), -1),
        pairs_(hashed_slots(seq)) {}
  int32_t source_node(int64_t s) const { return source_node_[s]; }
  bool allowed(int64_t s, int32_t v) const {
    if (v == source_node_[s]) return false;
    const int64_t begin = slot_offset_[s], end = slot_offset_[s + 1];
    if (end - begin > kScan) return !pairs_.contains(source_node_[s], v);
    for (int64_t j = begin; j < end; ++j)
      if (node_[j] == v) return false;
    return true;
  }
  void record(int64_t s, int64_t slot, int32_t v) {
    node_[slot] = v;
    if (slot_offset_[s + 1] - slot_offset_[s] > kScan) pairs_.insert_or_find(source_node_[s], v);
  }
  std::vector<int32_t> take_nodes() { return std::move(node_); }

 private:
  static constexpr int64_t kScan = 16;
  static size_t hashed_slots(const Sequences& seq) {
    size_t n = 0;
    for (size_t s = 0; s + 1 < seq.slot_offset.size(); ++s) {
      const int64_t d = seq.slot_offset[s + 1] - seq.slot_offset[s];
      if (d > kScan) n += static_cast<size_t>(d);
    }
    return n;
  }
  const std::vector<int32_t>& source_node_;
  const std::vector<int64_t>& slot_offset_;
  std::vector<int32_t> node_;  // [slots] the destination of each slot, -1 until placed
  PairSet pairs_;              // pairs of sources with more than kScan partners
};

class Assigner {
 public:
  Assigner(const Degrees& d, PartnerSets& partners, uint64_t seed)
      : remaining_(d.capacity),
        sampler_(d.capacity.size()),
        position_(d.capacity.size(), -1),
        partners_(partners),
        rng_(seed, Stream::assign, 0),
        one_type_(d.one_type) {
    for (size_t v = 0; v < remaining_.size(); ++v)
      if (remaining_[v] > 0) candidates_.push_back(static_cast<int32_t>(v));
    std::vector<std::pair<int64_t, int32_t>> all;
    all.reserve(candidates_.size());
    for (int32_t v : candidates_) all.emplace_back(remaining_[v], v);
    waiting_ = Heap(std::less<std::pair<int64_t, int32_t>>(), std::move(all));  // linear heapify
  }

  // Places slot `slot` of source index `source`.
  void place(int64_t source, int64_t slot, int64_t size) {
    admit(size);
    int32_t v = -1;
    for (int tries = 0; tries < 64 && sampler_.total() > 0; ++tries) {
      const int64_t total = sampler_.total();
      const auto x = std::min<int64_t>(
          total - 1, static_cast<int64_t>(rng_.uniform() * static_cast<double>(total)));
      const auto c = static_cast<int32_t>(sampler_.find(x));
      if (allowed(source, c)) {
        v = c;
        break;
      }
    }
    if (v < 0) v = fallback(source);
    partners_.record(source, slot, v);
    remaining_[v] -= size;
    // The node stays eligible while its remainder holds a slot of this size; otherwise it
    // waits until the slots have become small enough.
    set_weight(v, remaining_[v] >= size ? remaining_[v] : 0);
    if (remaining_[v] > 0 && remaining_[v] < size) waiting_.emplace(remaining_[v], v);
  }

 private:
  bool allowed(int64_t source, int32_t v) const { return partners_.allowed(source, v); }
  bool waiting(const std::pair<int64_t, int32_t>& entry) const {  // not a stale entry
    return entry.first == remaining_[entry.second] && sampler_.weight(entry.second) == 0;
  }
  void set_weight(int32_t v, int64_t w) {
    const int64_t old = sampler_.weight(v);
    if (w == old) return;
    sampler_.set(static_cast<size_t>(v), w);
    if (old == 0) {
      position_[v] = static_cast<int32_t>(eligible_.size());
      eligible_.push_back(v);
    } else if (w == 0) {  // swap-remove
      const int32_t last = eligible_.back();
      eligible_[position_[v]] = last;
      position_[last] = position_[v];
      eligible_.pop_back();
    }
  }
  // Nodes whose remainder now holds a slot of `size` become eligible.
  void admit(int64_t size) {
    while (!waiting_.empty() && waiting_.top().first >= size) {
      const auto entry = waiting_.top();
      waiting_.pop();
      if (waiting(entry)) set_weight(entry.second, entry.first);
    }
  }
  // Rare: every draw hit the source or one of its partners. Scan the eligible nodes from a
  // random start (the list is short exactly when draws fail); failing that, overfill the
  // allowed node with the largest remainder, from the top of the waiting heap; failing
  // that, any allowed candidate.
  int32_t fallback(int64_t source) {
    const size_t m = eligible_.size();
    if (m > 0) {
      const size_t start = rng_.below(static_cast<uint32_t>(m));
      for (size_t k = 0; k < m; ++k) {
        const int32_t v = eligible_[(start + k) % m];
        if (allowed(source, v)) return v;
      }
    }
    std::vector<std::pair<int64_t, int32_t>> skipped;
    int32_t best = -1;
    while (!waiting_.empty() && best < 0) {
      const auto entry = waiting_.top();
      waiting_.pop();
      if (!waiting(entry)) continue;
      if (allowed(source, entry.second)) best = entry.second;
      skipped.push_back(entry);
    }
    for (const auto& entry : skipped) waiting_.push(entry);
    if (best >= 0) return best;
    const size_t n = candidates_.size();
    const size_t start = n > 0 ? rng_.below(static_cast<uint32_t>(n)) : 0;
    for (size_t k = 0; k < n; ++k) {
      const int32_t v = candidates_[(start + k) % n];
      if (allowed(source, v)) return v;
    }
    // Only on tiny streams: a node that was to receive nothing.
    if (one_type_)
      for (size_t v = 0; v < remaining_.size(); ++v)
        if (allowed(source, static_cast<int32_t>(v))) return static_cast<int32_t>(v);
    DB_THROW(runtime, "synthetic stream: node {} has no destination left",
             partners_.source_node(source));
  }

  std::vector<int64_t> remaining_;
  BlockSampler sampler_;           // weight = remaining_ when eligible, else 0
  std::vector<int32_t> eligible_;  // nodes with weight > 0, in no particular order
  std::vector<int32_t> position_;  // index of an eligible node in eligible_
  PartnerSets& partners_;
  SynthRng rng_;
  std::vector<int32_t> candidates_;  // nodes that receive events at all
  bool one_type_;
  using Heap = std::priority_queue<std::pair<int64_t, int32_t>>;
  Heap waiting_;  // (remainder, node) of nodes not eligible now
};

}  // namespace

std::vector<int32_t> assign_partners(const Degrees& d, const Sequences& seq, uint64_t seed) {
  const int64_t sources = static_cast<int64_t>(d.source_node.size());
  const int64_t slots = seq.slot_offset[sources];
  std::vector<int32_t> slot_source(slots);  // source index of each slot
  for (int64_t s = 0; s < sources; ++s)
    for (int64_t j = seq.slot_offset[s]; j < seq.slot_offset[s + 1]; ++j)
      slot_source[j] = static_cast<int32_t>(s);

  // Heaviest slots first; equal sizes in slot order (a counting sort, so stable), so the
  // order is fixed by the sequences.
  int64_t largest = 0;
  for (int64_t size : seq.slot_size) largest = std::max(largest, size);
  std::vector<int64_t> start(largest + 2, 0);
  for (int64_t size : seq.slot_size) ++start[largest - size + 1];
  for (int64_t k = 1; k <= largest + 1; ++k) start[k] += start[k - 1];
  std::vector<int64_t> order(slots);
  for (int64_t j = 0; j < slots; ++j) order[start[largest - seq.slot_size[j]]++] = j;

  PartnerSets partners(d, seq);
  Assigner assigner(d, partners, seed);
  for (int64_t j : order) assigner.place(slot_source[j], j, seq.slot_size[j]);
  return partners.take_nodes();
}

}  // namespace depbloom::data::synth
