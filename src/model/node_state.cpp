// NodeState: the device tensors of node memory and mailboxes, their per-epoch reset, row
// gathers, the host-side ring bookkeeping of the mailbox, and apply(), the one write path.
#include "depbloom/model/node_state.h"

#include <algorithm>

#include "depbloom/backend/ops.h"
#include "depbloom/backend/upload.h"

namespace depbloom::model {

NodeState::NodeState(int64_t num_nodes, int64_t memory_dim, int64_t mail_dim, int mail_slots,
                     DType dtype, Device device)
    : num_nodes_(num_nodes), memory_dim_(memory_dim), mail_dim_(mail_dim), slots_(mail_slots) {
  DB_ASSERT(num_nodes > 0 && memory_dim > 0 && mail_dim > 0 && mail_slots > 0,
            "node state needs positive sizes: nodes {}, memory {}, mail {}, slots {}", num_nodes,
            memory_dim, mail_dim, mail_slots);
  DB_ASSERT(is_floating(dtype), "node state must be f32 or f64, got {}", dtype_name(dtype));
  memory_ = OwnedTensor(dtype, Shape(num_nodes, memory_dim), device);
  last_update_ = OwnedTensor(dtype, Shape(num_nodes), device);
  mail_ = OwnedTensor(dtype, Shape(num_nodes, mail_slots, mail_dim), device);
  mail_ts_ = OwnedTensor(dtype, Shape(num_nodes, mail_slots), device);
  head_.assign(static_cast<size_t>(num_nodes), 0);
  count_.assign(static_cast<size_t>(num_nodes), 0);
  // apply()'s scratch: which node or ring slot an apply has written, and at which winner.
  const auto n = static_cast<size_t>(num_nodes), flat = n * static_cast<size_t>(mail_slots);
  node_stamp_.assign(n, 0), node_pos_.assign(n, 0);
  slot_stamp_.assign(flat, 0), slot_pos_.assign(flat, 0);
  reset();
}

void NodeState::reset() {
  ops::fill(memory_.view(), 0.0);
  ops::fill(last_update_.view(), 0.0);
  ops::fill(mail_.view(), 0.0);
  ops::fill(mail_ts_.view(), 0.0);
  std::fill(head_.begin(), head_.end(), 0);
  std::fill(count_.begin(), count_.end(), 0);
}

void NodeState::copy_from(const NodeState& other) {
  DB_ASSERT(other.num_nodes_ == num_nodes_ && other.memory_dim_ == memory_dim_ &&
                other.mail_dim_ == mail_dim_ && other.slots_ == slots_,
            "node state copy: sizes differ");
  ops::copy(memory_.view(), other.memory_.view());
  ops::copy(last_update_.view(), other.last_update_.view());
  ops::copy(mail_.view(), other.mail_.view());
  ops::copy(mail_ts_.view(), other.mail_ts_.view());
  std::copy(other.head_.begin(), other.head_.end(), head_.begin());
  std::copy(other.count_.begin(), other.count_.end(), count_.begin());
}

void NodeState::write_memory_from(const Tensor& rows, const Tensor& times, const Tensor& idx,
                                  const Tensor& src_idx) {
  ops::copy_rows({{memory_.view(), rows}, {last_update_.view(), times}}, idx, src_idx);
}

void NodeState::write_mail(const Tensor& rows, const Tensor& times, const Tensor& flat_slot) {
  write_mail_from(rows, times, flat_slot, Tensor{});
}

void NodeState::write_mail_from(const Tensor& rows, const Tensor& times, const Tensor& flat_slot,
                                const Tensor& src_idx) {
  const int64_t flat = num_nodes_ * slots_;
  ops::copy_rows({{mail_.view().reshape(Shape(flat, mail_dim_)), rows},
                  {mail_ts_.view().reshape(Shape(flat)), times}},
                 flat_slot, src_idx);
}

void NodeState::set_rings(const std::vector<int32_t>& heads, const std::vector<int32_t>& counts) {
  DB_ASSERT(heads.size() == head_.size() && counts.size() == count_.size(),
            "node state rings: {} heads and {} counts for {} nodes", heads.size(), counts.size(),
            num_nodes_);
  for (size_t i = 0; i < heads.size(); ++i)
    DB_ASSERT(heads[i] >= 0 && heads[i] < slots_ && counts[i] >= 0 && counts[i] <= slots_,
              "node state rings: node {} has head {} and count {} with {} slots", i, heads[i],
              counts[i], slots_);
  head_ = heads;
  count_ = counts;
}

void NodeState::gather(const MemoryRows& out, const Tensor& idx) const {
  const int64_t n = idx.numel(), row = slots_ * mail_dim_;
  auto flat = [](const Tensor& t, Shape shape) { return t.defined() ? t.reshape(shape) : t; };
  ops::copy_rows({{out.memory, memory_.view()},
                  {out.last_update, last_update_.view()},
                  {flat(out.mail, Shape(n, row)), mail_.view().reshape(Shape(num_nodes_, row))},
                  {out.mail_ts, mail_ts_.view()}},
                 Tensor{}, idx);
}

int NodeState::claim_mail_slot(int64_t node) {
  DB_ASSERT(node >= 0 && node < num_nodes_, "node {} out of range [0, {})", node, num_nodes_);
  const auto i = static_cast<size_t>(node);
  const int slot = head_[i];
  head_[i] = (slot + 1) % slots_;
  count_[i] = std::min(count_[i] + 1, slots_);
  return slot;
}

void NodeState::set_ring(int64_t node, int head, int count) {
  DB_ASSERT(
      node >= 0 && node < num_nodes_ && head >= 0 && head < slots_ && count >= 0 && count <= slots_,
      "node {} ring set to head {} count {} ({} nodes, {} slots)", node, head, count, num_nodes_,
      slots_);
  head_[static_cast<size_t>(node)] = head;
  count_[static_cast<size_t>(node)] = count;
}

void NodeState::skip_mail_slots(int64_t node, int64_t n) {
  DB_ASSERT(node >= 0 && node < num_nodes_ && n >= 0, "skip {} slots of node {}", n, node);
  const auto i = static_cast<size_t>(node);
  head_[i] = static_cast<int32_t>((head_[i] + n) % slots_);
  count_[i] = static_cast<int32_t>(std::min<int64_t>(count_[i] + n, slots_));
}

int NodeState::newest_mail_slot(int64_t node) const {
  DB_ASSERT(node >= 0 && node < num_nodes_, "node {} out of range [0, {})", node, num_nodes_);
  const auto i = static_cast<size_t>(node);
  if (count_[i] == 0) return -1;
  return (head_[i] + slots_ - 1) % slots_;
}

namespace {

// The winning positions on the device, or an undefined tensor when every position wins in
// order (the writes are then used as they are): one upload serves rows and times.
Tensor winner_index(Arena& arena, int64_t total, const std::vector<int64_t>& pos) {
  const auto n = static_cast<int64_t>(pos.size());
  bool in_order = n == total;
  for (int64_t i = 0; in_order && i < n; ++i) in_order = pos[static_cast<size_t>(i)] == i;
  return in_order ? Tensor() : upload(arena, pos.data(), Shape(n));
}

// rows [total, ...] as [total, width].
Tensor as_rows(const Tensor& rows, int64_t total) {
  return rows.reshape(Shape(total, rows.numel() / std::max<int64_t>(total, 1)));
}

}  // namespace

int64_t NodeState::apply(const WriteSet& writes, const WriteFilter& filter, Arena& arena) {
  if (++stamp_ == 0) {  // wrapped: clear the stamps once every 2^32 applies
    std::fill(node_stamp_.begin(), node_stamp_.end(), 0);
    std::fill(slot_stamp_.begin(), slot_stamp_.end(), 0);
    stamp_ = 1;
  }
  return apply_memory(writes, filter, arena) + apply_mail(writes, filter, arena);
}

// Position i is the latest write to `key` (a node or a ring slot) so far: the key's first
// write of this apply takes a new winner entry (true), a later one replaces it (false).
bool NodeState::wins_first(std::vector<uint32_t>& stamps, std::vector<int32_t>& where, size_t key,
                           int64_t i) {
  if (stamps[key] == stamp_) {
    win_pos_[static_cast<size_t>(where[key])] = i;
    return false;
  }
  stamps[key] = stamp_;
  where[key] = static_cast<int32_t>(win_pos_.size());
  win_pos_.push_back(i);
  return true;
}

// Memory: a later row of the same node wins.
int64_t NodeState::apply_memory(const WriteSet& writes, const WriteFilter& filter, Arena& arena) {
  win_node_.clear(), win_pos_.clear();
  for (int64_t i = 0; i < writes.mem_count; ++i) {
    const int32_t node = writes.mem_node[i];
    if (filter.passes(node) && wins_first(node_stamp_, node_pos_, static_cast<size_t>(node), i))
      win_node_.push_back(node);
  }
  const auto w = static_cast<int64_t>(win_node_.size());
  if (w == 0) return 0;
  const Tensor index = winner_index(arena, writes.mem_count, win_pos_);
  write_memory_from(as_rows(writes.mem_rows, writes.mem_count),
                    writes.mem_time.reshape(Shape(writes.mem_count)),
                    upload(arena, win_node_.data(), Shape(w)), index);
  return w;
}

// Mails: each claims its node's next ring slot in claim order; a later mail wins a slot.
int64_t NodeState::apply_mail(const WriteSet& writes, const WriteFilter& filter, Arena& arena) {
  win_slot_.clear(), win_pos_.clear();
  for (int64_t k = 0; k < writes.mail_count; ++k) {
    const int64_t i = writes.mail_order != nullptr ? writes.mail_order[k] : k;
    const int32_t node = writes.mail_node[i];
    if (!filter.passes(node)) continue;
    const int32_t flat = node * slots_ + claim_mail_slot(node);
    if (wins_first(slot_stamp_, slot_pos_, static_cast<size_t>(flat), i)) win_slot_.push_back(flat);
  }
  const auto m = static_cast<int64_t>(win_slot_.size());
  if (m == 0) return 0;
  const Tensor index = winner_index(arena, writes.mail_count, win_pos_);
  write_mail_from(as_rows(writes.mail_rows, writes.mail_count),
                  writes.mail_time.reshape(Shape(writes.mail_count)),
                  upload(arena, win_slot_.data(), Shape(m)), index);
  return m;
}

}  // namespace depbloom::model
