// GPU suite, element-wise products and differences: ops::mul, ops::sub and ops::scale_rows (a
// weight per row) on cuda:0 against the CPU ops, out of place and in place. Skips without a
// usable GPU.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using F = Both<float>;

class GpuMul : public GpuTest {};

TEST_F(GpuMul, MatchesCpu) {
  Rand rng(4111);
  for (Shape s : {Shape(1), Shape(33, 7), Shape(257, 7), Shape(3, 7, 33)}) {
    SCOPED_TRACE(s.str());
    const int64_t n = s.numel();
    F a(s, rng.vec(n)), b(s, rng.vec(n)), out = F::nan(s);
    ops::mul(out.cpu, a.cpu, b.cpu);
    ops::mul(out.gpu, a.gpu, b.gpu);
    EXPECT_TRUE(out.matches());
    ops::mul(a.cpu, a.cpu, b.cpu);
    ops::mul(a.gpu, a.gpu, b.gpu);
    EXPECT_TRUE(a.matches());
    F diff = F::nan(s);
    ops::sub(diff.cpu, a.cpu, b.cpu);
    ops::sub(diff.gpu, a.gpu, b.gpu);
    EXPECT_TRUE(diff.matches_bitwise());
  }
}

class GpuScaleRows : public GpuTest {};

TEST_F(GpuScaleRows, MatchesCpu) {
  Rand rng(4127);
  for (Shape s : {Shape(1, 1), Shape(7, 1), Shape(33, 209), Shape(4099, 9)}) {
    SCOPED_TRACE(s.str());
    F x(s, rng.vec(s.numel())), w(Shape(s[0]), rng.vec(s[0])), out = F::nan(s);
    ops::scale_rows(out.cpu, x.cpu, w.cpu);
    ops::scale_rows(out.gpu, x.gpu, w.gpu);
    EXPECT_TRUE(out.matches());
    ops::scale_rows(x.cpu, x.cpu, w.cpu);
    ops::scale_rows(x.gpu, x.gpu, w.gpu);
    EXPECT_TRUE(x.matches());
  }
}

}  // namespace
}  // namespace dbtest
