// Tgnn: the memory-based temporal GNNs (TGN, JODIE, APAN) and the memory-less TGAT model,
// assembled from this folder's layers as one forward/backward pair over TgnnInputs, the
// device-side description of one batch that the trainer's planner builds. The model owns
// no node state: it reads a NodeState and leaves the write-back to the caller, which gets
// the updated memory of every input row (updated_memory()).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/philox.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/apan_updater.h"
#include "depbloom/model/jodie_projection.h"
#include "depbloom/model/link_predictor.h"
#include "depbloom/model/memory_updater.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/temporal_attention.h"
#include "depbloom/model/tgnn_config.h"

namespace depbloom::model {

// One batch on the model's device. Hop-0 roots are (2+K)B: the B sources, the B positive
// destinations, then K blocks of B negatives. U "memory rows" are the distinct (node,
// time) pairs among the roots and the sampled neighbours; each gets its memory updated
// from its mailbox at that time (TGL's semantics) and feeds every position that names it.
struct TgnnInputs {
  int64_t events = 0;          // B
  int32_t negatives = 1;       // K
  Tensor mem_node;             // [U] i32 node ids
  Tensor mem_time;             // [U] the update time (state dtype)
  Tensor mem_inv_time;         // [U] 1 / (time + 1), JODIE's normalisation of dt (JODIE only)
  Tensor mem_mask;             // [U, slots] u8, 1 = the slot holds a mail (transformer updater)
  int64_t mem_with_mail = -1;  // rows [0, this) hold mail, the rest none; -1: all rows update
  Tensor root_row;             // [(2+K)B] i32 memory row of each root
  // Per sampled hop l < hops(): R_l = (2+K)B k^l roots, each with `neighbours` slots.
  std::array<Tensor, kMaxHops> slot_row;   // [R_l * k] i32 memory row, -1 for an empty slot
  std::array<Tensor, kMaxHops> slot_eid;   // [R_l * k] i64 edge feature row, -1 when empty
  std::array<Tensor, kMaxHops> slot_dt;    // [R_l, k] root time - edge time (state dtype)
  std::array<Tensor, kMaxHops> slot_mask;  // [R_l, k] u8
  // Dropout counters (i64): of the hop-l roots [R_l] (attention) and of the memory rows
  // [U] (the APAN updater); what a row is, not where it sits, keys its mask.
  std::array<Tensor, kMaxHops> root_id;
  Tensor mem_id;
  uint64_t seed = 0;  // dropout draws: (seed, epoch, counter)
  uint32_t epoch = 0;
};

// Host wall time per part of the step, accumulated until reset (on a GPU the launches are
// asynchronous, so time lands where the host next waits).
struct TgnnTimes {
  double gather = 0, memory_update = 0, embed = 0, predict = 0;
  double backward_predict = 0, backward_embed = 0, backward_memory = 0;
};

class Tgnn {
 public:
  // Declares every parameter in `store` (which must not be finalized yet).
  Tgnn(ParameterStore& store, const TgnnConfig& cfg);
  // Binds the weight views; call after store.finalize().
  void bind();

  const TgnnConfig& config() const { return cfg_; }

  // logits [(1+K)B]: TGL's order (positives, then the K negative blocks). edge_feat
  // [E, d_edge] on the device (Tensor{} without edge features). Everything the backward
  // needs lives in `arena` until its reset.
  void forward(Arena& arena, const TgnnInputs& in, const NodeState& state, const Tensor& edge_feat,
               bool training, const Tensor& logits);
  // Accumulates the parameter gradients of loss(logits) given d_logits [(1+K)B].
  void backward(Arena& arena, const Tensor& d_logits);

  // [U, d_mem] the updated memory of every memory row of the last forward (detach by
  // copying); undefined for memory none.
  const Tensor& updated_memory() const { return step_.updated; }
  // [U] the last-update times of the memory rows as gathered (before this step's writes).
  const Tensor& row_last_update() const { return step_.last_update; }

  TgnnTimes& times() { return times_; }

 private:
  struct AttentionParams {
    std::vector<ParamId> ids;
    std::vector<std::string> names;
    TemporalAttentionWeights value, grad;
  };
  struct ApanParams {
    std::vector<ParamId> ids;
    std::vector<std::string> names;
    ApanUpdaterWeights value, grad;
  };
  // What one forward leaves for its backward: views into the step arena and the layer
  // contexts (plain structs of views, so resetting them allocates nothing).
  struct StepState {
    int64_t u = 0, roots = 0, batch = 0;
    int64_t updating = 0;  // memory rows [0, updating) run through the updater
    bool training = false;
    const TgnnInputs* in = nullptr;
    Tensor memory, last_update, mail, mail_ts;  // gathered state rows [U, ...]
    Tensor mail_dt;                             // [U] time - last update (recurrent)
    Tensor updated;                             // [U, d_input] the updated memory
    MemoryUpdaterContext recurrent;
    ApanUpdaterContext apan;
    Tensor jodie_dt;  // [R0] JODIE's normalised time since update
    JodieProjectionContext jodie;
    std::array<Tensor, kMaxHops> edges;  // [R_l, k, d_edge] features of hop l's slots
    // h[i][j]: input of layer i (0: memory rows) at hop j; attn[i][j]: layer i at hop j.
    std::array<std::array<Tensor, kMaxHops + 1>, kMaxHops + 1> h;
    std::array<std::array<TemporalAttentionContext, kMaxHops>, kMaxHops> attn;
    // table[j]: layer 0 at hop j read its neighbours as rows of `updated` (table mode).
    std::array<bool, kMaxHops> table{};
    Tensor emb;  // [R0, d_out]
    LinkPredictorContext predictor;
  };

  void update_memory(Arena& arena, const TgnnInputs& in, const NodeState& state);
  void embed(Arena& arena, const TgnnInputs& in, const Tensor& edge_feat);
  void backward_embedding(Arena& arena, const Tensor& d_emb, const Tensor& d_updated);
  void backward_memory(Arena& arena, const Tensor& d_updated);
  int64_t hop_roots(int hop) const;
  // Dropout counters of rows [begin, end) of `ids`; nothing when no mask is drawn.
  ops::DropoutRows dropout_rows(const Tensor& ids, int64_t begin, int64_t end) const;

  ParameterStore* store_;
  TgnnConfig cfg_;
  std::unique_ptr<RecurrentMemoryUpdater> recurrent_;
  std::unique_ptr<ApanMemoryUpdater> apan_;
  ApanParams apan_params_;
  std::unique_ptr<JodieProjection> jodie_;
  std::vector<TemporalAttentionLayer> attention_;
  std::vector<AttentionParams> attention_params_;
  std::unique_ptr<LinkPredictor> predictor_;
  StepState step_;
  TgnnTimes times_;
};

}  // namespace depbloom::model
