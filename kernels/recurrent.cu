// Fused recurrent cells: the GRU cell (PyTorch's equations, gate order r, z, n) and the
// vanilla RNN cell, forward and backward, one thread per (batch row, hidden unit). Each
// thread loads everything it needs before storing, so h_new may alias h and dh dh_new. The
// element index splits into (row, unit) in 32 bits when it fits (with_index_type).
#include "elementwise.cuh"

#include "detail/launch.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_thread;
using detail::grid_for;
using detail::grid_threads;
using detail::kBlock;
using detail::with_index_type;

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

//   r = sig(gx_r + gh_r), z = sig(gx_z + gh_z), n = tanh(gx_n + r * gh_n),
//   h_new = (1 - z) * n + z * h; gates row = (r, z, n, gh_n).
template <class I>
__global__ void gru_forward_kernel(float* h_new, float* gates, const float* gx, const float* gh,
                                   const float* h, I total, I hidden) {
  for (I i = static_cast<I>(global_thread()); i < total; i += static_cast<I>(grid_threads())) {
    const int64_t b = i / hidden;
    const int64_t j = i - static_cast<I>(b) * hidden;
    const float* gx_row = gx + b * 3 * hidden;
    const float* gh_row = gh + b * 3 * hidden;
    const float gh_n = gh_row[2 * hidden + j];
    const float h_old = h[i];
    const float r = sigmoid(gx_row[j] + gh_row[j]);
    const float z = sigmoid(gx_row[hidden + j] + gh_row[hidden + j]);
    const float n = tanhf(gx_row[2 * hidden + j] + r * gh_n);
    float* gate_row = gates + b * 4 * hidden;
    gate_row[j] = r;
    gate_row[hidden + j] = z;
    gate_row[2 * hidden + j] = n;
    gate_row[3 * hidden + j] = gh_n;
    h_new[i] = (1.0f - z) * n + z * h_old;
  }
}

// With a = gx_n + r * gh_n:
//   dn = dh_new (1 - z), dz = dh_new (h - n), dh = dh_new z (direct path only),
//   da = dn (1 - n^2):      d_gx_n = da, d_gh_n = da r,
//   dr = da gh_n, dr_pre = dr r (1 - r):  d_gx_r = d_gh_r = dr_pre,
//   dz_pre = dz z (1 - z):  d_gx_z = d_gh_z = dz_pre.
template <class I>
__global__ void gru_backward_kernel(float* d_gx, float* d_gh, float* dh, const float* dh_new,
                                    const float* gates, const float* h, I total, I hidden) {
  for (I i = static_cast<I>(global_thread()); i < total; i += static_cast<I>(grid_threads())) {
    const int64_t b = i / hidden;
    const int64_t j = i - static_cast<I>(b) * hidden;
    const float* gate_row = gates + b * 4 * hidden;
    const float r = gate_row[j];
    const float z = gate_row[hidden + j];
    const float n = gate_row[2 * hidden + j];
    const float gh_n = gate_row[3 * hidden + j];
    const float g = dh_new[i];
    const float h_old = h[i];

    const float dn = g * (1.0f - z);
    const float dz = g * (h_old - n);
    const float da = dn * (1.0f - n * n);
    const float dr_pre = da * gh_n * r * (1.0f - r);
    const float dz_pre = dz * z * (1.0f - z);

    float* dgx_row = d_gx + b * 3 * hidden;
    float* dgh_row = d_gh + b * 3 * hidden;
    dgx_row[j] = dr_pre;
    dgx_row[hidden + j] = dz_pre;
    dgx_row[2 * hidden + j] = da;
    dgh_row[j] = dr_pre;
    dgh_row[hidden + j] = dz_pre;
    dgh_row[2 * hidden + j] = da * r;
    dh[i] = g * z;
  }
}

__global__ void rnn_forward_kernel(float* h_new, const float* gx, const float* gh, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) h_new[i] = tanhf(gx[i] + gh[i]);
}

__global__ void rnn_backward_kernel(float* d_pre, const float* dh_new, const float* h_new,
                                    int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float y = h_new[i];
    d_pre[i] = dh_new[i] * (1.0f - y * y);
  }
}

}  // namespace

cudaError_t gru_cell_forward(float* h_new, float* gates, const float* gx, const float* gh,
                             const float* h, int64_t batch, int64_t hidden, cudaStream_t stream) {
  if (batch <= 0 || hidden <= 0) return cudaSuccess;
  const int64_t total = batch * hidden;
  return with_index_type(total, [&](auto index) {
    using I = decltype(index);
    gru_forward_kernel<<<grid_for(total), kBlock, 0, stream>>>(
        h_new, gates, gx, gh, h, static_cast<I>(total), static_cast<I>(hidden));
    return cudaGetLastError();
  });
}

cudaError_t gru_cell_backward(float* d_gx, float* d_gh, float* dh, const float* dh_new,
                              const float* gates, const float* h, int64_t batch, int64_t hidden,
                              cudaStream_t stream) {
  if (batch <= 0 || hidden <= 0) return cudaSuccess;
  const int64_t total = batch * hidden;
  return with_index_type(total, [&](auto index) {
    using I = decltype(index);
    gru_backward_kernel<<<grid_for(total), kBlock, 0, stream>>>(
        d_gx, d_gh, dh, dh_new, gates, h, static_cast<I>(total), static_cast<I>(hidden));
    return cudaGetLastError();
  });
}

cudaError_t rnn_cell_forward(float* h_new, const float* gx, const float* gh, int64_t n,
                             cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  rnn_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(h_new, gx, gh, n);
  return cudaGetLastError();
}

cudaError_t rnn_cell_backward(float* d_pre, const float* dh_new, const float* h_new, int64_t n,
                              cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  rnn_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(d_pre, dh_new, h_new, n);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
