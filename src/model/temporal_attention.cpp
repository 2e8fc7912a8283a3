// TemporalAttentionLayer: forward and backward of one TGN/TGAT temporal attention layer,
// composed from backend ops (gemm, time encoding, fused attention, dropout, relu, layer
// norm), so the same code runs on every backend. Scratch and context come from the Arena.
#include "depbloom/model/temporal_attention.h"

#include <cmath>

#include "depbloom/backend/ops.h"
#include "model/attention_common.h"

namespace depbloom::model {

namespace {
constexpr const char* kLayer = "TemporalAttentionLayer";
}

TemporalAttentionLayer::TemporalAttentionLayer(ParameterStore& store, const std::string& name,
                                               const TemporalAttentionConfig& cfg)
    : store_(&store), cfg_(cfg) {
  DB_ASSERT(cfg.d_in > 0 && cfg.d_edge >= 0 && cfg.d_time > 0 && cfg.d_out > 0,
            "{}: widths must be positive (d_edge may be 0): d_in {}, d_edge {}, d_time {}, "
            "d_out {}",
            kLayer, cfg.d_in, cfg.d_edge, cfg.d_time, cfg.d_out);
  DB_ASSERT(cfg.heads > 0 && cfg.d_att() % cfg.heads == 0,
            "{}: attention width {} is not divisible into {} heads", kLayer, cfg.d_att(),
            cfg.heads);
  DB_ASSERT(cfg.dropout >= 0.0 && cfg.dropout < 1.0, "{}: dropout {} is outside [0, 1)", kLayer,
            cfg.dropout);
  if (cfg_.style == AttentionStyle::tgn) {  // torch's scaled dot-product attention
    cfg_.scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_att() / cfg_.heads));
    cfg_.slope = 1.0;
  }
  declare(store, name + ".");
}

// torch's initialisation: nn.Linear (U(+-1/sqrt(fan_in)), biases from their weight's fan-in)
// for TGL's layer; for the TGN authors' layer, MultiheadAttention's input projections
// xavier-uniform (over the stacked [3A, A] weight when Q, K and V all read A columns) with
// zero biases, its output projection W_p as nn.Linear, and MergeLayer's weights xavier-normal.
void TemporalAttentionLayer::declare(ParameterStore& store, const std::string& p) {
  const auto& c = cfg_;
  const int64_t a = c.d_att(), o = c.d_out, q_in = c.d_q_in(), kv_in = c.d_kv_in();
  const bool tgn = c.style == AttentionStyle::tgn;
  ids_.time_w = store.declare(p + "time_w", Shape(c.d_time), InitScheme::time_frequencies);
  ids_.time_b = store.declare(p + "time_b", Shape(c.d_time), InitScheme::zeros);
  const bool stacked = a == q_in && kv_in == q_in;
  const InitScheme proj = tgn ? InitScheme::xavier_uniform : InitScheme::uniform_fan_in;
  const InitScheme bias = tgn ? InitScheme::zeros : InitScheme::uniform_fan_in;
  const int64_t fan_out = tgn && stacked ? 3 * a : a;
  ids_.w_q = store.declare(p + "w_q", Shape(a, q_in), proj, q_in, fan_out);
  ids_.b_q = store.declare(p + "b_q", Shape(a), bias, q_in, a);
  ids_.w_k = store.declare(p + "w_k", Shape(a, kv_in), proj, kv_in, fan_out);
  ids_.b_k = store.declare(p + "b_k", Shape(a), bias, kv_in, a);
  ids_.w_v = store.declare(p + "w_v", Shape(a, kv_in), proj, kv_in, fan_out);
  ids_.b_v = store.declare(p + "b_v", Shape(a), bias, kv_in, a);
  // Keys and values project the same input: stored stacked, they are one GEMM.
  store.place_after(ids_.w_v, ids_.w_k);
  store.place_after(ids_.b_v, ids_.b_k);
  const InitScheme linear = InitScheme::uniform_fan_in;
  if (!tgn) {
    ids_.w_o = store.declare(p + "w_o", Shape(o, c.d_o_in()), linear, c.d_o_in(), o);
    ids_.b_o = store.declare(p + "b_o", Shape(o), linear, c.d_o_in(), o);
    ids_.ln_gamma = store.declare(p + "ln_gamma", Shape(o), InitScheme::ones);
    ids_.ln_beta = store.declare(p + "ln_beta", Shape(o), InitScheme::zeros);
    return;
  }
  const InitScheme merge = InitScheme::xavier_normal;
  ids_.w_p = store.declare(p + "w_p", Shape(a, a), linear, a, a);
  ids_.w_1 = store.declare(p + "w_1", Shape(c.d_in, c.d_o_in()), merge, c.d_o_in(), c.d_in);
  ids_.b_1 = store.declare(p + "b_1", Shape(c.d_in), linear, c.d_o_in(), c.d_in);
  ids_.w_2 = store.declare(p + "w_2", Shape(o, c.d_in), merge, c.d_in, o);
  ids_.b_2 = store.declare(p + "b_2", Shape(o), linear, c.d_in, o);
}

