// Dispatch layer for the fused layer ops: GRU and RNN cells, time encoding, masked
// softmax, neighbour attention and layer norm. Entry checks derive every size from one
// tensor and hold the others to it, so a message shows the pair that disagrees.
#include "backend/op_checks.h"

namespace depbloom::ops {

void gru_cell_forward(const Tensor& h_new, const Tensor& gates, const Tensor& gx, const Tensor& gh,
                      const Tensor& h) {
  const char* op = "gru_cell_forward";
  detail::common_device(op, h_new, gates, gx, gh, h);
  detail::require_float(op, "h", h);
  detail::require_rank(op, "h", h, 2);
  const int64_t rows = h.dim(0), hidden = h.dim(1);
  detail::require_like(op, "h_new", h_new, "h", h);
  detail::require_same_dtype(op, "gates", gates, "h", h);
  detail::require_shape(op, "gates", gates, Shape(rows, 4 * hidden), "h", h);
  detail::require_same_dtype(op, "gx", gx, "h", h);
  detail::require_shape(op, "gx", gx, Shape(rows, 3 * hidden), "h", h);
  detail::require_like(op, "gh", gh, "gx", gx);
  DB_DISPATCH_OP(gru_cell_forward, h.device(), h.dtype(), h_new, gates, gx, gh, h);
}

void gru_cell_backward(const Tensor& d_gx, const Tensor& d_gh, const Tensor& dh,
                       const Tensor& dh_new, const Tensor& gates, const Tensor& h) {
  const char* op = "gru_cell_backward";
  detail::common_device(op, d_gx, d_gh, dh, dh_new, gates, h);
  detail::require_float(op, "h", h);
  detail::require_rank(op, "h", h, 2);
  const int64_t rows = h.dim(0), hidden = h.dim(1);
  detail::require_like(op, "dh_new", dh_new, "h", h);
  detail::require_like(op, "dh", dh, "h", h);
  detail::require_same_dtype(op, "gates", gates, "h", h);
  detail::require_shape(op, "gates", gates, Shape(rows, 4 * hidden), "h", h);
  detail::require_same_dtype(op, "d_gx", d_gx, "h", h);
  detail::require_shape(op, "d_gx", d_gx, Shape(rows, 3 * hidden), "h", h);
  detail::require_like(op, "d_gh", d_gh, "d_gx", d_gx);
  DB_DISPATCH_OP(gru_cell_backward, h.device(), h.dtype(), d_gx, d_gh, dh, dh_new, gates, h);
}

void rnn_cell_forward(const Tensor& h_new, const Tensor& gx, const Tensor& gh) {
  const char* op = "rnn_cell_forward";
  detail::common_device(op, h_new, gx, gh);
  detail::require_float(op, "gx", gx);
  detail::require_rank(op, "gx", gx, 2);
  detail::require_like(op, "gh", gh, "gx", gx);
  detail::require_like(op, "h_new", h_new, "gx", gx);
  DB_DISPATCH_OP(rnn_cell_forward, gx.device(), gx.dtype(), h_new, gx, gh);
}

void rnn_cell_backward(const Tensor& d_pre, const Tensor& dh_new, const Tensor& h_new) {
  const char* op = "rnn_cell_backward";
  detail::common_device(op, d_pre, dh_new, h_new);
  detail::require_float(op, "h_new", h_new);
  detail::require_rank(op, "h_new", h_new, 2);
  detail::require_like(op, "dh_new", dh_new, "h_new", h_new);
  detail::require_like(op, "d_pre", d_pre, "h_new", h_new);
  DB_DISPATCH_OP(rnn_cell_backward, h_new.device(), h_new.dtype(), d_pre, dh_new, h_new);
}

namespace {
// concat_cols_time_encode's parts: one CUDA launch takes them all (kernels::kMaxColumnParts).
constexpr size_t kMaxTimeEncodeParts = 8;

// dt_may_end_early: dt may cover only the first rows (the backward's zero-delta tail).
void check_time_encode(const char* op, const Tensor& out, const Tensor& dt, const Tensor& w,
                       const Tensor& b, bool dt_may_end_early = false) {
  detail::require_float(op, "out", out);
  detail::require_rank(op, "out", out, 2);
  const int64_t rows = out.dim(0), dims = out.dim(1);
  if (dt.raw() != nullptr) {  // Tensor{}: zero deltas
    detail::common_device(op, out, dt);
    const int64_t n = dt_may_end_early && dt.rank() == 1 && dt.dim(0) <= rows ? dt.dim(0) : rows;
    detail::require_vector(op, "dt", dt, n, "out", out);
  }
  detail::require_vector(op, "w", w, dims, "out", out);
  detail::require_vector(op, "b", b, dims, "out", out);
}
}  // namespace

void time_encode_forward(const Tensor& out, const Tensor& dt, const Tensor& w, const Tensor& b) {
  const char* op = "time_encode_forward";
  detail::common_device(op, out, dt, w, b);
  check_time_encode(op, out, dt, w, b);
  DB_DISPATCH_OP(time_encode_forward, out.device(), out.dtype(), out, dt, w, b);
}

void concat_cols_time_encode(const Tensor& out, std::initializer_list<Tensor> parts,
                             const Tensor& dt, const Tensor& w, const Tensor& b) {
  const char* op = "concat_cols_time_encode";
  detail::common_device(op, out, w, b);
  detail::require_float(op, "out", out);
  detail::require_rank(op, "out", out, 2);
  DB_ASSERT(parts.size() <= kMaxTimeEncodeParts, "{}: {} parts, at most {}", op, parts.size(),
            kMaxTimeEncodeParts);
  const int64_t width = detail::column_parts_width(op, parts, out);
  DB_ASSERT(width < out.dim(1),
            "{}: the parts take {} of the {} columns of {}: none are left for the time encoding",
            op, width, out.dim(1), out.str());
  check_time_encode(op, out.cols(width, out.dim(1)), dt, w, b);
  DB_DISPATCH_OP(concat_cols_time_encode, out.device(), out.dtype(), out, parts, dt, w, b);
}

void time_encode_backward(const Tensor& dw, const Tensor& db, const Tensor& dout, const Tensor& dt,
                          const Tensor& w, const Tensor& b) {
  const char* op = "time_encode_backward";
  detail::common_device(op, dw, db, dout, w, b);
  check_time_encode(op, dout, dt, w, b, /*dt_may_end_early=*/true);
  detail::require_like(op, "dw", dw, "w", w);
  detail::require_like(op, "db", db, "b", b);
  DB_DISPATCH_OP(time_encode_backward, dout.device(), dout.dtype(), dw, db, dout, dt, w, b);
}

void masked_softmax_forward(const Tensor& y, const Tensor& x, const Tensor& mask) {
  const char* op = "masked_softmax_forward";
  detail::common_device(op, y, x, mask);
  detail::require_float(op, "x", x);
  detail::require_rank(op, "x", x, 2);
  detail::require_like(op, "y", y, "x", x);
  detail::require_mask(op, "mask", mask);
  detail::require_same_shape(op, "mask", mask, "x", x);
  DB_DISPATCH_OP(masked_softmax_forward, x.device(), x.dtype(), y, x, mask);
}

void masked_softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y) {
  const char* op = "masked_softmax_backward";
  detail::common_device(op, dx, dy, y);
  detail::require_float(op, "y", y);
  detail::require_rank(op, "y", y, 2);
  detail::require_like(op, "dy", dy, "y", y);
  detail::require_like(op, "dx", dx, "y", y);
  DB_DISPATCH_OP(masked_softmax_backward, y.device(), y.dtype(), dx, dy, y);
}

