// The typed parts a Tgnn is composed of (private to the model): how memory rows are updated
// from their mailboxes (none, GRU/RNN, APAN's attention) and how roots are embedded from the
// updated rows (identity, JODIE's projection, temporal attention). Each part keeps the
// context of its last forward for its backward; parameter gradients accumulate.
#pragma once

#include <memory>

#include "depbloom/core/arena.h"
#include "depbloom/core/philox.h"
#include "depbloom/model/copy_messages.h"
#include "depbloom/model/dropout.h"
#include "depbloom/model/parameters.h"
#include "depbloom/model/tgnn.h"

namespace depbloom::model {

// What intra-batch refinement asks of a memory part's updater: the coherence loss's target
// and the updater start (refine.start: updater). Only the parts with an updater offer it.
class UpdaterRefinement {
 public:
  virtual ~UpdaterRefinement() = default;
  // out [n, d_mem] = the updater applied once to memory [n, d_mem] with one mail each (mail
  // [n, d_mail], read dt [n] after it was written), without gradient and without touching
  // the last forward's context: the coherence loss's target. out must not alias memory.
  virtual void apply_detached(const Tensor& out, const Tensor& memory, const Tensor& mail,
                              const Tensor& dt, Arena& arena) const = 0;
  // The same with gradient for R refined copies (refine.start: updater): out [R, d_mem] from
  // memory [R, d_mem] (whose distinct rows `bases` lists: one term per copy), the copies'
  // mails (msgs) and dt (each distinct gap once), keeping its own context (apart from
  // forward's) for backward_start.
  virtual void forward_start(const Tensor& out, const Tensor& memory, const CopyMessages& bases,
                             const CopyMessages& msgs, const CopyTimes& dt, Arena& arena) = 0;
  // The memory's gradient is d_memory [R, d_mem] (overwrites) plus, spread over the copies,
  // d_bases [B', d_mem] (accumulates); d_distinct [D, d_mail] accumulates; parameter
  // gradients accumulate.
  virtual void backward_start(const Tensor& d_memory, const Tensor& d_bases,
                              const Tensor& d_distinct, const Tensor& d_out, Arena& arena) = 0;
};

class MemoryPart {
 public:
  virtual ~MemoryPart() = default;
  // Whether the gather stage reads node state for this part.
  virtual bool reads_state() const { return true; }
  // updated [U, d_input] from the gathered rows: rows [0, n) run through the updater
  // (n = in.mem_with_mail, or U), the rest keep their memory.
  virtual void forward(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
                       bool training, Arena& arena) = 0;
  // d_updated [U, d_input], or Tensor{} when the embedding sent no gradient.
  virtual void backward(const Tensor& d_updated, Arena& arena) = 0;
  // Refinement's hooks into the part's updater; null for a part without one (no memory).
  virtual UpdaterRefinement* refinement() { return nullptr; }
};

class EmbeddingPart {
 public:
  virtual ~EmbeddingPart() = default;
  // emb [(2+K)B, d_out] of every root.
  virtual void forward(const Tensor& emb, const TgnnInputs& in, const Tensor& updated,
                       const MemoryRows& rows, const Tensor& edge_feat, bool training,
                       Arena& arena) = 0;
  // d_updated [U + refined, d_input] is overwritten, every row (Tensor{}: not wanted); d_emb
  // [(2+K)B, d_out].
  virtual void backward(const Tensor& d_updated, const Tensor& d_emb, Arena& arena) = 0;
};

// The part of cfg.memory's table entry.
std::unique_ptr<MemoryPart> make_memory_part(ParameterStore& store, const TgnnConfig& cfg);
// The built-in memory models' parts (memory_parts.cpp), named by the memory-model table.
std::unique_ptr<MemoryPart> make_no_memory(ParameterStore& store, const TgnnConfig& cfg);
std::unique_ptr<MemoryPart> make_gru_memory(ParameterStore& store, const TgnnConfig& cfg);
std::unique_ptr<MemoryPart> make_rnn_memory(ParameterStore& store, const TgnnConfig& cfg);
std::unique_ptr<MemoryPart> make_attention_memory(ParameterStore& store, const TgnnConfig& cfg);
std::unique_ptr<EmbeddingPart> make_embedding_part(ParameterStore& store, const TgnnConfig& cfg);

// The dropout draws of one layer (stream separates the layers) over rows [begin, end) of
// the counters `ids`; nothing is drawn outside training or with p = 0.
DropoutDraw dropout_draw(const TgnnInputs& in, uint32_t stream, const Tensor& ids, int64_t begin,
                         int64_t end, bool training, double p);

}  // namespace depbloom::model
