// Private helpers shared by the model's layers (TemporalAttentionLayer, ApanMemoryUpdater,
// RecurrentMemoryUpdater): shape checks that name the layer and argument, and the affine map
// y = x W^T + b and its backward written with ops::gemm_bias / gemm / bias_grad.
#pragma once

#include <array>

#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
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
  ops::gemm_bias(y, x, ops::Trans::N, w, ops::Trans::T, b);
}

// dW += dy^T x, db += sum dy (accumulate); dx = dy W, or dx += dy W with accumulate_dx.
// dx may be an undefined Tensor when x needs no gradient.
inline void affine_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy,
                            const Tensor& x, const Tensor& w, bool accumulate_dx = false) {
  ops::affine_grad(dw, db, dy, x);
  if (dx.defined() && !dx.empty())
    ops::gemm(dx, dy, ops::Trans::N, w, ops::Trans::N, 1.0, accumulate_dx ? 1.0 : 0.0);
}

// One part of a concatenated input x = [x_0 || x_1 || ...]: its width, and where its
// gradient goes (an undefined tensor when the part needs none).
struct InputPart {
  Tensor dx;
  int64_t width;
};

// W [N, sum widths]'s column blocks as column windows (no copies), for GEMMs on one part
// of a concatenated input; a gradient's windows accumulate straight into it.
template <size_t P>
std::array<Tensor, P> column_blocks(const Tensor& w, const std::array<int64_t, P>& widths) {
  std::array<Tensor, P> blocks;
  int64_t first = 0;
  for (size_t p = 0; p < P; ++p) {
    blocks[p] = w.cols(first, first + widths[p]);
    first += widths[p];
  }
  return blocks;
}

// dx_p = dy W_p (dx_p += dy W_p with accumulate) for every wanted part p, where W_p is W's
// block of columns for part p. Parts that need no gradient cost nothing: stored mails and
// edge features are most of the width (372 of the 472 columns of TGN's GRU input, 172 of
// the 372 of its keys and values), and a full dx = dy W would spend that share for nothing.
template <size_t P>
void affine_backward_parts(const std::array<InputPart, P>& parts, const Tensor& dy, const Tensor& w,
                           bool accumulate = false) {
  std::array<int64_t, P> widths;
  for (size_t p = 0; p < P; ++p) widths[p] = parts[p].width;
  const std::array<Tensor, P> blocks = column_blocks(w, widths);
  for (size_t p = 0; p < P; ++p) {
    const Tensor& dx = parts[p].dx;
    if (dx.defined() && !dx.empty())
      ops::gemm(dx, dy, ops::Trans::N, blocks[p], ops::Trans::N, 1.0, accumulate ? 1.0 : 0.0);
  }
}

}  // namespace depbloom::model::detail
