// Linear layer y = x W^T + b over gemm_bias and affine_grad (gemm without a bias).
#include "depbloom/model/linear.h"

#include "depbloom/backend/ops.h"
#include "depbloom/model/context.h"

namespace depbloom::model {

Linear::Linear(ParameterStore& store, const std::string& name, int64_t in_features,
               int64_t out_features, bool bias, InitScheme init)
    : store_(&store), in_(in_features), out_(out_features) {
  DB_ASSERT(in_features > 0 && out_features > 0, "linear '{}' needs positive sizes, got {} -> {}",
            name, in_features, out_features);
  weight_ = store.declare(name + ".weight", Shape(out_features, in_features), init, in_features);
  if (bias) bias_ = store.declare(name + ".bias", Shape(out_features), init, in_features);
}

void Linear::forward(const Tensor& y, LinearContext& ctx, const Tensor& x) const {
  if (bias_.valid())
    ops::gemm_bias(y, x, ops::Trans::N, store_->value(weight_), ops::Trans::T,
                   store_->value(bias_));
  else
    ops::gemm(y, x, ops::Trans::N, store_->value(weight_), ops::Trans::T);
  ctx.x = x;
}

void Linear::backward(const Tensor& dx, const Tensor& dy, const LinearContext& ctx) const {
  if (bias_.valid())
    ops::affine_grad(store_->grad(weight_), store_->grad(bias_), dy, ctx.x);
  else
    ops::gemm(store_->grad(weight_), dy, ops::Trans::T, ctx.x, ops::Trans::N, 1.0, 1.0);
  if (wanted(dx)) ops::gemm(dx, dy, ops::Trans::N, store_->value(weight_), ops::Trans::N);
}

}  // namespace depbloom::model
