// Internal: the entry checks shared by the dispatch layer (src/backend/ops_*.cpp) and the
// backend choice. Every failure throws depbloom::Error naming the op and the tensors
// involved; nothing here allocates unless a check fails (messages are built only then).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "backend/cpu/cpu_ops.h"
#include "depbloom/backend/op_counts.h"
#include "depbloom/backend/ops.h"
#include "depbloom/core/error.h"
#include "depbloom/core/tensor.h"

#if DEPBLOOM_WITH_CUDA
#include "backend/cuda/cuda_ops.h"
#endif

namespace depbloom::ops::detail {

inline void require_defined(const char* op, const char* name, const Tensor& t) {
  DB_ASSERT(t.defined(), "{}: {} has no data ({})", op, name, t.str());
}

// All tensors of one call live on the device of the first; returns that device.
inline Device common_device(const char* op, const Tensor& first) {
  require_defined(op, "an argument", first);
  return first.device();
}
template <class... Rest>
Device common_device(const char* op, const Tensor& first, const Tensor& second,
                     const Rest&... rest) {
  require_defined(op, "an argument", second);
  DB_ASSERT(first.device() == second.device(), "{}: tensors on different devices: {} and {}", op,
            first.str(), second.str());
  return common_device(op, first, rest...);
}

inline void require_float(const char* op, const char* name, const Tensor& t) {
  DB_ASSERT(is_floating(t.dtype()), "{}: {} must be f32 or f64, got {}", op, name, t.str());
}

inline void require_index(const char* op, const char* name, const Tensor& t) {
  DB_ASSERT(is_index(t.dtype()) && t.rank() == 1, "{}: {} must be a 1-D i32 or i64 tensor, got {}",
            op, name, t.str());
}

inline void require_mask(const char* op, const char* name, const Tensor& t) {
  DB_ASSERT(t.dtype() == DType::u8, "{}: {} must be u8, got {}", op, name, t.str());
}

inline void require_rank(const char* op, const char* name, const Tensor& t, int rank) {
  DB_ASSERT(t.rank() == rank, "{}: {} must be {}-D, got {}", op, name, rank, t.str());
}

inline void require_same_dtype(const char* op, const char* name_a, const Tensor& a,
                               const char* name_b, const Tensor& b) {
  DB_ASSERT(a.dtype() == b.dtype(), "{}: {} {} and {} {} differ in dtype", op, name_a, a.str(),
            name_b, b.str());
}

inline void require_same_shape(const char* op, const char* name_a, const Tensor& a,
                               const char* name_b, const Tensor& b) {
  DB_ASSERT(a.shape() == b.shape(), "{}: {} {} and {} {} must have the same shape", op, name_a,
            a.str(), name_b, b.str());
}

// Same dtype and shape as the reference tensor (the usual pairing of an output with its
// input, or of a gradient with its value).
inline void require_like(const char* op, const char* name, const Tensor& t, const char* ref_name,
                         const Tensor& ref) {
  require_same_dtype(op, name, t, ref_name, ref);
  require_same_shape(op, name, t, ref_name, ref);
}

// `t` must have shape `want`, derived from `ref`; the message shows both tensors.
inline void require_shape(const char* op, const char* name, const Tensor& t, const Shape& want,
                          const char* ref_name, const Tensor& ref) {
  DB_ASSERT(t.shape() == want, "{}: {} is {} but {} {} needs {}", op, name, t.str(), ref_name,
            ref.str(), want.str());
}

// A 1-D vector of n elements matching `ref` (bias, gamma, w of the time encoding, ...).
inline void require_vector(const char* op, const char* name, const Tensor& t, int64_t n,
                           const char* ref_name, const Tensor& ref) {
  require_same_dtype(op, name, t, ref_name, ref);
  require_shape(op, name, t, Shape(n), ref_name, ref);
}

// The columns that parts [R, Wi] (a 1-D part counts as [R, 1]) take of `whole` [R, ...]:
// each part on whole's device, of its dtype and with its rows (concat_cols and the like).
inline int64_t column_parts_width(const char* op, std::initializer_list<Tensor> parts,
                                  const Tensor& whole) {
  int64_t width = 0;
  for (const Tensor& part : parts) {
    common_device(op, whole, part);
    require_same_dtype(op, "a part", part, "the concatenated tensor", whole);
    DB_ASSERT((part.rank() == 1 || part.rank() == 2) && part.dim(0) == whole.dim(0),
              "{}: part {} does not match the rows of {}", op, part.str(), whole.str());
    width += part.rank() == 1 ? 1 : part.dim(1);
  }
  return width;
}

// True when the call goes to the CUDA backend. A CUDA tensor in a CPU-only build, or a
// non-f32 tensor on a GPU, is an error: there is no silent fallback to the host.
inline bool use_cuda(const char* op, Device device, DType dtype) {
  if (device.is_cpu()) return false;
#if DEPBLOOM_WITH_CUDA
  DB_ASSERT(dtype == DType::f32, "{}: CUDA ops are float32, got {} on {}", op, dtype_name(dtype),
            device.str());
  return true;
#else
  (void)dtype;
  DB_THROW(runtime, "{}: tensors on {} but DepBloom was built without CUDA", op, device.str());
#endif
}

// Column windows (Tensor::cols) go to the GEMM ops only: every other op reads and writes
// packed rows, so it is handed none (DB_DISPATCH_OP checks every tensor argument).
inline void require_packed_arg(const char* op, const Tensor& t) {
  DB_ASSERT(t.packed(), "{}: {} is a column window; only the GEMM ops take one", op, t.str());
}
inline void require_packed_arg(const char* op, std::initializer_list<Tensor> parts) {
  for (const Tensor& t : parts) require_packed_arg(op, t);
}
template <class Other>
void require_packed_arg(const char*, const Other&) {}
template <class... Args>
void require_packed(const char* op, const Args&... args) {
  (require_packed_arg(op, args), ...);
}

// Counts one call of `kind`; false when the call must not run (a dry run, OpCountOnly).
inline bool counted(backend::OpKind kind) {
  backend::count_op(kind);
  return !backend::ops_count_only();
}

}  // namespace depbloom::ops::detail

