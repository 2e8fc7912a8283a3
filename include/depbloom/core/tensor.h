// Tensor: a non-owning, row-major view (data pointer, dtype, shape up to 3-D, device),
// packed, or a column window of a 2-D matrix (rows a row stride apart). It never allocates
// or frees; owners are Buffer/OwnedTensor (memory.h) and the step Arena (arena.h). Views
// are cheap to copy and are passed by const reference to ops; only the GEMM ops take column
// windows (the op interface rejects them elsewhere).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "depbloom/core/error.h"

namespace depbloom {

enum class DType : uint8_t { f32, f64, i32, i64, u8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::u8:
      return 1;
  }
  return 0;
}
const char* dtype_name(DType t);
constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64;
}
constexpr bool is_index(DType t) {
  return t == DType::i32 || t == DType::i64;
}

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::u8;
};

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu" or "cuda:N"
};

// Row-major shape of rank 0..3 (rank 0 is a scalar with one element).
struct Shape {
  int rank = 0;
  std::array<int64_t, 3> dims{0, 0, 0};

  Shape() = default;
  Shape(int64_t d0) : rank(1), dims{d0, 0, 0} {}  // NOLINT: implicit on purpose ({n})
  Shape(int64_t d0, int64_t d1) : rank(2), dims{d0, d1, 0} {}
  Shape(int64_t d0, int64_t d1, int64_t d2) : rank(3), dims{d0, d1, d2} {}

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[3, 4]"
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, DType dtype, Shape shape, Device device = Device::cpu())
      : data_(data), dtype_(dtype), shape_(shape), device_(device) {}

  template <class T>
  static Tensor wrap(T* data, Shape shape, Device device = Device::cpu()) {
    return Tensor(const_cast<std::remove_const_t<T>*>(data), DTypeOf<std::remove_const_t<T>>::value,
                  shape, device);
  }

  void* raw() const { return data_; }
  template <class T>
  T* data() const {
    DB_ASSERT(DTypeOf<T>::value == dtype_, "tensor holds {}, accessed as {}", dtype_name(dtype_),
              dtype_name(DTypeOf<T>::value));
    return static_cast<T*>(data_);
  }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank; }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  // The elements' bytes (a column window spans more).
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  Device device() const { return device_; }
  bool defined() const { return data_ != nullptr || numel() == 0; }
  bool empty() const { return numel() == 0; }

  // Columns of a 2-D view / elements per leading index of an N-D view.
  int64_t row_size() const {
    int64_t n = 1;  // product of the trailing dims, so [0, W] still has rows of W
    for (int i = 1; i < shape_.rank; ++i) n *= shape_[i];
    return n;
  }
  // Elements from one row of dimension 0 to the next: row_size(), or more in a column window.
  int64_t row_stride() const { return row_stride_ > 0 ? row_stride_ : row_size(); }
  // True unless this is a column window with rows apart in memory.
  bool packed() const { return row_stride_ == 0 || row_stride_ == row_size() || dim(0) <= 1; }
  // View of rows [begin, end) along dimension 0 (of a window too).
  Tensor rows(int64_t begin, int64_t end) const;
  // Columns [begin, end) of a 2-D view: a window whose rows keep this view's row stride, for
  // a GEMM to read or write one block of a wider matrix without copying it.
  Tensor cols(int64_t begin, int64_t end) const;
  // Same memory, another shape with the same element count (packed views only).
  Tensor reshape(Shape s) const;
  // 1-D view of all elements.
  Tensor flat() const { return reshape(Shape(numel())); }
  std::string str() const;  // "f32[3, 4]@cpu"

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
  Device device_;
  int64_t row_stride_ = 0;  // 0: packed
};

}  // namespace depbloom
