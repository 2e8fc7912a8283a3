// The fixture of the TemporalAttentionLayer tests: one case's inputs, parameters and
// gradients, and the plain-loop reference of the layer's output (slot mode).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/model/temporal_attention.h"
#include "unit/model/attn_test_util.h"

namespace dbtest {

using depbloom::Arena;
using depbloom::RngKey;
using depbloom::model::AttentionStyle;
using depbloom::model::TemporalAttentionConfig;
using depbloom::model::TemporalAttentionLayer;
using depbloom::model::TemporalAttentionWeights;

struct TaCase {
  const char* name;
  int64_t R, K, d_in, d_edge, d_time, d_out;
  int heads;
  double scale, slope, dropout;  // scale and slope as the reference applies them
  AttentionStyle style = AttentionStyle::tgl;
  std::string label() const { return name; }
};
inline void PrintTo(const TaCase& c, std::ostream* os) {
  *os << c.label();
}

// Inputs, parameters and gradients of one case; inputs are redrawn until every relu input
// and every attention score is at least kMargin from its kink.
class TaFixture {
 public:
  static constexpr double kMargin = 1e-3;
  explicit TaFixture(const TaCase& c)
      : cfg_{c.d_in,  c.d_edge, c.d_time,  c.d_out, c.heads,
             c.scale, c.slope,  c.dropout, 1e-5,    c.style},
        layer(params.store, "layer", cfg_),
        h_root(Shape(c.R, c.d_in)),
        h_nbr(Shape(c.R, c.K, c.d_in)),
        e(Shape(c.R, c.K, c.d_edge)),
        dt(Shape(c.R, c.K)),
        mask(Shape(c.R, c.K)),
        R(c.R),
        K(c.K) {
    params.finalize();
    for (uint64_t seed = 1; seed < 200; ++seed) {
      Rand rng(seed * 7919 + static_cast<uint64_t>(c.R * 31 + c.K));
      randomise(params, rng);
      h_root.set(rng.vec(h_root.numel()));
      h_nbr.set(rng.vec(h_nbr.numel()));
      e.set(rng.vec(e.numel()));
      dt.set(rng.vec(dt.numel(), 0.05, 5.0));
      mask = make_mask(rng, c.R, c.K);
      proj = rng.vec(c.R * c.d_out);
      double min_relu = INFINITY, min_score = INFINITY;
      reference(nullptr, &min_relu, &min_score);
      if (min_relu >= kMargin && min_score >= kMargin) return;
    }
    ADD_FAILURE() << "no draw kept away from the kinks";
  }

  depbloom::model::TemporalAttentionContext forward(Arena& arena, const Tensor& out) {
    depbloom::model::TemporalAttentionContext ctx;
    layer.forward(out, ctx, h_root, h_nbr, e, dt, mask, dropout(), arena);
    return ctx;
  }
  bool training() const { return cfg_.dropout > 0.0; }
  depbloom::model::DropoutDraw dropout() const {
    return {training(), key, depbloom::ops::DropoutRows(first_row)};
  }

  // The layer's output for the current inputs, projected onto `proj`.
  double loss() {
    Arena arena;
    Guarded<double> out(Shape(R, cfg_.d_out));
    forward(arena, out);
    return project(out.data(), proj);
  }

  // Plain loops. keep is the dropout mask, [R, d_out] (tgl) or [R, d_att] (tgn); nullptr:
  // none, or none applied.
  std::vector<double> reference(const uint8_t* keep, double* min_relu, double* min_score) {
    const auto& c = cfg_;
    const TemporalAttentionWeights w = layer.weights();
    auto d = [](const Tensor& t) { return t.data<double>(); };
    std::vector<double> out;
    for (int64_t r = 0; r < R; ++r) {
      std::vector<double> q_in(h_root.data() + r * c.d_in, h_root.data() + (r + 1) * c.d_in);
      append_time_encoding(q_in, 0.0, d(w.time_w), d(w.time_b), c.d_time);
      const int64_t A = c.d_att();
      auto q = ref_affine(d(w.w_q), d(w.b_q), q_in, A);
      std::vector<std::vector<double>> ks, vs;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t s = r * K + j;
        std::vector<double> x(h_nbr.data() + s * c.d_in, h_nbr.data() + (s + 1) * c.d_in);
        x.insert(x.end(), e.data() + s * c.d_edge, e.data() + (s + 1) * c.d_edge);
        append_time_encoding(x, dt[s], d(w.time_w), d(w.time_b), c.d_time);
        ks.push_back(ref_affine(d(w.w_k), d(w.b_k), x, A));
        vs.push_back(ref_affine(d(w.w_v), d(w.b_v), x, A));
      }
      auto o_in = ref_attention(q, ks, vs, &mask[r * K], c.heads, c.scale, c.slope, min_score);
      if (c.style == AttentionStyle::tgn) {  // dropout, W_p without bias, merge MLP
        for (int64_t i = 0; keep != nullptr && i < A; ++i)
          o_in[i] = keep[r * A + i] ? o_in[i] / (1.0 - c.dropout) : 0.0;
        const std::vector<double> no_bias(static_cast<size_t>(A), 0.0);
        auto m_in = ref_affine(d(w.w_p), no_bias.data(), o_in, A);
        m_in.insert(m_in.end(), h_root.data() + r * c.d_in, h_root.data() + (r + 1) * c.d_in);
        auto hidden = ref_affine(d(w.w_1), d(w.b_1), m_in, c.d_in);
        for (double& v : hidden) {
          *min_relu = std::min(*min_relu, std::fabs(v));
          v = std::max(v, 0.0);
        }
        auto y = ref_affine(d(w.w_2), d(w.b_2), hidden, c.d_out);
        out.insert(out.end(), y.begin(), y.end());
        continue;
      }
      o_in.insert(o_in.end(), h_root.data() + r * c.d_in, h_root.data() + (r + 1) * c.d_in);
      auto z = ref_affine(d(w.w_o), d(w.b_o), o_in, c.d_out);
      for (int64_t i = 0; i < c.d_out; ++i) {
        double& zi = z[static_cast<size_t>(i)];
        if (keep != nullptr) zi = keep[r * c.d_out + i] ? zi / (1.0 - c.dropout) : 0.0;
        if (keep == nullptr || keep[r * c.d_out + i])
          *min_relu = std::min(*min_relu, std::fabs(zi));
        zi = std::max(zi, 0.0);
      }
      auto y = ref_layer_norm(z, d(w.ln_gamma), d(w.ln_beta), c.ln_eps);
      out.insert(out.end(), y.begin(), y.end());
    }
    return out;
  }

  TemporalAttentionConfig cfg_;
  LayerParams params;  // declared before the layer, which declares into it
  TemporalAttentionLayer layer;
  Guarded<double> h_root, h_nbr, e, dt;
  Guarded<uint8_t> mask;
  std::vector<double> proj;
  int64_t R, K;
  RngKey key{42, 4, 1};
  uint64_t first_row = 1000;
};

}  // namespace dbtest