namespace {
// q [R,H*D]; kv [R,K,2*H*D]; mask [R,K]; attn [R,H,K]. All sizes come from q and kv.
void check_attention(const char* op, const Tensor& attn, const Tensor& q, const Tensor& kv,
                     const Tensor& mask, int heads) {
  detail::require_float(op, "q", q);
  detail::require_rank(op, "q", q, 2);
  detail::require_rank(op, "kv", kv, 3);
  detail::require_same_dtype(op, "kv", kv, "q", q);
  const int64_t rows = q.dim(0), width = q.dim(1), slots = kv.dim(1);
  DB_ASSERT(heads >= 1 && width % heads == 0, "{}: {} heads do not divide the width of q {}", op,
            heads, q.str());
  detail::require_shape(op, "kv", kv, Shape(rows, slots, 2 * width), "q", q);
  detail::require_mask(op, "mask", mask);
  detail::require_shape(op, "mask", mask, Shape(rows, slots), "kv", kv);
  detail::require_same_dtype(op, "attn", attn, "q", q);
  detail::require_shape(op, "attn", attn, Shape(rows, heads, slots), "kv", kv);
}
}  // namespace

void attention_forward(const Tensor& out, const Tensor& attn, const Tensor& q, const Tensor& kv,
                       const Tensor& mask, int heads, double scale, double slope) {
  const char* op = "attention_forward";
  detail::common_device(op, out, attn, q, kv, mask);
  check_attention(op, attn, q, kv, mask, heads);
  detail::require_like(op, "out", out, "q", q);
  DB_DISPATCH_OP(attention_forward, q.device(), q.dtype(), out, attn, q, kv, mask, heads, scale,
                 slope);
}

