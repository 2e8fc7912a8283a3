// BatchPlanner: a batch's roots, neighbour sampling, memory-row dedup, dropout counters and
// write set, from its events alone.
#include <algorithm>
#include <cstring>

#include "depbloom/core/philox.h"
#include "depbloom/train/batch_plan.h"

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

BatchPlanner::BatchPlanner(const data::EventStream& stream, const PlanConfig& cfg)
    : stream_(stream), cfg_(cfg) {
  DB_ASSERT(cfg.hops >= 0 && cfg.hops <= model::kMaxHops, "planner: {} hops", cfg.hops);
  t0_ = stream.ts.empty() ? 0.0 : stream.ts.front();
  node_stamp_.assign(static_cast<size_t>(stream.num_nodes), 0);
  node_pos_.assign(static_cast<size_t>(stream.num_nodes), 0);
}

void BatchPlanner::plan_batch(BatchPlan& out, const int64_t* events, int64_t count,
                              const int32_t* negatives, int32_t negatives_k, uint32_t epoch,
                              const graph::NeighbourSampler* sampler, int32_t micro_batches) {
  DB_ASSERT(count > 0 && negatives_k >= 0, "planner: {} events, {} negatives", count, negatives_k);
  const int32_t hops = cfg_.sampled_hops();
  DB_ASSERT(hops == 0 || sampler != nullptr, "planner: sampling needs a sampler");
  out.epoch = epoch;
  out.micro_bounds.assign({0, count});
  plan_roots(out, events, count, negatives, negatives_k);
  if (hops > 0) {
    graph::RootBatch rb;
    rb.count = out.roots();
    rb.keys = out.root_key.data();
    // The sampler queries absolute times.
    for (auto& t : out.root_time) t += t0_;
    rb.nodes = out.root_node.data();
    rb.times = out.root_time.data();
    sampler->sample(rb, epoch, out.blocks);
    for (auto& t : out.root_time) t -= t0_;
  }
  plan_rows(out);
  plan_dropout_ids(out);
  plan_writes(out);
  // Refinement redirects reads to copies after the write set took the base rows.
  out.refine.row.clear(), out.refine.dt.clear();
  out.refine.dts.clear(), out.refine.dt_of.clear();
  out.refine.base.clear(), out.refine.base_of.clear();
  out.refine.mail_dt.clear(), out.refine.first.clear();
  out.coherence.copy.clear(), out.coherence.round.clear();
  out.coherence.mail.clear(), out.coherence.dt.clear();
  if (micro_batches > 1 && cfg_.memory) plan_refine(out, micro_batches);
  plan_slot_reads(out);
}

void BatchPlanner::plan_slot_reads(BatchPlan& p) {
  const int32_t hops = cfg_.sampled_hops();
  for (int32_t l = 0; l < model::kMaxHops; ++l) {
    const auto h = static_cast<size_t>(l);
    p.slot_read[h].clear();
    p.slot_read_of[h].clear();
    if (l < hops)
      list_distinct(p.slot_row[h], p.memory_rows() + p.refined_rows(), p.slot_read[h],
                    p.slot_read_of[h]);
  }
}

void BatchPlanner::list_distinct(const std::vector<int32_t>& rows, int64_t universe,
                                 std::vector<int32_t>& distinct, std::vector<int32_t>& of) {
  first_index_.assign(static_cast<size_t>(universe), -1);
  distinct.clear();
  of.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t row = rows[i];
    if (row < 0) {
      of[i] = -1;
      continue;
    }
    int32_t& index = first_index_[static_cast<size_t>(row)];
    if (index < 0) {
      index = static_cast<int32_t>(distinct.size());
      distinct.push_back(row);
    }
    of[i] = index;
  }
}

