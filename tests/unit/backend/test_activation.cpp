// Op tests for act_forward/act_backward (relu, sigmoid, tanh, leaky_relu; in place and out
// of place) and the vanilla RNN cell, against plain double loops with guard elements.
// The backward tests take y from the reference so they do not depend on the forward op.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/backend/op_test_util.h"

namespace dbtest {
namespace {

namespace ops = depbloom::ops;
using ops::Act;

double act_ref(Act a, double x, double slope) {
  switch (a) {
    case Act::relu:
      return x > 0.0 ? x : 0.0;
    case Act::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Act::tanh:
      return std::tanh(x);
    case Act::leaky_relu:
      return x > 0.0 ? x : slope * x;
  }
  return 0.0;
}

// d act / d x expressed through the output y, as the op documents.
double act_grad_from_y(Act a, double y, double slope) {
  switch (a) {
    case Act::relu:
      return y > 0.0 ? 1.0 : 0.0;
    case Act::sigmoid:
      return y * (1.0 - y);
    case Act::tanh:
      return 1.0 - y * y;
    case Act::leaky_relu:
      return y > 0.0 ? 1.0 : slope;
  }
  return 0.0;
}

const char* act_name(Act a) {
  switch (a) {
    case Act::relu:
      return "relu";
    case Act::sigmoid:
      return "sigmoid";
    case Act::tanh:
      return "tanh";
    case Act::leaky_relu:
      return "leaky";
  }
  return "?";
}

struct ActCase {
  Act act;
  double slope;
  Shape shape;
  DType dtype;
  bool in_place;
  std::string label() const {
    std::string s = std::string(act_name(act)) + (slope == 0.2 ? "02" : "");
    for (int i = 0; i < shape.rank; ++i) s += "_" + std::to_string(shape[i]);
    return s + (in_place ? "_inplace_" : "_") + dtype_label(dtype);
  }
};
void PrintTo(const ActCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_act(const ActCase& p) {
  Rand rng(700 + static_cast<uint64_t>(p.shape.numel()) + static_cast<uint64_t>(p.act));
  const int64_t n = p.shape.numel();
  // |x| >= 1e-3 keeps relu / leaky away from the kink.
  Guarded<T> x(p.shape, rng.vec(n, -3.0, 3.0, 1e-3));
  auto xv = x.values();
  std::vector<double> yref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) yref[i] = act_ref(p.act, xv[i], p.slope);

  Guarded<T> y(p.shape);
  y.fill_nan();
  const Guarded<T>& yout = p.in_place ? x : y;
  ops::act_forward(p.act, yout, x, p.slope);
  EXPECT_TRUE(all_close(yout.values(), yref, elementwise_tol<T>())) << "forward";
  EXPECT_TRUE(yout.guard_intact());

  // Backward from the reference output rounded to T.
  Guarded<T> yin(p.shape, yref);
  Guarded<T> dy(p.shape, rng.vec(n));
  auto yin_v = yin.values();
  auto dyv = dy.values();
  std::vector<double> dxref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) dxref[i] = dyv[i] * act_grad_from_y(p.act, yin_v[i], p.slope);
  Guarded<T> dx(p.shape);
  dx.fill_nan();
  const Guarded<T>& dxout = p.in_place ? dy : dx;
  ops::act_backward(p.act, dxout, dy, yin, p.slope);
  EXPECT_TRUE(all_close(dxout.values(), dxref, elementwise_tol<T>())) << "backward";
  EXPECT_TRUE(dxout.guard_intact());
}

class Activation : public testing::TestWithParam<ActCase> {};
TEST_P(Activation, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_act<float>(GetParam());
  else
    check_act<double>(GetParam());
}

std::vector<ActCase> act_cases() {
  const Shape shapes[] = {Shape(1), Shape(7, 33), Shape(257), Shape(33, 100), Shape(3, 7, 257)};
  std::vector<ActCase> v;
  int i = 0;
  for (Act a : {Act::relu, Act::sigmoid, Act::tanh, Act::leaky_relu})
    for (const Shape& s : shapes) {
      v.push_back({a, 0.01, s, DType::f32, false});
      if (i % 2 == 0) v.push_back({a, 0.01, s, DType::f32, true});
      if (i % 3 == 0) v.push_back({a, 0.01, s, DType::f64, i % 2 == 1});
      ++i;
    }
  v.push_back({Act::leaky_relu, 0.2, Shape(33, 7), DType::f32, false});
  v.push_back({Act::leaky_relu, 0.2, Shape(100), DType::f64, true});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Ops, Activation, testing::ValuesIn(act_cases()), CaseName());

// Large |x| must saturate cleanly: no NaN or inf from exp overflow.
TEST(ActivationSaturation, SigmoidAndTanhAtLargeInputs) {
  Guarded<float> x(Shape(4), {-200.0, -90.0, 90.0, 200.0});
  Guarded<float> y(Shape(4));
  ops::act_forward(Act::sigmoid, y, x);
  EXPECT_TRUE(all_close(y.values(), {0.0, 0.0, 1.0, 1.0}, Tol{1e-30, 0.0}));
  ops::act_forward(Act::tanh, y, x);
  EXPECT_TRUE(all_close(y.values(), {-1.0, -1.0, 1.0, 1.0}, Tol{0.0, 0.0}));
}

// ---- vanilla RNN cell -------------------------------------------------------------------

struct CellCase {
  int64_t B, H;
  DType dtype;
  std::string label() const {
    return "B" + std::to_string(B) + "_H" + std::to_string(H) + "_" + dtype_label(dtype);
  }
};
void PrintTo(const CellCase& c, std::ostream* os) {
  *os << c.label();
}

template <class T>
void check_rnn(const CellCase& p) {
  Rand rng(800 + static_cast<uint64_t>(p.B * 5 + p.H));
  const int64_t n = p.B * p.H;
  Guarded<T> gx(Shape(p.B, p.H), rng.vec(n, -2.0, 2.0));
  Guarded<T> gh(Shape(p.B, p.H), rng.vec(n, -2.0, 2.0));
  auto gxv = gx.values();
  auto ghv = gh.values();
  std::vector<double> href(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) href[i] = std::tanh(gxv[i] + ghv[i]);
  Guarded<T> h_new(Shape(p.B, p.H));
  h_new.fill_nan();
  ops::rnn_cell_forward(h_new, gx, gh);
  EXPECT_TRUE(all_close(h_new.values(), href, elementwise_tol<T>()));
  EXPECT_TRUE(h_new.guard_intact());

  Guarded<T> hin(Shape(p.B, p.H), href);
  Guarded<T> dh(Shape(p.B, p.H), rng.vec(n));
  auto hv = hin.values();
  auto dhv = dh.values();
  std::vector<double> dref(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) dref[i] = dhv[i] * (1.0 - hv[i] * hv[i]);
  Guarded<T> d_pre(Shape(p.B, p.H));
  d_pre.fill_nan();
  ops::rnn_cell_backward(d_pre, dh, hin);
  EXPECT_TRUE(all_close(d_pre.values(), dref, elementwise_tol<T>()));
  EXPECT_TRUE(d_pre.guard_intact());
}

class RnnCell : public testing::TestWithParam<CellCase> {};
TEST_P(RnnCell, ForwardAndBackwardMatchReference) {
  if (GetParam().dtype == DType::f32)
    check_rnn<float>(GetParam());
  else
    check_rnn<double>(GetParam());
}
const CellCase kCellCases[] = {{1, 1, DType::f32},    {7, 33, DType::f32},    {257, 7, DType::f32},
                               {33, 257, DType::f32}, {100, 100, DType::f32}, {1, 1, DType::f64},
                               {33, 100, DType::f64}};
INSTANTIATE_TEST_SUITE_P(Ops, RnnCell, testing::ValuesIn(kCellCases), CaseName());

}  // namespace
}  // namespace dbtest
