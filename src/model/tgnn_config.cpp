// TgnnConfig's check of a combination of layers, widths and heads.
#include "depbloom/model/tgnn_config.h"
#include "depbloom/core/error.h"

namespace depbloom::model {
namespace {

std::optional<ConfigProblem> attention_problem(const TgnnConfig& c) {
  if (c.layers < 1 || c.layers > kMaxHops)
    return ConfigProblem{
        "layers", fmt::format("{} attention layers; 1 to {} are supported", c.layers, kMaxHops)};
  if (c.neighbours < 1)
    return ConfigProblem{
        "neighbours",
        fmt::format("the attention needs at least 1 neighbour, got {}", c.neighbours)};
  if (c.heads < 1)
    return ConfigProblem{"heads", fmt::format("needs at least 1 head, got {}", c.heads)};
  if (c.attention_style == AttentionStyle::tgl && c.d_emb % c.heads != 0)
    return ConfigProblem{"heads", fmt::format("the attention width {} is not divisible by {} heads",
                                              c.d_emb, c.heads)};
  return std::nullopt;
}

}  // namespace

std::optional<ConfigProblem> find_problem(const TgnnConfig& c) {
  if (c.embedding == EmbeddingKind::attention) {
    if (auto p = attention_problem(c)) return p;
  } else if (c.memory == MemoryKind::none) {
    return ConfigProblem{"embedding",
                         "a model without memory needs the attention embedding (the identity "
                         "embedding of no memory is nothing)"};
  }
  if (c.embedding == EmbeddingKind::jodie && c.memory == MemoryKind::transformer)
    return ConfigProblem{"memory",
                         "JODIE's time projection goes with a recurrent memory, not the "
                         "transformer updater"};
  if (c.memory == MemoryKind::transformer && c.d_mem % c.memory_heads != 0)
    return ConfigProblem{
        "memory_heads",
        fmt::format("the memory width {} is not divisible by {} heads", c.d_mem, c.memory_heads)};
  if (c.mail_dt_at_event && c.memory != MemoryKind::gru && c.memory != MemoryKind::rnn)
    return ConfigProblem{"mail_dt_at_event",
                         "a mail's age as of its event needs the GRU or RNN updater"};
  if (c.memory != MemoryKind::transformer && c.memory != MemoryKind::none && c.mailbox != 1)
    return ConfigProblem{"mailbox",
                         fmt::format("{} mails need the transformer updater; the GRU and RNN "
                                     "updaters read one mail",
                                     c.mailbox)};
  if (c.refine && c.memory == MemoryKind::none)
    return ConfigProblem{"refine", "refinement corrects memory rows: it needs a memory"};
  if (!(c.coherence_weight >= 0.0))
    return ConfigProblem{"coherence_weight", "the coherence loss's weight must be 0 or more"};
  if (c.refine && c.refine_hidden < 1)
    return ConfigProblem{"refine_hidden", "the refiner needs a positive hidden width"};
  return std::nullopt;
}

void validate(const TgnnConfig& c) {
  if (auto p = find_problem(c)) DB_THROW(config, "TgnnConfig.{}: {}", p->field, p->why);
}

}  // namespace depbloom::model
