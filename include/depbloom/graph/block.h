// Block: what a temporal neighbour sampler writes for one hop, as dense [roots, k] arrays;
// BlockBuffers: the preallocated storage for all hops, reused batch after batch (it grows
// when a batch needs more room and never shrinks, so a steady run allocates nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/core/memory.h"
#include "depbloom/core/tensor.h"

namespace depbloom::graph {

// Row r holds the neighbours of root r, slot j at [r * k + j]. Valid slots come first in
// each row; the rest are empty (nbr -1, eid -1, dt 0, mask 0). The arrays point into a
// BlockBuffers and stay valid until it grows.
//
// Hops: hop 0's roots are the caller's roots. Hop l+1 has (roots of hop l) * k roots, one
// per slot of hop l, in the same order: root q of hop l+1 is node nbr[q] of hop l, queried
// at the time of its event eid[q] (TGL's rule), so it only sees interactions before the
// one that linked it to its parent. An empty slot gives an empty root, whose row is empty.
struct Block {
  int64_t num_roots = 0;
  int32_t k = 0;
  int32_t* nbr = nullptr;   // [R, k] neighbour node id
  int64_t* eid = nullptr;   // [R, k] event index of the interaction (row of the EventStream)
  float* dt = nullptr;      // [R, k] query time - interaction time (> 0 in valid slots)
  uint8_t* mask = nullptr;  // [R, k] 1 in valid slots, 0 in empty ones
  // [R, k] TemporalCsr slot of the interaction (-1 when empty), where the next hop starts
  // its searches; nullptr on the last hop, which has no next hop.
  int64_t* slot = nullptr;

  int64_t num_slots() const { return num_roots * k; }
  Tensor nbr_tensor() const { return Tensor::wrap(nbr, Shape(num_roots, k)); }
  Tensor eid_tensor() const { return Tensor::wrap(eid, Shape(num_roots, k)); }
  Tensor dt_tensor() const { return Tensor::wrap(dt, Shape(num_roots, k)); }
  Tensor mask_tensor() const { return Tensor::wrap(mask, Shape(num_roots, k)); }
};

class BlockBuffers {
 public:
  BlockBuffers() = default;
  // Room for `max_roots` hop-0 roots, k slots per root, `hops` hops.
  BlockBuffers(int64_t max_roots, int32_t k, int32_t hops) { reserve(max_roots, k, hops); }
  // A copy holds the same blocks (the filled rows) in its own storage; copying into buffers
  // of the same shape and enough room allocates nothing.
  BlockBuffers(const BlockBuffers& other) { *this = other; }
  BlockBuffers& operator=(const BlockBuffers& other);
  BlockBuffers(BlockBuffers&&) = default;
  BlockBuffers& operator=(BlockBuffers&&) = default;

  // Ensures room for the shape; reallocates (invalidating earlier Blocks) only when it
  // grows. A different k or hop count reshapes the buffers.
  void reserve(int64_t max_roots, int32_t k, int32_t hops);
  // Sets the number of hop-0 roots of the current batch (<= capacity) and the hop sizes.
  void set_roots(int64_t num_roots);

  int32_t hops() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t k() const { return k_; }
  int64_t capacity() const { return capacity_; }
  const Block& hop(int32_t l) const { return blocks_[static_cast<size_t>(l)]; }

 private:
  struct HopStorage {
    OwnedTensor nbr, eid, dt, mask, slot;
  };
  int32_t k_ = 0;
  int64_t capacity_ = 0;
  std::vector<HopStorage> storage_;
  std::vector<Block> blocks_;
};

}  // namespace depbloom::graph
