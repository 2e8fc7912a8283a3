// Tests of TemporalAttentionLayer: the forward against a plain-loop reference written here,
// and every weight and input gradient against central finite differences in float64, with
// a fully masked root, a single-slot root, no edge features, both score forms and dropout.
#include <gtest/gtest.h>

#include <cmath>

#include "depbloom/backend/ops.h"
#include "unit/model/attention_fixture.h"

namespace dbtest {
namespace {

class TemporalAttentionTest : public testing::TestWithParam<TaCase> {};

TEST_P(TemporalAttentionTest, ForwardMatchesPlainLoops) {
  TaFixture f(GetParam());
  Arena arena;
  Guarded<double> out(Shape(f.R, f.cfg_.d_out));
  out.fill_nan();
  auto ctx = f.forward(arena, out);
  const uint8_t* keep = ctx.dropped ? ctx.keep.data<uint8_t>() : nullptr;
  EXPECT_EQ(ctx.dropped, f.training());
  if (ctx.dropped) {  // the mask must both keep and drop, or the case tests nothing
    int64_t kept = 0;
    for (int64_t i = 0; i < ctx.keep.numel(); ++i) kept += ctx.keep.data<uint8_t>()[i];
    EXPECT_GT(kept, 0);
    EXPECT_LT(kept, ctx.keep.numel());
  }
  double m1 = INFINITY, m2 = INFINITY;
  auto ref = f.reference(keep, &m1, &m2);
  EXPECT_TRUE(all_close(out.values(), ref, Tol{1e-12, 1e-10}));
  EXPECT_TRUE(out.guard_intact());
}

TEST_P(TemporalAttentionTest, GradientsMatchFiniteDifferences) {
  TaFixture f(GetParam());
  const auto& c = f.cfg_;
  // Parameter gradients start at 0.25 to check that they accumulate; activation gradients
  // start as NaN to check that they are overwritten.
  f.params.fill_grads(0.25);
  Guarded<double> dh_root(f.h_root.shape()), dh_nbr(f.h_nbr.shape()), de(f.e.shape());
  dh_root.fill_nan();
  dh_nbr.fill_nan();
  de.fill_nan();
  Guarded<double> out(Shape(f.R, c.d_out)), dout(Shape(f.R, c.d_out), f.proj);
  Arena arena;
  auto ctx = f.forward(arena, out);
  f.layer.backward(dh_root, dh_nbr, de, dout, ctx, arena);

  auto loss = [&] { return f.loss(); };
  for (size_t i = 0; i < f.params.size(); ++i) {
    std::vector<double> analytic = f.params.grads(i);
    for (double& g : analytic) g -= 0.25;
    EXPECT_TRUE(layer_grad_close(analytic, numeric_grad(f.params.data(i), f.params.numel(i), loss)))
        << f.params.name(i);
  }
  EXPECT_TRUE(
      layer_grad_close(dh_root.values(), numeric_grad(f.h_root.data(), f.h_root.numel(), loss)))
      << "dh_root";
  EXPECT_TRUE(
      layer_grad_close(dh_nbr.values(), numeric_grad(f.h_nbr.data(), f.h_nbr.numel(), loss)))
      << "dh_nbr";
  EXPECT_TRUE(layer_grad_close(de.values(), numeric_grad(f.e.data(), f.e.numel(), loss))) << "de";
  EXPECT_TRUE(dh_root.guard_intact());
  EXPECT_TRUE(dh_nbr.guard_intact());
  EXPECT_TRUE(de.guard_intact());
}

// Undefined dh_nbr / de skip those gradients without changing the others.
TEST_P(TemporalAttentionTest, OptionalInputGradients) {
  TaFixture f(GetParam());
  const auto& c = f.cfg_;
  Guarded<double> out(Shape(f.R, c.d_out)), dout(Shape(f.R, c.d_out), f.proj);
  Guarded<double> full(f.h_root.shape()), only(f.h_root.shape());
  Guarded<double> dh_nbr(f.h_nbr.shape()), de(f.e.shape());
  Arena arena;
  auto ctx = f.forward(arena, out);
  f.params.fill_grads(0.0);
  f.layer.backward(full, dh_nbr, de, dout, ctx, arena);
  std::vector<std::vector<double>> first;
  for (size_t i = 0; i < f.params.size(); ++i) first.push_back(f.params.grads(i));
  f.params.fill_grads(0.0);
  f.layer.backward(only, Tensor(), Tensor(), dout, ctx, arena);
  EXPECT_TRUE(bitwise_equal(full.values(), only.values()));
  for (size_t i = 0; i < f.params.size(); ++i)
    EXPECT_TRUE(bitwise_equal(first[i], f.params.grads(i))) << f.params.name(i);
}

// The float32 path (the one GPUs run) against float64 on the same inputs (f32_close) for the output
// and for every gradient.
TEST_P(TemporalAttentionTest, Float32MatchesFloat64) {
  TaFixture f(GetParam());
  const auto& c = f.cfg_;
  LayerParams p32(DType::f32);
  const TemporalAttentionLayer layer32(p32.store, "layer", f.cfg_);
  p32.finalize();
  p32.copy_values(f.params);
  f.params.fill_grads(0.0);
  Guarded<float> h_root(f.h_root.shape(), f.h_root.values()),
      h_nbr(f.h_nbr.shape(), f.h_nbr.values());
  Guarded<float> e(f.e.shape(), f.e.values()), dt(f.dt.shape(), f.dt.values());
  const Shape out_shape(f.R, c.d_out);
  Guarded<float> out32(out_shape), dout32(out_shape, f.proj);
  Guarded<double> out64(out_shape), dout64(out_shape, f.proj);
  Guarded<float> dh_root32(f.h_root.shape()), dh_nbr32(f.h_nbr.shape()), de32(f.e.shape());
  Guarded<double> dh_root64(f.h_root.shape()), dh_nbr64(f.h_nbr.shape()), de64(f.e.shape());
  Arena arena;
  depbloom::model::TemporalAttentionContext ctx32;
  layer32.forward(out32, ctx32, h_root, h_nbr, e, dt, f.mask, f.dropout(), arena);
  auto ctx64 = f.forward(arena, out64);
  EXPECT_TRUE(f32_close(out32.values(), out64.values())) << "out";
  layer32.backward(dh_root32, dh_nbr32, de32, dout32, ctx32, arena);
  f.layer.backward(dh_root64, dh_nbr64, de64, dout64, ctx64, arena);
  EXPECT_TRUE(f32_close(dh_root32.values(), dh_root64.values())) << "dh_root";
  EXPECT_TRUE(f32_close(dh_nbr32.values(), dh_nbr64.values())) << "dh_nbr";
  EXPECT_TRUE(f32_close(de32.values(), de64.values())) << "de";
  for (size_t i = 0; i < f.params.size(); ++i) {
    // The keys' bias shifts a head's scores almost alike (exactly, without leaky relu), so
    // its gradient is a sum over every slot that nearly cancels: float32 rounds it to about
    // 1e-7 of its terms, not of the small sum.
    const bool cancels = f.params.name(i) == "layer.b_k";
    EXPECT_TRUE(f32_close(p32.grads(i), f.params.grads(i), cancels ? 1e-2 : 1e-3))
        << f.params.name(i);
  }
}

// Without edge features, Tensor{} for e (and de) gives the result of an [R, k, 0] tensor.
TEST(TemporalAttentionNoEdges, EmptyEdgeTensorMatchesZeroWidth) {
  TaFixture f(TaCase{"no_edge", 4, 3, 4, 0, 2, 6, 3, 1.0, 0.2, 0.0});
  Arena arena;
  Guarded<double> zero_width(Shape(4, 6)), none(Shape(4, 6));
  auto ctx = f.forward(arena, zero_width);
  depbloom::model::TemporalAttentionContext ctx2;
  f.layer.forward(none, ctx2, f.h_root, f.h_nbr, Tensor(), f.dt, f.mask, {}, arena);
  EXPECT_TRUE(bitwise_equal(zero_width.values(), none.values()));
  Guarded<double> dout(Shape(4, 6), f.proj), d1(f.h_root.shape()), d2(f.h_root.shape());
  f.layer.backward(d1, Tensor(), Tensor(), dout, ctx, arena);
  f.layer.backward(d2, Tensor(), Tensor(), dout, ctx2, arena);
  EXPECT_TRUE(bitwise_equal(d1.values(), d2.values()));
}

constexpr double kInvSqrt2 = 0.70710678118654752;
// Output widths stay >= 4: a layer norm over 2 features is degenerate (outputs +-1) and
// ill-conditioned, which would only measure float32 rounding.
INSTANTIATE_TEST_SUITE_P(
    Cases, TemporalAttentionTest,
    testing::Values(TaCase{"tgl_2heads", 5, 4, 3, 2, 3, 4, 2, 1.0, 0.2, 0.0},
                    TaCase{"scaled_dot_no_edge", 4, 3, 4, 0, 2, 6, 3, kInvSqrt2, 1.0, 0.0},
                    TaCase{"one_slot", 3, 1, 2, 1, 2, 4, 1, 1.0, 0.2, 0.0},
                    TaCase{"dropout", 5, 4, 3, 2, 3, 4, 2, 1.0, 0.2, 0.3},
                    // tgn: attention width d_in + d_time, heads of 3 and 2
                    TaCase{"tgn_2heads", 5, 4, 3, 2, 3, 4, 2, 1 / std::sqrt(3.0), 1.0, 0.0,
                           AttentionStyle::tgn},
                    TaCase{"tgn_no_edge", 4, 3, 4, 0, 2, 5, 3, kInvSqrt2, 1.0, 0.0,
                           AttentionStyle::tgn},
                    TaCase{"tgn_one_slot", 3, 1, 2, 1, 2, 4, 1, 0.5, 1.0, 0.0, AttentionStyle::tgn},
                    // d_in + d_time = 5 rounds up to 6 for 2 heads
                    TaCase{"tgn_rounded_width", 4, 3, 3, 1, 2, 4, 2, 1 / std::sqrt(3.0), 1.0, 0.0,
                           AttentionStyle::tgn},
                    TaCase{"tgn_dropout", 5, 4, 3, 2, 3, 4, 2, 1 / std::sqrt(3.0), 1.0, 0.3,
                           AttentionStyle::tgn}),
    CaseName());

TEST(TemporalAttentionWidths, TgnStyleAttendsOverTheQueryWidthRoundedToHeads) {
  TemporalAttentionConfig c{3, 1, 2, 4, 2};
  EXPECT_EQ(c.d_att(), 4);  // tgl: d_out
  c.style = AttentionStyle::tgn;
  EXPECT_EQ(c.d_att(), 6);  // d_in + d_time = 5, rounded up for 2 heads
  c.heads = 5;
  EXPECT_EQ(c.d_att(), 5);
  depbloom::model::ParameterStore store;
  const TemporalAttentionLayer layer(store, "layer", c);
  EXPECT_DOUBLE_EQ(layer.config().scale, 1.0);  // 1 / sqrt(5 / 5)
  EXPECT_DOUBLE_EQ(layer.config().slope, 1.0);
}

TEST(TemporalAttentionErrors, WrongShapesThrowNamingTheArgument) {
  TaFixture f(TaCase{"tgl", 3, 2, 3, 2, 2, 4, 2, 1.0, 0.2, 0.0});
  Arena arena;
  Guarded<double> out(Shape(3, 4)), bad_e(Shape(3, 2, 3));
  depbloom::model::TemporalAttentionContext ctx;
  try {
    f.layer.forward(out, ctx, f.h_root, f.h_nbr, bad_e, f.dt, f.mask, {}, arena);
    FAIL() << "no error";
  } catch (const depbloom::Error& err) {
    EXPECT_NE(std::string(err.what()).find("e is"), std::string::npos) << err.what();
  }
  depbloom::model::ParameterStore store;
  EXPECT_THROW(TemporalAttentionLayer(store, "odd", TemporalAttentionConfig{3, 0, 2, 5, 2}),
               depbloom::Error);
}

}  // namespace
}  // namespace dbtest
