// GPU suite, dense ops: gemm (all transposes, alpha/beta), gemm_batched, gemm_bias, bias,
// activations, the GRU and RNN cells, the time encoding and layer norm on cuda:0 equal the
// CPU ops on the same random inputs (float32, TF32 off). Every test skips without a usable GPU.
#include <gtest/gtest.h>

#include <array>
#include <tuple>

#include "gpu/gpu_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using ops::Act;
using ops::Trans;
using F = Both<float>;

class GpuDense : public GpuTest {};

TEST_F(GpuDense, GemmAllTransposes) {
  Rand rng(3000);
  const int64_t mnk[][3] = {{1, 1, 1}, {7, 33, 257}, {100, 7, 1}, {257, 100, 33}};
  for (const auto& s : mnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.75, -1.25}}) {
          const int64_t M = s[0], N = s[1], K = s[2];
          SCOPED_TRACE(testing::Message()
                       << "M " << M << " N " << N << " K " << K << " ta " << (ta == Trans::T)
                       << " tb " << (tb == Trans::T) << " beta " << beta);
          F a(ta == Trans::N ? Shape(M, K) : Shape(K, M), rng.vec(M * K));
          F b(tb == Trans::N ? Shape(K, N) : Shape(N, K), rng.vec(K * N));
          F c = beta == 0.0 ? F::nan(Shape(M, N)) : F(Shape(M, N), rng.vec(M * N));
          ops::gemm(c.cpu, a.cpu, ta, b.cpu, tb, alpha, beta);
          ops::gemm(c.gpu, a.gpu, ta, b.gpu, tb, alpha, beta);
          EXPECT_TRUE(c.matches_norm());
        }
}

TEST_F(GpuDense, GemmBatched) {
  Rand rng(3001);
  const int64_t smnk[][4] = {{1, 7, 33, 1}, {7, 1, 7, 33}, {3, 33, 100, 7}, {2, 257, 1, 7}};
  for (const auto& s : smnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        const int64_t S = s[0], M = s[1], N = s[2], K = s[3];
        SCOPED_TRACE(testing::Message() << "S " << S << " M " << M << " N " << N << " K " << K);
        F a(ta == Trans::N ? Shape(S, M, K) : Shape(S, K, M), rng.vec(S * M * K));
        F b(tb == Trans::N ? Shape(S, K, N) : Shape(S, N, K), rng.vec(S * K * N));
        F c(Shape(S, M, N), rng.vec(S * M * N));
        ops::gemm_batched(c.cpu, a.cpu, ta, b.cpu, tb, 1.5, 0.5);
        ops::gemm_batched(c.gpu, a.gpu, ta, b.gpu, tb, 1.5, 0.5);
        EXPECT_TRUE(c.matches_norm());
      }
}

TEST_F(GpuDense, GemmBias) {
  Rand rng(3003);
  const int64_t mnk[][3] = {{1, 1, 1}, {7, 33, 0}, {7, 33, 257}, {257, 100, 33}};
  for (const auto& s : mnk)
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        const int64_t M = s[0], N = s[1], K = s[2];
        SCOPED_TRACE(testing::Message() << "M " << M << " N " << N << " K " << K << " ta "
                                        << (ta == Trans::T) << " tb " << (tb == Trans::T));
        F a(ta == Trans::N ? Shape(M, K) : Shape(K, M), rng.vec(M * K));
        F b(tb == Trans::N ? Shape(K, N) : Shape(N, K), rng.vec(K * N));
        F bias(Shape(N), rng.vec(N));
        F c = F::nan(Shape(M, N));
        ops::gemm_bias(c.cpu, a.cpu, ta, b.cpu, tb, bias.cpu);
        ops::gemm_bias(c.gpu, a.gpu, ta, b.gpu, tb, bias.gpu);
        EXPECT_TRUE(c.matches_norm());
      }
}

