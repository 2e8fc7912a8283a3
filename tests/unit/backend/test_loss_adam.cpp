// Op tests for bce_with_logits (forward mean loss and backward, hard and soft targets,
// |x| up to 1e4 without overflow; both in one pass, bit for bit) and adam_step (plain, L2 and
// decoupled weight decay, three steps) against plain double loops with guard elements.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;

struct BceCase {
  int64_t n;
  bool soft;     // targets in [0,1] instead of {0,1}
  bool extreme;  // some logits of magnitude 30 to 1e4
  DType dtype;
  std::string label() const {
    return "n" + std::to_string(n) + (soft ? "_soft" : "_hard") + (extreme ? "_extreme_" : "_") +
           dtype_label(dtype);
  }
};
void PrintTo(const BceCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_bce(const BceCase& c) {
  Rand rng(1600 + static_cast<uint64_t>(c.n) + (c.soft ? 1 : 0));
  std::vector<double> xs = rng.vec(c.n, -8.0, 8.0);
  if (c.extreme) {
    const double big[] = {1e4, -1e4, 100.0, -100.0, 30.0, -30.0, 89.0, -89.0};
    for (int64_t i = 0; i < c.n; i += 3) xs[i] = big[(i / 3) % 8];
  }
  std::vector<double> ys(static_cast<size_t>(c.n));
  for (auto& y : ys) y = c.soft ? rng.uniform(0.0, 1.0) : (rng.coin(0.5) ? 1.0 : 0.0);
  Guarded<T> x(Shape(c.n), xs), y(Shape(c.n), ys);
  auto xv = x.values();
  auto yv = y.values();
  double loss_ref = 0.0;
  for (int64_t i = 0; i < c.n; ++i)
    loss_ref += std::max(xv[i], 0.0) - xv[i] * yv[i] + std::log1p(std::exp(-std::fabs(xv[i])));
  loss_ref /= static_cast<double>(c.n);
  Guarded<T> loss(Shape(1));
  loss.fill_nan();
  ops::bce_with_logits_forward(loss, x, y);
  EXPECT_TRUE(std::isfinite(static_cast<double>(loss[0])));
  EXPECT_TRUE(norm_close({static_cast<double>(loss[0])}, {loss_ref}, norm_tol<T>()))
      << "loss " << loss[0] << " ref " << loss_ref;
  EXPECT_TRUE(loss.guard_intact());

  const double scale = 2.5 / static_cast<double>(c.n);
  std::vector<double> dref(static_cast<size_t>(c.n));
  for (int64_t i = 0; i < c.n; ++i) {
    double s =
        xv[i] >= 0 ? 1.0 / (1.0 + std::exp(-xv[i])) : std::exp(xv[i]) / (1.0 + std::exp(xv[i]));
    dref[i] = (s - yv[i]) * scale;
  }
  Guarded<T> dx(Shape(c.n));
  dx.fill_nan();
  ops::bce_with_logits_backward(dx, x, y, scale);
  EXPECT_TRUE(all_close(dx.values(), dref, elementwise_tol<T>()));
  EXPECT_TRUE(dx.guard_intact());

  // Both in one pass: the same bits as the two ops.
  Guarded<T> fused_loss(Shape(1)), fused_dx(Shape(c.n));
  fused_loss.fill_nan();
  fused_dx.fill_nan();
  ops::bce_with_logits_loss_and_grad(fused_loss, fused_dx, x, y, scale);
  EXPECT_TRUE(bitwise_equal(fused_loss.values(), loss.values())) << "fused loss";
  EXPECT_TRUE(bitwise_equal(fused_dx.values(), dx.values())) << "fused gradient";
  EXPECT_TRUE(fused_loss.guard_intact());
  EXPECT_TRUE(fused_dx.guard_intact());
}

class BceWithLogits : public testing::TestWithParam<BceCase> {};
TEST_P(BceWithLogits, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_bce<float>(GetParam());
  else
    check_bce<double>(GetParam());
}
const BceCase kBceCases[] = {
    {1, false, false, DType::f32}, {7, true, false, DType::f32},    {33, false, true, DType::f32},
    {100, true, true, DType::f32}, {257, false, false, DType::f32}, {257, true, true, DType::f32},
    {1, true, true, DType::f32},   {33, true, true, DType::f64},    {257, false, true, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, BceWithLogits, testing::ValuesIn(kBceCases), CaseName());

// ---- Adam -------------------------------------------------------------------------------

enum class Decay { none, l2, decoupled };

struct AdamCase {
  int64_t P;
  Decay decay;
  DType dtype;
  std::string label() const {
    const char* d = decay == Decay::none ? "plain" : decay == Decay::l2 ? "l2" : "decoupled";
    return "P" + std::to_string(P) + "_" + d + "_" + dtype_label(dtype);
  }
};
void PrintTo(const AdamCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_adam(const AdamCase& c) {
  Rand rng(1700 + static_cast<uint64_t>(c.P) + static_cast<uint64_t>(c.decay));
  ops::AdamConfig cfg;
  cfg.lr = 1e-2;
  cfg.beta1 = 0.8;
  cfg.beta2 = 0.95;
  cfg.eps = 1e-6;
  cfg.weight_decay = c.decay == Decay::none ? 0.0 : 0.1;
  cfg.decoupled = c.decay == Decay::decoupled;
  Guarded<T> p(Shape(c.P), rng.vec(c.P)), g(Shape(c.P)), m(Shape(c.P)), v(Shape(c.P));
  m.fill(0.0);
  v.fill(0.0);
  auto pr = p.values();
  std::vector<double> mr(pr.size(), 0.0), vr(pr.size(), 0.0);
  for (int64_t step = 1; step <= 3; ++step) {
    g.set(rng.vec(c.P));  // fresh gradients each step
    auto gv = g.values();
    const double bc1 = 1.0 - std::pow(cfg.beta1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(cfg.beta2, static_cast<double>(step));
    for (size_t i = 0; i < pr.size(); ++i) {
      double grad = gv[i];
      if (c.decay == Decay::l2) grad += cfg.weight_decay * pr[i];
      if (c.decay == Decay::decoupled) pr[i] -= cfg.lr * cfg.weight_decay * pr[i];
      mr[i] = cfg.beta1 * mr[i] + (1.0 - cfg.beta1) * grad;
      vr[i] = cfg.beta2 * vr[i] + (1.0 - cfg.beta2) * grad * grad;
      pr[i] -= cfg.lr * (mr[i] / bc1) / (std::sqrt(vr[i] / bc2) + cfg.eps);
    }
    ops::adam_step(p, g, m, v, cfg, step);
    EXPECT_TRUE(all_close(p.values(), pr, elementwise_tol<T>())) << "params, step " << step;
    EXPECT_TRUE(all_close(m.values(), mr, elementwise_tol<T>())) << "m, step " << step;
    EXPECT_TRUE(all_close(v.values(), vr, elementwise_tol<T>())) << "v, step " << step;
  }
  EXPECT_TRUE(p.guard_intact());
  EXPECT_TRUE(m.guard_intact());
  EXPECT_TRUE(v.guard_intact());
  EXPECT_TRUE(g.guard_intact());
}

class AdamStep : public testing::TestWithParam<AdamCase> {};
TEST_P(AdamStep, ThreeStepsMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_adam<float>(GetParam());
  else
    check_adam<double>(GetParam());
}
const AdamCase kAdamCases[] = {
    {1, Decay::none, DType::f32},        {7, Decay::l2, DType::f32},
    {100, Decay::decoupled, DType::f32}, {257, Decay::none, DType::f32},
    {257, Decay::l2, DType::f32},        {33, Decay::decoupled, DType::f32},
    {257, Decay::decoupled, DType::f64}, {100, Decay::l2, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, AdamStep, testing::ValuesIn(kAdamCases), CaseName());

// L2 and decoupled decay differ once the moments are non-trivial; a mix-up shows here.
TEST(AdamStepDecay, L2AndDecoupledDiffer) {
  ops::AdamConfig cfg;
  cfg.lr = 0.1;
  cfg.weight_decay = 0.5;
  Guarded<float> p1(Shape(4), {1.0, -2.0, 0.5, 3.0}), p2(Shape(4), {1.0, -2.0, 0.5, 3.0});
  Guarded<float> g(Shape(4), {0.1, 0.1, -0.1, 0.2});
  Guarded<float> m1(Shape(4)), v1(Shape(4)), m2(Shape(4)), v2(Shape(4));
  for (auto* t : {&m1, &v1, &m2, &v2}) t->fill(0.0);
  ops::adam_step(p1, g, m1, v1, cfg, 1);
  cfg.decoupled = true;
  ops::adam_step(p2, g, m2, v2, cfg, 1);
  EXPECT_NE(p1.values(), p2.values());
}

}  // namespace
}  // namespace dbtest
