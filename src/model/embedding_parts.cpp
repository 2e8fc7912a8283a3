// The embedding parts of a Tgnn: the identity (APAN), JODIE's time projection, and a stack
// of temporal attention layers over sampled hops (TGN, TGAT). Each reads the updated memory
// rows through the roots' and slots' row indices; the backward scatters the gradients back
// onto those rows (deterministically).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "depbloom/backend/ops.h"
#include "depbloom/model/jodie_projection.h"
#include "depbloom/model/temporal_attention.h"
#include "model/tgnn_parts.h"

namespace depbloom::model {
namespace {

class IdentityEmbedding final : public EmbeddingPart {
 public:
  void forward(const Tensor& emb, const TgnnInputs& in, const Tensor& updated, const MemoryRows&,
               const Tensor&, bool, Arena&) override {
    ops::gather_rows(emb, updated, in.root_row);
    root_row_ = in.root_row;
  }
  void backward(const Tensor& d_updated, const Tensor& d_emb, Arena&) override {
    ops::scatter_sum_rows(d_updated, d_emb, root_row_);
  }

 private:
  Tensor root_row_;
};

// JODIE: h = s * (1 + w dt' + b), dt' = (t - t_last) / (t + 1) (TGL) or standardised. A
// refined copy (rows [U, U + R)) is read at its base row's time t, and its memory is as of
// its node's latest earlier in-batch event: t_last is that event's time (in.refine.dt).
class JodieEmbedding final : public EmbeddingPart {
 public:
  JodieEmbedding(ParameterStore& store, const TgnnConfig& cfg)
      : cfg_(cfg), projection_(store, "time_projection", cfg.d_mem) {}

  void forward(const Tensor& emb, const TgnnInputs& in, const Tensor& updated,
               const MemoryRows& rows, const Tensor&, bool, Arena& arena) override {
    const DType dtype = updated.dtype();
    const int64_t total = updated.dim(0), u = in.mem_time.numel(), roots = in.root_row.numel();
    DB_ASSERT(total == u || (in.refine.dt.defined() && total == u + in.refine.dt.numel()),
              "jodie: {} input rows for {} memory rows and {} refined copies", total, u,
              in.refine.dt.defined() ? in.refine.dt.numel() : 0);
    Tensor h0 = arena.alloc(dtype, Shape(roots, cfg_.d_mem));
    ops::gather_rows(h0, updated, in.root_row);
    Tensor dt_rows = arena.alloc(dtype, Shape(total));
    ops::sub(dt_rows.rows(0, u), in.mem_time, rows.last_update);
    if (total > u) ops::copy(dt_rows.rows(u, total), in.refine.dt);
    if (cfg_.time_scale > 0) {
      Tensor shift = arena.alloc(dtype, Shape(total));
      ops::fill(shift, -cfg_.time_shift);
      ops::axpy(dt_rows, 1.0, shift);
      ops::scale(dt_rows, 1.0 / cfg_.time_scale);
    } else if (total == u) {
      ops::mul(dt_rows, dt_rows, in.mem_inv_time);
    } else {  // a copy's 1 / (t + 1) is its base row's
      Tensor inv = arena.alloc(dtype, Shape(total));
      ops::copy(inv.rows(0, u), in.mem_inv_time);
      ops::gather_rows(inv.rows(u, total).reshape(Shape(total - u, 1)),
                       in.mem_inv_time.reshape(Shape(u, 1)), in.refine.row);
      ops::mul(dt_rows, dt_rows, inv);
    }
    Tensor dt = arena.alloc(dtype, Shape(roots));
    ops::gather_rows(dt.reshape(Shape(roots, 1)), dt_rows.reshape(Shape(total, 1)), in.root_row);
    projection_.forward(emb, ctx_, h0, dt, arena);
    root_row_ = in.root_row;
  }

  void backward(const Tensor& d_updated, const Tensor& d_emb, Arena& arena) override {
    Tensor d_h0 = arena.alloc(d_emb.dtype(), Shape(root_row_.numel(), cfg_.d_mem));
    projection_.backward(d_h0, d_emb, ctx_, arena);
    ops::scatter_sum_rows(d_updated, d_h0, root_row_);
  }