// Column windows: a, b and c of gemm, and affine_grad's dw, as blocks of wider matrices
// (the whole matrices compared, so columns outside c's window must keep their values).
TEST_F(GpuDense, GemmColumnWindows) {
  Rand rng(3005);
  for (auto [M, N, K] : {std::array<int64_t, 3>{7, 33, 5}, {257, 100, 33}, {33, 100, 1100}}) {
    SCOPED_TRACE(testing::Message() << "M " << M << " N " << N << " K " << K);
    F a(Shape(M, K + 3), rng.vec(M * (K + 3))), b(Shape(N, K + 2), rng.vec(N * (K + 2)));
    F c(Shape(M, N + 4), rng.vec(M * (N + 4)));
    for (bool gpu : {false, true}) {
      const Tensor ta = gpu ? a.gpu.view() : a.cpu.view(), tb = gpu ? b.gpu.view() : b.cpu.view();
      const Tensor tc = gpu ? c.gpu.view() : c.cpu.view();
      ops::gemm(tc.cols(1, 1 + N), ta.cols(2, 2 + K), Trans::N, tb.cols(0, K), Trans::T, 0.5, 2.0);
    }
    EXPECT_TRUE(c.matches_norm());
    F dy(Shape(M, N), rng.vec(M * N)), db(Shape(N), rng.vec(N));
    for (bool gpu : {false, true}) {
      const Tensor tb = gpu ? b.gpu.view() : b.cpu.view(), ta = gpu ? a.gpu.view() : a.cpu.view();
      ops::affine_grad(tb.cols(1, 1 + K), gpu ? db.gpu.view() : db.cpu.view(),
                       gpu ? dy.gpu.view() : dy.cpu.view(), ta.cols(3, 3 + K));
    }
    EXPECT_TRUE(b.matches_norm());
    EXPECT_TRUE(db.matches_norm());
  }
}

TEST_F(GpuDense, AffineGrad) {
  Rand rng(3004);
  for (auto [M, N, K] : {std::array<int64_t, 3>{1, 1, 1}, {7, 33, 5}, {2049, 100, 33}}) {
    SCOPED_TRACE(testing::Message() << "M " << M << " N " << N << " K " << K);
    F dy(Shape(M, N), rng.vec(M * N)), x(Shape(M, K), rng.vec(M * K));
    F dw(Shape(N, K), rng.vec(N * K)), db(Shape(N), rng.vec(N));  // both accumulate
    ops::affine_grad(dw.cpu, db.cpu, dy.cpu, x.cpu);
    ops::affine_grad(dw.gpu, db.gpu, dy.gpu, x.gpu);
    EXPECT_TRUE(dw.matches_norm());
    EXPECT_TRUE(db.matches_norm());
  }
}

TEST_F(GpuDense, BiasAddAndGrad) {
  Rand rng(3002);
  for (auto [M, N] : {std::pair<int64_t, int64_t>{1, 1}, {7, 257}, {257, 33}, {100, 100}}) {
    SCOPED_TRACE(testing::Message() << "M " << M << " N " << N);
    F y(Shape(M, N), rng.vec(M * N)), bias(Shape(N), rng.vec(N)), db(Shape(N), rng.vec(N));
    ops::bias_add(y.cpu, bias.cpu);
    ops::bias_add(y.gpu, bias.gpu);
    EXPECT_TRUE(y.matches());
    ops::bias_grad(db.cpu, y.cpu);  // accumulates onto random values
    ops::bias_grad(db.gpu, y.gpu);
    EXPECT_TRUE(db.matches_norm());
  }
}

TEST_F(GpuDense, Activations) {
  Rand rng(3003);
  for (Act act : {Act::relu, Act::sigmoid, Act::tanh, Act::leaky_relu})
    for (Shape s : {Shape(1), Shape(7, 33), Shape(3, 7, 257)}) {
      SCOPED_TRACE(testing::Message() << "act " << static_cast<int>(act) << " " << s.str());
      const double slope = act == Act::leaky_relu ? 0.2 : 0.01;
      F x(s, rng.vec(s.numel(), -3.0, 3.0, 1e-3)), y = F::nan(s);
      F dy(s, rng.vec(s.numel())), dx = F::nan(s);
      ops::act_forward(act, y.cpu, x.cpu, slope);
      ops::act_forward(act, y.gpu, x.gpu, slope);
      EXPECT_TRUE(y.matches());
      ops::act_backward(act, dx.cpu, dy.cpu, y.cpu, slope);
      ops::act_backward(act, dx.gpu, dy.gpu, y.gpu, slope);
      EXPECT_TRUE(dx.matches());
      ops::act_forward(act, x.cpu, x.cpu, slope);  // in place
      ops::act_forward(act, x.gpu, x.gpu, slope);
      EXPECT_TRUE(x.matches());
    }
}

