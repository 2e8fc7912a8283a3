// Dispatch layer for the element-wise ops: activations, dropout, the BCE loss, Adam, axpy
// and scale. Entry checks on shapes, dtypes and devices, then the CPU or CUDA backend.
#include <cmath>

#include "backend/op_checks.h"

namespace depbloom::ops {

void act_forward(Act act, const Tensor& y, const Tensor& x, double slope) {
  const char* op = "act_forward";
  detail::common_device(op, y, x);
  detail::require_float(op, "x", x);
  detail::require_like(op, "y", y, "x", x);
  DB_DISPATCH_OP(act_forward, x.device(), x.dtype(), act, y, x, slope);
}

void act_backward(Act act, const Tensor& dx, const Tensor& dy, const Tensor& y, double slope) {
  const char* op = "act_backward";
  detail::common_device(op, dx, dy, y);
  detail::require_float(op, "y", y);
  detail::require_like(op, "dy", dy, "y", y);
  detail::require_like(op, "dx", dx, "y", y);
  DB_DISPATCH_OP(act_backward, y.device(), y.dtype(), act, dx, dy, y, slope);
}

namespace {

// y [n*B, D] against src [B, D]: n whole blocks of src's rows.
void check_blocks(const char* op, const char* name, const Tensor& y, const Tensor& src) {
  DB_ASSERT(y.rank() == 2 && src.rank() == 2 && y.dim(1) == src.dim(1) && src.dim(0) > 0 &&
                y.dim(0) % src.dim(0) == 0,
            "{}: {} {} must be whole blocks of [{}, {}] rows", op, name, y.str(),
            src.rank() == 2 ? src.dim(0) : -1, src.rank() == 2 ? src.dim(1) : -1);
}

}  // namespace

void add_blocks_relu_forward(const Tensor& y, const Tensor& src) {
  const char* op = "add_blocks_relu_forward";
  detail::common_device(op, y, src);
  detail::require_float(op, "y", y);
  detail::require_same_dtype(op, "src", src, "y", y);
  check_blocks(op, "y", y, src);
  DB_DISPATCH_OP(add_blocks_relu_forward, y.device(), y.dtype(), y, src);
}

void add_blocks_relu_backward(const Tensor& dsrc, const Tensor& dy, const Tensor& y) {
  const char* op = "add_blocks_relu_backward";
  detail::common_device(op, dsrc, dy, y);
  detail::require_float(op, "y", y);
  detail::require_like(op, "dy", dy, "y", y);
  detail::require_same_dtype(op, "dsrc", dsrc, "y", y);
  check_blocks(op, "y", y, dsrc);
  DB_DISPATCH_OP(add_blocks_relu_backward, y.device(), y.dtype(), dsrc, dy, y);
}

void dropout_forward(const Tensor& y, const Tensor& keep, const Tensor& x, double p,
                     const RngKey& key, const DropoutRows& rows) {
  const char* op = "dropout_forward";
  detail::common_device(op, y, keep, x);
  detail::require_float(op, "x", x);
  detail::require_like(op, "y", y, "x", x);
  detail::require_mask(op, "keep", keep);
  DB_ASSERT(keep.numel() == x.numel(), "{}: keep {} and x {} differ in element count", op,
            keep.str(), x.str());
  DB_ASSERT(p >= 0.0 && p < 1.0, "{}: drop probability {} is outside [0, 1)", op, p);
  if (rows.keyed()) {
    detail::common_device(op, x, rows.ids);
    const int64_t n_rows = x.numel() == 0 ? 0 : x.numel() / x.row_size();
    DB_ASSERT(rows.ids.dtype() == DType::i64 && rows.ids.rank() == 1 && rows.ids.numel() == n_rows,
              "{}: row ids must be i64 [{}] (one per row of x {}), got {}", op, n_rows, x.str(),
              rows.ids.str());
  }
  DB_DISPATCH_OP(dropout_forward, x.device(), x.dtype(), y, keep, x, p, key, rows);
}

void dropout_backward(const Tensor& dx, const Tensor& dy, const Tensor& keep, double p) {
  const char* op = "dropout_backward";
  detail::common_device(op, dx, dy, keep);
  detail::require_float(op, "dy", dy);
  detail::require_like(op, "dx", dx, "dy", dy);
  detail::require_mask(op, "keep", keep);
  DB_ASSERT(keep.numel() == dy.numel(), "{}: keep {} and dy {} differ in element count", op,
            keep.str(), dy.str());
  DB_ASSERT(p >= 0.0 && p < 1.0, "{}: drop probability {} is outside [0, 1)", op, p);
  DB_DISPATCH_OP(dropout_backward, dy.device(), dy.dtype(), dx, dy, keep, p);
}

namespace {
// The BCE ops' arguments: logits and targets alike; the loss (when defined) one element of
// their dtype, the gradient (when defined) like the logits.
void check_bce(const char* op, const Tensor& loss, const Tensor& dlogits, const Tensor& logits,
               const Tensor& targets) {
  detail::common_device(op, logits, targets);
  detail::require_float(op, "logits", logits);
  detail::require_like(op, "targets", targets, "logits", logits);
  if (dlogits.defined()) {
    detail::common_device(op, logits, dlogits);
    detail::require_like(op, "dlogits", dlogits, "logits", logits);
  }
  if (loss.defined()) {
    detail::common_device(op, logits, loss);
    detail::require_same_dtype(op, "loss", loss, "logits", logits);
    DB_ASSERT(loss.numel() == 1, "{}: loss must hold one element, got {} (logits {})", op,
              loss.str(), logits.str());
  }
}
}  // namespace

void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  detail::require_defined("bce_with_logits_forward", "loss", loss);
  check_bce("bce_with_logits_forward", loss, Tensor{}, logits, targets);
  DB_DISPATCH_OP(bce_with_logits_forward, logits.device(), logits.dtype(), loss, logits, targets);
}

