// The two ends of a step around the model: stage() turns a BatchPlan and the node state into
// the model's device inputs (ordering the memory rows with mail first, the mailbox masks,
// times in the state's dtype), and collect() turns the model's outputs into the WriteSet
// the plan announced (model::NodeState::apply is the one path that writes it). StepArena is
// the memory a step allocates from: the device arena and, on a GPU, the host arena where
// staged arrays are built; both are reset together.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "depbloom/backend/runtime.h"
#include "depbloom/core/arena.h"
#include "depbloom/model/node_state.h"
#include "depbloom/model/tgnn.h"
#include "depbloom/train/batch_plan.h"

namespace depbloom::train {

// On a GPU the host arena is pinned, and the device arena stages its uploads through it
// (asynchronous copies, no host wait). Steps alternate between two pinned arenas, and reset()
// reuses one only once the stream has passed the step that last filled it; as every training
// step ends in a host wait (the loss read), that has always happened, and no wait is made.
class StepArena {
 public:
  explicit StepArena(Device device);
  StepArena(const StepArena&) = delete;
  StepArena& operator=(const StepArena&) = delete;

  Arena& device() { return device_; }
  const Arena& device() const { return device_; }
  // Host memory for staged arrays (the device arena itself on a CPU run); uploads of arrays
  // built here need no further copy on the host.
  Arena& host() { return device_.device().is_cpu() ? device_ : staging_[current_]; }
  void reset();

 private:
  Arena device_;
  std::array<Arena, 2> staging_;
  std::array<backend::StreamMark, 2> marks_;  // the stream after each staging arena's last use
  size_t current_ = 0;
};

// What stage() made of a plan: the model's inputs, and where each of the plan's memory rows
// landed among them.
struct StagedBatch {
  model::TgnnInputs in;
  const int32_t* row_of = nullptr;  // [U] plan row -> input row; null: the same row
  int64_t memory_rows = 0;          // U: rows from U on are refined copies, never reordered

  int32_t input_row(int32_t plan_row) const {
    return row_of == nullptr || plan_row < 0 || plan_row >= memory_rows ? plan_row
                                                                        : row_of[plan_row];
  }
};

class BatchStager {
 public:
  BatchStager(const PlanConfig& cfg, DType dtype) : cfg_(cfg), dtype_(dtype) {}

  // The plan's inputs for the model, from `arena` (on a CPU run, views of the plan's and
  // this stager's arrays where they need no conversion). `state` supplies the rings' fill (mail
  // order and masks). seed and epoch are left to the caller. Valid until the arena's reset and
  // while the plan and this stager are unchanged.
  StagedBatch stage(const BatchPlan& plan, const model::NodeState& state, StepArena& arena);

 private:
  void order_rows_by_mail(const BatchPlan& plan, const model::NodeState& state);
  void stage_refine(StagedBatch& out, const BatchPlan& plan, StepArena& arena);
  void stage_coherence(StagedBatch& out, const BatchPlan& plan, StepArena& arena);

  PlanConfig cfg_;
  DType dtype_;
  std::vector<int32_t> row_of_;  // plan row -> input row (mail-holding rows first)
  std::vector<int32_t> order_;   // input row -> plan row
  int64_t with_mail_ = -1;
  // The memory rows' arrays in input order.
  std::vector<int32_t> mem_node_;
  std::vector<double> mem_time_, inv_time_;
  std::vector<int64_t> mem_id_;
  // Refinement's per-message arrays, in input rows.
  std::vector<int32_t> msg_self_, msg_other_;
  std::vector<int64_t> msg_eid_;
  std::vector<int32_t> coh_self_, coh_other_;
  std::vector<int64_t> coh_eid_;
};

// The memory rows and mails `plan` writes, from the model's outputs of the staged batch:
// updated [U, d_mem] (input rows), last_update [U] the rows' last-update times before the
// step (read with mail_dt_at_event; Tensor{} otherwise), edge_feat [E, d_edge] or Tensor{}.
// Rows and times come from `arena`; node ids point into the plan.
model::WriteSet collect(const BatchPlan& plan, const StagedBatch& staged, const PlanConfig& cfg,
                        const Tensor& updated, const Tensor& last_update, const Tensor& edge_feat,
                        StepArena& arena);

}  // namespace depbloom::train