// The link predictor's fused hidden layer: the same additions in the same order as the CPU.
TEST_F(GpuDense, AddBlocksRelu) {
  Rand rng(3010);
  for (auto [blocks, rows, cols] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 7, 33}, {3, 600, 100}}) {
    SCOPED_TRACE(testing::Message() << blocks << " blocks of " << rows << " x " << cols);
    const Shape ys(blocks * rows, cols), ss(rows, cols);
    F y(ys, rng.vec(ys.numel(), -2.0, 2.0)), src(ss, rng.vec(ss.numel(), -2.0, 2.0));
    ops::add_blocks_relu_forward(y.cpu, src.cpu);
    ops::add_blocks_relu_forward(y.gpu, src.gpu);
    EXPECT_TRUE(y.matches_bitwise());
    F dy(ys, rng.vec(ys.numel())), dsrc = F::nan(ss);
    ops::add_blocks_relu_backward(dsrc.cpu, dy.cpu, y.cpu);
    ops::add_blocks_relu_backward(dsrc.gpu, dy.gpu, y.gpu);
    EXPECT_TRUE(dy.matches_bitwise());
    EXPECT_TRUE(dsrc.matches_bitwise());
  }
}

TEST_F(GpuDense, RnnAndGruCells) {
  Rand rng(3004);
  for (auto [B, H] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {257, 7}, {33, 100}}) {
    SCOPED_TRACE(testing::Message() << "B " << B << " H " << H);
    F gx(Shape(B, H), rng.vec(B * H, -2.0, 2.0)), gh(Shape(B, H), rng.vec(B * H, -2.0, 2.0));
    F h_new = F::nan(Shape(B, H)), dh(Shape(B, H), rng.vec(B * H)), d_pre = F::nan(Shape(B, H));
    ops::rnn_cell_forward(h_new.cpu, gx.cpu, gh.cpu);
    ops::rnn_cell_forward(h_new.gpu, gx.gpu, gh.gpu);
    EXPECT_TRUE(h_new.matches());
    ops::rnn_cell_backward(d_pre.cpu, dh.cpu, h_new.cpu);
    ops::rnn_cell_backward(d_pre.gpu, dh.gpu, h_new.gpu);
    EXPECT_TRUE(d_pre.matches());

    F x3(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0)),
        h3(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0));
    F h(Shape(B, H), rng.vec(B * H)), out = F::nan(Shape(B, H)), gates = F::nan(Shape(B, 4 * H));
    ops::gru_cell_forward(out.cpu, gates.cpu, x3.cpu, h3.cpu, h.cpu);
    ops::gru_cell_forward(out.gpu, gates.gpu, x3.gpu, h3.gpu, h.gpu);
    EXPECT_TRUE(out.matches());
    EXPECT_TRUE(gates.matches());
    F d_gx = F::nan(Shape(B, 3 * H)), d_gh = F::nan(Shape(B, 3 * H)), d_h = F::nan(Shape(B, H));
    ops::gru_cell_backward(d_gx.cpu, d_gh.cpu, d_h.cpu, dh.cpu, gates.cpu, h.cpu);
    ops::gru_cell_backward(d_gx.gpu, d_gh.gpu, d_h.gpu, dh.gpu, gates.gpu, h.gpu);
    EXPECT_TRUE(d_gx.matches());
    EXPECT_TRUE(d_gh.matches());
    EXPECT_TRUE(d_h.matches());
  }
}

TEST_F(GpuDense, TimeEncode) {
  Rand rng(3005);
  for (auto [R, D] : {std::pair<int64_t, int64_t>{1, 1}, {7, 100}, {257, 33}, {33, 257}}) {
    SCOPED_TRACE(testing::Message() << "R " << R << " D " << D);
    F dt(Shape(R), rng.vec(R, 0.0, 10.0, 0.01)), w(Shape(D), rng.vec(D)), b(Shape(D), rng.vec(D));
    F out = F::nan(Shape(R, D)), dout(Shape(R, D), rng.vec(R * D));
    F dw(Shape(D), rng.vec(D)), db(Shape(D), rng.vec(D));
    ops::time_encode_forward(out.cpu, dt.cpu, w.cpu, b.cpu);
    ops::time_encode_forward(out.gpu, dt.gpu, w.gpu, b.gpu);
    EXPECT_TRUE(out.matches());
    ops::time_encode_backward(dw.cpu, db.cpu, dout.cpu, dt.cpu, w.cpu, b.cpu);
    ops::time_encode_backward(dw.gpu, db.gpu, dout.gpu, dt.gpu, w.gpu, b.gpu);
    EXPECT_TRUE(dw.matches_norm());
    EXPECT_TRUE(db.matches_norm());
  }
}