void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                              double scale) {
  detail::require_defined("bce_with_logits_backward", "dlogits", dlogits);
  check_bce("bce_with_logits_backward", Tensor{}, dlogits, logits, targets);
  DB_DISPATCH_OP(bce_with_logits_backward, logits.device(), logits.dtype(), dlogits, logits,
                 targets, scale);
}

void bce_with_logits_loss_and_grad(const Tensor& loss, const Tensor& dlogits, const Tensor& logits,
                                   const Tensor& targets, double scale) {
  const char* op = "bce_with_logits_loss_and_grad";
  detail::require_defined(op, "loss", loss);
  detail::require_defined(op, "dlogits", dlogits);
  check_bce(op, loss, dlogits, logits, targets);
  DB_DISPATCH_OP(bce_with_logits_loss_and_grad, logits.device(), logits.dtype(), loss, dlogits,
                 logits, targets, scale);
}

void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v,
               const AdamConfig& cfg, int64_t step) {
  const char* op = "adam_step";
  detail::common_device(op, params, grads, m, v);
  detail::require_float(op, "params", params);
  detail::require_like(op, "grads", grads, "params", params);
  detail::require_like(op, "m", m, "params", params);
  detail::require_like(op, "v", v, "params", params);
  DB_ASSERT(step >= 1, "{}: step counts from 1, got {}", op, step);
  DB_ASSERT(cfg.beta1 >= 0.0 && cfg.beta1 < 1.0 && cfg.beta2 >= 0.0 && cfg.beta2 < 1.0,
            "{}: betas ({}, {}) must lie in [0, 1)", op, cfg.beta1, cfg.beta2);
  DB_ASSERT(std::isfinite(cfg.lr) && cfg.eps > 0.0,
            "{}: needs a finite lr and eps > 0 (lr {}, eps {})", op, cfg.lr, cfg.eps);
  DB_DISPATCH_OP(adam_step, params.device(), params.dtype(), params, grads, m, v, cfg, step);
}

void axpy(const Tensor& y, double alpha, const Tensor& x) {
  const char* op = "axpy";
  detail::common_device(op, y, x);
  detail::require_float(op, "y", y);
  detail::require_like(op, "x", x, "y", y);
  DB_DISPATCH_OP(axpy, y.device(), y.dtype(), y, alpha, x);
}

void mul(const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* op = "mul";
  detail::common_device(op, out, a, b);
  detail::require_float(op, "a", a);
  detail::require_like(op, "b", b, "a", a);
  detail::require_like(op, "out", out, "a", a);
  DB_DISPATCH_OP(mul, a.device(), a.dtype(), out, a, b);
}

void sub(const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* op = "sub";
  detail::common_device(op, out, a, b);
  detail::require_float(op, "a", a);
  detail::require_like(op, "b", b, "a", a);
  detail::require_like(op, "out", out, "a", a);
  DB_DISPATCH_OP(sub, a.device(), a.dtype(), out, a, b);
}

void scale_rows(const Tensor& out, const Tensor& x, const Tensor& weight) {
  const char* op = "scale_rows";
  detail::common_device(op, out, x, weight);
  detail::require_float(op, "x", x);
  DB_ASSERT(x.rank() == 2, "{}: x must be [R, W], got {}", op, x.str());
  detail::require_like(op, "out", out, "x", x);
  detail::require_vector(op, "weight", weight, x.dim(0), "x", x);
  DB_DISPATCH_OP(scale_rows, x.device(), x.dtype(), out, x, weight);
}

void scale(const Tensor& x, double alpha) {
  const char* op = "scale";
  detail::common_device(op, x);
  detail::require_float(op, "x", x);
  DB_DISPATCH_OP(scale, x.device(), x.dtype(), x, alpha);
}

}  // namespace depbloom::ops
