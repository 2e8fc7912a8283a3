// TemporalAttentionLayer: one layer of TGN's / TGAT's temporal graph attention (TGL's
// TransfomerAttentionLayer) as an explicit forward/backward pair, outputs first. Its
// parameters live in the ParameterStore it declared them in; it allocates only from the step
// Arena it is given.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/dropout.h"
#include "depbloom/model/parameters.h"

namespace depbloom::model {

// tgl: TGL's TransfomerAttentionLayer. Q/K/V of width d_out, scores leaky_relu(<q, k>),
//   out = LayerNorm(relu(dropout([attention || h_root] W_o^T + b_o))).
// tgn: the TGN authors' TemporalAttentionLayer (torch MultiheadAttention plus MergeLayer).
//   Q/K/V of width d_att = d_in + d_time (rounded up to a multiple of the heads), scores
//   <q, k> / sqrt(d_att / heads), the
//   attention output projected by W_p (MultiheadAttention's out_proj; its bias would only
//   shift b_1), then out = relu([dropout(attention) W_p^T || h_root] W_1^T + b_1) W_2^T
//   + b_2 with a hidden width d_in, and no layer norm. The authors drop attention weights;
//   here the dropout falls on the attention output, which keeps the fused attention op.
enum class AttentionStyle { tgl, tgn };

struct TemporalAttentionConfig {
  int64_t d_in = 0;    // width of root and neighbour features (memory [+ node features])
  int64_t d_edge = 0;  // width of edge features; 0 when the dataset has none
  int64_t d_time = 0;  // width of the time encoding (> 0)
  int64_t d_out = 0;   // output width, split evenly across the heads
  int heads = 1;
  // Score = leaky_relu(scale * <q_h, k_jh>, slope). TGL: scale 1, slope 0.2; the
  // Transformer form is scale 1/sqrt(d_out/heads), slope 1 (identity). The tgn style
  // always uses the Transformer form (the constructor sets both).
  double scale = 1.0;
  double slope = 0.2;
  // Drop probability, training only: on W_o's output before the ReLU (tgl, TGL's
  // `dropout`), on the attention output (tgn).
  double dropout = 0.0;
  double ln_eps = 1e-5;
  AttentionStyle style = AttentionStyle::tgl;

  int64_t d_q_in() const { return d_in + d_time; }            // [h_root || te(0)]
  int64_t d_kv_in() const { return d_in + d_edge + d_time; }  // [h_nbr || e || te(dt)]
  // Width of Q, K, V and the attention output. tgn: the query's width, rounded up to a
  // multiple of the heads (torch requires it to divide; rounding keeps odd widths usable,
  // e.g. the memory-less model's 1-column input plus the time encoding).
  int64_t d_att() const {
    if (style == AttentionStyle::tgl) return d_out;
    return heads > 0 ? (d_q_in() + heads - 1) / heads * heads : d_q_in();
  }
  int64_t d_o_in() const { return d_att() + d_in; }  // [attn_out || h_root]
};

// Views of the layer's parameters (or of their gradients: the same struct, same shapes).
// Linear weights are PyTorch-style [out, in], used as y = x W^T + b. A = d_att().
// Each style uses a subset; the others stay undefined.
struct TemporalAttentionWeights {
  Tensor time_w, time_b;     // [d_time] time encoding cos(dt * w + b), shared by roots/nbrs
  Tensor w_q, b_q;           // [A, d_in + d_time], [A]
  Tensor w_k, b_k;           // [A, d_in + d_edge + d_time], [A]
  Tensor w_v, b_v;           // [A, d_in + d_edge + d_time], [A]
  Tensor w_o, b_o;           // tgl: [d_out, d_out + d_in], [d_out]
  Tensor ln_gamma, ln_beta;  // tgl: [d_out]
  Tensor w_p;                // tgn: [A, A] the attention output projection
  Tensor w_1, b_1;           // tgn: [d_in, A + d_in], [d_in]
  Tensor w_2, b_2;           // tgn: [d_out, d_in], [d_out]
  Tensor w_kv, b_kv;         // w_k over w_v and b_k then b_v, stored so: [2A, d_kv_in], [2A]
};

// The neighbours' features as rows of a table: h_nbr[r, j] = table[rows[r * k + j]], a
// negative row standing for zeros. Keys and values then project each table row once
// instead of once per slot, and the gradient goes to the table (Tgnn's is the rows the slots
// read): on WIKI about 5,100 memory rows fill a batch's 18,000 neighbour slots, so this cuts
// the neighbour-feature share of the key/value GEMMs by over two thirds, forward and backward.
struct NeighbourRows {
  Tensor table;  // [U, d_in]
  Tensor rows;   // [R * k] i32 or i64
};

// What backward needs: arena tensors (valid until the arena's reset) plus views of the
// forward's inputs, which the caller keeps alive until backward. Trivially destructible, so
// resetting it allocates nothing.
struct TemporalAttentionContext {
  int64_t roots = 0, slots = 0;
  bool dropped = false;               // dropout applied (training with p > 0)
  bool from_table = false;            // table mode: the neighbours were rows of nbr.table
  Tensor h_root, h_nbr, e, dt, mask;  // the forward's inputs (h_nbr: slot mode)
  NeighbourRows nbr;                  // the forward's input (table mode)
  Tensor q_in, q;                     // [R, d_q_in], [R, A]
  Tensor kv_in, kv;                   // [R*k, d_kv_in] (table mode: [e || te] only), [R, k, 2A]
  Tensor attn;                        // [R, H, k] attention weights
  Tensor att;                         // [R, A] attention output (tgn: after dropout)
  Tensor o_in;                        // [R, d_o_in]
  Tensor keep;                        // u8 dropout mask: tgl [R, d_out], tgn [R, A]
  Tensor act;                         // relu output: tgl [R, d_out], tgn [R, d_in]
  Tensor ln_mean, ln_rstd;            // [R] (tgl)
};
static_assert(std::is_trivially_destructible_v<TemporalAttentionContext>);

class TemporalAttentionLayer {
 public:
  // Declares "<name>.time_w", "<name>.w_q", ... in `store` (not finalized yet) with torch's
  // initialisation of the style's modules.
  TemporalAttentionLayer(ParameterStore& store, const std::string& name,
                         const TemporalAttentionConfig& cfg);

