// TGN's time encoding layer over ops::time_encode_forward/backward.
#include "depbloom/model/time_encoder.h"

#include "depbloom/backend/ops.h"

namespace depbloom::model {

TimeEncoder::TimeEncoder(ParameterStore& store, const std::string& name, int64_t dim)
    : store_(&store), dim_(dim) {
  DB_ASSERT(dim > 0, "time encoder '{}' needs a positive dimension, got {}", name, dim);
  w_ = store.declare(name + ".w", Shape(dim), InitScheme::time_frequencies);
  b_ = store.declare(name + ".b", Shape(dim), InitScheme::zeros);
}

void TimeEncoder::forward(const Tensor& out, TimeEncoderContext& ctx, const Tensor& dt) const {
  ops::time_encode_forward(out, dt, store_->value(w_), store_->value(b_));
  ctx.dt = dt;
}

void TimeEncoder::forward_beside(const Tensor& out, TimeEncoderContext& ctx, const Tensor& x,
                                 const Tensor& dt) const {
  ops::concat_cols_time_encode(out, {x}, dt, store_->value(w_), store_->value(b_));
  ctx.dt = dt;
}

void TimeEncoder::backward(const Tensor& dout, const TimeEncoderContext& ctx) const {
  ops::time_encode_backward(store_->grad(w_), store_->grad(b_), dout, ctx.dt, store_->value(w_),
                            store_->value(b_));
}

}  // namespace depbloom::model
