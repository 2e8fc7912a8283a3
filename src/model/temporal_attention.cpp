// TemporalAttentionLayer: forward and backward of one TGN/TGAT temporal attention layer,
// composed from backend ops (gemm, time encoding, fused attention, dropout, relu, layer
// norm), so the same code runs on every backend. Scratch and context come from the Arena.
#include "depbloom/model/temporal_attention.h"

#include "depbloom/backend/ops.h"
#include "model/attention_common.h"

namespace depbloom::model {

namespace {
constexpr const char* kLayer = "TemporalAttentionLayer";
}

std::vector<Tensor*> TemporalAttentionWeights::all() {
  return {&time_w, &time_b, &w_q, &b_q, &w_k, &b_k, &w_v, &b_v, &w_o, &b_o, &ln_gamma, &ln_beta};
}

TemporalAttentionLayer::TemporalAttentionLayer(const TemporalAttentionConfig& cfg) : cfg_(cfg) {
  DB_ASSERT(cfg.d_in > 0 && cfg.d_edge >= 0 && cfg.d_time > 0 && cfg.d_out > 0,
            "{}: widths must be positive (d_edge may be 0): d_in {}, d_edge {}, d_time {}, "
            "d_out {}",
            kLayer, cfg.d_in, cfg.d_edge, cfg.d_time, cfg.d_out);
  DB_ASSERT(cfg.heads > 0 && cfg.d_out % cfg.heads == 0,
            "{}: d_out {} is not divisible into {} heads", kLayer, cfg.d_out, cfg.heads);
  DB_ASSERT(cfg.dropout >= 0.0 && cfg.dropout < 1.0, "{}: dropout {} is outside [0, 1)", kLayer,
            cfg.dropout);
  shapes_ = parameter_shapes();
}

std::vector<AttentionParamShape> TemporalAttentionLayer::parameter_shapes() const {
  const int64_t o = cfg_.d_out;
  return {{"time_w", Shape(cfg_.d_time)},
          {"time_b", Shape(cfg_.d_time)},
          {"w_q", Shape(o, cfg_.d_q_in())},
          {"b_q", Shape(o)},
          {"w_k", Shape(o, cfg_.d_kv_in())},
          {"b_k", Shape(o)},
          {"w_v", Shape(o, cfg_.d_kv_in())},
          {"b_v", Shape(o)},
          {"w_o", Shape(o, cfg_.d_o_in())},
          {"b_o", Shape(o)},
          {"ln_gamma", Shape(o)},
          {"ln_beta", Shape(o)}};
}

void TemporalAttentionLayer::check_weights(const TemporalAttentionWeights& w,
                                           const char* what) const {
  const auto& shapes = shapes_;
  static constexpr Tensor TemporalAttentionWeights::*kFields[] = {
      &TemporalAttentionWeights::time_w,   &TemporalAttentionWeights::time_b,
      &TemporalAttentionWeights::w_q,      &TemporalAttentionWeights::b_q,
      &TemporalAttentionWeights::w_k,      &TemporalAttentionWeights::b_k,
      &TemporalAttentionWeights::w_v,      &TemporalAttentionWeights::b_v,
      &TemporalAttentionWeights::w_o,      &TemporalAttentionWeights::b_o,
      &TemporalAttentionWeights::ln_gamma, &TemporalAttentionWeights::ln_beta};
  for (size_t i = 0; i < shapes.size(); ++i) {
    DB_ASSERT((w.*kFields[i]).defined() && (w.*kFields[i]).shape() == shapes[i].shape,
              "{}: {} {} is {}, expected shape {}", kLayer, what, shapes[i].name,
              (w.*kFields[i]).str(), shapes[i].shape.str());
  }
}

void TemporalAttentionLayer::forward(TemporalAttentionContext& ctx, const Tensor& out, Arena& arena,
                                     const TemporalAttentionWeights& w, const Tensor& h_root,
                                     const Tensor& h_nbr, const Tensor& e, const Tensor& dt,
                                     const Tensor& mask, bool training, const RngKey& dropout_key,
                                     uint64_t first_row) const {
  using detail::expect_float_like;
  DB_ASSERT(h_root.defined() && h_root.rank() == 2 && is_floating(h_root.dtype()),
            "{}: h_root must be a float [R, d_in] tensor, got {}", kLayer, h_root.str());
  const int64_t R = h_root.dim(0);
  DB_ASSERT(h_nbr.defined() && h_nbr.rank() == 3, "{}: h_nbr must be [R, k, d_in], got {}", kLayer,
            h_nbr.str());
  const int64_t K = h_nbr.dim(1);
  const int64_t N = R * K;
  const auto& c = cfg_;
  expect_float_like(kLayer, "h_root", h_root, h_root, Shape(R, c.d_in));
  expect_float_like(kLayer, "h_nbr", h_nbr, h_root, Shape(R, K, c.d_in));
  // Without edge features the caller may pass Tensor{}; it stands for an [R, k, 0] view.
  const Tensor edges = c.d_edge == 0 && e.raw() == nullptr
                           ? Tensor(nullptr, h_root.dtype(), Shape(R, K, 0), h_root.device())
                           : e;
  expect_float_like(kLayer, "e", edges, h_root, Shape(R, K, c.d_edge));
  expect_float_like(kLayer, "dt", dt, h_root, Shape(R, K));
  expect_float_like(kLayer, "out", out, h_root, Shape(R, c.d_out));
  detail::expect_shape(kLayer, "mask", mask, Shape(R, K));
  DB_ASSERT(mask.dtype() == DType::u8, "{}: mask must be u8, got {}", kLayer, mask.str());
  DB_ASSERT(K > 0, "{}: need at least one neighbour slot per root, got {}", kLayer, h_nbr.str());
  check_weights(w, "weight");

  const DType t = h_root.dtype();
  ctx = TemporalAttentionContext{};
  ctx.roots = R;
  ctx.slots = K;
  ctx.h_root = h_root;
  ctx.h_nbr = h_nbr;
  ctx.e = edges;
  ctx.dt = dt;
  ctx.mask = mask;
  if (R == 0) return;

  // Query side: the root's features and the encoding of a zero time delta.
  ctx.zero_dt = arena.alloc(t, Shape(R));
  ops::fill(ctx.zero_dt, 0.0);
  Tensor te_root = arena.alloc(t, Shape(R, c.d_time));
  ops::time_encode_forward(te_root, ctx.zero_dt, w.time_w, w.time_b);
  ctx.q_in = arena.alloc(t, Shape(R, c.d_q_in()));
  ops::concat_cols(ctx.q_in, {h_root, te_root});
  ctx.q = arena.alloc(t, Shape(R, c.d_out));
  detail::affine_forward(ctx.q, ctx.q_in, w.w_q, w.b_q);

  // Key/value side, one row per (root, slot).
  Tensor te_nbr = arena.alloc(t, Shape(N, c.d_time));
  ops::time_encode_forward(te_nbr, dt.reshape(Shape(N)), w.time_w, w.time_b);
  ctx.kv_in = arena.alloc(t, Shape(N, c.d_kv_in()));
  ops::concat_cols(ctx.kv_in,
                   {h_nbr.reshape(Shape(N, c.d_in)), edges.reshape(Shape(N, c.d_edge)), te_nbr});
  ctx.k = arena.alloc(t, Shape(R, K, c.d_out));
  ctx.v = arena.alloc(t, Shape(R, K, c.d_out));
  detail::affine_forward(ctx.k.reshape(Shape(N, c.d_out)), ctx.kv_in, w.w_k, w.b_k);
  detail::affine_forward(ctx.v.reshape(Shape(N, c.d_out)), ctx.kv_in, w.w_v, w.b_v);

  Tensor att = arena.alloc(t, Shape(R, c.d_out));
  ctx.attn = arena.alloc(t, Shape(R, c.heads, K));
  ops::attention_forward(att, ctx.attn, ctx.q, ctx.k, ctx.v, mask, c.heads, c.scale, c.slope);

  // Output: W_o over [attention || root], dropout, relu, layer norm (TGL's order).
  ctx.o_in = arena.alloc(t, Shape(R, c.d_o_in()));
  ops::concat_cols(ctx.o_in, {att, h_root});
  ctx.act = arena.alloc(t, Shape(R, c.d_out));
  detail::affine_forward(ctx.act, ctx.o_in, w.w_o, w.b_o);
  ctx.dropped = training && c.dropout > 0.0;
  if (ctx.dropped) {
    ctx.keep = arena.alloc(DType::u8, Shape(R, c.d_out));
    ops::dropout_forward(ctx.act, ctx.keep, ctx.act, c.dropout, dropout_key, first_row);
  }
  ops::act_forward(ops::Act::relu, ctx.act, ctx.act);
  ctx.ln_mean = arena.alloc(t, Shape(R));
  ctx.ln_rstd = arena.alloc(t, Shape(R));
  ops::layer_norm_forward(out, ctx.ln_mean, ctx.ln_rstd, ctx.act, w.ln_gamma, w.ln_beta, c.ln_eps);
}

void TemporalAttentionLayer::backward(const Tensor& dh_root, const Tensor& dh_nbr, const Tensor& de,
                                      const TemporalAttentionWeights& grads, const Tensor& dout,
                                      const TemporalAttentionContext& ctx,
                                      const TemporalAttentionWeights& w, Arena& arena) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  const int64_t R = ctx.roots, K = ctx.slots, N = R * K;
  const Tensor& ref = ctx.h_root;
  expect_float_like(kLayer, "dout", dout, ref, Shape(R, c.d_out));
  expect_float_like(kLayer, "dh_root", dh_root, ref, Shape(R, c.d_in));
  const bool want_nbr = dh_nbr.raw() != nullptr;  // Tensor{}: not wanted
  const bool want_e = de.raw() != nullptr;
  if (want_nbr) expect_float_like(kLayer, "dh_nbr", dh_nbr, ref, Shape(R, K, c.d_in));
  if (want_e) expect_float_like(kLayer, "de", de, ref, Shape(R, K, c.d_edge));
  check_weights(w, "weight");
  check_weights(grads, "gradient");
  if (R == 0) return;
  const DType t = ref.dtype();

