// Host arrays to the device of a step arena: on the CPU a view of the host memory itself (no
// copy), on a GPU a copy into the arena, ordered on the calling thread's stream. The host
// memory must stay unchanged until the step's work that reads it has run.
#pragma once

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"

namespace depbloom {

Tensor upload(Arena& arena, const Tensor& host);

template <class T>
Tensor upload(Arena& arena, const T* host, Shape shape) {
  return upload(arena, Tensor::wrap(const_cast<T*>(host), shape));
}

}  // namespace depbloom
