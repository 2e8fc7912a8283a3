// upload: a view on the CPU; on a GPU an asynchronous copy from the arena's pinned staging
// memory when it has some, else a copy that waits. Each call counts one upload on either
// device (backend::op_counts), and no op call.
#include "depbloom/backend/upload.h"

#include <cstring>

#include "depbloom/backend/op_counts.h"

#if DEPBLOOM_WITH_CUDA
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_ops.h"
#endif

namespace depbloom {

Tensor upload(Arena& arena, const Tensor& host) {
  DB_ASSERT(host.device().is_cpu(), "upload: {} is not in host memory", host.str());
  backend::count_upload();
  if (arena.device().is_cpu()) return host;
#if DEPBLOOM_WITH_CUDA
  Tensor d = arena.alloc(host.dtype(), host.shape());
  Arena* staging = arena.staging();
  if (staging == nullptr || host.bytes() == 0) {
    ops::cuda::copy(d, host);  // pageable memory: the copy must end before the caller may touch it
    return d;
  }
  Tensor src = host;
  if (!staging->owns(host.raw())) {
    src = staging->alloc(host.dtype(), host.shape());
    std::memcpy(src.raw(), host.raw(), host.bytes());
  }
  backend::copy_to_device_async(d.raw(), src.raw(), src.bytes(), arena.device().index);
  return d;
#else
  DB_THROW(runtime, "upload: {} needs a GPU but DepBloom was built without CUDA",
           arena.device().str());
#endif
}

}  // namespace depbloom
