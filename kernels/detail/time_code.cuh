// One element of the cosine time encoding, cos(t w + b), shared by the kernels that write it.
// The phase is rounded exactly as the CPU's `dt * w + b` (a product, then a sum): a fused
// multiply-add would round once, and for large dt * w the cosine of the two differs visibly.
#pragma once

namespace depbloom::kernels::detail {

__device__ __forceinline__ float time_code(float t, float w, float b) {
  return cosf(__fadd_rn(__fmul_rn(t, w), b));
}

}  // namespace depbloom::kernels::detail
