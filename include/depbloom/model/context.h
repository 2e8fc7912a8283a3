// Backward contexts: plain structs of tensor views that a layer's forward fills and its
// backward reads. The caller owns them: on the stack, or in a host step arena
// (new_context), so a step allocates nothing from the heap. The views they hold point at
// tensors in the device's step arena or at the caller's inputs.
#pragma once

#include <new>
#include <type_traits>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

// A default-constructed T in a HOST arena, released by the arena's next reset(). T must be
// trivially destructible because the arena never runs destructors.
template <class T>
T& new_context(Arena& host_arena) {
  DB_ASSERT(host_arena.device().is_cpu(), "contexts live in host memory, not in an arena on {}",
            host_arena.device().str());
  static_assert(std::is_trivially_destructible_v<T>, "contexts must be trivially destructible");
  static_assert(alignof(T) <= 256, "the arena aligns to 256 bytes");
  return *new (host_arena.alloc_bytes(sizeof(T))) T();
}

// An optional gradient output is passed as an empty Tensor{} (no data).
inline bool wanted(const Tensor& t) {
  return t.raw() != nullptr;
}

}  // namespace depbloom::model
