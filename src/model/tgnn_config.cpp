// TgnnConfig's check of a combination of layers, widths and heads; the rules a memory
// model imposes are its table entry's (memory_model.cpp).
#include "depbloom/model/tgnn_config.h"

#include "depbloom/core/error.h"
#include "depbloom/model/memory_model.h"

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
  if (c.embedding == EmbeddingKind::attention)
    if (auto p = attention_problem(c)) return p;
  if (auto p = memory_model(c.memory).rules(c)) return p;
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
