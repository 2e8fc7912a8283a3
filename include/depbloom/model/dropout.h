// Dropout as a layer over ops::dropout_*: the mask of a row is drawn from Philox keyed by
// (seed, dropout purpose + layer stream, epoch, the row's global index), so it does not
// depend on the batch layout, the thread count or the device. Identity when not training.
#pragma once

#include <cstdint>

#include "depbloom/core/arena.h"
#include "depbloom/core/philox.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

struct DropoutContext {
  Tensor keep;  // [numel] u8; empty when the forward was the identity
};

class Dropout {
 public:
  // stream separates the layers of one model (each draws its own masks).
  Dropout(double p, uint32_t stream);

  // y = x * keep / (1 - p), same shape; row r of x has global index first_row + r.
  void forward(Arena& arena, DropoutContext& ctx, const Tensor& y, const Tensor& x, uint64_t seed,
               uint32_t epoch, uint64_t first_row, bool training) const;
  // dx = dy * keep / (1 - p) (overwrite), same shape as y.
  void backward(const Tensor& dx, const Tensor& dy, const DropoutContext& ctx) const;

  double p() const { return p_; }
  RngKey key(uint64_t seed, uint32_t epoch) const;

 private:
  double p_;
  uint32_t stream_;
};

// Mean binary cross-entropy on logits, over explicit buffers.
// loss [1] = mean_i BCE(logits_i, targets_i); logits, targets [n].
void bce_loss_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets);
// d_logits [n] = dloss * (sigmoid(x) - y) / n (overwrite).
void bce_loss_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                       double dloss = 1.0);

}  // namespace depbloom::model
