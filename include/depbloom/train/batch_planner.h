// BatchPlanner: the host side of one training or evaluation batch. From the batch's events
// and negatives it lays out the roots, samples their temporal neighbours, deduplicates the
// (node, time) pairs whose memory the model recomputes, stages all of it on the device as
// TgnnInputs, and afterwards writes the new memory and mails back into the NodeState with
// TGL's rules (the last event of a node in the batch wins its memory; mails are appended to
// the ring in event order). Host buffers are reused, so a warm batch allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "depbloom/core/arena.h"
#include "depbloom/data/event_stream.h"
#include "depbloom/graph/block.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/tgnn.h"

namespace depbloom::train {

struct PlannerConfig {
  int32_t hops = 0;                    // sampled hops the embedding reads (attention layers)
  int32_t neighbours = 10;             // per hop
  bool deliver_to_neighbours = false;  // APAN: mails also go to the roots' hop-0 neighbours
  bool prop_time = false;              // neighbours' memory is updated at the root's time
  bool memory = true;                  // false: the model keeps no memory (no write-back)
  bool mail_mask = false;              // the updater reads the ring's valid-slot mask (APAN)
  bool jodie = false;                  // stage 1 / (t + 1) per memory row
  bool mail_dt_at_event = false;       // store t_event - t_last_update as the mail's time
  bool skip_empty_mailbox = false;     // order rows with mail first (Tgnn skips the rest)
};

class BatchPlanner {
 public:
  // `sampler` may be null when cfg needs no sampling (hops 0 and no neighbour delivery).
  // Times are staged relative to `time_origin` (the stream's first timestamp), so f32
  // resolves them. Keeps references to stream and sampler.
  BatchPlanner(const data::EventStream& stream, const graph::NeighbourSampler* sampler,
               const PlannerConfig& cfg, DType dtype, Device device);

  void set_sampler(const graph::NeighbourSampler* sampler) { sampler_ = sampler; }
  int32_t sampled_hops() const;

  // Plans the batch of `count` events (stream rows, ascending) with K negatives each
  // (negatives [count * K], event-major). `state` supplies the rings' fill (mail masks).
  void plan(const int64_t* events, int64_t count, const int32_t* negatives, int32_t negatives_k,
            uint32_t epoch, const model::NodeState& state);

  // The planned batch on the device; tensors come from `arena` (CPU: views of the host
  // buffers), with every row's dropout id; seed and epoch are left to the caller.
  model::TgnnInputs stage(Arena& arena);

  // After the model's forward: the updated memory of the positive sources and
  // destinations (last event wins) and their mails ([s_self || s_other || edge]) go into
  // `state`. updated [U, d_mem]; edge_feat [E, d_edge] on the device or Tensor{}.
  // row_last_update [U]: the rows' last-update times before the step (for
  // mail_dt_at_event; Tensor{} otherwise).
  void write_back(Arena& arena, model::NodeState& state, const Tensor& updated,
                  const Tensor& edge_feat, const Tensor& row_last_update = Tensor{});

  // The strict strategy's write-back in two halves. collect_writes: the writes this batch
  // (a rank's slice) makes, without touching `state`: memory rows (distinct nodes, the
  // node's last event in the batch wins) and every mail in TGL's order, unclaimed: first
  // the endpoints' own mails (src_0, dst_0, src_1, ...), then, with deliver_to_neighbours,
  // the sources' hop-0 neighbours' deliveries, then the destinations'. Tensors come from
  // `arena` (on CPU some are views of host buffers valid until the next collect_writes);
  // node ids stay on the host. Same arguments as write_back.
  struct Writes {
    const int32_t* mem_node = nullptr;  // [w] host
    int64_t mem_count = 0;
    Tensor mem_rows, mem_time;                                     // [w, d_mem], [w]
    const int32_t* mail_node = nullptr;                            // [m] host
    int64_t root_mails = 0, src_nbr_mails = 0, dst_nbr_mails = 0;  // sum: m
    Tensor mail_rows, mail_time;                                   // [m, d_mail], [m]
    int64_t mail_count() const { return root_mails + src_nbr_mails + dst_nbr_mails; }
  };
  Writes collect_writes(Arena& arena, const model::NodeState& state, const Tensor& updated,
                        const Tensor& edge_feat, const Tensor& row_last_update = Tensor{});
  // apply_writes: memory rows of mem_node [w] (in order; a later row of the same node wins)
  // and mails of mail_node taken in the order mail_order [m] (positions into the mail
  // arrays; null: 0..m-1), each claiming its node's next ring slot (a later mail wins a slot
  // it wraps onto). Applying one batch's collect_writes gives exactly write_back's state.
  void apply_writes(Arena& arena, model::NodeState& state, const int32_t* mem_node, int64_t w,
                    const Tensor& mem_rows, const Tensor& mem_time, const int32_t* mail_node,
                    const int64_t* mail_order, int64_t m, const Tensor& mail_rows,
                    const Tensor& mail_time);

