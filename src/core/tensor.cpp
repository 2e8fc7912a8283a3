// Tensor view helpers: names, shape printing and sub-views.
#include "depbloom/core/tensor.h"

namespace depbloom {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
  }
  return "?";
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[static_cast<size_t>(i)]);
  }
  return s + "]";
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  DB_ASSERT(rank() >= 1 && begin >= 0 && begin <= end && end <= dim(0),
            "rows({}, {}) out of range for {}", begin, end, str());
  Shape s = shape_;
  s.dims[0] = end - begin;
  auto* p =
      static_cast<char*>(data_) + static_cast<size_t>(begin * row_stride()) * dtype_size(dtype_);
  Tensor t(p, dtype_, s, device_);
  t.row_stride_ = row_stride_;
  return t;
}

Tensor Tensor::cols(int64_t begin, int64_t end) const {
  DB_ASSERT(rank() == 2 && begin >= 0 && begin <= end && end <= dim(1),
            "cols({}, {}) out of range for {} (a 2-D view)", begin, end, str());
  auto* p = static_cast<char*>(data_) + static_cast<size_t>(begin) * dtype_size(dtype_);
  Tensor t(p, dtype_, Shape(dim(0), end - begin), device_);
  t.row_stride_ = row_stride();
  return t;
}

Tensor Tensor::reshape(Shape s) const {
  DB_ASSERT(s.numel() == numel(), "cannot reshape {} to {}", str(), s.str());
  DB_ASSERT(packed(), "cannot reshape the column window {} to {}", str(), s.str());
  return Tensor(data_, dtype_, s, device_);
}

std::string Tensor::str() const {
  if (!packed())
    return fmt::format("{}{}@{} (row stride {})", dtype_name(dtype_), shape_.str(), device_.str(),
                       row_stride_);
  return fmt::format("{}{}@{}", dtype_name(dtype_), shape_.str(), device_.str());
}

}  // namespace depbloom
