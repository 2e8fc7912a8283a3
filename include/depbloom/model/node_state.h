// Per-node state of a memory-based TGNN: memory [N, d_mem], the time of each node's last
// memory update [N], and a mailbox ring [N, slots, d_mail] with the mails' timestamps
// [N, slots]. Tensors live on the state's device; the ring's head/count per node live on
// the host (the batch planner decides writes there). Times use the state's dtype (f32 on a
// GPU, as TGL): keep timestamps relative to the stream's start so f32 resolves them.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/core/memory.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

class NodeState {
 public:
  NodeState(int64_t num_nodes, int64_t memory_dim, int64_t mail_dim, int mail_slots,
            DType dtype = DType::f32, Device device = Device::cpu());

  // Zero memory, times, mails and mail times, and empty every ring (start of an epoch).
  void reset();
  // Becomes a copy of `other` (same sizes, dtype and device): the memory backup and
  // restore around TGN's new-node evaluation pass. Allocates nothing.
  void copy_from(const NodeState& other);

  // Scatters rows into the state: memory rows [n, d_mem] and times [n] of the nodes in idx
  // [n] (distinct ids, i32 on the state's device; negative ids skipped).
  void write_memory(const Tensor& rows, const Tensor& times, const Tensor& idx);
  // Mail rows [n, d_mail] and times [n] into the flat slots idx [n] = node * slots + slot
  // (distinct; from claim_mail_slot).
  void write_mail(const Tensor& rows, const Tensor& times, const Tensor& flat_slot);

  // The rings' host bookkeeping, for checkpoints: next slot and valid count per node.
  const std::vector<int32_t>& ring_heads() const { return head_; }
  const std::vector<int32_t>& ring_counts() const { return count_; }
  void set_rings(const std::vector<int32_t>& heads, const std::vector<int32_t>& counts);

  // Rows of the nodes in idx [n] (i32/i64 on the state's device; a negative id gives a
  // zero row, as padding). memory_out [n, d_mem]; last_update_out [n];
  // mail_out [n, slots, d_mail]; mail_ts_out [n, slots] (slot order as stored).
  void gather_memory(const Tensor& memory_out, const Tensor& idx) const;
  void gather_last_update(const Tensor& last_update_out, const Tensor& idx) const;
  void gather_mail(const Tensor& mail_out, const Tensor& mail_ts_out, const Tensor& idx) const;

  // The ring slot the next mail of `node` goes to (the oldest one once the ring is full);
  // advances the ring. Host bookkeeping only: the caller writes the mail row there.
  int claim_mail_slot(int64_t node);
  int mail_count(int64_t node) const { return count_[static_cast<size_t>(node)]; }
  // Slot of the newest mail of `node`; -1 when it has none.
  int newest_mail_slot(int64_t node) const;

  int64_t num_nodes() const { return num_nodes_; }
  int64_t memory_dim() const { return memory_dim_; }
  int64_t mail_dim() const { return mail_dim_; }
  int mail_slots() const { return slots_; }
  DType dtype() const { return memory_.dtype(); }
  Device device() const { return memory_.device(); }

  const Tensor& memory() const { return memory_.view(); }            // [N, d_mem]
  const Tensor& last_update() const { return last_update_.view(); }  // [N]
  const Tensor& mail() const { return mail_.view(); }                // [N, slots, d_mail]
  const Tensor& mail_ts() const { return mail_ts_.view(); }          // [N, slots]

 private:
  int64_t num_nodes_, memory_dim_, mail_dim_;
  int slots_;
  OwnedTensor memory_, last_update_, mail_, mail_ts_;
  std::vector<int32_t> head_;   // next slot to write, per node
  std::vector<int32_t> count_;  // valid mails, per node (<= slots)
};

}  // namespace depbloom::model
