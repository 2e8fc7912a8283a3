// BatchPlanner, the write-back half: after the model's forward, the rows and mails one batch
// (or one rank's slice of it) writes into the NodeState, with TGL's rules: the last event
// of a node wins its memory, mails enter the ring in event order. write_back does it in
// one go; collect_writes / apply_writes split it so that strict data-parallel training can
// all-gather the lists between the two.
#include <algorithm>
#include <tuple>
#include <utility>

#include "depbloom/backend/ops.h"
#include "depbloom/train/batch_planner.h"

namespace depbloom::train {

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

// The writes of the planned batch in TGL's order, (src_0, dst_0, src_1, dst_1, ...): the
// memory rows into wb_* (a node's last event wins) and every mail, each passed to add_mail
// (node, row, other row, event, time); with neighbour delivery (APAN) each endpoint's mail
// then also goes to its sampled neighbours, source side first. Returns the number of
// source-side neighbour mails.
template <class AddMail>
int64_t BatchPlanner::list_writes(const AddMail& add_mail) {
  const int64_t count = batch_;
  wb_node_.clear(), wb_row_.clear(), wb_time_.clear();
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
  int64_t src_side = 0;
  if (cfg_.deliver_to_neighbours) {
    const graph::Block& blk = blocks_.hop(0);
    for (int64_t r = 0; r < 2 * count; ++r) {
      const int64_t b = r % count;
      const int64_t partner = r < count ? r + count : r - count;
      for (int32_t j = 0; j < blk.k; ++j) {
        const int32_t nbr = blk.nbr[r * blk.k + j];
        if (nbr < 0) continue;
        if (r < count) ++src_side;
        add_mail(nbr, root_row_[static_cast<size_t>(r)], root_row_[static_cast<size_t>(partner)],
                 events_[b], root_time_[static_cast<size_t>(b)]);
      }
    }
  }
  return src_side;
}

// Mail rows [m, d_mail] = [s_self || s_other || edge features] from the model's updated
// memory at wm_row_ / wm_other_ and the events wm_eid_, and their times [m] (the event time,
// or with mail_dt_at_event the gap since the writer's previous update).
std::pair<Tensor, Tensor> BatchPlanner::build_mails(Arena& arena, const model::NodeState& state,
                                                    const Tensor& updated, const Tensor& edge_feat,
                                                    const Tensor& row_last_update) {
  const int64_t d_mem = state.memory_dim();
  const DType dtype = updated.dtype();
  const auto m = static_cast<int64_t>(wm_row_.size());
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
  return {mail, mail_ts};
}

// Memory rows [w, d_mem] of the written nodes: detached copies of the model's output.
Tensor BatchPlanner::written_memory(Arena& arena, const Tensor& updated, int64_t d_mem) {
  const auto w = static_cast<int64_t>(wb_node_.size());
  Tensor rows = arena.alloc(updated.dtype(), Shape(w, d_mem));
  ops::gather_rows(rows, updated, stage_raw(arena, wb_row_.data(), Shape(w)));
  return rows;
}

void BatchPlanner::write_back(Arena& arena, model::NodeState& state, const Tensor& updated,
                              const Tensor& edge_feat, const Tensor& row_last_update) {
  if (!cfg_.memory) return;
  const int slots = state.mail_slots();
  next_write_stamp(state);
  wm_flat_.clear(), wm_row_.clear(), wm_other_.clear(), wm_eid_.clear(), wm_time_.clear();
  // Each mail claims its node's next ring slot now; a later mail wins a slot it wraps onto.
  list_writes([&](int32_t node, int32_t row, int32_t other, int64_t eid, double t) {
    const int32_t flat = node * slots + state.claim_mail_slot(node);
    const auto f = static_cast<size_t>(flat);
    if (flat_stamp_[f] == wb_stamp_) {
      const auto at = static_cast<size_t>(flat_pos_[f]);
      wm_row_[at] = row, wm_other_[at] = other, wm_eid_[at] = eid, wm_time_[at] = t;
      return;
    }
    flat_stamp_[f] = wb_stamp_;
    flat_pos_[f] = static_cast<int32_t>(wm_flat_.size());
    wm_flat_.push_back(flat), wm_row_.push_back(row), wm_other_.push_back(other);
    wm_eid_.push_back(eid), wm_time_.push_back(t);
  });
  const auto w = static_cast<int64_t>(wb_node_.size());
  state.write_memory(written_memory(arena, updated, state.memory_dim()),
                     stage_times(arena, wb_time_, scratch_[2]),
                     stage_raw(arena, wb_node_.data(), Shape(w)));
  auto [mail, mail_ts] = build_mails(arena, state, updated, edge_feat, row_last_update);
  const auto m = static_cast<int64_t>(wm_flat_.size());
  state.write_mail(mail, mail_ts, stage_raw(arena, wm_flat_.data(), Shape(m)));
}

BatchPlanner::Writes BatchPlanner::collect_writes(Arena& arena, const model::NodeState& state,
                                                  const Tensor& updated, const Tensor& edge_feat,
                                                  const Tensor& row_last_update) {
  Writes out;
  if (!cfg_.memory) return out;
  next_write_stamp(state);
  wm_node_.clear(), wm_row_.clear(), wm_other_.clear(), wm_eid_.clear(), wm_time_.clear();
  // Every mail is kept in order; apply_writes claims the ring slots.
  out.src_nbr_mails =
      list_writes([&](int32_t node, int32_t row, int32_t other, int64_t eid, double t) {
        wm_node_.push_back(node), wm_row_.push_back(row), wm_other_.push_back(other);
        wm_eid_.push_back(eid), wm_time_.push_back(t);
      });
  out.root_mails = 2 * batch_;
  out.dst_nbr_mails = static_cast<int64_t>(wm_node_.size()) - out.root_mails - out.src_nbr_mails;
  out.mem_node = wb_node_.data();
  out.mem_count = static_cast<int64_t>(wb_node_.size());
  out.mem_rows = written_memory(arena, updated, state.memory_dim());
  out.mem_time = stage_times(arena, wb_time_, scratch_[2]);
  out.mail_node = wm_node_.data();
  std::tie(out.mail_rows, out.mail_time) =
      build_mails(arena, state, updated, edge_feat, row_last_update);
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