TemporalAttentionWeights TemporalAttentionLayer::views(bool grads) const {
  auto at = [&](ParamId id) { return store_->view(id, grads); };
  const Ids& i = ids_;
  return {at(i.time_w),
          at(i.time_b),
          at(i.w_q),
          at(i.b_q),
          at(i.w_k),
          at(i.b_k),
          at(i.w_v),
          at(i.b_v),
          at(i.w_o),
          at(i.b_o),
          at(i.ln_gamma),
          at(i.ln_beta),
          at(i.w_p),
          at(i.w_1),
          at(i.b_1),
          at(i.w_2),
          at(i.b_2),
          store_->stacked(i.w_k, i.w_v, grads),
          store_->stacked(i.b_k, i.b_v, grads)};
}

TemporalAttentionWeights TemporalAttentionLayer::weights() const {
  return views(false);
}

TemporalAttentionWeights TemporalAttentionLayer::gradients() const {
  return views(true);
}

void TemporalAttentionLayer::forward(const Tensor& out, TemporalAttentionContext& ctx,
                                     const Tensor& h_root, const Tensor& h_nbr, const Tensor& e,
                                     const Tensor& dt, const Tensor& mask,
                                     const DropoutDraw& dropout, Arena& arena) const {
  DB_ASSERT(h_nbr.defined() && h_nbr.rank() == 3, "{}: h_nbr must be [R, k, d_in], got {}", kLayer,
            h_nbr.str());
  forward_impl(ctx, out, arena, h_root, h_nbr, nullptr, e, dt, mask, dropout);
}

void TemporalAttentionLayer::forward(const Tensor& out, TemporalAttentionContext& ctx,
                                     const Tensor& h_root, const NeighbourRows& nbr,
                                     const Tensor& e, const Tensor& dt, const Tensor& mask,
                                     const DropoutDraw& dropout, Arena& arena) const {
  forward_impl(ctx, out, arena, h_root, Tensor{}, &nbr, e, dt, mask, dropout);
}

void TemporalAttentionLayer::check_forward_args(const Tensor& out, const Tensor& h_root,
                                                const Tensor& h_nbr, const NeighbourRows* nbr,
                                                const Tensor& edges, const Tensor& dt,
                                                const Tensor& mask) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  const int64_t R = h_root.dim(0), K = dt.dim(1), N = R * K;
  expect_float_like(kLayer, "h_root", h_root, h_root, Shape(R, c.d_in));
  if (nbr == nullptr) {
    expect_float_like(kLayer, "h_nbr", h_nbr, h_root, Shape(R, K, c.d_in));
  } else {
    DB_ASSERT(nbr->table.defined() && nbr->table.rank() == 2,
              "{}: the neighbour table must be [U, d_in], got {}", kLayer, nbr->table.str());
    expect_float_like(kLayer, "neighbour table", nbr->table, h_root,
                      Shape(nbr->table.dim(0), c.d_in));
    detail::expect_shape(kLayer, "neighbour rows", nbr->rows, Shape(N));
    DB_ASSERT(nbr->rows.dtype() == DType::i32 || nbr->rows.dtype() == DType::i64,
              "{}: neighbour rows must be i32 or i64, got {}", kLayer, nbr->rows.str());
  }
  expect_float_like(kLayer, "e", edges, h_root, Shape(R, K, c.d_edge));
  expect_float_like(kLayer, "dt", dt, h_root, Shape(R, K));
  expect_float_like(kLayer, "out", out, h_root, Shape(R, c.d_out));
  detail::expect_shape(kLayer, "mask", mask, Shape(R, K));
  DB_ASSERT(mask.dtype() == DType::u8, "{}: mask must be u8, got {}", kLayer, mask.str());
  DB_ASSERT(K > 0, "{}: need at least one neighbour slot per root, got dt {}", kLayer, dt.str());
}

