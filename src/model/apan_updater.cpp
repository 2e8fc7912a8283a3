// ApanMemoryUpdater: forward and backward of APAN's mailbox attention memory updater,
// composed from backend ops so one code path serves every backend. Time deltas
// t - mail_ts are formed on the device by a rank-1 gemm, so no host loop touches the data.
#include "depbloom/model/apan_updater.h"

#include "depbloom/backend/ops.h"
#include "model/attention_common.h"

namespace depbloom::model {

namespace {
constexpr const char* kLayer = "ApanMemoryUpdater";
}

ApanMemoryUpdater::ApanMemoryUpdater(ParameterStore& store, const std::string& name,
                                     const ApanUpdaterConfig& cfg)
    : store_(&store), cfg_(cfg) {
  DB_ASSERT(cfg.d_mem > 0 && cfg.d_mail > 0 && cfg.d_time >= 0,
            "{}: d_mem {} and d_mail {} must be positive, d_time {} non-negative", kLayer,
            cfg.d_mem, cfg.d_mail, cfg.d_time);
  DB_ASSERT(cfg.heads > 0 && cfg.d_mem % cfg.heads == 0,
            "{}: d_mem {} is not divisible into {} heads", kLayer, cfg.d_mem, cfg.heads);
  DB_ASSERT(cfg.dropout >= 0.0 && cfg.dropout < 1.0, "{}: dropout {} is outside [0, 1)", kLayer,
            cfg.dropout);
  // nn.Linear's U(+-1/sqrt(fan_in)) for the projections and their biases; LayerNorm's ones
  // and zeros; TGN's frequencies for the time encoding.
  const std::string p = name + ".";
  const int64_t m = cfg.d_mem, kv = cfg.d_kv_in();
  const InitScheme linear = InitScheme::uniform_fan_in;
  if (cfg.d_time > 0) {  // d_time 0 switches the time encoding off
    ids_.time_w = store.declare(p + "time_w", Shape(cfg.d_time), InitScheme::time_frequencies);
    ids_.time_b = store.declare(p + "time_b", Shape(cfg.d_time), InitScheme::zeros);
  }
  ids_.w_q = store.declare(p + "w_q", Shape(m, m), linear, m, m);
  ids_.b_q = store.declare(p + "b_q", Shape(m), linear, m, m);
  ids_.w_k = store.declare(p + "w_k", Shape(m, kv), linear, kv, m);
  ids_.b_k = store.declare(p + "b_k", Shape(m), linear, kv, m);
  ids_.w_v = store.declare(p + "w_v", Shape(m, kv), linear, kv, m);
  ids_.b_v = store.declare(p + "b_v", Shape(m), linear, kv, m);
  store.place_after(ids_.w_v, ids_.w_k);  // keys and values: one GEMM over one input
  store.place_after(ids_.b_v, ids_.b_k);
  ids_.ln_gamma = store.declare(p + "ln_gamma", Shape(m), InitScheme::ones);
  ids_.ln_beta = store.declare(p + "ln_beta", Shape(m), InitScheme::zeros);
  ids_.w_o = store.declare(p + "w_o", Shape(m, m), linear, m, m);
  ids_.b_o = store.declare(p + "b_o", Shape(m), linear, m, m);
}

ApanUpdaterWeights ApanMemoryUpdater::views(bool grads) const {
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
          at(i.ln_gamma),
          at(i.ln_beta),
          at(i.w_o),
          at(i.b_o),
          store_->stacked(i.w_k, i.w_v, grads),
          store_->stacked(i.b_k, i.b_v, grads)};
}

ApanUpdaterWeights ApanMemoryUpdater::weights() const {
  return views(false);
}

ApanUpdaterWeights ApanMemoryUpdater::gradients() const {
  return views(true);
}

