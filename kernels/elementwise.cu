// Element-wise kernels: fill, axpy, scale, row scaling, bias add, activations, dropout, time
// encoding forward and the BCE gradient. One thread per element in grid-stride loops; float math
// with the accurate expf/tanhf/cosf (never the __ intrinsics) so results track the CPU.
#include "elementwise.cuh"

#include <type_traits>

#include "detail/launch.cuh"
#include "detail/sigmoid.cuh"
#include "detail/time_code.cuh"

namespace depbloom::kernels {
namespace {

using detail::global_thread;
using detail::grid_for;
using detail::grid_threads;
using detail::kBlock;
using detail::with_index_type;

template <class T>
__global__ void fill_kernel(T* x, int64_t n, T value) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) x[i] = value;
}

template <class T>
cudaError_t launch_fill(T* x, int64_t n, T value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  fill_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, n, value);
  return cudaGetLastError();
}

__global__ void axpy_kernel(float* y, float alpha, const float* x, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] += alpha * x[i];
}

__global__ void scale_kernel(float* x, float alpha, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) x[i] *= alpha;
}

__global__ void mul_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = a[i] * b[i];
}

__global__ void sub_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = a[i] - b[i];
}

// I: the index type (with_index_type), so the column is a 32-bit remainder when it can be.
// y [n / cols, cols] += bias (kAdd), or = bias on every row (gemm_bias's start).
template <class I, bool kAdd>
__global__ void bias_rows_kernel(float* y, const float* bias, I n, I cols) {
  for (I i = static_cast<I>(global_thread()); i < n; i += static_cast<I>(grid_threads()))
    y[i] = kAdd ? y[i] + bias[i % cols] : bias[i % cols];
}

template <bool kAdd>
cudaError_t launch_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t n = rows * cols;
  return with_index_type(n, [&](auto index) {
    using I = decltype(index);
    bias_rows_kernel<I, kAdd>
        <<<grid_for(n), kBlock, 0, stream>>>(y, bias, static_cast<I>(n), static_cast<I>(cols));
    return cudaGetLastError();
  });
}

template <class I>
__global__ void scale_rows_kernel(float* out, const float* x, const float* weight, I n, I cols) {
  for (I i = static_cast<I>(global_thread()); i < n; i += static_cast<I>(grid_threads()))
    out[i] = x[i] * weight[i / cols];
}

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

template <ActKind kAct>
__device__ __forceinline__ float act_value(float x, float slope) {
  if constexpr (kAct == ActKind::relu) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (kAct == ActKind::sigmoid) {
    return sigmoid(x);
  } else if constexpr (kAct == ActKind::tanh) {
    return tanhf(x);
  } else {
    static_assert(kAct == ActKind::leaky_relu);
    return x > 0.0f ? x : slope * x;
  }
}

// The derivative written in terms of the forward output y (see ops.h).
template <ActKind kAct>
__device__ __forceinline__ float act_grad(float dy, float y, float slope) {
  if constexpr (kAct == ActKind::relu) {
    return y > 0.0f ? dy : 0.0f;
  } else if constexpr (kAct == ActKind::sigmoid) {
    return dy * y * (1.0f - y);
  } else if constexpr (kAct == ActKind::tanh) {
    return dy * (1.0f - y * y);
  } else {
    static_assert(kAct == ActKind::leaky_relu);
    return y > 0.0f ? dy : slope * dy;
  }
}

// y may alias x: each element is read, then written, by the same thread.
template <ActKind kAct>
__global__ void act_forward_kernel(float* y, const float* x, int64_t n, float slope) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = act_value<kAct>(x[i], slope);
}

// dx may alias dy, likewise.
template <ActKind kAct>
__global__ void act_backward_kernel(float* dx, const float* dy, const float* y, int64_t n,
                                    float slope) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = act_grad<kAct>(dy[i], y[i], slope);
}

