// Tgnn: the stages of a step over its parts (gather, memory update, embedding, link
// predictor) and the reverse pass. The memory rows are deduplicated by the trainer's plan;
// the parts read them through row indices.
#include "depbloom/model/tgnn.h"

#include "depbloom/backend/ops.h"
#include "model/tgnn_parts.h"

namespace depbloom::model {

Tgnn::Tgnn(ParameterStore& store, const TgnnConfig& cfg)
    : cfg_((validate(cfg), cfg)),
      memory_(make_memory_part(store, cfg_)),
      embedding_(make_embedding_part(store, cfg_)),
      predictor_(store, "edge_predictor", cfg_.d_out()) {
  // Declared only when asked for, so that m = 1 runs keep their parameter layout.
  if (cfg_.refine)
    refiner_ = std::make_unique<MemoryRefiner>(store, "refine", cfg_.d_mem, cfg_.d_mail(),
                                               cfg_.d_mem_time, cfg_.refine_hidden);
}

Tgnn::~Tgnn() = default;

void Tgnn::gather(MemoryRows& rows, const NodeState& state, const TgnnInputs& in,
                  Arena& arena) const {
  rows = MemoryRows{};
  if (!memory_->reads_state()) return;
  const int64_t u = in.mem_node.numel();
  const DType dtype = state.dtype();
  rows.memory = arena.alloc(dtype, Shape(u, cfg_.d_mem));
  rows.last_update = arena.alloc(dtype, Shape(u));
  rows.mail = arena.alloc(dtype, Shape(u, state.mail_slots(), cfg_.d_mail()));
  rows.mail_ts = arena.alloc(dtype, Shape(u, state.mail_slots()));
  state.gather(rows, in.mem_node);
}

void Tgnn::update_memory(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
                         bool training, Arena& arena) {
  rows_ = in.mem_node.numel();
  refined_ = 0, coherence_rows_ = 0;  // until the refine and loss stages run
  DB_ASSERT(updated.rank() == 2 && updated.dim(0) == rows_ && updated.dim(1) == cfg_.d_input(),
            "tgnn: updated memory must be [{}, {}], got {}", rows_, cfg_.d_input(), updated.str());
  memory_->forward(updated, in, rows, training, arena);
}

void Tgnn::embed(const Tensor& emb, const TgnnInputs& in, const Tensor& updated,
                 const MemoryRows& rows, const Tensor& edge_feat, bool training, Arena& arena) {
  const int64_t roots = (2 + in.negatives) * in.events;
  DB_ASSERT(in.events > 0 && in.root_row.numel() == roots && emb.rank() == 2 &&
                emb.dim(0) == roots && emb.dim(1) == cfg_.d_out(),
            "tgnn: {} events with {} negatives need {} roots and emb [{}, {}], got {} and {}",
            in.events, in.negatives, roots, roots, cfg_.d_out(), in.root_row.str(), emb.str());
  batch_ = in.events;
  embedding_->forward(emb, in, updated, rows, edge_feat, training, arena);
}

void Tgnn::predict(const Tensor& logits, const Tensor& emb, Arena& arena) {
  const int64_t roots = emb.dim(0);
  DB_ASSERT(logits.numel() == roots - batch_, "tgnn: {} roots need {} logits, got {}", roots,
            roots - batch_, logits.str());
  predictor_.forward(logits, predict_ctx_, emb.rows(0, batch_), emb.rows(batch_, roots), arena);
}

void Tgnn::backward(const Tensor& d_logits, Arena& arena, double coherence_share) {
  const DType dtype = d_logits.dtype();
  const int64_t roots = d_logits.numel() + batch_;
  Tensor d_emb = arena.alloc(dtype, Shape(roots, cfg_.d_out()));
  predictor_.backward(d_emb.rows(0, batch_), d_emb.rows(batch_, roots), d_logits, predict_ctx_,
                      arena);
  Tensor d_updated;
  // Overwritten by the embedding's backward (its first scatter starts from zeros).
  if (cfg_.memory != MemoryKind::none)
    d_updated = arena.alloc(dtype, Shape(rows_ + refined_, cfg_.d_mem));
  embedding_->backward(d_updated, d_emb, arena);
  // The copies read rows [0, U): their gradient lands there before the updater's backward.
  if (refined_ > 0) {
    coherence_backward(d_updated, coherence_share, arena);
    refine_backward(d_updated, arena);
  }
  memory_->backward(d_updated.defined() ? d_updated.rows(0, rows_) : d_updated, arena);
}

}  // namespace depbloom::model
