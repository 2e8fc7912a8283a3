// Tgnn: memory update -> embedding -> link predictor, and the reverse pass. The memory
// rows are deduplicated by the planner; gathers from them feed the roots and the sampled
// neighbours, and the backward scatters the gradients back (deterministically).
#include "depbloom/model/tgnn.h"

#include "depbloom/backend/ops.h"
#include "depbloom/core/timer.h"
#include "depbloom/model/context.h"

namespace depbloom::model {
namespace {

InitScheme init_for(const std::string& name) {
  if (name == "time_w") return InitScheme::time_frequencies;
  if (name == "ln_gamma") return InitScheme::ones;
  if (name == "time_b" || name == "ln_beta") return InitScheme::zeros;
  return InitScheme::uniform_fan_in;  // w_* and b_*, as torch.nn.Linear
}

// Declares an attention-style layer's parameters under `prefix` with torch's init. The
// TGN authors' layer (tgn_init) initialises as their torch modules do: MultiheadAttention's
// input projections xavier-uniform (over the stacked [3A, A] weight when Q, K and V all
// read A columns) with zero biases, its output projection as nn.Linear, and the MergeLayer
// weights xavier-normal.
std::vector<ParamId> declare_shapes(ParameterStore& store, const std::string& prefix,
                                    const std::vector<AttentionParamShape>& shapes,
                                    bool tgn_init = false) {
  auto shape_of = [&](const std::string& name) {
    for (const auto& w : shapes)
      if (w.name == name) return w.shape;
    return Shape();
  };
  bool stacked_qkv = false;
  if (tgn_init) {
    const Shape q = shape_of("w_q"), k = shape_of("w_k"), v = shape_of("w_v");
    stacked_qkv = q[0] == q[1] && k[1] == q[1] && v[1] == q[1];
  }
  std::vector<ParamId> ids;
  for (const auto& s : shapes) {
    int64_t fan_in = 0, fan_out = 0;
    if (s.name[0] == 'w' || s.name[0] == 'b') {
      // A bias takes the fan-in of its weight (w_q for b_q), as torch.nn.Linear does.
      const Shape w = shape_of("w" + s.name.substr(1));
      if (w.rank == 2) fan_in = w[1], fan_out = w[0];
    }
    InitScheme init = init_for(s.name);
    if (tgn_init) {
      const bool qkv = s.name == "w_q" || s.name == "w_k" || s.name == "w_v";
      if (qkv) {
        init = InitScheme::xavier_uniform;
        if (stacked_qkv) fan_out *= 3;
      } else if (s.name == "b_q" || s.name == "b_k" || s.name == "b_v") {
        init = InitScheme::zeros;
      } else if (s.name == "w_1" || s.name == "w_2") {
        init = InitScheme::xavier_normal;
      }
    }
    ids.push_back(store.declare(prefix + s.name, s.shape, init, fan_in, fan_out));
  }
  return ids;
}

// Points the weight struct's members at the store's value and gradient slices; `names`
// are the layer's parameter_shapes() names, in the order of `ids`.
template <class Weights>
void bind_views(const ParameterStore& store, const std::vector<ParamId>& ids,
                const std::vector<std::string>& names, Weights& value, Weights& grad) {
  for (size_t i = 0; i < ids.size(); ++i) {
    *value.field(names[i]) = store.value(ids[i]);
    *grad.field(names[i]) = store.grad(ids[i]);
  }
}

std::vector<std::string> names_of(const std::vector<AttentionParamShape>& shapes) {
  std::vector<std::string> names;
  for (const auto& s : shapes) names.push_back(s.name);
  return names;
}

RngKey dropout_key(uint64_t seed, uint32_t epoch, uint32_t stream) {
  return RngKey{seed, static_cast<uint32_t>(RngPurpose::dropout) + (stream << 8), epoch};
}

}  // namespace

Tgnn::Tgnn(ParameterStore& store, const TgnnConfig& cfg) : store_(&store), cfg_(cfg) {
  validate(cfg_);
  if (cfg_.memory == MemoryKind::gru || cfg_.memory == MemoryKind::rnn) {
    auto cell = cfg_.memory == MemoryKind::gru ? RecurrentCell::gru : RecurrentCell::rnn;
    recurrent_ = std::make_unique<RecurrentMemoryUpdater>(
        store, "memory_updater", cell, cfg_.d_mail(), cfg_.d_mem_time, cfg_.d_mem);
  } else if (cfg_.memory == MemoryKind::transformer) {
    ApanUpdaterConfig a;
    a.d_mem = cfg_.d_mem;
    a.d_mail = cfg_.d_mail();
    a.d_time = cfg_.d_mem_time;
    a.heads = cfg_.memory_heads;
    a.dropout = cfg_.dropout;
    apan_ = std::make_unique<ApanMemoryUpdater>(a);
    apan_params_.ids = declare_shapes(store, "memory_updater.", apan_->parameter_shapes());
    apan_params_.names = names_of(apan_->parameter_shapes());
  }
  if (cfg_.embedding == EmbeddingKind::attention) {
    for (int i = 0; i < cfg_.layers; ++i) {
      TemporalAttentionConfig a;
      a.d_in = i == 0 ? cfg_.d_input() : cfg_.d_emb;
      a.d_edge = cfg_.d_edge;
      a.d_time = cfg_.d_gnn_time;
      a.d_out = cfg_.d_emb;
      a.heads = cfg_.heads;
      a.dropout = cfg_.dropout;
      a.style = cfg_.attention_style;
      attention_.emplace_back(a);
      AttentionParams p;
      p.ids = declare_shapes(store, "layer" + std::to_string(i) + ".",
                             attention_.back().parameter_shapes(),
                             cfg_.attention_style == AttentionStyle::tgn);
      p.names = names_of(attention_.back().parameter_shapes());
      attention_params_.push_back(std::move(p));
    }
  } else if (cfg_.embedding == EmbeddingKind::jodie) {
    jodie_ = std::make_unique<JodieProjection>(store, "time_projection", cfg_.d_mem);
  }
  predictor_ = std::make_unique<LinkPredictor>(store, "edge_predictor", cfg_.d_out());
}

void Tgnn::bind() {
  DB_ASSERT(store_->finalized(), "Tgnn::bind needs a finalized ParameterStore");
  if (apan_)
    bind_views(*store_, apan_params_.ids, apan_params_.names, apan_params_.value,
               apan_params_.grad);
  for (auto& p : attention_params_) bind_views(*store_, p.ids, p.names, p.value, p.grad);
}

ops::DropoutRows Tgnn::dropout_rows(const Tensor& ids, int64_t begin, int64_t end) const {
  if (!step_.training || cfg_.dropout == 0.0) return {};  // no mask is drawn
  DB_ASSERT(ids.defined() && ids.numel() >= end,
            "tgnn: dropout needs an id per row (TgnnInputs root_id / mem_id), got {} for rows "
            "[{}, {})",
            ids.str(), begin, end);
  return ops::DropoutRows(ids.rows(begin, end));
}

int64_t Tgnn::hop_roots(int hop) const {
  int64_t r = step_.roots;
  for (int j = 0; j < hop; ++j) r *= cfg_.neighbours;
  return r;
}

void Tgnn::forward(Arena& arena, const TgnnInputs& in, const NodeState& state,
                   const Tensor& edge_feat, bool training, const Tensor& logits) {
  const int64_t batch = in.events;
  const int64_t roots = (2 + in.negatives) * batch;
  DB_ASSERT(
      batch > 0 && in.root_row.numel() == roots && logits.numel() == (1 + in.negatives) * batch,
      "tgnn: {} events with {} negatives need {} roots and {} logits, got {} and {}", batch,
      in.negatives, roots, (1 + in.negatives) * batch, in.root_row.str(), logits.str());
  step_.in = &in;
  step_.batch = batch;
  step_.roots = roots;
  step_.u = in.mem_node.numel();
  step_.training = training;
  update_memory(arena, in, state);
  Stopwatch watch;
  embed(arena, in, edge_feat);
  times_.embed += watch.seconds();
  watch.restart();
  predictor_->forward(arena, step_.predictor, logits, step_.emb.rows(0, batch),
                      step_.emb.rows(batch, roots));
  times_.predict += watch.seconds();
}

void Tgnn::update_memory(Arena& arena, const TgnnInputs& in, const NodeState& state) {
  const int64_t u = step_.u;
  const DType dtype = store_->dtype();
  if (cfg_.memory == MemoryKind::none) {
    step_.updated = arena.alloc(dtype, Shape(u, 1));
    ops::fill(step_.updated, 0.0);
    return;
  }
  Stopwatch watch;
  const int64_t slots = state.mail_slots();
  step_.memory = arena.alloc(dtype, Shape(u, cfg_.d_mem));
  step_.last_update = arena.alloc(dtype, Shape(u));
  step_.mail = arena.alloc(dtype, Shape(u, slots, cfg_.d_mail()));
  step_.mail_ts = arena.alloc(dtype, Shape(u, slots));
  state.gather_memory(step_.memory, in.mem_node);
  state.gather_last_update(step_.last_update, in.mem_node);
  state.gather_mail(step_.mail, step_.mail_ts, in.mem_node);
  step_.updated = arena.alloc(dtype, Shape(u, cfg_.d_mem));
  times_.gather += watch.seconds();
  watch.restart();
  // Rows [n, u) have no mail: their memory passes through unchanged.
  const int64_t n = in.mem_with_mail < 0 ? u : in.mem_with_mail;
  step_.updating = n;
  if (n < u) ops::copy(step_.updated.rows(n, u), step_.memory.rows(n, u));
  if (n == 0) {
    times_.memory_update += watch.seconds();
    return;
  }
  if (recurrent_) {
    // TGL's GRU/RNN updaters encode the time since the memory's last update.
    step_.mail_dt = arena.alloc(dtype, Shape(n));
    if (cfg_.mail_dt_at_event) {  // the planner stored the delta as the mail's time
      ops::copy(step_.mail_dt, step_.mail_ts.rows(0, n).reshape(Shape(n)));
    } else {
      ops::copy(step_.mail_dt, in.mem_time.rows(0, n));
      ops::axpy(step_.mail_dt, -1.0, step_.last_update.rows(0, n));
    }
    recurrent_->forward(arena, step_.recurrent, step_.updated.rows(0, n),
                        step_.mail.rows(0, n).reshape(Shape(n, cfg_.d_mail())), step_.mail_dt,
                        step_.memory.rows(0, n));
  } else {
    apan_->forward(step_.apan, step_.updated.rows(0, n), arena, apan_params_.value,
                   step_.memory.rows(0, n), step_.mail.rows(0, n), step_.mail_ts.rows(0, n),
                   in.mem_time.rows(0, n), in.mem_mask.rows(0, n), step_.training,
                   dropout_key(in.seed, in.epoch, 1), dropout_rows(in.mem_id, 0, n));
  }
  times_.memory_update += watch.seconds();
}

void Tgnn::embed(Arena& arena, const TgnnInputs& in, const Tensor& edge_feat) {
  const DType dtype = store_->dtype();
  const int64_t roots = step_.roots;
  const int64_t d_in = cfg_.d_input();
  auto& h = step_.h;
  h[0][0] = arena.alloc(dtype, Shape(roots, d_in));
  ops::gather_rows(h[0][0], step_.updated, in.root_row);
  if (cfg_.embedding == EmbeddingKind::identity) {
    step_.emb = h[0][0];
    return;
  }
  if (cfg_.embedding == EmbeddingKind::jodie) {
    // JODIE: h = s * (1 + w dt' + b), dt' = (t - t_last) / (t + 1) (TGL) or standardised.
    Tensor dt_rows = arena.alloc(dtype, Shape(step_.u));
    ops::copy(dt_rows, in.mem_time);
    ops::axpy(dt_rows, -1.0, step_.last_update);
    if (cfg_.time_scale > 0) {
      Tensor shift = arena.alloc(dtype, Shape(step_.u));
      ops::fill(shift, -cfg_.time_shift);
      ops::axpy(dt_rows, 1.0, shift);
      ops::scale(dt_rows, 1.0 / cfg_.time_scale);
    } else {
      ops::mul(dt_rows, dt_rows, in.mem_inv_time);
    }
    step_.jodie_dt = arena.alloc(dtype, Shape(roots));
    ops::gather_rows(step_.jodie_dt.reshape(Shape(roots, 1)), dt_rows.reshape(Shape(step_.u, 1)),
                     in.root_row);
    step_.emb = arena.alloc(dtype, Shape(roots, cfg_.d_mem));
    jodie_->forward(arena, step_.jodie, step_.emb, h[0][0], step_.jodie_dt);
    return;
  }
  const int layers = cfg_.layers;
  const int64_t k = cfg_.neighbours;
  // Layer 0 reads the neighbours of hop j straight from the memory rows (table mode) when
  // there are fewer rows than slots, as there are with TGN's repeating neighbours: keys
  // and values then project each row once. h[0][j] is gathered when it also serves as
  // the roots of hop j, or as slot-mode neighbours.
  for (int j = 0; j < layers; ++j) {
    step_.table[j] = cfg_.neighbour_reads == NeighbourReads::automatic
                         ? step_.u < hop_roots(j) * k
                         : cfg_.neighbour_reads == NeighbourReads::table;
  }
  for (int j = 1; j <= layers; ++j) {
    if (j == layers && step_.table[j - 1]) continue;
    h[0][j] = arena.alloc(dtype, Shape(hop_roots(j), d_in));
    ops::gather_rows(h[0][j], step_.updated, in.slot_row[j - 1]);
  }
  for (int l = 0; l < layers; ++l) {
    step_.edges[l] = Tensor{};
    if (cfg_.d_edge == 0) continue;
    Tensor e = arena.alloc(dtype, Shape(hop_roots(l) * k, cfg_.d_edge));
    ops::gather_rows(e, edge_feat, in.slot_eid[l]);
    step_.edges[l] = e.reshape(Shape(hop_roots(l), k, cfg_.d_edge));
  }
  for (int i = 0; i < layers; ++i) {
    const int64_t width = i == 0 ? d_in : cfg_.d_emb;
    for (int j = 0; j < layers - i; ++j) {
      const int64_t r = hop_roots(j);
      h[i + 1][j] = arena.alloc(dtype, Shape(r, cfg_.d_emb));
      const RngKey key = dropout_key(in.seed, in.epoch, 2 + i * kMaxHops + j);
      const ops::DropoutRows rows = dropout_rows(in.root_id[j], 0, r);
      if (i == 0 && step_.table[j]) {
        attention_[i].forward(step_.attn[i][j], h[i + 1][j], arena, attention_params_[i].value,
                              h[i][j], NeighbourRows{step_.updated, in.slot_row[j]}, step_.edges[j],
                              in.slot_dt[j], in.slot_mask[j], step_.training, key, rows);
      } else {
        attention_[i].forward(step_.attn[i][j], h[i + 1][j], arena, attention_params_[i].value,
                              h[i][j], h[i][j + 1].reshape(Shape(r, k, width)), step_.edges[j],
                              in.slot_dt[j], in.slot_mask[j], step_.training, key, rows);
      }
    }
  }
  step_.emb = h[layers][0];
}

void Tgnn::backward(Arena& arena, const Tensor& d_logits) {
  const DType dtype = store_->dtype();
  const int64_t batch = step_.batch, roots = step_.roots;
  Stopwatch watch;
  Tensor d_emb = arena.alloc(dtype, Shape(roots, cfg_.d_out()));
  predictor_->backward(arena, d_emb.rows(0, batch), d_emb.rows(batch, roots), d_logits,
                       step_.predictor);
  times_.backward_predict += watch.seconds();
  watch.restart();
  Tensor d_updated;
  if (cfg_.memory != MemoryKind::none) {
    d_updated = arena.alloc(dtype, Shape(step_.u, cfg_.d_mem));
    ops::fill(d_updated, 0.0);
  }
  backward_embedding(arena, d_emb, d_updated);
  times_.backward_embed += watch.seconds();
  watch.restart();
  backward_memory(arena, d_updated);
  times_.backward_memory += watch.seconds();
}

void Tgnn::backward_embedding(Arena& arena, const Tensor& d_emb, const Tensor& d_updated) {
  const DType dtype = store_->dtype();
  const TgnnInputs& in = *step_.in;
  const bool memory = cfg_.memory != MemoryKind::none;
  if (cfg_.embedding == EmbeddingKind::identity) {
    ops::scatter_add_rows(d_updated, d_emb, in.root_row);
    return;
  }
  if (cfg_.embedding == EmbeddingKind::jodie) {
    Tensor d_h0 = arena.alloc(dtype, Shape(step_.roots, cfg_.d_mem));
    jodie_->backward(arena, d_h0, d_emb, step_.jodie);
    ops::scatter_add_rows(d_updated, d_h0, in.root_row);
    return;
  }
  const int layers = cfg_.layers;
  const int64_t k = cfg_.neighbours;
  // dh[i][j]: gradient of h[i][j]; h[i][j] feeds layer i as the roots of hop j and as the
  // neighbours of hop j - 1, so both contributions are summed.
  std::array<std::array<Tensor, kMaxHops + 1>, kMaxHops + 1> dh;
  dh[layers][0] = d_emb;
  for (int i = layers - 1; i >= 0; --i) {
    const int64_t width = i == 0 ? cfg_.d_input() : cfg_.d_emb;
    const bool want_inputs = i > 0 || memory;
    for (int j = 0; j <= layers - i; ++j) {
      dh[i][j] = arena.alloc(dtype, Shape(hop_roots(j), width));
      ops::fill(dh[i][j], 0.0);
    }
    for (int j = 0; j < layers - i; ++j) {
      const int64_t r = hop_roots(j);
      // Table mode (layer 0 only): the neighbours' gradient accumulates into d_updated.
      const bool table = i == 0 && step_.table[j];
      Tensor d_root = arena.alloc(dtype, Shape(r, width));
      Tensor d_nbr;
      if (want_inputs) d_nbr = table ? d_updated : arena.alloc(dtype, Shape(r, k, width));
      attention_[i].backward(d_root, d_nbr, Tensor{}, attention_params_[i].grad, dh[i + 1][j],
                             step_.attn[i][j], attention_params_[i].value, arena);
      if (!want_inputs) continue;
      ops::axpy(dh[i][j], 1.0, d_root);
      if (!table) ops::axpy(dh[i][j + 1], 1.0, d_nbr.reshape(Shape(r * k, width)));
    }
  }
  if (!memory) return;
  ops::scatter_add_rows(d_updated, dh[0][0], in.root_row);
  for (int j = 1; j <= layers; ++j) {
    // dh[0][layers] holds only neighbour gradients, which table mode already delivered.
    if (j == layers && step_.table[j - 1]) continue;
    ops::scatter_add_rows(d_updated, dh[0][j], in.slot_row[j - 1]);
  }
}

void Tgnn::backward_memory(Arena& arena, const Tensor& d_updated) {
  const int64_t n = step_.updating;
  if (n == 0) return;
  if (recurrent_) {
    recurrent_->backward(arena, Tensor{}, Tensor{}, d_updated.rows(0, n), step_.recurrent);
  } else if (apan_) {
    // The stored memory is detached state: its gradient is scratch.
    Tensor d_memory = arena.alloc(store_->dtype(), Shape(n, cfg_.d_mem));
    apan_->backward(d_memory, Tensor{}, apan_params_.grad, d_updated.rows(0, n), step_.apan,
                    apan_params_.value, arena);
  }
}

}  // namespace depbloom::model
