// Embedding layers without neighbours: JODIE's time projection h = s * (1 + dt w + b)
// (a learnable Linear 1 -> d applied to the time since the node's last update) and APAN's
// identity h = s. Gradients of w and b accumulate; ds overwrites; dt is data.
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
  void forward(Arena& arena, JodieProjectionContext& ctx, const Tensor& h, const Tensor& memory,
               const Tensor& dt) const;
  // d_memory [B, d] (optional, overwrite) = dh * factor; dw += sum_b dt_b (dh * memory)_b;
  // db += sum_b (dh * memory)_b. dh [B, d].
  void backward(Arena& arena, const Tensor& d_memory, const Tensor& dh,
                const JodieProjectionContext& ctx) const;

  int64_t dim() const { return dim_; }

 private:
  const ParameterStore* store_;
  int64_t dim_;
  ParamId weight_, bias_;
};

// APAN's embedding: the memory itself. h and memory [B, d]; d_memory = dh.
void identity_embedding_forward(const Tensor& h, const Tensor& memory);
void identity_embedding_backward(const Tensor& d_memory, const Tensor& dh);

}  // namespace depbloom::model
