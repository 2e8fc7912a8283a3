// BatchPlan: what one training step (or evaluation batch) reads and writes, planned from its
// events alone: the events in order with their negatives, the micro-batch bounds, the sampled
// neighbour blocks, the memory rows it reads (distinct (node, time) pairs) and the write set
// (which memory rows and mails it will write, at which event). Planning never reads node
// state, so later steps can be planned while one runs (the schedule's lookahead); what
// depends on node state is added by stage() (step_io.h). BatchPlanner holds only the
// scratch of planning: a plan reuses its vectors, so a warm plan allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "depbloom/data/event_stream.h"
#include "depbloom/graph/block.h"
#include "depbloom/graph/neighbour_sampler.h"
#include "depbloom/model/tgnn_config.h"
#include "depbloom/train/refine_plan.h"

namespace depbloom::train {

struct PlanConfig {
  int32_t hops = 0;                    // sampled hops the embedding reads (attention layers)
  int32_t neighbours = 10;             // per hop
  bool deliver_to_neighbours = false;  // APAN: mails also go to the roots' hop-0 neighbours
  bool prop_time = false;              // neighbours' memory is updated at the root's time
  bool memory = true;                  // false: the model keeps no memory (no write-back)
  bool mail_mask = false;              // the updater reads the ring's valid-slot mask (APAN)
  bool jodie = false;                  // stage 1 / (t + 1) per memory row
  bool mail_dt_at_event = false;       // store t_event - t_last_update as the mail's time
  bool skip_empty_mailbox = false;     // stage rows with mail first (Tgnn skips the rest)
  RefineAggregate refine_aggregate = RefineAggregate::last;  // with several micro-batches
  // refine.start: updater with mail_dt_at_event: list each copy's message age (refine_mail_dt).
  bool refine_mail_dt = false;
  // refine.start: updater: list the copies' distinct base rows (refine_base, refine_base_of).
  bool refine_bases = false;

  // Hops the sampler fills: the embedding's, and one for neighbour delivery.
  int32_t sampled_hops() const { return hops > 0 ? hops : (deliver_to_neighbours ? 1 : 0); }
};

// The writes a step will make, in TGL's order. Rows are plan memory rows (BatchPlan::mem_*).
struct PlannedWrites {
  // Memory: one row per written node, at the node's last event in the batch (it wins).
  std::vector<int32_t> mem_node, mem_row;
  std::vector<int64_t> mem_event;  // stream row of that event
  std::vector<double> mem_time;    // its time, relative to the stream's start
  // Mails: the endpoints' own (src_0, dst_0, src_1, ...), then with neighbour delivery the
  // sources' hop-0 neighbours' deliveries, then the destinations'. Mail i is
  // [updated[mail_row] || updated[mail_other] || edge features of mail_event].
  std::vector<int32_t> mail_node, mail_row, mail_other;
  std::vector<int64_t> mail_event;
  std::vector<double> mail_time;
  int64_t root_mails = 0, src_nbr_mails = 0, dst_nbr_mails = 0;

  int64_t mail_count() const { return root_mails + src_nbr_mails + dst_nbr_mails; }
};

struct BatchPlan {
  std::vector<int64_t> events;     // [B] stream rows, ascending
  std::vector<int32_t> negatives;  // [B * K] event-major
  int32_t negatives_k = 1;
  uint32_t epoch = 0;
  // [m + 1] event positions: micro-batch j holds events [micro_bounds[j], micro_bounds[j+1]).
  std::vector<int64_t> micro_bounds;
  // Roots (2+K)B: the sources, the destinations, then K blocks of negatives (TGL's order).
  std::vector<int32_t> root_node;
  std::vector<double> root_time;   // relative to the stream's first timestamp
  std::vector<uint64_t> root_key;  // (event, role): keys the uniform sampler's draws
  graph::BlockBuffers blocks;      // PlanConfig::sampled_hops() hops
  // Memory rows read: distinct (node, time) among the roots and the embedding's neighbours.
  std::vector<int32_t> mem_node;
  std::vector<double> mem_time;
  // The embedding's input row of each read: a memory row, or U + c for refined copy c.
  std::vector<int32_t> root_row;                               // [(2+K)B]
  std::array<std::vector<int32_t>, model::kMaxHops> slot_row;  // per hop [R_l * k]; -1 empty
  // Per hop, the distinct input rows its slots read (first-read order) and each slot's index
  // among them (-1 empty): an attention layer reading the slots as rows of a table projects
  // only those rows (a batch's roots and the rows its copies replaced are not among them).
  std::array<std::vector<int32_t>, model::kMaxHops> slot_read;     // [Q_l]
  std::array<std::vector<int32_t>, model::kMaxHops> slot_read_of;  // [R_l * k] in [0, Q_l)
  // Dropout counters that depend on what a row is, never on where it sits: per hop the
  // roots' (event, role) key paths, per memory row a hash of (node, time) (APAN only).
  std::array<std::vector<int64_t>, model::kMaxHops> root_id;
  std::vector<int64_t> mem_id;
  PlannedWrites writes;
  RefinePlan refine;        // several micro-batches only; else empty
  CoherencePlan coherence;  // training steps with refine.coherence_weight > 0; else empty