void TemporalAttentionLayer::forward_impl(TemporalAttentionContext& ctx, const Tensor& out,
                                          Arena& arena, const Tensor& h_root, const Tensor& h_nbr,
                                          const NeighbourRows* nbr, const Tensor& e,
                                          const Tensor& dt, const Tensor& mask,
                                          const DropoutDraw& dropout) const {
  DB_ASSERT(h_root.defined() && h_root.rank() == 2 && is_floating(h_root.dtype()),
            "{}: h_root must be a float [R, d_in] tensor, got {}", kLayer, h_root.str());
  DB_ASSERT(dt.defined() && dt.rank() == 2, "{}: dt must be [R, k], got {}", kLayer, dt.str());
  const int64_t R = h_root.dim(0), K = dt.dim(1);
  const auto& c = cfg_;
  // Without edge features the caller may pass Tensor{}; it stands for an [R, k, 0] view.
  const Tensor edges = c.d_edge == 0 && e.raw() == nullptr
                           ? Tensor(nullptr, h_root.dtype(), Shape(R, K, 0), h_root.device())
                           : e;
  check_forward_args(out, h_root, h_nbr, nbr, edges, dt, mask);
  const TemporalAttentionWeights w = weights();

  const DType t = h_root.dtype();
  ctx = TemporalAttentionContext{};
  ctx.roots = R;
  ctx.slots = K;
  ctx.h_root = h_root;
  ctx.h_nbr = h_nbr;
  ctx.from_table = nbr != nullptr;
  if (ctx.from_table) ctx.nbr = *nbr;
  ctx.e = edges;
  ctx.dt = dt;
  ctx.mask = mask;
  if (R == 0) return;

  // Query side: the root's features and the encoding of a zero time delta (Tensor{}).
  ctx.q_in = arena.alloc(t, Shape(R, c.d_q_in()));
  ops::concat_cols_time_encode(ctx.q_in, {h_root}, Tensor{}, w.time_w, w.time_b);
  const int64_t A = c.d_att();
  ctx.q = arena.alloc(t, Shape(R, A));
  detail::affine_forward(ctx.q, ctx.q_in, w.w_q, w.b_q);

  project_keys_values(ctx, arena, w);
  ctx.att = arena.alloc(t, Shape(R, A));
  ctx.attn = arena.alloc(t, Shape(R, c.heads, K));
  ops::attention_forward(ctx.att, ctx.attn, ctx.q, ctx.kv, mask, c.heads, c.scale, c.slope);
  ctx.dropped = dropout.training && c.dropout > 0.0;
  ctx.o_in = arena.alloc(t, Shape(R, c.d_o_in()));
  if (c.style == AttentionStyle::tgn) {
    forward_merge(ctx, out, arena, w, dropout);
  } else {
    forward_norm(ctx, out, arena, w, dropout);
  }
}

// Key/value side, one row per (root, slot): [h_nbr || e || te(dt)] projected by the stacked
// [W_k; W_v] (keys and values side by side in one GEMM), or in table mode the table rows
// projected once and the [e || te(dt)] share added per slot.
void TemporalAttentionLayer::project_keys_values(TemporalAttentionContext& ctx, Arena& arena,
                                                 const TemporalAttentionWeights& w) const {
  const auto& c = cfg_;
  const DType t = ctx.h_root.dtype();
  const int64_t R = ctx.roots, K = ctx.slots, N = R * K, A = c.d_att();
  const Tensor dt = ctx.dt.reshape(Shape(N));
  ctx.kv = arena.alloc(t, Shape(R, K, 2 * A));
  const Tensor kv = ctx.kv.reshape(Shape(N, 2 * A));
  if (ctx.from_table) {
    // [e || te(dt)]; without edge features, the encoding alone.
    ctx.kv_in = arena.alloc(t, Shape(N, c.d_edge + c.d_time));
    if (c.d_edge > 0) {
      ops::concat_cols_time_encode(ctx.kv_in, {ctx.e.reshape(Shape(N, c.d_edge))}, dt, w.time_w,
                                   w.time_b);
    } else {
      ops::time_encode_forward(ctx.kv_in, dt, w.time_w, w.time_b);
    }
    project_from_table(kv, arena, ctx.nbr, ctx.kv_in, w.w_kv, w.b_kv);
    return;
  }
  ctx.kv_in = arena.alloc(t, Shape(N, c.d_kv_in()));
  ops::concat_cols_time_encode(
      ctx.kv_in, {ctx.h_nbr.reshape(Shape(N, c.d_in)), ctx.e.reshape(Shape(N, c.d_edge))}, dt,
      w.time_w, w.time_b);
  detail::affine_forward(kv, ctx.kv_in, w.w_kv, w.b_kv);
}

