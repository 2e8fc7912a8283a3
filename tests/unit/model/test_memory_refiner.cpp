// Tests of MemoryRefiner: the forward against a plain-loop reference of its equation on the
// copies' spread messages, every parameter, memory and distinct-message gradient against
// central differences in float64 (gate kept within (0.2, 0.8), relu inputs kept off their
// kink) for weighted terms that share messages and gaps and for one term and gap per copy,
// the identity when f is zero (a fresh refiner), row independence, in-place output, the
// parameter names and empty batches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/model/memory_refiner.h"
#include "unit/model/grad_check.h"

namespace {

using namespace depbloom;
using namespace depbloom::model;
using namespace dbmodeltest;

OwnedTensor i32_values(const std::vector<int32_t>& v) {
  OwnedTensor t(DType::i32, Shape(static_cast<int64_t>(v.size())));
  std::memcpy(t.data<int32_t>(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

// Each copy's gap written out: dt[c] = values[of[c]].
OwnedTensor per_copy(const Tensor& values, const Tensor& of) {
  OwnedTensor dt(DType::f64, Shape(of.numel()));
  for (int64_t c = 0; c < of.numel(); ++c)
    dt.data<double>()[c] = values.data<double>()[of.data<int32_t>()[c]];
  return dt;
}

void randomize(const Tensor& t, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  const auto v = random_values(t.numel(), seed, lo, hi);
  std::memcpy(t.data<double>(), v.data(), v.size() * sizeof(double));
}

// The refiner's equation written out per row and element, with the pre-activations kept so
// the tests can check they are away from saturation and kinks.
struct Reference {
  std::vector<double> out, gate_pre, hidden_pre;
};

// Each copy's message written out from its terms: m [R, d_msg].
std::vector<double> spread_messages(const CopyMessages& msgs) {
  const int64_t dm = msgs.distinct.dim(1);
  std::vector<double> m(static_cast<size_t>(msgs.copies * dm), 0.0);
  for (int64_t t = 0; t < msgs.terms(); ++t) {
    const int32_t c = msgs.row.data<int32_t>()[t], i = msgs.msg.data<int32_t>()[t];
    const double w = msgs.weight.defined() ? msgs.weight.data<double>()[t] : 1.0;
    for (int64_t k = 0; k < dm; ++k)
      m[static_cast<size_t>(c * dm + k)] += w * msgs.distinct.data<double>()[i * dm + k];
  }
  return m;
}

Reference reference_forward(const ParameterStore& store, const Tensor& s, const CopyMessages& msgs,
                            const Tensor& dt, int64_t hidden) {
  const int64_t rows = s.dim(0), d = s.dim(1), dm = msgs.distinct.dim(1);
  const std::vector<double> m = spread_messages(msgs);
  const Tensor w_t = store.value("refine.time.w"), b_t = store.value("refine.time.b");
  const int64_t dtime = w_t.numel(), in = d + dm + dtime;
  auto at = [&](const char* name) { return store.value(name).data<double>(); };
  const double *wg = at("refine.gate.weight"), *bg = at("refine.gate.bias");
  const double *w1 = at("refine.fc1.weight"), *b1 = at("refine.fc1.bias");
  const double *w2 = at("refine.fc2.weight"), *b2 = at("refine.fc2.bias");
  Reference ref;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> x;
    for (int64_t i = 0; i < d; ++i) x.push_back(s.data<double>()[r * d + i]);
    for (int64_t i = 0; i < dm; ++i) x.push_back(m[static_cast<size_t>(r * dm + i)]);
    for (int64_t i = 0; i < dtime; ++i)
      x.push_back(std::cos(dt.data<double>()[r] * w_t.data<double>()[i] + b_t.data<double>()[i]));
    std::vector<double> h(static_cast<size_t>(hidden));
    for (int64_t k = 0; k < hidden; ++k) {
      double pre = b1[k];
      for (int64_t i = 0; i < in; ++i) pre += w1[k * in + i] * x[static_cast<size_t>(i)];
      ref.hidden_pre.push_back(pre);
      h[static_cast<size_t>(k)] = pre > 0.0 ? pre : 0.0;
    }
    for (int64_t o = 0; o < d; ++o) {
      double pre = bg[o];
      for (int64_t i = 0; i < in; ++i) pre += wg[o * in + i] * x[static_cast<size_t>(i)];
      ref.gate_pre.push_back(pre);
      double f = b2[o];
      for (int64_t k = 0; k < hidden; ++k) f += w2[o * hidden + k] * h[static_cast<size_t>(k)];
      ref.out.push_back(x[static_cast<size_t>(o)] + f / (1.0 + std::exp(-pre)));
    }
  }
  return ref;
}

// The copies' messages as the host lists them: terms (row, message, weight).
struct Terms {
  std::vector<int32_t> row, msg;
  std::vector<double> weight;  // empty: every weight is 1
};

// Copies 1 and 4 mix two messages (refine.aggregate: mean); messages 0 and 2 serve three and
// two copies. With `last`, each copy names one message and the weights are implied.
const Terms kMeanTerms = {
    {0, 1, 1, 2, 3, 4, 4}, {0, 0, 1, 2, 1, 2, 0}, {1, .5, .5, 1, 1, .25, .75}};
const Terms kLastTerms = {{0, 1, 2, 3, 4}, {0, 1, 0, 2, 1}, {}};

// A refiner with a live f (fc2 redrawn: a fresh one is zero) and the gate's weights scaled
// so that its pre-activations stay within +-1.4 (g in (0.2, 0.8)) for inputs in [-1, 1].
class RefinerFixture : public ::testing::Test {
 protected:
  static constexpr int64_t kRows = 5, kMem = 4, kMsg = 3, kTime = 2, kHidden = 6, kDistinct = 3;
  ParameterStore store{DType::f64, Device::cpu()};
  Arena arena{Device::cpu()};
  MemoryRefiner refiner{store, "refine", kMem, kMsg, kTime, kHidden};
  OwnedTensor s = random_tensor(Shape(kRows, kMem), 1);
  OwnedTensor distinct = random_tensor(Shape(kDistinct, kMsg), 2);
  // Three distinct gaps, held once (CopyTimes): copies 0, 2 and 4 share one.
  OwnedTensor gap_values = random_tensor(Shape(3), 3, 0.1, 3.0);
  OwnedTensor gap_of = i32_values({1, 0, 1, 2, 1});
  OwnedTensor dt = per_copy(gap_values, gap_of);
  const CopyTimes gaps{gap_values, gap_of};
  std::vector<OwnedTensor> held;  // the term arrays of the messages built so far

  void SetUp() override {
    store.finalize();
    store.initialize(17);
  }
  void make_f_live() {
    randomize(store.value("refine.fc2.weight"), 21, -0.5, 0.5);
    randomize(store.value("refine.fc2.bias"), 22, -0.5, 0.5);
    ops::scale(store.value("refine.gate.weight"), 0.4);
  }
  // `copies` copies whose messages are `terms` over distinct (the fixture's by default).
  CopyMessages messages(const Terms& terms, int64_t copies = kRows, Tensor from = Tensor{}) {
    const auto t = static_cast<int64_t>(terms.row.size());
    held.emplace_back(DType::i32, Shape(t));
    std::memcpy(held.back().data<int32_t>(), terms.row.data(), terms.row.size() * 4);
    Tensor row = held.back().view();
    held.emplace_back(DType::i32, Shape(t));
    std::memcpy(held.back().data<int32_t>(), terms.msg.data(), terms.msg.size() * 4);
    Tensor msg = held.back().view();
    Tensor weight;
    if (!terms.weight.empty()) {
      held.emplace_back(DType::f64, Shape(t));
      std::memcpy(held.back().data<double>(), terms.weight.data(), terms.weight.size() * 8);
      weight = held.back().view();
    }
    // One unweighted term per copy in copy order takes the fast path (refine.aggregate: last).
    bool one_per_copy = terms.weight.empty() && t == copies;
    for (int64_t i = 0; i < t && one_per_copy; ++i) one_per_copy = terms.row[i] == i;
    return CopyMessages{
        from.defined() ? from : distinct.view(), row, msg, weight, copies, one_per_copy};
  }
  const CopyMessages mean = messages(kMeanTerms);
};

TEST_F(RefinerFixture, DeclaresItsParametersUnderRefine) {
  const int64_t in = kMem + kMsg + kTime;
  const std::vector<std::pair<const char*, Shape>> want = {
      {"refine.fc1.bias", Shape(kHidden)}, {"refine.fc1.weight", Shape(kHidden, in)},
      {"refine.fc2.bias", Shape(kMem)},    {"refine.fc2.weight", Shape(kMem, kHidden)},
      {"refine.gate.bias", Shape(kMem)},   {"refine.gate.weight", Shape(kMem, in)},
      {"refine.time.b", Shape(kTime)},     {"refine.time.w", Shape(kTime)}};
  ASSERT_EQ(store.entries().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(store.entries()[i].name, want[i].first);
    EXPECT_EQ(store.entries()[i].shape, want[i].second) << want[i].first;
  }
  EXPECT_EQ(refiner.input_dim(), in);
}

TEST_F(RefinerFixture, ForwardMatchesThePlainLoopReference) {
  make_f_live();
  OwnedTensor out(DType::f64, s.shape());
  MemoryRefinerContext ctx;
  refiner.forward(out, ctx, s, mean, gaps, arena);
  const Reference ref = reference_forward(store, s, mean, dt, kHidden);
  const auto got = values_of(out);
  ASSERT_EQ(got.size(), ref.out.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], ref.out[i], 1e-12 + 1e-12 * std::fabs(ref.out[i])) << i;
  // The correction is really there (s' != s), so the comparison tests the whole branch.
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_GT(std::fabs(got[i] - s.data<double>()[i]), 1e-6) << i;
}

TEST_F(RefinerFixture, OutputMayAliasTheMemory) {
  make_f_live();
  OwnedTensor apart(DType::f64, s.shape());
  MemoryRefinerContext ctx;
  refiner.forward(apart, ctx, s, mean, gaps, arena);
  refiner.forward(s, ctx, s, mean, gaps, arena);
  EXPECT_EQ(values_of(s), values_of(apart));
}

TEST_F(RefinerFixture, GradientsOfEveryParameterMemoryAndMessage) {
  make_f_live();
  for (const Terms* terms : {&kMeanTerms, &kLastTerms}) {
    SCOPED_TRACE(terms == &kMeanTerms ? "mean terms, shared gaps" : "last terms, a gap per copy");
    const CopyMessages msgs = messages(*terms);
    const CopyTimes times = terms == &kMeanTerms ? gaps : CopyTimes{dt};
    // Preconditions of a meaningful check: g in (0.2, 0.8), relu inputs off the kink.
    const Reference ref = reference_forward(store, s, msgs, dt, kHidden);
    for (double pre : ref.gate_pre) {
      const double g = 1.0 / (1.0 + std::exp(-pre));
      ASSERT_TRUE(g > 0.2 && g < 0.8) << "gate " << g;
    }
    for (double pre : ref.hidden_pre) ASSERT_GT(std::fabs(pre), 1e-3);

    OwnedTensor out(DType::f64, s.shape()), d_s(DType::f64, s.shape());
    OwnedTensor d_distinct(DType::f64, distinct.shape());
    MemoryRefinerContext ctx;
    // d_distinct accumulates, as parameter gradients do.
    std::vector<GradTarget> targets{input_target("s", s, d_s),
                                    param_target("distinct", distinct, d_distinct)};
    add_all_params(targets, store);
    expect_gradients(
        [&] {
          arena.reset();
          refiner.forward(out, ctx, s, msgs, times, arena);
          return out.view();
        },
        [&](const Tensor& d_out) { refiner.backward(d_s, d_distinct, d_out, ctx, arena); },
        targets);
  }
}

// A fresh refiner has f = 0 (fc2 starts at zero): s' = s exactly, d_s = d_out, no message
// gradient, and
// of the parameters only fc2 gets a gradient (the branch is switched off, not cut off).
TEST_F(RefinerFixture, ZeroCorrectionLeavesTheMemoryUntouched) {
  OwnedTensor out(DType::f64, s.shape()), d_s(DType::f64, s.shape());
  OwnedTensor d_distinct(DType::f64, distinct.shape());
  MemoryRefinerContext ctx;
  refiner.forward(out, ctx, s, mean, gaps, arena);
  EXPECT_EQ(values_of(out), values_of(s));

  OwnedTensor d_out = random_tensor(s.shape(), 4);
  store.zero_grad();
  ops::fill(d_distinct, 0.0);
  refiner.backward(d_s, d_distinct, d_out, ctx, arena);
  EXPECT_EQ(values_of(d_s), values_of(d_out));
  for (double v : values_of(d_distinct)) EXPECT_EQ(v, 0.0);
  for (const auto& e : store.entries()) {
    const auto g = values_of(store.grad(e.name));
    double norm = 0.0;
    for (double v : g) norm += v * v;
    if (e.name.rfind("refine.fc2.", 0) == 0) {
      EXPECT_GT(norm, 0.0) << e.name;
    } else {
      EXPECT_EQ(norm, 0.0) << e.name;
    }
  }
}

// Each row is refined from its own inputs only: refining a copy alone (its terms and its own
// gap) gives the batch's row, where the gaps are shared (the BLAS may order a row's sums
// differently at these sizes: 1e-14).
TEST_F(RefinerFixture, RowsAreRefinedIndependently) {
  make_f_live();
  OwnedTensor out(DType::f64, s.shape());
  MemoryRefinerContext ctx;
  refiner.forward(out, ctx, s, mean, gaps, arena);
  for (int64_t r = 0; r < kRows; ++r) {
    Terms own;
    for (size_t t = 0; t < kMeanTerms.row.size(); ++t) {
      if (kMeanTerms.row[t] != r) continue;
      own.row.push_back(0), own.msg.push_back(kMeanTerms.msg[t]);
      own.weight.push_back(kMeanTerms.weight[t]);
    }
    OwnedTensor one(DType::f64, Shape(1, kMem));
    refiner.forward(one, ctx, s.view().rows(r, r + 1), messages(own, 1),
                    CopyTimes{dt.view().rows(r, r + 1)}, arena);
    for (int64_t i = 0; i < kMem; ++i)
      EXPECT_NEAR(one.data<double>()[i], out.data<double>()[r * kMem + i], 1e-14) << r;
  }
}

TEST_F(RefinerFixture, ParameterAndMessageGradientsAccumulateAndMemoryGradientsOverwrite) {
  make_f_live();
  OwnedTensor out(DType::f64, s.shape()), d_s(DType::f64, s.shape());
  OwnedTensor d_distinct(DType::f64, distinct.shape());
  OwnedTensor d_out = random_tensor(s.shape(), 5);
  MemoryRefinerContext ctx;
  refiner.forward(out, ctx, s, mean, gaps, arena);
  store.zero_grad();
  ops::fill(d_distinct, 0.0);
  refiner.backward(d_s, d_distinct, d_out, ctx, arena);
  const auto once = values_of(store.grads());
  const auto ds_once = values_of(d_s), dd_once = values_of(d_distinct);
  refiner.backward(d_s, d_distinct, d_out, ctx, arena);
  const auto twice = values_of(store.grads()), dd_twice = values_of(d_distinct);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_DOUBLE_EQ(twice[i], 2.0 * once[i]);
  for (size_t i = 0; i < dd_once.size(); ++i) EXPECT_DOUBLE_EQ(dd_twice[i], 2.0 * dd_once[i]);
  EXPECT_EQ(values_of(d_s), ds_once);
  // Optional gradients: skipping the messages' leaves d_s and the parameters' share unchanged.
  store.zero_grad();
  refiner.backward(d_s, Tensor{}, d_out, ctx, arena);
  EXPECT_EQ(values_of(d_s), ds_once);
  EXPECT_EQ(values_of(store.grads()), once);
}

TEST_F(RefinerFixture, EmptyBatchIsANoOp) {
  make_f_live();
  OwnedTensor out(DType::f64, Shape(0, kMem)), s0(DType::f64, Shape(0, kMem));
  OwnedTensor m0(DType::f64, Shape(0, kMsg)), dt0(DType::f64, Shape(0));
  MemoryRefinerContext ctx;
  refiner.forward(out, ctx, s0, messages(Terms{}, 0, m0), CopyTimes{dt0}, arena);
  store.zero_grad();
  refiner.backward(Tensor{}, Tensor{}, out, ctx, arena);
  for (double v : values_of(store.grads())) EXPECT_EQ(v, 0.0);
}

TEST_F(RefinerFixture, RejectsMismatchedShapes) {
  OwnedTensor out(DType::f64, s.shape());
  OwnedTensor narrow = random_tensor(Shape(kDistinct, kMsg - 1), 6);
  MemoryRefinerContext ctx;
  EXPECT_ANY_THROW(refiner.forward(out, ctx, s, messages(kLastTerms, kRows - 1), gaps, arena));
  EXPECT_ANY_THROW(refiner.forward(out, ctx, s, messages(kLastTerms, kRows, narrow), gaps, arena));
  const CopyTimes too_few{dt.view().rows(0, kRows - 1)};
  EXPECT_ANY_THROW(refiner.forward(out, ctx, s, mean, too_few, arena));
}

}  // namespace
