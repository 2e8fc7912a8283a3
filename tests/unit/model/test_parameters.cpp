// ParameterStore (sorted deterministic layout, seeded identical init, views, zero_grad,
// Adam) and NodeState (reset, gathers, mailbox ring).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "depbloom/core/error.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"

namespace {

using namespace depbloom;
using namespace depbloom::model;

std::vector<double> values_of(const ParameterStore& store) {
  std::vector<double> out(static_cast<size_t>(store.numel()));
  const Tensor& v = store.values();
  for (int64_t i = 0; i < store.numel(); ++i)
    out[static_cast<size_t>(i)] =
        v.dtype() == DType::f64 ? v.data<double>()[i] : v.data<float>()[i];
  return out;
}

// Declares the same three parameters in the given order.
void declare_three(ParameterStore& store, bool reversed) {
  auto w = [&] { store.declare("b.weight", Shape(3, 4), InitScheme::uniform_fan_in, 4); };
  auto a = [&] { store.declare("a.w", Shape(5), InitScheme::time_frequencies); };
  auto c = [&] { store.declare("c.bias", Shape(2), InitScheme::ones); };
  if (reversed) {
    c();
    w();
    a();
  } else {
    a();
    w();
    c();
  }
  store.finalize();
}

TEST(ParameterStore, LayoutIsSortedByNameWhateverTheDeclarationOrder) {
  ParameterStore first(DType::f64), second(DType::f64);
  declare_three(first, false);
  declare_three(second, true);
  ASSERT_EQ(first.numel(), 5 + 12 + 2);
  const std::vector<std::string> names{"a.w", "b.weight", "c.bias"};
  const std::vector<int64_t> offsets{0, 5, 17};
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(first.entries()[i].name, names[i]);
    EXPECT_EQ(second.entries()[i].name, names[i]);
    EXPECT_EQ(first.entries()[i].offset, offsets[i]);
    EXPECT_EQ(second.entries()[i].offset, offsets[i]);
  }
  first.initialize(3);
  second.initialize(3);
  EXPECT_EQ(values_of(first), values_of(second));
  // Views by name point into the flat buffer at the sorted offset.
  EXPECT_EQ(first.value("b.weight").shape(), Shape(3, 4));
  EXPECT_EQ(first.value("b.weight").data<double>(), first.values().data<double>() + 5);
  EXPECT_EQ(first.grad("c.bias").data<double>(), first.grads().data<double>() + 17);
}

TEST(ParameterStore, InitIsSeededDistinctPerParameterAndBounded) {
  ParameterStore a(DType::f64), b(DType::f64), c(DType::f64);
  for (auto* s : {&a, &b, &c}) {
    s->declare("x", Shape(4, 8), InitScheme::uniform_fan_in, 8);
    s->declare("y", Shape(4, 8), InitScheme::uniform_fan_in, 8);
    s->finalize();
  }
  a.initialize(1);
  b.initialize(1);
  c.initialize(2);
  EXPECT_EQ(values_of(a), values_of(b));
  EXPECT_NE(values_of(a), values_of(c));
  const auto v = values_of(a);
  const double bound = 1.0 / std::sqrt(8.0);
  for (double x : v) EXPECT_LE(std::fabs(x), bound);
  // x and y have the same shape and scheme but draw different numbers.
  EXPECT_FALSE(std::equal(v.begin(), v.begin() + 32, v.begin() + 32));
}

TEST(ParameterStore, FloatInitEqualsDoubleInitRounded) {
  ParameterStore narrow(DType::f32), wide(DType::f64);
  for (auto* s : {&narrow, &wide}) {
    s->declare("fc.weight", Shape(6, 5), InitScheme::uniform_fan_in, 5);
    s->declare("time.w", Shape(7), InitScheme::time_frequencies);
    s->finalize();
    s->initialize(9);
  }
  const auto n = values_of(narrow), w = values_of(wide);
  for (size_t i = 0; i < n.size(); ++i)
    EXPECT_EQ(n[i], static_cast<double>(static_cast<float>(w[i])));
}

TEST(ParameterStore, SchemesZerosOnesAndTimeFrequencies) {
  ParameterStore store(DType::f64);
  auto z = store.declare("z", Shape(3), InitScheme::zeros);
  auto o = store.declare("o", Shape(3), InitScheme::ones);
  auto t = store.declare("t", Shape(4), InitScheme::time_frequencies);
  store.finalize();
  store.initialize(1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(store.value(z).data<double>()[i], 0.0);
    EXPECT_EQ(store.value(o).data<double>()[i], 1.0);
  }
  const double expected[4] = {1.0, 1e-3, 1e-6, 1e-9};  // 1 / 10^linspace(0, 9, 4)
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(store.value(t).data<double>()[i], expected[i], 1e-20);
}

