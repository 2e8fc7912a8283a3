// Tests of the refined copies' messages held once each (model::CopyMessages): spreading and
// collecting against plain loops, collect as spread's adjoint, the projection (with a bias,
// and over one row per copy) and its backward against central differences (float64), and the
// recurrent updater's copies path (messages, base rows and ages each held once) against its
// ordinary forward and backward on the spread mails, for the GRU and the RNN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/model/copy_messages.h"
#include "depbloom/model/memory_updater.h"
#include "unit/model/grad_check.h"

namespace {

using namespace depbloom;
using namespace depbloom::model;
using namespace dbmodeltest;

void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 + 1e-12 * std::fabs(want[i])) << what << " " << i;
}

// Six copies over four distinct messages: copy 2 mixes three (refine.aggregate: mean), copy 4
// two, message 1 serves four terms, message 3 none; `unweighted` drops the weights (all 1).
class CopyMessagesTest : public ::testing::Test {
 protected:
  static constexpr int64_t kCopies = 6, kDistinct = 4, kWidth = 5;
  const std::vector<int32_t> row_ = {0, 1, 2, 2, 2, 3, 4, 4, 5};
  const std::vector<int32_t> msg_ = {1, 0, 1, 2, 0, 1, 2, 1, 0};
  const std::vector<double> weight_ = {1, 1, 0.5, 0.25, 0.25, 1, 0.5, 0.5, 1};
  OwnedTensor row{DType::i32, Shape(9)}, msg{DType::i32, Shape(9)}, weight{DType::f64, Shape(9)};
  OwnedTensor distinct = random_tensor(Shape(kDistinct, kWidth), 1);
  Arena arena{Device::cpu()};

  void SetUp() override {
    std::memcpy(row.data<int32_t>(), row_.data(), row_.size() * sizeof(int32_t));
    std::memcpy(msg.data<int32_t>(), msg_.data(), msg_.size() * sizeof(int32_t));
    std::memcpy(weight.data<double>(), weight_.data(), weight_.size() * sizeof(double));
  }
  CopyMessages messages(bool weighted, Tensor from = Tensor{}) const {
    return CopyMessages{from.defined() ? from : distinct.view(), row, msg,
                        weighted ? weight.view() : Tensor{}, kCopies};
  }
  // Each copy's weighted sum of per_msg's rows, written out.
  std::vector<double> spread_loop(const Tensor& per_msg, bool weighted) const {
    const int64_t n = per_msg.dim(1);
    std::vector<double> out(static_cast<size_t>(kCopies * n), 0.0);
    for (size_t t = 0; t < row_.size(); ++t)
      for (int64_t k = 0; k < n; ++k)
        out[static_cast<size_t>(row_[t] * n + k)] +=
            (weighted ? weight_[t] : 1.0) * per_msg.data<double>()[msg_[t] * n + k];
    return out;
  }
};

TEST_F(CopyMessagesTest, SpreadAddsEachCopysWeightedMessages) {
  for (bool weighted : {true, false}) {
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    OwnedTensor base = random_tensor(Shape(kCopies, kWidth), 2), out(DType::f64, base.shape());
    ops::copy(out, base);
    spread_to_copies(out, distinct, messages(weighted), /*accumulate=*/true, arena);
    std::vector<double> want = spread_loop(distinct, weighted);
    for (size_t i = 0; i < want.size(); ++i) want[i] += base.data<double>()[i];
    expect_close(values_of(out), want, "spread, accumulated");
    spread_to_copies(out, distinct, messages(weighted), /*accumulate=*/false, arena);
    expect_close(values_of(out), spread_loop(distinct, weighted), "spread");
  }
}