void attention_backward(const Tensor& dq, const Tensor& dkv, const Tensor& dout, const Tensor& attn,
                        const Tensor& q, const Tensor& kv, const Tensor& mask, int heads,
                        double scale, double slope) {
  const char* op = "attention_backward";
  detail::common_device(op, dq, dkv, dout, attn, q, kv, mask);
  check_attention(op, attn, q, kv, mask, heads);
  detail::require_like(op, "dout", dout, "q", q);
  detail::require_like(op, "dq", dq, "q", q);
  detail::require_like(op, "dkv", dkv, "kv", kv);
  DB_DISPATCH_OP(attention_backward, q.device(), q.dtype(), dq, dkv, dout, attn, q, kv, mask, heads,
                 scale, slope);
}

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, double eps) {
  const char* op = "layer_norm_forward";
  detail::common_device(op, y, mean, rstd, x, gamma, beta);
  detail::require_float(op, "x", x);
  detail::require_rank(op, "x", x, 2);
  detail::require_like(op, "y", y, "x", x);
  detail::require_vector(op, "mean", mean, x.dim(0), "x", x);
  detail::require_vector(op, "rstd", rstd, x.dim(0), "x", x);
  detail::require_vector(op, "gamma", gamma, x.dim(1), "x", x);
  detail::require_vector(op, "beta", beta, x.dim(1), "x", x);
  DB_ASSERT(eps > 0.0, "{}: eps must be positive, got {}", op, eps);
  DB_DISPATCH_OP(layer_norm_forward, x.device(), x.dtype(), y, mean, rstd, x, gamma, beta, eps);
}

void layer_norm_backward(const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gamma) {
  const char* op = "layer_norm_backward";
  detail::common_device(op, dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
  detail::require_float(op, "x", x);
  detail::require_rank(op, "x", x, 2);
  detail::require_like(op, "dy", dy, "x", x);
  detail::require_like(op, "dx", dx, "x", x);
  detail::require_vector(op, "mean", mean, x.dim(0), "x", x);
  detail::require_vector(op, "rstd", rstd, x.dim(0), "x", x);
  detail::require_vector(op, "gamma", gamma, x.dim(1), "x", x);
  detail::require_like(op, "dgamma", dgamma, "gamma", gamma);
  detail::require_like(op, "dbeta", dbeta, "gamma", gamma);
  DB_DISPATCH_OP(layer_norm_backward, x.device(), x.dtype(), dx, dgamma, dbeta, dy, x, mean, rstd,
                 gamma);
}

}  // namespace depbloom::ops
