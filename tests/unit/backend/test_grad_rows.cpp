// Finite-difference gradient checks (float64, central differences, eps 1e-6, tolerance
// |analytic - numeric| <= 1e-8 + 1e-6 |numeric|) for masked softmax, attention (q, k, v;
// heads 1 and 2; slopes 0.2 and 1), concat/split, gather/scatter, BCE and dropout.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using G = Guarded<double>;

TEST(Grad, MaskedSoftmax) {
  Rand rng(2100);
  const int64_t R = 4, K = 5;
  G x(Shape(R, K), rng.vec(R * K, -3.0, 3.0)), y(Shape(R, K)), r(Shape(R, K), rng.vec(R * K));
  auto mask = make_mask(rng, R, K);
  auto rv = r.values();
  auto loss = [&] {
    ops::masked_softmax_forward(y, x, mask);
    return project(y.data(), rv);
  };
  loss();
  G dx(Shape(R, K));
  ops::masked_softmax_backward(dx, r, y);
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), x.numel(), loss)));
}

class AttentionGrad : public testing::TestWithParam<std::tuple<int, double>> {};
TEST_P(AttentionGrad, QueryKeyValue) {
  const auto [heads, slope] = GetParam();
  Rand rng(2101 + static_cast<uint64_t>(heads));
  const int64_t R = 3, K = 4, H = heads, D = 3, W = H * D;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  G q(Shape(R, W), rng.vec(R * W)), k(Shape(R, K, W)), v(Shape(R, K, W), rng.vec(R * K * W));
  // Scores at least 0.05 from the leaky_relu kink, far beyond eps = 1e-6.
  keep_scores_off_kink(rng, q.data(), k.data(), R, K, H, D, scale, 0.05);
  auto mask = make_mask(rng, R, K);  // row 0 fully masked, row 1 one valid slot
  mask[2 * K + 0] = 1;               // row 2 with at least two valid slots
  mask[2 * K + 1] = 1;
  G kv = stack_kv(k, v, R, K, W);
  G out(Shape(R, W)), attn(Shape(R, H, K)), r(Shape(R, W), rng.vec(R * W));
  auto rv = r.values();
  auto loss = [&] {
    ops::attention_forward(out, attn, q, kv, mask, heads, scale, slope);
    return project(out.data(), rv);
  };
  loss();
  G dq(Shape(R, W)), dkv(Shape(R, K, 2 * W));
  ops::attention_backward(dq, dkv, r, attn, q, kv, mask, heads, scale, slope);
  EXPECT_TRUE(grad_close(dq.values(), numeric_grad(q.data(), q.numel(), loss))) << "dq";
  EXPECT_TRUE(grad_close(dkv.values(), numeric_grad(kv.data(), kv.numel(), loss))) << "dk, dv";
}
INSTANTIATE_TEST_SUITE_P(Grad, AttentionGrad,
                         testing::Combine(testing::Values(1, 2), testing::Values(0.2, 1.0)));

// concat and split are each other's adjoints.
TEST(Grad, ConcatAndSplit) {
  Rand rng(2102);
  const int64_t R = 3;
  G p0(Shape(R, 2), rng.vec(R * 2)), p1(Shape(R), rng.vec(R)), p2(Shape(R, 4), rng.vec(R * 4));
  G out(Shape(R, 7)), r(Shape(R, 7), rng.vec(R * 7));
  auto rv = r.values();
  auto loss = [&] {
    ops::concat_cols(out, {p0, p1, p2});
    return project(out.data(), rv);
  };
  G d0(p0.shape()), d1(p1.shape()), d2(p2.shape());
  ops::split_cols({d0, d1, d2}, r);
  EXPECT_TRUE(grad_close(d0.values(), numeric_grad(p0.data(), p0.numel(), loss))) << "part 0";
  EXPECT_TRUE(grad_close(d1.values(), numeric_grad(p1.data(), p1.numel(), loss))) << "part 1";
  EXPECT_TRUE(grad_close(d2.values(), numeric_grad(p2.data(), p2.numel(), loss))) << "part 2";

  G in(Shape(R, 7), rng.vec(R * 7)), s0(p0.shape()), s1(p1.shape()), s2(p2.shape());
  G r0(p0.shape(), rng.vec(R * 2)), r1(p1.shape(), rng.vec(R)), r2(p2.shape(), rng.vec(R * 4));
  auto split_loss = [&] {
    ops::split_cols({s0, s1, s2}, in);
    return project(s0.data(), r0.values()) + project(s1.data(), r1.values()) +
           project(s2.data(), r2.values());
  };
  G din(Shape(R, 7));
  ops::concat_cols(din, {r0, r1, r2});
  EXPECT_TRUE(grad_close(din.values(), numeric_grad(in.data(), in.numel(), split_loss)));
}

