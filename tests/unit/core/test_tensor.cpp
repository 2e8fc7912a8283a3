// Unit tests of the core value types: DType helpers, Device, Shape and the non-owning
// Tensor view (rows, reshape, flat, row_size, str, typed access that checks the dtype).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "depbloom/core/tensor.h"

namespace depbloom {
namespace {

TEST(DType, SizesNamesAndKinds) {
  EXPECT_EQ(dtype_size(DType::f32), 4u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::i32), 4u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::u8), 1u);
  EXPECT_STREQ(dtype_name(DType::f32), "f32");
  EXPECT_STREQ(dtype_name(DType::i64), "i64");
  EXPECT_STREQ(dtype_name(DType::u8), "u8");
  EXPECT_TRUE(is_floating(DType::f64));
  EXPECT_FALSE(is_floating(DType::i32));
  EXPECT_TRUE(is_index(DType::i32));
  EXPECT_FALSE(is_index(DType::u8));
}

TEST(Device, StrAndEquality) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_EQ(Device::cuda(1), Device::cuda(1));
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  EXPECT_NE(Device::cpu(), Device::cuda(0));
  EXPECT_TRUE(Device().is_cpu());
}

TEST(Shape, RankNumelStrEquality) {
  EXPECT_EQ(Shape().rank, 0);
  EXPECT_EQ(Shape().numel(), 1);  // a scalar
  EXPECT_EQ(Shape().str(), "[]");
  Shape s(3, 4);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.numel(), 12);
  EXPECT_EQ(s.str(), "[3, 4]");
  EXPECT_EQ(Shape(7).str(), "[7]");
  EXPECT_EQ(Shape(2, 3, 5).numel(), 30);
  EXPECT_EQ(Shape(2, 3, 5).str(), "[2, 3, 5]");
  EXPECT_EQ(Shape(0, 5).numel(), 0);
  EXPECT_EQ(Shape(3, 4), Shape(3, 4));
  EXPECT_NE(Shape(3, 4), Shape(4, 3));
  EXPECT_NE(Shape(12), Shape(3, 4));
  EXPECT_NE(Shape(3, 4), Shape(3, 4, 1));
  EXPECT_EQ(Shape(5)[0], 5);
}

TEST(Tensor, WrapAndAccessors) {
  std::vector<float> buf(12);
  Tensor t = Tensor::wrap(buf.data(), Shape(3, 4));
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.raw(), buf.data());
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dim(0), 3);
  EXPECT_EQ(t.dim(1), 4);
  EXPECT_EQ(t.numel(), 12);
  EXPECT_EQ(t.bytes(), 48u);
  EXPECT_EQ(t.row_size(), 4);
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_TRUE(t.defined());
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.str(), "f32[3, 4]@cpu");
  EXPECT_EQ(t.data<float>(), buf.data());
  const std::vector<int64_t> ids(3);
  EXPECT_EQ(Tensor::wrap(ids.data(), Shape(3)).dtype(), DType::i64);  // const data wraps too
  EXPECT_EQ(Tensor(buf.data(), DType::f32, Shape(2), Device::cuda(1)).str(), "f32[2]@cuda:1");
  EXPECT_FALSE(Tensor().defined());  // a null scalar view
}

TEST(Tensor, TypedAccessChecksTheDType) {
  std::vector<float> buf(4);
  Tensor t = Tensor::wrap(buf.data(), Shape(4));
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(t.data<int32_t>(), Error);
  try {
    t.data<double>();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f64"), std::string::npos) << e.what();
  }
}

