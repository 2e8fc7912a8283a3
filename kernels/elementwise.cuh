// Launchers of the element-wise kernels (elementwise.cu, recurrent.cu, adam.cu): plain C++
// declarations over raw device pointers, so the g++-compiled op wrappers can call them.
// Each queues its kernel on `stream` and returns the launch status; n == 0 launches nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "depbloom/core/philox.h"

namespace depbloom::kernels {

// Mirrors ops::Act (ops.h cannot be included here: it pulls fmt into nvcc).
enum class ActKind : int { relu, sigmoid, tanh, leaky_relu };

cudaError_t fill(float* x, int64_t n, float value, cudaStream_t stream);
cudaError_t fill(int32_t* x, int64_t n, int32_t value, cudaStream_t stream);
cudaError_t fill(int64_t* x, int64_t n, int64_t value, cudaStream_t stream);
cudaError_t fill(uint8_t* x, int64_t n, uint8_t value, cudaStream_t stream);
// y += alpha * x.
cudaError_t axpy(float* y, float alpha, const float* x, int64_t n, cudaStream_t stream);
// x *= alpha.
cudaError_t scale(float* x, float alpha, int64_t n, cudaStream_t stream);
// out = a * b element-wise; out may alias a or b.
cudaError_t mul(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream);
// out = a - b element-wise; out may alias a or b.
cudaError_t sub(float* out, const float* a, const float* b, int64_t n, cudaStream_t stream);
// out [rows, cols] = x [rows, cols] * weight [rows] per row; out may alias x.
cudaError_t scale_rows(float* out, const float* x, const float* weight, int64_t rows, int64_t cols,
                       cudaStream_t stream);
// y [rows, cols] += bias [cols].
cudaError_t bias_add(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);
// y [rows, cols] = bias [cols] on every row (gemm_bias's start).
cudaError_t rows_from_bias(float* y, const float* bias, int64_t rows, int64_t cols,
                           cudaStream_t stream);

// y = act(x); dx = dy * act'(from y). Outputs may alias inputs.
cudaError_t act_forward(ActKind act, float* y, const float* x, int64_t n, float slope,
                        cudaStream_t stream);
cudaError_t act_backward(ActKind act, float* dx, const float* dy, const float* y, int64_t n,
                         float slope, cudaStream_t stream);
// y [n / block elements of blocks] = relu(y + src) with src [block] added to every block (in
// place); dy *= (y > 0) in place and dsrc [block] = the sum of dy's blocks in block order.
cudaError_t add_blocks_relu_forward(float* y, const float* src, int64_t n, int64_t block,
                                    cudaStream_t stream);
cudaError_t add_blocks_relu_backward(float* dsrc, float* dy, const float* y, int64_t n,
                                     int64_t block, cudaStream_t stream);

// keep[e] = uniform_float(philox_u32(key, row(e / row_size), e % row_size)) >= p,
// y[e] = keep ? x[e] * inv_keep : 0 with inv_keep = 1 / (1 - p); row(r) = row_ids[r], or
// first_row + r when row_ids is null.
cudaError_t dropout_forward(float* y, uint8_t* keep, const float* x, int64_t n, int64_t row_size,
                            double p, float inv_keep, RngKey key, uint64_t first_row,
                            const int64_t* row_ids, cudaStream_t stream);
cudaError_t dropout_backward(float* dx, const float* dy, const uint8_t* keep, int64_t n,
                             float inv_keep, cudaStream_t stream);

// out [rows, dims] = cos(dt [rows] * w [dims] + b [dims]).
cudaError_t time_encode_forward(float* out, const float* dt, const float* w, const float* b,
                                int64_t rows, int64_t dims, cudaStream_t stream);

// dlogits [n] = (sigmoid(logits) - targets) * scale.
cudaError_t bce_backward(float* dlogits, const float* logits, const float* targets, int64_t n,
                         float scale, cudaStream_t stream);

// GRU and RNN cells, equations and layouts as in ops.h: gx, gh, d_gx, d_gh [batch, 3*hidden];
// gates [batch, 4*hidden] = (r, z, n, gh_n); h_new may alias h, dh may alias dh_new.
cudaError_t gru_cell_forward(float* h_new, float* gates, const float* gx, const float* gh,
                             const float* h, int64_t batch, int64_t hidden, cudaStream_t stream);
cudaError_t gru_cell_backward(float* d_gx, float* d_gh, float* dh, const float* dh_new,
                              const float* gates, const float* h, int64_t batch, int64_t hidden,
                              cudaStream_t stream);
cudaError_t rnn_cell_forward(float* h_new, const float* gx, const float* gh, int64_t n,
                             cudaStream_t stream);
cudaError_t rnn_cell_backward(float* d_pre, const float* dh_new, const float* h_new, int64_t n,
                              cudaStream_t stream);

// Adam over flat buffers (torch.optim.Adam / AdamW); constants computed in double on the
// host, then rounded to float: step_size = lr / (1 - beta1^t), inv_sqrt_bc2 =
// 1 / sqrt(1 - beta2^t).
struct AdamParams {
  float beta1, beta2, eps;
  float l2;     // weight decay added to the gradient (Adam); 0 for AdamW
  float decay;  // lr * weight decay, subtracted as decay * p (AdamW); 0 for Adam
  float step_size, inv_sqrt_bc2;
};
cudaError_t adam_step(float* params, const float* grads, float* m, float* v, int64_t n,
                      const AdamParams& hp, cudaStream_t stream);

}  // namespace depbloom::kernels
