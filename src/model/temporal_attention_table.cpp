// TemporalAttentionLayer's table mode: the neighbours' features are rows of a table (Tgnn's
// updated memory rows), so keys and values project each table row once and the backward
// sums the slots' gradients per row before its GEMMs. Keys and values go together: W is the
// stacked [W_k; W_v] and each output row [k || v].
#include "depbloom/backend/ops.h"
#include "depbloom/model/temporal_attention.h"
#include "model/attention_common.h"

namespace depbloom::model {

// out [N, A] = table[rows] W_h^T + rest_in W_rest^T + b, where W = [W_h | W_rest] splits
// the columns into the table's share and the [e || te] share (column windows of W, no
// copies).
void TemporalAttentionLayer::project_from_table(const Tensor& out, Arena& arena,
                                                const NeighbourRows& nbr, const Tensor& rest_in,
                                                const Tensor& w, const Tensor& b) const {
  const DType t = out.dtype();
  const int64_t A = w.dim(0);
  const Tensor w_h = w.cols(0, cfg_.d_in), w_rest = w.cols(cfg_.d_in, w.dim(1));
  Tensor per_row = arena.alloc(t, Shape(nbr.table.dim(0), A));
  ops::gemm(per_row, nbr.table, ops::Trans::N, w_h, ops::Trans::T);
  // The slots' own share with the bias first (each tile of out starts as the bias), then
  // their table rows added: one write and one update of out, and no bias pass.
  ops::gemm_bias(out, rest_in, ops::Trans::N, w_rest, ops::Trans::T, b);
  ops::gather_rows(out, per_row, nbr.rows, /*accumulate=*/true);
}

// The backward of project_from_table: the slots' gradients dproj are summed per table row
// first, so the table's share of dW and of the table gradient costs U rows rather than
// R * k. d_table, d_te and de (when wanted) are overwritten.
void TemporalAttentionLayer::backward_from_table(const Tensor& d_table, const Tensor& de,
                                                 const Tensor& d_te, const Tensor& grad_w,
                                                 const Tensor& grad_b, const Tensor& dproj,
                                                 const TemporalAttentionContext& ctx,
                                                 const Tensor& w, Arena& arena) const {
  const auto& c = cfg_;
  const DType t = dproj.dtype();
  const int64_t A = w.dim(0), N = dproj.dim(0), d_kv = w.dim(1);
  const Tensor& table = ctx.nbr.table;
  Tensor per_row = arena.alloc(t, Shape(table.dim(0), A));
  ops::scatter_sum_rows(per_row, dproj, ctx.nbr.rows);
  // dW [A, d_in + rest] += [per_row^T table | dproj^T rest_in], each straight into its
  // columns of the gradient; db += column sums.
  ops::gemm(grad_w.cols(0, c.d_in), per_row, ops::Trans::T, table, ops::Trans::N, 1.0, 1.0);
  ops::affine_grad(grad_w.cols(c.d_in, d_kv), grad_b, dproj, ctx.kv_in);
  const Tensor w_h = w.cols(0, c.d_in), w_rest = w.cols(c.d_in, d_kv);
  // Input gradients through W's column blocks: the table's, then the [e || te] parts'.
  if (d_table.raw() != nullptr) ops::gemm(d_table, per_row, ops::Trans::N, w_h, ops::Trans::N);
  const bool want_e = de.raw() != nullptr;
  const std::array<detail::InputPart, 2> parts = {
      detail::InputPart{want_e ? de.reshape(Shape(N, c.d_edge)) : Tensor{}, c.d_edge},
      detail::InputPart{d_te, c.d_time}};
  detail::affine_backward_parts(parts, dproj, w_rest);
}

}  // namespace depbloom::model
