// A set of (src, dst) pairs packed in 64-bit keys, open addressing with linear probing.
// std::unordered_set allocates a node per pair, which dominates the run time on streams of
// millions of events. Internal to src/data.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace depbloom::data {

class PairSet {
 public:
  explicit PairSet(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap <<= 1;
    slots_.reserve(cap);  // allocated, not yet touched
    mask_ = cap - 1;
#if defined(__linux__)
    // Probes land on random pages; huge pages spare a TLB miss on most of them.
    const auto begin = reinterpret_cast<uintptr_t>(slots_.data());
    const uintptr_t huge = uintptr_t{1} << 21;
    const uintptr_t first = (begin + huge - 1) & ~(huge - 1);
    const uintptr_t last = (begin + cap * sizeof(uint64_t)) & ~(huge - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
    slots_.assign(cap, kEmpty);
  }
  static uint64_t key(int32_t u, int32_t v) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(u)) << 32) | static_cast<uint32_t>(v);
  }
  // Inserts the pair; returns true when it was already present.
  bool insert_or_find(int32_t u, int32_t v) {
    const uint64_t k = key(u, v);
    size_t i = mix(k) & mask_;
    while (true) {
      if (slots_[i] == k) return true;
      if (slots_[i] == kEmpty) {
        slots_[i] = k;
        ++size_;
        return false;
      }
      i = (i + 1) & mask_;
    }
  }
  bool contains(int32_t u, int32_t v) const {
    const uint64_t k = key(u, v);
    for (size_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == k) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }
  size_t size() const {
    return size_;
  }

 private:
  // Ids are non-negative int32, so no pair packs to all ones.
  static constexpr uint64_t kEmpty = std::numeric_limits<uint64_t>::max();
  static uint64_t mix(uint64_t x) {  // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace depbloom::data
