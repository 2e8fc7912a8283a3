// Temporal neighbour samplers over a TemporalCsr: for each root (node, query time) they
// pick k interactions strictly earlier than the query time, for 1..L hops, into a
// BlockBuffers (see block.h for the layout and the hop rule). Roots run in parallel with
// OpenMP; every output is a pure function of its root, so any thread count gives the
// same bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/graph/block.h"
#include "depbloom/graph/temporal_csr.h"

namespace depbloom::graph {

// Hop-0 roots of one batch.
struct RootBatch {
  const int32_t* nodes = nullptr;  // [R] node id in [0, N), or -1 for an empty root
  const double* times = nullptr;   // [R] query time: only interactions strictly before it
  // [R] global key of each root, the index of its random draws (UniformSampler only), e.g.
  // event index * 3 + role (0 src, 1 dst, 2 negative): then a root draws the same
  // neighbours whatever batch it lands in. nullptr: key = key_base + position in the batch.
  const uint64_t* keys = nullptr;
  uint64_t key_base = 0;
  int64_t count = 0;

  uint64_t key(int64_t r) const {
    return keys != nullptr ? keys[r] : key_base + static_cast<uint64_t>(r);
  }
};

// Where the roots of one hop come from: hop 0 from the batch, hop l > 0 from the slots of
// hop l-1 (see block.h). Passed from NeighbourSampler::sample to the implementations.
struct HopRoots {
  const RootBatch* batch = nullptr;
  const Block* prev = nullptr;  // nullptr at hop 0
  int32_t hop = 0;
  uint64_t key_span = 1;  // k^hop: root q of this hop descends from hop-0 root q / key_span
};

class NeighbourSampler {
 public:
  // The sampler keeps a reference to `csr`, which must outlive it.
  NeighbourSampler(const TemporalCsr& csr, int32_t k, int32_t hops);
  virtual ~NeighbourSampler() = default;
  NeighbourSampler(const NeighbourSampler&) = delete;
  NeighbourSampler& operator=(const NeighbourSampler&) = delete;

  // Fills hops 0..hops-1 of `out` for `roots` (out grows if it is too small). `epoch`
  // enters the random draws of the uniform sampler; the recent sampler ignores it.
  // Throws when a root id is outside [-1, N). It updates the search hints, so one sampler
  // serves one caller at a time; concurrent callers use one sampler each (sharing the CSR).
  void sample(const RootBatch& roots, uint32_t epoch, BlockBuffers& out) const;

  int32_t k() const { return k_; }
  int32_t hops() const { return hops_; }
  const TemporalCsr& csr() const { return csr_; }

 protected:
  // Fills rows [0, out.num_roots) of one hop.
  virtual void fill_hop(const HopRoots& roots, uint32_t epoch, const Block& out) const = 0;
  // The calling OpenMP thread's hints for a hop, or nullptr where hints do not apply.
  uint32_t* thread_hints(const HopRoots& hop) const;

  const TemporalCsr& csr_;
  int32_t k_;
  int32_t hops_;
  // Per-thread search hints: where the last hop-0 query of each node on that OpenMP thread
  // ended (a slot offset), so time-ordered batches (training, evaluation) find the answer
  // in a step or two instead of a full binary search. One array per thread, so no cache
  // line bounces between cores. A hint only decides where a search starts, never what it
  // finds: the output stays a pure function of the input.
  mutable std::vector<uint32_t> hints_;  // [hint_threads_ x N]
  mutable int hint_threads_ = 0;
};

// The k most recent interactions strictly before the query time, most recent first
// (slot 0 is the latest). Fewer than k candidates leave the tail of the row empty.
class RecentSampler final : public NeighbourSampler {
 public:
  RecentSampler(const TemporalCsr& csr, int32_t k, int32_t hops = 1)
      : NeighbourSampler(csr, k, hops) {}

 private:
  void fill_hop(const HopRoots& roots, uint32_t epoch, const Block& out) const override;
};

// k draws with replacement (as TGL) among the interactions strictly before the query time,
// in draw order. A root with no candidate gets an empty row; otherwise all k slots are
// valid. Draw j of a root at hop l comes from Philox keyed by (seed, neighbour_uniform,
// epoch) at index = the root's key, lane = (l << 16) | j / 4; a hop-l root's key is
// parent key * k + slot, so it depends on the hop-0 key and the path only.
class UniformSampler final : public NeighbourSampler {
 public:
  UniformSampler(const TemporalCsr& csr, int32_t k, int32_t hops, uint64_t seed);

 private:
  void fill_hop(const HopRoots& roots, uint32_t epoch, const Block& out) const override;
  uint64_t seed_;
};

}  // namespace depbloom::graph
