// Internal: the CUDA implementation (cuBLAS + kernels/, float only) of every op in
// include/depbloom/backend/ops.h, same signatures and semantics. Called only by the
// dispatch layer (src/backend/ops_*.cpp) after it has checked shapes, dtypes and devices,
// so implementations may assume valid arguments.
#pragma once

#include "depbloom/backend/ops.h"

namespace depbloom::ops::cuda {

// ---- BLAS -------------------------------------------------------------------------------
// c [M,N] = alpha * op(a) op(b) + beta * c; op(a) [M,K], op(b) [K,N]. f32 or f64.
void gemm(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb, double alpha,
          double beta);
// Strided batched: c [S,M,N], a [S,..], b [S,..]: one gemm per leading index s.
void gemm_batched(const Tensor& c, const Tensor& a, Trans ta, const Tensor& b, Trans tb,
                  double alpha, double beta);

// ---- bias -------------------------------------------------------------------------------
// y [M,N] += bias [N] (in place).
void bias_add(const Tensor& y, const Tensor& bias);
// dbias [N] += sum over rows of dy [M,N] (accumulates).
void bias_grad(const Tensor& dbias, const Tensor& dy);

// ---- element-wise activations -----------------------------------------------------------
// y = act(x), any shape, y may alias x. slope is used by leaky_relu only.
void act_forward(Act act, const Tensor& y, const Tensor& x, double slope);
// dx = dy * act'(.) computed from the forward OUTPUT y (valid for all four: relu and
// leaky_relu keep the sign, sigmoid and tanh have derivatives in y). dx may alias dy.
void act_backward(Act act, const Tensor& dx, const Tensor& dy, const Tensor& y, double slope);

// ---- recurrent cells --------------------------------------------------------------------
// Fused GRU cell with PyTorch's equations, gate order (r, z, n):
//   r = sig(gx_r + gh_r), z = sig(gx_z + gh_z), n = tanh(gx_n + r * gh_n),
//   h_new = (1 - z) * n + z * h
// where gx = x W_ih^T + b_ih and gh = h W_hh^T + b_hh are computed by gemm + bias_add.
// h_new [B,H]; gates [B,4H] saved for backward as (r, z, n, gh_n); gx, gh [B,3H]; h [B,H].
void gru_cell_forward(const Tensor& h_new, const Tensor& gates, const Tensor& gx, const Tensor& gh,
                      const Tensor& h);
// d_gx, d_gh [B,3H] and dh [B,H] overwrite. dh is the gradient through the direct z*h path
// only; the caller adds d_gh W_hh for the full gradient of h.
void gru_cell_backward(const Tensor& d_gx, const Tensor& d_gh, const Tensor& dh,
                       const Tensor& dh_new, const Tensor& gates, const Tensor& h);

// Vanilla RNN cell: h_new = tanh(gx + gh); h_new, gx, gh [B,H].
void rnn_cell_forward(const Tensor& h_new, const Tensor& gx, const Tensor& gh);
// d_pre [B,H] = dh_new * (1 - h_new^2), the gradient of both gx and gh (overwrite).
void rnn_cell_backward(const Tensor& d_pre, const Tensor& dh_new, const Tensor& h_new);

// ---- time encoding ----------------------------------------------------------------------
// out [R,D] = cos(dt [R] * w [D] + b [D]). dt has the dtype of out.
void time_encode_forward(const Tensor& out, const Tensor& dt, const Tensor& w, const Tensor& b);
// dw [D], db [D] accumulate; dt gets no gradient (it is data).
void time_encode_backward(const Tensor& dw, const Tensor& db, const Tensor& dout, const Tensor& dt,
                          const Tensor& w, const Tensor& b);

// ---- masked softmax over k neighbour slots ----------------------------------------------
// y, x [R,K]; mask [R,K] u8, 1 = valid slot. Masked slots get 0; a row with no valid slot
// is all 0.
void masked_softmax_forward(const Tensor& y, const Tensor& x, const Tensor& mask);
// dx [R,K] = y * (dy - sum_k dy*y) (overwrite; masked slots get 0).
void masked_softmax_backward(const Tensor& dx, const Tensor& dy, const Tensor& y);

// ---- attention of one query over k neighbours, H heads ----------------------------------
// q [R,H*D]; k, v [R,K,H*D]; mask [R,K] u8. Per row r and head h:
//   s_j = act(scale * <q_h, k_jh>) with act = leaky_relu(slope) (slope 1 gives identity),
//   a = masked_softmax(s), out_h = sum_j a_j v_jh.
// out [R,H*D]; attn [R,H,K] keeps a for backward. A row with no valid slot outputs 0.
void attention_forward(const Tensor& out, const Tensor& attn, const Tensor& q, const Tensor& k,
                       const Tensor& v, const Tensor& mask, int heads, double scale, double slope);
// dq [R,H*D], dk, dv [R,K,H*D] overwrite.
void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                        const Tensor& attn, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& mask, int heads, double scale, double slope);

