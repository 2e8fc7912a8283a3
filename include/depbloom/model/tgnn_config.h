// TgnnConfig: what a Tgnn is (memory updater, embedding, widths, heads, sampling fan-out)
// and the check of a combination. Errors are config errors in the model's own terms; the
// cli maps them to its keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "depbloom/model/temporal_attention.h"  // AttentionStyle

namespace depbloom::model {

// A memory model: its index in the memory-model table (memory_model.h). The built-ins have
// names; a model registered there gets the next index.
enum class MemoryKind : int { none, gru, rnn, transformer };
enum class EmbeddingKind { attention, identity, jodie };

constexpr int kMaxHops = 4;

enum class NeighbourReads { automatic, table, slots };

// What a refined copy's correction starts from (refine.start): the base row itself, or the
// model's own updater applied to it with the copy's aggregated in-batch message.
enum class RefineStart { identity, updater };

struct TgnnConfig {
  MemoryKind memory = MemoryKind::gru;
  EmbeddingKind embedding = EmbeddingKind::attention;
  // TGL's attention layer or the TGN authors' (see AttentionStyle); the defaults here are
  // configs/tgn-wiki.yaml's (the TGN authors' layer, dropout 0.1).
  AttentionStyle attention_style = AttentionStyle::tgn;
  int64_t d_mem = 100;       // node memory width
  int64_t d_mem_time = 100;  // time encoding of the mail's age in the updater
  int64_t d_edge = 0;        // edge feature width of the stream (0: none)
  int64_t d_emb = 100;       // attention output width
  int64_t d_gnn_time = 100;  // time encoding in the attention layers
  int layers = 1;            // attention layers (each one sampled hop)
  int heads = 2;             // attention heads
  int neighbours = 10;       // sampled neighbours per hop
  int memory_heads = 2;      // heads of the transformer (APAN) updater
  int mailbox = 1;           // mail slots per node
  // Time encoded with a mail in the recurrent updaters: false (TGL) t_read - t_last_update,
  // computed when the mail is read; true (the TGN authors' code) t_event - t_last_update
  // as of the mail's event, fixed when it is written (the planner stores it as mail_ts).
  bool mail_dt_at_event = false;
  // A node whose mailbox is empty keeps its memory (as in the TGN authors' code) instead of
  // running the updater on a zero mail (TGL). The planner puts those rows last.
  bool skip_empty_mailbox = true;
  // JODIE's time projection reads dt = t - t_last normalised. time_scale 0: TGL's
  // dt / (t + 1); else the TGN authors' standardisation (dt - time_shift) / time_scale,
  // with the mean and standard deviation of the training events' per-node time gaps.
  double time_shift = 0.0, time_scale = 0.0;
  double dropout = 0.1;
  // How the first attention layer reads its neighbours: as rows of the updated memory
  // (table mode) when there are fewer rows than slots (automatic), or always one way. Both
  // give the same model; the fixed choices let tests check each path.
  NeighbourReads neighbour_reads = NeighbourReads::automatic;
  // Intra-batch refinement (DESIGN.md 7.2): a MemoryRefiner of this hidden width corrects
  // the memory rows the trainer lists. Off (no parameters declared) unless refine is set.
  bool refine = false;
  int64_t refine_hidden = 64;
  // updater: s' = u + g * f(u, m, dt) with u the updater applied (with gradient) to the base
  // row s and the aggregated message m, so that a fresh refiner already gives the memory a
  // sequential run would read; identity: s' = s + g * f(s, m, dt).
  RefineStart refine_start = RefineStart::identity;
  // The coherence loss's weight (refinement only; 0: off): Tgnn::coherence_loss.
  double coherence_weight = 0.0;

  int64_t d_mail() const { return 2 * d_mem + d_edge; }
  // Width of a node's input to the embedding: its memory, or one zero column without
  // memory (the stream has no node features; a zero input adds nothing).
  int64_t d_input() const { return memory == MemoryKind::none ? 1 : d_mem; }
  int64_t d_out() const { return embedding == EmbeddingKind::attention ? d_emb : d_input(); }
  int hops() const { return embedding == EmbeddingKind::attention ? layers : 0; }
};

// A combination the model cannot build: the TgnnConfig field at fault ("layers") and why,
// in the model's terms; the cli names its config key instead of the field.
struct ConfigProblem {
  const char* field;
  std::string why;
};

// The first problem of the combination (layer counts, widths, heads), if any.
std::optional<ConfigProblem> find_problem(const TgnnConfig& cfg);
// Throws a config error "TgnnConfig.<field>: <why>" for find_problem's problem.
void validate(const TgnnConfig& cfg);

}  // namespace depbloom::model