// <spread(x), y> = <x, collect(y)> for every x and y: collect is spread's transpose.
TEST_F(CopyMessagesTest, CollectIsTheAdjointOfSpread) {
  for (bool weighted : {true, false}) {
    SCOPED_TRACE(weighted ? "weighted" : "unweighted");
    OwnedTensor y = random_tensor(Shape(kCopies, kWidth), 3);
    OwnedTensor collected = OwnedTensor::zeros(DType::f64, distinct.shape());
    collect_to_messages(collected, y, messages(weighted), arena);
    const std::vector<double> spread = spread_loop(distinct, weighted);
    double lhs = 0.0, rhs = 0.0;
    for (int64_t i = 0; i < y.numel(); ++i)
      lhs += spread[static_cast<size_t>(i)] * y.data<double>()[i];
    for (int64_t i = 0; i < distinct.numel(); ++i)
      rhs += distinct.data<double>()[i] * collected.data<double>()[i];
    EXPECT_NEAR(lhs, rhs, 1e-12);
    // A message no term names collects nothing.
    for (int64_t k = 0; k < kWidth; ++k) EXPECT_EQ(collected.data<double>()[3 * kWidth + k], 0.0);
  }
}

TEST_F(CopyMessagesTest, ProjectionEqualsProjectingTheSpreadMessages) {
  const int64_t n = 3;
  OwnedTensor w = random_tensor(Shape(n, kWidth), 4),
              out = OwnedTensor::zeros(DType::f64, Shape(kCopies, n));
  project_messages(out, w, messages(true), /*accumulate=*/false, arena);
  const std::vector<double> m = spread_loop(distinct, true);
  std::vector<double> want(static_cast<size_t>(kCopies * n), 0.0);
  for (int64_t c = 0; c < kCopies; ++c)
    for (int64_t o = 0; o < n; ++o)
      for (int64_t k = 0; k < kWidth; ++k)
        want[static_cast<size_t>(c * n + o)] +=
            m[static_cast<size_t>(c * kWidth + k)] * w.data<double>()[o * kWidth + k];
  expect_close(values_of(out), want, "projection");
}

TEST_F(CopyMessagesTest, ProjectionGradientsOfWeightAndMessages) {
  const int64_t n = 3;
  OwnedTensor w = random_tensor(Shape(n, kWidth), 5), dw(DType::f64, w.shape());
  OwnedTensor d_distinct(DType::f64, distinct.shape()), out(DType::f64, Shape(kCopies, n));
  const CopyMessages msgs = messages(true);
  // Both accumulate.
  const std::vector<GradTarget> targets{param_target("w", w, dw),
                                        param_target("distinct", distinct, d_distinct)};
  expect_gradients(
      [&] {
        arena.reset();
        project_messages(out, w, msgs, /*accumulate=*/false, arena);
        return out.view();
      },
      [&](const Tensor& d_out) {
        project_messages_backward(d_distinct, dw, d_out, w, msgs, arena);
      },
      targets);
}

// One row per copy, named by an index (rows shared, as a step's gaps are) or by the copy
// itself (no index): the biased projection against a plain loop, accumulating, and its
// weight, bias and row gradients against central differences. A bias needs one term per copy.
TEST_F(CopyMessagesTest, BiasedProjectionOfOneRowPerCopy) {
  const int64_t n = 3;
  OwnedTensor of(DType::i32, Shape(kCopies));
  const int32_t of_v[kCopies] = {2, 0, 2, 3, 0, 2};
  std::memcpy(of.data<int32_t>(), of_v, sizeof(of_v));
  OwnedTensor own = random_tensor(Shape(kCopies, kWidth), 12);
  OwnedTensor w = random_tensor(Shape(n, kWidth), 13), b = random_tensor(Shape(n), 14);
  OwnedTensor base = random_tensor(Shape(kCopies, n), 15);
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared rows" : "a row per copy");
    const Tensor rows = shared ? distinct.view() : own.view();
    const CopyMessages msgs{rows, Tensor{}, shared ? of.view() : Tensor{}, Tensor{}, kCopies, true};
    OwnedTensor out(DType::f64, base.shape());
    ops::copy(out, base);
    project_messages(out, w, msgs, /*accumulate=*/true, arena, b);
    std::vector<double> want = values_of(base);
    for (int64_t c = 0; c < kCopies; ++c) {
      const int64_t i = shared ? of_v[c] : c;
      for (int64_t o = 0; o < n; ++o) {
        double v = b.data<double>()[o];
        for (int64_t k = 0; k < kWidth; ++k)
          v += rows.data<double>()[i * kWidth + k] * w.data<double>()[o * kWidth + k];
        want[static_cast<size_t>(c * n + o)] += v;
      }
    }
    expect_close(values_of(out), want, "biased projection");

    OwnedTensor dw(DType::f64, w.shape()), db(DType::f64, b.shape());
    OwnedTensor d_rows(DType::f64, rows.shape());
    const std::vector<GradTarget> targets{param_target("w", w, dw), param_target("b", b, db),
                                          param_target("rows", rows, d_rows)};
    expect_gradients(
        [&] {
          arena.reset();
          project_messages(out, w, msgs, /*accumulate=*/false, arena, b);
          return out.view();
        },
        [&](const Tensor& d_out) {
          project_messages_backward(d_rows, dw, d_out, w, msgs, arena, db);
        },
        targets);
  }
  OwnedTensor out(DType::f64, base.shape());
  EXPECT_ANY_THROW(project_messages(out, w, messages(false), false, arena, b));
}

