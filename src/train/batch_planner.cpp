// BatchPlanner: roots, sampling, memory-row dedup, staging and write-back of one batch.
#include "depbloom/train/batch_planner.h"

#include <cmath>
#include <cstring>

#include "depbloom/backend/ops.h"

namespace depbloom::train {
namespace {

uint64_t mix(int32_t node, double time) {
  uint64_t bits;
  std::memcpy(&bits, &time, sizeof(bits));
  uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(node)) * 0x9E3779B97F4A7C15ull;
  h ^= bits + 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

}  // namespace

BatchPlanner::BatchPlanner(const data::EventStream& stream, const graph::NeighbourSampler* sampler,
                           const PlannerConfig& cfg, DType dtype, Device device)
    : stream_(stream), sampler_(sampler), cfg_(cfg), dtype_(dtype), device_(device) {
  DB_ASSERT(cfg.hops >= 0 && cfg.hops <= model::kMaxHops, "planner: {} hops", cfg.hops);
  DB_ASSERT(sampled_hops() == 0 || sampler != nullptr, "planner: sampling needs a sampler");
  t0_ = stream.ts.empty() ? 0.0 : stream.ts.front();
  slot_row_.resize(model::kMaxHops);
  slot_dt64_.resize(model::kMaxHops);
  const auto n = static_cast<size_t>(stream.num_nodes);
  node_stamp_.assign(n, 0);
  node_pos_.assign(n, 0);
}

int32_t BatchPlanner::sampled_hops() const {
  return std::max<int32_t>(cfg_.hops, cfg_.deliver_to_neighbours ? 1 : 0);
}

void BatchPlanner::reserve_table(int64_t entries) {
  size_t cap = 1024;
  while (cap < static_cast<size_t>(entries) * 2) cap <<= 1;
  if (table_node_.size() >= cap) return;
  table_node_.assign(cap, 0);
  table_row_.assign(cap, 0);
  table_time_.assign(cap, 0.0);
  table_stamp_.assign(cap, 0);
  stamp_ = 0;
}

int32_t BatchPlanner::row_of(int32_t node, double time) {
  if (node < 0) return -1;
  const size_t mask = table_node_.size() - 1;
  for (size_t at = mix(node, time) & mask;; at = (at + 1) & mask) {
    if (table_stamp_[at] != stamp_) {
      table_stamp_[at] = stamp_;
      table_node_[at] = node;
      table_time_[at] = time;
      table_row_[at] = static_cast<int32_t>(mem_node_.size());
      mem_node_.push_back(node);
      mem_time_.push_back(time);
      return table_row_[at];
    }
    if (table_node_[at] == node && table_time_[at] == time) return table_row_[at];
  }
}

void BatchPlanner::plan(const int64_t* events, int64_t count, const int32_t* negatives,
                        int32_t negatives_k, uint32_t epoch, const model::NodeState& state) {
  DB_ASSERT(count > 0 && negatives_k >= 0, "planner: {} events, {} negatives", count, negatives_k);
  batch_ = count;
  negatives_ = negatives_k;
  events_ = events;
  const int64_t roots = (2 + negatives_k) * count;
  root_node_.resize(static_cast<size_t>(roots));
  root_time_.resize(static_cast<size_t>(roots));
  root_key_.resize(static_cast<size_t>(roots));
  // Roots: the sources, the destinations, then K blocks of negatives (TGL's order). The
  // uniform sampler keys a root's draws by (event, role), whatever batch it lands in.
  const auto per_event = static_cast<uint64_t>(2 + negatives_k);
  for (int64_t b = 0; b < count; ++b) {
    const int64_t e = events[b];
    const double t = stream_.ts[static_cast<size_t>(e)] - t0_;
    for (int64_t role = 0; role < 2 + negatives_k; ++role) {
      const auto at = static_cast<size_t>(role * count + b);
      root_node_[at] = role == 0   ? stream_.src[static_cast<size_t>(e)]
                       : role == 1 ? stream_.dst[static_cast<size_t>(e)]
                                   : negatives[b * negatives_k + (role - 2)];
      root_time_[at] = t;
      root_key_[at] = static_cast<uint64_t>(e) * per_event + static_cast<uint64_t>(role);
    }
  }
  const int32_t hops = sampled_hops();
  int64_t entries = roots;
  if (hops > 0) {
    graph::RootBatch rb;
    rb.count = roots;
    rb.keys = root_key_.data();
    // The sampler queries absolute times.
    for (auto& t : root_time_) t += t0_;
    rb.nodes = root_node_.data();
    rb.times = root_time_.data();
    sampler_->sample(rb, epoch, blocks_);
    for (auto& t : root_time_) t -= t0_;
    for (int32_t l = 0; l < cfg_.hops; ++l) entries += blocks_.hop(l).num_slots();
  }
  // Memory rows: distinct (node, time) among the roots and the embedding's neighbours.
  reserve_table(entries);
  if (++stamp_ == 0) {
    std::fill(table_stamp_.begin(), table_stamp_.end(), 0);
    stamp_ = 1;
  }
  mem_node_.clear();
  mem_time_.clear();
  root_row_.resize(static_cast<size_t>(roots));
  for (int64_t r = 0; r < roots; ++r)
    root_row_[static_cast<size_t>(r)] =
        cfg_.memory ? row_of(root_node_[static_cast<size_t>(r)], root_time_[static_cast<size_t>(r)])
                    : 0;
  int64_t span = 1;  // hop-l slot s descends from hop-0 root s / k^(l+1)
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    const graph::Block& blk = blocks_.hop(l);
    span *= blk.k;
    auto& rows = slot_row_[static_cast<size_t>(l)];
    rows.resize(static_cast<size_t>(blk.num_slots()));
    for (int64_t s = 0; s < blk.num_slots(); ++s) {
      const int32_t node = blk.nbr[s];
      if (node < 0 || !cfg_.memory) {
        rows[static_cast<size_t>(s)] = node < 0 ? -1 : 0;
        continue;
      }
      const double t = cfg_.prop_time ? root_time_[static_cast<size_t>(s / span)]
                                      : stream_.ts[static_cast<size_t>(blk.eid[s])] - t0_;
      rows[static_cast<size_t>(s)] = row_of(node, t);
    }
  }
  if (!cfg_.memory) {  // the model reads one zero row
    mem_node_.assign(1, 0);
    mem_time_.assign(1, 0.0);
  }
  with_mail_ = -1;
  if (cfg_.skip_empty_mailbox && cfg_.memory) order_rows_by_mail(state);
  const size_t u = mem_node_.size();
  if (cfg_.jodie) {
    mem_inv_time_.resize(u);
    for (size_t i = 0; i < u; ++i) mem_inv_time_[i] = 1.0 / (mem_time_[i] + 1.0);
  }
  if (cfg_.mail_mask) {
    const int slots = state.mail_slots();
    mem_mask_.resize(u * static_cast<size_t>(slots));
    for (size_t i = 0; i < u; ++i) {
      const int have = state.mail_count(mem_node_[i]);
      for (int s = 0; s < slots; ++s) mem_mask_[i * static_cast<size_t>(slots) + s] = s < have;
    }
  }
}

