// CUDA element-wise ops: fill, copy, axpy, scale, bias add, activations, recurrent cells,
// time-encoding forward, dropout, the BCE gradient and Adam. Thin wrappers: read sizes
// from the (already validated) tensors and queue the kernels on the thread's stream.
#include <cmath>
#include <cstring>

#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_ops.h"
#include "depbloom/core/cuda_check.h"
#include "elementwise.cuh"

namespace depbloom::ops::cuda {
namespace {

int device_of(const Tensor& t) {
  return t.device().index;
}

kernels::ActKind act_kind(Act act) {
  switch (act) {
    case Act::relu:
      return kernels::ActKind::relu;
    case Act::sigmoid:
      return kernels::ActKind::sigmoid;
    case Act::tanh:
      return kernels::ActKind::tanh;
    case Act::leaky_relu:
      return kernels::ActKind::leaky_relu;
  }
  DB_THROW(runtime, "unknown activation {}", static_cast<int>(act));
}

// Host memory must be complete when copy() returns (the caller may read or free it).
void copy_host_device(const Tensor& dst, const Tensor& src, cudaMemcpyKind kind, int device) {
  cudaStream_t stream = backend::enter_device(device);
  DB_CHECK_CUDA(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), kind, stream));
  backend::wait_stream(device, stream);
}

}  // namespace

void fill(const Tensor& x, double value) {
  if (x.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(x));
  const int64_t n = x.numel();
  switch (x.dtype()) {
    case DType::f32:
      DB_CHECK_CUDA(kernels::fill(x.data<float>(), n, static_cast<float>(value), stream));
      return;
    case DType::i32:
      DB_CHECK_CUDA(kernels::fill(x.data<int32_t>(), n, static_cast<int32_t>(value), stream));
      return;
    case DType::i64:
      DB_CHECK_CUDA(kernels::fill(x.data<int64_t>(), n, static_cast<int64_t>(value), stream));
      return;
    case DType::u8:
      DB_CHECK_CUDA(kernels::fill(x.data<uint8_t>(), n, static_cast<uint8_t>(value), stream));
      return;
    case DType::f64:
      break;
  }
  DB_THROW(runtime, "fill on CUDA supports f32, i32, i64 and u8, not {}", x.str());
}

// Any dtype (bytes are bytes). Same device: stream-ordered, returns at once. Host <-> device:
// ordered after the stream's earlier work and complete on return. Device <-> device across
// GPUs: waits for the destination's stream, copies on the source's, complete on return.
void copy(const Tensor& dst, const Tensor& src) {
  const size_t bytes = src.bytes();
  if (bytes == 0) return;
  const Device dd = dst.device();
  const Device sd = src.device();
  if (dd.is_cuda() && sd.is_cuda()) {
    if (dd.index == sd.index) {
      if (dst.raw() == src.raw()) return;  // as on the CPU; memcpy of a range onto itself is UB
      cudaStream_t stream = backend::enter_device(dd.index);
      DB_CHECK_CUDA(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToDevice, stream));
      return;
    }
    backend::wait_stream(dd.index, backend::enter_device(dd.index));
    cudaStream_t stream = backend::enter_device(sd.index);
    DB_CHECK_CUDA(cudaMemcpyPeerAsync(dst.raw(), dd.index, src.raw(), sd.index, bytes, stream));
    backend::wait_stream(sd.index, stream);
    return;
  }
  if (dd.is_cuda()) return copy_host_device(dst, src, cudaMemcpyHostToDevice, dd.index);
  if (sd.is_cuda()) return copy_host_device(dst, src, cudaMemcpyDeviceToHost, sd.index);
  std::memcpy(dst.raw(), src.raw(), bytes);
}

void axpy(const Tensor& y, double alpha, const Tensor& x) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::axpy(y.data<float>(), static_cast<float>(alpha), x.data<float>(),
                              y.numel(), stream));
}

void mul(const Tensor& out, const Tensor& a, const Tensor& b) {
  cudaStream_t stream = backend::enter_device(device_of(out));
  DB_CHECK_CUDA(
      kernels::mul(out.data<float>(), a.data<float>(), b.data<float>(), out.numel(), stream));
}

void sub(const Tensor& out, const Tensor& a, const Tensor& b) {
  cudaStream_t stream = backend::enter_device(device_of(out));
  DB_CHECK_CUDA(
      kernels::sub(out.data<float>(), a.data<float>(), b.data<float>(), out.numel(), stream));
}

void scale_rows(const Tensor& out, const Tensor& x, const Tensor& weight) {
  cudaStream_t stream = backend::enter_device(device_of(out));
  DB_CHECK_CUDA(kernels::scale_rows(out.data<float>(), x.data<float>(), weight.data<float>(),
                                    x.dim(0), x.dim(1), stream));
}

void scale(const Tensor& x, double alpha) {
  cudaStream_t stream = backend::enter_device(device_of(x));
  DB_CHECK_CUDA(kernels::scale(x.data<float>(), static_cast<float>(alpha), x.numel(), stream));
}

void bias_add(const Tensor& y, const Tensor& bias) {
  const int64_t cols = bias.numel();
  if (cols == 0 || y.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(
      kernels::bias_add(y.data<float>(), bias.data<float>(), y.numel() / cols, cols, stream));
}

void act_forward(Act act, const Tensor& y, const Tensor& x, double slope) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::act_forward(act_kind(act), y.data<float>(), x.data<float>(), y.numel(),
                                     static_cast<float>(slope), stream));
}