// The fused input-and-encoding op: the parts' columns copied, the encoding as time_encode's;
// with dt = Tensor{} (zero deltas) the backward as with a tensor of zeros.
TEST_F(GpuDense, ConcatColsTimeEncode) {
  Rand rng(3011);
  for (auto [R, W, D] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {257, 100, 100}, {33, 272, 7}}) {
    SCOPED_TRACE(testing::Message() << "R " << R << " W " << W << " D " << D);
    F dt(Shape(R), rng.vec(R, 0.0, 10.0, 0.01)), w(Shape(D), rng.vec(D)), b(Shape(D), rng.vec(D));
    F x(Shape(R, W), rng.vec(R * W)), v(Shape(R), rng.vec(R));
    F out = F::nan(Shape(R, W + 1 + D)), zero_out = F::nan(Shape(R, W + D));
    ops::concat_cols_time_encode(out.cpu, {x.cpu, v.cpu}, dt.cpu, w.cpu, b.cpu);
    ops::concat_cols_time_encode(out.gpu, {x.gpu, v.gpu}, dt.gpu, w.gpu, b.gpu);
    EXPECT_TRUE(out.matches());
    ops::concat_cols_time_encode(zero_out.cpu, {x.cpu}, Tensor{}, w.cpu, b.cpu);
    ops::concat_cols_time_encode(zero_out.gpu, {x.gpu}, Tensor{}, w.gpu, b.gpu);
    EXPECT_TRUE(zero_out.matches());
    F dout(Shape(R, D), rng.vec(R * D)), dw(Shape(D), rng.vec(D)), db(Shape(D), rng.vec(D));
    ops::time_encode_backward(dw.cpu, db.cpu, dout.cpu, Tensor{}, w.cpu, b.cpu);
    ops::time_encode_backward(dw.gpu, db.gpu, dout.gpu, Tensor{}, w.gpu, b.gpu);
    EXPECT_TRUE(dw.matches_norm());
    EXPECT_TRUE(db.matches_norm());
    // dt ending early: the rest of the rows have zero deltas.
    ops::time_encode_backward(dw.cpu, db.cpu, dout.cpu, dt.cpu.view().rows(0, R / 2), w.cpu, b.cpu);
    ops::time_encode_backward(dw.gpu, db.gpu, dout.gpu, dt.gpu.view().rows(0, R / 2), w.gpu, b.gpu);
    EXPECT_TRUE(dw.matches_norm());
    EXPECT_TRUE(db.matches_norm());
  }
}

TEST_F(GpuDense, LayerNorm) {
  Rand rng(3006);
  // D = 0: empty rows still get the CPU's statistics (mean 0, rstd 1/sqrt(eps)).
  for (auto [R, D] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {257, 7}, {33, 257}, {3, 0}}) {
    SCOPED_TRACE(testing::Message() << "R " << R << " D " << D);
    F x(Shape(R, D), rng.vec(R * D, -2.0, 2.0)), gamma(Shape(D), rng.vec(D, 0.5, 1.5));
    F beta(Shape(D), rng.vec(D)), y = F::nan(Shape(R, D));
    F mean = F::nan(Shape(R)), rstd = F::nan(Shape(R));
    ops::layer_norm_forward(y.cpu, mean.cpu, rstd.cpu, x.cpu, gamma.cpu, beta.cpu, 1e-5);
    ops::layer_norm_forward(y.gpu, mean.gpu, rstd.gpu, x.gpu, gamma.gpu, beta.gpu, 1e-5);
    EXPECT_TRUE(y.matches());
    EXPECT_TRUE(mean.matches());
    EXPECT_TRUE(rstd.matches());
    F dy(Shape(R, D), rng.vec(R * D)), dx = F::nan(Shape(R, D));
    F dgamma(Shape(D), rng.vec(D)), dbeta(Shape(D), rng.vec(D));
    ops::layer_norm_backward(dx.cpu, dgamma.cpu, dbeta.cpu, dy.cpu, x.cpu, mean.cpu, rstd.cpu,
                             gamma.cpu);
    ops::layer_norm_backward(dx.gpu, dgamma.gpu, dbeta.gpu, dy.gpu, x.gpu, mean.gpu, rstd.gpu,
                             gamma.gpu);
    EXPECT_TRUE(dx.matches_norm());
    EXPECT_TRUE(dgamma.matches_norm());
    EXPECT_TRUE(dbeta.matches_norm());
  }
}

}  // namespace
}  // namespace dbtest
