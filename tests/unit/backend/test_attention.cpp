// Op tests for masked_softmax and the multi-head neighbour attention (forward and
// backward), with invalid slots and a fully masked row, against plain double loops.
// The backward tests take y / attn from the reference so they do not depend on the forward.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

// Softmax over the valid slots of one row of k scores; all zero if none is valid.
void softmax_row(const double* s, const uint8_t* mask, int64_t K, double* y) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < K; ++j)
    if (mask[j]) mx = std::max(mx, s[j]);
  double z = 0.0;
  for (int64_t j = 0; j < K; ++j) {
    y[j] = mask[j] ? std::exp(s[j] - mx) : 0.0;
    z += y[j];
  }
  for (int64_t j = 0; j < K; ++j) y[j] = z > 0.0 ? y[j] / z : 0.0;
}

struct SoftmaxCase {
  int64_t R, K;
  DType dtype;
  std::string label() const {
    return "R" + std::to_string(R) + "_K" + std::to_string(K) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const SoftmaxCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_softmax(const SoftmaxCase& p) {
  Rand rng(1200 + static_cast<uint64_t>(p.R * 3 + p.K));
  const int64_t R = p.R, K = p.K;
  Guarded<T> x(Shape(R, K), rng.vec(R * K, -5.0, 5.0));
  auto mask = make_mask(rng, R, K);
  auto xv = x.values();
  std::vector<double> yref(static_cast<size_t>(R * K));
  for (int64_t r = 0; r < R; ++r) softmax_row(&xv[r * K], &mask[r * K], K, &yref[r * K]);
  Guarded<T> y(Shape(R, K));
  y.fill_nan();
  ops::masked_softmax_forward(y, x, mask);
  EXPECT_TRUE(all_close(y.values(), yref, elementwise_tol<T>())) << "forward";
  EXPECT_TRUE(y.guard_intact());

  Guarded<T> yin(Shape(R, K), yref);
  Guarded<T> dy(Shape(R, K), rng.vec(R * K));  // non-zero at masked slots too
  auto yv = yin.values();
  auto dyv = dy.values();
  std::vector<double> dxref(yv.size());
  for (int64_t r = 0; r < R; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < K; ++j) s += dyv[r * K + j] * yv[r * K + j];
    for (int64_t j = 0; j < K; ++j) dxref[r * K + j] = yv[r * K + j] * (dyv[r * K + j] - s);
  }
  Guarded<T> dx(Shape(R, K));
  dx.fill_nan();
  ops::masked_softmax_backward(dx, dy, yin);
  EXPECT_TRUE(all_close(dx.values(), dxref, elementwise_tol<T>())) << "backward";
  EXPECT_TRUE(dx.guard_intact());
}

class MaskedSoftmax : public testing::TestWithParam<SoftmaxCase> {};
TEST_P(MaskedSoftmax, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_softmax<float>(GetParam());
  else
    check_softmax<double>(GetParam());
}
const SoftmaxCase kSoftmaxCases[] = {
    {1, 1, DType::f32},   {7, 33, DType::f32},    {33, 7, DType::f32}, {100, 257, DType::f32},
    {257, 1, DType::f32}, {257, 100, DType::f32}, {7, 7, DType::f64},  {33, 100, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, MaskedSoftmax, testing::ValuesIn(kSoftmaxCases), CaseName());

TEST(MaskedSoftmaxRows, FullyMaskedSingleRowIsZero) {
  Guarded<float> x(Shape(1, 5), {1.0, 2.0, 3.0, 4.0, 5.0});
  Guarded<uint8_t> mask(Shape(1, 5));
  for (int j = 0; j < 5; ++j) mask[j] = 0;
  Guarded<float> y(Shape(1, 5));
  y.fill_nan();
  ops::masked_softmax_forward(y, x, mask);
  EXPECT_TRUE(all_close(y.values(), std::vector<double>(5, 0.0), Tol{0.0, 0.0}));
}

// ---- attention --------------------------------------------------------------------------

struct AttnCase {
  int64_t R, K, H, D;
  double slope;
  DType dtype;
  std::string label() const {
    return "R" + std::to_string(R) + "_K" + std::to_string(K) + "_H" + std::to_string(H) + "_D" +
           std::to_string(D) + (slope == 1.0 ? "_linear_" : "_leaky_") + dtype_label(dtype);
  }
};
void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << c.label();
}

// Inputs of one attention case, scores at least `margin` from the leaky_relu kink.
template <class T>
struct AttnInputs {
  int64_t R, K, H, D;
  double scale;
  Guarded<T> q, k, v;
  Guarded<uint8_t> mask;
  AttnInputs(Rand& rng, int64_t R_, int64_t K_, int64_t H_, int64_t D_, double margin)
      : R(R_),
        K(K_),
        H(H_),
        D(D_),
        scale(1.0 / std::sqrt(static_cast<double>(D_))),
        q(Shape(R_, H_ * D_), rng.vec(R_ * H_ * D_)),
        k(Shape(R_, K_, H_ * D_)),
        v(Shape(R_, K_, H_ * D_), rng.vec(R_ * K_ * H_ * D_)),
        mask(make_mask(rng, R_, K_)) {
    keep_scores_off_kink(rng, q.data(), k.data(), R, K, H, D, scale, margin);
  }
};

// Columns [first, first + W) of every slot of a [R, K, 2W] tensor: its key or value half.
template <class T>
std::vector<double> half_of(const Guarded<T>& kv, int64_t first, int64_t W) {
  const auto all = kv.values();
  std::vector<double> out;
  for (size_t slot = 0; slot < all.size() / static_cast<size_t>(2 * W); ++slot)
    for (int64_t c = 0; c < W; ++c) out.push_back(all[slot * 2 * W + first + c]);
  return out;
}

// Reference forward; pre [R,H,K] holds scale * <q_h, k_jh> before the leaky_relu.
template <class T>
void attention_ref(const AttnInputs<T>& in, double slope, std::vector<double>& out,
                   std::vector<double>& attn, std::vector<double>& pre) {
  const int64_t R = in.R, K = in.K, H = in.H, D = in.D, W = H * D;
  auto q = in.q.values();
  auto k = in.k.values();
  auto v = in.v.values();
  out.assign(static_cast<size_t>(R * W), 0.0);
  attn.assign(static_cast<size_t>(R * H * K), 0.0);
  pre.assign(attn.size(), 0.0);
  std::vector<double> s(static_cast<size_t>(K));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t j = 0; j < K; ++j) {
        double acc = 0.0;
        for (int64_t d = 0; d < D; ++d)
          acc += q[r * W + h * D + d] * k[(r * K + j) * W + h * D + d];
        pre[(r * H + h) * K + j] = in.scale * acc;
        s[j] = acc * in.scale > 0.0 ? acc * in.scale : slope * acc * in.scale;
      }
      double* a = &attn[(r * H + h) * K];
      softmax_row(s.data(), in.mask.data() + r * K, K, a);
      for (int64_t j = 0; j < K; ++j)
        for (int64_t d = 0; d < D; ++d)
          out[r * W + h * D + d] += a[j] * v[(r * K + j) * W + h * D + d];
    }
}

