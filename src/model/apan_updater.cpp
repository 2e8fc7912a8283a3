// ApanMemoryUpdater: forward and backward of APAN's mailbox attention memory updater,
// composed from backend ops so one code path serves every backend. Time deltas
// t - mail_ts are formed on the device by a rank-1 gemm, so no host loop touches the data.
#include "depbloom/model/apan_updater.h"

#include <utility>

#include "depbloom/backend/ops.h"
#include "model/attention_common.h"

namespace depbloom::model {

namespace {
constexpr const char* kLayer = "ApanMemoryUpdater";
}

const Tensor* ApanUpdaterWeights::field(std::string_view name) const {
  using W = ApanUpdaterWeights;
  static constexpr std::pair<std::string_view, Tensor W::*> kFields[] = {
      {"time_w", &W::time_w},     {"time_b", &W::time_b},   {"w_q", &W::w_q}, {"b_q", &W::b_q},
      {"w_k", &W::w_k},           {"b_k", &W::b_k},         {"w_v", &W::w_v}, {"b_v", &W::b_v},
      {"ln_gamma", &W::ln_gamma}, {"ln_beta", &W::ln_beta}, {"w_o", &W::w_o}, {"b_o", &W::b_o}};
  for (const auto& [n, member] : kFields)
    if (n == name) return &(this->*member);
  return nullptr;
}

Tensor* ApanUpdaterWeights::field(std::string_view name) {
  return const_cast<Tensor*>(std::as_const(*this).field(name));
}

ApanMemoryUpdater::ApanMemoryUpdater(const ApanUpdaterConfig& cfg) : cfg_(cfg) {
  DB_ASSERT(cfg.d_mem > 0 && cfg.d_mail > 0 && cfg.d_time >= 0,
            "{}: d_mem {} and d_mail {} must be positive, d_time {} non-negative", kLayer,
            cfg.d_mem, cfg.d_mail, cfg.d_time);
  DB_ASSERT(cfg.heads > 0 && cfg.d_mem % cfg.heads == 0,
            "{}: d_mem {} is not divisible into {} heads", kLayer, cfg.d_mem, cfg.heads);
  DB_ASSERT(cfg.dropout >= 0.0 && cfg.dropout < 1.0, "{}: dropout {} is outside [0, 1)", kLayer,
            cfg.dropout);
  shapes_ = parameter_shapes();
}

std::vector<AttentionParamShape> ApanMemoryUpdater::parameter_shapes() const {
  const int64_t m = cfg_.d_mem;
  return {{"time_w", Shape(cfg_.d_time)},
          {"time_b", Shape(cfg_.d_time)},
          {"w_q", Shape(m, m)},
          {"b_q", Shape(m)},
          {"w_k", Shape(m, cfg_.d_kv_in())},
          {"b_k", Shape(m)},
          {"w_v", Shape(m, cfg_.d_kv_in())},
          {"b_v", Shape(m)},
          {"ln_gamma", Shape(m)},
          {"ln_beta", Shape(m)},
          {"w_o", Shape(m, m)},
          {"b_o", Shape(m)}};
}

void ApanMemoryUpdater::check_weights(const ApanUpdaterWeights& w, const char* what) const {
  for (const auto& s : shapes_) {
    if (s.shape.numel() == 0) continue;  // time encoding switched off
    const Tensor* t = w.field(s.name);
    DB_ASSERT(t->defined() && t->shape() == s.shape, "{}: {} {} is {}, expected shape {}", kLayer,
              what, s.name, t->str(), s.shape.str());
  }
}

void ApanMemoryUpdater::forward(ApanUpdaterContext& ctx, const Tensor& new_memory, Arena& arena,
                                const ApanUpdaterWeights& w, const Tensor& memory,
                                const Tensor& mail, const Tensor& mail_ts, const Tensor& t,
                                const Tensor& mask, bool training, const RngKey& dropout_key,
                                const ops::DropoutRows& rows) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  DB_ASSERT(memory.defined() && memory.rank() == 2 && is_floating(memory.dtype()),
            "{}: memory must be a float [B, d_mem] tensor, got {}", kLayer, memory.str());
  DB_ASSERT(mail.defined() && mail.rank() == 3 && mail.dim(1) > 0,
            "{}: mail must be [B, S, d_mail] with S > 0, got {}", kLayer, mail.str());
  const int64_t B = memory.dim(0), S = mail.dim(1), N = B * S;
  expect_float_like(kLayer, "memory", memory, memory, Shape(B, c.d_mem));
  expect_float_like(kLayer, "mail", mail, memory, Shape(B, S, c.d_mail));
  expect_float_like(kLayer, "mail_ts", mail_ts, memory, Shape(B, S));
  expect_float_like(kLayer, "t", t, memory, Shape(B));
  expect_float_like(kLayer, "new_memory", new_memory, memory, Shape(B, c.d_mem));
  detail::expect_shape(kLayer, "mask", mask, Shape(B, S));
  DB_ASSERT(mask.dtype() == DType::u8, "{}: mask must be u8, got {}", kLayer, mask.str());
  check_weights(w, "weight");

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
    Tensor te = arena.alloc(dt_type, Shape(N, c.d_time));
    ops::time_encode_forward(te, ctx.dt.reshape(Shape(N)), w.time_w, w.time_b);
    ctx.kv_in = arena.alloc(dt_type, Shape(N, c.d_kv_in()));
    ops::concat_cols(ctx.kv_in, {mail2, te});
  } else {
    ctx.kv_in = mail2;  // the mails themselves: no copy needed
  }
  ctx.k = arena.alloc(dt_type, Shape(B, S, c.d_mem));
  ctx.v = arena.alloc(dt_type, Shape(B, S, c.d_mem));
  detail::affine_forward(ctx.k.reshape(Shape(N, c.d_mem)), ctx.kv_in, w.w_k, w.b_k);
  detail::affine_forward(ctx.v.reshape(Shape(N, c.d_mem)), ctx.kv_in, w.w_v, w.b_v);

  ctx.resid = arena.alloc(dt_type, Shape(B, c.d_mem));
  ctx.attn = arena.alloc(dt_type, Shape(B, c.heads, S));
  ops::attention_forward(ctx.resid, ctx.attn, ctx.q, ctx.k, ctx.v, mask, c.heads, c.scale, c.slope);
  ops::axpy(ctx.resid, 1.0, memory);  // residual: the old memory passes straight through

  ctx.ln_mean = arena.alloc(dt_type, Shape(B));
  ctx.ln_rstd = arena.alloc(dt_type, Shape(B));
  ctx.normed = arena.alloc(dt_type, Shape(B, c.d_mem));
  ops::layer_norm_forward(ctx.normed, ctx.ln_mean, ctx.ln_rstd, ctx.resid, w.ln_gamma, w.ln_beta,
                          c.ln_eps);
  ctx.act = arena.alloc(dt_type, Shape(B, c.d_mem));
  detail::affine_forward(ctx.act, ctx.normed, w.w_o, w.b_o);
  ctx.dropped = training && c.dropout > 0.0;
  if (ctx.dropped) {
    ctx.keep = arena.alloc(DType::u8, Shape(B, c.d_mem));
    ops::dropout_forward(ctx.act, ctx.keep, ctx.act, c.dropout, dropout_key, rows);
  }
  ops::act_forward(ops::Act::relu, ctx.act, ctx.act);
  // The context keeps its own copy, so the caller may overwrite new_memory (write-back).
  ops::copy(new_memory, ctx.act);
}

