// Per-node state of a memory-based TGNN: memory [N, d_mem], the time of each node's last
// memory update [N], and a mailbox ring [N, slots, d_mail] with the mails' timestamps
// [N, slots]. Tensors live on the state's device; the ring's head/count per node live on
// the host (the batch planner decides writes there). Times use the state's dtype (f32 on a
// GPU, as TGL): keep timestamps relative to the stream's start so f32 resolves them.
#pragma once

#include <cstdint>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/core/memory.h"
#include "depbloom/core/tensor.h"

namespace depbloom::model {

// The rows one step writes into a NodeState, in write order (node ids on the host, rows and
// times on the state's device): memory rows, a later row of the same node winning, and
// mails, each claiming its node's next ring slot in claim order, a later mail winning a slot
// it wraps onto.
struct WriteSet {
  const int32_t* mem_node = nullptr;  // [w]
  int64_t mem_count = 0;
  Tensor mem_rows, mem_time;           // [w, d_mem], [w]
  const int32_t* mail_node = nullptr;  // [m]
  // [m] positions into the mail arrays in claim order; null: 0, 1, ..., m - 1.
  const int64_t* mail_order = nullptr;
  int64_t mail_count = 0;
  Tensor mail_rows, mail_time;  // [m, d_mail], [m]
};

// Which nodes' writes apply: all of them, or those whose mark equals apply_mark. Writes that
// a filter holds back and a later apply with the opposite mark applies end in the same state,
// as long as nothing writes those nodes in between (each node's writes keep their order).
struct WriteFilter {
  const uint8_t* mark = nullptr;  // [N] per node; null: every node passes
  uint8_t apply_mark = 1;
  bool passes(int32_t node) const { return mark == nullptr || mark[node] == apply_mark; }
};

// The node-state rows of a batch's memory rows, as the gather stage reads them (undefined
// for a model without memory; NodeState::gather skips an undefined one).
struct MemoryRows {
  Tensor memory;       // [U, d_mem]
  Tensor last_update;  // [U] the rows' last-update times, before this step's writes
  Tensor mail;         // [U, slots, d_mail]
  Tensor mail_ts;      // [U, slots] (slot order as stored)
};

class NodeState {
 public:
  NodeState(int64_t num_nodes, int64_t memory_dim, int64_t mail_dim, int mail_slots,
            DType dtype = DType::f32, Device device = Device::cpu());

  // Zero memory, times, mails and mail times, and empty every ring (start of an epoch).
  void reset();
  // Becomes a copy of `other` (same sizes, dtype and device): the memory backup and
  // restore around TGN's new-node evaluation pass. Allocates nothing.
  void copy_from(const NodeState& other);

  // The one write-back path: the writes of `writes` whose node passes `filter`, with the
  // rules of WriteSet; staging from `arena`. Returns the memory rows and mails written.
  int64_t apply(const WriteSet& writes, const WriteFilter& filter, Arena& arena);

  // Mail rows [n, d_mail] and times [n] into the flat slots idx [n] = node * slots + slot
  // (distinct; from claim_mail_slot).
  void write_mail(const Tensor& rows, const Tensor& times, const Tensor& flat_slot);

  // The rings' host bookkeeping, for checkpoints: next slot and valid count per node.
  const std::vector<int32_t>& ring_heads() const { return head_; }
  const std::vector<int32_t>& ring_counts() const { return count_; }
  void set_rings(const std::vector<int32_t>& heads, const std::vector<int32_t>& counts);

  // Rows of the nodes in idx [n] (i32/i64 on the state's device; a negative id gives a
  // zero row, as padding) into out's defined tensors, all in one op call.
  void gather(const MemoryRows& out, const Tensor& idx) const;

  // The ring slot the next mail of `node` goes to (the oldest one once the ring is full);
  // advances the ring. Host bookkeeping only: the caller writes the mail row there.
  int claim_mail_slot(int64_t node);
  int mail_count(int64_t node) const { return count_[static_cast<size_t>(node)]; }
  int ring_head(int64_t node) const { return head_[static_cast<size_t>(node)]; }
  // One node's ring bookkeeping set back (a window-start ring restored).
  void set_ring(int64_t node, int head, int count);
  // Advances `node`'s ring as n claims would, writing nothing: claims made elsewhere whose
  // mails are no longer held (the depbloom merge's older mails of a wrapped ring).
  void skip_mail_slots(int64_t node, int64_t n);
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
  // rows and times at the positions src_idx (all in order when undefined) into the nodes
  // of idx (distinct, i32 on the state's device), or into the flat ring slots: one op call.
  void write_memory_from(const Tensor& rows, const Tensor& times, const Tensor& idx,
                         const Tensor& src_idx);
  void write_mail_from(const Tensor& rows, const Tensor& times, const Tensor& flat_slot,
                       const Tensor& src_idx);

  int64_t num_nodes_, memory_dim_, mail_dim_;
  int slots_;
  OwnedTensor memory_, last_update_, mail_, mail_ts_;
  std::vector<int32_t> head_;   // next slot to write, per node
  std::vector<int32_t> count_;  // valid mails, per node (<= slots)
  // apply's scratch: dedup stamps per node and per ring slot, and the winning positions.
  uint32_t stamp_ = 0;
  std::vector<uint32_t> node_stamp_, slot_stamp_;
  std::vector<int32_t> node_pos_, slot_pos_;
  std::vector<int32_t> win_node_, win_slot_;
  std::vector<int64_t> win_pos_;
  bool wins_first(std::vector<uint32_t>& stamps, std::vector<int32_t>& where, size_t key,
                  int64_t i);
  int64_t apply_memory(const WriteSet& writes, const WriteFilter& filter, Arena& arena);
  int64_t apply_mail(const WriteSet& writes, const WriteFilter& filter, Arena& arena);
};

}  // namespace depbloom::model