// Stable partition of the memory rows: those whose node holds a mail first (the model
// updates only them), then the rest; every row reference is renumbered.
void BatchPlanner::order_rows_by_mail(const model::NodeState& state) {
  const size_t u = mem_node_.size();
  renumber_.resize(u);
  int32_t next = 0;
  for (size_t i = 0; i < u; ++i)
    if (state.mail_count(mem_node_[i]) > 0) renumber_[i] = next++;
  with_mail_ = next;
  for (size_t i = 0; i < u; ++i)
    if (state.mail_count(mem_node_[i]) == 0) renumber_[i] = next++;
  scratch_rows_.resize(u);
  scratch_nodes_.resize(u);
  for (size_t i = 0; i < u; ++i) {
    scratch_rows_[static_cast<size_t>(renumber_[i])] = mem_time_[i];
    scratch_nodes_[static_cast<size_t>(renumber_[i])] = mem_node_[i];
  }
  mem_time_.swap(scratch_rows_);
  mem_node_.swap(scratch_nodes_);
  for (auto& r : root_row_) r = renumber_[static_cast<size_t>(r)];
  for (int32_t l = 0; l < cfg_.hops; ++l)
    for (auto& r : slot_row_[static_cast<size_t>(l)])
      if (r >= 0) r = renumber_[static_cast<size_t>(r)];
}

