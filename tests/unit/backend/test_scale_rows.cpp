// Op test for ops::scale_rows (each row of x times its own weight; refinement's `mean`
// aggregation) against a plain double loop: shapes with 1 and odd sizes, float and double,
// guard elements after every output, in place (out aliasing x), and the entry checks.
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "depbloom/core/error.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct ScaleRowsCase {
  int64_t rows, cols;
  DType dtype;
  std::string label() const {
    return std::to_string(rows) + "x" + std::to_string(cols) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const ScaleRowsCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_scale_rows(const ScaleRowsCase& p) {
  Rand rng(97 + static_cast<uint64_t>(p.rows * 31 + p.cols));
  const Shape shape(p.rows, p.cols);
  const int64_t n = shape.numel();
  Guarded<T> x(shape, rng.vec(n)), weight(Shape(p.rows), rng.vec(p.rows)), out(shape);
  out.fill_nan();
  const auto xv = x.values(), wv = weight.values();
  std::vector<double> ref(static_cast<size_t>(n));
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t c = 0; c < p.cols; ++c)
      ref[static_cast<size_t>(r * p.cols + c)] =
          xv[static_cast<size_t>(r * p.cols + c)] * wv[static_cast<size_t>(r)];
  ops::scale_rows(out, x, weight);
  EXPECT_TRUE(all_close(out.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(out.guard_intact());
  EXPECT_TRUE(x.guard_intact());
  EXPECT_TRUE(weight.guard_intact());
  ops::scale_rows(x, x, weight);  // in place
  EXPECT_TRUE(all_close(x.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(x.guard_intact());
}

class ScaleRows : public testing::TestWithParam<ScaleRowsCase> {};
TEST_P(ScaleRows, MatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_scale_rows<float>(GetParam());
  else
    check_scale_rows<double>(GetParam());
}

const ScaleRowsCase kScaleRowsCases[] = {
    {1, 1, DType::f32},   {1, 7, DType::f32},     {7, 1, DType::f32},
    {33, 17, DType::f32}, {257, 209, DType::f32}, {4099, 9, DType::f32},
    {1, 1, DType::f64},   {13, 209, DType::f64},  {257, 33, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, ScaleRows, testing::ValuesIn(kScaleRowsCases), CaseName());

// The product gemm_batched [1,1] x [1,W] gave before this op: the same bits.
TEST(ScaleRowsTest, EqualsTheBatchedProductBitForBit) {
  Rand rng(5);
  const int64_t rows = 65, cols = 23;
  Guarded<float> x(Shape(rows, cols), rng.vec(rows * cols)), w(Shape(rows), rng.vec(rows));
  Guarded<float> fused(Shape(rows, cols)), gemm(Shape(rows, cols));
  ops::scale_rows(fused, x, w);
  ops::gemm_batched(gemm.view().reshape(Shape(rows, 1, cols)), w.view().reshape(Shape(rows, 1, 1)),
                    ops::Trans::N, x.view().reshape(Shape(rows, 1, cols)), ops::Trans::N);
  EXPECT_EQ(fused.values(), gemm.values());
}

TEST(ScaleRowsErrors, ShapesAndDtypesMustMatch) {
  Guarded<float> x(Shape(4, 3)), out(Shape(4, 3)), short_w(Shape(3)), w(Shape(4));
  Guarded<float> flat(Shape(12)), wrong_out(Shape(3, 4));
  Guarded<double> wide_w(Shape(4));
  EXPECT_THROW(ops::scale_rows(out, x, short_w), depbloom::Error);
  EXPECT_THROW(ops::scale_rows(out, x, wide_w), depbloom::Error);
  EXPECT_THROW(ops::scale_rows(wrong_out, x, w), depbloom::Error);
  EXPECT_THROW(ops::scale_rows(flat, flat, w), depbloom::Error);
}

}  // namespace
}  // namespace dbtest
