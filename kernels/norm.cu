// Layer norm over the last dimension: forward and input gradient with one warp per row,
// row statistics in double (two-pass mean and variance, as the CPU), dgamma/dbeta by the
// deterministic column reduction of detail/reduce.cuh (accumulating, per the contract).
#include "rowwise.cuh"

#include <cmath>

#include "detail/launch.cuh"
#include "detail/reduce.cuh"
#include "elementwise.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_warp;
using detail::grid_for;
using detail::grid_warps;
using detail::kBlock;
using detail::kWarp;
using detail::kWarpsPerBlock;
using detail::lane_id;
using detail::warp_sum;

// In double: mu = sum x / D, var = sum (x - mu)^2 / D, rstd = 1 / sqrt(var + eps); then in
// float with m = float(mu), s = float(rstd): y = (x - m) * s * gamma + beta. y may alias x
// (each lane reads its element before writing it; the earlier passes only read).
__global__ void layer_norm_forward_kernel(float* y, float* mean_out, float* rstd_out,
                                          const float* x, const float* gamma, const float* beta,
                                          int64_t rows, int64_t dim, double eps) {
  const int lane = lane_id();
  const auto n = static_cast<double>(dim);
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const float* xr = x + r * dim;
    double total = 0.0;
    for (int64_t c = lane; c < dim; c += kWarp) total += static_cast<double>(xr[c]);
    const double mu = warp_sum(total) / n;
    double squares = 0.0;
    for (int64_t c = lane; c < dim; c += kWarp) {
      const double d = static_cast<double>(xr[c]) - mu;
      squares += d * d;
    }
    const double inv_std = 1.0 / sqrt(warp_sum(squares) / n + eps);
    const auto m = static_cast<float>(mu);
    const auto s = static_cast<float>(inv_std);
    float* yr = y + r * dim;
    for (int64_t c = lane; c < dim; c += kWarp) yr[c] = (xr[c] - m) * s * gamma[c] + beta[c];
    if (lane == 0) {
      mean_out[r] = m;
      rstd_out[r] = s;
    }
  }
}

// With xhat = (x - mean) * rstd and g = dy * gamma (float, as the CPU), the row means of g
// and g * xhat in double, rounded to float:
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)). dx may alias dy.
__global__ void layer_norm_dx_kernel(float* dx, const float* dy, const float* x, const float* mean,
                                     const float* rstd, const float* gamma, int64_t rows,
                                     int64_t dim) {
  const int lane = lane_id();
  const auto n = static_cast<double>(dim);
  for (int64_t r = global_warp(); r < rows; r += grid_warps()) {
    const float* xr = x + r * dim;
    const float* dyr = dy + r * dim;
    const float mu = mean[r];
    const float rs = rstd[r];
    double sum_g = 0.0;
    double sum_gx = 0.0;
    for (int64_t c = lane; c < dim; c += kWarp) {
      const auto g = static_cast<double>(dyr[c] * gamma[c]);
      sum_g += g;
      sum_gx += g * static_cast<double>((xr[c] - mu) * rs);
    }
    const auto mean_g = static_cast<float>(warp_sum(sum_g) / n);
    const auto mean_gx = static_cast<float>(warp_sum(sum_gx) / n);
    float* dxr = dx + r * dim;
    for (int64_t c = lane; c < dim; c += kWarp) {
      const float xhat = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - mean_g - xhat * mean_gx);
    }
  }
}

// v[0] feeds dgamma (dy * (x - mean) * rstd, in float as the CPU), v[1] feeds dbeta (dy).
struct LayerNormParamTerm {
  const float* dy;
  const float* x;
  const float* mean;
  const float* rstd;
  int64_t dim;
  __device__ void operator()(int64_t r, int64_t c, double v[2]) const {
    const int64_t i = r * dim + c;
    v[0] = static_cast<double>(dy[i] * (x[i] - mean[r]) * rstd[r]);
    v[1] = static_cast<double>(dy[i]);
  }
};

}  // namespace

cudaError_t layer_norm_forward(float* y, float* mean, float* rstd, const float* x,
                               const float* gamma, const float* beta, int64_t rows, int64_t dim,
                               double eps, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  if (dim <= 0) {  // empty rows: the CPU's statistics, mean 0 and rstd 1/sqrt(eps)
    const cudaError_t e = fill(mean, rows, 0.0f, stream);
    if (e != cudaSuccess) return e;
    return fill(rstd, rows, static_cast<float>(1.0 / std::sqrt(eps)), stream);
  }
  layer_norm_forward_kernel<<<grid_for(rows, kWarpsPerBlock), kBlock, 0, stream>>>(
      y, mean, rstd, x, gamma, beta, rows, dim, eps);
  return cudaGetLastError();
}

size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t dim) {
  return detail::column_workspace_bytes(rows, dim, 2);
}

cudaError_t layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy,
                                const float* x, const float* mean, const float* rstd,
                                const float* gamma, int64_t rows, int64_t dim, void* workspace,
                                cudaStream_t stream) {
  if (rows <= 0 || dim <= 0) return cudaSuccess;
  // The parameter gradients read dy first: dx may alias dy and overwrites it afterwards.
  cudaError_t e = detail::column_reduce<2>(LayerNormParamTerm{dy, x, mean, rstd, dim}, rows, dim,
                                           dgamma, dbeta, workspace, stream);
  if (e != cudaSuccess) return e;
  layer_norm_dx_kernel<<<grid_for(rows, kWarpsPerBlock), kBlock, 0, stream>>>(dx, dy, x, mean, rstd,
                                                                              gamma, rows, dim);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
