// Op tests for add_blocks_relu_forward/backward (the link predictor's hidden layer): against
// plain double loops with guard elements, bit for bit against the chain of ops they replace
// (axpy per block and relu; relu's gradient, copy and axpy), and f64 finite differences.
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct BlocksCase {
  int64_t blocks, rows, cols;
  DType dtype;
  std::string label() const {
    return std::to_string(blocks) + "x" + std::to_string(rows) + "_" + std::to_string(cols) + "_" +
           dtype_label(dtype);
  }
};
void PrintTo(const BlocksCase& c, std::ostream* os) {
  *os << c.label();
}

class AddBlocksRelu : public testing::TestWithParam<BlocksCase> {};

template <class T>
void check_reference(const BlocksCase& c) {
  Rand rng(900 + static_cast<uint64_t>(c.blocks * c.rows * c.cols));
  const int64_t block = c.rows * c.cols, n = c.blocks * block;
  const Shape ys(c.blocks * c.rows, c.cols), ss(c.rows, c.cols);
  Guarded<T> y(ys, rng.vec(n, -2.0, 2.0)), src(ss, rng.vec(block, -2.0, 2.0));
  const auto y0 = y.values(), s0 = src.values();
  ops::add_blocks_relu_forward(y, src);
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const double v = static_cast<double>(static_cast<T>(y0[j] + s0[j % block]));
    want[j] = v > 0.0 ? v : 0.0;
  }
  EXPECT_TRUE(all_close(y.values(), want, elementwise_tol<T>())) << "forward";
  EXPECT_TRUE(y.guard_intact());

  // Backward from the reference output, so it does not depend on the forward op.
  Guarded<T> y_ref(ys, want), dy(ys, rng.vec(n)), dsrc(ss);
  dsrc.fill_nan();
  const auto g0 = dy.values();
  ops::add_blocks_relu_backward(dsrc, dy, y_ref);
  std::vector<double> masked(static_cast<size_t>(n)), sums(static_cast<size_t>(block), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    masked[j] = want[j] > 0.0 ? g0[j] : 0.0;
    sums[j % block] += masked[j];
  }
  EXPECT_TRUE(all_close(dy.values(), masked, elementwise_tol<T>())) << "dy";
  EXPECT_TRUE(all_close(dsrc.values(), sums, elementwise_tol<T>())) << "dsrc";
  EXPECT_TRUE(dy.guard_intact());
  EXPECT_TRUE(dsrc.guard_intact());
}

TEST_P(AddBlocksRelu, MatchesPlainLoops) {
  const BlocksCase& c = GetParam();
  if (c.dtype == DType::f32)
    check_reference<float>(c);
  else
    check_reference<double>(c);
}

// The chain the fused ops replaced: the same bits, so the swap moves no number.
template <class T>
void check_chain(const BlocksCase& c) {
  Rand rng(950);
  const int64_t block = c.rows * c.cols, n = c.blocks * block;
  const Shape ys(c.blocks * c.rows, c.cols), ss(c.rows, c.cols);
  const auto yv = rng.vec(n, -2.0, 2.0), sv = rng.vec(block, -2.0, 2.0), gv = rng.vec(n);
  Guarded<T> fused(ys, yv), chain(ys, yv), src(ss, sv);
  ops::add_blocks_relu_forward(fused, src);
  for (int64_t b = 0; b < c.blocks; ++b)
    ops::axpy(chain.view().rows(b * c.rows, (b + 1) * c.rows), 1.0, src);
  ops::act_forward(ops::Act::relu, chain, chain);
  EXPECT_TRUE(bitwise_equal(fused.values(), chain.values())) << "forward";

  Guarded<T> dy_fused(ys, gv), dy_chain(ys, gv), ds_fused(ss), ds_chain(ss);
  ops::add_blocks_relu_backward(ds_fused, dy_fused, fused);
  ops::act_backward(ops::Act::relu, dy_chain, dy_chain, fused);
  ops::copy(ds_chain, dy_chain.view().rows(0, c.rows));
  for (int64_t b = 1; b < c.blocks; ++b)
    ops::axpy(ds_chain, 1.0, dy_chain.view().rows(b * c.rows, (b + 1) * c.rows));
  EXPECT_TRUE(bitwise_equal(dy_fused.values(), dy_chain.values())) << "dy";
  EXPECT_TRUE(bitwise_equal(ds_fused.values(), ds_chain.values())) << "dsrc";
}

TEST_P(AddBlocksRelu, EqualsTheUnfusedChainBitForBit) {
  const BlocksCase& c = GetParam();
  if (c.dtype == DType::f32)
    check_chain<float>(c);
  else
    check_chain<double>(c);
}

// 2 x 300 x 100 crosses the CPU's parallel threshold; 1 block is the degenerate case.
INSTANTIATE_TEST_SUITE_P(Ops, AddBlocksRelu,
                         testing::Values(BlocksCase{1, 3, 5, DType::f32},
                                         BlocksCase{2, 7, 9, DType::f32},
                                         BlocksCase{3, 4, 6, DType::f64},
                                         BlocksCase{2, 300, 100, DType::f32},
                                         BlocksCase{4, 50, 33, DType::f64}),
                         [](const auto& info) { return info.param.label(); });

TEST(Grad, AddBlocksReluMatchesFiniteDifferences) {
  Rand rng(2020);
  const int64_t blocks = 3, rows = 2, cols = 4, block = rows * cols, n = blocks * block;
  using G = Guarded<double>;
  const Shape ys(blocks * rows, cols), ss(rows, cols);
  // |values| >= 0.05 and the sums kept off zero keep relu away from its kink.
  G x(ys, rng.vec(n, -2.0, 2.0)), src(ss, rng.vec(block, -2.0, 2.0)), y(ys), r(ys, rng.vec(n));
  for (int64_t j = 0; j < n; ++j)
    if (std::fabs(x[j] + src[j % block]) < 0.05) x[j] += 0.2;
  const auto rv = r.values();
  auto loss = [&] {
    y.set(x.values());
    ops::add_blocks_relu_forward(y, src);
    return project(y.data(), rv);
  };
  loss();
  G dx(ys, rv), dsrc(ss);
  ops::add_blocks_relu_backward(dsrc, dx, y);
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), n, loss))) << "dy";
  EXPECT_TRUE(grad_close(dsrc.values(), numeric_grad(src.data(), block, loss))) << "dsrc";
}

}  // namespace
}  // namespace dbtest