// ---- layer norm over the last dimension -------------------------------------------------
// y, x [R,D]; gamma, beta [D]; mean, rstd [R] saved for backward (dtype of x).
void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& gamma, const Tensor& beta, double eps);
// dx [R,D] overwrite; dgamma, dbeta [D] accumulate.
void layer_norm_backward(const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                         const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gamma);

// ---- dropout ----------------------------------------------------------------------------
// y = x * keep / (1 - p); keep [same numel] u8. Element e of row r (row = e / row_size)
// keeps iff uniform_float(philox_u32(key, first_row + r, e % row_size)) >= p, so a row's
// mask depends on its global index (e.g. the event index), never on the batch layout.
void dropout_forward(const Tensor& y, const Tensor& keep, const Tensor& x, double p,
                     const RngKey& key, const DropoutRows& rows);
// dx = dy * keep / (1 - p) (overwrite).
void dropout_backward(const Tensor& dx, const Tensor& dy, const Tensor& keep, double p);

// ---- gather / scatter of rows -----------------------------------------------------------
// out [n,W] row i = src [N,W] row idx[i]; idx [n] i32 or i64; a negative index gives a
// zero row (padding); an index >= N is an error (checked on the CPU).
void gather_rows(const Tensor& out, const Tensor& src, const Tensor& idx);
// dst [N,W] row idx[i] += src [n,W] row i (accumulates; negative indices skipped).
// deterministic = true gives results independent of thread count and scheduling (the
// CPU is always deterministic; on CUDA it sorts instead of using atomics).
void scatter_add_rows(const Tensor& dst, const Tensor& src, const Tensor& idx, bool deterministic);
// dst [N,W] row idx[i] = src [n,W] row i (overwrite; negative indices skipped; the
// non-negative indices are distinct by contract).
void scatter_rows(const Tensor& dst, const Tensor& src, const Tensor& idx);

// ---- row-wise concat / split ------------------------------------------------------------
// out [R, W0+W1+...] = [p0 | p1 | ...] with parts [R, Wi] (1-D parts count as [R,1]).
void concat_cols(const Tensor& out, std::initializer_list<Tensor> parts);
// Inverse of concat_cols: each part [R,Wi] receives its columns of in [R, sum Wi].
void split_cols(std::initializer_list<Tensor> parts, const Tensor& in);

// ---- loss -------------------------------------------------------------------------------
// loss [1] = mean_i ( max(x,0) - x*y + log(1 + exp(-|x|)) ); logits, targets [n].
void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& targets);
// dlogits [n] = (sigmoid(x) - y) * scale (overwrite); scale = dloss / n for the mean.
void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                              double scale);

// ---- optimiser --------------------------------------------------------------------------
// One fused Adam step over flat buffers params, grads, m, v [P]; step counts from 1
// (bias correction 1 - beta^step).
void adam_step(const Tensor& params, const Tensor& grads, const Tensor& m, const Tensor& v,
               const AdamConfig& cfg, int64_t step);

// ---- basic ------------------------------------------------------------------------------
void fill(const Tensor& x, double value);
// dst = src, same dtype and numel; the devices may differ (host<->device copies).
void copy(const Tensor& dst, const Tensor& src);
// y += alpha * x.
void axpy(const Tensor& y, double alpha, const Tensor& x);
// x *= alpha.
void scale(const Tensor& x, double alpha);
void mul(const Tensor& out, const Tensor& a, const Tensor& b);
// out [1] = sum of all elements of x (deterministic reduction order).
void sum(const Tensor& out, const Tensor& x);
// out [1] = sum of squares of x (for gradient norms).
void sum_squares(const Tensor& out, const Tensor& x);

}  // namespace depbloom::ops::cuda
