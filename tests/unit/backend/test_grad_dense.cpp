// Finite-difference gradient checks (float64, central differences, eps 1e-6, tolerance
// |analytic - numeric| <= 1e-8 + 1e-6 |numeric|, see grad_close) for gemm, gemm_batched,
// gemm_bias, bias, the activations, the GRU and RNN cells, the time encoding and layer norm,
// plus the accumulate contract of the parameter gradients. The loss is always
// L = sum(out * R).
#include <gtest/gtest.h>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using ops::Act;
using ops::Trans;
using G = Guarded<double>;

Trans flip(Trans t) {
  return t == Trans::N ? Trans::T : Trans::N;
}

class GemmGrad : public testing::TestWithParam<std::tuple<Trans, Trans, bool>> {};
TEST_P(GemmGrad, MatchesFiniteDifferences) {
  const auto [ta, tb, batched] = GetParam();
  Rand rng(2000);
  const int64_t S = batched ? 2 : 1, M = 3, N = 4, K = 5;
  const double alpha = 1.3;
  auto shape = [&](int64_t r, int64_t c) { return batched ? Shape(S, r, c) : Shape(r, c); };
  G a(ta == Trans::N ? shape(M, K) : shape(K, M), rng.vec(S * M * K));
  G b(tb == Trans::N ? shape(K, N) : shape(N, K), rng.vec(S * K * N));
  G c(shape(M, N)), r(shape(M, N), rng.vec(S * M * N));
  auto rv = r.values();
  auto mm = [&](const G& out, const G& x, Trans tx, const G& y, Trans ty) {
    if (batched)
      ops::gemm_batched(out, x, tx, y, ty, alpha, 0.0);
    else
      ops::gemm(out, x, tx, y, ty, alpha, 0.0);
  };
  auto loss = [&] {
    mm(c, a, ta, b, tb);
    return project(c.data(), rv);
  };
  // dop(a) = R op(b)^T; da is its transpose when a is stored transposed.
  G da(a.shape()), db(b.shape());
  if (ta == Trans::N)
    mm(da, r, Trans::N, b, flip(tb));
  else
    mm(da, b, tb, r, Trans::T);
  // dop(b) = op(a)^T R.
  if (tb == Trans::N)
    mm(db, a, flip(ta), r, Trans::N);
  else
    mm(db, r, Trans::T, a, ta);
  EXPECT_TRUE(grad_close(da.values(), numeric_grad(a.data(), a.numel(), loss))) << "da";
  EXPECT_TRUE(grad_close(db.values(), numeric_grad(b.data(), b.numel(), loss))) << "db";
}
INSTANTIATE_TEST_SUITE_P(Grad, GemmGrad,
                         testing::Combine(testing::Values(Trans::N, Trans::T),
                                          testing::Values(Trans::N, Trans::T), testing::Bool()));

// gemm_bias's gradients are gemm's and bias_grad's, and affine_grad's (which accumulates
// onto what dW and db held): x [3,5] W^T [5,4] + b as Linear runs it.
TEST(Grad, GemmBiasAndAffineGrad) {
  Rand rng(2002);
  G x(Shape(3, 5), rng.vec(15)), w(Shape(4, 5), rng.vec(20)), bias(Shape(4), rng.vec(4));
  G y(Shape(3, 4)), r(Shape(3, 4), rng.vec(12));
  auto rv = r.values();
  auto loss = [&] {
    ops::gemm_bias(y, x, Trans::N, w, Trans::T, bias);
    return project(y.data(), rv);
  };
  G dx(Shape(3, 5)), dw(Shape(4, 5)), db(Shape(4)), dw_acc(Shape(4, 5)), db_acc(Shape(4));
  ops::gemm(dx, r, Trans::N, w, Trans::N);  // dx = R W
  ops::gemm(dw, r, Trans::T, x, Trans::N);  // dW = R^T x
  db.fill(0.0);
  ops::bias_grad(db, r);
  dw_acc.fill(0.25);
  db_acc.fill(-0.5);
  ops::affine_grad(dw_acc, db_acc, r, x);
  auto want_w = numeric_grad(w.data(), w.numel(), loss);
  auto want_b = numeric_grad(bias.data(), bias.numel(), loss);
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), x.numel(), loss))) << "dx";
  EXPECT_TRUE(grad_close(dw.values(), want_w)) << "dW";
  EXPECT_TRUE(grad_close(db.values(), want_b)) << "db";
  for (double& v : want_w) v += 0.25;
  for (double& v : want_b) v -= 0.5;
  EXPECT_TRUE(grad_close(dw_acc.values(), want_w)) << "affine_grad dW";
  EXPECT_TRUE(grad_close(db_acc.values(), want_b)) << "affine_grad db";
}

