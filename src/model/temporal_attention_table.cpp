// TemporalAttentionLayer's table mode: the neighbours' features are rows of a table (Tgnn's
// updated memory rows), so keys and values project each table row once and the backward
// sums the slots' gradients per row before its GEMMs.
#include "depbloom/backend/ops.h"
#include "depbloom/model/temporal_attention.h"
#include "model/attention_common.h"

namespace depbloom::model {

// out [N, A] = table[rows] W_h^T + rest_in W_rest^T + b, where W = [W_h | W_rest] splits
// the columns into the table's share and the [e || te] share; w_h and w_rest keep the
// split for the backward.
void TemporalAttentionLayer::project_from_table(const Tensor& out, Arena& arena,
                                                const NeighbourRows& nbr, const Tensor& rest_in,
                                                const Tensor& w, const Tensor& b, Tensor& w_h,
                                                Tensor& w_rest) const {
  const DType t = out.dtype();
  const int64_t A = w.dim(0), rest = rest_in.dim(1);
  w_h = arena.alloc(t, Shape(A, cfg_.d_in));
  w_rest = arena.alloc(t, Shape(A, rest));
  ops::split_cols({w_h, w_rest}, w);
  Tensor per_row = arena.alloc(t, Shape(nbr.table.dim(0), A));
  ops::gemm(per_row, nbr.table, ops::Trans::N, w_h, ops::Trans::T);
  // The slots' own share with the bias first (each tile of out starts as the bias), then
  // their table rows added: one write and one update of out, and no bias pass.
  ops::gemm_bias(out, rest_in, ops::Trans::N, w_rest, ops::Trans::T, b);
  ops::gather_rows(out, per_row, nbr.rows, /*accumulate=*/true);
}

// The backward of project_from_table for one of K and V: the slots' gradients dproj are
// summed per table row first, so the table's share of dW and of the table gradient costs
// U rows rather than R * k. d_table, d_te and de (when wanted) are overwritten, or
// accumulated.
void TemporalAttentionLayer::backward_from_table(const Tensor& d_table, const Tensor& de,
                                                 const Tensor& d_te, const Tensor& grad_w,
                                                 const Tensor& grad_b, const Tensor& dproj,
                                                 const TemporalAttentionContext& ctx,
                                                 const Tensor& w_h, const Tensor& w_rest,
                                                 bool accumulate, Arena& arena) const {
  const auto& c = cfg_;
  const DType t = dproj.dtype();
  const int64_t A = w_h.dim(0), N = dproj.dim(0), rest = c.d_edge + c.d_time;
  const Tensor& table = ctx.nbr.table;
  Tensor per_row = arena.alloc(t, Shape(table.dim(0), A));
  ops::fill(per_row, 0.0);
  ops::scatter_add_rows(per_row, dproj, ctx.nbr.rows, true);
  // dW [A, d_in + rest] += [per_row^T table | dproj^T rest_in]; db += column sums.
  Tensor dw_h = arena.alloc(t, Shape(A, c.d_in)), dw_rest = arena.alloc(t, Shape(A, rest));
  ops::gemm(dw_h, per_row, ops::Trans::T, table, ops::Trans::N);
  ops::gemm(dw_rest, dproj, ops::Trans::T, ctx.kv_in, ops::Trans::N);
  Tensor dw = arena.alloc(t, Shape(A, c.d_kv_in()));
  ops::concat_cols(dw, {dw_h, dw_rest});
  ops::axpy(grad_w, 1.0, dw);
  ops::bias_grad(grad_b, dproj);
  // Input gradients (through the forward's split of W): the table's, then the [e || te]
  // parts'.
  if (d_table.raw() != nullptr)
    ops::gemm(d_table, per_row, ops::Trans::N, w_h, ops::Trans::N, 1.0, accumulate ? 1.0 : 0.0);
  const bool want_e = de.raw() != nullptr;
  const std::array<detail::InputPart, 2> parts = {
      detail::InputPart{want_e ? de.reshape(Shape(N, c.d_edge)) : Tensor{}, c.d_edge},
      detail::InputPart{d_te, c.d_time}};
  detail::affine_backward_parts(arena, parts, dproj, w_rest, accumulate);
}

}  // namespace depbloom::model