void ApanMemoryUpdater::check_forward_args(const Tensor& new_memory, const Tensor& memory,
                                           const Tensor& mail, const Tensor& mail_ts,
                                           const Tensor& t, const Tensor& mask) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  DB_ASSERT(memory.defined() && memory.rank() == 2 && is_floating(memory.dtype()),
            "{}: memory must be a float [B, d_mem] tensor, got {}", kLayer, memory.str());
  DB_ASSERT(mail.defined() && mail.rank() == 3 && mail.dim(1) > 0,
            "{}: mail must be [B, S, d_mail] with S > 0, got {}", kLayer, mail.str());
  const int64_t B = memory.dim(0), S = mail.dim(1);
  expect_float_like(kLayer, "memory", memory, memory, Shape(B, c.d_mem));
  expect_float_like(kLayer, "mail", mail, memory, Shape(B, S, c.d_mail));
  expect_float_like(kLayer, "mail_ts", mail_ts, memory, Shape(B, S));
  expect_float_like(kLayer, "t", t, memory, Shape(B));
  expect_float_like(kLayer, "new_memory", new_memory, memory, Shape(B, c.d_mem));
  detail::expect_shape(kLayer, "mask", mask, Shape(B, S));
  DB_ASSERT(mask.dtype() == DType::u8, "{}: mask must be u8, got {}", kLayer, mask.str());
}

void ApanMemoryUpdater::forward(const Tensor& new_memory, ApanUpdaterContext& ctx,
                                const Tensor& memory, const Tensor& mail, const Tensor& mail_ts,
                                const Tensor& t, const Tensor& mask, const DropoutDraw& dropout,
                                Arena& arena) const {
  const auto& c = cfg_;
  check_forward_args(new_memory, memory, mail, mail_ts, t, mask);
  const int64_t B = memory.dim(0), S = mail.dim(1), N = B * S;
  const ApanUpdaterWeights w = weights();
  const DType dt_type = memory.dtype();
  ctx = ApanUpdaterContext{};
  ctx.nodes = B;
  ctx.slots = S;
  ctx.memory = memory;
  ctx.mail = mail;
  ctx.mask = mask;
  if (B == 0) return;

  ctx.q = arena.alloc(dt_type, Shape(B, c.d_mem));
  detail::affine_forward(ctx.q, memory, w.w_q, w.b_q);

  const Tensor mail2 = mail.reshape(Shape(N, c.d_mail));
  if (c.d_time > 0) {
    // dt = t 1^T - mail_ts as one rank-1 gemm with beta = -1 over a copy of mail_ts.
    ctx.dt = arena.alloc(dt_type, Shape(B, S));
    ops::copy(ctx.dt, mail_ts);
    Tensor ones = arena.alloc(dt_type, Shape(1, S));
    ops::fill(ones, 1.0);
    ops::gemm(ctx.dt, t.reshape(Shape(B, 1)), ops::Trans::N, ones, ops::Trans::N, 1.0, -1.0);
    ctx.kv_in = arena.alloc(dt_type, Shape(N, c.d_kv_in()));
    ops::concat_cols_time_encode(ctx.kv_in, {mail2}, ctx.dt.reshape(Shape(N)), w.time_w, w.time_b);
  } else {
    ctx.kv_in = mail2;  // the mails themselves: no copy needed
  }
  ctx.kv = arena.alloc(dt_type, Shape(B, S, 2 * c.d_mem));
  detail::affine_forward(ctx.kv.reshape(Shape(N, 2 * c.d_mem)), ctx.kv_in, w.w_kv, w.b_kv);

  ctx.resid = arena.alloc(dt_type, Shape(B, c.d_mem));
  ctx.attn = arena.alloc(dt_type, Shape(B, c.heads, S));
  ops::attention_forward(ctx.resid, ctx.attn, ctx.q, ctx.kv, mask, c.heads, c.scale, c.slope);
  ops::axpy(ctx.resid, 1.0, memory);  // residual: the old memory passes straight through

  ctx.ln_mean = arena.alloc(dt_type, Shape(B));
  ctx.ln_rstd = arena.alloc(dt_type, Shape(B));
  ctx.normed = arena.alloc(dt_type, Shape(B, c.d_mem));
  ops::layer_norm_forward(ctx.normed, ctx.ln_mean, ctx.ln_rstd, ctx.resid, w.ln_gamma, w.ln_beta,
                          c.ln_eps);
  ctx.act = arena.alloc(dt_type, Shape(B, c.d_mem));
  detail::affine_forward(ctx.act, ctx.normed, w.w_o, w.b_o);
  ctx.dropped = dropout.training && c.dropout > 0.0;
  if (ctx.dropped) {
    ctx.keep = arena.alloc(DType::u8, Shape(B, c.d_mem));
    ops::dropout_forward(ctx.act, ctx.keep, ctx.act, c.dropout, dropout.key, dropout.rows);
  }
  ops::act_forward(ops::Act::relu, ctx.act, ctx.act);
  // The context keeps its own copy, so the caller may overwrite new_memory (write-back).
  ops::copy(new_memory, ctx.act);
}