// Xavier schemes: uniform within sqrt(6 / (fan_in + fan_out)) and filling it; normal with
// variance 2 / (fan_in + fan_out) (8000 draws: the sample deviation is within 5%, the mean
// within 5 standard errors of 0).
TEST(ParameterStore, XavierSchemes) {
  ParameterStore store(DType::f64);
  auto u = store.declare("u", Shape(80, 100), InitScheme::xavier_uniform, 100, 240);
  auto n = store.declare("n", Shape(80, 100), InitScheme::xavier_normal, 100, 60);
  store.finalize();
  store.initialize(5);
  const double* pu = store.value(u).data<double>();
  const double* pn = store.value(n).data<double>();
  const double bound = std::sqrt(6.0 / 340.0), sd = std::sqrt(2.0 / 160.0);
  double lo = 0, hi = 0, mean = 0, sq = 0;
  for (int i = 0; i < 8000; ++i) {
    lo = std::min(lo, pu[i]);
    hi = std::max(hi, pu[i]);
    mean += pn[i] / 8000;
    sq += pn[i] * pn[i] / 8000;
  }
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, -0.99 * bound);
  EXPECT_GT(hi, 0.99 * bound);
  EXPECT_NEAR(mean, 0.0, 5 * sd / std::sqrt(8000.0));
  EXPECT_NEAR(std::sqrt(sq - mean * mean), sd, 0.05 * sd);
  ParameterStore bad;
  EXPECT_THROW(bad.declare("w", Shape(2, 2), InitScheme::xavier_normal, 2, 0), Error);
}

TEST(ParameterStore, ZeroGradAndAdamStep) {
  ParameterStore store(DType::f64);
  auto w = store.declare("w", Shape(4), InitScheme::ones);
  store.finalize();
  store.initialize(1);
  for (int i = 0; i < 4; ++i) store.grad(w).data<double>()[i] = i % 2 ? 1.0 : -1.0;
  ops::AdamConfig cfg;
  cfg.lr = 0.1;
  store.adam_step(cfg);
  EXPECT_EQ(store.adam_steps(), 1);
  // The first Adam step moves each weight by lr against the gradient's sign.
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(store.value(w).data<double>()[i], i % 2 ? 0.9 : 1.1, 1e-6);
  store.zero_grad();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(store.grad(w).data<double>()[i], 0.0);
}

TEST(ParameterStore, MisuseIsAnError) {
  ParameterStore store(DType::f64);
  store.declare("w", Shape(2), InitScheme::zeros);
  EXPECT_THROW(store.declare("w", Shape(2), InitScheme::zeros), Error);
  EXPECT_THROW(store.declare("u", Shape(2), InitScheme::uniform_fan_in, 0), Error);
  EXPECT_THROW(store.value("w"), Error);  // before finalize
  store.finalize();
  EXPECT_THROW(store.declare("v", Shape(2), InitScheme::zeros), Error);
  EXPECT_THROW(store.value("missing"), Error);
}

// "k" and "v" with "p" and "q" sorting between them; with v placed after k, both read as
// one [6, 4] matrix, and every parameter keeps its initial values and canonical offset.
TEST(ParameterStore, PlacementStacksWithoutChangingValuesOrCheckpointOrder) {
  ParameterStore plain(DType::f64), placed(DType::f64);
  for (auto* s : {&plain, &placed}) {
    const ParamId k = s->declare("w_k", Shape(3, 4), InitScheme::uniform_fan_in, 4);
    s->declare("w_p", Shape(2), InitScheme::uniform_fan_in, 2);
    s->declare("w_q", Shape(5), InitScheme::xavier_normal, 5, 5);
    const ParamId v = s->declare("w_v", Shape(3, 4), InitScheme::uniform_fan_in, 4);
    if (s == &placed) s->place_after(v, k);
    s->finalize();
    s->initialize(11);
  }
  std::vector<std::string> names;
  for (const auto& e : placed.entries()) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"w_k", "w_v", "w_p", "w_q"}));
  for (const char* name : {"w_k", "w_p", "w_q", "w_v"}) {
    const Tensor a = plain.value(name), b = placed.value(name);
    EXPECT_TRUE(std::equal(a.data<double>(), a.data<double>() + a.numel(), b.data<double>()))
        << name << " drew other initial values";
  }
  const Tensor kv = placed.stacked(placed.find("w_k"), placed.find("w_v"), false);
  EXPECT_EQ(kv.shape(), Shape(6, 4));
  EXPECT_EQ(kv.data<double>(), placed.value("w_k").data<double>());
  EXPECT_EQ(kv.data<double>() + 12, placed.value("w_v").data<double>());
  EXPECT_EQ(placed.stacked(placed.find("w_k"), placed.find("w_v"), true).data<double>(),
            placed.grad("w_k").data<double>());
  // In canonical order the placed store's blob is the plain store's, and back again.
  OwnedTensor canonical(DType::f64, Shape(placed.numel())), back(DType::f64, Shape(placed.numel()));
  placed.to_canonical(canonical, placed.values());
  const std::vector<double> want = values_of(plain);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), canonical.view().data<double>()));
  placed.from_canonical(back, canonical);
  EXPECT_TRUE(std::equal(back.view().data<double>(), back.view().data<double>() + placed.numel(),
                         placed.values().data<double>()));
  // Only a placed pair stacks.
  EXPECT_THROW(placed.stacked(placed.find("w_p"), placed.find("w_q"), false), Error);
}

