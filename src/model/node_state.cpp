// NodeState: the device tensors of node memory and mailboxes, their per-epoch reset and
// row gathers, and the host-side ring bookkeeping of the mailbox.
#include "depbloom/model/node_state.h"

#include <algorithm>

#include "depbloom/backend/ops.h"

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

void NodeState::write_memory(const Tensor& rows, const Tensor& times, const Tensor& idx) {
  const int64_t n = idx.numel();
  ops::scatter_rows(memory_.view(), rows, idx);
  ops::scatter_rows(last_update_.view().reshape(Shape(num_nodes_, 1)), times.reshape(Shape(n, 1)),
                    idx);
}

void NodeState::write_mail(const Tensor& rows, const Tensor& times, const Tensor& flat_slot) {
  const int64_t n = flat_slot.numel();
  ops::scatter_rows(mail_.view().reshape(Shape(num_nodes_ * slots_, mail_dim_)), rows, flat_slot);
  ops::scatter_rows(mail_ts_.view().reshape(Shape(num_nodes_ * slots_, 1)),
                    times.reshape(Shape(n, 1)), flat_slot);
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

void NodeState::gather_memory(const Tensor& memory_out, const Tensor& idx) const {
  ops::gather_rows(memory_out, memory_.view(), idx);
}

void NodeState::gather_last_update(const Tensor& last_update_out, const Tensor& idx) const {
  // gather_rows works on rows: view the times as [N, 1].
  ops::gather_rows(last_update_out.reshape(Shape(last_update_out.numel(), 1)),
                   last_update_.view().reshape(Shape(num_nodes_, 1)), idx);
}

void NodeState::gather_mail(const Tensor& mail_out, const Tensor& mail_ts_out,
                            const Tensor& idx) const {
  const int64_t n = idx.numel();
  ops::gather_rows(mail_out.reshape(Shape(n, slots_ * mail_dim_)),
                   mail_.view().reshape(Shape(num_nodes_, slots_ * mail_dim_)), idx);
  ops::gather_rows(mail_ts_out.reshape(Shape(n, slots_)), mail_ts_.view(), idx);
}

int NodeState::claim_mail_slot(int64_t node) {
  DB_ASSERT(node >= 0 && node < num_nodes_, "node {} out of range [0, {})", node, num_nodes_);
  const auto i = static_cast<size_t>(node);
  const int slot = head_[i];
  head_[i] = (slot + 1) % slots_;
  count_[i] = std::min(count_[i] + 1, slots_);
  return slot;
}

int NodeState::newest_mail_slot(int64_t node) const {
  DB_ASSERT(node >= 0 && node < num_nodes_, "node {} out of range [0, {})", node, num_nodes_);
  const auto i = static_cast<size_t>(node);
  if (count_[i] == 0) return -1;
  return (head_[i] + slots_ - 1) % slots_;
}

}  // namespace depbloom::model
