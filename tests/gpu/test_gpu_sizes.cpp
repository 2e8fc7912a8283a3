// GPU suite, sizes at the kernels' edges: every op with a zero size (the same calls run on the
// CPU too, here and without a GPU, so the shapes are known valid), reductions past one block of
// 1,024, grid-stride loops past the capped grid (more than 65,536 x 256 elements for 1-D
// kernels, more than 65,536 x 8 rows for row kernels) and column reductions over more than
// 65,536 columns, each against the CPU op.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using depbloom::Device;
using depbloom::DType;
using depbloom::OwnedTensor;
using F = Both<float>;

// Tensors on one device, kept alive by the pool: random f32 values (the same for the same
// seed on every device), zeros of another dtype, and reads back to the host.
class Pool {
 public:
  explicit Pool(Device d) : d_(d) {}
  Tensor f32(Shape s, uint64_t seed = 1) {
    std::vector<float> host(static_cast<size_t>(s.numel()));
    Rand rng(seed);
    for (auto& x : host) x = static_cast<float>(rng.nonzero());
    Tensor t = make(DType::f32, s);
    ops::copy(t, Tensor::wrap(host.data(), s));
    return t;
  }
  Tensor zeros(DType dtype, Shape s) {
    keep_.push_back(OwnedTensor::zeros(dtype, s, d_));
    return keep_.back().view();
  }
  std::vector<double> read(const Tensor& t) {
    std::vector<float> host(static_cast<size_t>(t.numel()));
    ops::copy(Tensor::wrap(host.data(), t.shape()), t);  // complete on return
    return std::vector<double>(host.begin(), host.end());
  }

 private:
  Tensor make(DType dtype, Shape s) {
    keep_.emplace_back(dtype, s, d_);
    return keep_.back().view();
  }
  Device d_;
  std::vector<OwnedTensor> keep_;
};

// Dense and element-wise ops with a zero size; returns the outputs that still hold values
// (GEMM with K = 0 writes beta * c, reductions of nothing write 0).
std::vector<double> dense_size_zero(Pool& p) {
  const Tensor c0 = p.f32(Shape(3, 4), 2);
  ops::gemm(p.f32(Shape(0, 4)), p.f32(Shape(0, 5)), ops::Trans::N, p.f32(Shape(5, 4)),
            ops::Trans::N);
  ops::gemm(p.f32(Shape(3, 0)), p.f32(Shape(3, 5)), ops::Trans::N, p.f32(Shape(5, 0)),
            ops::Trans::N);
  ops::gemm(c0, p.f32(Shape(3, 0)), ops::Trans::N, p.f32(Shape(0, 4)), ops::Trans::N, 1.0, 0.5);
  ops::gemm_bias(p.f32(Shape(0, 4)), p.f32(Shape(0, 5)), ops::Trans::N, p.f32(Shape(5, 4)),
                 ops::Trans::N, p.f32(Shape(4)));
  const Tensor affine_dw = p.f32(Shape(4, 5), 6), affine_db = p.f32(Shape(4), 7);
  ops::affine_grad(affine_dw, affine_db, p.f32(Shape(0, 4)), p.f32(Shape(0, 5)));  // unchanged
  ops::bias_add(p.f32(Shape(0, 4)), p.f32(Shape(4)));
  const Tensor dbias = p.f32(Shape(4), 3);
  ops::bias_grad(dbias, p.f32(Shape(0, 4)));
  ops::act_forward(ops::Act::tanh, p.f32(Shape(0)), p.f32(Shape(0)));
  ops::act_backward(ops::Act::tanh, p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(0)));
  ops::gru_cell_forward(p.f32(Shape(0, 4)), p.f32(Shape(0, 16)), p.f32(Shape(0, 12)),
                        p.f32(Shape(0, 12)), p.f32(Shape(0, 4)));
  ops::gru_cell_backward(p.f32(Shape(0, 12)), p.f32(Shape(0, 12)), p.f32(Shape(0, 4)),
                         p.f32(Shape(0, 4)), p.f32(Shape(0, 16)), p.f32(Shape(0, 4)));
  ops::rnn_cell_forward(p.f32(Shape(0, 4)), p.f32(Shape(0, 4)), p.f32(Shape(0, 4)));
  ops::rnn_cell_backward(p.f32(Shape(0, 4)), p.f32(Shape(0, 4)), p.f32(Shape(0, 4)));
  const Tensor dw = p.f32(Shape(4), 4), db = p.f32(Shape(4), 5);
  ops::time_encode_forward(p.f32(Shape(0, 4)), p.f32(Shape(0)), p.f32(Shape(4)), p.f32(Shape(4)));
  ops::time_encode_backward(dw, db, p.f32(Shape(0, 4)), p.f32(Shape(0)), p.f32(Shape(4)),
                            p.f32(Shape(4)));
  ops::dropout_forward(p.f32(Shape(0, 4)), p.zeros(DType::u8, Shape(0, 4)), p.f32(Shape(0, 4)), 0.1,
                       depbloom::RngKey{}, ops::DropoutRows(0));
  ops::dropout_backward(p.f32(Shape(0, 4)), p.f32(Shape(0, 4)), p.zeros(DType::u8, Shape(0, 4)),
                        0.1);
  const Tensor sum = p.f32(Shape(1)), squares = p.f32(Shape(1));
  ops::sum(sum, p.f32(Shape(0)));
  ops::sum_squares(squares, p.f32(Shape(0)));
  ops::fill(p.f32(Shape(0)), 1.0);
  ops::copy(p.f32(Shape(0)), p.f32(Shape(0)));
  ops::axpy(p.f32(Shape(0)), 2.0, p.f32(Shape(0)));
  ops::scale(p.f32(Shape(0)), 2.0);
  ops::mul(p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(0)));
  const Tensor params = p.f32(Shape(0));
  ops::adam_step(params, p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(0)), ops::AdamConfig{}, 1);
  std::vector<double> out;
  for (const Tensor& t : {c0, dbias, affine_dw, affine_db, dw, db, sum, squares})
    for (double v : p.read(t)) out.push_back(v);
  return out;
}

