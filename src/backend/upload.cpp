// upload: a view on the CPU, an arena copy on a GPU.
#include "depbloom/backend/upload.h"

#include "depbloom/backend/ops.h"

namespace depbloom {

Tensor upload(Arena& arena, const Tensor& host) {
  DB_ASSERT(host.device().is_cpu(), "upload: {} is not in host memory", host.str());
  if (arena.device().is_cpu()) return host;
  Tensor d = arena.alloc(host.dtype(), host.shape());
  ops::copy(d, host);
  return d;
}

}  // namespace depbloom