// gather and scatter_add are each other's adjoints (negative indices: zero rows / skipped).
TEST(Grad, GatherAndScatter) {
  Rand rng(2103);
  const int64_t N = 4, W = 3, n = 6;
  Guarded<int64_t> idx{Shape(n)};
  const int64_t iv[] = {2, -1, 0, 2, 3, 2};  // duplicates and padding
  for (int64_t i = 0; i < n; ++i) idx[i] = iv[i];
  G src(Shape(N, W), rng.vec(N * W)), out(Shape(n, W)), r(Shape(n, W), rng.vec(n * W));
  auto rv = r.values();
  auto gather_loss = [&] {
    ops::gather_rows(out, src, idx);
    return project(out.data(), rv);
  };
  G dsrc(Shape(N, W));
  dsrc.fill(0.0);
  ops::scatter_add_rows(dsrc, r, idx, true);
  EXPECT_TRUE(grad_close(dsrc.values(), numeric_grad(src.data(), src.numel(), gather_loss)));

  G dst0(Shape(N, W), rng.vec(N * W)), dst(Shape(N, W)), s(Shape(n, W), rng.vec(n * W));
  G rd(Shape(N, W), rng.vec(N * W));
  auto rdv = rd.values();
  auto scatter_loss = [&] {
    ops::copy(dst, dst0);
    ops::scatter_add_rows(dst, s, idx, true);
    return project(dst.data(), rdv);
  };
  G ds(Shape(n, W));
  ops::gather_rows(ds, rd, idx);
  EXPECT_TRUE(grad_close(ds.values(), numeric_grad(s.data(), s.numel(), scatter_loss)));
}

TEST(Grad, BceWithLogits) {
  Rand rng(2104);
  const int64_t n = 7;
  G x(Shape(n), rng.vec(n, -4.0, 4.0)), y{Shape(n)}, loss_t(Shape(1));
  for (int64_t i = 0; i < n; ++i) y[i] = rng.uniform(0.0, 1.0);
  auto loss = [&] {
    ops::bce_with_logits_forward(loss_t, x, y);
    return loss_t[0];
  };
  G dx{Shape(n)};
  ops::bce_with_logits_backward(dx, x, y, 1.0 / static_cast<double>(n));
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), n, loss)));
}

TEST(Grad, Dropout) {
  Rand rng(2105);
  const depbloom::RngKey key{42, static_cast<uint32_t>(depbloom::RngPurpose::dropout), 0};
  G x(Shape(5, 4), rng.vec(20)), y(Shape(5, 4)), r(Shape(5, 4), rng.vec(20));
  Guarded<uint8_t> keep(Shape(5, 4));
  auto rv = r.values();
  auto loss = [&] {
    ops::dropout_forward(y, keep, x, 0.3, key, 11);
    return project(y.data(), rv);
  };
  loss();
  G dx(Shape(5, 4));
  ops::dropout_backward(dx, r, keep, 0.3);
  EXPECT_TRUE(grad_close(dx.values(), numeric_grad(x.data(), 20, loss)));
}

}  // namespace
}  // namespace dbtest