// Row ops with zero rows, slots or indices (attention and softmax with 0 slots included).
std::vector<double> rows_size_zero(Pool& p) {
  ops::masked_softmax_forward(p.f32(Shape(3, 0)), p.f32(Shape(3, 0)),
                              p.zeros(DType::u8, Shape(3, 0)));
  ops::masked_softmax_backward(p.f32(Shape(0, 4)), p.f32(Shape(0, 4)), p.f32(Shape(0, 4)));
  const Tensor att_out = p.f32(Shape(3, 8));
  ops::attention_forward(att_out, p.f32(Shape(3, 2, 0)), p.f32(Shape(3, 8)), p.f32(Shape(3, 0, 16)),
                         p.zeros(DType::u8, Shape(3, 0)), 2, 0.5, 0.2);
  ops::attention_forward(p.f32(Shape(0, 8)), p.f32(Shape(0, 2, 4)), p.f32(Shape(0, 8)),
                         p.f32(Shape(0, 4, 16)), p.zeros(DType::u8, Shape(0, 4)), 2, 0.5, 0.2);
  const Tensor dgamma = p.f32(Shape(4), 6), dbeta = p.f32(Shape(4), 7);
  ops::layer_norm_forward(p.f32(Shape(0, 4)), p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(0, 4)),
                          p.f32(Shape(4)), p.f32(Shape(4)));
  ops::layer_norm_backward(p.f32(Shape(0, 4)), dgamma, dbeta, p.f32(Shape(0, 4)),
                           p.f32(Shape(0, 4)), p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(4)));
  const Tensor table = p.f32(Shape(5, 4), 8);
  const Tensor none = p.zeros(DType::i32, Shape(0));
  ops::gather_rows(p.f32(Shape(0, 4)), table, none);
  ops::scatter_add_rows(table, p.f32(Shape(0, 4)), none, true);
  ops::scatter_add_rows(table, p.f32(Shape(0, 4)), none, false);
  ops::scatter_rows(table, p.f32(Shape(0, 4)), none);
  ops::concat_cols(p.f32(Shape(0, 5)), {p.f32(Shape(0, 2)), p.f32(Shape(0, 3))});
  ops::split_cols({p.f32(Shape(0, 2)), p.f32(Shape(0, 3))}, p.f32(Shape(0, 5)));
  ops::bce_with_logits_backward(p.f32(Shape(0)), p.f32(Shape(0)), p.f32(Shape(0)), 1.0);
  std::vector<double> out;
  for (const Tensor& t : {att_out, dgamma, dbeta, table})
    for (double v : p.read(t)) out.push_back(v);
  return out;
}

