// upload: a view on the CPU; on a GPU an asynchronous copy from the arena's pinned staging
// memory when it has some, else a copy that waits.
#include "depbloom/backend/upload.h"

#include <cstring>

#include "depbloom/backend/ops.h"

#if DEPBLOOM_WITH_CUDA
#include "backend/cuda/cuda_context.h"
#endif

namespace depbloom {

Tensor upload(Arena& arena, const Tensor& host) {
  DB_ASSERT(host.device().is_cpu(), "upload: {} is not in host memory", host.str());
  if (arena.device().is_cpu()) return host;
  Tensor d = arena.alloc(host.dtype(), host.shape());
  Arena* staging = arena.staging();
  if (staging == nullptr || host.bytes() == 0) {
    ops::copy(d, host);  // pageable memory: the copy must end before the caller may touch it
    return d;
  }
  Tensor src = host;
  if (!staging->owns(host.raw())) {
    src = staging->alloc(host.dtype(), host.shape());
    std::memcpy(src.raw(), host.raw(), host.bytes());
  }
#if DEPBLOOM_WITH_CUDA
  backend::copy_to_device_async(d.raw(), src.raw(), src.bytes(), arena.device().index);
#endif
  return d;
}

}  // namespace depbloom
