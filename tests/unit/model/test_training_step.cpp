// The layers composed into a TGN-like step in float32 on the CPU (GRU updater over the
// mails of src, dst and negative nodes, identity embedding, link predictor, BCE, Adam):
// the loss falls on a fixed batch, and the same seed gives the same loss trace bit for bit.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/model/link_predictor.h"
#include "depbloom/model/loss.h"
#include "depbloom/model/memory_updater.h"
#include "depbloom/model/parameters.h"

namespace {

using namespace depbloom;
using namespace depbloom::model;

OwnedTensor random_f32(Shape shape, uint64_t seed, float lo, float hi) {
  OwnedTensor t(DType::f32, shape);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// Host Buffer allocations made by the steps after the first (a warm step makes none).
int64_t g_warm_allocations = -1;

std::vector<float> train_loss_trace(uint64_t seed, int steps) {
  const int64_t batch = 8, memory_dim = 6, mail_dim = 5, time_dim = 4;
  const int64_t nodes = 3 * batch;  // src, dst, one negative destination each
  ParameterStore store(DType::f32);
  RecurrentMemoryUpdater updater(store, "memory_updater", RecurrentCell::gru, mail_dim, time_dim,
                                 memory_dim);
  LinkPredictor predictor(store, "edge_predictor", memory_dim);
  store.finalize();
  store.initialize(seed);

  auto mail = random_f32(Shape(nodes, mail_dim), 1, -1.f, 1.f);
  auto dt = random_f32(Shape(nodes), 2, 0.f, 5.f);
  auto memory = random_f32(Shape(nodes, memory_dim), 3, -1.f, 1.f);
  OwnedTensor targets = OwnedTensor::zeros(DType::f32, Shape(2 * batch));
  for (int64_t i = 0; i < batch; ++i) targets.data<float>()[i] = 1.f;
  OwnedTensor h(DType::f32, Shape(nodes, memory_dim)), d_h(DType::f32, Shape(nodes, memory_dim));
  OwnedTensor logits(DType::f32, Shape(2 * batch)), d_logits(DType::f32, Shape(2 * batch));
  OwnedTensor loss(DType::f32, Shape(1));
  ops::AdamConfig adam;
  adam.lr = 1e-2;

  Arena arena;
  std::vector<float> trace;
  int64_t allocations_after_warmup = 0;
  for (int step = 0; step < steps; ++step) {
    arena.reset();
    if (step == 2) allocations_after_warmup = memory_counters().host_allocations.load();
    store.zero_grad();
    MemoryUpdaterContext up;
    LinkPredictorContext pred;
    updater.forward(h, up, mail, dt, memory, arena);
    predictor.forward(logits, pred, h.view().rows(0, batch), h.view().rows(batch, nodes), arena);
    bce_loss_forward(loss, logits, targets);
    trace.push_back(loss.data<float>()[0]);

    bce_loss_backward(d_logits, logits, targets);
    predictor.backward(d_h.view().rows(0, batch), d_h.view().rows(batch, nodes), d_logits, pred,
                       arena);
    // The mails and the previous memories are data here (as in TGL): no gradient wanted.
    updater.backward(Tensor{}, Tensor{}, d_h, up, arena);
    store.adam_step(adam);
  }
  g_warm_allocations = memory_counters().host_allocations.load() - allocations_after_warmup;
  return trace;
}

TEST(TrainingStep, LossFallsOnAFixedBatch) {
  const auto trace = train_loss_trace(17, 60);
  EXPECT_LT(trace.back(), 0.5f * trace.front())
      << "first " << trace.front() << " last " << trace.back();
}

// After the arena has grown to its high-water mark, a step allocates no buffers: the
// contexts and scratch all come from the arena.
TEST(TrainingStep, WarmStepsAllocateNoBuffers) {
  train_loss_trace(17, 8);
  EXPECT_EQ(g_warm_allocations, 0);
}

TEST(TrainingStep, SameSeedSameLossTrace) {
  const auto a = train_loss_trace(5, 10), b = train_loss_trace(5, 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, train_loss_trace(6, 10));
}

}  // namespace