TEST(ParameterStore, PlacementMisuseIsAnError) {
  ParameterStore store(DType::f64);
  const ParamId a = store.declare("a", Shape(2), InitScheme::zeros);
  const ParamId b = store.declare("b", Shape(2), InitScheme::zeros);
  const ParamId c = store.declare("c", Shape(2), InitScheme::zeros);
  EXPECT_THROW(store.place_after(a, a), Error);
  store.place_after(b, a);
  EXPECT_THROW(store.place_after(c, b), Error);  // b is placed: no chains
  EXPECT_THROW(store.place_after(a, c), Error);  // a has b after it
  store.finalize();
  EXPECT_THROW(store.place_after(c, a), Error);  // after finalize
}

TEST(NodeState, ResetGatherAndMailboxRing) {
  NodeState state(5, 3, 2, 2, DType::f64);
  double* mem = state.memory().data<double>();
  for (int64_t i = 0; i < state.memory().numel(); ++i) mem[i] = static_cast<double>(i + 1);
  double* last = state.last_update().data<double>();
  for (int i = 0; i < 5; ++i) last[i] = 10.0 + i;
  double* mail = state.mail().data<double>();
  for (int64_t i = 0; i < state.mail().numel(); ++i) mail[i] = 100.0 + static_cast<double>(i);
  double* mail_ts = state.mail_ts().data<double>();
  for (int64_t i = 0; i < state.mail_ts().numel(); ++i) mail_ts[i] = 0.5 * static_cast<double>(i);

  std::vector<int64_t> ids{3, -1, 0};
  const Tensor idx = Tensor::wrap(ids.data(), Shape(3));
  OwnedTensor m(DType::f64, Shape(3, 3)), t(DType::f64, Shape(3));
  OwnedTensor mb(DType::f64, Shape(3, 2, 2)), mt(DType::f64, Shape(3, 2));
  state.gather(model::MemoryRows{m, t, mb, mt}, idx);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(m.data<double>()[c], mem[3 * 3 + c]);
    EXPECT_EQ(m.data<double>()[3 + c], 0.0);  // padding row
    EXPECT_EQ(m.data<double>()[6 + c], mem[c]);
  }
  EXPECT_EQ(t.data<double>()[0], 13.0);
  EXPECT_EQ(t.data<double>()[1], 0.0);
  EXPECT_EQ(t.data<double>()[2], 10.0);
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(mb.data<double>()[e], mail[3 * 4 + e]);
    EXPECT_EQ(mb.data<double>()[8 + e], mail[e]);
  }
  EXPECT_EQ(mt.data<double>()[0], mail_ts[6]);
  EXPECT_EQ(mt.data<double>()[5], mail_ts[1]);

  // The ring hands out slots 0, 1, 0, ... and keeps at most `slots` mails.
  EXPECT_EQ(state.newest_mail_slot(2), -1);
  EXPECT_EQ(state.claim_mail_slot(2), 0);
  EXPECT_EQ(state.claim_mail_slot(2), 1);
  EXPECT_EQ(state.newest_mail_slot(2), 1);
  EXPECT_EQ(state.claim_mail_slot(2), 0);
  EXPECT_EQ(state.mail_count(2), 2);
  EXPECT_EQ(state.newest_mail_slot(2), 0);

  state.reset();
  for (int64_t i = 0; i < state.memory().numel(); ++i) EXPECT_EQ(mem[i], 0.0);
  for (int64_t i = 0; i < state.mail().numel(); ++i) EXPECT_EQ(mail[i], 0.0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(last[i], 0.0);
  EXPECT_EQ(state.mail_count(2), 0);
  EXPECT_EQ(state.claim_mail_slot(2), 0);
  EXPECT_THROW(state.claim_mail_slot(5), Error);
}

}  // namespace
