// TGN's learnable time encoding, out = cos(dt * w + b), as a layer over ops::time_encode_*.
// w starts at the frequencies 1/10^linspace(0, 9, d) and b at zero (as in TGL). dt is
// data: it gets no gradient; dw and db accumulate.
#pragma once

#include <cstdint>
#include <string>

#include "depbloom/model/parameters.h"

namespace depbloom::model {

struct TimeEncoderContext {
  Tensor dt;  // [R], the caller keeps it alive until backward
};

class TimeEncoder {
 public:
  // Declares "<name>.w" [dim] and "<name>.b" [dim].
  TimeEncoder(ParameterStore& store, const std::string& name, int64_t dim);

  // out [R, dim] = cos(dt [R] * w + b).
  void forward(const Tensor& out, TimeEncoderContext& ctx, const Tensor& dt) const;
  // out [R, d + dim] = [x [R, d] || cos(dt w + b)]: a layer's input beside its encoding, in
  // one op.
  void forward_beside(const Tensor& out, TimeEncoderContext& ctx, const Tensor& x,
                      const Tensor& dt) const;
  // dw, db += from dout [R, dim].
  void backward(const Tensor& dout, const TimeEncoderContext& ctx) const;

  int64_t dim() const { return dim_; }

 private:
  const ParameterStore* store_;
  int64_t dim_;
  ParamId w_, b_;
};

}  // namespace depbloom::model
