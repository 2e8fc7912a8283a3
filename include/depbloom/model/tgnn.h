// Tgnn: the memory-based temporal GNNs (TGN, JODIE, APAN) and the memory-less TGAT model,
// composed of typed parts (a memory part, an embedding part, the link predictor) and run as
// the stages of a step over explicit buffers: gather -> update_memory -> embed -> predict,
// then backward. TgnnInputs is the device-side description of one batch that the trainer
// stages. The model owns no node state: the gather stage reads a NodeState into
// MemoryRows, and the caller writes back from the updated memory rows.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "depbloom/core/arena.h"
#include "depbloom/core/tensor.h"
#include "depbloom/model/link_predictor.h"
#include "depbloom/model/memory_refiner.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/tgnn_config.h"

namespace depbloom::model {

// Intra-batch refinement's inputs (DESIGN.md 7.2; undefined without it): R refined copies,
// rows [U, U + R) of the embedding's input. Copy c corrects input row row[c] with the
// messages of T terms: term t adds weight * message term_msg[t] to copy term_row[t]. The D
// distinct messages are the mails the write-back builds: message i is [updated[msg_self[i]]
// || updated[msg_other[i]] || edge_feat[msg_eid[i]]].
struct RefineInputs {
  Tensor row;  // [R] i32 input row in [0, U)
  // The distinct rows among `row` (first-copy order) and each copy's index among them.
  Tensor base;     // [B'] i32 input row in [0, U)
  Tensor base_of;  // [R] i32 in [0, B')
  Tensor dt;       // [R] the read's time - the latest earlier in-batch event's (state dtype)
  // The distinct values of dt and each copy's index among them: the refiner and the updater
  // start encode each distinct gap once.
  Tensor dts;                      // [Dt] (state dtype)
  Tensor dt_of;                    // [R] i32 in [0, Dt)
  Tensor term_row;                 // [T] i32 copy in [0, R)
  Tensor term_msg;                 // [T] i32 message in [0, D)
  Tensor term_weight;              // [T] (state dtype), undefined: every weight is 1
  bool term_one_per_copy = false;  // T = R, term t is copy t's only term, weight 1 (`last`)
  Tensor msg_self, msg_other;      // [D] i32 input rows in [0, U)
  Tensor msg_eid;                  // [D] i64 edge feature row (with edge features)
  // refine.start: updater with the TGN authors' mail time (else undefined): the age the
  // updater reads each copy's message with, as of the latest earlier event: its time minus
  // the previous earlier event's, or where `first` is 1 its time (the model subtracts the
  // row's last update). With TGL's mail time the updater reads it at dt.
  Tensor mail_dt;  // [R] (state dtype)
  Tensor first;    // [R] 1 or 0 (state dtype)
};

// The coherence loss's inputs (training with a coherence weight; else undefined): the
// sampled copies and their earlier mails in rounds (train::CoherencePlan). Round i applies
// entries [round[i], round[i+1]) to the first copies of `copy`, in order.
struct CoherenceInputs {
  Tensor copy;         // [S] i32 copy in [0, R)
  Tensor round;        // [rounds + 1] i64 entry offsets, on the HOST
  Tensor self, other;  // [E] i32 input rows in [0, U) (the mail's endpoints)
  Tensor eid;          // [E] i64 edge feature row (with edge features)
  Tensor dt;           // [E] the dt the updater reads the mail with (state dtype)
};

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
  std::array<Tensor, kMaxHops> slot_row;  // [R_l * k] i32 memory row, -1 for an empty slot
  // The distinct rows hop l's slots read and each slot's index among them (-1 empty): a layer
  // reading them as a table projects only those rows.
  std::array<Tensor, kMaxHops> slot_read;     // [Q_l] i32 input row
  std::array<Tensor, kMaxHops> slot_read_of;  // [R_l * k] i32 in [0, Q_l)
  std::array<Tensor, kMaxHops> slot_eid;      // [R_l * k] i64 edge feature row, -1 when empty
  std::array<Tensor, kMaxHops> slot_dt;       // [R_l, k] root time - edge time (state dtype)
  std::array<Tensor, kMaxHops> slot_mask;     // [R_l, k] u8
  // Dropout counters (i64): of the hop-l roots [R_l] (attention) and of the memory rows
  // [U] (the APAN updater); what a row is, not where it sits, keys its mask.
  std::array<Tensor, kMaxHops> root_id;
  Tensor mem_id;
  RefineInputs refine;        // intra-batch refinement (undefined without it)
  CoherenceInputs coherence;  // the coherence loss (undefined without it)
  uint64_t seed = 0;          // dropout draws: (seed, epoch, counter)
  uint32_t epoch = 0;
};

