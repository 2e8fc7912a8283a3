// Backward contexts are plain structs of tensor views that a layer's forward fills and its
// backward reads; the caller owns them. An optional gradient output is passed as an empty
// Tensor{} (no data): wanted() tells which.
#pragma once

#include "depbloom/core/tensor.h"

namespace depbloom::model {

inline bool wanted(const Tensor& t) {
  return t.raw() != nullptr;
}

}  // namespace depbloom::model