TEST(Grad, BiasAddAndAccumulate) {
  Rand rng(2001);
  G y0(Shape(4, 3), rng.vec(12)), y(Shape(4, 3)), bias(Shape(3), rng.vec(3)),
      r(Shape(4, 3), rng.vec(12));
  auto rv = r.values();
  auto loss = [&] {
    ops::copy(y, y0);
    ops::bias_add(y, bias);
    return project(y.data(), rv);
  };
  G db(Shape(3));
  db.fill(0.0);
  ops::bias_grad(db, r);
  auto once = db.values();
  EXPECT_TRUE(grad_close(once, numeric_grad(bias.data(), 3, loss)));
  ops::bias_grad(db, r);  // parameter gradients accumulate
  for (auto& x : once) x *= 2.0;
  EXPECT_TRUE(all_close(db.values(), once, Tol{1e-14, 1e-12})) << "second call doubles";
}

class ActGrad : public testing::TestWithParam<std::tuple<Act, double>> {};
TEST_P(ActGrad, MatchesFiniteDifferences) {
  const auto [act, slope] = GetParam();
  Rand rng(2002);
  // |x| >= 0.05 keeps relu / leaky_relu away from the kink for eps = 1e-6.
  G x(Shape(3, 5), rng.vec(15, -3.0, 3.0, 0.05)), y(Shape(3, 5)), r(Shape(3, 5), rng.vec(15));
  auto rv = r.values();
  auto loss = [&] {
    ops::act_forward(act, y, x, slope);
    return project(y.data(), rv);
  };
  loss();
  G dx(Shape(3, 5));
  ops::act_backward(act, dx, r, y, slope);
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), 15, loss)));
}
INSTANTIATE_TEST_SUITE_P(Grad, ActGrad,
                         testing::Values(std::make_tuple(Act::relu, 0.01),
                                         std::make_tuple(Act::sigmoid, 0.01),
                                         std::make_tuple(Act::tanh, 0.01),
                                         std::make_tuple(Act::leaky_relu, 0.01),
                                         std::make_tuple(Act::leaky_relu, 0.2)));

TEST(Grad, GruCellInputsAndDirectPath) {
  Rand rng(2003);
  const int64_t B = 2, H = 3;
  G gx(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0)),
      gh(Shape(B, 3 * H), rng.vec(B * 3 * H, -2.0, 2.0));
  G h(Shape(B, H), rng.vec(B * H)), h_new(Shape(B, H)), gates(Shape(B, 4 * H));
  G r(Shape(B, H), rng.vec(B * H));
  auto rv = r.values();
  auto loss = [&] {
    ops::gru_cell_forward(h_new, gates, gx, gh, h);
    return project(h_new.data(), rv);
  };
  loss();
  G d_gx(Shape(B, 3 * H)), d_gh(Shape(B, 3 * H)), dh(Shape(B, H));
  ops::gru_cell_backward(d_gx, d_gh, dh, r, gates, h);
  EXPECT_TRUE(grad_close(d_gx.values(), numeric_grad(gx.data(), gx.numel(), loss))) << "d_gx";
  EXPECT_TRUE(grad_close(d_gh.values(), numeric_grad(gh.data(), gh.numel(), loss))) << "d_gh";
  // With gx and gh held fixed, h enters only through z * h: the documented direct path.
  EXPECT_TRUE(grad_close(dh.values(), numeric_grad(h.data(), h.numel(), loss))) << "dh";
}

