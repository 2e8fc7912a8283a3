// Linear layer y = x W^T + b (torch.nn.Linear's layout: W [out, in]), a forward/backward
// pair over explicit buffers, outputs first. Weight and bias gradients accumulate into the
// store; dx overwrites.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/core/arena.h"
#include "depbloom/model/parameters.h"

namespace depbloom::model {

struct LinearContext {
  Tensor x;  // [B, in], the caller keeps it alive until backward
};

class Linear {
 public:
  // Declares "<name>.weight" [out, in] and, with bias, "<name>.bias" [out], both drawn by
  // `init` (torch's U(+-1/sqrt(in)) by default; zeros for a residual branch that starts off).
  Linear(ParameterStore& store, const std::string& name, int64_t in_features, int64_t out_features,
         bool bias = true, InitScheme init = InitScheme::uniform_fan_in);

  // y [B, out] = x [B, in] W^T + b.
  void forward(const Tensor& y, LinearContext& ctx, const Tensor& x) const;
  // dx [B, in] (optional, overwrite) = dy W; dW += dy^T x; db += sum_rows dy.
  // dy [B, out].
  void backward(const Tensor& dx, const Tensor& dy, const LinearContext& ctx) const;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  ParamId weight() const { return weight_; }
  ParamId bias() const { return bias_; }

 private:
  const ParameterStore* store_;
  int64_t in_, out_;
  ParamId weight_, bias_;
};

}  // namespace depbloom::model