  // Layer norm, relu, dropout: dz [R, d_out] is the gradient of W_o's output.
  Tensor dz = arena.alloc(t, Shape(R, c.d_out));
  ops::layer_norm_backward(dz, grads.ln_gamma, grads.ln_beta, dout, ctx.act, ctx.ln_mean,
                           ctx.ln_rstd, w.ln_gamma);
  ops::act_backward(ops::Act::relu, dz, dz, ctx.act);
  if (ctx.dropped) ops::dropout_backward(dz, dz, ctx.keep, c.dropout);

  Tensor d_o_in = arena.alloc(t, Shape(R, c.d_o_in()));
  detail::affine_backward(d_o_in, grads.w_o, grads.b_o, dz, ctx.o_in, w.w_o);
  Tensor d_att = arena.alloc(t, Shape(R, c.d_out));
  ops::split_cols({d_att, dh_root}, d_o_in);  // dh_root starts with the skip path

  Tensor dq = arena.alloc(t, Shape(R, c.d_out));
  Tensor dk = arena.alloc(t, Shape(R, K, c.d_out));
  Tensor dv = arena.alloc(t, Shape(R, K, c.d_out));
  ops::attention_backward(dq, dk, dv, d_att, ctx.attn, ctx.q, ctx.k, ctx.v, ctx.mask, c.heads,
                          c.scale, c.slope);

