// Arena: bump allocation over a list of chunks, all kept and carved in order after reset.
#include "depbloom/core/arena.h"

#include <algorithm>

namespace depbloom {
namespace {
constexpr size_t kAlign = 256;
size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

Arena::Arena(Device device, size_t initial_bytes, HostMemory host) : device_(device), host_(host) {
  chunks_.reserve(32);
  if (initial_bytes > 0) add_chunk(align_up(initial_bytes));
}

void Arena::add_chunk(size_t bytes) {
  chunks_.push_back(Chunk{Buffer(bytes, device_, host_), 0});
  capacity_ += bytes;
  ++system_allocations_;
}

void* Arena::alloc_bytes(size_t bytes) {
  size_t need = align_up(std::max<size_t>(bytes, 1));
  // The current chunk, else the first kept one with room (an earlier chunk's tail too, so
  // a large tensor skipping a tail leaves it to the smaller ones after it), else a new chunk
  // of half the capacity so far: geometric growth, and memory already touched is never
  // given back and faulted in again.
  if (current_ == chunks_.size() ||
      chunks_[current_].used + need > chunks_[current_].buffer.bytes()) {
    current_ = 0;
    while (current_ < chunks_.size() &&
           chunks_[current_].used + need > chunks_[current_].buffer.bytes())
      ++current_;
  }
  if (current_ == chunks_.size()) add_chunk(std::max({need, capacity_ / 2, size_t{1} << 20}));
  Chunk& c = chunks_[current_];
  void* p = static_cast<char*>(c.buffer.data()) + c.used;
  c.used += need;
  used_total_ += need;
  peak_ = std::max(peak_, used_total_);
  return p;
}

Tensor Arena::alloc(DType dtype, Shape shape) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  return Tensor(alloc_bytes(bytes), dtype, shape, device_);
}

void Arena::reset() {
  for (Chunk& c : chunks_) c.used = 0;
  current_ = 0;
  used_total_ = 0;
}

bool Arena::owns(const void* p) const {
  const auto* b = static_cast<const char*>(p);
  for (const auto& c : chunks_) {
    const auto* base = static_cast<const char*>(c.buffer.data());
    if (b >= base && b < base + c.used) return true;
  }
  return false;
}

size_t Arena::capacity_bytes() const {
  return capacity_;
}

}  // namespace depbloom
