// The seam between core and the CUDA runtime for raw device memory. Implemented by
// src/core/device_memory_cuda.cpp in CUDA builds and by device_memory_none.cpp otherwise
// (which throws "built without CUDA"), so core itself needs no CUDA header.
#pragma once

#include <cstddef>

namespace depbloom {

bool built_with_cuda();
void* device_malloc(size_t bytes, int device);
void device_free(void* p, int device) noexcept;
// Page-locked host memory (cudaHostAlloc, 256-byte aligned as every allocation is).
void* pinned_malloc(size_t bytes);
void pinned_free(void* p) noexcept;
// kind: 0 host->device, 1 device->host, 2 device->device; a device index is -1 for the host.
// Ordered after all work queued on the devices involved, and complete on return.
void device_memcpy(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                   int kind);

}  // namespace depbloom