TEST(Tensor, RowsIsAViewOfARange) {
  std::vector<double> buf(15);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(i);
  Tensor t = Tensor::wrap(buf.data(), Shape(5, 3));
  Tensor r = t.rows(1, 3);
  EXPECT_EQ(r.shape(), Shape(2, 3));
  EXPECT_EQ(r.data<double>(), buf.data() + 3);
  EXPECT_EQ(r.data<double>()[0], 3.0);
  EXPECT_EQ(t.rows(5, 5).numel(), 0);  // an empty range at the end is fine
  EXPECT_EQ(t.rows(0, 5).raw(), t.raw());
  Tensor t3 = Tensor::wrap(buf.data(), Shape(5, 1, 3));
  EXPECT_EQ(t3.rows(2, 4).shape(), Shape(2, 1, 3));
  EXPECT_EQ(t3.rows(2, 4).data<double>(), buf.data() + 6);
  EXPECT_THROW(t.rows(3, 6), Error);
  EXPECT_THROW(t.rows(-1, 2), Error);
  EXPECT_THROW(t.rows(3, 2), Error);
  Tensor scalar = Tensor::wrap(buf.data(), Shape());
  EXPECT_THROW(scalar.rows(0, 1), Error);
}

// cols() views a block of columns: rows keep the matrix's stride, rows() of a window and a
// window of a window stay windows, and a window reshapes only when it is packed.
TEST(Tensor, ColsIsAColumnWindow) {
  std::vector<double> buf(20);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(i);
  Tensor t = Tensor::wrap(buf.data(), Shape(4, 5));
  EXPECT_TRUE(t.packed());
  EXPECT_EQ(t.row_stride(), 5);
  Tensor w = t.cols(1, 3);
  EXPECT_EQ(w.shape(), Shape(4, 2));
  EXPECT_EQ(w.data<double>(), buf.data() + 1);
  EXPECT_EQ(w.row_stride(), 5);
  EXPECT_FALSE(w.packed());
  EXPECT_NE(w.str().find("row stride 5"), std::string::npos) << w.str();
  Tensor r = w.rows(2, 4);  // rows 2 and 3, columns 1 and 2
  EXPECT_EQ(r.data<double>()[0], 11.0);
  EXPECT_EQ(r.data<double>()[r.row_stride() + 1], 17.0);
  Tensor ww = w.cols(1, 2);  // column 2 of t
  EXPECT_EQ(ww.data<double>()[3 * ww.row_stride()], 17.0);
  EXPECT_TRUE(t.cols(0, 5).packed());
  EXPECT_TRUE(w.rows(1, 2).packed());  // one row is packed
  EXPECT_EQ(w.rows(1, 2).reshape(Shape(2)).data<double>()[1], 7.0);
  EXPECT_THROW(w.reshape(Shape(8)), Error);
  EXPECT_THROW(t.cols(3, 6), Error);
  EXPECT_THROW(t.cols(2, 1), Error);
  EXPECT_THROW(Tensor::wrap(buf.data(), Shape(20)).cols(0, 1), Error);
}

TEST(Tensor, ReshapeAndFlat) {
  std::vector<float> buf(24);
  Tensor t = Tensor::wrap(buf.data(), Shape(2, 3, 4));
  EXPECT_EQ(t.row_size(), 12);
  Tensor r = t.reshape(Shape(6, 4));
  EXPECT_EQ(r.shape(), Shape(6, 4));
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_EQ(t.flat().shape(), Shape(24));
  EXPECT_THROW(t.reshape(Shape(5, 5)), Error);
  try {
    t.reshape(Shape(5, 5));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3, 4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[5, 5]"), std::string::npos) << e.what();
  }
}

// A batch with no rows is a valid tensor: asking for its row size must not divide by zero.
// Runs in a child process so that a crash fails this test only.
TEST(TensorDeathTest, EmptyLeadingDimensionHasARowSize) {
  std::vector<float> buf(4);
  EXPECT_EXIT(
      {
        Tensor t = Tensor::wrap(buf.data(), Shape(0, 4));
        Tensor v = Tensor::wrap(buf.data(), Shape(0));
        bool ok = t.row_size() == 4 && v.row_size() == 1 && t.rows(0, 0).numel() == 0;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace depbloom