__global__ void add_blocks_relu_forward_kernel(float* y, const float* src, int64_t n,
                                               int64_t block) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const float v = y[i] + src[i % block];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

// One thread per element of dsrc walks the blocks in order, as the CPU does.
__global__ void add_blocks_relu_backward_kernel(float* dsrc, float* dy, const float* y, int64_t n,
                                                int64_t block) {
  for (int64_t i = global_thread(); i < block; i += grid_threads()) {
    float sum = 0.0f;
    for (int64_t j = i; j < n; j += block) {
      const float g = y[j] > 0.0f ? dy[j] : 0.0f;
      dy[j] = g;
      sum = j == i ? g : sum + g;
    }
    dsrc[i] = sum;
  }
}

// Calls fn(std::integral_constant<ActKind, act>{}), so that the kernels get the activation
// as a template argument (no switch per element).
template <class Fn>
cudaError_t with_act(ActKind act, const Fn& fn) {
  switch (act) {
    case ActKind::relu:
      return fn(std::integral_constant<ActKind, ActKind::relu>{});
    case ActKind::sigmoid:
      return fn(std::integral_constant<ActKind, ActKind::sigmoid>{});
    case ActKind::tanh:
      return fn(std::integral_constant<ActKind, ActKind::tanh>{});
    case ActKind::leaky_relu:
      return fn(std::integral_constant<ActKind, ActKind::leaky_relu>{});
  }
  return cudaErrorInvalidValue;
}

// The keep decision compares in double, exactly as the CPU's `uniform_float(bits) >= p`
// with p a double: a float-rounded p could flip draws that fall between the two values.
template <class I>
__global__ void dropout_forward_kernel(float* y, uint8_t* keep, const float* x, I n, I row_size,
                                       double p, float inv_keep, RngKey key, uint64_t first_row,
                                       const int64_t* row_ids) {
  for (I i = static_cast<I>(global_thread()); i < n; i += static_cast<I>(grid_threads())) {
    const I r = i / row_size;
    const uint64_t row = row_ids != nullptr ? static_cast<uint64_t>(row_ids[r])
                                            : first_row + static_cast<uint64_t>(r);
    const auto lane = static_cast<uint32_t>(i % row_size);
    const bool kept = static_cast<double>(uniform_float(philox_u32(key, row, lane))) >= p;
    keep[i] = kept ? 1 : 0;
    y[i] = kept ? x[i] * inv_keep : 0.0f;
  }
}

__global__ void dropout_backward_kernel(float* dx, const float* dy, const uint8_t* keep, int64_t n,
                                        float inv_keep) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = keep[i] != 0 ? dy[i] * inv_keep : 0.0f;
}

template <class I>
__global__ void time_encode_forward_kernel(float* out, const float* dt, const float* w,
                                           const float* b, I n, I dims) {
  for (I i = static_cast<I>(global_thread()); i < n; i += static_cast<I>(grid_threads())) {
    const I r = i / dims;
    const I d = i - r * dims;
    out[i] = detail::time_code(dt[r], w[d], b[d]);
  }
}

__global__ void bce_backward_kernel(float* dlogits, const float* logits, const float* targets,
                                    int64_t n, float scale) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dlogits[i] = (detail::stable_sigmoid(logits[i]) - targets[i]) * scale;
}

}  // namespace

cudaError_t fill(float* x, int64_t n, float value, cudaStream_t stream) {
  return launch_fill(x, n, value, stream);
}
cudaError_t fill(int32_t* x, int64_t n, int32_t value, cudaStream_t stream) {
  return launch_fill(x, n, value, stream);
}
cudaError_t fill(int64_t* x, int64_t n, int64_t value, cudaStream_t stream) {
  return launch_fill(x, n, value, stream);
}
cudaError_t fill(uint8_t* x, int64_t n, uint8_t value, cudaStream_t stream) {
  return launch_fill(x, n, value, stream);
}

