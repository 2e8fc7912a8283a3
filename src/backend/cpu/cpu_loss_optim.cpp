// CPU binary cross-entropy with logits (forward as a fixed-order mean, backward, both in
// one pass) and the fused Adam/AdamW step over flat parameter buffers.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_parallel.h"

namespace depbloom::ops::cpu {
namespace {

// sigmoid without overflow for either sign of x.
template <class T>
T stable_sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

}  // namespace

namespace {

// max(x,0) - x*y + log(1 + exp(-|x|)): never exponentiates a positive number.
double bce_term(double x, double y) {
  return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
}

// The mean loss into loss [1]; with `grad`, also dlogits in the same pass.
void bce_pass(const Tensor& loss, const Tensor& dlogits, const Tensor& logits,
              const Tensor& targets, double scale, bool grad) {
  const int64_t n = logits.numel();
  visit_float(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = logits.data<T>();
    const T* py = targets.data<T>();
    T* pd = grad ? dlogits.data<T>() : nullptr;
    const T s = static_cast<T>(scale);
    const double total = fixed_order_sum(n, grad ? 50 : 30, [&](int64_t i) {
      if (grad) pd[i] = (stable_sigmoid(px[i]) - py[i]) * s;
      return bce_term(static_cast<double>(px[i]), static_cast<double>(py[i]));
    });
    *loss.data<T>() = n == 0 ? T(0) : static_cast<T>(total / static_cast<double>(n));
  });
}

}  // namespace

void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  bce_pass(loss, Tensor{}, logits, targets, 0.0, false);
}

void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                              double scale) {
  const int64_t n = logits.numel();
  visit_float(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = logits.data<T>();
    const T* py = targets.data<T>();
    T* pd = dlogits.data<T>();
    const T s = static_cast<T>(scale);
    parallel_for(n, 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) pd[i] = (stable_sigmoid(px[i]) - py[i]) * s;
    });
  });
}

void bce_with_logits_loss_and_grad(const Tensor& loss, const Tensor& dlogits, const Tensor& logits,
                                   const Tensor& targets, double scale) {
  bce_pass(loss, dlogits, logits, targets, scale, true);
}

void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v,
               const AdamConfig& cfg, int64_t step) {
  const int64_t n = params.numel();
  // Bias corrections in double: beta^step underflows gracefully for large steps.
  const double correction1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
  visit_float(params.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* DB_RESTRICT pp = params.data<T>();
    const T* DB_RESTRICT pg = grads.data<T>();
    T* DB_RESTRICT pm = m.data<T>();
    T* DB_RESTRICT pv = v.data<T>();
    const T beta1 = static_cast<T>(cfg.beta1), beta2 = static_cast<T>(cfg.beta2);
    const T step_size = static_cast<T>(cfg.lr / correction1);
    const T inv_sqrt_c2 = static_cast<T>(1.0 / std::sqrt(correction2));
    const T eps = static_cast<T>(cfg.eps);
    // L2 (Adam) adds wd * p to the gradient; decoupled decay (AdamW) shrinks p directly,
    // before the update, from the same old p.
    const T l2 = cfg.decoupled ? T(0) : static_cast<T>(cfg.weight_decay);
    const T decay = cfg.decoupled ? static_cast<T>(cfg.lr * cfg.weight_decay) : T(0);
    parallel_for(n, 10, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        const T p = pp[i];
        const T g = pg[i] + l2 * p;
        const T mi = beta1 * pm[i] + (T(1) - beta1) * g;
        const T vi = beta2 * pv[i] + (T(1) - beta2) * g * g;
        pm[i] = mi;
        pv[i] = vi;
        pp[i] = p - decay * p - step_size * mi / (std::sqrt(vi) * inv_sqrt_c2 + eps);
      }
    });
  });
}

}  // namespace depbloom::ops::cpu
