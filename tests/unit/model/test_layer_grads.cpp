// Finite-difference checks (float64, CPU) of every layer: each parameter gradient and each
// input gradient, plus the accumulate/overwrite contract.
#include <gtest/gtest.h>

#include <cstring>

#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/model/jodie_projection.h"
#include "depbloom/model/link_predictor.h"
#include "depbloom/model/loss.h"
#include "depbloom/model/memory_updater.h"
#include "depbloom/model/time_encoder.h"
#include "unit/model/grad_check.h"

namespace {

using namespace depbloom;
using namespace depbloom::model;
using namespace dbmodeltest;

OwnedTensor zeros(Shape shape) {
  return OwnedTensor::zeros(DType::f64, shape);
}

class LayerGrad : public ::testing::Test {
 protected:
  ParameterStore store{DType::f64, Device::cpu()};
  Arena arena{Device::cpu()};
  void ready(uint64_t seed = 11) {
    store.finalize();
    store.initialize(seed);
  }
};

TEST_F(LayerGrad, Linear) {
  Linear layer(store, "fc", 4, 3);
  ready();
  auto x = random_tensor(Shape(5, 4), 1);
  auto y = zeros(Shape(5, 3));
  auto dx = zeros(Shape(5, 4));
  LinearContext ctx;
  std::vector<GradTarget> targets{input_target("x", x, dx)};
  add_all_params(targets, store);
  expect_gradients(
      [&] {
        layer.forward(y, ctx, x);
        return y.view();
      },
      [&](const Tensor& dy) { layer.backward(dx, dy, ctx); }, targets);
}

TEST_F(LayerGrad, TimeEncoder) {
  TimeEncoder layer(store, "time", 5);
  ready();
  auto dt = random_tensor(Shape(6), 2, 0.1, 3.0);
  auto out = zeros(Shape(6, 5));
  TimeEncoderContext ctx;
  std::vector<GradTarget> targets;
  add_all_params(targets, store);
  expect_gradients(
      [&] {
        layer.forward(out, ctx, dt);
        return out.view();
      },
      [&](const Tensor& dout) { layer.backward(dout, ctx); }, targets);
}

void check_updater(ParameterStore& store, Arena& arena, RecurrentCell cell) {
  const int64_t batch = 4, mail_dim = 3, time_dim = 2, hidden = 5;
  RecurrentMemoryUpdater layer(store, "updater", cell, mail_dim, time_dim, hidden);
  store.finalize();
  store.initialize(5);
  auto mail = random_tensor(Shape(batch, mail_dim), 3);
  auto dt = random_tensor(Shape(batch), 4, 0.1, 3.0);
  auto memory = random_tensor(Shape(batch, hidden), 5);
  auto h_new = zeros(Shape(batch, hidden));
  auto d_mail = zeros(Shape(batch, mail_dim));
  auto d_memory = zeros(Shape(batch, hidden));
  MemoryUpdaterContext ctx;
  std::vector<GradTarget> targets{input_target("mail", mail, d_mail),
                                  input_target("memory", memory, d_memory)};
  add_all_params(targets, store);
  expect_gradients(
      [&] {
        arena.reset();
        layer.forward(h_new, ctx, mail, dt, memory, arena);
        return h_new.view();
      },
      [&](const Tensor& dh) { layer.backward(d_mail, d_memory, dh, ctx, arena); }, targets);
}

TEST_F(LayerGrad, GruMemoryUpdater) {
  check_updater(store, arena, RecurrentCell::gru);
}
TEST_F(LayerGrad, RnnMemoryUpdater) {
  check_updater(store, arena, RecurrentCell::rnn);
}

TEST_F(LayerGrad, JodieProjection) {
  JodieProjection layer(store, "proj", 4);
  ready();
  auto memory = random_tensor(Shape(5, 4), 6);
  auto dt = random_tensor(Shape(5), 7, 0.1, 2.0);
  auto h = zeros(Shape(5, 4));
  auto d_memory = zeros(Shape(5, 4));
  JodieProjectionContext ctx;
  std::vector<GradTarget> targets{input_target("memory", memory, d_memory)};
  add_all_params(targets, store);
  expect_gradients(
      [&] {
        arena.reset();
        layer.forward(h, ctx, memory, dt, arena);
        return h.view();
      },
      [&](const Tensor& dh) { layer.backward(d_memory, dh, ctx, arena); }, targets);
}

TEST_F(LayerGrad, LinkPredictor) {
  const int64_t batch = 3, negatives = 2, dim = 4;
  LinkPredictor layer(store, "pred", dim);
  ready();
  auto h_src = random_tensor(Shape(batch, dim), 14);
  auto h_dst = random_tensor(Shape((1 + negatives) * batch, dim), 15);
  auto logits = zeros(Shape((1 + negatives) * batch));
  auto d_src = zeros(h_src.shape()), d_dst = zeros(h_dst.shape());
  LinkPredictorContext ctx;
  std::vector<GradTarget> targets{input_target("h_src", h_src, d_src),
                                  input_target("h_dst", h_dst, d_dst)};
  add_all_params(targets, store);
  expect_gradients(
      [&] {
        arena.reset();
        layer.forward(logits, ctx, h_src, h_dst, arena);
        return logits.view();
      },
      [&](const Tensor& d) { layer.backward(d_src, d_dst, d, ctx, arena); }, targets);
}

TEST_F(LayerGrad, BceLoss) {
  auto logits = random_tensor(Shape(6), 18, -3.0, 3.0);
  auto targets = zeros(Shape(6));
  for (int i = 0; i < 3; ++i) targets.data<double>()[i] = 1.0;
  auto loss = zeros(Shape(1)), d_logits = zeros(Shape(6));
  expect_gradients(
      [&] {
        bce_loss_forward(loss, logits, targets);
        return loss.view();
      },
      [&](const Tensor& dl) { bce_loss_backward(d_logits, logits, targets, dl.data<double>()[0]); },
      {input_target("logits", logits, d_logits)});
}

// Parameter gradients accumulate: two backward calls give twice the gradient, while the
// input gradient is overwritten (equal after both calls).
TEST_F(LayerGrad, ParameterGradientsAccumulate) {
  Linear layer(store, "fc", 3, 2);
  ready();
  auto x = random_tensor(Shape(4, 3), 19);
  auto dy = random_tensor(Shape(4, 2), 20);
  auto y = zeros(Shape(4, 2)), dx = zeros(Shape(4, 3));
  LinearContext ctx;
  layer.forward(y, ctx, x);
  store.zero_grad();
  layer.backward(dx, dy, ctx);
  const std::vector<double> once(store.grads().data<double>(),
                                 store.grads().data<double>() + store.numel());
  const std::vector<double> dx_once(dx.data<double>(), dx.data<double>() + dx.numel());
  layer.backward(dx, dy, ctx);
  for (int64_t i = 0; i < store.numel(); ++i)
    EXPECT_DOUBLE_EQ(store.grads().data<double>()[i], 2.0 * once[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < dx.numel(); ++i)
    EXPECT_DOUBLE_EQ(dx.data<double>()[i], dx_once[static_cast<size_t>(i)]);
}

}  // namespace
