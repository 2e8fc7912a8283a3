// The fused Adam / AdamW step over the flat parameter, gradient and moment buffers: one
// pass, one thread per parameter, PyTorch's formulation (torch.optim.Adam / AdamW).
#include "elementwise.cuh"

#include "detail/launch.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_thread;
using detail::grid_for;
using detail::grid_threads;
using detail::kBlock;

// The CPU's expression, term for term (src/backend/cpu/cpu_loss_optim.cpp):
//   g = grad + l2 p, m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
//   p = p - decay p - step_size m / (sqrt(v) inv_sqrt_bc2 + eps),
// with the decay taken from the old p (AdamW shrinks before the update, like PyTorch).
__global__ void adam_kernel(float* params, const float* grads, float* m, float* v, int64_t n,
                            AdamParams hp) {
  const float one_minus_beta1 = 1.0f - hp.beta1;
  const float one_minus_beta2 = 1.0f - hp.beta2;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float p = params[i];
    const float g = grads[i] + hp.l2 * p;
    const float mi = hp.beta1 * m[i] + one_minus_beta1 * g;
    const float vi = hp.beta2 * v[i] + one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = p - hp.decay * p - hp.step_size * mi / (sqrtf(vi) * hp.inv_sqrt_bc2 + hp.eps);
  }
}

}  // namespace

cudaError_t adam_step(float* params, const float* grads, float* m, float* v, int64_t n,
                      const AdamParams& hp, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  adam_kernel<<<grid_for(n), kBlock, 0, stream>>>(params, grads, m, v, n, hp);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
