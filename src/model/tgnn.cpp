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
  state.gather_memory(rows.memory, in.mem_node);
  state.gather_last_update(rows.last_update, in.mem_node);
  state.gather_mail(rows.mail, rows.mail_ts, in.mem_node);
}

void Tgnn::update_memory(const Tensor& updated, const TgnnInputs& in, const MemoryRows& rows,
                         bool training, Arena& arena) {
  rows_ = in.mem_node.numel();
  refined_ = 0;  // until the refine stage runs
  DB_ASSERT(updated.rank() == 2 && updated.dim(0) == rows_ && updated.dim(1) == cfg_.d_input(),
            "tgnn: updated memory must be [{}, {}], got {}", rows_, cfg_.d_input(), updated.str());
  memory_->forward(updated, in, rows, training, arena);
}

namespace {

// rows [T, W] *= weight [T] per row, as T products [1,1] x [1,W] (no dedicated op needed).
void scale_rows(const Tensor& out, const Tensor& rows, const Tensor& weight) {
  const int64_t t = rows.dim(0), w = rows.dim(1);
  ops::gemm_batched(out.reshape(Shape(t, 1, w)), weight.reshape(Shape(t, 1, 1)), ops::Trans::N,
                    rows.reshape(Shape(t, 1, w)), ops::Trans::N);
}

}  // namespace

void Tgnn::refine(const Tensor& updated, const TgnnInputs& in, const Tensor& edge_feat,
                  Arena& arena) {
  const int64_t r = in.refine_base.defined() ? in.refine_base.numel() : 0;
  refined_ = r;
  if (r == 0) return;
  DB_ASSERT(refiner_ != nullptr, "tgnn: {} refined rows but the model has no refiner", r);
  DB_ASSERT(updated.rank() == 2 && updated.dim(0) == rows_ + r,
            "tgnn: refinement needs updated [{}, {}], got {}", rows_ + r, cfg_.d_mem,
            updated.str());
  const DType dtype = updated.dtype();
  const int64_t d = cfg_.d_mem, t = in.term_row.numel();
  const Tensor base = updated.rows(0, rows_);
  refine_s_ = arena.alloc(dtype, Shape(r, d));
  ops::gather_rows(refine_s_, base, in.refine_base);
  // Each term's message as collect() builds the mail: the endpoints' updated rows at that
  // event and its edge features.
  Tensor msg = arena.alloc(dtype, Shape(t, cfg_.d_mail()));
  Tensor self = arena.alloc(dtype, Shape(t, d)), other = arena.alloc(dtype, Shape(t, d));
  ops::gather_rows(self, base, in.term_self);
  ops::gather_rows(other, base, in.term_other);
  if (cfg_.d_edge > 0) {
    Tensor edge = arena.alloc(dtype, Shape(t, cfg_.d_edge));
    ops::gather_rows(edge, edge_feat, in.term_eid);
    ops::concat_cols(msg, {self, other, edge});
  } else {
    ops::concat_cols(msg, {self, other});
  }
  if (in.term_weight.defined()) {
    Tensor scaled = arena.alloc(dtype, msg.shape());
    scale_rows(scaled, msg, in.term_weight);
    msg = scaled;
  }
  refine_m_ = arena.alloc(dtype, Shape(r, cfg_.d_mail()));
  ops::fill(refine_m_, 0.0);
  ops::scatter_add_rows(refine_m_, msg, in.term_row);
  refiner_->forward(updated.rows(rows_, rows_ + r), refine_ctx_, refine_s_, refine_m_, in.refine_dt,
                    arena);
  refine_base_ = in.refine_base, term_row_ = in.term_row;
  term_self_ = in.term_self, term_other_ = in.term_other, term_weight_ = in.term_weight;
}

void Tgnn::refine_backward(const Tensor& d_updated, Arena& arena) {
  const DType dtype = d_updated.dtype();
  const int64_t r = refined_, d = cfg_.d_mem, t = term_row_.numel();
  Tensor d_s = arena.alloc(dtype, Shape(r, d));
  Tensor d_m = arena.alloc(dtype, Shape(r, cfg_.d_mail()));
  refiner_->backward(d_s, d_m, d_updated.rows(rows_, rows_ + r), refine_ctx_, arena);
  const Tensor d_base = d_updated.rows(0, rows_);
  ops::scatter_add_rows(d_base, d_s, refine_base_);
  Tensor d_msg = arena.alloc(dtype, Shape(t, cfg_.d_mail()));
  ops::gather_rows(d_msg, d_m, term_row_);
  if (term_weight_.defined()) {
    Tensor scaled = arena.alloc(dtype, d_msg.shape());
    scale_rows(scaled, d_msg, term_weight_);
    d_msg = scaled;
  }
  // Edge features are data: their columns' gradient is dropped.
  Tensor d_self = arena.alloc(dtype, Shape(t, d)), d_other = arena.alloc(dtype, Shape(t, d));
  if (cfg_.d_edge > 0) {
    ops::split_cols({d_self, d_other, arena.alloc(dtype, Shape(t, cfg_.d_edge))}, d_msg);
  } else {
    ops::split_cols({d_self, d_other}, d_msg);
  }
  ops::scatter_add_rows(d_base, d_self, term_self_);
  ops::scatter_add_rows(d_base, d_other, term_other_);
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

void Tgnn::backward(const Tensor& d_logits, Arena& arena) {
  const DType dtype = d_logits.dtype();
  const int64_t roots = d_logits.numel() + batch_;
  Tensor d_emb = arena.alloc(dtype, Shape(roots, cfg_.d_out()));
  predictor_.backward(d_emb.rows(0, batch_), d_emb.rows(batch_, roots), d_logits, predict_ctx_,
                      arena);
  Tensor d_updated;
  if (cfg_.memory != MemoryKind::none) {
    d_updated = arena.alloc(dtype, Shape(rows_ + refined_, cfg_.d_mem));
    ops::fill(d_updated, 0.0);
  }
  embedding_->backward(d_updated, d_emb, arena);
  // The copies read rows [0, U): their gradient lands there before the updater's backward.
  if (refined_ > 0) refine_backward(d_updated, arena);
  memory_->backward(d_updated.defined() ? d_updated.rows(0, rows_) : d_updated, arena);
}

}  // namespace depbloom::model
