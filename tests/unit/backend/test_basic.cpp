// Op tests for the basic ops fill, copy, axpy, scale, sum and sum_squares against plain
// double loops, on 1-D to 3-D shapes, float and double, with guard elements; also that the
// reductions do not depend on the OpenMP thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct BasicCase {
  Shape shape;
  DType dtype;
  std::string label() const {
    std::string s = "r" + std::to_string(shape.rank);
    for (int i = 0; i < shape.rank; ++i) s += "_" + std::to_string(shape[i]);
    return s + "_" + dtype_label(dtype);
  }
};
void PrintTo(const BasicCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_fill_copy(const BasicCase& p) {
  Rand rng(5 + static_cast<uint64_t>(p.shape.numel()));
  Guarded<T> x(p.shape, rng.vec(p.shape.numel()));
  ops::fill(x, -2.375);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x[i], T(-2.375)) << i;
  EXPECT_TRUE(x.guard_intact());

  Guarded<T> src(p.shape, rng.vec(p.shape.numel()));
  Guarded<T> dst(Shape(p.shape.numel()));  // same numel, flat shape
  dst.fill_nan();
  ops::copy(dst, src);
  EXPECT_TRUE(all_close(dst.values(), src.values(), Tol{0.0, 0.0}));
  EXPECT_TRUE(dst.guard_intact());
}

template <class T>
void check_axpy_scale(const BasicCase& p) {
  Rand rng(6 + static_cast<uint64_t>(p.shape.numel()));
  const int64_t n = p.shape.numel();
  Guarded<T> y(p.shape, rng.vec(n));
  Guarded<T> x(p.shape, rng.vec(n));
  auto ref = y.values();
  auto xv = x.values();
  for (int64_t i = 0; i < n; ++i) ref[i] += -1.75 * xv[i];
  ops::axpy(y, -1.75, x);
  EXPECT_TRUE(all_close(y.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(y.guard_intact());

  auto before = y.values();
  for (auto& v : before) v *= 0.3;
  ops::scale(y, 0.3);
  EXPECT_TRUE(all_close(y.values(), before, elementwise_tol<T>()));
  EXPECT_TRUE(y.guard_intact());
}

template <class T>
void check_sums(const BasicCase& p) {
  Rand rng(7 + static_cast<uint64_t>(p.shape.numel()));
  const int64_t n = p.shape.numel();
  Guarded<T> x(p.shape, rng.vec(n));
  Guarded<T> out(Shape(1));
  auto xv = x.values();
  double s = 0.0, sabs = 0.0, ss = 0.0;
  for (double v : xv) {
    s += v;
    sabs += std::fabs(v);
    ss += v * v;
  }
  out.fill_nan();
  ops::sum(out, x);
  // A sum's rounding error is bounded relative to sum |x| (the terms have both signs).
  EXPECT_LE(std::fabs(out[0] - s), norm_tol<T>() * sabs) << "sum " << out[0] << " ref " << s;
  EXPECT_TRUE(out.guard_intact());
  out.fill_nan();
  ops::sum_squares(out, x);
  EXPECT_TRUE(norm_close({static_cast<double>(out[0])}, {ss}, norm_tol<T>()));
  EXPECT_TRUE(out.guard_intact());
}

class Basic : public testing::TestWithParam<BasicCase> {};
TEST_P(Basic, FillAndCopy) {
  if (GetParam().dtype == DType::f32)
    check_fill_copy<float>(GetParam());
  else
    check_fill_copy<double>(GetParam());
}
TEST_P(Basic, AxpyAndScale) {
  if (GetParam().dtype == DType::f32)
    check_axpy_scale<float>(GetParam());
  else
    check_axpy_scale<double>(GetParam());
}
TEST_P(Basic, SumAndSumSquares) {
  if (GetParam().dtype == DType::f32)
    check_sums<float>(GetParam());
  else
    check_sums<double>(GetParam());
}

const BasicCase kBasicCases[] = {
    {Shape(1), DType::f32},        {Shape(7), DType::f32},      {Shape(33, 7), DType::f32},
    {Shape(100), DType::f32},      {Shape(257, 7), DType::f32}, {Shape(7, 1, 257), DType::f32},
    {Shape(3, 33, 7), DType::f32}, {Shape(1), DType::f64},      {Shape(257, 33), DType::f64},
    {Shape(100, 7), DType::f64},   {Shape(1, 1, 1), DType::f32}};
INSTANTIATE_TEST_SUITE_P(Ops, Basic, testing::ValuesIn(kBasicCases), CaseName());

// The documented "deterministic reduction order": the same bits whatever the thread count.
TEST(BasicOps, SumIsIndependentOfThreadCount) {
  Rand rng(8);
  Guarded<float> x(Shape(257, 33), rng.vec(257 * 33));
  Guarded<float> out(Shape(1));
  const int saved = omp_get_max_threads();
  std::vector<double> got;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    ops::sum(out, x);
    got.push_back(out[0]);
    ops::sum_squares(out, x);
    got.push_back(out[0]);
  }
  omp_set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal({got[0], got[1]}, {got[2], got[3]}));
  EXPECT_TRUE(bitwise_equal({got[0], got[1]}, {got[4], got[5]}));
}

TEST(BasicOps, AxpyWithZeroAlphaLeavesY) {
  Rand rng(9);
  Guarded<float> y(Shape(33), rng.vec(33));
  Guarded<float> x(Shape(33), rng.vec(33));
  auto before = y.values();
  ops::axpy(y, 0.0, x);
  EXPECT_TRUE(all_close(y.values(), before, Tol{0.0, 0.0}));
}

}  // namespace
}  // namespace dbtest