template <class T>
Tensor BatchPlanner::stage_raw(Arena& arena, const T* host, Shape shape) {
  Tensor h = Tensor::wrap(const_cast<T*>(host), shape);
  if (device_.is_cpu()) return h;
  Tensor d = arena.alloc(h.dtype(), shape);
  ops::copy(d, h);
  return d;
}

Tensor BatchPlanner::stage_times(Arena& arena, const std::vector<double>& host,
                                 std::vector<float>& scratch) {
  const Shape shape(static_cast<int64_t>(host.size()));
  if (dtype_ == DType::f64) return stage_raw(arena, host.data(), shape);
  scratch.resize(host.size());
  for (size_t i = 0; i < host.size(); ++i) scratch[i] = static_cast<float>(host[i]);
  return stage_raw(arena, scratch.data(), shape);
}

model::TgnnInputs BatchPlanner::stage(Arena& arena) {
  model::TgnnInputs in;
  in.events = batch_;
  in.negatives = negatives_;
  in.mem_with_mail = with_mail_;
  const auto u = static_cast<int64_t>(mem_node_.size());
  in.mem_node = stage_raw(arena, mem_node_.data(), Shape(u));
  in.mem_time = stage_times(arena, mem_time_, scratch_[0]);
  if (cfg_.jodie) in.mem_inv_time = stage_times(arena, mem_inv_time_, scratch_[1]);
  if (cfg_.mail_mask)
    in.mem_mask =
        stage_raw(arena, mem_mask_.data(), Shape(u, static_cast<int64_t>(mem_mask_.size()) / u));
  in.root_row = stage_raw(arena, root_row_.data(), Shape(roots()));
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    const graph::Block& blk = blocks_.hop(l);
    const Shape grid(blk.num_roots, blk.k);
    in.slot_row[l] =
        stage_raw(arena, slot_row_[static_cast<size_t>(l)].data(), Shape(blk.num_slots()));
    in.slot_eid[l] = stage_raw(arena, blk.eid, Shape(blk.num_slots()));
    in.slot_mask[l] = stage_raw(arena, blk.mask, grid);
    if (dtype_ == DType::f32) {
      in.slot_dt[l] = stage_raw(arena, blk.dt, grid);
    } else {
      auto& d = slot_dt64_[static_cast<size_t>(l)];
      d.assign(blk.dt, blk.dt + blk.num_slots());
      in.slot_dt[l] = stage_raw(arena, d.data(), grid);
    }
  }
  return in;
}

void BatchPlanner::next_write_stamp(const model::NodeState& state) {
  const auto flats = static_cast<size_t>(state.num_nodes()) * state.mail_slots();
  if (++wb_stamp_ == 0) {
    std::fill(node_stamp_.begin(), node_stamp_.end(), 0);
    std::fill(flat_stamp_.begin(), flat_stamp_.end(), 0);
    wb_stamp_ = 1;
  }
  if (flat_stamp_.size() != flats) {
    flat_stamp_.assign(flats, 0);
    flat_pos_.assign(flats, 0);
  }
}

