// BlockBuffers: per-hop [roots, k] arrays sized roots * k^(l+1) slots for hop l.
#include "depbloom/graph/block.h"

#include <algorithm>
#include <cstring>

#include "depbloom/core/error.h"

namespace depbloom::graph {

void BlockBuffers::reserve(int64_t max_roots, int32_t k, int32_t hops) {
  DB_ASSERT(max_roots >= 0 && k >= 1 && hops >= 1, "bad block shape: {} roots, k {}, {} hops",
            max_roots, k, hops);
  if (k == k_ && hops == this->hops() && max_roots <= capacity_) return;
  // Growing by at least half avoids a reallocation for every slightly larger batch.
  int64_t roots = max_roots;
  if (k == k_ && hops == this->hops()) roots = std::max(max_roots, capacity_ + capacity_ / 2);

  std::vector<HopStorage> storage(static_cast<size_t>(hops));
  std::vector<Block> blocks(static_cast<size_t>(hops));
  int64_t hop_roots = roots;
  for (int32_t l = 0; l < hops; ++l) {
    DB_ASSERT(hop_roots <= (int64_t{1} << 40) / k, "block of {} roots x k {} at hop {} is too big",
              hop_roots, k, l);
    const int64_t slots = hop_roots * k;
    HopStorage& s = storage[static_cast<size_t>(l)];
    s.nbr = OwnedTensor(DType::i32, Shape(slots));
    s.eid = OwnedTensor(DType::i64, Shape(slots));
    s.dt = OwnedTensor(DType::f32, Shape(slots));
    s.mask = OwnedTensor(DType::u8, Shape(slots));
    Block& b = blocks[static_cast<size_t>(l)];
    b.k = k;
    b.nbr = s.nbr.data<int32_t>();
    b.eid = s.eid.data<int64_t>();
    b.dt = s.dt.data<float>();
    b.mask = s.mask.data<uint8_t>();
    if (l + 1 < hops) {
      s.slot = OwnedTensor(DType::i64, Shape(slots));
      b.slot = s.slot.data<int64_t>();
    }
    hop_roots = slots;  // every slot of hop l is a root of hop l+1
  }
  storage_ = std::move(storage);
  blocks_ = std::move(blocks);
  k_ = k;
  capacity_ = roots;
}

void BlockBuffers::set_roots(int64_t num_roots) {
  DB_ASSERT(num_roots >= 0 && num_roots <= capacity_, "{} roots, block buffers hold {}", num_roots,
            capacity_);
  int64_t hop_roots = num_roots;
  for (Block& b : blocks_) {
    b.num_roots = hop_roots;
    hop_roots *= k_;
  }
}

BlockBuffers& BlockBuffers::operator=(const BlockBuffers& other) {
  if (this == &other) return *this;
  if (other.hops() == 0) {
    storage_.clear(), blocks_.clear();
    k_ = 0, capacity_ = 0;
    return *this;
  }
  reserve(other.capacity_, other.k_, other.hops());
  set_roots(other.hop(0).num_roots);
  for (int32_t l = 0; l < hops(); ++l) {
    const Block& from = other.hop(l);
    const Block& to = blocks_[static_cast<size_t>(l)];
    const auto n = static_cast<size_t>(from.num_slots());
    std::memcpy(to.nbr, from.nbr, n * sizeof(int32_t));
    std::memcpy(to.eid, from.eid, n * sizeof(int64_t));
    std::memcpy(to.dt, from.dt, n * sizeof(float));
    std::memcpy(to.mask, from.mask, n);
    if (to.slot != nullptr) std::memcpy(to.slot, from.slot, n * sizeof(int64_t));
  }
  return *this;
}

}  // namespace depbloom::graph