void act_backward(Act act, const Tensor& dx, const Tensor& dy, const Tensor& y, double slope) {
  cudaStream_t stream = backend::enter_device(device_of(dx));
  DB_CHECK_CUDA(kernels::act_backward(act_kind(act), dx.data<float>(), dy.data<float>(),
                                      y.data<float>(), dx.numel(), static_cast<float>(slope),
                                      stream));
}

void add_blocks_relu_forward(const Tensor& y, const Tensor& src) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::add_blocks_relu_forward(y.data<float>(), src.data<float>(), y.numel(),
                                                 src.numel(), stream));
}

void add_blocks_relu_backward(const Tensor& dsrc, const Tensor& dy, const Tensor& y) {
  cudaStream_t stream = backend::enter_device(device_of(y));
  DB_CHECK_CUDA(kernels::add_blocks_relu_backward(
      dsrc.data<float>(), dy.data<float>(), y.data<float>(), y.numel(), dsrc.numel(), stream));
}

void gru_cell_forward(const Tensor& h_new, const Tensor& gates, const Tensor& gx, const Tensor& gh,
                      const Tensor& h) {
  cudaStream_t stream = backend::enter_device(device_of(h_new));
  DB_CHECK_CUDA(kernels::gru_cell_forward(h_new.data<float>(), gates.data<float>(),
                                          gx.data<float>(), gh.data<float>(), h.data<float>(),
                                          h.dim(0), h.dim(1), stream));
}

void gru_cell_backward(const Tensor& d_gx, const Tensor& d_gh, const Tensor& dh,
                       const Tensor& dh_new, const Tensor& gates, const Tensor& h) {
  cudaStream_t stream = backend::enter_device(device_of(dh));
  DB_CHECK_CUDA(kernels::gru_cell_backward(d_gx.data<float>(), d_gh.data<float>(), dh.data<float>(),
                                           dh_new.data<float>(), gates.data<float>(),
                                           h.data<float>(), h.dim(0), h.dim(1), stream));
}

void rnn_cell_forward(const Tensor& h_new, const Tensor& gx, const Tensor& gh) {
  cudaStream_t stream = backend::enter_device(device_of(h_new));
  DB_CHECK_CUDA(kernels::rnn_cell_forward(h_new.data<float>(), gx.data<float>(), gh.data<float>(),
                                          h_new.numel(), stream));
}

void rnn_cell_backward(const Tensor& d_pre, const Tensor& dh_new, const Tensor& h_new) {
  cudaStream_t stream = backend::enter_device(device_of(d_pre));
  DB_CHECK_CUDA(kernels::rnn_cell_backward(d_pre.data<float>(), dh_new.data<float>(),
                                           h_new.data<float>(), d_pre.numel(), stream));
}

void time_encode_forward(const Tensor& out, const Tensor& dt, const Tensor& w, const Tensor& b) {
  cudaStream_t stream = backend::enter_device(device_of(out));
  DB_CHECK_CUDA(kernels::time_encode_forward(out.data<float>(), dt.data<float>(), w.data<float>(),
                                             b.data<float>(), dt.numel(), w.numel(), stream));
}

void dropout_forward(const Tensor& y, const Tensor& keep, const Tensor& x, double p,
                     const RngKey& key, const DropoutRows& rows) {
  if (x.empty()) return;
  cudaStream_t stream = backend::enter_device(device_of(y));
  const auto inv_keep = static_cast<float>(1.0 / (1.0 - p));
  DB_CHECK_CUDA(kernels::dropout_forward(
      y.data<float>(), keep.data<uint8_t>(), x.data<float>(), x.numel(), x.row_size(), p, inv_keep,
      key, rows.first, rows.keyed() ? rows.ids.data<int64_t>() : nullptr, stream));
}

void dropout_backward(const Tensor& dx, const Tensor& dy, const Tensor& keep, double p) {
  cudaStream_t stream = backend::enter_device(device_of(dx));
  const auto inv_keep = static_cast<float>(1.0 / (1.0 - p));
  DB_CHECK_CUDA(kernels::dropout_backward(dx.data<float>(), dy.data<float>(), keep.data<uint8_t>(),
                                          dx.numel(), inv_keep, stream));
}

void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                              double scale) {
  cudaStream_t stream = backend::enter_device(device_of(dlogits));
  DB_CHECK_CUDA(kernels::bce_backward(dlogits.data<float>(), logits.data<float>(),
                                      targets.data<float>(), dlogits.numel(),
                                      static_cast<float>(scale), stream));
}

// The bias corrections are computed in double on the host, then rounded to float once.
void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v,
               const AdamConfig& cfg, int64_t step) {
  DB_ASSERT(step >= 1, "adam step counts from 1, got {}", step);
  const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  kernels::AdamParams hp{};
  hp.beta1 = static_cast<float>(cfg.beta1);
  hp.beta2 = static_cast<float>(cfg.beta2);
  hp.eps = static_cast<float>(cfg.eps);
  hp.l2 = cfg.decoupled ? 0.0f : static_cast<float>(cfg.weight_decay);
  hp.decay = cfg.decoupled ? static_cast<float>(cfg.lr * cfg.weight_decay) : 0.0f;
  hp.step_size = static_cast<float>(cfg.lr / bc1);
  hp.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  cudaStream_t stream = backend::enter_device(device_of(params));
  DB_CHECK_CUDA(kernels::adam_step(params.data<float>(), grads.data<float>(), m.data<float>(),
                                   v.data<float>(), params.numel(), hp, stream));
}

}  // namespace depbloom::ops::cuda