void BatchPlanner::write_back(Arena& arena, model::NodeState& state, const Tensor& updated,
                              const Tensor& edge_feat, const Tensor& row_last_update) {
  if (!cfg_.memory) return;
  const int64_t count = batch_;
  const int slots = state.mail_slots();
  next_write_stamp(state);
  wb_node_.clear(), wb_row_.clear(), wb_time_.clear();
  wm_flat_.clear(), wm_row_.clear(), wm_other_.clear(), wm_eid_.clear(), wm_time_.clear();
  auto add_mail = [&](int32_t node, int32_t row, int32_t other, int64_t eid, double t) {
    const int32_t flat = node * slots + state.claim_mail_slot(node);
    const auto f = static_cast<size_t>(flat);
    if (flat_stamp_[f] == wb_stamp_) {  // a later mail overwrites the slot it wraps onto
      const auto at = static_cast<size_t>(flat_pos_[f]);
      wm_row_[at] = row, wm_other_[at] = other, wm_eid_[at] = eid, wm_time_[at] = t;
      return;
    }
    flat_stamp_[f] = wb_stamp_;
    flat_pos_[f] = static_cast<int32_t>(wm_flat_.size());
    wm_flat_.push_back(flat), wm_row_.push_back(row), wm_other_.push_back(other);
    wm_eid_.push_back(eid), wm_time_.push_back(t);
  };
  // TGL's order: (src_0, dst_0, src_1, dst_1, ...); a node's last event wins its memory.
  for (int64_t b = 0; b < count; ++b) {
    const double t = root_time_[static_cast<size_t>(b)];
    const int64_t e = events_[b];
    for (int side = 0; side < 2; ++side) {
      const auto at = static_cast<size_t>(side * count + b);
      const auto partner = static_cast<size_t>((1 - side) * count + b);
      const int32_t node = root_node_[at];
      const int32_t row = root_row_[at];
      const auto n = static_cast<size_t>(node);
      if (node_stamp_[n] == wb_stamp_) {
        wb_row_[static_cast<size_t>(node_pos_[n])] = row;
        wb_time_[static_cast<size_t>(node_pos_[n])] = t;
      } else {
        node_stamp_[n] = wb_stamp_;
        node_pos_[n] = static_cast<int32_t>(wb_node_.size());
        wb_node_.push_back(node), wb_row_.push_back(row), wb_time_.push_back(t);
      }
      add_mail(node, row, root_row_[partner], e, t);
    }
  }
  if (cfg_.deliver_to_neighbours) {
    // APAN: each endpoint's mail also goes to its sampled neighbours, after the roots'.
    const graph::Block& blk = blocks_.hop(0);
    for (int64_t r = 0; r < 2 * count; ++r) {
      const int64_t b = r % count;
      const int64_t partner = r < count ? r + count : r - count;
      for (int32_t j = 0; j < blk.k; ++j) {
        const int32_t nbr = blk.nbr[r * blk.k + j];
        if (nbr < 0) continue;
        add_mail(nbr, root_row_[static_cast<size_t>(r)], root_row_[static_cast<size_t>(partner)],
                 events_[b], root_time_[static_cast<size_t>(b)]);
      }
    }
  }
  const int64_t d_mem = state.memory_dim();
  const DType dtype = updated.dtype();
  // Memory rows of the written nodes, detached copies of the model's output.
  const auto w = static_cast<int64_t>(wb_node_.size());
  Tensor rows = arena.alloc(dtype, Shape(w, d_mem));
  ops::gather_rows(rows, updated, stage_raw(arena, wb_row_.data(), Shape(w)));
  state.write_memory(rows, stage_times(arena, wb_time_, scratch_[2]),
                     stage_raw(arena, wb_node_.data(), Shape(w)));
  // Mails [s_self || s_other || edge features].
  const auto m = static_cast<int64_t>(wm_flat_.size());
  Tensor self = arena.alloc(dtype, Shape(m, d_mem));
  Tensor other = arena.alloc(dtype, Shape(m, d_mem));
  ops::gather_rows(self, updated, stage_raw(arena, wm_row_.data(), Shape(m)));
  ops::gather_rows(other, updated, stage_raw(arena, wm_other_.data(), Shape(m)));
  Tensor mail = arena.alloc(dtype, Shape(m, state.mail_dim()));
  if (stream_.edge_dim > 0) {
    Tensor edge = arena.alloc(dtype, Shape(m, stream_.edge_dim));
    ops::gather_rows(edge, edge_feat, stage_raw(arena, wm_eid_.data(), Shape(m)));
    ops::concat_cols(mail, {self, other, edge});
  } else {
    ops::concat_cols(mail, {self, other});
  }
  Tensor mail_ts = stage_times(arena, wm_time_, scratch_[3]);
  if (cfg_.mail_dt_at_event) {
    // TGN authors' message time: the gap since the writer's previous update, as of now.
    DB_ASSERT(row_last_update.numel() == memory_rows(), "planner: row_last_update is {}",
              row_last_update.str());
    Tensor dt = arena.alloc(dtype, Shape(m));
    ops::copy(dt, mail_ts);
    Tensor prev = arena.alloc(dtype, Shape(m, 1));
    ops::gather_rows(prev, row_last_update.reshape(Shape(memory_rows(), 1)),
                     stage_raw(arena, wm_row_.data(), Shape(m)));
    ops::axpy(dt, -1.0, prev.reshape(Shape(m)));
    mail_ts = dt;
  }
  state.write_mail(mail, mail_ts, stage_raw(arena, wm_flat_.data(), Shape(m)));
}

