// Tests of ApanMemoryUpdater: the forward against a plain-loop reference of the stated
// equation, and every weight, memory and mail gradient against central finite differences
// in float64, with an empty mailbox, a one-mail mailbox, no time encoding and dropout.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "depbloom/core/arena.h"
#include "depbloom/model/apan_updater.h"
#include "unit/model/attn_test_util.h"

namespace dbtest {
namespace {

using depbloom::Arena;
using depbloom::RngKey;
using depbloom::model::ApanMemoryUpdater;
using depbloom::model::ApanUpdaterConfig;
using depbloom::model::ApanUpdaterContext;
using depbloom::model::ApanUpdaterWeights;
using depbloom::model::DropoutDraw;

struct ApanCase {
  const char* name;
  int64_t B, S, d_mem, d_mail, d_time;
  int heads;
  double dropout;
  std::string label() const { return name; }
};
void PrintTo(const ApanCase& c, std::ostream* os) {
  *os << c.label();
}

// Inputs are redrawn until every relu input and attention score is kMargin from its kink.
class ApanFixture {
 public:
  static constexpr double kMargin = 1e-3;
  explicit ApanFixture(const ApanCase& c)
      : cfg{c.d_mem, c.d_mail, c.d_time, c.heads, 1.0, 0.2, c.dropout, 1e-5},
        layer(params.store, "memory_updater", cfg),
        memory(Shape(c.B, c.d_mem)),
        mail(Shape(c.B, c.S, c.d_mail)),
        mail_ts(Shape(c.B, c.S)),
        t(Shape(c.B)),
        mask(Shape(c.B, c.S)),
        B(c.B),
        S(c.S) {
    params.finalize();
    for (uint64_t seed = 1; seed < 200; ++seed) {
      Rand rng(seed * 104729 + static_cast<uint64_t>(c.B * 17 + c.S));
      randomise(params, rng);
      memory.set(rng.vec(memory.numel()));
      mail.set(rng.vec(mail.numel()));
      t.set(rng.vec(B, 10.0, 20.0));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) mail_ts[b * S + s] = t[b] - rng.uniform(0.1, 8.0);
      mask = make_mask(rng, B, S);
      proj = rng.vec(B * c.d_mem);
      double min_relu = INFINITY, min_score = INFINITY;
      reference(nullptr, &min_relu, &min_score);
      if (min_relu >= kMargin && min_score >= kMargin) return;
    }
    ADD_FAILURE() << "no draw kept away from the kinks";
  }

  bool training() const { return cfg.dropout > 0.0; }
  depbloom::model::DropoutDraw dropout() const {
    return {training(), key, depbloom::ops::DropoutRows(first_row)};
  }
  ApanUpdaterContext forward(Arena& arena, const Tensor& out) {
    ApanUpdaterContext ctx;
    layer.forward(out, ctx, memory, mail, mail_ts, t, mask, dropout(), arena);
    return ctx;
  }
  double loss() {
    Arena arena;
    Guarded<double> out(Shape(B, cfg.d_mem));
    forward(arena, out);
    return project(out.data(), proj);
  }

  // s' = relu(dropout(LayerNorm(attention + s) W_o^T + b_o)), in plain loops.
  std::vector<double> reference(const uint8_t* keep, double* min_relu, double* min_score) {
    const auto& c = cfg;
    const ApanUpdaterWeights w = layer.weights();
    auto d = [](const Tensor& x) { return x.data<double>(); };
    std::vector<double> out;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> s(memory.data() + b * c.d_mem, memory.data() + (b + 1) * c.d_mem);
      auto q = ref_affine(d(w.w_q), d(w.b_q), s, c.d_mem);
      std::vector<std::vector<double>> ks, vs;
      for (int64_t j = 0; j < S; ++j) {
        const int64_t slot = b * S + j;
        std::vector<double> x(mail.data() + slot * c.d_mail, mail.data() + (slot + 1) * c.d_mail);
        if (c.d_time > 0)
          append_time_encoding(x, t[b] - mail_ts[slot], d(w.time_w), d(w.time_b), c.d_time);
        ks.push_back(ref_affine(d(w.w_k), d(w.b_k), x, c.d_mem));
        vs.push_back(ref_affine(d(w.w_v), d(w.b_v), x, c.d_mem));
      }
      auto a = ref_attention(q, ks, vs, &mask[b * S], c.heads, c.scale, c.slope, min_score);
      for (int64_t i = 0; i < c.d_mem; ++i) a[static_cast<size_t>(i)] += s[static_cast<size_t>(i)];
      auto n = ref_layer_norm(a, d(w.ln_gamma), d(w.ln_beta), c.ln_eps);
      auto z = ref_affine(d(w.w_o), d(w.b_o), n, c.d_mem);
      for (int64_t i = 0; i < c.d_mem; ++i) {
        double& zi = z[static_cast<size_t>(i)];
        if (keep != nullptr) zi = keep[b * c.d_mem + i] ? zi / (1.0 - c.dropout) : 0.0;
        if (keep == nullptr || keep[b * c.d_mem + i])
          *min_relu = std::min(*min_relu, std::fabs(zi));
        out.push_back(std::max(zi, 0.0));
      }
    }
    return out;
  }

