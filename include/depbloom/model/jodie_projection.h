// JODIE's time projection h = s * (1 + dt w + b): a learnable Linear 1 -> d applied to the
// time since the node's last update. Gradients of w and b accumulate; ds overwrites; dt is
// data.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/core/arena.h"
#include "depbloom/model/parameters.h"

namespace depbloom::model {

struct JodieProjectionContext {
  Tensor memory;  // [B, d], the caller keeps it alive
  Tensor dt;      // [B]
  Tensor factor;  // [B, d] = 1 + dt w + b
};

class JodieProjection {
 public:
  // Declares "<name>.weight" [d, 1] and "<name>.bias" [d] (torch Linear(1, d) init).
  // dt should be normalised by the caller (e.g. divided by the mean inter-event time):
  // the factor is linear in it.
  JodieProjection(ParameterStore& store, const std::string& name, int64_t dim);

  // h [B, d] = memory [B, d] * (1 + dt [B] w + b).
  void forward(const Tensor& h, JodieProjectionContext& ctx, const Tensor& memory, const Tensor& dt,
               Arena& arena) const;
  // d_memory [B, d] (optional, overwrite) = dh * factor; dw += sum_b dt_b (dh * memory)_b;
  // db += sum_b (dh * memory)_b. dh [B, d].
  void backward(const Tensor& d_memory, const Tensor& dh, const JodieProjectionContext& ctx,
                Arena& arena) const;

  int64_t dim() const { return dim_; }

 private:
  const ParameterStore* store_;
  int64_t dim_;
  ParamId weight_, bias_;
};

}  // namespace depbloom::model