BatchPlanner::Writes BatchPlanner::collect_writes(Arena& arena, const model::NodeState& state,
                                                  const Tensor& updated, const Tensor& edge_feat,
                                                  const Tensor& row_last_update) {
  Writes out;
  if (!cfg_.memory) return out;
  const int64_t count = batch_;
  next_write_stamp(state);
  wb_node_.clear(), wb_row_.clear(), wb_time_.clear();
  wm_node_.clear(), wm_row_.clear(), wm_other_.clear(), wm_eid_.clear(), wm_time_.clear();
  auto add_mail = [&](int32_t node, int32_t row, int32_t other, int64_t eid, double t) {
    wm_node_.push_back(node), wm_row_.push_back(row), wm_other_.push_back(other);
    wm_eid_.push_back(eid), wm_time_.push_back(t);
  };
  // The same order as write_back: (src_0, dst_0, src_1, dst_1, ...), last event wins.
  for (int64_t b = 0; b < count; ++b) {
    const double t = root_time_[static_cast<size_t>(b)];
    const int64_t e = events_[b];
    for (int side = 0; side < 2; ++side) {
      const auto at = static_cast<size_t>(side * count + b);
      const auto partner = static_cast<size_t>((1 - side) * count + b);
      const int32_t node = root_node_[at];
      const int32_t row = root_row_[at];
      const auto n = static_cast<size_t>(node);
      if (node_stamp_[n] == wb_stamp_) {
        wb_row_[static_cast<size_t>(node_pos_[n])] = row;
        wb_time_[static_cast<size_t>(node_pos_[n])] = t;
      } else {
        node_stamp_[n] = wb_stamp_;
        node_pos_[n] = static_cast<int32_t>(wb_node_.size());
        wb_node_.push_back(node), wb_row_.push_back(row), wb_time_.push_back(t);
      }
      add_mail(node, row, root_row_[partner], e, t);
    }
  }
  out.root_mails = static_cast<int64_t>(wm_node_.size());
  if (cfg_.deliver_to_neighbours) {
    const graph::Block& blk = blocks_.hop(0);
    for (int64_t r = 0; r < 2 * count; ++r) {
      if (r == count) out.src_nbr_mails = static_cast<int64_t>(wm_node_.size()) - out.root_mails;
      const int64_t b = r % count;
      const int64_t partner = r < count ? r + count : r - count;
      for (int32_t j = 0; j < blk.k; ++j) {
        const int32_t nbr = blk.nbr[r * blk.k + j];
        if (nbr < 0) continue;
        add_mail(nbr, root_row_[static_cast<size_t>(r)], root_row_[static_cast<size_t>(partner)],
                 events_[b], root_time_[static_cast<size_t>(b)]);
      }
    }
    out.dst_nbr_mails = static_cast<int64_t>(wm_node_.size()) - out.root_mails - out.src_nbr_mails;
  }
  const int64_t d_mem = state.memory_dim();
  const DType dtype = updated.dtype();
  const auto w = static_cast<int64_t>(wb_node_.size());
  out.mem_node = wb_node_.data();
  out.mem_count = w;
  out.mem_rows = arena.alloc(dtype, Shape(w, d_mem));
  ops::gather_rows(out.mem_rows, updated, stage_raw(arena, wb_row_.data(), Shape(w)));
  out.mem_time = stage_times(arena, wb_time_, scratch_[2]);
  const auto m = static_cast<int64_t>(wm_node_.size());
  out.mail_node = wm_node_.data();
  Tensor self = arena.alloc(dtype, Shape(m, d_mem));
  Tensor other = arena.alloc(dtype, Shape(m, d_mem));
  ops::gather_rows(self, updated, stage_raw(arena, wm_row_.data(), Shape(m)));
  ops::gather_rows(other, updated, stage_raw(arena, wm_other_.data(), Shape(m)));
  out.mail_rows = arena.alloc(dtype, Shape(m, state.mail_dim()));
  if (stream_.edge_dim > 0) {
    Tensor edge = arena.alloc(dtype, Shape(m, stream_.edge_dim));
    ops::gather_rows(edge, edge_feat, stage_raw(arena, wm_eid_.data(), Shape(m)));
    ops::concat_cols(out.mail_rows, {self, other, edge});
  } else {
    ops::concat_cols(out.mail_rows, {self, other});
  }
  out.mail_time = stage_times(arena, wm_time_, scratch_[3]);
  if (cfg_.mail_dt_at_event) {
    DB_ASSERT(row_last_update.numel() == memory_rows(), "planner: row_last_update is {}",
              row_last_update.str());
    Tensor dt = arena.alloc(dtype, Shape(m));
    ops::copy(dt, out.mail_time);
    Tensor prev = arena.alloc(dtype, Shape(m, 1));
    ops::gather_rows(prev, row_last_update.reshape(Shape(memory_rows(), 1)),
                     stage_raw(arena, wm_row_.data(), Shape(m)));
    ops::axpy(dt, -1.0, prev.reshape(Shape(m)));
    out.mail_time = dt;
  }
  return out;
}