// Runs here without a GPU too: the zero-size calls are valid arguments on the CPU.
TEST(SizeZero, EveryOpAcceptsZeroSizesOnTheCpu) {
  Pool cpu(Device::cpu());
  EXPECT_FALSE(dense_size_zero(cpu).empty());
  EXPECT_FALSE(rows_size_zero(cpu).empty());
}

class GpuSizes : public GpuTest {};

TEST_F(GpuSizes, EveryOpWithZeroSizesMatchesTheCpu) {
  Pool cpu(Device::cpu()), gpu(kGpu);
  EXPECT_TRUE(all_close(dense_size_zero(gpu), dense_size_zero(cpu), elementwise_tol<float>()));
  EXPECT_TRUE(all_close(rows_size_zero(gpu), rows_size_zero(cpu), elementwise_tol<float>()));
}

// Reductions over several blocks (3,000 and 5,000 > 1,024) and the BCE mean.
TEST_F(GpuSizes, MultiBlockReductions) {
  Rand rng(3300);
  for (int64_t n : {1025, 3000, 5000}) {
    SCOPED_TRACE(n);
    F x(Shape(n), rng.vec(n)), s = F::nan(Shape(1)), q = F::nan(Shape(1));
    ops::sum(s.cpu, x.cpu), ops::sum(s.gpu, x.gpu);
    ops::sum_squares(q.cpu, x.cpu), ops::sum_squares(q.gpu, x.gpu);
    EXPECT_TRUE(s.matches_norm());
    EXPECT_TRUE(q.matches_norm());
    std::vector<double> t(static_cast<size_t>(n));
    for (auto& v : t) v = rng.coin(0.5) ? 1.0 : 0.0;
    F logits(Shape(n), rng.vec(n, -4, 4)), targets(Shape(n), t), loss = F::nan(Shape(1));
    ops::bce_with_logits_forward(loss.cpu, logits.cpu, targets.cpu);
    ops::bce_with_logits_forward(loss.gpu, logits.gpu, targets.gpu);
    EXPECT_TRUE(loss.matches_norm());
    F dy(Shape(n, 3), rng.vec(n * 3)), dbias(Shape(3), rng.vec(3));
    ops::bias_grad(dbias.cpu, dy.cpu), ops::bias_grad(dbias.gpu, dy.gpu);
    EXPECT_TRUE(dbias.matches_norm());
  }
}

// 1-D kernels over 17,000,000 > 65,536 x 256 elements: every thread loops more than once.
TEST_F(GpuSizes, GridStrideWrapAroundOneDimensional) {
  Rand rng(3301);
  const int64_t n = 17'000'000;
  F x(Shape(n), rng.vec(n)), y(Shape(n), rng.vec(n)), s = F::nan(Shape(1));
  ops::axpy(y.cpu, 0.5, x.cpu), ops::axpy(y.gpu, 0.5, x.gpu);
  EXPECT_TRUE(y.matches());
  ops::act_forward(ops::Act::sigmoid, x.cpu, x.cpu),
      ops::act_forward(ops::Act::sigmoid, x.gpu, x.gpu);
  EXPECT_TRUE(x.matches());
  ops::sum(s.cpu, x.cpu), ops::sum(s.gpu, x.gpu);
  EXPECT_TRUE(s.matches_norm());
  F rows(Shape(n / 17, 17), rng.vec(n)), bias(Shape(17), rng.vec(17));
  ops::bias_add(rows.cpu, bias.cpu), ops::bias_add(rows.gpu, bias.gpu);
  EXPECT_TRUE(rows.matches());
}