// With one unweighted term per copy (refine.aggregate: last), the gather / scatter-add fast
// path gives what the general path gives: spread both ways, collect, and the projection's
// gradients.
TEST_F(CopyMessagesTest, OneTermPerCopyEqualsTheGeneralPath) {
  OwnedTensor ident(DType::i32, Shape(kCopies)), pick(DType::i32, Shape(kCopies));
  for (int32_t c = 0; c < kCopies; ++c)
    ident.data<int32_t>()[c] = c, pick.data<int32_t>()[c] = (c * 3 + 1) % 3;  // 1, 1, 1, ...
  pick.data<int32_t>()[2] = 0, pick.data<int32_t>()[5] = 2;
  CopyMessages general{distinct, ident, pick, Tensor{}, kCopies, false};
  CopyMessages fast = general;
  fast.one_per_copy = true;
  fast.row = Tensor{};  // the fast path needs no copy index
  OwnedTensor base = random_tensor(Shape(kCopies, kWidth), 9);
  for (bool accumulate : {false, true}) {
    OwnedTensor a(DType::f64, base.shape()), b(DType::f64, base.shape());
    ops::copy(a, base), ops::copy(b, base);
    spread_to_copies(a, distinct, general, accumulate, arena);
    spread_to_copies(b, distinct, fast, accumulate, arena);
    EXPECT_EQ(values_of(a), values_of(b)) << "spread, accumulate " << accumulate;
  }
  OwnedTensor ga = OwnedTensor::zeros(DType::f64, distinct.shape());
  OwnedTensor gb = OwnedTensor::zeros(DType::f64, distinct.shape());
  collect_to_messages(ga, base, general, arena);
  collect_to_messages(gb, base, fast, arena);
  EXPECT_EQ(values_of(ga), values_of(gb)) << "collect";
  const int64_t n = 3;
  OwnedTensor w = random_tensor(Shape(n, kWidth), 10);
  OwnedTensor dwa = OwnedTensor::zeros(DType::f64, w.shape()),
              dwb = OwnedTensor::zeros(DType::f64, w.shape());
  OwnedTensor d_out = random_tensor(Shape(kCopies, n), 11);
  ops::fill(ga, 0.0), ops::fill(gb, 0.0);
  project_messages_backward(ga, dwa, d_out, w, general, arena);
  project_messages_backward(gb, dwb, d_out, w, fast, arena);
  expect_close(values_of(gb), values_of(ga), "d_distinct");
  expect_close(values_of(dwb), values_of(dwa), "dw");
  // Weighted or uneven terms cannot take the fast path.
  CopyMessages bad = messages(true);
  bad.one_per_copy = true;
  EXPECT_ANY_THROW(spread_to_copies(base, distinct, bad, false, arena));
}

// The updater on copies equals its ordinary forward on the spread mails and the copies'
// memories, and so do all of its gradients (d_distinct against the collected d_mail; per base
// row, the memory's gradient against the copies' direct paths plus the W_hh path; the time
// encoder's against its per-copy gradients), for both cells. Copies 0 and 2 share a base row,
// and so do 1 and 5; the ages repeat too.
class UpdaterCopiesTest : public CopyMessagesTest,
                          public ::testing::WithParamInterface<RecurrentCell> {};