  // Query side: the root's share of dq adds to dh_root; te(0) feeds time_b only.
  Tensor d_q_in = arena.alloc(t, Shape(R, c.d_q_in()));
  detail::affine_backward(d_q_in, grads.w_q, grads.b_q, dq, ctx.q_in, w.w_q);
  Tensor dh_root_q = arena.alloc(t, Shape(R, c.d_in));
  Tensor d_te_root = arena.alloc(t, Shape(R, c.d_time));
  ops::split_cols({dh_root_q, d_te_root}, d_q_in);
  ops::axpy(dh_root, 1.0, dh_root_q);
  ops::time_encode_backward(grads.time_w, grads.time_b, d_te_root, ctx.zero_dt, w.time_w, w.time_b);

  // Key/value side: both projections read kv_in, so their input gradients add up.
  Tensor d_kv_in = arena.alloc(t, Shape(N, c.d_kv_in()));
  const Tensor dk2 = dk.reshape(Shape(N, c.d_out)), dv2 = dv.reshape(Shape(N, c.d_out));
  detail::affine_backward(d_kv_in, grads.w_k, grads.b_k, dk2, ctx.kv_in, w.w_k);
  detail::affine_backward(d_kv_in, grads.w_v, grads.b_v, dv2, ctx.kv_in, w.w_v, true);
  Tensor d_nbr = want_nbr ? dh_nbr.reshape(Shape(N, c.d_in)) : arena.alloc(t, Shape(N, c.d_in));
  Tensor d_e = want_e ? de.reshape(Shape(N, c.d_edge)) : arena.alloc(t, Shape(N, c.d_edge));
  Tensor d_te_nbr = arena.alloc(t, Shape(N, c.d_time));
  ops::split_cols({d_nbr, d_e, d_te_nbr}, d_kv_in);
  ops::time_encode_backward(grads.time_w, grads.time_b, d_te_nbr, ctx.dt.reshape(Shape(N)),
                            w.time_w, w.time_b);
}

}  // namespace depbloom::model