 private:
  TgnnConfig cfg_;
  JodieProjection projection_;
  JodieProjectionContext ctx_;
  Tensor root_row_;
};

TemporalAttentionConfig attention_config(const TgnnConfig& cfg, int layer) {
  TemporalAttentionConfig a;
  a.d_in = layer == 0 ? cfg.d_input() : cfg.d_emb;
  a.d_edge = cfg.d_edge;
  a.d_time = cfg.d_gnn_time;
  a.d_out = cfg.d_emb;
  a.heads = cfg.heads;
  a.dropout = cfg.dropout;
  a.style = cfg.attention_style;
  return a;
}

// L attention layers over L sampled hops. h[i][j] is the input of layer i (0: the updated
// memory rows) at hop j; layer i turns hops j < L - i into h[i + 1][j].
class AttentionEmbedding final : public EmbeddingPart {
 public:
  AttentionEmbedding(ParameterStore& store, const TgnnConfig& cfg) : cfg_(cfg) {
    for (int i = 0; i < cfg.layers; ++i)
      layers_.emplace_back(store, "layer" + std::to_string(i), attention_config(cfg, i));
  }

  void forward(const Tensor& emb, const TgnnInputs& in, const Tensor& updated, const MemoryRows&,
               const Tensor& edge_feat, bool training, Arena& arena) override;
  void backward(const Tensor& d_updated, const Tensor& d_emb, Arena& arena) override;

 private:
  int64_t hop_roots(int hop) const {
    int64_t r = roots_;
    for (int j = 0; j < hop; ++j) r *= cfg_.neighbours;
    return r;
  }
  void gather_inputs(const TgnnInputs& in, const Tensor& updated, const Tensor& edge_feat,
                     Arena& arena);