// tgl style, after the attention: W_o over [attention || root], dropout, relu, layer norm.
void TemporalAttentionLayer::forward_norm(TemporalAttentionContext& ctx, const Tensor& out,
                                          Arena& arena, const TemporalAttentionWeights& w,
                                          const DropoutDraw& dropout) const {
  const auto& c = cfg_;
  const int64_t R = ctx.roots;
  const DType t = ctx.h_root.dtype();
  ops::concat_cols(ctx.o_in, {ctx.att, ctx.h_root});
  ctx.act = arena.alloc(t, Shape(R, c.d_out));
  detail::affine_forward(ctx.act, ctx.o_in, w.w_o, w.b_o);
  if (ctx.dropped) {
    ctx.keep = arena.alloc(DType::u8, Shape(R, c.d_out));
    ops::dropout_forward(ctx.act, ctx.keep, ctx.act, c.dropout, dropout.key, dropout.rows);
  }
  ops::act_forward(ops::Act::relu, ctx.act, ctx.act);
  ctx.ln_mean = arena.alloc(t, Shape(R));
  ctx.ln_rstd = arena.alloc(t, Shape(R));
  ops::layer_norm_forward(out, ctx.ln_mean, ctx.ln_rstd, ctx.act, w.ln_gamma, w.ln_beta, c.ln_eps);
}

void TemporalAttentionLayer::backward(const Tensor& dh_root, const Tensor& dh_nbr, const Tensor& de,
                                      const Tensor& dout, const TemporalAttentionContext& ctx,
                                      Arena& arena) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  const int64_t R = ctx.roots, K = ctx.slots, N = R * K;
  const Tensor& ref = ctx.h_root;
  expect_float_like(kLayer, "dout", dout, ref, Shape(R, c.d_out));
  expect_float_like(kLayer, "dh_root", dh_root, ref, Shape(R, c.d_in));
  const bool want_nbr = dh_nbr.raw() != nullptr;  // Tensor{}: not wanted
  const bool want_e = de.raw() != nullptr;
  if (want_nbr) {
    const Shape nbr_shape = ctx.from_table ? ctx.nbr.table.shape() : Shape(R, K, c.d_in);
    expect_float_like(kLayer, "dh_nbr", dh_nbr, ref, nbr_shape);
  }
  if (want_e) expect_float_like(kLayer, "de", de, ref, Shape(R, K, c.d_edge));
  if (R == 0) return;
  const TemporalAttentionWeights w = weights(), grads = gradients();
  const DType t = ref.dtype();

  const int64_t A = c.d_att();
  Tensor d_att = arena.alloc(t, Shape(R, A));
  if (c.style == AttentionStyle::tgn) {
    backward_merge(d_att, dh_root, grads, dout, ctx, w, arena);
  } else {
    // Layer norm, relu, dropout: dz [R, d_out] is the gradient of W_o's output.
    Tensor dz = arena.alloc(t, Shape(R, c.d_out));
    ops::layer_norm_backward(dz, grads.ln_gamma, grads.ln_beta, dout, ctx.act, ctx.ln_mean,
                             ctx.ln_rstd, w.ln_gamma);
    ops::act_backward(ops::Act::relu, dz, dz, ctx.act);
    if (ctx.dropped) ops::dropout_backward(dz, dz, ctx.keep, c.dropout);
    // W_o's input [attention || root], through W_o's column blocks; dh_root starts with
    // the skip path.
    ops::affine_grad(grads.w_o, grads.b_o, dz, ctx.o_in);
    ops::gemm(d_att, dz, ops::Trans::N, w.w_o.cols(0, A), ops::Trans::N);
    ops::gemm(dh_root, dz, ops::Trans::N, w.w_o.cols(A, c.d_o_in()), ops::Trans::N);
  }

  Tensor dq = arena.alloc(t, Shape(R, A));
  Tensor dkv = arena.alloc(t, Shape(R, K, 2 * A));
  ops::attention_backward(dq, dkv, d_att, ctx.attn, ctx.q, ctx.kv, ctx.mask, c.heads, c.scale,
                          c.slope);

  // The time encodings' gradients: the slots' rows, then the roots' (the query's te(0)), for
  // one time_encode_backward at the end.
  Tensor d_te = arena.alloc(t, Shape(N + R, c.d_time));
  // Query side, through W_q's column blocks: the root's share of dq adds to dh_root; te(0)'s
  // feeds time_b only.
  ops::affine_grad(grads.w_q, grads.b_q, dq, ctx.q_in);
  ops::gemm(dh_root, dq, ops::Trans::N, w.w_q.cols(0, c.d_in), ops::Trans::N, 1.0, 1.0);
  ops::gemm(d_te.rows(N, N + R), dq, ops::Trans::N, w.w_q.cols(c.d_in, c.d_q_in()), ops::Trans::N);

  // Key/value side, through the stacked [W_k; W_v]: one product per part of kv_in = [h_nbr ||
  // e || te(dt)] sums the keys' and values' shares; only the parts that need one are
  // computed (rarely the edges').
  const Tensor dkv2 = dkv.reshape(Shape(N, 2 * A));
  const Tensor d_te_nbr = d_te.rows(0, N);
  if (ctx.from_table) {
    backward_from_table(dh_nbr, de, d_te_nbr, grads.w_kv, grads.b_kv, dkv2, ctx, w.w_kv, arena);
  } else {
    detail::affine_backward(Tensor{}, grads.w_kv, grads.b_kv, dkv2, ctx.kv_in, w.w_kv);
    const std::array<detail::InputPart, 3> kv_parts = {
        detail::InputPart{want_nbr ? dh_nbr.reshape(Shape(N, c.d_in)) : Tensor{}, c.d_in},
        detail::InputPart{want_e ? de.reshape(Shape(N, c.d_edge)) : Tensor{}, c.d_edge},
        detail::InputPart{d_te_nbr, c.d_time}};
    detail::affine_backward_parts(kv_parts, dkv2, w.w_kv);
  }
  // The roots' rows past the slots' deltas have zero deltas.
  ops::time_encode_backward(grads.time_w, grads.time_b, d_te, ctx.dt.reshape(Shape(N)), w.time_w,
                            w.time_b);
}

