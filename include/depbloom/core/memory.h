// RAII owners of memory: Buffer (bytes on the host or a CUDA device, move-only, counted)
// and OwnedTensor (a Buffer plus the Tensor view over it). Host memory is 256-byte aligned (as
// cudaMalloc). Device memory goes through device_memory.h so that this header needs no CUDA
// include.
#pragma once

#include <atomic>
#include <cstddef>

#include "depbloom/core/tensor.h"

namespace depbloom {

// Bytes currently held by all Buffers, per device type (for logs and tests).
struct MemoryCounters {
  std::atomic<int64_t> host_bytes{0};
  std::atomic<int64_t> device_bytes{0};
  std::atomic<int64_t> host_allocations{0};
  std::atomic<int64_t> device_allocations{0};
};
MemoryCounters& memory_counters();

// Host memory is pageable, or pinned (page-locked, CUDA builds only) so that copies to a GPU
// can run asynchronously on a stream.
enum class HostMemory : uint8_t { pageable, pinned };

class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t bytes, Device device, HostMemory host = HostMemory::pageable);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }

 private:
  void release() noexcept;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  bool pinned_ = false;
};

class OwnedTensor {
 public:
  OwnedTensor() = default;
  OwnedTensor(DType dtype, Shape shape, Device device = Device::cpu());
  static OwnedTensor zeros(DType dtype, Shape shape, Device device = Device::cpu());

  const Tensor& view() const { return view_; }
  operator const Tensor&() const { return view_; }  // NOLINT: owners pass where views go
  template <class T>
  T* data() const {
    return view_.data<T>();
  }
  const Shape& shape() const { return view_.shape(); }
  int64_t numel() const { return view_.numel(); }
  DType dtype() const { return view_.dtype(); }
  Device device() const { return view_.device(); }

 private:
  Buffer buffer_;
  Tensor view_;
};

// Byte copy between any two devices (host<->device, device<->device, host<->host).
// Synchronous with respect to the host and, when a GPU is involved, to every stream of the
// device (it waits for the device): for setting buffers up, not for the per-batch path;
// use backend ops (ops::copy) for stream-ordered copies.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);

}  // namespace depbloom
