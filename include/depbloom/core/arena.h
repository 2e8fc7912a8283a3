// Per-step bump allocator: tensors for activations and backward contexts are carved from
// it during a step and all released at once by reset(). After a warm-up step it allocates
// nothing: an overflow adds a chunk, and the next reset() merges the chunks into one block
// of the high-water size plus a quarter, so a steady-state step never touches the system
// allocator.
#pragma once

#include <cstddef>
#include <vector>

#include "depbloom/core/memory.h"

namespace depbloom {

class Arena {
 public:
  explicit Arena(Device device = Device::cpu(), size_t initial_bytes = 0);

  // Uninitialised tensor valid until the next reset(). 256-byte aligned.
  Tensor alloc(DType dtype, Shape shape);
  void* alloc_bytes(size_t bytes);
  // Release everything; grows the main block to 1.25x the high-water mark if a step overflowed.
  void reset();

  Device device() const { return device_; }
  size_t used_bytes() const { return used_total_; }
  size_t peak_bytes() const { return peak_; }
  size_t capacity_bytes() const;
  // Chunks allocated from the system since construction (0 growth means a warm arena).
  int64_t system_allocations() const { return system_allocations_; }

 private:
  struct Chunk {
    Buffer buffer;
    size_t used = 0;
  };
  void add_chunk(size_t bytes);

  Device device_;
  std::vector<Chunk> chunks_;
  size_t used_total_ = 0;
  size_t peak_ = 0;
  int64_t system_allocations_ = 0;
};

}  // namespace depbloom