// Row kernels over 600,000 > 65,536 x 8 rows.
TEST_F(GpuSizes, GridStrideWrapAroundRows) {
  Rand rng(3302);
  const int64_t R = 600'000, W = 4, N = 1000;
  Guarded<int32_t> ih{Shape(R)};
  for (int64_t i = 0; i < R; ++i) ih[i] = static_cast<int32_t>(rng.below(N));
  Both<int32_t> idx(std::move(ih));
  F table(Shape(N, W), rng.vec(N * W)), out = F::nan(Shape(R, W));
  ops::gather_rows(out.cpu, table.cpu, idx.cpu), ops::gather_rows(out.gpu, table.gpu, idx.gpu);
  EXPECT_TRUE(out.matches_bitwise());
  ops::scatter_add_rows(table.cpu, out.cpu, idx.cpu, true);
  ops::scatter_add_rows(table.gpu, out.gpu, idx.gpu, true);
  EXPECT_TRUE(table.matches_bitwise());  // both add in source order
  Guarded<uint8_t> mh{Shape(R, W)};
  for (int64_t i = 0; i < R * W; ++i) mh[i] = rng.coin(0.8) ? 1 : 0;
  Both<uint8_t> mask(std::move(mh));
  F x(Shape(R, W), rng.vec(R * W)), y = F::nan(Shape(R, W));
  ops::masked_softmax_forward(y.cpu, x.cpu, mask.cpu);
  ops::masked_softmax_forward(y.gpu, x.gpu, mask.gpu);
  EXPECT_TRUE(y.matches());
  F g(Shape(W), rng.vec(W)), b(Shape(W), rng.vec(W)), ln = F::nan(Shape(R, W));
  F mean = F::nan(Shape(R)), rstd = F::nan(Shape(R));
  ops::layer_norm_forward(ln.cpu, mean.cpu, rstd.cpu, x.cpu, g.cpu, b.cpu);
  ops::layer_norm_forward(ln.gpu, mean.gpu, rstd.gpu, x.gpu, g.gpu, b.gpu);
  EXPECT_TRUE(ln.matches());
}

// Column reductions over 70,000 > 65,536 columns (one grid dimension's worth of blocks).
TEST_F(GpuSizes, ColumnReductionsOverManyColumns) {
  Rand rng(3303);
  const int64_t M = 5, N = 70'000;
  F dy(Shape(M, N), rng.vec(M * N)), dbias(Shape(N), rng.vec(N));
  ops::bias_grad(dbias.cpu, dy.cpu), ops::bias_grad(dbias.gpu, dy.gpu);
  EXPECT_TRUE(dbias.matches());
  F x(Shape(M, N), rng.vec(M * N)), g(Shape(N), rng.vec(N)), b(Shape(N), rng.vec(N));
  F y = F::nan(Shape(M, N)), mean = F::nan(Shape(M)), rstd = F::nan(Shape(M));
  ops::layer_norm_forward(y.cpu, mean.cpu, rstd.cpu, x.cpu, g.cpu, b.cpu);
  ops::layer_norm_forward(y.gpu, mean.gpu, rstd.gpu, x.gpu, g.gpu, b.gpu);
  F dx = F::nan(Shape(M, N)), dg(Shape(N), rng.vec(N)), dbeta(Shape(N), rng.vec(N));
  ops::layer_norm_backward(dx.cpu, dg.cpu, dbeta.cpu, dy.cpu, x.cpu, mean.cpu, rstd.cpu, g.cpu);
  ops::layer_norm_backward(dx.gpu, dg.gpu, dbeta.gpu, dy.gpu, x.gpu, mean.gpu, rstd.gpu, g.gpu);
  EXPECT_TRUE(dx.matches_norm());
  EXPECT_TRUE(dg.matches());
  EXPECT_TRUE(dbeta.matches());
}

}  // namespace
}  // namespace dbtest