  int64_t batch() const { return static_cast<int64_t>(events.size()); }
  int64_t roots() const { return static_cast<int64_t>(root_node.size()); }
  int64_t memory_rows() const { return static_cast<int64_t>(mem_node.size()); }
  int64_t refined_rows() const { return static_cast<int64_t>(refine.row.size()); }
};

// Whether two plans read and write the same things (every field, blocks included).
bool same_plan(const BatchPlan& a, const BatchPlan& b);

class BatchPlanner {
 public:
  // Times are planned relative to the stream's first timestamp, so f32 resolves them. Keeps
  // a reference to the stream.
  BatchPlanner(const data::EventStream& stream, const PlanConfig& cfg);

  const PlanConfig& config() const { return cfg_; }
  double time_origin() const { return t0_; }

  // out = the plan of events[0, count) (stream rows, ascending) with K negatives each
  // (negatives [count * K], event-major), one micro-batch, neighbours drawn by `sampler`
  // for `epoch` (null only when the config samples nothing), cut into `micro_batches` for
  // refinement (cut_micro_batches; 1: no refinement).
  void plan_batch(BatchPlan& out, const int64_t* events, int64_t count, const int32_t* negatives,
                  int32_t negatives_k, uint32_t epoch, const graph::NeighbourSampler* sampler,
                  int32_t micro_batches = 1);
  // Draws the coherence loss's copies of a refined plan (each with probability `sample`,
  // keyed by (seed, epoch) and what the copy is: its node, time and latest earlier event, never
  // where it sits) and lists their earlier mails in rounds (BatchPlan::coherence_*).
  void plan_coherence(BatchPlan& p, uint64_t seed, double sample) const;

 private:
  void plan_roots(BatchPlan& p, const int64_t* events, int64_t count, const int32_t* negatives,
                  int32_t negatives_k) const;
  void plan_rows(BatchPlan& p);
  void plan_dropout_ids(BatchPlan& p) const;
  void plan_writes(BatchPlan& p);
  void plan_refine(BatchPlan& p, int32_t micro_batches);  // after plan_writes
  void plan_refine_mail_dt(BatchPlan& p) const;           // in plan_refine
  void plan_refine_bases(BatchPlan& p);                   // in plan_refine
  void plan_refine_gaps(BatchPlan& p);                    // in plan_refine
  void plan_slot_reads(BatchPlan& p);                     // last: after the redirects
  // distinct = the rows [0, universe) among `rows` in first-appearance order, of[i] = rows[i]'s
  // index among them (-1 where rows[i] < 0); first_index_ is the scratch.
  void list_distinct(const std::vector<int32_t>& rows, int64_t universe,
                     std::vector<int32_t>& distinct, std::vector<int32_t>& of);
  int32_t row_of(BatchPlan& p, int32_t node, double time);  // memory row, added if new
  void reserve_table(int64_t entries);

  const data::EventStream& stream_;
  PlanConfig cfg_;
  double t0_ = 0;
  // Open-addressing table (node, time) -> row; a slot is live when its stamp is current.
  std::vector<int32_t> table_node_, table_row_;
  std::vector<double> table_time_;
  std::vector<uint32_t> table_stamp_;
  uint32_t stamp_ = 0;
  // The nodes' positions in the memory write list, valid when their stamp is current.
  std::vector<uint32_t> node_stamp_;
  std::vector<int32_t> node_pos_;
  uint32_t write_stamp_ = 0;
  // Refinement: the planner (made on first use), its requests (distinct (row, micro-batch)
  // reads) and (row * m + micro-batch) -> request, or -1.
  std::unique_ptr<RefinePlanner> refine_planner_;
  std::vector<int32_t> micro_of_event_, req_node_, req_micro_, req_row_, req_copy_, pair_req_;
  std::vector<int32_t> copy_order_;   // [R] the copies by ascending refine_dt
  std::vector<int32_t> first_index_;  // list_distinct's: a row's index in its list, -1 none yet
};

}  // namespace depbloom::train