void ApanMemoryUpdater::backward(const Tensor& d_memory, const Tensor& d_mail,
                                 const ApanUpdaterWeights& grads, const Tensor& d_new_memory,
                                 const ApanUpdaterContext& ctx, const ApanUpdaterWeights& w,
                                 Arena& arena) const {
  using detail::expect_float_like;
  const auto& c = cfg_;
  const int64_t B = ctx.nodes, S = ctx.slots, N = B * S;
  const Tensor& ref = ctx.memory;
  expect_float_like(kLayer, "d_new_memory", d_new_memory, ref, Shape(B, c.d_mem));
  expect_float_like(kLayer, "d_memory", d_memory, ref, Shape(B, c.d_mem));
  const bool want_mail = d_mail.raw() != nullptr;  // Tensor{}: not wanted
  if (want_mail) expect_float_like(kLayer, "d_mail", d_mail, ref, Shape(B, S, c.d_mail));
  check_weights(w, "weight");
  check_weights(grads, "gradient");
  if (B == 0) return;
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
  Tensor dk = arena.alloc(dt_type, Shape(B, S, c.d_mem));
  Tensor dv = arena.alloc(dt_type, Shape(B, S, c.d_mem));
  ops::attention_backward(dq, dk, dv, d_resid, ctx.attn, ctx.q, ctx.k, ctx.v, ctx.mask, c.heads,
                          c.scale, c.slope);

  ops::copy(d_memory, d_resid);
  detail::affine_backward(d_memory, grads.w_q, grads.b_q, dq, ctx.memory, w.w_q, true);

  // Keys and values read the same input: their input gradients add up.
  const bool want_kv_in = want_mail || c.d_time > 0;
  Tensor d_kv_in;
  if (want_kv_in) {
    d_kv_in = c.d_time == 0 ? d_mail.reshape(Shape(N, c.d_mail))
                            : arena.alloc(dt_type, Shape(N, c.d_kv_in()));
  }
  const Tensor dk2 = dk.reshape(Shape(N, c.d_mem)), dv2 = dv.reshape(Shape(N, c.d_mem));
  detail::affine_backward(d_kv_in, grads.w_k, grads.b_k, dk2, ctx.kv_in, w.w_k);
  detail::affine_backward(d_kv_in, grads.w_v, grads.b_v, dv2, ctx.kv_in, w.w_v, true);
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