  int64_t memory_rows() const { return static_cast<int64_t>(mem_node_.size()); }
  int64_t roots() const { return static_cast<int64_t>(root_node_.size()); }
  const std::vector<int32_t>& root_nodes() const { return root_node_; }
  double time_origin() const { return t0_; }

 private:
  int32_t row_of(int32_t node, double time);  // memory row of (node, time), added if new
  void order_rows_by_mail(const model::NodeState& state);
  void reserve_table(int64_t entries);
  void next_write_stamp(const model::NodeState& state);
  template <class AddMail>
  int64_t list_writes(const AddMail& add_mail);
  std::pair<Tensor, Tensor> build_mails(Arena& arena, const model::NodeState& state,
                                        const Tensor& updated, const Tensor& edge_feat,
                                        const Tensor& row_last_update);
  Tensor written_memory(Arena& arena, const Tensor& updated, int64_t d_mem);
  Tensor stage_times(Arena& arena, const std::vector<double>& host, std::vector<float>& scratch);
  void stage_dropout_ids(Arena& arena, model::TgnnInputs& in);
  template <class T>
  Tensor stage_raw(Arena& arena, const T* host, Shape shape);

  const data::EventStream& stream_;
  const graph::NeighbourSampler* sampler_;
  PlannerConfig cfg_;
  DType dtype_;
  Device device_;
  double t0_ = 0;

  // The batch.
  int64_t batch_ = 0;
  int32_t negatives_ = 0;
  const int64_t* events_ = nullptr;
  std::vector<int32_t> root_node_;
  std::vector<double> root_time_;
  std::vector<uint64_t> root_key_;
  std::array<std::vector<int64_t>, model::kMaxHops> drop_id_;  // per hop: roots' dropout rows
  std::vector<int64_t> mem_drop_id_;                           // memory rows' dropout rows
  graph::BlockBuffers blocks_;
  // Memory rows.
  std::vector<int32_t> mem_node_;
  std::vector<double> mem_time_, mem_inv_time_;
  std::vector<uint8_t> mem_mask_;
  std::vector<int32_t> root_row_;
  std::vector<int32_t> renumber_;  // old memory row -> row with mail-holding rows first
  int64_t with_mail_ = -1;
  std::vector<std::vector<int32_t>> slot_row_;
  std::vector<std::vector<double>> slot_dt64_;  // f64 runs only
  // Open-addressing table (node, time) -> row; a slot is live when its stamp is current.
  std::vector<int32_t> table_node_, table_row_;
  std::vector<double> table_time_;
  std::vector<uint32_t> table_stamp_;
  uint32_t stamp_ = 0;
  // Write-back lists and their dedup stamps (per node, per ring slot).
  std::vector<int32_t> wb_node_, wb_row_;
  std::vector<double> wb_time_;
  std::vector<int32_t> wm_flat_, wm_row_, wm_other_;
  std::vector<int64_t> wm_eid_;
  std::vector<double> wm_time_;
  std::vector<uint32_t> node_stamp_, flat_stamp_;
  std::vector<int32_t> node_pos_, flat_pos_;
  uint32_t wb_stamp_ = 0;
  std::vector<int32_t> wm_node_, ap_node_, ap_pos_, ap_flat_, ap_mpos_;
  std::vector<float> scratch_[4];
  std::vector<double> scratch_rows_;
  std::vector<int32_t> scratch_nodes_;
};

}  // namespace depbloom::train
