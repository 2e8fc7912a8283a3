// RecentSampler and UniformSampler: one search per root on the node's time-sorted slots
// (started from a hint or from the parent's event, so usually a step or two), then k slots
// copied into the block row. Rows are independent, so roots are split statically across
// OpenMP threads and the bytes written never depend on the split.
#include "depbloom/graph/neighbour_sampler.h"

#include <omp.h>

#include <algorithm>

#include "depbloom/core/error.h"
#include "depbloom/core/philox.h"

namespace depbloom::graph {
namespace {

// Below this many roots a hop runs on the calling thread: waking the team costs more.
constexpr int64_t kMinParallelRoots = 512;
// Roots are split in contiguous ranges (schedule(static)), not interleaved chunks: a batch
// lists its src, dst and negative roots in runs, so each thread keeps to fewer nodes and
// their slots stay in its own L2 (interleaving measured 2x slower on 2 threads on WIKI).

struct QueryRoot {
  int32_t node;  // -1: empty root
  double time;
  uint64_t key;
  int64_t start;  // slot where the search starts (twin of the parent's sample), -1: none
};

// The arrays the roots of one hop are read from, flattened into plain pointers (see
// HopKernel for why). Hop 0 reads the batch; hop l > 0 reads the slots of hop l-1.
struct RootSource {
  const int32_t* nodes;
  const double* times;
  const uint64_t* keys;
  uint64_t key_base;
  const int32_t* prev_nbr;  // nullptr at hop 0
  const int64_t* prev_slot;
  const int64_t* twins;  // nullptr for a directed CSR
  const double* slot_ts;
  uint64_t key_span;

  RootSource(const TemporalCsr& csr, const HopRoots& hop)
      : nodes(hop.batch->nodes),
        times(hop.batch->times),
        keys(hop.batch->keys),
        key_base(hop.batch->key_base),
        prev_nbr(hop.prev != nullptr ? hop.prev->nbr : nullptr),
        prev_slot(hop.prev != nullptr ? hop.prev->slot : nullptr),
        twins(csr.twins()),
        slot_ts(csr.times()),
        key_span(hop.key_span) {}

  uint64_t batch_key(uint64_t r) const { return keys != nullptr ? keys[r] : key_base + r; }

  // Root q. WithKey = false skips the key arithmetic for samplers that draw nothing.
  template <bool WithKey>
  QueryRoot at(int64_t q) const {
    if (prev_nbr == nullptr) {
      return {nodes[q], times[q], WithKey ? batch_key(static_cast<uint64_t>(q)) : 0, -1};
    }
    const int64_t s = prev_slot[q];
    if (s < 0) return {-1, 0.0, 0, -1};
    uint64_t key = 0;
    if (WithKey) {
      const uint64_t uq = static_cast<uint64_t>(q);
      key = batch_key(uq / key_span) * key_span + uq % key_span;
    }
    // The parent's sample sits at slot s; the time of its event is this root's query time.
    return {prev_nbr[q], slot_ts[s], key, twins != nullptr ? twins[s] : -1};
  }
};

// The CSR arrays and one hop's output arrays as plain local pointers. The byte-wide mask
// stores may alias anything, so without restrict every slot write would force the compiler
// to reload every array pointer.
struct HopKernel {
  const int64_t* __restrict indptr;
  const int32_t* __restrict slot_nbr;
  const int64_t* __restrict slot_event;
  const double* __restrict slot_ts;
  uint32_t* hints;  // this thread's hints, nullptr: plain binary search
  int32_t* __restrict nbr;
  int64_t* __restrict eid;
  float* __restrict dt;
  uint8_t* __restrict mask;
  int64_t* __restrict slot;  // nullptr on the last hop

  HopKernel(const TemporalCsr& csr, uint32_t* hop_hints, const Block& out)
      : indptr(csr.indptr()),
        slot_nbr(csr.neighbours()),
        slot_event(csr.events()),
        slot_ts(csr.times()),
        hints(hop_hints),
        nbr(out.nbr),
        eid(out.eid),
        dt(out.dt),
        mask(out.mask),
        slot(out.slot) {}

  // Candidates of root (v, t): slots [begin, result) of v. A deeper-hop root starts from
  // the slot of its own event (the answer is at most a few ties before it); a hop-0 root
  // starts where the previous query of v ended and leaves its own answer there.
  int64_t earlier_end(const QueryRoot& root, int64_t begin) const {
    const int32_t v = root.node;
    const double t = root.time;
    const int64_t n = indptr[v + 1] - begin;
    if (root.start >= 0) {
      return begin + lower_bound_time_from(slot_ts + begin, n, t, root.start - begin);
    }
    if (hints == nullptr) return begin + lower_bound_time(slot_ts + begin, n, t);
    const int64_t guess = std::min<int64_t>(hints[v], n);
    const int64_t found = lower_bound_time_from(slot_ts + begin, n, t, guess);
    hints[v] = static_cast<uint32_t>(std::min<int64_t>(found, UINT32_MAX));
    return begin + found;
  }

  void write(int64_t i, int64_t s, double t) const {
    nbr[i] = slot_nbr[s];
    eid[i] = slot_event[s];
    dt[i] = static_cast<float>(t - slot_ts[s]);
    mask[i] = 1;
    if (slot != nullptr) slot[i] = s;
  }

