// Buffer and OwnedTensor: aligned host allocations and device allocations with counters.
#include "depbloom/core/memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "depbloom/core/device_memory.h"
#include "depbloom/core/memory_peak.h"

namespace depbloom {

MemoryCounters& memory_counters() {
  static MemoryCounters counters;
  return counters;
}

namespace {

std::atomic<int64_t> g_host_peak{0};
std::atomic<int64_t> g_device_peak{0};

// Adds `bytes` to a held count and raises its peak to the new count (other threads may
// allocate at once: the peak only ever moves up).
void count_held(std::atomic<int64_t>& held, std::atomic<int64_t>& peak, size_t bytes) {
  const int64_t now = held += static_cast<int64_t>(bytes);
  int64_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
}

}  // namespace

int64_t host_peak_bytes() {
  return g_host_peak.load();
}

int64_t device_peak_bytes() {
  return g_device_peak.load();
}

Buffer::Buffer(size_t bytes, Device device, HostMemory host)
    : bytes_(bytes), device_(device), pinned_(device.is_cpu() && host == HostMemory::pinned) {
  if (bytes == 0) return;
  if (pinned_) {
    data_ = pinned_malloc(bytes);
    count_held(memory_counters().host_bytes, g_host_peak, bytes);
    memory_counters().host_allocations += 1;
  } else if (device.is_cpu()) {
    // 256 bytes: the arena's alignment promise holds for chunk bases too, and rows of
    // float tensors start on cache-line and SIMD boundaries. Blocks of 2 MiB and more are
    // aligned to 2 MiB and asked for as transparent huge pages (where the kernel leaves
    // that to madvise): a step's arena of gigabytes is otherwise first touched 4 KiB page
    // by page, a fault each, and walks a TLB of small pages.
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t align = bytes >= kHuge ? kHuge : 256;
    size_t rounded = (bytes + align - 1) / align * align;
    data_ = std::aligned_alloc(align, rounded);
    if (data_ == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == kHuge) madvise(data_, rounded, MADV_HUGEPAGE);  // a hint: failure is fine
#endif
    count_held(memory_counters().host_bytes, g_host_peak, bytes);
    memory_counters().host_allocations += 1;
  } else {
    data_ = device_malloc(bytes, device.index);
    count_held(memory_counters().device_bytes, g_device_peak, bytes);
    memory_counters().device_allocations += 1;
  }
}

Buffer::~Buffer() {
  release();
}

Buffer::Buffer(Buffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      device_(o.device_),
      pinned_(o.pinned_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
    pinned_ = o.pinned_;
  }
  return *this;
}

void Buffer::release() noexcept {
  if (data_ == nullptr) return;
  if (device_.is_cpu()) {
    if (pinned_) {
      pinned_free(data_);
    } else {
      std::free(data_);
    }
    memory_counters().host_bytes -= static_cast<int64_t>(bytes_);
  } else {
    device_free(data_, device_.index);
    memory_counters().device_bytes -= static_cast<int64_t>(bytes_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

OwnedTensor::OwnedTensor(DType dtype, Shape shape, Device device)
    : buffer_(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device),
      view_(buffer_.data(), dtype, shape, device) {}

OwnedTensor OwnedTensor::zeros(DType dtype, Shape shape, Device device) {
  OwnedTensor t(dtype, shape, device);
  if (t.numel() == 0) return t;
  if (device.is_cpu()) {
    std::memset(t.view().raw(), 0, t.view().bytes());
  } else {
    std::vector<char> zero(t.view().bytes(), 0);
    copy_bytes(t.view().raw(), device, zero.data(), Device::cpu(), zero.size());
  }
  return t;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
  } else {
    const int kind = src_device.is_cpu() ? 0 : dst_device.is_cpu() ? 1 : 2;
    device_memcpy(dst, dst_device.is_cpu() ? -1 : dst_device.index, src,
                  src_device.is_cpu() ? -1 : src_device.index, bytes, kind);
  }
}

}  // namespace depbloom
