// Launchers of the deterministic reductions (reduce.cu): plain C++ declarations over raw
// device pointers. Partial sums live in a caller-provided device workspace of at least the
// *_workspace_bytes() size (may be 0, then nullptr is fine); results are independent of
// scheduling: the block partition depends on the shape only and the sum order is fixed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace depbloom::kernels {

// Workspace of a column reduction over [rows, cols] with `outputs` results per column.
size_t column_reduce_workspace_bytes(int64_t rows, int64_t cols, int outputs);
// Workspace of a reduction of n elements to one scalar.
size_t scalar_reduce_workspace_bytes(int64_t n);

// dbias [cols] += sum over rows of dy [rows, cols].
cudaError_t bias_grad(float* dbias, const float* dy, int64_t rows, int64_t cols, void* workspace,
                      cudaStream_t stream);
// out [1] = sum of x [n]; sum_squares: sum of x^2.
cudaError_t sum(float* out, const float* x, int64_t n, void* workspace, cudaStream_t stream);
cudaError_t sum_squares(float* out, const float* x, int64_t n, void* workspace,
                        cudaStream_t stream);
// loss [1] = mean_i (max(x,0) - x*y + log(1 + exp(-|x|))), terms in double; 0 when n == 0.
cudaError_t bce_forward(float* loss, const float* logits, const float* targets, int64_t n,
                        void* workspace, cudaStream_t stream);
// The same loss, and in the same pass dlogits [n] = (sigmoid(x) - y) * scale.
cudaError_t bce_loss_and_grad(float* loss, float* dlogits, const float* logits,
                              const float* targets, int64_t n, float scale, void* workspace,
                              cudaStream_t stream);
// With phase = dt[r] * w[c] + b[c]: db[c] += sum_r -dout[r,c] sin(phase),
// dw[c] += sum_r -dout[r,c] sin(phase) dt[r]; rows from dt_rows on (all when dt is null) have
// dt 0. Workspace: 2 outputs over [rows, dims].
cudaError_t time_encode_backward(float* dw, float* db, const float* dout, const float* dt,
                                 int64_t dt_rows, const float* w, const float* b, int64_t rows,
                                 int64_t dims, void* workspace, cudaStream_t stream);

}  // namespace depbloom::kernels