  const TemporalAttentionConfig& config() const { return cfg_; }
  // Views of the parameters and of their gradients (after the store's finalize()).
  TemporalAttentionWeights weights() const;
  TemporalAttentionWeights gradients() const;

  // out = the style's output map of attention(Q, K, V) and h_root (see AttentionStyle),
  //   Q = [h_root || te(0)] W_q^T + b_q, K/V = [h_nbr || e || te(dt)] W_{k,v}^T + b_{k,v}.
  // A root with no valid slot attends to nothing: its attention output is 0.
  // All float tensors share one dtype and the arena's device.
  void forward(const Tensor& out,              // [R, d_out]
               TemporalAttentionContext& ctx,  // filled for backward
               const Tensor& h_root,           // [R, d_in]
               const Tensor& h_nbr,            // [R, k, d_in]
               const Tensor& e,                // [R, k, d_edge]; Tensor{} when d_edge is 0
               const Tensor& dt,               // [R, k] time since the neighbour's event
               const Tensor& mask,             // [R, k] u8, 1 = valid slot
               const DropoutDraw& dropout,     // the roots' masks
               Arena& arena) const;            // the context's tensors and scratch
  // The same map in table mode: the neighbours' features are rows of nbr.table.
  void forward(const Tensor& out, TemporalAttentionContext& ctx, const Tensor& h_root,
               const NeighbourRows& nbr, const Tensor& e, const Tensor& dt, const Tensor& mask,
               const DropoutDraw& dropout, Arena& arena) const;

  // Parameter gradients ACCUMULATE into the store; dh_root, dh_nbr and de OVERWRITE. After a
  // table-mode forward dh_nbr is the table's gradient [U, d_in], the slots' gradients summed
  // per row (a row no slot read gets 0). Pass a Tensor{} (no data) for dh_nbr or de when
  // that gradient is not wanted.
  void backward(const Tensor& dh_root,  // [R, d_in]
                const Tensor& dh_nbr,   // [R, k, d_in], table mode [U, d_in], or Tensor{}
                const Tensor& de,       // [R, k, d_edge] or Tensor{}
                const Tensor& dout,     // [R, d_out]
                const TemporalAttentionContext& ctx,
                Arena& arena) const;  // scratch for this call

 private:
  struct Ids {
    ParamId time_w, time_b, w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o, ln_gamma, ln_beta, w_p, w_1,
        b_1, w_2, b_2;
  };
  void declare(ParameterStore& store, const std::string& prefix);
  TemporalAttentionWeights views(bool grads) const;
  // Both modes: exactly one of h_nbr (slot mode) and nbr (table mode) is given.
  void forward_impl(TemporalAttentionContext& ctx, const Tensor& out, Arena& arena,
                    const Tensor& h_root, const Tensor& h_nbr, const NeighbourRows* nbr,
                    const Tensor& e, const Tensor& dt, const Tensor& mask,
                    const DropoutDraw& dropout) const;
  void check_forward_args(const Tensor& out, const Tensor& h_root, const Tensor& h_nbr,
                          const NeighbourRows* nbr, const Tensor& edges, const Tensor& dt,
                          const Tensor& mask) const;
  void project_keys_values(TemporalAttentionContext& ctx, Arena& arena,
                           const TemporalAttentionWeights& w) const;
  void forward_norm(TemporalAttentionContext& ctx, const Tensor& out, Arena& arena,
                    const TemporalAttentionWeights& w, const DropoutDraw& dropout) const;
  void project_from_table(const Tensor& out, Arena& arena, const NeighbourRows& nbr,
                          const Tensor& rest_in, const Tensor& w, const Tensor& b) const;
  void backward_from_table(const Tensor& d_table, const Tensor& de, const Tensor& d_te,
                           const Tensor& grad_w, const Tensor& grad_b, const Tensor& dproj,
                           const TemporalAttentionContext& ctx, const Tensor& w,
                           Arena& arena) const;
  void forward_merge(TemporalAttentionContext& ctx, const Tensor& out, Arena& arena,
                     const TemporalAttentionWeights& w, const DropoutDraw& dropout) const;
  void backward_merge(const Tensor& d_att, const Tensor& dh_root,
                      const TemporalAttentionWeights& grads, const Tensor& dout,
                      const TemporalAttentionContext& ctx, const TemporalAttentionWeights& w,
                      Arena& arena) const;

  const ParameterStore* store_;
  TemporalAttentionConfig cfg_;
  Ids ids_;
};

}  // namespace depbloom::model
