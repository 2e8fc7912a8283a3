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

namespace {
// splitmix64's finaliser: spreads (node, time) over the 64-bit Philox counter space.
uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

// Dropout counters that depend on what a row is, never on where it sits in the batch, so
// a rank's slice draws the masks the whole batch would: hop-0 roots use their (event,
// role) key, a hop-l root its parent's key * k + slot (the uniform sampler's keys), and
// a memory row a hash of its (node, time).
void BatchPlanner::stage_dropout_ids(Arena& arena, model::TgnnInputs& in) {
  for (int32_t l = 0; l < cfg_.hops; ++l) {
    auto& ids = drop_id_[static_cast<size_t>(l)];
    if (l == 0) {
      ids.assign(root_key_.begin(), root_key_.end());
    } else {
      const auto& parent = drop_id_[static_cast<size_t>(l - 1)];
      const int64_t k = blocks_.hop(l - 1).k;
      ids.resize(parent.size() * static_cast<size_t>(k));
      for (size_t q = 0; q < ids.size(); ++q)
        ids[q] = parent[q / static_cast<size_t>(k)] * k +
                 static_cast<int64_t>(q % static_cast<size_t>(k));
    }
    in.root_id[l] = stage_raw(arena, ids.data(), Shape(static_cast<int64_t>(ids.size())));
  }
  if (!cfg_.mail_mask) return;  // only the APAN updater drops memory rows
  mem_drop_id_.resize(mem_node_.size());
  for (size_t r = 0; r < mem_node_.size(); ++r) {
    uint64_t bits = 0;
    std::memcpy(&bits, &mem_time_[r], sizeof bits);
    mem_drop_id_[r] =
        static_cast<int64_t>(mix64(static_cast<uint64_t>(mem_node_[r]) ^ mix64(bits)));
  }
  in.mem_id =
      stage_raw(arena, mem_drop_id_.data(), Shape(static_cast<int64_t>(mem_drop_id_.size())));
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
  stage_dropout_ids(arena, in);
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

// stage_raw is also used by the write-back half (batch_writes.cpp).
template Tensor BatchPlanner::stage_raw<int32_t>(Arena&, const int32_t*, Shape);
template Tensor BatchPlanner::stage_raw<int64_t>(Arena&, const int64_t*, Shape);
template Tensor BatchPlanner::stage_raw<uint8_t>(Arena&, const uint8_t*, Shape);
template Tensor BatchPlanner::stage_raw<float>(Arena&, const float*, Shape);
template Tensor BatchPlanner::stage_raw<double>(Arena&, const double*, Shape);

}  // namespace depbloom::train