void BatchPlanner::apply_writes(Arena& arena, model::NodeState& state, const int32_t* mem_node,
                                int64_t w, const Tensor& mem_rows, const Tensor& mem_time,
                                const int32_t* mail_node, const int64_t* mail_order, int64_t m,
                                const Tensor& mail_rows, const Tensor& mail_time) {
  if (!cfg_.memory) return;
  const int slots = state.mail_slots();
  next_write_stamp(state);
  // Memory: a later row of the same node wins.
  ap_node_.clear(), ap_pos_.clear();
  for (int64_t i = 0; i < w; ++i) {
    const int32_t node = mem_node[i];
    const auto n = static_cast<size_t>(node);
    if (node_stamp_[n] == wb_stamp_) {
      ap_pos_[static_cast<size_t>(node_pos_[n])] = static_cast<int32_t>(i);
    } else {
      node_stamp_[n] = wb_stamp_;
      node_pos_[n] = static_cast<int32_t>(ap_node_.size());
      ap_node_.push_back(node), ap_pos_.push_back(static_cast<int32_t>(i));
    }
  }
  const int64_t d_mem = state.memory_dim();
  const DType dtype = state.dtype();
  const auto wn = static_cast<int64_t>(ap_node_.size());
  if (wn > 0) {
    Tensor pos = stage_raw(arena, ap_pos_.data(), Shape(wn));
    Tensor rows = arena.alloc(dtype, Shape(wn, d_mem));
    Tensor times = arena.alloc(dtype, Shape(wn, 1));
    ops::gather_rows(rows, mem_rows.reshape(Shape(w, d_mem)), pos);
    ops::gather_rows(times, mem_time.reshape(Shape(w, 1)), pos);
    state.write_memory(rows, times.reshape(Shape(wn)),
                       stage_raw(arena, ap_node_.data(), Shape(wn)));
  }
  // Mails: each claims its node's next slot in order; a later mail wins a slot.
  ap_flat_.clear(), ap_mpos_.clear();
  for (int64_t k = 0; k < m; ++k) {
    const int64_t i = mail_order != nullptr ? mail_order[k] : k;
    const int32_t node = mail_node[i];
    const int32_t flat = node * slots + state.claim_mail_slot(node);
    const auto f = static_cast<size_t>(flat);
    if (flat_stamp_[f] == wb_stamp_) {
      ap_mpos_[static_cast<size_t>(flat_pos_[f])] = static_cast<int32_t>(i);
      continue;
    }
    flat_stamp_[f] = wb_stamp_;
    flat_pos_[f] = static_cast<int32_t>(ap_flat_.size());
    ap_flat_.push_back(flat), ap_mpos_.push_back(static_cast<int32_t>(i));
  }
  const auto mn = static_cast<int64_t>(ap_flat_.size());
  if (mn > 0) {
    const int64_t d_mail = state.mail_dim();
    Tensor pos = stage_raw(arena, ap_mpos_.data(), Shape(mn));
    Tensor rows = arena.alloc(dtype, Shape(mn, d_mail));
    Tensor times = arena.alloc(dtype, Shape(mn, 1));
    ops::gather_rows(rows, mail_rows.reshape(Shape(m, d_mail)), pos);
    ops::gather_rows(times, mail_time.reshape(Shape(m, 1)), pos);
    state.write_mail(rows, times.reshape(Shape(mn)), stage_raw(arena, ap_flat_.data(), Shape(mn)));
  }
}

}  // namespace depbloom::train
