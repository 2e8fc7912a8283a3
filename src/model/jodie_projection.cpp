// JODIE's time projection from gemm, bias and the element-wise product ops::mul.
#include "depbloom/model/jodie_projection.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"

namespace depbloom::model {

JodieProjection::JodieProjection(ParameterStore& store, const std::string& name, int64_t dim)
    : store_(&store), dim_(dim) {
  DB_ASSERT(dim > 0, "projection '{}' needs a positive dimension, got {}", name, dim);
  weight_ = store.declare(name + ".weight", Shape(dim, 1), InitScheme::uniform_fan_in, 1);
  bias_ = store.declare(name + ".bias", Shape(dim), InitScheme::uniform_fan_in, 1);
}

void JodieProjection::forward(const Tensor& h, JodieProjectionContext& ctx, const Tensor& memory,
                              const Tensor& dt, Arena& arena) const {
  const int64_t batch = memory.dim(0);
  DB_ASSERT(memory.rank() == 2 && memory.dim(1) == dim_ && dt.numel() == batch,
            "jodie projection: memory {} and dt {} do not match [B, {}] and [B]", memory.str(),
            dt.str(), dim_);
  // factor [B, d] = 1 + dt [B, 1] W^T + b
  ctx.factor = arena.alloc(memory.dtype(), Shape(batch, dim_));
  ops::fill(ctx.factor, 1.0);
  ops::gemm(ctx.factor, dt.reshape(Shape(batch, 1)), ops::Trans::N, store_->value(weight_),
            ops::Trans::T, 1.0, 1.0);
  ops::bias_add(ctx.factor, store_->value(bias_));
  ops::mul(h, memory, ctx.factor);
  ctx.memory = memory;
  ctx.dt = dt;
}

void JodieProjection::backward(const Tensor& d_memory, const Tensor& dh,
                               const JodieProjectionContext& ctx, Arena& arena) const {
  const int64_t batch = dh.dim(0);
  // d_factor [B, d] = dh * memory; dW [d, 1] += d_factor^T dt; db += column sums.
  Tensor d_factor = arena.alloc(dh.dtype(), Shape(batch, dim_));
  ops::mul(d_factor, dh, ctx.memory);
  ops::affine_grad(store_->grad(weight_), store_->grad(bias_), d_factor,
                   ctx.dt.reshape(Shape(batch, 1)));
  if (wanted(d_memory)) ops::mul(d_memory, dh, ctx.factor);
}

}  // namespace depbloom::model