// Counts the call, then calls ops::cuda::NAME or ops::cpu::NAME with the same arguments, by
// device (neither in a dry run). DTYPE is the float dtype of the call (CUDA accepts f32 only).
// DB_DISPATCH_OP takes packed tensors only; DB_DISPATCH_WINDOWED_OP (the GEMM ops, which
// check their own) column windows too.
#define DB_DISPATCH_OP(NAME, DEVICE, DTYPE, ...)                 \
  do {                                                           \
    ::depbloom::ops::detail::require_packed(#NAME, __VA_ARGS__); \
    DB_DISPATCH_WINDOWED_OP(NAME, DEVICE, DTYPE, __VA_ARGS__);   \
  } while (0)
#if DEPBLOOM_WITH_CUDA
#define DB_DISPATCH_WINDOWED_OP(NAME, DEVICE, DTYPE, ...)                            \
  do {                                                                               \
    const bool on_gpu = ::depbloom::ops::detail::use_cuda(#NAME, (DEVICE), (DTYPE)); \
    if (!::depbloom::ops::detail::counted(::depbloom::backend::OpKind::NAME)) break; \
    if (on_gpu)                                                                      \
      ::depbloom::ops::cuda::NAME(__VA_ARGS__);                                      \
    else                                                                             \
      ::depbloom::ops::cpu::NAME(__VA_ARGS__);                                       \
  } while (0)
#else
#define DB_DISPATCH_WINDOWED_OP(NAME, DEVICE, DTYPE, ...)                            \
  do {                                                                               \
    ::depbloom::ops::detail::use_cuda(#NAME, (DEVICE), (DTYPE));                     \
    if (!::depbloom::ops::detail::counted(::depbloom::backend::OpKind::NAME)) break; \
    ::depbloom::ops::cpu::NAME(__VA_ARGS__);                                         \
  } while (0)
#endif