TEST(Grad, RnnCell) {
  Rand rng(2004);
  G gx(Shape(2, 3), rng.vec(6, -2.0, 2.0)), gh(Shape(2, 3), rng.vec(6, -2.0, 2.0));
  G h_new(Shape(2, 3)), r(Shape(2, 3), rng.vec(6));
  auto rv = r.values();
  auto loss = [&] {
    ops::rnn_cell_forward(h_new, gx, gh);
    return project(h_new.data(), rv);
  };
  loss();
  G d_pre(Shape(2, 3));
  ops::rnn_cell_backward(d_pre, r, h_new);
  EXPECT_TRUE(grad_close(d_pre.values(), numeric_grad(gx.data(), 6, loss))) << "gx";
  EXPECT_TRUE(grad_close(d_pre.values(), numeric_grad(gh.data(), 6, loss))) << "gh";
}

TEST(Grad, TimeEncodeAndAccumulate) {
  Rand rng(2005);
  const int64_t R = 4, D = 3;
  G dt(Shape(R), rng.vec(R, 0.0, 5.0)), w(Shape(D), rng.vec(D)), b(Shape(D), rng.vec(D));
  G out(Shape(R, D)), r(Shape(R, D), rng.vec(R * D));
  auto rv = r.values();
  auto loss = [&] {
    ops::time_encode_forward(out, dt, w, b);
    return project(out.data(), rv);
  };
  G dw{Shape(D)}, db{Shape(D)};
  dw.fill(0.0);
  db.fill(0.0);
  ops::time_encode_backward(dw, db, r, dt, w, b);
  auto dw1 = dw.values(), db1 = db.values();
  EXPECT_TRUE(grad_close(dw1, numeric_grad(w.data(), D, loss))) << "dw";
  EXPECT_TRUE(grad_close(db1, numeric_grad(b.data(), D, loss))) << "db";
  ops::time_encode_backward(dw, db, r, dt, w, b);
  for (auto& x : dw1) x *= 2.0;
  for (auto& x : db1) x *= 2.0;
  EXPECT_TRUE(all_close(dw.values(), dw1, Tol{1e-14, 1e-12})) << "dw accumulates";
  EXPECT_TRUE(all_close(db.values(), db1, Tol{1e-14, 1e-12})) << "db accumulates";
}

TEST(Grad, LayerNormAndAccumulate) {
  Rand rng(2006);
  const int64_t R = 3, D = 5;
  G x(Shape(R, D), rng.vec(R * D, -2.0, 2.0)), gamma(Shape(D), rng.vec(D, 0.5, 1.5));
  G beta(Shape(D), rng.vec(D)), y(Shape(R, D)), mean{Shape(R)}, rstd{Shape(R)};
  G r(Shape(R, D), rng.vec(R * D));
  auto rv = r.values();
  auto loss = [&] {
    ops::layer_norm_forward(y, mean, rstd, x, gamma, beta, 1e-5);
    return project(y.data(), rv);
  };
  loss();
  G dx(Shape(R, D)), dgamma{Shape(D)}, dbeta{Shape(D)};
  dgamma.fill(0.0);
  dbeta.fill(0.0);
  ops::layer_norm_backward(dx, dgamma, dbeta, r, x, mean, rstd, gamma);
  auto dg1 = dgamma.values(), db1 = dbeta.values();
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), x.numel(), loss))) << "dx";
  EXPECT_TRUE(grad_close(dg1, numeric_grad(gamma.data(), D, loss))) << "dgamma";
  EXPECT_TRUE(grad_close(db1, numeric_grad(beta.data(), D, loss))) << "dbeta";
  loss();  // restore the saved statistics at the base point
  auto dx1 = dx.values();
  ops::layer_norm_backward(dx, dgamma, dbeta, r, x, mean, rstd, gamma);
  for (auto& v : dg1) v *= 2.0;
  for (auto& v : db1) v *= 2.0;
  EXPECT_TRUE(all_close(dgamma.values(), dg1, Tol{1e-14, 1e-12})) << "dgamma accumulates";
  EXPECT_TRUE(all_close(dbeta.values(), db1, Tol{1e-14, 1e-12})) << "dbeta accumulates";
  EXPECT_TRUE(all_close(dx.values(), dx1, Tol{1e-14, 1e-12})) << "dx overwrites";
}

}  // namespace
}  // namespace dbtest