TEST_P(UpdaterCopiesTest, EqualsTheUpdaterOnTheSpreadMails) {
  const int64_t hidden = 4, time_dim = 3;
  ParameterStore store(DType::f64, Device::cpu());
  RecurrentMemoryUpdater layer(store, "updater", GetParam(), kWidth, time_dim, hidden);
  store.finalize();
  store.initialize(9);
  OwnedTensor base_rows = random_tensor(Shape(4, hidden), 6);
  OwnedTensor base_of(DType::i32, Shape(kCopies));
  const int32_t base_of_v[kCopies] = {0, 1, 0, 2, 3, 1};
  std::memcpy(base_of.data<int32_t>(), base_of_v, sizeof(base_of_v));
  const CopyMessages bases{base_rows, Tensor{}, base_of, Tensor{}, kCopies, true};
  OwnedTensor memory(DType::f64, Shape(kCopies, hidden));
  spread_to_copies(memory, base_rows, bases, /*accumulate=*/false, arena);
  // Three distinct ages: copies 0, 4 and 5 share one, and so do 1 and 3.
  OwnedTensor ages = random_tensor(Shape(3), 7, 0.1, 5.0);
  OwnedTensor age_of(DType::i32, Shape(kCopies));
  const int32_t age_of_v[kCopies] = {2, 0, 1, 0, 2, 2};
  std::memcpy(age_of.data<int32_t>(), age_of_v, sizeof(age_of_v));
  OwnedTensor dt(DType::f64, Shape(kCopies));
  ops::gather_rows(dt.view().reshape(Shape(kCopies, 1)), ages.view().reshape(Shape(3, 1)), age_of);
  OwnedTensor mail = OwnedTensor::zeros(DType::f64, Shape(kCopies, kWidth));
  const CopyMessages msgs = messages(true);
  spread_to_copies(mail, distinct, msgs, /*accumulate=*/false, arena);

  OwnedTensor plain(DType::f64, memory.shape()), copies(DType::f64, memory.shape());
  MemoryUpdaterContext plain_ctx, copies_ctx;
  layer.forward(plain, plain_ctx, mail, dt, memory, arena);
  layer.forward_copies(copies, copies_ctx, msgs, CopyTimes{ages, age_of}, memory, bases, arena);
  expect_close(values_of(copies), values_of(plain), "h_new");

  OwnedTensor d_out = random_tensor(memory.shape(), 8);
  OwnedTensor d_mail(DType::f64, mail.shape()), d_memory_plain(DType::f64, memory.shape());
  OwnedTensor d_memory_copies(DType::f64, memory.shape());
  store.zero_grad();
  layer.backward(d_mail, d_memory_plain, d_out, plain_ctx, arena);
  const std::vector<double> grads_plain = values_of(store.grads());
  store.zero_grad();
  OwnedTensor d_distinct = OwnedTensor::zeros(DType::f64, distinct.shape());
  OwnedTensor d_bases = OwnedTensor::zeros(DType::f64, base_rows.shape());
  layer.backward_copies(d_distinct, d_memory_copies, d_bases, d_out, copies_ctx, arena);
  // Per base row: the copies' direct paths plus the W_hh path equal the plain gradients' sum.
  OwnedTensor want_bases = OwnedTensor::zeros(DType::f64, base_rows.shape());
  collect_to_messages(want_bases, d_memory_plain, bases, arena);
  collect_to_messages(d_bases, d_memory_copies, bases, arena);
  expect_close(values_of(d_bases), values_of(want_bases), "d_memory per base row");
  expect_close(values_of(store.grads()), grads_plain, "parameter gradients");
  OwnedTensor collected = OwnedTensor::zeros(DType::f64, distinct.shape());
  collect_to_messages(collected, d_mail, msgs, arena);
  expect_close(values_of(d_distinct), values_of(collected), "d_distinct");
  // The check is not vacuous: the messages move the output and get a gradient.
  double norm = 0.0;
  for (double v : values_of(d_distinct)) norm += v * v;
  EXPECT_GT(norm, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Cells, UpdaterCopiesTest,
                         ::testing::Values(RecurrentCell::gru, RecurrentCell::rnn),
                         [](const auto& info) {
                           return info.param == RecurrentCell::gru ? "gru" : "rnn";
                         });

}  // namespace
