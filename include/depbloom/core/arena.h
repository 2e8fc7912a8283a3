// Per-step bump allocator: tensors for activations and backward contexts are carved from
// it during a step and all released at once by reset(). After a warm-up step it allocates
// nothing: a tensor goes into the first chunk with room for it (an earlier chunk's tail
// too), an overflow adds a chunk of half the capacity so far (or more), and reset() keeps
// every chunk for the next step. Nothing is freed and allocated
// again, so memory is faulted in once, not at every new high-water mark (merging the chunks
// into one bigger block would touch gigabytes afresh on a large refined step). A host arena
// may be pinned; a device arena may name the pinned host arena that stages its uploads
// (backend/upload.h), so that they need no host wait.
#pragma once

#include <cstddef>
#include <vector>

#include "depbloom/core/memory.h"

namespace depbloom {

class Arena {
 public:
  explicit Arena(Device device = Device::cpu(), size_t initial_bytes = 0,
                 HostMemory host = HostMemory::pageable);

  // Uninitialised tensor valid until the next reset(). 256-byte aligned.
  Tensor alloc(DType dtype, Shape shape);
  void* alloc_bytes(size_t bytes);
  // Release everything; the chunks stay for the next step.
  void reset();

  Device device() const { return device_; }
  // Whether `p` points into memory this arena handed out since its last reset.
  bool owns(const void* p) const;
  // The pinned host arena that stages uploads to this one (null: none, uploads wait).
  Arena* staging() const { return staging_; }
  void set_staging(Arena* staging) { staging_ = staging; }
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
  HostMemory host_;
  Arena* staging_ = nullptr;
  std::vector<Chunk> chunks_;
  size_t current_ = 0;  // the chunk being carved
  size_t capacity_ = 0;
  size_t used_total_ = 0;
  size_t peak_ = 0;
  int64_t system_allocations_ = 0;
};

}  // namespace depbloom