  ApanUpdaterConfig cfg;
  LayerParams params;  // declared before the layer, which declares into it
  ApanMemoryUpdater layer;
  Guarded<double> memory, mail, mail_ts, t;
  Guarded<uint8_t> mask;
  std::vector<double> proj;
  int64_t B, S;
  RngKey key{7, 4, 2};
  uint64_t first_row = 500;
};

class ApanUpdaterTest : public testing::TestWithParam<ApanCase> {};

TEST_P(ApanUpdaterTest, ForwardMatchesPlainLoops) {
  ApanFixture f(GetParam());
  Arena arena;
  Guarded<double> out(Shape(f.B, f.cfg.d_mem));
  out.fill_nan();
  auto ctx = f.forward(arena, out);
  EXPECT_EQ(ctx.dropped, f.training());
  if (ctx.dropped) {  // the mask must both keep and drop, or the case tests nothing
    int64_t kept = 0;
    for (int64_t i = 0; i < ctx.keep.numel(); ++i) kept += ctx.keep.data<uint8_t>()[i];
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, ctx.keep.numel());
  }
  double m1 = INFINITY, m2 = INFINITY;
  auto ref = f.reference(ctx.dropped ? ctx.keep.data<uint8_t>() : nullptr, &m1, &m2);
  EXPECT_TRUE(all_close(out.values(), ref, Tol{1e-12, 1e-10}));
  EXPECT_TRUE(out.guard_intact());
}

TEST_P(ApanUpdaterTest, GradientsMatchFiniteDifferences) {
  ApanFixture f(GetParam());
  // Parameter gradients start at -0.5 (they must accumulate), input gradients as NaN
  // (they must be overwritten).
  f.params.fill_grads(-0.5);
  Guarded<double> d_memory(f.memory.shape()), d_mail(f.mail.shape());
  d_memory.fill_nan();
  d_mail.fill_nan();
  Guarded<double> out(Shape(f.B, f.cfg.d_mem)), dout(Shape(f.B, f.cfg.d_mem), f.proj);
  Arena arena;
  auto ctx = f.forward(arena, out);
  f.layer.backward(d_memory, d_mail, dout, ctx, arena);

  auto loss = [&] { return f.loss(); };
  for (size_t i = 0; i < f.params.size(); ++i) {
    std::vector<double> analytic = f.params.grads(i);
    for (double& g : analytic) g += 0.5;
    EXPECT_TRUE(layer_grad_close(analytic, numeric_grad(f.params.data(i), f.params.numel(i), loss)))
        << f.params.name(i);
  }
  EXPECT_TRUE(
      layer_grad_close(d_memory.values(), numeric_grad(f.memory.data(), f.memory.numel(), loss)))
      << "d_memory";
  EXPECT_TRUE(layer_grad_close(d_mail.values(), numeric_grad(f.mail.data(), f.mail.numel(), loss)))
      << "d_mail";
  EXPECT_TRUE(d_memory.guard_intact());
  EXPECT_TRUE(d_mail.guard_intact());
  // dout is an input of the backward: it must come back unchanged.
  EXPECT_TRUE(bitwise_equal(dout.values(), f.proj));
}