// tgn style, after the attention: dropout, the projection W_p, then the merge MLP.
void TemporalAttentionLayer::forward_merge(TemporalAttentionContext& ctx, const Tensor& out,
                                           Arena& arena, const TemporalAttentionWeights& w,
                                           const DropoutDraw& dropout) const {
  const auto& c = cfg_;
  const int64_t R = ctx.roots;
  const DType t = ctx.h_root.dtype();
  if (ctx.dropped) {
    ctx.keep = arena.alloc(DType::u8, Shape(R, c.d_att()));
    ops::dropout_forward(ctx.att, ctx.keep, ctx.att, c.dropout, dropout.key, dropout.rows);
  }
  Tensor projected = arena.alloc(t, Shape(R, c.d_att()));
  ops::gemm(projected, ctx.att, ops::Trans::N, w.w_p, ops::Trans::T);
  ops::concat_cols(ctx.o_in, {projected, ctx.h_root});
  ctx.act = arena.alloc(t, Shape(R, c.d_in));
  detail::affine_forward(ctx.act, ctx.o_in, w.w_1, w.b_1);
  ops::act_forward(ops::Act::relu, ctx.act, ctx.act);
  detail::affine_forward(out, ctx.act, w.w_2, w.b_2);
}

// d_att: the gradient of the attention output (before dropout); dh_root is overwritten with
// the merge input's share of the root gradient.
void TemporalAttentionLayer::backward_merge(const Tensor& d_att, const Tensor& dh_root,
                                            const TemporalAttentionWeights& grads,
                                            const Tensor& dout, const TemporalAttentionContext& ctx,
                                            const TemporalAttentionWeights& w, Arena& arena) const {
  const auto& c = cfg_;
  const int64_t R = ctx.roots;
  const DType t = ctx.h_root.dtype();
  Tensor d_hidden = arena.alloc(t, Shape(R, c.d_in));
  detail::affine_backward(d_hidden, grads.w_2, grads.b_2, dout, ctx.act, w.w_2);
  ops::act_backward(ops::Act::relu, d_hidden, d_hidden, ctx.act);
  // The merge input [projected || h_root]'s gradient through W_1's column blocks.
  ops::affine_grad(grads.w_1, grads.b_1, d_hidden, ctx.o_in);
  const int64_t A = c.d_att();
  Tensor d_projected = arena.alloc(t, Shape(R, A));
  ops::gemm(d_projected, d_hidden, ops::Trans::N, w.w_1.cols(0, A), ops::Trans::N);
  ops::gemm(dh_root, d_hidden, ops::Trans::N, w.w_1.cols(A, c.d_o_in()), ops::Trans::N);
  ops::gemm(grads.w_p, d_projected, ops::Trans::T, ctx.att, ops::Trans::N, 1.0, 1.0);
  ops::gemm(d_att, d_projected, ops::Trans::N, w.w_p, ops::Trans::N);
  if (ctx.dropped) ops::dropout_backward(d_att, d_att, ctx.keep, c.dropout);
}

}  // namespace depbloom::model
