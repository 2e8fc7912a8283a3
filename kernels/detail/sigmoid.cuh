// The logistic sigmoid as the CPU computes it, shared by the BCE kernels: no overflow for
// either sign, and tiny rather than 0 for very negative x.
#pragma once

#include <cuda_runtime.h>

namespace depbloom::kernels::detail {

__device__ __forceinline__ float stable_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

}  // namespace depbloom::kernels::detail
