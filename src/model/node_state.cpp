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
