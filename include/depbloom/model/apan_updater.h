// ApanMemoryUpdater: APAN's attention memory updater (TGL's TransformerMemoryUpdater): a
// node's memory attends over the mails in its mailbox. An explicit forward/backward pair,
// outputs first, over parameters in a ParameterStore; scratch and the backward context come
// from the step Arena.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/dropout.h"
#include "depbloom/model/parameters.h"

namespace depbloom::model {

struct ApanUpdaterConfig {
  int64_t d_mem = 0;   // memory width (also the attention and output width)
  int64_t d_mail = 0;  // width of one mail
  int64_t d_time = 0;  // width of the time encoding of (t - mail_ts); 0 disables it
  int heads = 1;       // must divide d_mem
  double scale = 1.0;  // score = leaky_relu(scale * <q_h, k_jh>, slope); TGL: 1 and 0.2
  double slope = 0.2;
  double dropout = 0.0;  // on the output projection, before the ReLU; training only
  double ln_eps = 1e-5;

  int64_t d_kv_in() const { return d_mail + d_time; }  // [mail || te(t - mail_ts)]
};

// Parameter (or gradient) views; Linear weights are [out, in], y = x W^T + b.
struct ApanUpdaterWeights {
  Tensor time_w, time_b;     // [d_time] (undefined when d_time is 0)
  Tensor w_q, b_q;           // [d_mem, d_mem], [d_mem]
  Tensor w_k, b_k;           // [d_mem, d_mail + d_time], [d_mem]
  Tensor w_v, b_v;           // [d_mem, d_mail + d_time], [d_mem]
  Tensor ln_gamma, ln_beta;  // [d_mem]
  Tensor w_o, b_o;           // [d_mem, d_mem], [d_mem]
  Tensor w_kv, b_kv;         // w_k over w_v and b_k then b_v, stored so (one GEMM)
};

// Arena tensors plus views of the forward's inputs (kept alive by the caller until
// backward); trivially destructible, so it may itself live in the arena.
struct ApanUpdaterContext {
  int64_t nodes = 0, slots = 0;
  bool dropped = false;
  Tensor memory, mail, mask;  // the forward's inputs
  Tensor dt;                  // [B, S] t - mail_ts
  Tensor q;                   // [B, d_mem]
  Tensor kv_in, kv;           // [B*S, d_kv_in], [B, S, 2 d_mem]: each slot's key, then value
  Tensor attn;                // [B, H, S]
  Tensor resid;               // [B, d_mem] attention output + memory (layer norm input)
  Tensor ln_mean, ln_rstd;    // [B]
  Tensor normed;              // [B, d_mem] layer norm output (W_o input)
  Tensor keep;                // [B, d_mem] u8 dropout mask (when dropped)
  Tensor act;                 // [B, d_mem] relu output (a copy of the new memory)
};
static_assert(std::is_trivially_destructible_v<ApanUpdaterContext>);

class ApanMemoryUpdater {
 public:
  // Declares "<name>.time_w", "<name>.w_q", ... in `store` (not finalized yet), initialised
  // as torch's nn.Linear and LayerNorm.
  ApanMemoryUpdater(ParameterStore& store, const std::string& name, const ApanUpdaterConfig& cfg);

  const ApanUpdaterConfig& config() const { return cfg_; }
  // Views of the parameters and of their gradients (after the store's finalize()).
  ApanUpdaterWeights weights() const;
  ApanUpdaterWeights gradients() const;

  // The equation (TGL's TransformerMemoryUpdater, which APAN's TGL config uses):
  //   q = s W_q^T + b_q,  x_j = [mail_j || te(t - mail_ts_j)],
  //   k_j = x_j W_k^T + b_k,  v_j = x_j W_v^T + b_v,
  //   a = attention(q, k, v) over the valid slots (H heads, leaky_relu scores),
  //   s' = relu(dropout(LayerNorm(a + s) W_o^T + b_o)).
  // A node whose mailbox is empty gets a = 0, i.e. s' = relu(LayerNorm(s) W_o^T + b_o).
  void forward(const Tensor& new_memory,    // [B, d_mem]
               ApanUpdaterContext& ctx,     // filled for backward
               const Tensor& memory,        // [B, d_mem]
               const Tensor& mail,          // [B, S, d_mail]
               const Tensor& mail_ts,       // [B, S] timestamps of the mails
               const Tensor& t,             // [B] the update time of each node
               const Tensor& mask,          // [B, S] u8, 1 = slot holds a mail
               const DropoutDraw& dropout,  // the rows' masks
               Arena& arena) const;         // the context's tensors and scratch

  // Parameter gradients ACCUMULATE into the store; d_memory and d_mail OVERWRITE (pass
  // Tensor{} for d_mail when the mails need no gradient).
  void backward(const Tensor& d_memory,      // [B, d_mem]
                const Tensor& d_mail,        // [B, S, d_mail] or Tensor{}
                const Tensor& d_new_memory,  // [B, d_mem]
                const ApanUpdaterContext& ctx, Arena& arena) const;

 private:
  struct Ids {
    ParamId time_w, time_b, w_q, b_q, w_k, b_k, w_v, b_v, ln_gamma, ln_beta, w_o, b_o;
  };
  ApanUpdaterWeights views(bool grads) const;
  void check_forward_args(const Tensor& new_memory, const Tensor& memory, const Tensor& mail,
                          const Tensor& mail_ts, const Tensor& t, const Tensor& mask) const;

  const ParameterStore* store_;
  ApanUpdaterConfig cfg_;
  Ids ids_;
};

}  // namespace depbloom::model