void ApanMemoryUpdater::backward(const Tensor& d_memory, const Tensor& d_mail,
                                 const Tensor& d_new_memory, const ApanUpdaterContext& ctx,
                                 Arena& arena) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  const int64_t B = ctx.nodes, S = ctx.slots, N = B * S;
  const Tensor& ref = ctx.memory;
  expect_float_like(kLayer, "d_new_memory", d_new_memory, ref, Shape(B, c.d_mem));
  expect_float_like(kLayer, "d_memory", d_memory, ref, Shape(B, c.d_mem));
  const bool want_mail = d_mail.raw() != nullptr;  // Tensor{}: not wanted
  if (want_mail) expect_float_like(kLayer, "d_mail", d_mail, ref, Shape(B, S, c.d_mail));
  if (B == 0) return;
  const ApanUpdaterWeights w = weights(), grads = gradients();
  const DType dt_type = ref.dtype();

  Tensor dz = arena.alloc(dt_type, Shape(B, c.d_mem));
  ops::act_backward(ops::Act::relu, dz, d_new_memory, ctx.act);
  if (ctx.dropped) ops::dropout_backward(dz, dz, ctx.keep, c.dropout);
  Tensor d_normed = arena.alloc(dt_type, Shape(B, c.d_mem));
  detail::affine_backward(d_normed, grads.w_o, grads.b_o, dz, ctx.normed, w.w_o);

  // d_resid reaches both the attention output and, through the residual, the memory.
  Tensor d_resid = arena.alloc(dt_type, Shape(B, c.d_mem));
  ops::layer_norm_backward(d_resid, grads.ln_gamma, grads.ln_beta, d_normed, ctx.resid, ctx.ln_mean,
                           ctx.ln_rstd, w.ln_gamma);

  Tensor dq = arena.alloc(dt_type, Shape(B, c.d_mem));
  Tensor dkv = arena.alloc(dt_type, Shape(B, S, 2 * c.d_mem));
  ops::attention_backward(dq, dkv, d_resid, ctx.attn, ctx.q, ctx.kv, ctx.mask, c.heads, c.scale,
                          c.slope);

  ops::copy(d_memory, d_resid);
  detail::affine_backward(d_memory, grads.w_q, grads.b_q, dq, ctx.memory, w.w_q, true);

  // Keys and values read the same input: one product through the stacked [W_k; W_v] sums
  // their input gradients.
  const bool want_kv_in = want_mail || c.d_time > 0;
  Tensor d_kv_in;
  if (want_kv_in) {
    d_kv_in = c.d_time == 0 ? d_mail.reshape(Shape(N, c.d_mail))
                            : arena.alloc(dt_type, Shape(N, c.d_kv_in()));
  }
  detail::affine_backward(d_kv_in, grads.w_kv, grads.b_kv, dkv.reshape(Shape(N, 2 * c.d_mem)),
                          ctx.kv_in, w.w_kv);
  if (c.d_time > 0) {
    Tensor d_m =
        want_mail ? d_mail.reshape(Shape(N, c.d_mail)) : arena.alloc(dt_type, Shape(N, c.d_mail));
    Tensor d_te = arena.alloc(dt_type, Shape(N, c.d_time));
    ops::split_cols({d_m, d_te}, d_kv_in);
    ops::time_encode_backward(grads.time_w, grads.time_b, d_te, ctx.dt.reshape(Shape(N)), w.time_w,
                              w.time_b);
  }
}

}  // namespace depbloom::model
