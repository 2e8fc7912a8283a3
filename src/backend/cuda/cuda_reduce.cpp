// CUDA reductions: bias gradient, sum, sum of squares, the BCE loss and the time-encoding
// parameter gradients. All deterministic (fixed partition and order, see kernels/reduce.cuh);
// partial sums go to the thread's reusable workspace, so a warm step allocates nothing.
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_ops.h"
#include "depbloom/core/cuda_check.h"
#include "reduce.cuh"

namespace depbloom::ops::cuda {

void bias_grad(const Tensor& dbias, const Tensor& dy) {
  const int64_t cols = dbias.numel();
  if (cols == 0 || dy.empty()) return;
  const int64_t rows = dy.numel() / cols;
  const int device = dbias.device().index;
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::column_reduce_workspace_bytes(rows, cols, 1));
  DB_CHECK_CUDA(kernels::bias_grad(dbias.data<float>(), dy.data<float>(), rows, cols, ws, stream));
}

void time_encode_backward(const Tensor& dw, const Tensor& db, const Tensor& dout, const Tensor& dt,
                          const Tensor& w, const Tensor& b) {
  const int64_t rows = dout.dim(0);
  const int64_t dims = w.numel();
  const int device = dw.device().index;
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::column_reduce_workspace_bytes(rows, dims, 2));
  DB_CHECK_CUDA(kernels::time_encode_backward(
      dw.data<float>(), db.data<float>(), dout.data<float>(),
      dt.raw() == nullptr ? nullptr : dt.data<float>(), dt.raw() == nullptr ? 0 : dt.numel(),
      w.data<float>(), b.data<float>(), rows, dims, ws, stream));
}

void sum(const Tensor& out, const Tensor& x) {
  const int device = out.device().index;
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::scalar_reduce_workspace_bytes(x.numel()));
  DB_CHECK_CUDA(kernels::sum(out.data<float>(), x.data<float>(), x.numel(), ws, stream));
}

void sum_squares(const Tensor& out, const Tensor& x) {
  const int device = out.device().index;
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::scalar_reduce_workspace_bytes(x.numel()));
  DB_CHECK_CUDA(kernels::sum_squares(out.data<float>(), x.data<float>(), x.numel(), ws, stream));
}

// The mean is taken in double after the double sum; an empty batch gives 0, as on the CPU.
void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  const int device = loss.device().index;
  const int64_t n = logits.numel();
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::scalar_reduce_workspace_bytes(n));
  DB_CHECK_CUDA(kernels::bce_forward(loss.data<float>(), logits.data<float>(),
                                     targets.data<float>(), n, ws, stream));
}

void bce_with_logits_loss_and_grad(const Tensor& loss, const Tensor& dlogits, const Tensor& logits,
                                   const Tensor& targets, double scale) {
  const int device = loss.device().index;
  const int64_t n = logits.numel();
  cudaStream_t stream = backend::enter_device(device);
  void* ws = backend::workspace(device, kernels::scalar_reduce_workspace_bytes(n));
  DB_CHECK_CUDA(kernels::bce_loss_and_grad(loss.data<float>(), dlogits.data<float>(),
                                           logits.data<float>(), targets.data<float>(), n,
                                           static_cast<float>(scale), ws, stream));
}

}  // namespace depbloom::ops::cuda