template <class T>
void check_attention(const AttnCase& p) {
  Rand rng(1300 + static_cast<uint64_t>(p.R * 7 + p.K * 3 + p.H + p.D));
  AttnInputs<T> in(rng, p.R, p.K, p.H, p.D, 1e-3);
  const int64_t R = p.R, K = p.K, H = p.H, D = p.D, W = H * D;
  std::vector<double> oref, aref, pre;
  attention_ref(in, p.slope, oref, aref, pre);
  Guarded<T> out(Shape(R, W)), attn(Shape(R, H, K));
  out.fill_nan();
  attn.fill_nan();
  const Guarded<T> kv = stack_kv(in.k, in.v, R, K, W);
  ops::attention_forward(out, attn, in.q, kv, in.mask, static_cast<int>(H), in.scale, p.slope);
  EXPECT_TRUE(norm_close(out.values(), oref, norm_tol<T>())) << "out";
  EXPECT_TRUE(all_close(attn.values(), aref, elementwise_tol<T>())) << "attn";
  if (R > 1) {  // row 0 is fully masked
    for (int64_t i = 0; i < W; ++i) EXPECT_EQ(out[i], T(0)) << "masked row out " << i;
  }
  EXPECT_TRUE(out.guard_intact());
  EXPECT_TRUE(attn.guard_intact());

  Guarded<T> ain(Shape(R, H, K), aref);
  Guarded<T> dout(Shape(R, W), rng.vec(R * W));
  auto dov = dout.values();
  auto q = in.q.values();
  auto k = in.k.values();
  auto v = in.v.values();
  std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dv(v.size(), 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < H; ++h) {
      const double* a = &aref[(r * H + h) * K];
      std::vector<double> da(static_cast<size_t>(K), 0.0);
      double dot = 0.0;
      for (int64_t j = 0; j < K; ++j) {
        for (int64_t d = 0; d < D; ++d) {
          da[j] += dov[r * W + h * D + d] * v[(r * K + j) * W + h * D + d];
          dv[(r * K + j) * W + h * D + d] = a[j] * dov[r * W + h * D + d];
        }
        dot += a[j] * da[j];
      }
      for (int64_t j = 0; j < K; ++j) {
        double ds = a[j] * (da[j] - dot);
        double dpre = ds * (pre[(r * H + h) * K + j] > 0.0 ? 1.0 : p.slope) * in.scale;
        for (int64_t d = 0; d < D; ++d) {
          dq[r * W + h * D + d] += dpre * k[(r * K + j) * W + h * D + d];
          dk[(r * K + j) * W + h * D + d] = dpre * q[r * W + h * D + d];
        }
      }
    }
  Guarded<T> gq(Shape(R, W)), gkv(Shape(R, K, 2 * W));
  gq.fill_nan();
  gkv.fill_nan();
  ops::attention_backward(gq, gkv, dout, ain, in.q, kv, in.mask, static_cast<int>(H), in.scale,
                          p.slope);
  const std::vector<double> gk = half_of(gkv, 0, W), gv = half_of(gkv, W, W);
  EXPECT_TRUE(norm_close(gq.values(), dq, norm_tol<T>())) << "dq";
  EXPECT_TRUE(norm_close(gk, dk, norm_tol<T>())) << "dk";
  EXPECT_TRUE(norm_close(gv, dv, norm_tol<T>())) << "dv";
  if (R > 1) {  // nothing flows into the fully masked row
    for (int64_t i = 0; i < W; ++i) EXPECT_EQ(gq[i], T(0)) << "masked row dq " << i;
    for (int64_t i = 0; i < 2 * K * W; ++i) EXPECT_EQ(gkv[i], T(0)) << "masked row dkv " << i;
  }
  EXPECT_TRUE(gq.guard_intact());
  EXPECT_TRUE(gkv.guard_intact());
}

class Attention : public testing::TestWithParam<AttnCase> {};
TEST_P(Attention, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_attention<float>(GetParam());
  else
    check_attention<double>(GetParam());
}
const AttnCase kAttnCases[] = {{1, 1, 1, 1, 1.0, DType::f32},    {7, 33, 2, 7, 0.2, DType::f32},
                               {33, 7, 1, 33, 1.0, DType::f32},  {100, 1, 2, 3, 0.2, DType::f32},
                               {5, 100, 2, 16, 1.0, DType::f32}, {3, 257, 1, 7, 0.2, DType::f32},
                               {7, 7, 2, 5, 0.2, DType::f64},    {4, 33, 1, 9, 1.0, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, Attention, testing::ValuesIn(kAttnCases), CaseName());

}  // namespace
}  // namespace dbtest
