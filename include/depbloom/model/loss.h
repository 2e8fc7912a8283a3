// The task loss: mean binary cross-entropy on logits, a forward/backward pair over explicit
// buffers (TGL's loss adds the positives' and the negatives' means; the trainer scales).
#pragma once

#include "depbloom/core/tensor.h"

namespace depbloom::model {

// loss [1] = mean_i BCE(logits_i, targets_i); logits, targets [n].
void bce_loss_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets);
// d_logits [n] = dloss * (sigmoid(x) - y) / n (overwrite).
void bce_loss_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                       double dloss = 1.0);
// Both in one pass (one op call), the same bits as the pair.
void bce_loss_and_grad(const Tensor& loss, const Tensor& d_logits, const Tensor& logits,
                       const Tensor& targets, double dloss);

}  // namespace depbloom::model
