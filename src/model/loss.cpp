// The task loss over ops::bce_with_logits_*.
#include "depbloom/model/loss.h"

#include "depbloom/backend/ops.h"

namespace depbloom::model {

void bce_loss_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  ops::bce_with_logits_forward(loss, logits, targets);
}

void bce_loss_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                       double dloss) {
  DB_ASSERT(logits.numel() > 0, "bce loss over no logits");
  ops::bce_with_logits_backward(d_logits, logits, targets,
                                dloss / static_cast<double>(logits.numel()));
}

void bce_loss_and_grad(const Tensor& loss, const Tensor& d_logits, const Tensor& logits,
                       const Tensor& targets, double dloss) {
  DB_ASSERT(logits.numel() > 0, "bce loss over no logits");
  ops::bce_with_logits_loss_and_grad(loss, d_logits, logits, targets,
                                     dloss / static_cast<double>(logits.numel()));
}

}  // namespace depbloom::model
