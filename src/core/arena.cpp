// Arena: bump allocation over a list of chunks that collapses to one block on reset.
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
  chunks_.reserve(16);
  if (initial_bytes > 0) add_chunk(align_up(initial_bytes));
}

void Arena::add_chunk(size_t bytes) {
  chunks_.push_back(Chunk{Buffer(bytes, device_, host_), 0});
  ++system_allocations_;
}

void* Arena::alloc_bytes(size_t bytes) {
  size_t need = align_up(std::max<size_t>(bytes, 1));
  if (chunks_.empty() || chunks_.back().used + need > chunks_.back().buffer.bytes()) {
    size_t last = chunks_.empty() ? 0 : chunks_.back().buffer.bytes();
    // Geometric growth keeps a cold step to a few chunks however many tensors it carves.
    add_chunk(std::max({need, 2 * last, size_t{1} << 20}));
  }
  Chunk& c = chunks_.back();
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
  if (chunks_.size() > 1) {
    // A step overflowed: replace the chunks by one block of the peak plus a quarter. Batches
    // grow slowly as a stream's graph densifies; without headroom every new high-water mark
    // would re-allocate (and re-fault, page by page) a block of hundreds of megabytes.
    size_t want = align_up(peak_ + peak_ / 4);
    chunks_.clear();
    add_chunk(want);
  } else if (!chunks_.empty()) {
    chunks_.front().used = 0;
  }
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
  size_t n = 0;
  for (const auto& c : chunks_) n += c.buffer.bytes();
  return n;
}

}  // namespace depbloom
