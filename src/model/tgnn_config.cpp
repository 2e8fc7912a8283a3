// TgnnConfig's check of a combination of layers, widths and heads.
#include "depbloom/model/tgnn_config.h"
#include "depbloom/core/error.h"

namespace depbloom::model {

void validate(const TgnnConfig& c) {
  if (c.embedding == EmbeddingKind::attention) {
    if (c.layers < 1 || c.layers > kMaxHops)
      DB_THROW(config, "gnn.layer: {} attention layers; 1 to {} are supported", c.layers, kMaxHops);
    if (c.neighbours < 1) DB_THROW(config, "sampling.neighbor: needs at least 1 neighbour");
    if (c.attention_style == AttentionStyle::tgl && c.d_emb % c.heads != 0)
      DB_THROW(config, "gnn.dim_out {} is not divisible by gnn.att_head {}", c.d_emb, c.heads);
    if (c.heads < 1) DB_THROW(config, "gnn.att_head: needs at least 1 head, got {}", c.heads);
  } else if (c.memory == MemoryKind::none) {
    DB_THROW(config,
             "memory.type: none needs gnn.arch: transformer_attention (the identity "
             "embedding of no memory is nothing)");
  }
  if (c.embedding == EmbeddingKind::jodie && c.memory == MemoryKind::transformer)
    DB_THROW(config, "gnn.time_transform: JODIE goes with a recurrent memory, not transformer");
  if (c.memory == MemoryKind::transformer && c.d_mem % c.memory_heads != 0)
    DB_THROW(config, "memory.dim_out {} is not divisible by memory.attention_head {}", c.d_mem,
             c.memory_heads);
  if (c.mail_dt_at_event && c.memory != MemoryKind::gru && c.memory != MemoryKind::rnn)
    DB_THROW(config, "memory.mail_time: event needs memory.memory_update gru or rnn");
  if (c.memory != MemoryKind::transformer && c.memory != MemoryKind::none && c.mailbox != 1)
    DB_THROW(config,
             "memory.mailbox_size: {} mails need memory.memory_update: transformer; "
             "the GRU and RNN updaters read one mail",
             c.mailbox);
}

}  // namespace depbloom::model
