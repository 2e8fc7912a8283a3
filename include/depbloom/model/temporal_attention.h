// TemporalAttentionLayer: one layer of TGN's / TGAT's temporal graph attention (TGL's
// TransfomerAttentionLayer) as an explicit forward/backward pair over caller-owned weight
// views. It owns no parameters and allocates only from the step Arena it is given.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/philox.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

// One named parameter shape, in the order a flat ParameterStore should lay them out
// (used by the attention-style layers of this folder).
struct AttentionParamShape {
  std::string name;
  Shape shape;
};

struct TemporalAttentionConfig {
  int64_t d_in = 0;    // width of root and neighbour features (memory [+ node features])
  int64_t d_edge = 0;  // width of edge features; 0 when the dataset has none
  int64_t d_time = 0;  // width of the time encoding (> 0)
  int64_t d_out = 0;   // output width, split evenly across the heads
  int heads = 1;
  // Score = leaky_relu(scale * <q_h, k_jh>, slope). TGL: scale 1, slope 0.2; the
  // Transformer form is scale 1/sqrt(d_out/heads), slope 1 (identity).
  double scale = 1.0;
  double slope = 0.2;
  // Drop probability on W_o's output before the ReLU (TGL's `dropout`), training only.
  double dropout = 0.0;
  double ln_eps = 1e-5;

  int64_t d_q_in() const { return d_in + d_time; }            // [h_root || te(0)]
  int64_t d_kv_in() const { return d_in + d_edge + d_time; }  // [h_nbr || e || te(dt)]
  int64_t d_o_in() const { return d_out + d_in; }             // [attn_out || h_root]
};

// Views of the layer's parameters (or of their gradients: the same struct, same shapes).
// Linear weights are PyTorch-style [out, in], used as y = x W^T + b.
struct TemporalAttentionWeights {
  Tensor time_w, time_b;     // [d_time] time encoding cos(dt * w + b), shared by roots/nbrs
  Tensor w_q, b_q;           // [d_out, d_in + d_time], [d_out]
  Tensor w_k, b_k;           // [d_out, d_in + d_edge + d_time], [d_out]
  Tensor w_v, b_v;           // [d_out, d_in + d_edge + d_time], [d_out]
  Tensor w_o, b_o;           // [d_out, d_out + d_in], [d_out]
  Tensor ln_gamma, ln_beta;  // [d_out]

  // Pointers to the members in parameter_shapes() order (for binding and for tests).
  std::vector<Tensor*> all();
};

// What backward needs: arena tensors (valid until the arena's reset) plus views of the
// forward's inputs, which the caller keeps alive until backward. Trivially destructible,
// so the caller may place it in the arena too (model/context.h's new_context).
struct TemporalAttentionContext {
  int64_t roots = 0, slots = 0;
  bool dropped = false;               // dropout applied (training with p > 0)
  Tensor h_root, h_nbr, e, dt, mask;  // the forward's inputs
  Tensor zero_dt;                     // [R] zeros: the roots' time deltas
  Tensor q_in, q;                     // [R, d_q_in], [R, d_out]
  Tensor kv_in, k, v;                 // [R*k, d_kv_in], [R, k, d_out] x2
  Tensor attn;                        // [R, H, k] attention weights
  Tensor o_in;                        // [R, d_o_in]
  Tensor keep;                        // [R, d_out] u8 dropout mask (when dropped)
  Tensor act;                         // [R, d_out] relu output, layer norm input
  Tensor ln_mean, ln_rstd;            // [R]
};
static_assert(std::is_trivially_destructible_v<TemporalAttentionContext>);

class TemporalAttentionLayer {
 public:
  explicit TemporalAttentionLayer(const TemporalAttentionConfig& cfg);

  const TemporalAttentionConfig& config() const { return cfg_; }
  // Parameter names and shapes, in the order of TemporalAttentionWeights::all().
  std::vector<AttentionParamShape> parameter_shapes() const;

  // out = LayerNorm(relu(dropout([attention(Q, K, V) || h_root] W_o^T + b_o))) with
  //   Q = [h_root || te(0)] W_q^T + b_q, K/V = [h_nbr || e || te(dt)] W_{k,v}^T + b_{k,v}.
  // A root with no valid slot attends to nothing: its attention output is 0.
  // All float tensors share one dtype and the arena's device.
  void forward(TemporalAttentionContext& ctx,  // filled for backward
               const Tensor& out,              // [R, d_out]
               Arena& arena,                   // the context's tensors and scratch
               const TemporalAttentionWeights& w,
               const Tensor& h_root,  // [R, d_in]
               const Tensor& h_nbr,   // [R, k, d_in]
               const Tensor& e,       // [R, k, d_edge]; Tensor{} when d_edge is 0
               const Tensor& dt,      // [R, k] time since the neighbour's event
               const Tensor& mask,    // [R, k] u8, 1 = valid slot
               bool training = false, const RngKey& dropout_key = {},
               uint64_t first_row = 0) const;  // global row of root 0 (dropout stream)

  // Parameter gradients ACCUMULATE into `grads`; dh_root, dh_nbr, de OVERWRITE. Pass a
  // Tensor{} (no data) for dh_nbr or de when that gradient is not wanted.
  void backward(const Tensor& dh_root,  // [R, d_in]
                const Tensor& dh_nbr,   // [R, k, d_in] or Tensor{}
                const Tensor& de,       // [R, k, d_edge] or Tensor{}
                const TemporalAttentionWeights& grads,
                const Tensor& dout,  // [R, d_out]
                const TemporalAttentionContext& ctx, const TemporalAttentionWeights& w,
                Arena& arena) const;  // scratch for this call

 private:
  void check_weights(const TemporalAttentionWeights& w, const char* what) const;
  std::vector<AttentionParamShape> shapes_;  // parameter_shapes(), cached
  TemporalAttentionConfig cfg_;
};

}  // namespace depbloom::model