// Without d_mail the other gradients are unchanged, bit for bit.
TEST_P(ApanUpdaterTest, OptionalMailGradient) {
  ApanFixture f(GetParam());
  Guarded<double> out(Shape(f.B, f.cfg.d_mem)), dout(Shape(f.B, f.cfg.d_mem), f.proj);
  Guarded<double> full(f.memory.shape()), only(f.memory.shape()), d_mail(f.mail.shape());
  Arena arena;
  auto ctx = f.forward(arena, out);
  f.params.fill_grads(0.0);
  f.layer.backward(full, d_mail, dout, ctx, arena);
  std::vector<std::vector<double>> first;
  for (size_t i = 0; i < f.params.size(); ++i) first.push_back(f.params.grads(i));
  f.params.fill_grads(0.0);
  f.layer.backward(only, Tensor(), dout, ctx, arena);
  EXPECT_TRUE(bitwise_equal(full.values(), only.values()));
  for (size_t i = 0; i < f.params.size(); ++i)
    EXPECT_TRUE(bitwise_equal(first[i], f.params.grads(i))) << f.params.name(i);
}

// The float32 path (the one GPUs run) against float64 on the same inputs (f32_close) for the new
// memory and for every gradient.
TEST_P(ApanUpdaterTest, Float32MatchesFloat64) {
  ApanFixture f(GetParam());
  LayerParams p32(DType::f32);
  const ApanMemoryUpdater layer32(p32.store, "memory_updater", f.cfg);
  p32.finalize();
  p32.copy_values(f.params);
  f.params.fill_grads(0.0);
  Guarded<float> memory(f.memory.shape(), f.memory.values()), mail(f.mail.shape(), f.mail.values());
  Guarded<float> mail_ts(f.mail_ts.shape(), f.mail_ts.values()), t(f.t.shape(), f.t.values());
  const Shape out_shape(f.B, f.cfg.d_mem);
  Guarded<float> out32(out_shape), dout32(out_shape, f.proj);
  Guarded<double> out64(out_shape), dout64(out_shape, f.proj);
  Guarded<float> d_memory32(f.memory.shape()), d_mail32(f.mail.shape());
  Guarded<double> d_memory64(f.memory.shape()), d_mail64(f.mail.shape());
  Arena arena;
  ApanUpdaterContext ctx32;
  layer32.forward(out32, ctx32, memory, mail, mail_ts, t, f.mask, f.dropout(), arena);
  auto ctx64 = f.forward(arena, out64);
  EXPECT_TRUE(f32_close(out32.values(), out64.values())) << "new memory";
  layer32.backward(d_memory32, d_mail32, dout32, ctx32, arena);
  f.layer.backward(d_memory64, d_mail64, dout64, ctx64, arena);
  EXPECT_TRUE(f32_close(d_memory32.values(), d_memory64.values())) << "d_memory";
  EXPECT_TRUE(f32_close(d_mail32.values(), d_mail64.values())) << "d_mail";
  for (size_t i = 0; i < f.params.size(); ++i)
    EXPECT_TRUE(f32_close(p32.grads(i), f.params.grads(i))) << f.params.name(i);
}

// Output widths stay >= 4: a layer norm over 2 features is degenerate (outputs +-1) and
// ill-conditioned, which would only measure float32 rounding.
INSTANTIATE_TEST_SUITE_P(Cases, ApanUpdaterTest,
                         testing::Values(ApanCase{"two_heads", 5, 4, 4, 3, 3, 2, 0.0},
                                         ApanCase{"no_time_encoding", 4, 3, 6, 2, 0, 3, 0.0},
                                         ApanCase{"one_slot", 3, 1, 4, 3, 2, 1, 0.0},
                                         ApanCase{"dropout", 5, 4, 4, 3, 3, 2, 0.25}),
                         CaseName());

TEST(ApanUpdaterErrors, WrongShapesThrow) {
  ApanFixture f(ApanCase{"two_heads", 3, 2, 4, 3, 2, 2, 0.0});
  Arena arena;
  ApanUpdaterContext ctx;
  Guarded<double> out(Shape(3, 4)), bad_ts(Shape(3, 3));
  try {
    f.layer.forward(out, ctx, f.memory, f.mail, bad_ts, f.t, f.mask, {}, arena);
    FAIL() << "no error";
  } catch (const depbloom::Error& err) {
    EXPECT_NE(std::string(err.what()).find("mail_ts"), std::string::npos) << err.what();
  }
  depbloom::model::ParameterStore store;
  EXPECT_THROW(ApanMemoryUpdater(store, "odd", ApanUpdaterConfig{6, 3, 2, 4}), depbloom::Error);
}

}  // namespace
}  // namespace dbtest