// Roots: the sources, the destinations, then K blocks of negatives (TGL's order). The
// uniform sampler keys a root's draws by (event, role), whatever batch it lands in.
void BatchPlanner::plan_roots(BatchPlan& p, const int64_t* events, int64_t count,
                              const int32_t* negatives, int32_t negatives_k) const {
  p.events.assign(events, events + count);
  p.negatives.assign(negatives, negatives + count * negatives_k);
  p.negatives_k = negatives_k;
  const auto roots = static_cast<size_t>((2 + negatives_k) * count);
  p.root_node.resize(roots);
  p.root_time.resize(roots);
  p.root_key.resize(roots);
  const auto per_event = static_cast<uint64_t>(2 + negatives_k);
  for (int64_t b = 0; b < count; ++b) {
    const auto e = static_cast<size_t>(events[b]);
    const double t = stream_.ts[e] - t0_;
    for (int64_t role = 0; role < 2 + negatives_k; ++role) {
      const auto at = static_cast<size_t>(role * count + b);
      p.root_node[at] = role == 0   ? stream_.src[e]
                        : role == 1 ? stream_.dst[e]
                                    : negatives[b * negatives_k + (role - 2)];
      p.root_time[at] = t;
      p.root_key[at] = static_cast<uint64_t>(e) * per_event + static_cast<uint64_t>(role);
    }
  }
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

int32_t BatchPlanner::row_of(BatchPlan& p, int32_t node, double time) {
  if (node < 0) return -1;
  const size_t mask = table_node_.size() - 1;
  for (size_t at = mix(node, time) & mask;; at = (at + 1) & mask) {
    if (table_stamp_[at] != stamp_) {
      table_stamp_[at] = stamp_;
      table_node_[at] = node;
      table_time_[at] = time;
      table_row_[at] = static_cast<int32_t>(p.mem_node.size());
      p.mem_node.push_back(node);
      p.mem_time.push_back(time);
      return table_row_[at];
    }
    if (table_node_[at] == node && table_time_[at] == time) return table_row_[at];
  }
}

// Memory rows: distinct (node, time) among the roots and the embedding's neighbours.
void BatchPlanner::plan_rows(BatchPlan& p) {
  int64_t entries = p.roots();
  for (int32_t l = 0; l < cfg_.hops; ++l) entries += p.blocks.hop(l).num_slots();
  reserve_table(entries);
  if (++stamp_ == 0) {
    std::fill(table_stamp_.begin(), table_stamp_.end(), 0);
    stamp_ = 1;
  }
  p.mem_node.clear();
  p.mem_time.clear();
  p.root_row.resize(static_cast<size_t>(p.roots()));
  for (size_t r = 0; r < p.root_row.size(); ++r)
    p.root_row[r] = cfg_.memory ? row_of(p, p.root_node[r], p.root_time[r]) : 0;
  int64_t span = 1;  // hop-l slot s descends from hop-0 root s / k^(l+1)
  for (int32_t l = 0; l < model::kMaxHops; ++l) {
    auto& rows = p.slot_row[static_cast<size_t>(l)];
    if (l >= cfg_.hops) {
      rows.clear();
      continue;
    }
    const graph::Block& blk = p.blocks.hop(l);
    span *= blk.k;
    rows.resize(static_cast<size_t>(blk.num_slots()));
    for (int64_t s = 0; s < blk.num_slots(); ++s) {
      const int32_t node = blk.nbr[s];
      if (node < 0 || !cfg_.memory) {
        rows[static_cast<size_t>(s)] = node < 0 ? -1 : 0;
        continue;
      }
      const double t = cfg_.prop_time ? p.root_time[static_cast<size_t>(s / span)]
                                      : stream_.ts[static_cast<size_t>(blk.eid[s])] - t0_;
      rows[static_cast<size_t>(s)] = row_of(p, node, t);
    }
  }
  if (!cfg_.memory) {  // the model reads one zero row
    p.mem_node.assign(1, 0);
    p.mem_time.assign(1, 0.0);
  }
}

// Dropout counters: hop-0 roots use their (event, role) key, a hop-l root its parent's key
// * k + slot (the uniform sampler's keys), a memory row a hash of its (node, time).
void BatchPlanner::plan_dropout_ids(BatchPlan& p) const {
  for (int32_t l = 0; l < model::kMaxHops; ++l) {
    auto& ids = p.root_id[static_cast<size_t>(l)];
    if (l >= cfg_.hops) {
      ids.clear();
    } else if (l == 0) {
      ids.assign(p.root_key.begin(), p.root_key.end());
    } else {
      const auto& parent = p.root_id[static_cast<size_t>(l - 1)];
      const int64_t k = p.blocks.hop(l - 1).k;
      ids.resize(parent.size() * static_cast<size_t>(k));
      for (size_t q = 0; q < ids.size(); ++q)
        ids[q] = parent[q / static_cast<size_t>(k)] * k +
                 static_cast<int64_t>(q % static_cast<size_t>(k));
    }
  }
  p.mem_id.clear();
  if (!cfg_.mail_mask) return;  // only the APAN updater drops memory rows
  p.mem_id.resize(p.mem_node.size());
  for (size_t r = 0; r < p.mem_node.size(); ++r) {
    uint64_t bits = 0;
    std::memcpy(&bits, &p.mem_time[r], sizeof bits);
    p.mem_id[r] = static_cast<int64_t>(mix64(static_cast<uint64_t>(p.mem_node[r]) ^ mix64(bits)));
  }
}

// The write set in TGL's order, (src_0, dst_0, src_1, dst_1, ...): a node's memory row at its
// last event, every endpoint's mail, then with neighbour delivery (APAN) each endpoint's mail
// to its sampled hop-0 neighbours, source side first.
void BatchPlanner::plan_writes(BatchPlan& p) {
  PlannedWrites& w = p.writes;
  w.mem_node.clear(), w.mem_row.clear(), w.mem_event.clear(), w.mem_time.clear();
  w.mail_node.clear(), w.mail_row.clear(), w.mail_other.clear();
  w.mail_event.clear(), w.mail_time.clear();
  w.root_mails = w.src_nbr_mails = w.dst_nbr_mails = 0;
  if (!cfg_.memory) return;
  if (++write_stamp_ == 0) {
    std::fill(node_stamp_.begin(), node_stamp_.end(), 0);
    write_stamp_ = 1;
  }
  auto add_mail = [&w](int32_t node, int32_t row, int32_t other, int64_t event, double t) {
    w.mail_node.push_back(node), w.mail_row.push_back(row), w.mail_other.push_back(other);
    w.mail_event.push_back(event), w.mail_time.push_back(t);
  };
  const int64_t count = p.batch();
  for (int64_t b = 0; b < count; ++b) {
    const auto time = p.root_time[static_cast<size_t>(b)];
    const int64_t e = p.events[static_cast<size_t>(b)];
    for (int side = 0; side < 2; ++side) {
      const auto at = static_cast<size_t>(side * count + b);
      const auto partner = static_cast<size_t>((1 - side) * count + b);
      const int32_t node = p.root_node[at], row = p.root_row[at];
      const auto n = static_cast<size_t>(node);
      if (node_stamp_[n] == write_stamp_) {
        const auto pos = static_cast<size_t>(node_pos_[n]);
        w.mem_row[pos] = row, w.mem_event[pos] = e, w.mem_time[pos] = time;
      } else {
        node_stamp_[n] = write_stamp_;
        node_pos_[n] = static_cast<int32_t>(w.mem_node.size());
        w.mem_node.push_back(node), w.mem_row.push_back(row);
        w.mem_event.push_back(e), w.mem_time.push_back(time);
      }
      add_mail(node, row, p.root_row[partner], e, time);
    }
  }
  w.root_mails = 2 * count;
  if (!cfg_.deliver_to_neighbours) return;
  const graph::Block& blk = p.blocks.hop(0);
  for (int64_t r = 0; r < 2 * count; ++r) {
    const int64_t b = r % count;
    const int64_t partner = r < count ? r + count : r - count;
    for (int32_t j = 0; j < blk.k; ++j) {
      const int32_t nbr = blk.nbr[r * blk.k + j];
      if (nbr < 0) continue;
      (r < count ? w.src_nbr_mails : w.dst_nbr_mails) += 1;
      add_mail(nbr, p.root_row[static_cast<size_t>(r)], p.root_row[static_cast<size_t>(partner)],
               p.events[static_cast<size_t>(b)], p.root_time[static_cast<size_t>(b)]);
    }
  }
}

namespace {

bool same_block(const graph::Block& a, const graph::Block& b) {
  if (a.num_roots != b.num_roots || a.k != b.k) return false;
  const auto n = static_cast<size_t>(a.num_slots());
  return std::equal(a.nbr, a.nbr + n, b.nbr) && std::equal(a.eid, a.eid + n, b.eid) &&
         std::equal(a.dt, a.dt + n, b.dt) && std::equal(a.mask, a.mask + n, b.mask);
}

bool same_writes(const PlannedWrites& a, const PlannedWrites& b) {
  return a.mem_node == b.mem_node && a.mem_row == b.mem_row && a.mem_event == b.mem_event &&
         a.mem_time == b.mem_time && a.mail_node == b.mail_node && a.mail_row == b.mail_row &&
         a.mail_other == b.mail_other && a.mail_event == b.mail_event &&
         a.mail_time == b.mail_time && a.root_mails == b.root_mails &&
         a.src_nbr_mails == b.src_nbr_mails && a.dst_nbr_mails == b.dst_nbr_mails;
}

}  // namespace

bool same_plan(const BatchPlan& a, const BatchPlan& b) {
  if (a.events != b.events || a.negatives != b.negatives || a.negatives_k != b.negatives_k ||
      a.epoch != b.epoch || a.micro_bounds != b.micro_bounds || a.root_node != b.root_node ||
      a.root_time != b.root_time || a.root_key != b.root_key || a.mem_node != b.mem_node ||
      a.mem_time != b.mem_time || a.root_row != b.root_row || a.slot_row != b.slot_row ||
      a.root_id != b.root_id || a.mem_id != b.mem_id || !same_writes(a.writes, b.writes) ||
      a.slot_read != b.slot_read || a.slot_read_of != b.slot_read_of ||
      a.refine.row != b.refine.row || a.refine.dt != b.refine.dt || a.refine.dts != b.refine.dts ||
      a.refine.dt_of != b.refine.dt_of || a.refine.base != b.refine.base ||
      a.refine.base_of != b.refine.base_of || a.refine.mail_dt != b.refine.mail_dt ||
      a.refine.first != b.refine.first || a.refine.term_msg != b.refine.term_msg ||
      a.refine.msg_pos != b.refine.msg_pos || a.refine.msg_role != b.refine.msg_role ||
      a.coherence.copy != b.coherence.copy || a.coherence.mail != b.coherence.mail ||
      a.coherence.round != b.coherence.round || a.coherence.dt != b.coherence.dt)
    return false;
  if (a.blocks.hops() != b.blocks.hops()) return false;
  for (int32_t l = 0; l < a.blocks.hops(); ++l)
    if (!same_block(a.blocks.hop(l), b.blocks.hop(l))) return false;
  return true;
}

}  // namespace depbloom::train
