// Private helpers shared by the attention-style layers (TemporalAttentionLayer,
// ApanMemoryUpdater): shape checks that name the layer and argument, and the affine map
// y = x W^T + b and its backward written with ops::gemm / bias_add.
#pragma once

#include "depbloom/backend/ops.h"
#include "depbloom/core/error.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model::detail {

inline void expect_shape(const char* layer, const char* name, const Tensor& t, const Shape& want) {
  DB_ASSERT(t.defined() && t.shape() == want, "{}: {} is {}, expected shape {}", layer, name,
            t.str(), want.str());
}

inline void expect_float_like(const char* layer, const char* name, const Tensor& t,
                              const Tensor& ref, const Shape& want) {
  expect_shape(layer, name, t, want);
  DB_ASSERT(t.dtype() == ref.dtype() && t.device() == ref.device(),
            "{}: {} is {}, expected the dtype and device of {}", layer, name, t.str(), ref.str());
}

// y [M,N] = x [M,K] W^T + b, W [N,K], b [N].
inline void affine_forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b) {
  ops::gemm(y, x, ops::Trans::N, w, ops::Trans::T);
  ops::bias_add(y, b);
}

// dW += dy^T x, db += sum dy (accumulate); dx = dy W, or dx += dy W with accumulate_dx.
// dx may be an undefined Tensor when x needs no gradient.
inline void affine_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy,
                            const Tensor& x, const Tensor& w, bool accumulate_dx = false) {
  ops::gemm(dw, dy, ops::Trans::T, x, ops::Trans::N, 1.0, 1.0);
  ops::bias_grad(db, dy);
  if (dx.defined() && !dx.empty())
    ops::gemm(dx, dy, ops::Trans::N, w, ops::Trans::N, 1.0, accumulate_dx ? 1.0 : 0.0);
}

}  // namespace depbloom::model::detail
