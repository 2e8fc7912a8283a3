// Op tests for the element-wise product ops::mul and difference ops::sub against plain double
// loops, on 1-D to 3-D shapes, float and double, with guard elements; in-place use (out
// aliasing an input), sub bit for bit against the copy-and-axpy chain it replaces, and the
// entry checks.
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "depbloom/core/error.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct MulCase {
  Shape shape;
  DType dtype;
  std::string label() const {
    std::string s = "r" + std::to_string(shape.rank);
    for (int i = 0; i < shape.rank; ++i) s += "_" + std::to_string(shape[i]);
    return s + "_" + dtype_label(dtype);
  }
};
void PrintTo(const MulCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_mul(const MulCase& p) {
  Rand rng(41 + static_cast<uint64_t>(p.shape.numel()));
  const int64_t n = p.shape.numel();
  Guarded<T> a(p.shape, rng.vec(n)), b(p.shape, rng.vec(n)), out(p.shape);
  out.fill_nan();
  std::vector<double> ref(static_cast<size_t>(n));
  const auto av = a.values(), bv = b.values();
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = av[i] * bv[i];
  ops::mul(out, a, b);
  EXPECT_TRUE(all_close(out.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(out.guard_intact());
  // In place: a *= b.
  ops::mul(a, a, b);
  EXPECT_TRUE(all_close(a.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(a.guard_intact());
}

template <class T>
void check_sub(const MulCase& p) {
  Rand rng(43 + static_cast<uint64_t>(p.shape.numel()));
  const int64_t n = p.shape.numel();
  Guarded<T> a(p.shape, rng.vec(n)), b(p.shape, rng.vec(n)), out(p.shape), chain(p.shape);
  out.fill_nan();
  std::vector<double> ref(static_cast<size_t>(n));
  const auto av = a.values(), bv = b.values();
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = av[i] - bv[i];
  ops::sub(out, a, b);
  EXPECT_TRUE(all_close(out.values(), ref, elementwise_tol<T>()));
  EXPECT_TRUE(out.guard_intact());
  ops::copy(chain.view(), a.view());
  ops::axpy(chain, -1.0, b);
  EXPECT_TRUE(bitwise_equal(out.values(), chain.values())) << "against copy and axpy";
  // In place: b = a - b.
  ops::sub(b, a, b);
  EXPECT_TRUE(bitwise_equal(b.values(), out.values()));
  EXPECT_TRUE(b.guard_intact());
}

class Mul : public testing::TestWithParam<MulCase> {};
TEST_P(Mul, MatchesReference) {
  if (GetParam().dtype == DType::f32)
    check_mul<float>(GetParam());
  else
    check_mul<double>(GetParam());
}
TEST_P(Mul, SubMatchesReferenceAndTheChain) {
  if (GetParam().dtype == DType::f32)
    check_sub<float>(GetParam());
  else
    check_sub<double>(GetParam());
}

const MulCase kMulCases[] = {
    {Shape(1), DType::f32},   {Shape(7), DType::f32},       {Shape(33, 7), DType::f32},
    {Shape(100), DType::f32}, {Shape(257, 7), DType::f32},  {Shape(3, 33, 7), DType::f32},
    {Shape(1), DType::f64},   {Shape(257, 33), DType::f64}, {Shape(1, 1, 1), DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, Mul, testing::ValuesIn(kMulCases), CaseName());

TEST(MulErrors, ShapesAndDtypesMustMatch) {
  Guarded<float> a(Shape(4)), b(Shape(5)), out(Shape(4));
  Guarded<double> wide(Shape(4));
  EXPECT_THROW(ops::mul(out, a, b), depbloom::Error);
  EXPECT_THROW(ops::mul(out, a, wide), depbloom::Error);
  EXPECT_THROW(ops::mul(wide, a, a), depbloom::Error);
  EXPECT_THROW(ops::sub(out, a, b), depbloom::Error);
  EXPECT_THROW(ops::sub(wide, a, a), depbloom::Error);
}

}  // namespace
}  // namespace dbtest
