// Dropout layer and the mean BCE loss: thin layers over the op set that fix the random
// key layout and the loss scaling.
#include "depbloom/model/dropout.h"

#include "depbloom/backend/ops.h"

namespace depbloom::model {

Dropout::Dropout(double p, uint32_t stream) : p_(p), stream_(stream) {
  DB_ASSERT(p >= 0.0 && p < 1.0, "dropout probability {} is outside [0, 1)", p);
}

RngKey Dropout::key(uint64_t seed, uint32_t epoch) const {
  // The layer stream sits above the purpose's byte, so layers never share masks.
  const uint32_t purpose = static_cast<uint32_t>(RngPurpose::dropout) + (stream_ << 8);
  return RngKey{seed, purpose, epoch};
}

void Dropout::forward(Arena& arena, DropoutContext& ctx, const Tensor& y, const Tensor& x,
                      uint64_t seed, uint32_t epoch, uint64_t first_row, bool training) const {
  if (!training || p_ == 0.0) {
    ctx.keep = Tensor{};
    if (y.raw() != x.raw()) ops::copy(y, x);
    return;
  }
  ctx.keep = arena.alloc(DType::u8, x.shape());
  ops::dropout_forward(y, ctx.keep, x, p_, key(seed, epoch), first_row);
}

void Dropout::backward(const Tensor& dx, const Tensor& dy, const DropoutContext& ctx) const {
  if (ctx.keep.raw() == nullptr) {
    if (dx.raw() != dy.raw()) ops::copy(dx, dy);
    return;
  }
  ops::dropout_backward(dx, dy, ctx.keep, p_);
}

void bce_loss_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  ops::bce_with_logits_forward(loss, logits, targets);
}

void bce_loss_backward(const Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                       double dloss) {
  DB_ASSERT(logits.numel() > 0, "bce loss over no logits");
  ops::bce_with_logits_backward(d_logits, logits, targets,
                                dloss / static_cast<double>(logits.numel()));
}

}  // namespace depbloom::model