cudaError_t axpy(float* y, float alpha, const float* x, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  axpy_kernel<<<grid_for(n), kBlock, 0, stream>>>(y, alpha, x, n);
  return cudaGetLastError();
}

cudaError_t scale(float* x, float alpha, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  scale_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, alpha, n);
  return cudaGetLastError();
}

cudaError_t mul(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  mul_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, a, b, n);
  return cudaGetLastError();
}

cudaError_t sub(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  sub_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, a, b, n);
  return cudaGetLastError();
}

cudaError_t bias_add(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  return launch_bias_rows<true>(y, bias, rows, cols, stream);
}

cudaError_t rows_from_bias(float* y, const float* bias, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  return launch_bias_rows<false>(y, bias, rows, cols, stream);
}

cudaError_t scale_rows(float* out, const float* x, const float* weight, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t n = rows * cols;
  return with_index_type(n, [&](auto index) {
    using I = decltype(index);
    scale_rows_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, x, weight, static_cast<I>(n),
                                                          static_cast<I>(cols));
    return cudaGetLastError();
  });
}

cudaError_t act_forward(ActKind act, float* y, const float* x, int64_t n, float slope,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return with_act(act, [&](auto kind) {
    act_forward_kernel<decltype(kind)::value><<<grid_for(n), kBlock, 0, stream>>>(y, x, n, slope);
    return cudaGetLastError();
  });
}

cudaError_t act_backward(ActKind act, float* dx, const float* dy, const float* y, int64_t n,
                         float slope, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return with_act(act, [&](auto kind) {
    act_backward_kernel<decltype(kind)::value>
        <<<grid_for(n), kBlock, 0, stream>>>(dx, dy, y, n, slope);
    return cudaGetLastError();
  });
}

cudaError_t add_blocks_relu_forward(float* y, const float* src, int64_t n, int64_t block,
                                    cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  add_blocks_relu_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(y, src, n, block);
  return cudaGetLastError();
}

cudaError_t add_blocks_relu_backward(float* dsrc, float* dy, const float* y, int64_t n,
                                     int64_t block, cudaStream_t stream) {
  if (block <= 0) return cudaSuccess;
  add_blocks_relu_backward_kernel<<<grid_for(block), kBlock, 0, stream>>>(dsrc, dy, y, n, block);
  return cudaGetLastError();
}

cudaError_t dropout_forward(float* y, uint8_t* keep, const float* x, int64_t n, int64_t row_size,
                            double p, float inv_keep, RngKey key, uint64_t first_row,
                            const int64_t* row_ids, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (row_size <= 0) return cudaErrorInvalidValue;
  return with_index_type(n, [&](auto index) {
    using I = decltype(index);
    dropout_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(y, keep, x, static_cast<I>(n),
                                                               static_cast<I>(row_size), p,
                                                               inv_keep, key, first_row, row_ids);
    return cudaGetLastError();
  });
}

cudaError_t dropout_backward(float* dx, const float* dy, const uint8_t* keep, int64_t n,
                             float inv_keep, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  dropout_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(dx, dy, keep, n, inv_keep);
  return cudaGetLastError();
}

cudaError_t time_encode_forward(float* out, const float* dt, const float* w, const float* b,
                                int64_t rows, int64_t dims, cudaStream_t stream) {
  if (rows <= 0 || dims <= 0) return cudaSuccess;
  const int64_t n = rows * dims;
  return with_index_type(n, [&](auto index) {
    using I = decltype(index);
    time_encode_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, dt, w, b, static_cast<I>(n),
                                                                   static_cast<I>(dims));
    return cudaGetLastError();
  });
}

cudaError_t bce_backward(float* dlogits, const float* logits, const float* targets, int64_t n,
                         float scale, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bce_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(dlogits, logits, targets, n, scale);
  return cudaGetLastError();
}

}  // namespace depbloom::kernels
