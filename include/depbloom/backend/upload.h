// Host arrays to the device of a step arena: on the CPU a view of the host memory itself (no
// copy; it must stay unchanged until the step's work that reads it has run), on a GPU a copy
// into the arena, ordered on the calling thread's stream. When the arena has a pinned staging
// arena (Arena::staging), the array goes there first (unless it was built there) and the
// copy is asynchronous: no host wait, and the caller may reuse its array at once; the staging
// arena's owner keeps it unchanged until the stream has passed the copy (train::StepArena).
// Without one, the copy waits for the stream (a host wait).
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
