// Launchers of the row-wise kernels (attention.cu, norm.cu): masked softmax, neighbour
// attention and layer norm, one warp per row (or per row and head). Plain C++ declarations
// over raw device pointers; shapes and semantics as documented in backend/ops.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace depbloom::kernels {

// y, x [rows, k]; mask [rows, k] (1 = valid). Masked slots and fully masked rows get 0.
cudaError_t masked_softmax_forward(float* y, const float* x, const uint8_t* mask, int64_t rows,
                                   int64_t k, cudaStream_t stream);
// dx = y * (dy - sum_j dy_j y_j).
cudaError_t masked_softmax_backward(float* dx, const float* dy, const float* y, int64_t rows,
                                    int64_t k, cudaStream_t stream);

// q, out [rows, heads*dim]; kv [rows, slots, 2*heads*dim] (each slot's key, then its
// value); mask [rows, slots]; attn [rows, heads, slots]. Scores act(scale * <q_h, k_jh>)
// with leaky_relu(slope).
cudaError_t attention_forward(float* out, float* attn, const float* q, const float* kv,
                              const uint8_t* mask, int64_t rows, int64_t slots, int64_t heads,
                              int64_t dim, float scale, float slope, cudaStream_t stream);
// Scratch the backward needs: two floats per (row, head, slot). dkv as kv.
size_t attention_backward_workspace_bytes(int64_t rows, int64_t slots, int64_t heads);
cudaError_t attention_backward(float* dq, float* dkv, const float* dout, const float* attn,
                               const float* q, const float* kv, const uint8_t* mask, int64_t rows,
                               int64_t slots, int64_t heads, int64_t dim, float scale, float slope,
                               void* workspace, cudaStream_t stream);

// y, x [rows, dim]; gamma, beta [dim]; mean, rstd [rows]. Row statistics in double.
cudaError_t layer_norm_forward(float* y, float* mean, float* rstd, const float* x,
                               const float* gamma, const float* beta, int64_t rows, int64_t dim,
                               double eps, cudaStream_t stream);
// dx overwrites; dgamma, dbeta accumulate (deterministic column reduction).
size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t dim);
cudaError_t layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy,
                                const float* x, const float* mean, const float* rstd,
                                const float* gamma, int64_t rows, int64_t dim, void* workspace,
                                cudaStream_t stream);

}  // namespace depbloom::kernels