  TgnnConfig cfg_;
  std::vector<TemporalAttentionLayer> layers_;
  // The last forward.
  int64_t roots_ = 0;
  Tensor root_row_;
  std::array<Tensor, kMaxHops> slot_row_;
  std::array<Tensor, kMaxHops> edges_;  // [R_l, k, d_edge] features of hop l's slots
  std::array<std::array<Tensor, kMaxHops + 1>, kMaxHops + 1> h_;
  std::array<std::array<TemporalAttentionContext, kMaxHops>, kMaxHops> ctx_;
  // table_[j]: layer 0 at hop j read its neighbours as rows of a table (table mode): the rows
  // of `updated` its slots read (slot_read_[j]), gathered.
  std::array<bool, kMaxHops> table_{};
  std::array<Tensor, kMaxHops> slot_read_;
};

// Layer 0 reads the neighbours of hop j straight from the memory rows (table mode) when
// there are fewer rows than slots, as there are with TGN's repeating neighbours: keys and
// values then project each row the slots read once (not the roots' own rows, nor the base
// rows of refined copies). h[0][j] is gathered when it also serves as the roots of hop j, or
// as slot-mode neighbours.
void AttentionEmbedding::gather_inputs(const TgnnInputs& in, const Tensor& updated,
                                       const Tensor& edge_feat, Arena& arena) {
  const DType dtype = updated.dtype();
  const int layers = cfg_.layers;
  const int64_t k = cfg_.neighbours, d_in = cfg_.d_input();
  h_[0][0] = arena.alloc(dtype, Shape(roots_, d_in));
  ops::gather_rows(h_[0][0], updated, in.root_row);
  for (int j = 0; j < layers; ++j) {
    DB_ASSERT(in.slot_read[j].defined() && in.slot_read_of[j].defined(),
              "tgnn: hop {} lists no rows its slots read", j);
    table_[j] = cfg_.neighbour_reads == NeighbourReads::automatic
                    ? in.slot_read[j].numel() < hop_roots(j) * k
                    : cfg_.neighbour_reads == NeighbourReads::table;
    slot_read_[j] = in.slot_read[j];
  }
  for (int j = 1; j <= layers; ++j) {
    if (j == layers && table_[j - 1]) continue;
    h_[0][j] = arena.alloc(dtype, Shape(hop_roots(j), d_in));
    ops::gather_rows(h_[0][j], updated, in.slot_row[j - 1]);
  }
  for (int l = 0; l < layers; ++l) {
    edges_[l] = Tensor{};
    if (cfg_.d_edge == 0) continue;
    Tensor e = arena.alloc(dtype, Shape(hop_roots(l) * k, cfg_.d_edge));
    ops::gather_rows(e, edge_feat, in.slot_eid[l]);
    edges_[l] = e.reshape(Shape(hop_roots(l), k, cfg_.d_edge));
  }
}

void AttentionEmbedding::forward(const Tensor& emb, const TgnnInputs& in, const Tensor& updated,
                                 const MemoryRows&, const Tensor& edge_feat, bool training,
                                 Arena& arena) {
  roots_ = in.root_row.numel();
  root_row_ = in.root_row;
  slot_row_ = in.slot_row;
  gather_inputs(in, updated, edge_feat, arena);
  const DType dtype = updated.dtype();
  const int layers = cfg_.layers;
  const int64_t k = cfg_.neighbours;
  for (int i = 0; i < layers; ++i) {
    const int64_t width = i == 0 ? cfg_.d_input() : cfg_.d_emb;
    for (int j = 0; j < layers - i; ++j) {
      const int64_t r = hop_roots(j);
      const bool last = i == layers - 1;  // then j == 0: the roots' embedding
      h_[i + 1][j] = last ? emb : arena.alloc(dtype, Shape(r, cfg_.d_emb));
      const auto stream = static_cast<uint32_t>(2 + i * kMaxHops + j);
      const DropoutDraw drop =
          dropout_draw(in, stream, in.root_id[j], 0, r, training, cfg_.dropout);
      if (i == 0 && table_[j]) {
        const NeighbourRows nbr{arena.alloc(dtype, Shape(in.slot_read[j].numel(), width)),
                                in.slot_read_of[j]};
        ops::gather_rows(nbr.table, updated, in.slot_read[j]);
        layers_[i].forward(h_[i + 1][j], ctx_[i][j], h_[i][j], nbr, edges_[j], in.slot_dt[j],
                           in.slot_mask[j], drop, arena);
      } else {
        layers_[i].forward(h_[i + 1][j], ctx_[i][j], h_[i][j],
                           h_[i][j + 1].reshape(Shape(r, k, width)), edges_[j], in.slot_dt[j],
                           in.slot_mask[j], drop, arena);
      }
    }
  }
}

// dh[i][j]: gradient of h[i][j]; h[i][j] feeds layer i as the roots of hop j and as the
// neighbours of hop j - 1 (slot mode), so both contributions are summed: the first one
// written (the neighbours', which come first) lands in place, the second adds to it, and
// nothing is zero-filled.
void AttentionEmbedding::backward(const Tensor& d_updated, const Tensor& d_emb, Arena& arena) {
  const DType dtype = d_emb.dtype();
  const int layers = cfg_.layers;
  const int64_t k = cfg_.neighbours;
  const bool memory = d_updated.defined();
  // d_updated is overwritten: its first scatter starts from zeros, the others add.
  bool first_into_updated = true;
  auto into_updated = [&](const Tensor& rows, const Tensor& idx) {
    if (first_into_updated) {
      ops::scatter_sum_rows(d_updated, rows, idx);
    } else {
      ops::scatter_add_rows(d_updated, rows, idx);
    }
    first_into_updated = false;
  };
  std::array<std::array<Tensor, kMaxHops + 1>, kMaxHops + 1> dh;
  dh[layers][0] = d_emb;
  for (int i = layers - 1; i >= 0; --i) {
    const int64_t width = i == 0 ? cfg_.d_input() : cfg_.d_emb;
    const bool want_inputs = i > 0 || memory;
    for (int j = 0; j < layers - i; ++j) {
      const int64_t r = hop_roots(j);
      // Table mode (layer 0 only): the neighbours' gradient is per table row, and goes to
      // the rows of d_updated they were.
      const bool table = i == 0 && table_[j];
      const bool in_place = want_inputs && !dh[i][j].defined();
      if (in_place) dh[i][j] = arena.alloc(dtype, Shape(r, width));
      const Tensor d_root = in_place ? dh[i][j] : arena.alloc(dtype, Shape(r, width));
      Tensor d_nbr;
      if (want_inputs && table) {
        d_nbr = arena.alloc(dtype, Shape(slot_read_[j].numel(), width));
      } else if (want_inputs) {
        dh[i][j + 1] = arena.alloc(dtype, Shape(hop_roots(j + 1), width));
        d_nbr = dh[i][j + 1].reshape(Shape(r, k, width));
      }
      layers_[i].backward(d_root, d_nbr, Tensor{}, dh[i + 1][j], ctx_[i][j], arena);
      if (!want_inputs) continue;
      if (!in_place) ops::axpy(dh[i][j], 1.0, d_root);
      if (table) into_updated(d_nbr, slot_read_[j]);
    }
  }
  if (!memory) return;
  into_updated(dh[0][0], root_row_);
  for (int j = 1; j <= layers; ++j) {
    // dh[0][layers] holds only neighbour gradients, which table mode already delivered.
    if (j == layers && table_[j - 1]) continue;
    into_updated(dh[0][j], slot_row_[j - 1]);
  }
}

}  // namespace

std::unique_ptr<EmbeddingPart> make_embedding_part(ParameterStore& store, const TgnnConfig& cfg) {
  switch (cfg.embedding) {
    case EmbeddingKind::identity:
      return std::make_unique<IdentityEmbedding>();
    case EmbeddingKind::jodie:
      return std::make_unique<JodieEmbedding>(store, cfg);
    case EmbeddingKind::attention:
      return std::make_unique<AttentionEmbedding>(store, cfg);
  }
  DB_THROW(runtime, "unknown embedding kind {}", static_cast<int>(cfg.embedding));
}

}  // namespace depbloom::model