class MemoryPart;
class EmbeddingPart;
class UpdaterRefinement;

class Tgnn {
 public:
  // Declares every parameter in `store` (which must not be finalized yet); the parts read
  // their views once it is.
  Tgnn(ParameterStore& store, const TgnnConfig& cfg);
  ~Tgnn();
  Tgnn(const Tgnn&) = delete;
  Tgnn& operator=(const Tgnn&) = delete;

  const TgnnConfig& config() const { return cfg_; }

  // Gather stage: rows [U, ...] of `state` for in.mem_node, from `arena` (nothing without
  // memory).
  void gather(MemoryRows& rows, const NodeState& state, const TgnnInputs& in, Arena& arena) const;
  // Memory-update stage: updated [U, d_input()], every memory row's memory as of its time
  // (rows without mail pass through); with gradient.
  void update_memory(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
                     bool training, Arena& arena);
  // Refine stage: rows [U, U + R) of updated [U + R, d_input()] from rows [0, U) (filled by
  // update_memory) and in.refine_* / term_* / msg_*; nothing when in has no refined copies. rows'
  // last updates are read with refine.start: updater and the TGN authors' mail time.
  void refine(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
              const Tensor& edge_feat, Arena& arena);
  // After refine, with coherence rows (in.coh_*; training only): target [S, d_mem] = each
  // sampled copy's base row with its earlier in-batch mails applied in order by the updater
  // (no gradient; rows.last_update is read with mail_dt_at_event).
  void coherence_target(const Tensor& target, const Tensor& updated, const TgnnInputs& in,
                        const MemoryRows& rows, const Tensor& edge_feat, Arena& arena);
  // loss [1] = coherence_weight * mean over the S copies of |s'_c - target_c|^2, with s' the
  // refined copies in updated and target the last coherence_target's (a constant).
  void coherence_loss(const Tensor& loss, const Tensor& updated, const Tensor& target,
                      Arena& arena);
  // Embed stage: emb [(2+K)B, d_out()] of every root from the updated rows (and copies).
  void embed(const Tensor& emb, const TgnnInputs& in, const Tensor& updated, const MemoryRows& rows,
             const Tensor& edge_feat, bool training, Arena& arena);
  // Predict (the loss stage's first half): logits [(1+K)B] in TGL's order (positives, then
  // the K negative blocks) from emb.
  void predict(const Tensor& logits, const Tensor& emb, Arena& arena);
  // Accumulates the parameter gradients of loss(logits) + coherence_share * the last
  // coherence_loss given d_logits [(1+K)B], through the last predict, embed, refine and
  // update_memory (whose buffers must still be alive).
  void backward(const Tensor& d_logits, Arena& arena, double coherence_share = 0.0);

  bool refines() const { return refiner_ != nullptr; }

 private:
  // d_updated [U + R, d_mem]: the copies' gradient pushed onto rows [0, U) (accumulates).
  void refine_backward(const Tensor& d_updated, Arena& arena);
  // The dt the updater reads each copy's message with (refine.start: updater).
  CopyTimes start_dt(const TgnnInputs& in, const CopyTimes& gaps, const MemoryRows& rows,
                     Arena& arena) const;
  // Adds the last coherence loss's gradient (times share) onto the copies of d_updated.
  void coherence_backward(const Tensor& d_updated, double share, Arena& arena);

  TgnnConfig cfg_;
  std::unique_ptr<MemoryPart> memory_;
  std::unique_ptr<EmbeddingPart> embedding_;
  LinkPredictor predictor_;
  // The last forward, for backward.
  int64_t batch_ = 0, rows_ = 0;
  LinkPredictorContext predict_ctx_;
  // The memory part's updater, for refinement; a runtime error for a model without one.
  UpdaterRefinement& updater_refinement() const;
  // Refinement (cfg.refine only) and its last forward.
  std::unique_ptr<MemoryRefiner> refiner_;
  MemoryRefinerContext refine_ctx_;
  int64_t refined_ = 0;
  Tensor refine_s_, refine_base_, refine_bases_, msg_self_, msg_other_;
  CopyMessages refine_msgs_, refine_rows_;
  // The coherence loss's last forward: its copies and s' - target.
  int64_t coherence_rows_ = 0;
  Tensor coherence_copy_, coherence_diff_;
};

}  // namespace depbloom::model
