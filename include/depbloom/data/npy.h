// NumPy .npy arrays: header parsing and checking (format 1.0 and 2.0), a memory-mapped
// reader with converting copies, and a writer. Only little-endian, C-order arrays of
// <f4 <f8 <i4 <i8 |u1 |i1: anything else is an error naming the file, never a guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "depbloom/data/mapped_file.h"

namespace depbloom::data {

enum class NpyDtype { f4, f8, i4, i8, u1, i1 };

const char* npy_descr(NpyDtype dtype);  // "<f4", "|u1", ...
size_t npy_item_size(NpyDtype dtype);

struct NpyHeader {
  NpyDtype dtype = NpyDtype::f4;
  std::vector<int64_t> shape;  // empty for a 0-d array
  size_t data_offset = 0;      // bytes from the start of the file to the first element
  int64_t count = 1;           // product of shape (overflow-checked)

  size_t data_bytes() const { return static_cast<size_t>(count) * npy_item_size(dtype); }
};

// Parses and checks the header of a whole .npy file held in `bytes`; also checks that the
// file holds exactly the data the header announces. `name` appears in error messages.
NpyHeader parse_npy_header(const char* bytes, size_t size, const std::string& name);

// The bytes of a version 1.0 header (version 2.0 when the dict needs it) for an array,
// padded so that the data starts at a multiple of 64 bytes, as NumPy writes it.
std::string npy_header_bytes(NpyDtype dtype, const std::vector<int64_t>& shape);

// A checked .npy array over a mapped file (open) or over bytes owned by the caller (view).
class NpyArray {
 public:
  static NpyArray open(const std::string& path, int dir_fd = -1);
  static NpyArray view(const char* bytes, size_t size, const std::string& name);

  const NpyHeader& header() const { return header_; }
  NpyDtype dtype() const { return header_.dtype; }
  const std::vector<int64_t>& shape() const { return header_.shape; }
  int64_t count() const { return header_.count; }
  int64_t rows() const { return header_.shape.empty() ? 1 : header_.shape[0]; }
  // Elements per row: product of the trailing dimensions (1 for a 1-d array).
  int64_t row_width() const;
  const std::string& name() const { return name_; }
  const char* data() const { return bytes_ + header_.data_offset; }

  // Throws a data error unless the array has `ndim` dimensions.
  void expect_ndim(size_t ndim, const char* what) const;

  // Element-converting copies. Floats accept <f4/<f8; integers accept any integer dtype
  // and check that every value fits the target type.
  std::vector<float> to_float32() const;
  std::vector<double> to_float64() const;
  std::vector<int32_t> to_int32() const;
  std::vector<int64_t> to_int64() const;
  std::vector<int8_t> to_int8() const;

 private:
  MappedFile file_;
  const char* bytes_ = nullptr;
  NpyHeader header_;
  std::string name_;
};

// Writes a C-order array of `count(shape)` elements at `data` to `path` (truncating it).
void write_npy(const std::string& path, NpyDtype dtype, const std::vector<int64_t>& shape,
               const void* data);

}  // namespace depbloom::data
