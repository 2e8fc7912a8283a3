// Device memory in a build without CUDA: every request is an error with a clear message.
#include "depbloom/core/device_memory.h"
#include "depbloom/core/error.h"

namespace depbloom {

bool built_with_cuda() {
  return false;
}

void* device_malloc(size_t bytes, int device) {
  DB_THROW(runtime, "cannot allocate {} bytes on cuda:{}: DepBloom was built without CUDA", bytes,
           device);
}

void device_free(void* /*p*/, int /*device*/) noexcept {}

void* pinned_malloc(size_t bytes) {
  DB_THROW(runtime, "cannot pin {} bytes of host memory: DepBloom was built without CUDA", bytes);
}

void pinned_free(void* /*p*/) noexcept {}

void device_memcpy(void* /*dst*/, int /*dst_device*/, const void* /*src*/, int /*src_device*/,
                   size_t bytes, int /*kind*/) {
  DB_THROW(runtime, "cannot copy {} bytes to or from a GPU: DepBloom was built without CUDA",
           bytes);
}

}  // namespace depbloom