  void clear(int64_t from, int64_t to) const {
    for (int64_t i = from; i < to; ++i) {
      nbr[i] = -1;
      eid[i] = -1;
      dt[i] = 0.0f;
      mask[i] = 0;
      if (slot != nullptr) slot[i] = -1;
    }
  }
};

}  // namespace

NeighbourSampler::NeighbourSampler(const TemporalCsr& csr, int32_t k, int32_t hops)
    : csr_(csr), k_(k), hops_(hops) {
  DB_ASSERT(k >= 1 && hops >= 1, "a neighbour sampler needs k >= 1 and hops >= 1 (k {}, hops {})",
            k, hops);
}

void NeighbourSampler::sample(const RootBatch& roots, uint32_t epoch, BlockBuffers& out) const {
  DB_ASSERT(roots.count >= 0, "negative root count {}", roots.count);
  DB_ASSERT(roots.count == 0 || (roots.nodes != nullptr && roots.times != nullptr),
            "root batch of {} roots without node or time arrays", roots.count);
  // Checked before the parallel loops, which must not throw.
  const int32_t n = csr_.num_nodes();
  for (int64_t r = 0; r < roots.count; ++r) {
    const int32_t v = roots.nodes[r];
    DB_ASSERT(v >= -1 && v < n, "root {} is node {}, outside [-1, {})", r, v, n);
  }
  const int threads = omp_get_max_threads();
  if (threads > hint_threads_) {
    hints_.assign(static_cast<size_t>(threads) * static_cast<size_t>(n), 0);
    hint_threads_ = threads;
  }
  out.reserve(roots.count, k_, hops_);
  out.set_roots(roots.count);

  HopRoots hop;
  hop.batch = &roots;
  for (int32_t l = 0; l < hops_; ++l) {
    if (l > 0) {
      hop.prev = &out.hop(l - 1);
      hop.key_span *= static_cast<uint64_t>(k_);
    }
    hop.hop = l;
    fill_hop(hop, epoch, out.hop(l));
  }
}

uint32_t* NeighbourSampler::thread_hints(const HopRoots& hop) const {
  // Deeper hops start from the parent's event instead (see HopKernel::earlier_end).
  const int thread = omp_get_thread_num();
  if (hop.prev != nullptr || thread >= hint_threads_) return nullptr;
  return hints_.data() + static_cast<size_t>(thread) * static_cast<size_t>(csr_.num_nodes());
}

void RecentSampler::fill_hop(const HopRoots& hop, uint32_t /*epoch*/, const Block& out) const {
  const TemporalCsr& csr = csr_;
  const int32_t k = k_;
  const int64_t count = out.num_roots;

  // Inline below the threshold: an if-clause region allocates a one-thread team.
  const auto body = [&] {
    // Per-thread copies: locals whose fields the compiler may keep in registers.
    const RootSource roots(csr, hop);
    const HopKernel kernel(csr, thread_hints(hop), out);
#pragma omp for schedule(static)
    for (int64_t q = 0; q < count; ++q) {
      const QueryRoot root = roots.at<false>(q);
      const int64_t row = q * k;
      int64_t filled = 0;
      if (root.node >= 0) {
        const int64_t b = kernel.indptr[root.node];
        const int64_t pos = kernel.earlier_end(root, b);
        filled = std::min<int64_t>(k, pos - b);
        // Walk backwards from the newest candidate so slot 0 is the most recent.
        for (int64_t j = 0; j < filled; ++j) kernel.write(row + j, pos - 1 - j, root.time);
      }
      kernel.clear(row + filled, row + k);
    }
  };
  if (count < kMinParallelRoots) {
    body();
    return;
  }
#pragma omp parallel
  body();
}

UniformSampler::UniformSampler(const TemporalCsr& csr, int32_t k, int32_t hops, uint64_t seed)
    : NeighbourSampler(csr, k, hops), seed_(seed) {
  // Draws index a node's candidates with 32-bit numbers.
  DB_ASSERT(csr.max_degree() <= int64_t{0xFFFFFFFF},
            "node degree {} is too large for the uniform sampler", csr.max_degree());
  DB_ASSERT(hops < (1 << 15) && k < (1 << 18), "hops {} or k {} too large for the draw lanes", hops,
            k);
}

void UniformSampler::fill_hop(const HopRoots& hop, uint32_t epoch, const Block& out) const {
  const TemporalCsr& csr = csr_;
  const int32_t k = k_;
  const int64_t count = out.num_roots;
  RngKey key;
  key.seed = seed_;
  key.purpose = static_cast<uint32_t>(RngPurpose::neighbour_uniform);
  key.epoch = epoch;
  const uint32_t lane_base = static_cast<uint32_t>(hop.hop) << 16;

  // Inline below the threshold: an if-clause region allocates a one-thread team.
  const auto body = [&] {
    const RootSource roots(csr, hop);
    const HopKernel kernel(csr, thread_hints(hop), out);
#pragma omp for schedule(static)
    for (int64_t q = 0; q < count; ++q) {
      const QueryRoot root = roots.at<true>(q);
      const int64_t row = q * k;
      int64_t filled = 0;
      if (root.node >= 0) {
        const int64_t b = kernel.indptr[root.node];
        const int64_t candidates = kernel.earlier_end(root, b) - b;
        if (candidates > 0) {
          const uint32_t n = static_cast<uint32_t>(candidates);
          for (int32_t j0 = 0; j0 < k; j0 += 4) {
            const Philox4 bits =
                philox_draw(key, root.key, lane_base | static_cast<uint32_t>(j0 / 4));
            const int32_t lanes = std::min(4, k - j0);
            for (int32_t w = 0; w < lanes; ++w) {
              kernel.write(row + j0 + w, b + uniform_below(bits.v[w], n), root.time);
            }
          }
          filled = k;
        }
      }
      kernel.clear(row + filled, row + k);
    }
  };
  if (count < kMinParallelRoots) {
    body();
    return;
  }
#pragma omp parallel
  body();
}

}  // namespace depbloom::graph
